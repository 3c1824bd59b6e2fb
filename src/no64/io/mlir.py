"""MLIR text, MLIR bytecode and StableHLO portable artifacts (VHLO), read
and written by the MLIR bindings and jaxlib's serializer."""

from __future__ import annotations

import io
import os
import re

from ..errors import InputError
from ..ir._compat import xla_mlir
from ..ir._mlir import ir, stablehlo
from .diagnostics import collect_diagnostics, diagnostic_line
from .formats import BYTECODE_MAGIC

#: A versioned (VHLO) module in MLIR text.
VHLO_TEXT = re.compile(r"\bvhlo\.func_v\d")


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


def load_mlir(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    try:
        if not data.startswith(BYTECODE_MAGIC) and _parse_file_ok(path):
            # Parsing the file (not the bytes) puts its name into the locations
            # of ops that have none, so reports can point into it.
            module = ir.Module.parseFile(path, context=ctx)
        else:
            module = ir.Module.parse(data, context=ctx)
    except Exception:
        # jaxlib 0.7's bindings have no VHLO dialect: a versioned module given
        # as plain MLIR text is read as the portable artifact it is
        if not data.startswith(BYTECODE_MAGIC) and VHLO_TEXT.search(data.decode("utf-8", "replace")):
            return load_vhlo(data, path, name, ctx)
        raise
    if _has_vhlo_ops(module):
        # A versioned (VHLO) module given as plain MLIR: upgrade it properly.
        return load_vhlo(data, path, name, ctx)
    return module


def load_vhlo(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    artifact: bytes | str = data
    if not data.startswith(BYTECODE_MAGIC):
        artifact = data.decode("utf-8")
    with collect_diagnostics(ctx) as errors:
        try:
            return stablehlo.deserialize_portable_artifact(ctx, artifact)
        except Exception as exc:  # noqa: BLE001 - the diagnostics say why
            if not errors:
                raise
            where, message = errors[0]
            raise InputError(
                f"{diagnostic_line(name, where, message)}"
                " (not a StableHLO portable artifact this jaxlib can read)"
            ) from exc


def bytecode(module: ir.Module) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def dump_mlir(module: ir.Module) -> bytes:
    return module.operation.get_asm(enable_debug_info=True).encode("utf-8")


def dump_vhlo(module: ir.Module) -> bytes:

    # jaxlib's serializer works on a copy (the stablehlo binding rewrites
    # the module it is given in place) and legalizes CHLO first.  Shardy ops
    # are kept as they are ("mixed" serialization), so sharding survives a
    # round trip.
    target = stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4
    )
    return xla_mlir().serialize_portable_artifact(bytecode(module), target, True)
