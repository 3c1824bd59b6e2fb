"""Refusal checks for width-dependent ops that no rewrite makes exact
(each returns a :class:`~no64.spec.registry.Refusal`, or ``None``)."""

from __future__ import annotations

from ..ir._mlir import ir
from ..spec.registry import Refusal, RuleContext


def host_transfer(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    return Refusal("it transfers 64-bit data to or from the host, whose layout would change")


def iota_fits(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    """An iota longer than the 32-bit range has elements that do not fit."""
    t = ir.RankedTensorType(op.results[0].type)
    elem = t.element_type
    if not isinstance(elem, ir.IntegerType) or not t.has_static_shape:
        return None
    dim = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    size = t.shape[dim]
    limit = 2**32 if elem.is_unsigned else 2**31
    if size > limit:
        return Refusal(f"iota of length {size} does not fit in 32 bits", out_of_range=True)
    return None
