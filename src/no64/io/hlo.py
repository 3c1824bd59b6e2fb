"""XLA HLO text and serialized ``HloModuleProto``, converted to and from
StableHLO by XLA's own code."""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..ir._compat import xla_hlo, xla_mlir
from ..ir._mlir import ir
from ..spec.registry import spec_of
from .diagnostics import xla_error_line
from .mlir import bytecode


def is_hlo_proto(data: bytes) -> bool:
    _hlo = xla_hlo()

    try:
        _hlo.HloModule.from_serialized_hlo_module_proto(data)
    except Exception:  # noqa: BLE001 - any failure means "not an HloModuleProto"
        return False
    return True


def _from_hlo_proto(proto: bytes, ctx: ir.Context) -> ir.Module:
    module = ir.Module.parse(xla_mlir().hlo_to_stablehlo(proto), context=ctx)
    _drop_uncalled(module)
    return module


def _drop_uncalled(module: ir.Module) -> None:
    """Erase the private functions nothing refers to.  XLA's HLO importer
    writes each computation out as a function, also those it then inlines
    as a ``while``'s or a reduction's region: dead copies, whose 64-bit
    values would be converted like any other (and, in no function's call
    graph, could not be emulated as words)."""
    functions = [op.operation for op in module.body.operations if spec_of(op.operation.name).function]
    while True:
        used: set[str] = set()
        for fn in functions:
            fn.walk(lambda op, used=used: _note_symbols(op, used))
        dead = [fn for fn in functions
                if "sym_visibility" in fn.attributes
                and ir.StringAttr(fn.attributes["sym_visibility"]).value == "private"
                and ir.StringAttr(fn.attributes["sym_name"]).value not in used]
        if not dead:
            return
        for fn in dead:
            functions.remove(fn)
            fn.erase()


def _note_symbols(op: ir.Operation, used: set[str]) -> ir.WalkResult:
    attrs = op.attributes
    for i in range(len(attrs)):
        text = str(attrs[i].attr)
        if "@" in text:
            used.update(part.split()[0].strip('",]>)}') for part in text.split("@")[1:] if part)
    return ir.WalkResult.ADVANCE


def load_hlo(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    _hlo = xla_hlo()

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not HLO text (not UTF-8)") from None
    try:
        proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    except Exception as exc:  # noqa: BLE001 - XLA raises its own runtime error type
        raise InputError(xla_error_line(name, exc, "not valid HLO text: ")) from exc
    return _from_hlo_proto(proto, ctx)


def load_hlopb(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    return _from_hlo_proto(data, ctx)


def _xla_computation(module: ir.Module) -> Any:

    return xla_mlir().mlir_module_to_xla_computation(
        bytecode(module), use_tuple_args=False, return_tuple=False
    )


def dump_hlo(module: ir.Module) -> bytes:
    _hlo = xla_hlo()

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True  # otherwise "{...}", which cannot be read back
    options.print_metadata = True  # op names and source lines
    return _xla_computation(module).get_hlo_module().to_string(options).encode("utf-8")


def dump_hlopb(module: ir.Module) -> bytes:
    return bytes(_xla_computation(module).as_serialized_hlo_module_proto())
