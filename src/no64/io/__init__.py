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

The package's modules, one job each: :mod:`~no64.io.formats` (the format
names and file extensions), :mod:`~no64.io.detect` (a format from content
or name), :mod:`~no64.io.sources` (reading files and pipes within limits),
:mod:`~no64.io.guards` (UTF-8 and nesting checks), :mod:`~no64.io.mlir`,
:mod:`~no64.io.hlo` and :mod:`~no64.io.jaxexport` (each format family, read
and written), :mod:`~no64.io.load` and :mod:`~no64.io.dump` (the pipelines
behind :func:`load` and :func:`dumps`/:func:`save`),
:mod:`~no64.io.destinations` (writing files without leaving them half
written) and :mod:`~no64.io.diagnostics` (one-line error messages).
"""

from __future__ import annotations

from ..errors import InputError, OutputError
from .destinations import destination_kind  # the CLI checks OUT before converting
from .detect import detect_format
from .dump import dumps, save
from .formats import FORMATS, MODULE_FORMATS, format_from_extension
from .guards import MAX_NESTING
from .jaxexport import exported_of
from .load import load, load_with_format
from .sources import MAX_INPUT_SIZE, PIPE_WAIT_SECONDS

__all__ = [
    "FORMATS",
    "MODULE_FORMATS",
    "MAX_INPUT_SIZE",
    "MAX_NESTING",
    "PIPE_WAIT_SECONDS",
    "InputError",
    "OutputError",
    "destination_kind",
    "detect_format",
    "dumps",
    "exported_of",
    "format_from_extension",
    "load",
    "load_with_format",
    "save",
]
