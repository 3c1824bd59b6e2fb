"""Checks on input before and after parsing that keep the parsers from
crashing: UTF-8 text and bytecode strings, and a bound on nesting.

The parsers and printers recurse once per level of nesting and would run
out of stack on input nested more than :data:`MAX_NESTING` levels deep
(braces, parentheses, brackets and ``<...>`` in text; regions in bytecode);
the bindings abort the process on a message that is not UTF-8.
"""

from __future__ import annotations

import re

from ..errors import InputError
from ..ir._mlir import ir
from ..ir.locations import decode_location
from .diagnostics import diagnostic_line

#: The deepest nesting :func:`load` accepts: of brackets in text formats
#: (``{``, ``(``, ``[``, ``<``), of regions in bytecode.  Programs JAX writes
#: stay far below it; past a few thousand levels the parsers crash.
MAX_NESTING = 256

# What the depth scan skips: string literals (MLIR strings hold no raw
# newline), line comments, and HLO's one-line /*...*/ comments.
_SKIPPED = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[^\n]*?\*/')

_SCAN_CHUNK = 1 << 24


def _code_only(text: bytes, angles: bool) -> bytes:
    """``text`` without string literals and comments (newlines kept), and
    without the ``->``, ``<=`` and ``>=`` that are no brackets.

    The fast way splits at quotes: MLIR and HLO strings hold no newline, and
    machine-written modules have no escaped quotes and no comments.  Other
    text goes through the exact (slower) regular expression.
    """
    if b'\\"' in text or b"/*" in text:
        code = _SKIPPED.sub(b"", text)
    else:
        code = b"".join(text.split(b'"')[0::2])
        if b"//" in code:
            code = _SKIPPED.sub(b"", text)
    if angles:
        code = code.replace(b"->", b"").replace(b"<=", b"").replace(b">=", b"")
    return code


def _nesting_line(text: bytes, angles: bool, limit: int) -> int | None:
    """The line where ``text`` first nests deeper than ``limit``, or None.

    Counts ``{ ( [`` against ``} ) ]`` outside strings and comments, and with
    ``angles`` also ``<`` against ``>``.  Costs about a quarter of parsing.
    """
    import numpy as np

    if sum(text.count(c) for c in (b"{", b"(", b"[", b"<")) <= limit:
        return None  # cannot be deeper than the number of openers
    code = _code_only(text, angles)
    weight = np.zeros(256, dtype=np.int8)
    weight[[0x7B, 0x28, 0x5B]] = 1  # { ( [
    weight[[0x7D, 0x29, 0x5D]] = -1  # } ) ]
    if angles:
        weight[0x3C], weight[0x3E] = 1, -1  # < >
    a = np.frombuffer(code, dtype=np.uint8)
    depth = 0
    for start in range(0, len(a), _SCAN_CHUNK):
        levels = np.cumsum(weight[a[start : start + _SCAN_CHUNK]], dtype=np.int32) + depth
        if int(levels.max()) > limit:
            pos = start + int(np.argmax(levels > limit))
            return code.count(b"\n", 0, pos) + 1
        depth = int(levels[-1])
    return None


def check_utf8(data: bytes, name: str) -> None:
    """Refuse text that is not UTF-8: the parsers' messages quote the text,
    and the bindings abort the process on a message that is not UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"{name}:{line}:{column}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
        ) from None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An MLIR bytecode "prefix varint" at ``pos``: (value, next position).

    The number of trailing zero bits of the first byte, plus one, is its
    length in bytes; a first byte of zero is followed by eight bytes.
    """
    if pos >= len(data):
        raise IndexError(pos)
    first = data[pos]
    if first == 0:
        if pos + 9 > len(data):
            raise IndexError(pos)
        return int.from_bytes(data[pos + 1 : pos + 9], "little"), pos + 9
    width = (first & -first).bit_length()
    if pos + width > len(data):
        raise IndexError(pos)
    return int.from_bytes(data[pos : pos + width], "little") >> width, pos + width


def check_bytecode_strings(data: bytes, name: str) -> None:
    """Refuse MLIR bytecode whose producer or string section is not UTF-8.

    The reader quotes these strings in its messages, and the bindings abort
    the process on a message that is not UTF-8.  Anything else wrong with
    the layout is left to the reader, which reports it.
    """
    try:
        _, pos = _varint(data, 4)  # version
        end = data.index(b"\0", pos)
        data[pos:end].decode("utf-8")
        pos = end + 1
        while pos < len(data):
            code = data[pos]
            pos += 1
            length, pos = _varint(data, pos)
            if code & 0x80:  # aligned: the alignment, then padding bytes
                _, pos = _varint(data, pos)
                while pos < len(data) and data[pos] == 0xCB:
                    pos += 1
            section = data[pos : pos + length]
            pos += length
            if code & 0x7F == 0:  # the string section
                count, at = _varint(section, 0)
                sizes = 0
                for _ in range(count):
                    size, at = _varint(section, at)
                    sizes += size
                if sizes > len(section) - at:
                    return  # malformed: the reader says so
                section[at : at + sizes].decode("utf-8")
    except (IndexError, ValueError) as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise InputError(
                f"{name}: corrupt MLIR bytecode (a string that is not UTF-8)"
            ) from None
        return  # malformed layout: the reader says so


def check_text_nesting(data: bytes, name: str, fmt: str) -> None:
    line = _nesting_line(data, fmt != "hlo", MAX_NESTING)
    if line is not None:
        raise InputError(
            f"{name}:{line}: nested more than {MAX_NESTING} levels deep "
            "(braces, brackets, parentheses or <...>); no64 reads at most "
            f"{MAX_NESTING} levels"
        )


def check_region_nesting(module: ir.Module, name: str) -> None:
    """Refuse a parsed module whose regions nest deeper than :data:`MAX_NESTING`.

    Bytecode is read without recursion, but printing, verifying and
    converting the module recurse once per level.  Only ops that can hold
    regions are descended into.
    """
    from ..transforms.scan import region_free_ops

    region_free = region_free_ops()
    stack = [(module.operation, 0)]
    while stack:
        op, depth = stack.pop()
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    child = child.operation
                    if child.name in region_free:
                        continue
                    if depth + 1 >= MAX_NESTING:
                        where = decode_location(child.location)
                        raise InputError(
                            diagnostic_line(
                                name,
                                where,
                                f"regions nested more than {MAX_NESTING} levels deep; "
                                f"no64 reads at most {MAX_NESTING} levels",
                            )
                        )
                    stack.append((child, depth + 1))
