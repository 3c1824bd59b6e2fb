"""Parsing a module in any format into a verified StableHLO module."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import InputError, No64Error
from ..ir._mlir import ir, make_context
from .detect import detect_format, require_content
from .diagnostics import mlir_error_line, xla_error_line
from .formats import BYTECODE_MAGIC, DESCRIPTIONS, check_format
from .guards import check_bytecode_strings, check_region_nesting, check_text_nesting, check_utf8
from .hlo import load_hlo, load_hlopb
from .jaxexport import load_jaxexport
from .mlir import load_mlir, load_vhlo
from .sources import MAX_INPUT_SIZE, read_source

_LOADERS: dict[str, Callable[[bytes, str | None, str, ir.Context], ir.Module]] = {
    "mlir": load_mlir,
    "mlirbc": load_mlir,
    "vhlo": load_vhlo,
    "hlo": load_hlo,
    "hlopb": load_hlopb,
    "jaxexport": load_jaxexport,
}


def load_with_format(
    source: str | os.PathLike[str] | bytes,
    *,
    format: str | None = None,
    context: ir.Context | None = None,
    max_size: int | None = MAX_INPUT_SIZE,
) -> tuple[ir.Module, str]:
    """Like :func:`load`, and also return the format that was read."""
    name, data, path = read_source(source, max_size)
    require_content(data, name)
    fmt = check_format(format, InputError) if format else detect_format(data, path)
    text = not data.startswith(BYTECODE_MAGIC)
    if text and fmt in ("mlir", "mlirbc", "vhlo", "hlo"):
        check_utf8(data, name)
        check_text_nesting(data, name, fmt)
    elif not text:
        check_bytecode_strings(data, name)
    ctx = context if context is not None else make_context()
    try:
        module = _LOADERS[fmt](data, path, name, ctx)
    except No64Error:
        raise
    except ir.MLIRError as exc:
        corrupt = " (truncated or corrupt MLIR bytecode)" if data.startswith(BYTECODE_MAGIC) else ""
        raise InputError(mlir_error_line(name, exc) + corrupt) from exc
    except Exception as exc:  # noqa: BLE001 - converters raise assorted runtime errors
        raise InputError(
            xla_error_line(name, exc, f"cannot read it as {DESCRIPTIONS[fmt]}: ")
        ) from exc
    if not (text and fmt in ("mlir", "mlirbc")):
        # Bytecode, and modules converted from HLO (whose calls become
        # nested regions), were not scanned as text.
        check_region_nesting(module, name)
    _verify(module, name)
    return module, fmt


def load(
    source: str | os.PathLike[str] | bytes,
    *,
    format: str | None = None,
    context: ir.Context | None = None,
    max_size: int | None = MAX_INPUT_SIZE,
) -> ir.Module:
    """Parse a module from a file (``str`` or path) or from ``bytes`` in memory.

    Args:
      source: A file name, or the module's content as bytes.  A ``str`` is
        always a file name; pass module text held in memory as bytes.
      format: One of :data:`FORMATS`; detected with :func:`detect_format`
        when None.
      context: The MLIR context to parse into; a new one from
        :func:`no64._mlir.make_context` when None.
      max_size: The largest file to read, in bytes (None: no limit).
        Bytes held in memory are not limited.

    Returns:
      The verified module, in StableHLO (HLO and VHLO inputs are converted).

    Raises:
      InputError: The file is missing, empty, unreadable, not a regular
        file or pipe, larger than ``max_size``, nested more than
        :data:`MAX_NESTING` levels deep, of unknown format, malformed (the
        message gives ``file:line:col`` where the parser does), uses an op of
        an unknown dialect, or fails verification.
    """
    return load_with_format(source, format=format, context=context, max_size=max_size)[0]


def _verify(module: ir.Module, name: str) -> None:
    try:
        ok = module.operation.verify()
    except ir.MLIRError as exc:
        raise InputError(mlir_error_line(name, exc)) from exc
    if ok is False:  # older bindings return False instead of raising
        raise InputError(f"{name}: invalid module (verification failed)")
