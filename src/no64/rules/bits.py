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

from ..core._mlir import ir, stablehlo
from ..analysis.facts import constant_elements, defining_op, upper_bound
from ..kinds import EventKind
from . import RuleContext, erase_dead, register, splat


@register("stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic")
def shift_out_of_small_value(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >> k`` is zero when ``x`` is proven non-negative and below ``2**k``."""
    amounts = constant_elements(op.operands[1])
    if amounts is None or len(amounts) == 0 or min(amounts) < 0:
        return False
    k = int(min(amounts))
    if k < 32:
        return False  # left to the generic pass, which checks it
    bound = upper_bound(op.operands[0])
    if bound is None or bound >= 2**k:
        return False
    t = ir.RankedTensorType(op.results[0].type)
    if not t.has_static_shape:
        return False
    with ir.InsertionPoint(op), op.location:
        zero = splat(t, 0)
    op.results[0].replace_all_uses_with(zero)
    ctx.report.add(
        EventKind.REWRITE,
        op.name,
        op.location,
        f"high word of a value below 2**32 (bound {bound}, e.g. an iota_2x32_shape counter) "
        "is zero",
    )
    op.erase()
    return True


def _is_negative(x: ir.Value) -> ir.Value:
    t = ir.RankedTensorType(x.type)
    return stablehlo.CompareOp(
        x,
        splat(t, 0),
        stablehlo.ComparisonDirectionAttr.get("LT"),
        compare_type=stablehlo.ComparisonTypeAttr.get("SIGNED"),
    ).result


def _narrow_int_users(v: ir.Value) -> list[ir.Operation] | None:
    """The users of ``v`` if every one is a convert to an integer of at most
    32 bits (so only the low 32 bits of ``v`` matter), else ``None``."""
    users: list[ir.Operation] = []
    for use in v.uses:
        user = use.owner
        user = user if isinstance(user, ir.Operation) else user.operation
        if user.name != "stablehlo.convert":
            return None
        e = ir.ShapedType(user.results[0].type).element_type
        if not (isinstance(e, ir.IntegerType) and e.width <= 32):
            return None
        users.append(user)
    return users


def _signed_i64(v: ir.Value) -> bool:
    e = ir.ShapedType(v.type).element_type
    return isinstance(e, ir.IntegerType) and e.width == 64 and not e.is_unsigned


@register("stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic")
def high_word_of_sign_extended(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >> k`` (k >= 32) of a signed 64-bit ``x`` that holds a 32-bit value.

    Every narrowed ``i64`` holds a value of the 32-bit range, i.e. the sign
    extension of its low word, so its high bits are copies of the sign:
    ``x >>arith k`` is ``x < 0 ? -1 : 0``, and ``x >>logical k`` is
    ``x < 0 ? 2**(64-k) - 1 : 0``.  The logical form does not fit in 32 bits,
    so it is rewritten only where every user keeps just its low 32 bits (a
    convert to a 32-bit integer), as JAX does when it splits an int64 seed
    into two uint32 words.
    """
    x = op.operands[0]
    amounts = constant_elements(op.operands[1])
    if amounts is None or len(amounts) == 0 or not _signed_i64(x):
        return False
    k = int(min(amounts))
    if k != int(max(amounts)) or not 32 <= k < 64:
        return False
    t = ir.RankedTensorType(op.results[0].type)
    if not t.has_static_shape:
        return False
    arithmetic = op.name == "stablehlo.shift_right_arithmetic"
    users = [] if arithmetic else _narrow_int_users(op.results[0])
    if users is None:
        return False
    with ir.InsertionPoint(op), op.location:
        neg = _is_negative(x)
        if arithmetic:
            out = stablehlo.SelectOp(neg, splat(t, -1), splat(t, 0)).result
            op.results[0].replace_all_uses_with(out)
        else:
            for user in users:
                ut = ir.RankedTensorType(user.results[0].type)
                ones = ((1 << (64 - k)) - 1) % (1 << ir.IntegerType(ut.element_type).width)
                sel = stablehlo.SelectOp(neg, splat(ut, ones), splat(ut, 0)).result
                user.results[0].replace_all_uses_with(sel)
                user.erase()
    ctx.report.add(
        EventKind.REWRITE,
        op.name,
        op.location,
        f"bits {k}.. of a 64-bit integer holding a 32-bit value are copies of its sign",
    )
    op.erase()
    return True


@register("stablehlo.and")
def low_word_mask(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x & 0xFFFFFFFF`` feeding only converts to 32-bit integers is ``x``."""
    x, mask = op.operands[0], op.operands[1]
    c = constant_elements(mask)
    if c is None or len(c) == 0 or any(int(v) % 2**64 != 0xFFFFFFFF for v in c):
        x, mask = mask, x
        c = constant_elements(mask)
        if c is None or len(c) == 0 or any(int(v) % 2**64 != 0xFFFFFFFF for v in c):
            return False
    if _narrow_int_users(op.results[0]) is None:
        return False
    op.results[0].replace_all_uses_with(x)
    ctx.report.add(
        EventKind.REWRITE, op.name, op.location, "mask of the low 32 bits before a 32-bit convert is a no-op"
    )
    mask_op = defining_op(mask)
    op.erase()
    erase_dead(mask_op)
    return True
