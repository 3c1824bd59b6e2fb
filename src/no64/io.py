"""Read and write modules in the formats JAX and XLA produce.

Six formats, all converted by jaxlib's own code so that no64 reads exactly
what the installed JAX writes:

``"mlir"``
    MLIR text (``module { func.func ... }``), as printed by
    ``jax.jit(f).lower(...).as_text()``.  Written with debug locations, so a
    later run can still name the user's source lines.
``"mlirbc"``
    MLIR bytecode of the same module.
``"vhlo"``
    A StableHLO portable artifact (versioned VHLO bytecode): the module inside
    a ``jax.export`` artifact (``Exported.mlir_module_serialized``).  Written
    for a consumer at most four weeks old, the target ``jax.export`` uses.
``"jaxexport"``
    A whole ``jax.export`` artifact, as ``Exported.serialize()`` writes it (a
    flatbuffer holding the portable artifact with its calling convention:
    input and output avals, shardings, effects, platforms).  Read by
    ``jax.export.deserialize``; written only for a module read from one, whose
    calling convention is kept with every 64-bit aval narrowed to 32 bits, so
    ``jax.export.deserialize(...).call(...)`` runs the converted function.
``"hlo"``
    XLA HLO text (``HloModule ...``), with op metadata (source lines).
``"hlopb"``
    A serialized ``HloModuleProto``.

:func:`load` parses any of them into a StableHLO ``ir.Module``;
:func:`dumps` and :func:`save` write one back.  Every failure the input can
cause is an :class:`~no64.errors.InputError` (reading) or an
:class:`OutputError` (writing) whose message is one line naming the file
and, where the parser gave one, the line and column.

Limits on input, so that bad input gets an error instead of a crash or a hang:

* Only regular files and pipes (FIFOs, ``<(...)``) are read; devices,
  sockets and directories are refused.  A pipe with no writer is given up on
  after :data:`PIPE_WAIT_SECONDS`.
* Input larger than ``max_size`` bytes (default :data:`MAX_INPUT_SIZE`,
  1 GiB) is refused, before reading it when the size is known.
* Input nested more than :data:`MAX_NESTING` levels deep (braces,
  parentheses, brackets and ``<...>`` in text; regions in bytecode) is
  refused: the parsers and printers recurse once per level and would run
  out of stack.
"""

from __future__ import annotations

import dataclasses
import errno
import importlib.util
import io
import os
import re
import secrets
import select
import stat
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .core._compat import xla_hlo, xla_mlir
from .core._mlir import ir, make_context, stablehlo
from .errors import InputError, No64Error, OutputError
from .core.locations import SourceLocation, decode_location

__all__ = [
    "FORMATS",
    "MODULE_FORMATS",
    "MAX_INPUT_SIZE",
    "MAX_NESTING",
    "OutputError",
    "detect_format",
    "dumps",
    "exported_of",
    "format_from_extension",
    "load",
    "load_with_format",
    "save",
]

#: Every format :func:`load` reads and :func:`dumps` writes.
FORMATS: tuple[str, ...] = ("mlir", "mlirbc", "vhlo", "hlo", "hlopb", "jaxexport")
#: The formats any module can be written in (``"jaxexport"`` needs a module
#: read from a ``jax.export`` artifact: its calling convention).
MODULE_FORMATS: tuple[str, ...] = ("mlir", "mlirbc", "vhlo", "hlo", "hlopb")

