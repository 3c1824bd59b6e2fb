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
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import os
import re
import secrets
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from .core._mlir import ir, make_context, stablehlo
from .errors import InputError, No64Error, OutputError
from .core.locations import SourceLocation, decode_location

__all__ = [
    "FORMATS",
    "MODULE_FORMATS",
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
    from jaxlib import _hlo

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


def _read(source: str | os.PathLike[str] | bytes) -> tuple[str, bytes, str | None]:
    """Return (display name, content, path or None for in-memory data)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _MEMORY, bytes(source), None
    path = os.fspath(source)
    if not isinstance(path, str):
        raise InputError(f"{path!r}: file names must be str, not bytes")
    try:
        with open(path, "rb") as f:
            return path, f.read(), path
    except FileNotFoundError:
        hint = ""
        if "\n" in path or path.lstrip().startswith(("module", "HloModule", "#loc")):
            hint = " (to load module text held in memory, pass it as bytes)"
            path = path.strip().splitlines()[0][:60] + "..."
        raise InputError(f"{path}: no such file{hint}") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _has_vhlo_ops(module: ir.Module) -> bool:
    return any(op.operation.name.startswith("vhlo.") for op in module.body.operations)


def _load_mlir(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    if path is not None and not data.startswith(_BYTECODE_MAGIC):
        # Parsing the file (not the bytes) puts its name into the locations
        # of ops that have none, so reports can point into it.
        module = ir.Module.parseFile(path, context=ctx)
    else:
        module = ir.Module.parse(data, context=ctx)
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
    from jaxlib import _jax

    return ir.Module.parse(_jax.mlir.hlo_to_stablehlo(proto), context=ctx)


def _load_hlo(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    from jaxlib import _hlo

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
) -> tuple[ir.Module, str]:
    """Like :func:`load`, and also return the format that was read."""
    name, data, path = _read(source)
    _require_content(data, name)
    fmt = _check_format(format, InputError) if format else detect_format(data, path)
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
    _verify(module, name)
    return module, fmt


def load(
    source: str | os.PathLike[str] | bytes,
    *,
    format: str | None = None,
    context: ir.Context | None = None,
) -> ir.Module:
    """Parse a module from a file (``str`` or path) or from ``bytes`` in memory.

    Args:
      source: A file name, or the module's content as bytes.  A ``str`` is
        always a file name; pass module text held in memory as bytes.
      format: One of :data:`FORMATS`; detected with :func:`detect_format`
        when None.
      context: The MLIR context to parse into; a new one from
        :func:`no64._mlir.make_context` when None.

    Returns:
      The verified module, in StableHLO (HLO and VHLO inputs are converted).

    Raises:
      InputError: The file is missing, empty, unreadable, of unknown format,
        malformed (the message gives ``file:line:col`` where the parser
        does), uses an op of an unknown dialect, or fails verification.
    """
    return load_with_format(source, format=format, context=context)[0]


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
    from jaxlib import _jax

    # jaxlib's serializer works on a copy (the stablehlo binding rewrites
    # the module it is given in place) and legalizes CHLO first.  Shardy ops
    # are kept as they are ("mixed" serialization), so sharding survives a
    # round trip.
    target = stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )
    return _jax.mlir.serialize_portable_artifact(_bytecode(module), target, True)


def _xla_computation(module: ir.Module) -> Any:
    from jaxlib import _jax

    return _jax.mlir.mlir_module_to_xla_computation(
        _bytecode(module), use_tuple_args=False, return_tuple=False
    )


def _dump_hlo(module: ir.Module) -> bytes:
    from jaxlib import _hlo

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True  # otherwise "{...}", which cannot be read back
    options.print_metadata = True  # op names and source lines
    return _xla_computation(module).get_hlo_module().to_string(options).encode("utf-8")


def _dump_hlopb(module: ir.Module) -> bytes:
    return bytes(_xla_computation(module).as_serialized_hlo_module_proto())


_NARROWED_DTYPES = {"int64": "int32", "uint64": "uint32", "float64": "float32",
                    "complex128": "complex64"}


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

    new = dataclasses.replace(
        exported,
        in_avals=tuple(narrow(a) for a in exported.in_avals),
        out_avals=tuple(narrow(a) for a in exported.out_avals),
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

    The format comes from ``dest``'s extension when not given.  The file is
    written to a temporary name beside ``dest`` and renamed into place, so
    ``dest`` is never left half written.

    Raises:
      OutputError: Unknown format, ``dest`` exists and ``overwrite`` is
        false, ``dest`` is a directory, or the write fails.
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
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a directory")
    if not overwrite and os.path.lexists(path):
        raise OutputError(f"{path}: file exists; refusing to overwrite it")
    _write_atomically(path, dumps(module, fmt), overwrite)
    return fmt


def _write_atomically(path: str, data: bytes, overwrite: bool) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        # 0o666 lets the umask decide the final permissions, as for open().
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)  # atomic, and fails if path appeared meanwhile
        except FileExistsError:
            raise OutputError(f"{path}: file exists; refusing to overwrite it") from None
        except OSError:
            # File systems without hard links: check, then rename.
            if os.path.lexists(path):
                raise OutputError(f"{path}: file exists; refusing to overwrite it") from None
            os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
