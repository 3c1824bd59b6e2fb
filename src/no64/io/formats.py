"""The formats no64 reads and writes, their names and file extensions."""

from __future__ import annotations

import os

from ..errors import No64Error

#: Every format :func:`load` reads and :func:`dumps` writes.
FORMATS: tuple[str, ...] = ("mlir", "mlirbc", "vhlo", "hlo", "hlopb", "jaxexport")

#: The formats any module can be written in (``"jaxexport"`` needs a module
#: read from a ``jax.export`` artifact: its calling convention).
MODULE_FORMATS: tuple[str, ...] = ("mlir", "mlirbc", "vhlo", "hlo", "hlopb")

DESCRIPTIONS = {
    "mlir": "MLIR text",
    "mlirbc": "MLIR bytecode",
    "vhlo": "a StableHLO portable artifact",
    "hlo": "HLO text",
    "hlopb": "a serialized HloModuleProto",
    "jaxexport": "a jax.export artifact (Exported.serialize())",
}

# Longest suffix first, so "x.hlo.pb" is not taken for "x.pb".
_EXTENSIONS: tuple[tuple[str, str], ...] = (
    (".hlo.pb", "hlopb"),
    (".jaxexport", "jaxexport"),
    (".exported", "jaxexport"),
    (".mlirbc", "mlirbc"),
    (".mlir", "mlir"),
    (".vhlo", "vhlo"),
    (".hlo", "hlo"),
    (".txt", "hlo"),
    (".bc", "mlirbc"),
    (".pb", "hlopb"),
)

BYTECODE_MAGIC = b"ML\xefR"


def format_from_extension(filename: str | os.PathLike[str] | None) -> str | None:
    """Return the format a file name's extension implies, or None.

    ``.mlir`` -> mlir; ``.mlirbc``, ``.bc`` -> mlirbc; ``.vhlo`` -> vhlo;
    ``.hlo``, ``.txt`` -> hlo; ``.pb``, ``.hlo.pb`` -> hlopb;
    ``.jaxexport``, ``.exported`` -> jaxexport.
    """
    if filename is None:
        return None
    lower = os.fspath(filename).lower()
    for suffix, fmt in _EXTENSIONS:
        if lower.endswith(suffix):
            return fmt
    return None


def check_format(fmt: str, error: type[No64Error]) -> str:
    if fmt not in FORMATS:
        raise error(f"unknown format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    return fmt