_DESCRIPTIONS = {
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

#: The largest input :func:`load` reads by default, in bytes (1 GiB).
MAX_INPUT_SIZE = 1 << 30
#: The deepest nesting :func:`load` accepts: of brackets in text formats
#: (``{``, ``(``, ``[``, ``<``), of regions in bytecode.  Programs JAX writes
#: stay far below it; past a few thousand levels the parsers crash.
MAX_NESTING = 256
#: How long to wait for the first bytes from a pipe before giving up on it.
PIPE_WAIT_SECONDS = 30.0

_BYTECODE_MAGIC = b"ML\xefR"
_VHLO_PRODUCER = b"StableHLO_v"
_MEMORY = "<memory>"

# Text detection: what the first significant line of each text format starts with.
_HLO_START = re.compile(r"HloModule\b")
_MLIR_START = re.compile(r'(module\b|func\.func\b|"builtin\.module"|"func\.func"|#|!|\{-#)')
_VHLO_TEXT = re.compile(r"\bvhlo\.func_v\d")
# "was parsing 4:17: error: expects opcode ..." inside XLA's HLO parser errors.
_HLO_PARSE_ERROR = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")
# Status-code prefixes that XLA puts in front of its messages.
_STATUS_PREFIX = re.compile(r"^(?:[A-Z_]+: )+")


# --------------------------------------------------------------------------- formats


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


def _check_format(fmt: str, error: type[No64Error]) -> str:
    if fmt not in FORMATS:
        raise error(f"unknown format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    return fmt


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


def _text_format(text: str) -> str | None:
    first = _first_significant_line(text)
    if _HLO_START.match(first):
        return "hlo"
    if _VHLO_TEXT.search(text):
        return "vhlo"
    if _MLIR_START.match(first) or "stablehlo." in text or "func.func" in text:
        return "mlir"
    return None


def _is_hlo_proto(data: bytes) -> bool:
    _hlo = xla_hlo()

    try:
        _hlo.HloModule.from_serialized_hlo_module_proto(data)
    except Exception:  # noqa: BLE001 - any failure means "not an HloModuleProto"
        return False
    return True


def _jax_exported(data: bytes) -> Any | None:
    """``data`` read as a ``jax.export`` artifact, or None when it is not one.

    The artifact is a flatbuffer without a file identifier; it is one when
    ``jax.export.deserialize`` reads it and the module inside is MLIR
    bytecode.
    """
    if importlib.util.find_spec("flatbuffers") is None:
        return None
    try:
        from jax import export as jax_export

        exported = jax_export.deserialize(bytearray(data))
        payload = bytes(exported.mlir_module_serialized)
    except Exception:  # noqa: BLE001 - any failure means "not a jax.export artifact"
        return None
    return exported if payload.startswith(_BYTECODE_MAGIC) else None


def _require_content(data: bytes, name: str) -> None:
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
    name = os.fspath(filename) if filename is not None else _MEMORY
    _require_content(data, name)
    if data.startswith(_BYTECODE_MAGIC):
        return "vhlo" if _bytecode_producer(data).startswith(_VHLO_PRODUCER) else "mlirbc"
    text = _as_text(data)
    if text is not None:
        found = _text_format(text)
        if found is not None:
            return found
    if text is None and _jax_exported(data) is not None:
        return "jaxexport"
    if _is_hlo_proto(data):
        return "hlopb"
    by_name = format_from_extension(filename)
    if by_name is not None:
        return by_name
    kind = "text" if text is not None else "binary data"
    raise InputError(
        f"{name}: cannot tell the format ({kind} that is neither MLIR nor HLO); "
        f"give it explicitly, one of: {', '.join(FORMATS)}"
    )


# --------------------------------------------------------------------------- diagnostics


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _diagnostic_line(name: str, where: SourceLocation, message: str) -> str:
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


def _mlir_error_line(name: str, exc: ir.MLIRError) -> str:
    diagnostics = list(getattr(exc, "error_diagnostics", ()) or ())
    if not diagnostics:
        return f"{name}: {_one_line(_STATUS_PREFIX.sub('', str(exc)))}"
    first = diagnostics[0]
    line = _diagnostic_line(name, decode_location(first.location), first.message)
    if len(diagnostics) > 1:
        line += f" (and {len(diagnostics) - 1} more error(s))"
    return line


def _xla_message(exc: BaseException) -> str:
    """The first line of an XLA status message, without the status code.

    MLIR diagnostics relayed by XLA (``-:3:5: error: ...``) lose their
    position, which refers to XLA's own copy of the module.
    """
    text = _STATUS_PREFIX.sub("", str(exc).strip())
    first = text.splitlines()[0] if text else type(exc).__name__
    return _one_line(re.sub(r"^-:\d+:\d+: error: ", "", first))


def _xla_error_line(name: str, exc: BaseException, doing: str) -> str:
    """One line from an XLA error while reading ``name``, with the parser's position."""
    m = _HLO_PARSE_ERROR.search(str(exc))
    if m:
        return f"{name}:{m.group(1)}:{m.group(2)}: {_one_line(m.group(3))}"
    return f"{name}: {doing}{_xla_message(exc)}"


@contextmanager
def _collect_diagnostics(ctx: ir.Context) -> Iterator[list[tuple[SourceLocation, str]]]:
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


# --------------------------------------------------------------------------- loading


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << (shift - 4)) == 0:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} bytes"


