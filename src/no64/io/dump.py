"""Serializing a module in any format, to bytes or to a file."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import No64Error, OutputError
from ..ir._mlir import ir
from .destinations import destination_kind, write_atomically, write_through
from .diagnostics import mlir_error_line, xla_message
from .formats import DESCRIPTIONS, FORMATS, check_format, format_from_extension
from .hlo import dump_hlo, dump_hlopb
from .jaxexport import dump_jaxexport
from .mlir import bytecode, dump_mlir, dump_vhlo

_DUMPERS: dict[str, Callable[[ir.Module], bytes]] = {
    "mlir": dump_mlir,
    "mlirbc": bytecode,
    "vhlo": dump_vhlo,
    "hlo": dump_hlo,
    "hlopb": dump_hlopb,
    "jaxexport": dump_jaxexport,
}


def dumps(module: ir.Module, format: str) -> bytes:
    """Return ``module`` serialized in ``format`` (one of :data:`FORMATS`).

    Raises:
      OutputError: Unknown format, or the module cannot be expressed in it
        (HLO needs a ``main`` function, for example).
    """
    fmt = check_format(format, OutputError)
    try:
        return _DUMPERS[fmt](module)
    except No64Error:
        raise
    except ir.MLIRError as exc:
        raise OutputError(
            f"cannot write the module as {DESCRIPTIONS[fmt]}: {mlir_error_line('module', exc)}"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - converters raise assorted runtime errors
        raise OutputError(
            f"cannot write the module as {DESCRIPTIONS[fmt]}: {xla_message(exc)}"
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
    fmt = check_format(format, OutputError)
    kind = destination_kind(path, overwrite)
    data = dumps(module, fmt)
    if kind == "stream":
        write_through(path, data)
    else:
        write_atomically(path, data, overwrite)
    return fmt
