"""A CPU simulation of a device that computes some integer ops on an f32 datapath.

Neuron computes an integer ``dot_general`` (EVRF035), a ``scatter`` that
combines (EVRF060) and the collectives ``all_reduce`` / ``reduce_scatter``
(EVRF061, EVRF063) in f32: its operands become f32 (an integer above 2**24
loses its low bits there), every product and partial sum is rounded to f32,
and the result is converted back.  :func:`on_datapath` writes a module as
such a device computes it -- each integer op of a form the target lists in
its ``datapaths`` computed in f32 on its operands converted to f32, its body
(a scatter's or a collective's combiner) rebuilt in f32 -- so that running
it on the CPU shows what the device gives.  XLA's CPU backend applies a
scatter's updates one by one and a collective's values replica by replica,
each sum rounded to f32: a sum that leaves f32's exact integers is wrong
there as it is on the device (its order of accumulation may differ, which
makes no difference while every partial sum is exact).  A scatter that only
stores its updates computes nothing and is left as it is.
"""

from __future__ import annotations

from typing import Any

from no64.spec.registry import spec_of
from no64.targets import Target
from support import ir, ir_compat, make_context, stablehlo


def _int(t: ir.Type) -> bool:
    e = ir.RankedTensorType(t).element_type if isinstance(t, ir.RankedTensorType) else t
    return isinstance(e, ir.IntegerType) and ir.IntegerType(e).width > 1


def _f32_like(t: ir.Type) -> ir.Type:
    return ir.RankedTensorType.get(list(ir.RankedTensorType(t).shape), ir.F32Type.get())


def _convert(v: ir.Value, t: ir.Type) -> ir.Value:
    return ir.Operation.create("stablehlo.convert", results=[t], operands=[v]).results[0]


def _stores_only(op: ir.Operation) -> bool:
    ret = list(op.regions[0].blocks[0].operations)[-1]
    return all(ir_compat.block_argument(v) is not None for v in ret.operands)


def _attrs(op: ir.Operation) -> dict[str, ir.Attribute]:
    return dict(ir_compat.attribute_dict(op))


def _rebuild_body(old: ir.Operation, new: ir.Operation) -> None:
    """``old``'s body in ``new``'s region 0, on f32 scalars."""
    block = old.regions[0].blocks[0]
    scalar = ir.RankedTensorType.get([], ir.F32Type.get())
    body = new.regions[0].blocks.append(*[scalar for _ in block.arguments])
    values: dict[Any, ir.Value] = dict(zip(block.arguments, body.arguments))
    with ir.InsertionPoint(body):
        for inner in block.operations:
            inner = inner.operation
            operands = [values[v] for v in inner.operands]
            types = [scalar if _int(r.type) else r.type for r in inner.results]
            made = ir.Operation.create(inner.name, results=types, operands=operands, attributes=_attrs(inner))
            values.update(zip(inner.results, made.results))


def _simulate(op: ir.Operation) -> None:
    """``op``, an integer op on the f32 datapath, computed in f32."""
    f32_ops = list(op.operands)
    with ir.InsertionPoint(op), op.location:
        if op.name == "stablehlo.dot_general":
            summed = [0, 1]
        elif op.name == "stablehlo.scatter":
            n = len(op.results)
            summed = [i for i in range(len(f32_ops)) if i != n]
        else:
            summed = list(range(len(f32_ops)))
        for i in summed:
            if _int(f32_ops[i].type):
                f32_ops[i] = _convert(f32_ops[i], _f32_like(f32_ops[i].type))
        attrs = _attrs(op)
        if op.name == "stablehlo.dot_general":
            attrs.pop("algorithm", None)
            attrs["precision_config"] = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
        types = [_f32_like(r.type) for r in op.results]
        new = ir.Operation.create(op.name, results=types, operands=f32_ops, attributes=attrs,
                                  regions=len(op.regions))
        if len(op.regions):
            _rebuild_body(op, new)
        outs = [_convert(r, old.type) for r, old in zip(new.results, op.results)]
    for old, out in zip(op.results, outs):
        old.replace_all_uses_with(out)
    op.erase()


def on_datapath(module: ir.Module, target: Target) -> tuple[ir.Module, int]:
    """A copy of ``module`` computed as ``target`` computes it (see the module
    docstring), and how many ops it computes in f32."""
    copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True), make_context())
    forms = {d.form for d in target.datapaths}
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        spec = spec_of(op.name)
        if (spec.form in forms and op.results and all(_int(r.type) for r in op.results)
                and not (op.name == "stablehlo.scatter" and _stores_only(op))):
            found.append(op)
        return ir.WalkResult.ADVANCE

    with copy.context:
        copy.operation.walk(visit)
        for op in found:
            _simulate(op)
        copy.operation.verify()
    return copy, len(found)