def _too_large(name: str, max_size: int) -> InputError:
    return InputError(
        f"{name}: larger than {_size_text(max_size)}, the most no64 reads "
        "(raise the limit with --max-input-size, or max_size= in the API)"
    )


def _not_found(path: str) -> InputError:
    hint = ""
    if "\n" in path or path.lstrip().startswith(("module", "HloModule", "#loc")):
        hint = " (to load module text held in memory, pass it as bytes)"
        path = path.strip().splitlines()[0][:60] + "..."
    return InputError(f"{path}: no such file{hint}")


_FILE_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    for test, kind in _FILE_KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def _read_fd(fd: int, name: str, max_size: int | None) -> bytes:
    """Read a regular file to its end, refusing it past ``max_size`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, 1 << 24)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if max_size is not None and total > max_size:
            raise _too_large(name, max_size)
        chunks.append(chunk)


def _read_pipe(fd: int, name: str, max_size: int | None) -> bytes:
    """Read a pipe (opened non-blocking) to its end.

    Opening a FIFO that no process writes to, or reading one that stops
    sending, would block for ever: give up after :data:`PIPE_WAIT_SECONDS`
    without data.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    chunks: list[bytes] = []
    total = 0
    while True:
        if not poller.poll(PIPE_WAIT_SECONDS * 1000):
            what = "nothing written to this pipe" if not chunks else "this pipe stalled"
            raise InputError(
                f"{name}: {what} for {PIPE_WAIT_SECONDS:g} s (is a program writing to it?)"
            )
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            continue
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if max_size is not None and total > max_size:
            raise _too_large(name, max_size)
        chunks.append(chunk)


