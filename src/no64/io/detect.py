"""Telling a module's format from its content, else from its file name."""

from __future__ import annotations

import os
import re

from ..errors import InputError
from ..spec.registry import REGISTRY
from .diagnostics import MEMORY
from .formats import BYTECODE_MAGIC, FORMATS, format_from_extension
from .hlo import is_hlo_proto
from .jaxexport import jax_exported
from .mlir import VHLO_TEXT

_VHLO_PRODUCER = b"StableHLO_v"

# Text detection: what the first significant line of each text format starts with.
_HLO_START = re.compile(r"HloModule\b")
_MLIR_START = re.compile(r'(module\b|func\.func\b|"builtin\.module"|"func\.func"|#|!|\{-#)')


def _bytecode_producer(data: bytes) -> bytes:
    """The producer string of MLIR bytecode (after the magic and the version)."""
    # The version is a "prefix varint": the number of trailing zero bits of
    # its first byte, plus one, is its length in bytes.
    first = data[4] if len(data) > 4 else 1
    width = ((first & -first).bit_length()) if first else 9
    start = 4 + width
    end = data.find(b"\0", start, start + 256)
    return data[start:end] if end >= 0 else b""


def _as_text(data: bytes) -> str | None:
    """``data`` decoded as UTF-8 text, or None when it looks binary."""
    if b"\0" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _first_significant_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            return stripped
    return ""


def _dialects() -> frozenset[str]:
    """The dialect prefixes of the ops the op table knows (``"stablehlo."``, ...)."""
    return frozenset(name.partition(".")[0] + "." for name in REGISTRY)


def _text_format(text: str) -> str | None:
    first = _first_significant_line(text)
    if _HLO_START.match(first):
        return "hlo"
    if VHLO_TEXT.search(text):
        return "vhlo"
    if _MLIR_START.match(first) or any(d in text for d in _dialects()):
        return "mlir"
    return None


def require_content(data: bytes, name: str) -> None:
    if not data.strip():
        raise InputError(f"{name}: empty file")


def detect_format(data: bytes, filename: str | os.PathLike[str] | None = None) -> str:
    """Return the format of ``data``: one of :data:`FORMATS`.

    The content decides first: MLIR bytecode by its magic number (a portable
    artifact by its ``StableHLO_v...`` producer), HLO text by its
    ``HloModule`` header, MLIR text by its syntax, a ``jax.export`` artifact
    by deserializing it, a serialized HloModuleProto by parsing it.  Only when the content does not tell does
    the extension of ``filename`` decide (see :func:`format_from_extension`).

    Raises:
      InputError: ``data`` is empty, or neither content nor name tells.
    """
    name = os.fspath(filename) if filename is not None else MEMORY
    require_content(data, name)
    if data.startswith(BYTECODE_MAGIC):
        return "vhlo" if _bytecode_producer(data).startswith(_VHLO_PRODUCER) else "mlirbc"
    text = _as_text(data)
    if text is not None:
        found = _text_format(text)
        if found is not None:
            return found
    if text is None and jax_exported(data) is not None:
        return "jaxexport"
    if is_hlo_proto(data):
        return "hlopb"
    by_name = format_from_extension(filename)
    if by_name is not None:
        return by_name
    kind = "text" if text is not None else "binary data"
    raise InputError(
        f"{name}: cannot tell the format ({kind} that is neither MLIR nor HLO); "
        f"give it explicitly, one of: {', '.join(FORMATS)}"
    )
