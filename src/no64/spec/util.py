"""Small IR builders and edits shared by the rules."""

from __future__ import annotations

from ..ir._mlir import defining_op, ir, stablehlo
from .registry import spec_of

__all__ = ["splat", "compare", "after", "erase_dead"]


def splat(t: ir.RankedTensorType, value: int) -> ir.Value:
    """A constant of integer tensor type ``t`` with every element ``value``
    (built at the current insertion point)."""
    return stablehlo.ConstantOp(
        ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
    ).result


def compare(a: ir.Value, b: ir.Value, direction: str, compare_type: str) -> ir.Value:
    """``stablehlo.compare`` of ``a`` and ``b`` at the current insertion point."""
    return stablehlo.CompareOp(
        a,
        b,
        stablehlo.ComparisonDirectionAttr.get(direction),
        compare_type=stablehlo.ComparisonTypeAttr.get(compare_type),
    ).result


def after(op: ir.Operation) -> ir.InsertionPoint:
    """An insertion point right after ``op``."""
    block = op.block
    ops = list(block.operations)
    idx = next(i for i, o in enumerate(ops) if o.operation == op)
    if idx + 1 < len(ops):
        return ir.InsertionPoint(ops[idx + 1])
    return ir.InsertionPoint(block)


def erase_dead(op: ir.Operation | None) -> None:
    """Erase ``op`` if none of its results is used, then, transitively, the
    producers of its operands that became unused.  Ops with regions,
    functions, calls and terminators are left alone."""
    work = [op]
    while work:
        cur = work.pop()
        if cur is None or len(cur.regions):
            continue
        spec = spec_of(cur.name)
        if spec.function or spec.call or spec.terminator:
            continue
        if any(True for r in cur.results for _ in r.uses):
            continue
        producers = [defining_op(v) for v in cur.operands]
        cur.erase()
        work.extend(producers)