def _read(
    source: str | os.PathLike[str] | bytes, max_size: int | None = MAX_INPUT_SIZE
) -> tuple[str, bytes, str | None]:
    """Return (display name, content, path or None for in-memory data).

    ``source`` is bytes held in memory, or a file name (``str``, ``bytes``
    path or path-like: any name the OS gives, UTF-8 or not).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _MEMORY, bytes(source), None
    path = os.fsdecode(os.fspath(source))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise InputError(
            f"{path}: is {_kind(mode)}, not a file; no64 reads regular files and pipes"
        )
    try:
        # Non-blocking, so that opening a FIFO no program writes to returns.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if max_size is not None and st.st_size > max_size:
                raise _too_large(path, max_size)
            os.set_blocking(fd, True)
            data = _read_fd(fd, path, max_size)
        elif stat.S_ISFIFO(st.st_mode):
            data = _read_pipe(fd, path, max_size)
        else:  # replaced since the check above
            raise InputError(f"{path}: is {_kind(st.st_mode)}, not a file")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return path, data, path


# --------------------------------------------------------------------------- nesting

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


def _check_utf8(data: bytes, name: str) -> None:
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


def _check_bytecode_strings(data: bytes, name: str) -> None:
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


def _check_text_nesting(data: bytes, name: str, fmt: str) -> None:
    line = _nesting_line(data, fmt != "hlo", MAX_NESTING)
    if line is not None:
        raise InputError(
            f"{name}:{line}: nested more than {MAX_NESTING} levels deep "
            "(braces, brackets, parentheses or <...>); no64 reads at most "
            f"{MAX_NESTING} levels"
        )


def _check_region_nesting(module: ir.Module, name: str) -> None:
    """Refuse a parsed module whose regions nest deeper than :data:`MAX_NESTING`.

    Bytecode is read without recursion, but printing, verifying and
    converting the module recurse once per level.  Only ops that can hold
    regions are descended into.
    """
    from .core.scan import region_free_ops

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
                            _diagnostic_line(
                                name,
                                where,
                                f"regions nested more than {MAX_NESTING} levels deep; "
                                f"no64 reads at most {MAX_NESTING} levels",
                            )
                        )
                    stack.append((child, depth + 1))


def _has_vhlo_ops(module: ir.Module) -> bool:
    return any(op.operation.name.startswith("vhlo.") for op in module.body.operations)


def _parse_file_ok(path: str | None) -> bool:
    """Whether the MLIR parser may read ``path`` itself: a regular file whose
    name the bindings take (UTF-8)."""
    if path is None or not os.path.isfile(path):
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _load_mlir(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    try:
        if not data.startswith(_BYTECODE_MAGIC) and _parse_file_ok(path):
            # Parsing the file (not the bytes) puts its name into the locations
            # of ops that have none, so reports can point into it.
            module = ir.Module.parseFile(path, context=ctx)
        else:
            module = ir.Module.parse(data, context=ctx)
    except Exception:
        # jaxlib 0.7's bindings have no VHLO dialect: a versioned module given
        # as plain MLIR text is read as the portable artifact it is
        if not data.startswith(_BYTECODE_MAGIC) and _VHLO_TEXT.search(data.decode("utf-8", "replace")):
            return _load_vhlo(data, path, name, ctx)
        raise
    if _has_vhlo_ops(module):
        # A versioned (VHLO) module given as plain MLIR: upgrade it properly.
        return _load_vhlo(data, path, name, ctx)
    return module


def _load_vhlo(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    artifact: bytes | str = data
    if not data.startswith(_BYTECODE_MAGIC):
        artifact = data.decode("utf-8")
    with _collect_diagnostics(ctx) as errors:
        try:
            return stablehlo.deserialize_portable_artifact(ctx, artifact)
        except Exception as exc:  # noqa: BLE001 - the diagnostics say why
            if not errors:
                raise
            where, message = errors[0]
            raise InputError(
                f"{_diagnostic_line(name, where, message)}"
                " (not a StableHLO portable artifact this jaxlib can read)"
            ) from exc


def _from_hlo_proto(proto: bytes, ctx: ir.Context) -> ir.Module:

    return ir.Module.parse(xla_mlir().hlo_to_stablehlo(proto), context=ctx)


def _load_hlo(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    _hlo = xla_hlo()

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not HLO text (not UTF-8)") from None
    try:
        proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as exc:  # noqa: BLE001 - XLA raises its own runtime error type
        raise InputError(_xla_error_line(name, exc, "not valid HLO text: ")) from exc
    return _from_hlo_proto(proto, ctx)


def _load_hlopb(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    return _from_hlo_proto(data, ctx)


#: The jax.export artifact each module read from one came from (its calling
#: convention, needed to write one back).
_EXPORTED: "weakref.WeakKeyDictionary[ir.Module, Any]" = weakref.WeakKeyDictionary()


def _load_jaxexport(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    if importlib.util.find_spec("flatbuffers") is None:
        raise InputError(f"{name}: reading a jax.export artifact needs the flatbuffers package")
    exported = _jax_exported(data)
    if exported is None:
        raise InputError(f"{name}: not a jax.export artifact (Exported.serialize()) this jax can read")
    module = _load_vhlo(bytes(exported.mlir_module_serialized), None, name, ctx)
    _EXPORTED[module] = exported
    return module


def exported_of(module: ir.Module) -> Any | None:
    """The ``jax.export.Exported`` that ``module`` was read from, or None."""
    return _EXPORTED.get(module)


_LOADERS: dict[str, Callable[[bytes, str | None, str, ir.Context], ir.Module]] = {
    "mlir": _load_mlir,
    "mlirbc": _load_mlir,
    "vhlo": _load_vhlo,
    "hlo": _load_hlo,
    "hlopb": _load_hlopb,
    "jaxexport": _load_jaxexport,
}


def load_with_format(
    source: str | os.PathLike[str] | bytes,
    *,
    format: str | None = None,
    context: ir.Context | None = None,
    max_size: int | None = MAX_INPUT_SIZE,
) -> tuple[ir.Module, str]:
    """Like :func:`load`, and also return the format that was read."""
    name, data, path = _read(source, max_size)
    _require_content(data, name)
    fmt = _check_format(format, InputError) if format else detect_format(data, path)
    text = not data.startswith(_BYTECODE_MAGIC)
    if text and fmt in ("mlir", "mlirbc", "vhlo", "hlo"):
        _check_utf8(data, name)
        _check_text_nesting(data, name, fmt)
    elif not text:
        _check_bytecode_strings(data, name)
    ctx = context if context is not None else make_context()
    try:
        module = _LOADERS[fmt](data, path, name, ctx)
    except No64Error:
        raise
    except ir.MLIRError as exc:
        corrupt = " (truncated or corrupt MLIR bytecode)" if data.startswith(_BYTECODE_MAGIC) else ""
        raise InputError(_mlir_error_line(name, exc) + corrupt) from exc
    except Exception as exc:  # noqa: BLE001 - converters raise assorted runtime errors
        raise InputError(
            _xla_error_line(name, exc, f"cannot read it as {_DESCRIPTIONS[fmt]}: ")
        ) from exc
    if not (text and fmt in ("mlir", "mlirbc")):
        # Bytecode, and modules converted from HLO (whose calls become
        # nested regions), were not scanned as text.
        _check_region_nesting(module, name)
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
        :data:`MAX_NESTING` levels deep, of unknown format, malformed (the message gives ``file:line:col`` where the parser
        does), uses an op of an unknown dialect, or fails verification.
    """
    return load_with_format(source, format=format, context=context, max_size=max_size)[0]


