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

from ..analysis.ranges import defining_op
from ..ir._mlir import ir, stablehlo
from ..kinds import EventKind
from ..spec.registry import Computes, Refusal, RuleContext, spec_of
from ..spec.util import after, compare, erase_dead, splat


def shift_out_of_small_value(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >> k`` is zero when ``x`` is proven non-negative and below ``2**k``."""
    ranges = ctx.ranges()
    amount = ranges.range(op.operands[1])
    if amount is None or amount.sentinels or amount.lo < 32 or amount.lo > amount.hi:
        return False  # shifts by less than 32 are left to the generic pass, which checks them
    k = amount.lo
    x = ranges.range(op.operands[0])
    if x is None or x.sentinels or x.lo < 0 or x.hi >= 2**k:
        return False
    bound = x.hi
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
    return compare(x, splat(ir.RankedTensorType(x.type), 0), "LT", "SIGNED")


def _int_convert_users(v: ir.Value) -> list[ir.Operation] | None:
    """The users of ``v`` if every one is a convert to an integer of at most
    32 bits, else ``None``.  (Each is judged apart: see :func:`_truncates`.)"""
    users: list[ir.Operation] = []
    for use in v.uses:
        user = use.owner
        user = user if isinstance(user, ir.Operation) else user.operation
        if not spec_of(user.name).convert:
            return None
        e = ir.ShapedType(user.results[0].type).element_type
        if not (isinstance(e, ir.IntegerType) and e.width <= 32):
            return None
        users.append(user)
    return users


def _truncates(user: ir.Operation) -> bool:
    """Whether ``user`` (a convert to an integer of at most 32 bits) keeps
    only the low bits of its operand: a convert to an integer of 2 to 32
    bits truncates, but one to ``i1`` tests the whole operand against zero."""
    return ir.IntegerType(ir.ShapedType(user.results[0].type).element_type).width > 1


def _signed_i64(v: ir.Value) -> bool:
    e = ir.ShapedType(v.type).element_type
    return isinstance(e, ir.IntegerType) and e.width == 64 and not e.is_unsigned


def high_word_of_sign_extended(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >> k`` (k >= 32) of a signed 64-bit ``x`` that holds a 32-bit value.

    An ``i64`` that holds a value of the 32-bit range (proven so, given that
    the program's 64-bit inputs are 32-bit values checked by the host) is
    the sign extension of its low word, so its high bits are copies of the
    sign:
    ``x >>arith k`` is ``x < 0 ? -1 : 0``, and ``x >>logical k`` is
    ``x < 0 ? 2**(64-k) - 1 : 0``.  The logical form does not fit in 32 bits,
    so it is rewritten only where every user keeps just its low 32 bits (a
    convert to a 32-bit integer), as JAX does when it splits an int64 seed
    into two uint32 words.
    """
    x = op.operands[0]
    ranges = ctx.ranges()
    amounts = ranges.constant(op.operands[1])
    if amounts is None or not _signed_i64(x):
        return False
    r = ctx.input_ranges_32().range(x)
    if r is None or r.sentinels or r.lo < -(2**31) or r.hi > 2**31 - 1:
        # x may hold more than 32 bits even with 32-bit inputs: the shift
        # is emulated instead
        return False
    k = min(amounts)
    if k != max(amounts) or not 32 <= k < 64:
        return False
    t = ir.RankedTensorType(op.results[0].type)
    if not t.has_static_shape:
        return False
    arithmetic = spec_of(op.name).computes is Computes.SHIFT_RIGHT_ARITHMETIC
    users = [] if arithmetic else _int_convert_users(op.results[0])
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
                high = (1 << (64 - k)) - 1  # the shifted value of a negative x
                # what the user makes of it: its low bits, or (i1) whether it is not zero
                ones = high % (1 << ir.IntegerType(ut.element_type).width) if _truncates(user) else int(high != 0)
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


def unsigned_arithmetic_shift(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x >>arith k`` of a ``ui64`` ``x`` below ``2**63`` is ``x >>logical k``.

    An arithmetic shift fills with bit 63, which is clear there; a 32-bit
    arithmetic shift would fill with bit 31 instead, which is set for the
    values in ``[2**31, 2**32)`` that ``ui32`` holds.  (Given that the
    program's 64-bit inputs are 32-bit values, checked by the host.)"""
    x = op.operands[0]
    e = ir.ShapedType(x.type).element_type
    if not (isinstance(e, ir.IntegerType) and e.width == 64 and e.is_unsigned):
        return False
    r = ctx.input_ranges_32().range(x)
    if r is None or r.hi >= 2**63:
        return False
    with ir.InsertionPoint(op), op.location:
        out = stablehlo.ShiftRightLogicalOp(x, op.operands[1]).result
    op.results[0].replace_all_uses_with(out)
    ctx.report.add(
        EventKind.REWRITE, op.name, op.location,
        "arithmetic shift of an unsigned 64-bit value below 2**63 is a logical shift",
    )
    op.erase()
    return True


def low_word_mask(op: ir.Operation, ctx: RuleContext) -> bool:
    """``x & 0xFFFFFFFF`` read by a convert to an integer of 2 to 32 bits is
    ``x`` for that convert (it keeps only the low bits).  Each user is judged
    apart: a convert to ``i1`` tests the masked value against zero, and a
    convert to 16 bits or another op needs the mask; those keep it."""
    ranges = ctx.ranges()
    x, mask = op.operands[0], op.operands[1]
    c = ranges.constant(mask)
    if c is None or any(v % 2**64 != 0xFFFFFFFF for v in c):
        x, mask = mask, x
        c = ranges.constant(mask)
        if c is None or any(v % 2**64 != 0xFFFFFFFF for v in c):
            return False
    users = {use.owner.operation for use in op.results[0].uses}
    truncating = [u for u in users if spec_of(u.name).convert and _truncating_int(u)]
    if not truncating:
        return False
    for user in truncating:
        user.operands[0] = x
    ctx.report.add(
        EventKind.REWRITE, op.name, op.location, "mask of the low 32 bits before a 32-bit convert is a no-op"
    )
    if len(truncating) == len(users):
        mask_op = defining_op(mask)
        op.erase()
        erase_dead(mask_op)
    return True


def _truncating_int(user: ir.Operation) -> bool:
    e = ir.ShapedType(user.results[0].type).element_type
    return isinstance(e, ir.IntegerType) and e.width <= 32 and _truncates(user)


# ----------------------------------------------------------------- refusals


def shift_amount_below_32(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    """A 64-bit shift narrows to a 32-bit one only when its amount is proven
    to lie in [0, 31]: a shift by 32 or more moves bits across the 32-bit
    boundary (and means something else on 32-bit integers)."""
    amount = ctx.ranges().range(op.operands[1])
    if amount is None:
        return None
    p = amount.plain()
    if p.lo > p.hi or (0 <= p.lo and p.hi < 32):
        return None
    if p.lo == p.hi:
        return Refusal(
            f"a 64-bit shift by {p.lo} bits moves bits across the 32-bit boundary; "
            "it has no 32-bit equivalent",
        )
    return Refusal(
        f"the shift amount of a 64-bit shift lies in [{p.lo}, {p.hi}], so it cannot be "
        "shown to stay below 32 (a shift by 32 or more means something else on 32-bit "
        "integers)",
    )


def unsigned_not(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    t = ir.ShapedType(op.results[0].type).element_type
    if isinstance(t, ir.IntegerType) and t.is_unsigned and t.width == 64:
        return Refusal(
            "bitwise not of an unsigned 64-bit value sets the upper 32 bits; "
            "it has no 32-bit equivalent",
        )
    return None


def static_bit_count(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    if not ir.ShapedType(op.results[0].type).has_static_shape:
        return Refusal("64-bit bit counting on a dynamically shaped tensor is not supported")
    return None


def bit_count_fixup(op: ir.Operation, ctx: RuleContext) -> bool:
    """After retyping, correct a narrowed clz/popcnt by the 32 bits that sign
    or zero extension to 64 bits would have contributed."""
    res = op.results[0]
    t = res.type
    elem = ir.ShapedType(t).element_type
    x = op.operands[0]
    loc = op.location
    signed = not ir.IntegerType(elem).is_unsigned
    clz = op.name == "stablehlo.count_leading_zeros"
    with after(op), loc:
        c32 = splat(ir.RankedTensorType(t), 32)
        plus = stablehlo.AddOp(res, c32).result
        if clz:
            # clz64(x) = clz32(x) + 32 for x >= 0 (or any unsigned x);
            # a negative x has no leading zeros in either width.
            fixed = stablehlo.SelectOp(_is_negative(x), res, plus).result if signed else plus
            detail = "count_leading_zeros on 64-bit integers: 32-bit count + 32 for non-negative values"
        else:
            # popcnt64(x) = popcnt32(x) + 32 for negative x (sign extension
            # adds 32 ones); equal otherwise.
            fixed = stablehlo.SelectOp(_is_negative(x), plus, res).result if signed else res
            detail = "popcnt on 64-bit integers: 32-bit count + 32 for negative values"
    if fixed != res:
        keep = [defining_op(plus), defining_op(fixed)]
        res.replace_all_uses_except(fixed, [o for o in keep if o is not None])
    ctx.report.add("rewrite", op.name, loc, detail)
    return True
