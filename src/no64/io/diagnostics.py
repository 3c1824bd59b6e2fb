"""One-line error messages from the parsers' and converters' diagnostics.

Every failure reading or writing a module is reported in one line naming
the file and, where the parser gave one, the line and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..ir._mlir import ir
from ..ir.locations import SourceLocation, decode_location
from ..report import counted

#: The name messages give data held in memory.
MEMORY = "<memory>"

# "was parsing 4:17: error: expects opcode ..." inside XLA's HLO parser errors.
_HLO_PARSE_ERROR = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")

# Status-code prefixes that XLA puts in front of its messages.
_STATUS_PREFIX = re.compile(r"^(?:[A-Z_]+: )+")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def diagnostic_line(name: str, where: SourceLocation, message: str) -> str:
    """``name:line:col: message`` for parser positions, else ``name: where: message``.

    Diagnostics from parsing in-memory data carry the file name ``"-"``; they
    are rewritten to ``name``.  Bytecode diagnostics carry ``"-":0:0``, which
    names no position and is dropped.
    """
    message = _one_line(message)
    if where.file in ("-", name):
        pos = f"{name}:{where.line}:{where.column}" if where.line else name
        if where.primitive:
            return f"{pos}: {where.primitive}: {message}"
        return f"{pos}: {message}"
    text = str(replace(where, raw=_one_line(where.raw)))
    if text in ("", "unknown"):
        return f"{name}: {message}"
    return f"{name}: {text}: {message}"


def mlir_error_line(name: str, exc: ir.MLIRError) -> str:
    diagnostics = list(getattr(exc, "error_diagnostics", ()) or ())
    if not diagnostics:
        return f"{name}: {_one_line(_STATUS_PREFIX.sub('', str(exc)))}"
    first = diagnostics[0]
    line = diagnostic_line(name, decode_location(first.location), first.message)
    if len(diagnostics) > 1:
        line += f" (and {counted(len(diagnostics) - 1, 'more error')})"
    return line


def xla_message(exc: BaseException) -> str:
    """The first line of an XLA status message, without the status code.

    MLIR diagnostics relayed by XLA (``-:3:5: error: ...``) lose their
    position, which refers to XLA's own copy of the module.
    """
    text = _STATUS_PREFIX.sub("", str(exc).strip())
    first = text.splitlines()[0] if text else type(exc).__name__
    return _one_line(re.sub(r"^-:\d+:\d+: error: ", "", first))


def xla_error_line(name: str, exc: BaseException, doing: str) -> str:
    """One line from an XLA error while reading ``name``, with the parser's position."""
    m = _HLO_PARSE_ERROR.search(str(exc))
    if m:
        return f"{name}:{m.group(1)}:{m.group(2)}: {_one_line(m.group(3))}"
    return f"{name}: {doing}{xla_message(exc)}"


@contextmanager
def collect_diagnostics(ctx: ir.Context) -> Iterator[list[tuple[SourceLocation, str]]]:
    """Collect the context's error diagnostics (instead of printing them to stderr)."""
    collected: list[tuple[SourceLocation, str]] = []

    def handler(diag: Any) -> bool:
        if diag.severity == ir.DiagnosticSeverity.ERROR:
            collected.append((decode_location(diag.location), str(diag.message)))
        return True

    handle = ctx.attach_diagnostic_handler(handler)
    try:
        yield collected
    finally:
        handle.detach()