def _verify(module: ir.Module, name: str) -> None:
    try:
        ok = module.operation.verify()
    except ir.MLIRError as exc:
        raise InputError(_mlir_error_line(name, exc)) from exc
    if ok is False:  # older bindings return False instead of raising
        raise InputError(f"{name}: invalid module (verification failed)")


# --------------------------------------------------------------------------- writing


def _bytecode(module: ir.Module) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def _dump_mlir(module: ir.Module) -> bytes:
    return module.operation.get_asm(enable_debug_info=True).encode("utf-8")


def _dump_vhlo(module: ir.Module) -> bytes:

    # jaxlib's serializer works on a copy (the stablehlo binding rewrites
    # the module it is given in place) and legalizes CHLO first.  Shardy ops
    # are kept as they are ("mixed" serialization), so sharding survives a
    # round trip.
    target = stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )
    return xla_mlir().serialize_portable_artifact(_bytecode(module), target, True)


def _xla_computation(module: ir.Module) -> Any:

    return xla_mlir().mlir_module_to_xla_computation(
        _bytecode(module), use_tuple_args=False, return_tuple=False
    )


def _dump_hlo(module: ir.Module) -> bytes:
    _hlo = xla_hlo()

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True  # otherwise "{...}", which cannot be read back
    options.print_metadata = True  # op names and source lines
    return _xla_computation(module).get_hlo_module().to_string(options).encode("utf-8")


def _dump_hlopb(module: ir.Module) -> bytes:
    return bytes(_xla_computation(module).as_serialized_hlo_module_proto())


def _entry_types(module: ir.Module) -> tuple[list[ir.Type], list[ir.Type]] | None:
    """The argument and result types of the module's public entry function."""
    from .core.walk import entry_function

    with module.context:
        fn = entry_function(module.operation)
        if fn is None:
            return None
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        return list(ftype.inputs), list(ftype.results)


from .core.types import NARROWED_DTYPE_NAMES as _NARROWED_DTYPES  # noqa: E402


