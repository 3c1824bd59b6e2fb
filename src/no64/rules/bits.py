"""Rules for 64-bit shifts that an exact 32-bit form replaces.

The main customer is JAX's ``iota_2x32_shape`` (threefry and philox counters
with partitionable keys): it builds a ``ui64`` linear index from iotas and
strides, then splits it into a high word (``shift_right_logical`` by 32) and a
low word (``convert`` to ``ui32``).  When the index is provably below 2**32
(the tensor has fewer than 2**32 elements, known from its static shape), the
high word is zero and the low word is the index itself: the shift is replaced
by a zero constant, and the generic pass narrows the rest exactly.
"""

from __future__ import annotations

from .._mlir import ir, stablehlo
from ..analysis import constant_elements, upper_bound
from . import RuleContext, register


@register("stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic")
def shift_out_of_small_value(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >> k`` is zero when ``x`` is proven non-negative and below ``2**k``."""
    amounts = constant_elements(op.operands[1])
    if amounts is None or len(amounts) == 0 or min(amounts) < 0:
        return False
    k = int(min(amounts))
    if k < 32:
        return False  # narrowed exactly by the generic pass
    bound = upper_bound(op.operands[0])
    if bound is None or bound >= 2**k:
        return False
    t = ir.RankedTensorType(op.results[0].type)
    if not t.has_static_shape:
        return False
    with ir.InsertionPoint(op), op.location:
        zero = stablehlo.ConstantOp(
            ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, 0))
        ).result
    op.results[0].replace_all_uses_with(zero)
    ctx.report.add(
        "rewrite",
        op.name,
        op.location,
        f"high word of a value below 2**32 (bound {bound}, e.g. an iota_2x32_shape counter) "
        "is zero",
    )
    op.erase()
    return True