def _dump_jaxexport(module: ir.Module) -> bytes:
    """A ``jax.export`` artifact: the calling convention of the one ``module``
    was read from, with every 64-bit aval narrowed to 32 bits (as the pass
    narrows the entry function's types), and the module as a portable
    artifact.  A VJP the input carried is not kept (it would be 64-bit)."""
    exported = _EXPORTED.get(module)
    if exported is None:
        raise OutputError(
            "writing a jax.export artifact needs the calling convention of one: "
            "the module must be read from a jax.export artifact (Exported.serialize())"
        )
    import numpy as np

    def narrow(aval: Any) -> Any:
        name = _NARROWED_DTYPES.get(str(getattr(aval, "dtype", "")))
        return aval.update(dtype=np.dtype(name)) if name else aval

    types = _entry_types(module)

    def avals(old: Any, new_types: list[ir.Type] | None, shardings: Any, what: str, verb: str,
              positions: Any = None) -> tuple[Any, ...]:
        out = []
        for i, aval in enumerate(old):
            aval = narrow(aval)
            # the module's position of this aval (JAX drops unused arguments)
            j = positions[i] if positions is not None else i
            t = new_types[j] if new_types is not None and j is not None and j < len(new_types) else None
            if (isinstance(t, ir.RankedTensorType) and t.rank == len(aval.shape) + 1
                    and t.shape[-1] == 2 and str(aval.dtype) in ("int32", "uint32", "float32")):
                # emulated in 32-bit words (low, high), or a float64 carried
                # as an f32 pair (hi, lo): shape S x 2
                pairs = "an f32 pair" if str(aval.dtype) == "float32" else "32-bit word pairs"
                sharding = shardings[i] if i < len(shardings) else None
                if sharding is not None and not sharding.is_replicated():
                    raise OutputError(
                        f"{what} #{i} {verb} as {pairs} but is sharded ({sharding}); "
                        "a jax.export artifact cannot say how its pairs are sharded"
                    )
                aval = aval.update(shape=(*aval.shape, 2))
            out.append(aval)
        return tuple(out)

    # the module's arguments: platform index, dimension variables and tokens
    # first, then the arguments JAX kept
    kept = list(exported.module_kept_var_idx)
    first = max(len(types[0]) - len(kept), 0) if types else 0
    in_positions = [first + kept.index(i) if i in kept else None for i in range(len(exported.in_avals))]
    new = dataclasses.replace(
        exported,
        in_avals=avals(exported.in_avals, types[0] if types else None, exported.in_shardings_hlo,
                       "input", "enters", in_positions),
        out_avals=avals(exported.out_avals, types[1] if types else None, exported.out_shardings_hlo,
                        "output", "comes back"),
        mlir_module_serialized=_dump_vhlo(module),
        _get_vjp=None,
    )
    return bytes(new.serialize())


_DUMPERS: dict[str, Callable[[ir.Module], bytes]] = {
    "mlir": _dump_mlir,
    "mlirbc": _bytecode,
    "vhlo": _dump_vhlo,
    "hlo": _dump_hlo,
    "hlopb": _dump_hlopb,
    "jaxexport": _dump_jaxexport,
}


def dumps(module: ir.Module, format: str) -> bytes:
    """Return ``module`` serialized in ``format`` (one of :data:`FORMATS`).

    Raises:
      OutputError: Unknown format, or the module cannot be expressed in it
        (HLO needs a ``main`` function, for example).
    """
    fmt = _check_format(format, OutputError)
    try:
        return _DUMPERS[fmt](module)
    except No64Error:
        raise
    except ir.MLIRError as exc:
        raise OutputError(
            f"cannot write the module as {_DESCRIPTIONS[fmt]}: {_mlir_error_line('module', exc)}"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - converters raise assorted runtime errors
        raise OutputError(
            f"cannot write the module as {_DESCRIPTIONS[fmt]}: {_xla_message(exc)}"
        ) from exc


def save(
    module: ir.Module,
    dest: str | os.PathLike[str],
    *,
    format: str | None = None,
    overwrite: bool = False,
) -> str:
    """Write ``module`` to the file ``dest`` and return the format used.

    The format comes from ``dest``'s extension when not given.  A regular
    file is written to a temporary name beside it and renamed into place, so
    ``dest`` is never left half written; an overwritten file keeps its
    permissions and, where the user may set them, its owner and group.  A
    symbolic link is written through (its target is replaced), and a
    character device or FIFO (``/dev/null``, ``/dev/stdout``, a pipe) is
    written to as it is, without ``overwrite``.

    Raises:
      OutputError: Unknown format, ``dest`` is an existing file and
        ``overwrite`` is false, ``dest`` is a directory, block device or
        socket, a FIFO no program reads, or the write fails.
    """
    path = os.fspath(dest)
    if format is None:
        format = format_from_extension(path)
        if format is None:
            raise OutputError(
                f"{path}: cannot tell the output format from the file name; "
                f"give it explicitly, one of: {', '.join(FORMATS)}"
            )
    fmt = _check_format(format, OutputError)
    kind = _destination_kind(path, overwrite)
    data = dumps(module, fmt)
    if kind == "stream":
        _write_through(path, data)
    else:
        _write_atomically(path, data, overwrite)
    return fmt


def _destination_kind(path: str, overwrite: bool) -> str:
    """Whether ``path`` may be written, and how: ``"file"`` (a new or, with
    ``overwrite``, an existing regular file, replaced atomically) or
    ``"stream"`` (a character device or FIFO, written to as it is).

    Raises:
      OutputError: What :func:`save` would refuse, before any work is done.
    """
    try:
        st = os.stat(path)  # through symbolic links
    except FileNotFoundError:
        return "file"  # new (also the target of a dangling link)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a directory")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path}: is {_kind(mode)}; refusing to write to it")
    if _is_special_name(path):
        # /dev/stdout, /dev/fd/N, /proc/self/fd/N naming a file the shell
        # opened (``> out.mlir``): replacing the file would lose the output.
        return "stream"
    if not overwrite:
        raise OutputError(f"{path}: file exists; refusing to overwrite it")
    return "file"


_FD_NAME = re.compile(r"/(?:dev/(?:stdout|stderr|fd/\d+)|proc/(?:self|\d+)/fd/\d+)")


def _is_special_name(path: str) -> bool:
    """Whether ``path`` names an open file descriptor (``/dev/stdout``, ...)."""
    return _FD_NAME.fullmatch(os.path.abspath(path)) is not None


def _write_through(path: str, data: bytes) -> None:
    """Write ``data`` to a character device or FIFO (or a file the shell
    opened, named by ``/dev/stdout``), as it is."""
    try:
        # Non-blocking open: a FIFO without a reader fails (ENXIO) at once
        # instead of waiting for one.
        flags = os.O_WRONLY | os.O_NONBLOCK | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputError(f"{path}: no program reads from this pipe") from None
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _target(path: str) -> str:
    """The file a path names once symbolic links are followed; ``path``
    itself when it is no link."""
    if not os.path.islink(path):
        return path
    return os.path.realpath(path)


def _write_atomically(path: str, data: bytes, overwrite: bool) -> None:
    shown = path
    path = _target(path)  # write through links: replace their target
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        old = os.stat(path) if overwrite and os.path.exists(path) else None
        if old is not None and not _same_owner_possible(old):
            # The new file could not be given the old one's owner: write
            # into the old file instead (not atomic, but it keeps its owner).
            with open(path, "r+b") as f:
                f.write(data)
                f.truncate()
                f.flush()
                os.fsync(f.fileno())
            return
        # 0o666 lets the umask decide a new file's permissions, as for open().
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if old is not None:
                _copy_owner_and_mode(f.fileno(), old)
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # atomic, and fails if path appeared meanwhile
        except FileExistsError:
            raise OutputError(f"{shown}: file exists; refusing to overwrite it") from None
        except OSError:
            # File systems without hard links: check, then rename.
            if os.path.lexists(path):
                raise OutputError(f"{shown}: file exists; refusing to overwrite it") from None
            os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from exc
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _same_owner_possible(old: os.stat_result) -> bool:
    """Whether a new file can be given ``old``'s owner and group."""
    if not hasattr(os, "geteuid"):
        return True
    if os.geteuid() == 0:
        return True
    return old.st_uid == os.geteuid() and (
        old.st_gid == os.getegid() or old.st_gid in os.getgroups()
    )


def _copy_owner_and_mode(fd: int, old: os.stat_result) -> None:
    if hasattr(os, "fchown"):
        new = os.fstat(fd)
        if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
            os.fchown(fd, old.st_uid, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))
