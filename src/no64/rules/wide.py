"""Emulation rules: each op's exact 64-bit meaning in 32-bit words.

A rule is ``rule(op, em) -> list`` with one entry per result of ``op``: a
:class:`~no64.ir.words.Words` for a 64-bit integer result, a value of
the result's own type for any other result (an ``i1`` compare, a 32-bit
convert, a float), built at the current insertion point (right before
``op``).  ``em`` (:class:`no64.transforms.emulate.Emulation`) gives the words of
an operand (``em.words``: emulated, a constant's exact elements, or a
narrowed value sign- or zero-extended), says whether an operand is
emulated (``em.is_wide``) and refuses (``em.refuse``).  The step that runs
the rules (:mod:`no64.transforms.emulate`) decides which ops are emulated; the op
table (:mod:`no64.rules.ops`) names each op's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..ir import words as W
from ..ir._compat import attribute_dict
from ..ir._mlir import as_operation as _as_op, enum_word, ir
from ..ir.types import is_int64_tensor as _is64
from ..kinds import OpForm
from ..spec.protocols import (
    EmulateRule,
    Out,
    WordContext as Emulation,  # what a rule's ``em`` offers
)
from ..spec.registry import Computes, spec_of
from ..spec.util import cumulative_window, doubling_windows, int_array, padding
from ..spec.walk import combiner

__all__ = ["EmulateRule"]


def _unsigned_result(op: ir.Operation, i: int = 0) -> bool:
    return ir.IntegerType(ir.RankedTensorType(op.results[i].type).element_type).is_unsigned


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _broadcast_to(w: W.Words, shape: Sequence[int]) -> W.Words:
    if w.shape == list(shape):
        return w
    t = ir.RankedTensorType.get(list(shape), W.u32())
    dims = ir.DenseI64ArrayAttr.get([])
    return W.Words(
        W.make("broadcast_in_dim", [w.lo], t, broadcast_dimensions=dims),
        W.make("broadcast_in_dim", [w.hi], t, broadcast_dimensions=dims),
        w.unsigned,
    )


# ------------------------------------------------------------- elementwise
def binary(fn: Callable[[W.Words, W.Words], W.Words]) -> EmulateRule:
    def rule(op: ir.Operation, em: "Emulation") -> list[Out]:
        u = _unsigned_result(op)
        a, b = (em.words(x, u) for x in op.operands)
        return [fn(a, b)]

    return rule


def unary(fn: Callable[[W.Words], W.Words]) -> EmulateRule:
    def rule(op: ir.Operation, em: "Emulation") -> list[Out]:
        return [fn(em.words(op.operands[0], _unsigned_result(op)))]

    return rule


add = binary(W.add)
subtract = binary(W.subtract)
multiply = binary(W.multiply)
maximum = binary(lambda a, b: W.minmax("max", a, b))
minimum = binary(lambda a, b: W.minmax("min", a, b))
bit_and = binary(lambda a, b: W.bitwise("and", a, b))
bit_or = binary(lambda a, b: W.bitwise("or", a, b))
bit_xor = binary(lambda a, b: W.bitwise("xor", a, b))
negate = unary(W.negate)
square = unary(lambda w: W.multiply(w, w))
bit_not = unary(W.bit_not)
absolute = unary(W.absolute)
sign = unary(W.sign)


def _small_divisor(em: "Emulation", x: ir.Value) -> bool:
    """Whether every element of divisor ``x`` has ``|x| < 2**32``: its range
    says so, or its words are a narrowed 32-bit value extended (neither
    emulated nor a constant entering with its 64-bit elements)."""
    r = em.analysis.range(x)
    if r is not None:
        p = r.plain()
        if p.lo > p.hi or (-(2**32) < p.lo and p.hi < 2**32):
            return True
    return not em.is_wide(x) and em.analysis.fold(x, sentinels=True) is None


def _constant_divisor(em: "Emulation", x: ir.Value) -> int | None:
    """The value of every element of divisor ``x`` where its range is one
    point or it folds to one value (a constant, broadcast or computed from
    constants: ``jnp``'s ``where(d == 0, 1, d)`` guard), else ``None``."""
    r = em.analysis.range(x)
    if r is None:
        return None
    p = r.plain()
    if p.lo == p.hi:
        return p.lo
    folded = em.analysis.fold(x, sentinels=True)
    if folded is not None and folded.size and (folded == folded.flat[0]).all():
        return int(folded.flat[0])
    return None


def _divmod(op: ir.Operation, em: "Emulation") -> tuple[W.Words, W.Words]:
    """Quotient and remainder, computed once for a ``divide`` and a
    ``remainder`` of one dividend by one divisor (the same value, or the
    same constant) in one block: ``jnp.floor_divide`` asks for both."""
    u = _unsigned_result(op)
    c = _constant_divisor(em, op.operands[1])
    n = op.operands[0]
    if c is not None:
        return em.once(("divmod", n, c, u), lambda: _by_constant(em.words(n, u), c, u))
    return em.once(("divmod", n, op.operands[1], u), lambda: _divmod_of(op, em, u))


def _by_constant(n: W.Words, c: int, u: bool) -> tuple[W.Words, W.Words]:
    return W.divmod_unsigned_by(n, c) if u else W.divmod_signed_by(n, c)


def _divmod_of(op: ir.Operation, em: "Emulation", u: bool) -> tuple[W.Words, W.Words]:
    n, d = (em.words(x, u) for x in op.operands)
    small = _small_divisor(em, op.operands[1])
    return W.divmod_unsigned(n, d, small) if u else W.divmod_signed(n, d, small)


def divide(op: ir.Operation, em: "Emulation") -> list[Out]:
    """Truncating division, with XLA's results for a zero divisor (all ones)
    and for ``INT64_MIN / -1`` (``INT64_MIN``)."""
    return [_divmod(op, em)[0]]


def remainder(op: ir.Operation, em: "Emulation") -> list[Out]:
    """The remainder with the dividend's sign (``x % 0`` is ``x``)."""
    return [_divmod(op, em)[1]]


def _bit_count(fn: Callable[[W.Words], ir.Value]) -> EmulateRule:
    def rule(op: ir.Operation, em: "Emulation") -> list[Out]:
        count = fn(em.words(op.operands[0]))
        return [W.Words(count, W.splat(count, 0), _unsigned_result(op))]

    return rule


def static_shape(op: ir.Operation) -> bool:
    """Whether ``op``'s result has a static shape (where the bit counts apply)."""
    return ir.RankedTensorType(op.results[0].type).has_static_shape


count_leading_zeros = _bit_count(W.count_leading_zeros)
popcnt = _bit_count(W.popcount)


def _shift(kind: str) -> EmulateRule:
    def rule(op: ir.Operation, em: "Emulation") -> list[Out]:
        u = _unsigned_result(op)
        a, n = (em.words(x, u) for x in op.operands)
        return [W.shift(kind, a, n)]

    return rule


shift_left = _shift("shift_left")
shift_right_logical = _shift("shift_right_logical")
shift_right_arithmetic = _shift("shift_right_arithmetic")


def compare(op: ir.Operation, em: "Emulation") -> list[Out]:
    direction = enum_word(op.attributes["comparison_direction"])
    kind = enum_word(op.attributes["compare_type"]) if "compare_type" in op.attributes else None
    x, y = op.operands
    unsigned = ir.IntegerType(ir.RankedTensorType(em.type(x)).element_type).is_unsigned
    if kind is not None:
        unsigned = kind == "UNSIGNED"
    a, b = em.words(x), em.words(y)
    return [W.compare(direction, a, b, unsigned)]


def select(op: ir.Operation, em: "Emulation") -> list[Out]:
    p, x, y = op.operands
    p = em.value(p)
    u = _unsigned_result(op)
    a, b = em.words(x, u), em.words(y, u)
    shape = _shape(op.results[0])
    if _shape(p) != shape:  # a scalar predicate
        p = W.make(
            "broadcast_in_dim", [p], ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)),
            broadcast_dimensions=ir.DenseI64ArrayAttr.get([]),
        )
    return [W.select(p, a, b)]


def clamp(op: ir.Operation, em: "Emulation") -> list[Out]:
    u = _unsigned_result(op)
    shape = _shape(op.results[0])
    lo, x, hi = (_broadcast_to(em.words(v, u), shape) for v in op.operands)
    return [W.minmax("min", W.minmax("max", x, lo), hi)]


def convert(op: ir.Operation, em: "Emulation") -> list[Out]:
    x = op.operands[0]
    rt = ir.RankedTensorType(op.results[0].type)
    re = rt.element_type
    xe = ir.RankedTensorType(em.type(x)).element_type
    if _is64(em.type(x)):
        w = em.words(x)
        if _is64(rt):
            return [w.retag(ir.IntegerType(re).is_unsigned)]
        if isinstance(re, ir.IntegerType):
            return [W.low_single(w, re)]
        if isinstance(re, (ir.F32Type, ir.F16Type, ir.BF16Type)):
            return [W.to_float(w, re)]
        if isinstance(re, ir.F64Type):
            # f64 is narrowed to f32: the value rounded once to f32, then
            # typed f64 for the narrowing pass
            return [W.make("convert", [W.to_float(w, ir.F32Type.get())], rt)]
        em.refuse(op, f"no exact emulation of a 64-bit integer converted to {re}")
    unsigned = ir.IntegerType(re).is_unsigned
    x = em.value(x)
    if isinstance(xe, ir.IntegerType):
        return [W.from_single(x, unsigned)]
    if isinstance(xe, ir.F64Type):
        x = W.make("convert", [x], ir.RankedTensorType.get(_shape(x), ir.F32Type.get()))
    return [W.from_float(x, unsigned)]


def bitcast_applies(op: ir.Operation) -> bool:
    """64-bit integers to 64-bit integers or to/from 32-bit integer words."""
    elems = [ir.RankedTensorType(v.type).element_type for v in (op.operands[0], op.results[0])]
    return all(isinstance(e, ir.IntegerType) for e in elems)


def bitcast_convert(op: ir.Operation, em: "Emulation") -> list[Out]:
    """Between 64-bit integers and pairs of 32-bit words (``S x 2``)."""
    x = op.operands[0]
    xt, rt = ir.RankedTensorType(em.type(x)), ir.RankedTensorType(op.results[0].type)
    if _is64(xt) and _is64(rt):
        return [em.words(x).retag(ir.IntegerType(rt.element_type).is_unsigned)]
    if _is64(rt) and isinstance(xt.element_type, ir.IntegerType) and xt.element_type.width == 32 \
            and list(xt.shape)[-1:] == [2]:
        packed = W.bitcast(x, W.u32() if ir.IntegerType(rt.element_type).is_unsigned else W.i32())
        return [W.unpack(packed).retag(ir.IntegerType(rt.element_type).is_unsigned)]
    if _is64(xt) and isinstance(rt.element_type, ir.IntegerType) and rt.element_type.width == 32 \
            and list(rt.shape)[-1:] == [2]:
        w = em.words(x)
        return [W.bitcast(W.pack(w.retag(True)), rt.element_type)]
    em.refuse(op, f"no exact emulation of bitcast_convert from {xt} to {rt}")
    return [None]



# ------------------------------------------------------- moving elements
def _index(em: "Emulation", x: ir.Value) -> ir.Value:
    """An index operand: its narrowed value, or -- when it is emulated -- its
    value clipped to the 32-bit range.  Start indices are clamped into the
    operand (gather, dynamic slices) and scatter skips indices out of
    bounds, so a clipped index selects what the 64-bit one selects."""
    if not em.is_wide(x):
        return em.value(x)
    return W.make("convert", [W.saturated_single(em.words(x))], em.type(x))


def per_word(*data: int) -> EmulateRule:
    """An op that moves elements of its data operands (``data``: their
    indices; ``-1`` for every operand) without looking at them: built twice,
    once over the low and once over the high words.  Other operands
    (indices, sizes) keep their value (see :func:`_index`)."""

    def rule(op: ir.Operation, em: "Emulation") -> list[Out]:
        operands = list(op.operands)
        idx = set(range(len(operands))) if data == (-1,) else set(data)
        index_values = {i: _index(em, x) for i, x in enumerate(operands) if i not in idx}
        attrs = attribute_dict(op)
        if not _is64(op.results[0].type):
            # only an index is emulated: the op itself stays as it is
            ops_ = [index_values.get(i) or em.value(x) for i, x in enumerate(operands)]
            new = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=ops_, attributes=attrs)
            return list(new.results)
        u = _unsigned_result(op)
        ws = {i: em.words(operands[i], u) for i in idx}
        rtypes = [ir.RankedTensorType.get(_shape(r), W.u32()) for r in op.results]
        out = []
        for k in (0, 1):
            ops_ = [ws[i][k] if i in ws else index_values[i] for i, x in enumerate(operands)]
            new = ir.Operation.create(op.name, results=rtypes, operands=ops_, attributes=attrs)
            out.append(new.results[0])
        return [W.Words(out[0], out[1], u)]

    return rule


moved = per_word(0)
moved_all = per_word(-1)
dynamic_update_slice = per_word(0, 1)
pad = per_word(0, 1)


# ------------------------------------------------- ops with their own regions
def _is_wide_type(em: "Emulation", v: ir.Value) -> bool:
    return _is64(em.type(v))


def _unsigned_type(t: ir.Type) -> bool:
    """Whether ``t`` is a tensor of unsigned integers (``False`` for floats,
    which a sort, reduction or scatter may carry beside 64-bit integers)."""
    e = ir.RankedTensorType(t).element_type
    return isinstance(e, ir.IntegerType) and e.is_unsigned


def reduction(op: ir.Operation, em: "Emulation") -> list[Out]:
    """``reduce`` and ``reduce_window``: inputs and initial values per slot,
    the body applied to (accumulator, element) words."""
    n = len(op.results)
    inputs, inits = list(op.operands[:n]), list(op.operands[n:])
    wide = [_is_wide_type(em, x) or _is_wide_type(em, i) for x, i in zip(inputs, inits)]
    operands = em.split(inputs, wide) + em.split(inits, wide)
    result_types = [r.type for r in op.results]
    rtypes = em.split_types(result_types, wide)
    args = list(op.regions[0].blocks[0].arguments)
    args_wide = [wide[i % n] for i in range(len(args))]
    if n == 1 and wide[0] and spec_of(op.name).form in em.one_input:
        total = _limb_sum(op, em)
        if total is not None:
            return [total]
    # on a device that refuses a window of several inputs, every cumulative
    # one by doubling: its two-element windows then unfold elementwise
    limit = 1 if OpForm.REDUCE_WINDOW in em.one_input else _PREFIX_LIMIT
    prefix = _long_prefix(op, em, limit) if op.name == "stablehlo.reduce_window" else None
    if prefix is not None:
        new = _prefix_by_doubling(op, em, operands, rtypes, args_wide, *prefix)
    else:
        if op.name == "stablehlo.reduce_window" and _whole_axis_window(op, em):
            em.refuse(op, f"a window over a whole axis longer than {_PREFIX_LIMIT} elements, computed on "
                      "two words, which XLA's CPU compiler cannot compile; no64 computes it by doubling "
                      "only when the body is one add, multiply, min, max, and, or or xor with its "
                      "identity as the initial value")
        new = em.rebuild(op, operands, rtypes, args_wide)
    return em.joined(list(new.results), result_types, wide)


#: The most terms a sum of 16-bit limbs holds within 32 bits (``u32``).
_LIMB_TERMS = (2**32 - 1) // (2**16 - 1)


def _limb_sum(op: ir.Operation, em: "Emulation") -> W.Words | None:
    """A ``reduce`` or ``reduce_window`` that adds 64-bit words, as one such
    op of one ``i32`` input, for a device that refuses it with several
    (the word pair's carries need two): the low word's two 16-bit halves
    and the high word, stacked along a new leading axis, each summed on its
    own -- a sum of at most :data:`_LIMB_TERMS` halves stays below 2**32,
    the high words' sum is wanted modulo 2**32 -- and joined, the halves
    carried into the high word.  ``None`` (the op is left to the general
    rule) unless the body is one add and every output sums at most that
    many terms, with an initial value of 0 (a window's padding holds it)
    or, where nothing is padded, one added once at the end."""
    if combiner(op) is not Computes.ADD:
        return None
    x, init = op.operands
    # (as in the 64-bit program: an operand may be retyped already)
    shape, rshape = (list(ir.RankedTensorType(em.type(v)).shape) for v in (x, op.results[0]))
    rank = len(shape)
    window = op.name == "stablehlo.reduce_window"
    if window:
        terms = int(np.prod(int_array(op, "window_dimensions", rank, 1)))
        pads = padding(op, rank)
        padded = any(lo or hi for lo, hi in pads) or int_array(op, "base_dilations", rank, 1) != [1] * rank
    else:
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        terms, padded = int(np.prod([shape[d] for d in dims])), False
    if terms + 1 > _LIMB_TERMS:
        return None
    folded = em.analysis.fold(init, sentinels=True)
    zero = folded is not None and np.asarray(folded).size == 1 and int(np.asarray(folded).reshape(-1)[0]) == 0
    if padded and not zero:
        return None
    w = em.words(x)
    # summed as signless i32 (the same sums modulo 2**32): IREE's input
    # conversion fails on a reduce_window of unsigned elements
    u32, i32 = W.u32(), W.i32()
    # split and joined as vectors: IREE's Vulkan kernels over a 64 x 257
    # tensor ran several times as long as over its elements as a vector
    size = int(np.prod(shape, dtype=np.int64))
    lo, hi = (W.make("reshape", [W.bitcast(v, i32)], ir.RankedTensorType.get([size], i32)) for v in (w.lo, w.hi))
    # the three rows by one elementwise op over 3 x N (one kernel in IREE,
    # where a concatenate of rows is one per row): row k of the low words
    # shifted down by 16k and masked, the high words in row 2
    rows_t = ir.RankedTensorType.get([3, size], i32)
    along = ir.DenseI64ArrayAttr.get([1])
    lo3, hi3 = (W.make("broadcast_in_dim", [v], rows_t, broadcast_dimensions=along) for v in (lo, hi))
    by_row = ir.DenseI64ArrayAttr.get([0])
    shift, mask = (W.make("broadcast_in_dim", [W.const([3], np.asarray(v, dtype=np.int32), i32)], rows_t,
                          broadcast_dimensions=by_row) for v in ([0, 16, 0], [0xFFFF, 0xFFFF, -1]))
    halves = W.make("and", [W.make("shift_right_logical", [lo3, shift], rows_t), mask], rows_t)
    row = W.make("iota", [], rows_t, iota_dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0))
    flags_t = ir.RankedTensorType.get([3, size], ir.IntegerType.get_signless(1))
    is_hi = W.make("compare", [row, W.splat(row, 2)], flags_t,
                   comparison_direction=ir.Attribute.parse("#stablehlo<comparison_direction EQ>"))
    rows = W.make("select", [is_hi, hi3, halves], rows_t)
    scalar = ir.RankedTensorType.get([], i32)
    attrs = attribute_dict(op)
    if window:
        arrays = {name: int_array(op, name, rank, 1)
                  for name in ("window_dimensions", "window_strides", "base_dilations", "window_dilations")}
        # the rows along the first dimension where its windows are single
        # elements: IREE then scans one 2-d tensor (192 x 257 for 64 rows),
        # where over 3 x 64 x 257 it copied the words apart in two kernels more
        merged = rank > 1 and all(a[0] == 1 for a in arrays.values()) and pads[0] == [0, 0]
        if not merged:
            for name, values in arrays.items():
                attrs[name] = ir.DenseI64ArrayAttr.get([1] + values)
            i64 = ir.IntegerType.get_signless(64)
            attrs["padding"] = ir.DenseIntElementsAttr.get(
                np.asarray([[0, 0], *pads], dtype=np.int64),
                type=ir.RankedTensorType.get([rank + 1, 2], i64))
    else:
        merged = rank > 1 and 0 not in dims
        if not merged:
            attrs["dimensions"] = ir.DenseI64ArrayAttr.get([d + 1 for d in dims])
    ins, outs = ([3 * s[0]] + s[1:] if merged else [3] + s for s in (shape, rshape))
    stacked = W.make("reshape", [rows], ir.RankedTensorType.get(ins, i32))
    summed = W.build(op.name.rsplit(".", 1)[-1], [stacked, W.const([], 0, i32)],
                     [ir.RankedTensorType.get(outs, i32)], regions=1, **attrs)
    block = summed.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        a, b = block.arguments
        W.build("return", [W.make("add", [a, b], scalar)], [])

    n = int(np.prod(rshape, dtype=np.int64))
    rows = W.make("reshape", [summed.results[0]], ir.RankedTensorType.get([3, n], i32))

    def part(k: int) -> ir.Value:
        piece = W.make("slice", [rows], ir.RankedTensorType.get([1, n], i32),
                       start_indices=ir.DenseI64ArrayAttr.get([k, 0]),
                       limit_indices=ir.DenseI64ArrayAttr.get([k + 1, n]), strides=ir.DenseI64ArrayAttr.get([1, 1]))
        return W.bitcast(W.make("reshape", [piece], ir.RankedTensorType.get([n], i32)), u32)

    low, high, top = part(0), part(1), part(2)
    # low + high * 2**16 + top * 2**32, modulo 2**64
    up = W.make("shift_left", [high, W.splat(high, 16)], high.type)
    down = W.make("shift_right_logical", [high, W.splat(high, 16)], high.type)
    hi_elem = ir.RankedTensorType(w.hi.type).element_type
    total = W.add(W.Words(low, W.bitcast(top, hi_elem), w.unsigned), W.Words(up, W.bitcast(down, hi_elem), w.unsigned))

    def reshaped(v: ir.Value) -> ir.Value:
        return W.make("reshape", [v], ir.RankedTensorType.get(rshape, ir.RankedTensorType(v.type).element_type))

    total = W.Words(reshaped(total.lo), reshaped(total.hi), total.unsigned)
    if not zero:
        total = W.add(total, _broadcast_to(em.words(init), rshape))
    return total


#: Cumulative ``reduce_window``s longer than this are computed by doubling
#: (XLA's CPU compiler aborts on longer ones with several operands).
_PREFIX_LIMIT = 256

#: Body computations whose identity makes a padded window element a no-op.
_IDENTITIES = {
    Computes.ADD: lambda bits, signed: 0,
    Computes.OR: lambda bits, signed: 0,
    Computes.XOR: lambda bits, signed: 0,
    Computes.MULTIPLY: lambda bits, signed: 1,
    Computes.AND: lambda bits, signed: -1,
    Computes.MAXIMUM: lambda bits, signed: -(1 << (bits - 1)) if signed else 0,
    Computes.MINIMUM: lambda bits, signed: (1 << (bits - 1)) - 1 if signed else -1,
}



def _long_prefix(op: ir.Operation, em: "Emulation", limit: int = _PREFIX_LIMIT) -> tuple[int, int, bool] | None:
    """``(axis, length, reverse)`` when ``op`` is a cumulative reduction
    longer than ``limit`` (``jnp.cumsum``, ``lax.cummax``, ...:
    one window as long as its axis, padded by one less in front -- or behind,
    for a reverse one -- unit strides and dilations) whose body combines each
    slot with one op whose identity is the slot's initial value; else ``None``."""
    shape = list(ir.RankedTensorType(em.type(op.operands[0])).shape)  # as in the 64-bit program
    found = cumulative_window(op, shape)
    if found is None or found[1] <= limit:
        return None
    n = len(op.results)
    block = op.regions[0].blocks[0]
    ret = _as_op(list(block.operations)[-1])
    for i in range(n):
        combine = ret.operands[i].owner
        combine = _as_op(combine) if not isinstance(combine, ir.Block) else None
        computes = spec_of(combine.name).computes if combine is not None else None
        identity = _IDENTITIES.get(computes) if computes is not None else None
        if identity is None or combine is None or set(combine.operands) != {block.arguments[i], block.arguments[i + n]}:
            return None
        elem = ir.RankedTensorType(op.results[i].type).element_type
        if not isinstance(elem, ir.IntegerType):
            return None
        init = em.analysis.fold(op.operands[n + i], sentinels=True)
        if init is None or np.asarray(init).size != 1:
            return None
        mask = (1 << elem.width) - 1
        signed = not elem.is_unsigned and elem.width > 1
        if int(np.asarray(init).reshape(-1)[0]) & mask != identity(elem.width, signed) & mask:
            return None
    return found


def _whole_axis_window(op: ir.Operation, em: "Emulation") -> bool:
    shape = list(ir.RankedTensorType(em.type(op.operands[0])).shape)
    window = int_array(op, "window_dimensions", len(shape), 1)
    return any(w == n > _PREFIX_LIMIT for w, n in zip(window, shape))



def _prefix_by_doubling(op: ir.Operation, em: "Emulation", operands: list[ir.Value], rtypes: list[ir.Type],
                        args_wide: list[bool], axis: int, length: int,
                        reverse: bool) -> ir.Operation:
    """A cumulative reduction as ``ceil(log2(length))`` reduce_windows of two
    elements each, the second ``d = 1, 2, 4, ...`` elements away (padded by
    ``d`` with the initial value, the body's identity): after the step with
    distance ``d`` each element combines the ``2d`` elements up to it."""
    k = len(rtypes)
    values, inits = operands[:k], operands[k:]
    new = None
    for attrs in doubling_windows(len(_shape(op.results[0])), axis, length, reverse):
        new = em.rebuild(op, values + inits, rtypes, args_wide, attributes=attrs)
        values = list(new.results)
    assert new is not None
    return new


def sort(op: ir.Operation, em: "Emulation") -> list[Out]:
    """``sort``: each 64-bit operand as two (low, high) operands; the
    comparator sees both words of each side.  The words are sorted
    complemented (``not``, undone in the comparator and on the results):
    IREE fuses a sorted operand that is a slice of its input (an unpacked
    argument) into the sort's kernel, which its SPIR-V code generation then
    refuses (shared memory exceeded) or crashes on."""
    return em.rebuild_sort(op, [_is_wide_type(em, x) for x in op.operands], through=_complement)


def _complement(v: ir.Value) -> ir.Value:
    return W.make("not", [v], v.type)


#: XORed into the high words of a rebuilt scatter (see :func:`scatter`).
_SCATTER_KEY = 0x9E3779B9


def scatter(op: ir.Operation, em: "Emulation") -> list[Out]:
    """``scatter``: inputs and updates per slot (the indices stay as they
    are); the body combines (current, update) words.

    XLA's CPU backend updates a variadic scatter's inputs in place and gets
    it wrong when two inputs share one buffer -- which its common
    subexpression elimination makes of equal words (a zero-initialised
    accumulator has equal low and high words).  So the high words are
    scattered XORed with a key, which the body takes off and puts back."""
    n = len(op.results)
    inputs, indices, updates = list(op.operands[:n]), op.operands[n], list(op.operands[n + 1:])
    wide = [_is_wide_type(em, x) or _is_wide_type(em, u) for x, u in zip(inputs, updates)]

    def keyed(values: list[ir.Value]) -> list[ir.Value]:
        out: list[ir.Value] = []
        for v, w in zip(values, wide):
            if w:
                words = em.words(v)
                hi = W.make("xor", [words.hi, W.splat(words.hi, _SCATTER_KEY)], words.hi.type)
                out += [words.lo, hi]
            else:
                out.append(em.value(v))
        return out

    def unkey(w: W.Words) -> W.Words:
        return W.Words(w.lo, W.make("xor", [w.hi, W.splat(w.hi, _SCATTER_KEY)], w.hi.type), w.unsigned)

    operands = keyed(inputs) + [_index(em, indices)] + keyed(updates)
    result_types = [r.type for r in op.results]
    args = list(op.regions[0].blocks[0].arguments)
    new = em.rebuild(op, operands, em.split_types(result_types, wide), [wide[i % n] for i in range(len(args))],
                     enter=unkey, returned=unkey)
    return [unkey(o) if isinstance(o, W.Words) else o for o in em.joined(list(new.results), result_types, wide)]


# ------------------------------------------------------------ dot_general
#: Largest contraction whose 8-bit limb products sum below 2**32 (255 * 255 * K).
_DOT_MAX_CONTRACTION = (2**32 - 1) // (255 * 255)


def dot_applies(op: ir.Operation) -> bool:
    """A statically shaped integer dot_general whose contraction the limbs' sums hold."""
    t = ir.RankedTensorType(op.operands[0].type)
    if not (t.has_static_shape and isinstance(ir.RankedTensorType(op.results[0].type).element_type,
                                              ir.IntegerType)):
        return False
    return _contraction(op) <= _DOT_MAX_CONTRACTION


def _contraction(op: ir.Operation) -> int:
    from ..ir._mlir import stablehlo

    t = ir.RankedTensorType(op.operands[0].type)
    dims = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    n = 1
    for i in dims.lhs_contracting_dimensions:
        n *= t.shape[i]
    return n


def dot_general(op: ir.Operation, em: "Emulation") -> list[Out]:
    """An integer ``dot_general`` with a 64-bit result: each operand split
    into eight 8-bit limbs, the limb pairs that reach the low 64 bits (36 of
    them) contracted by 32-bit ``dot_general`` ops with the same dimension
    numbers (each sum stays below 2**32 for contractions of up to 66051
    elements), and the partial sums added at their bit offsets in words --
    the low 64 bits of the sum of products, which is the same for signed and
    unsigned operands."""
    u = _unsigned_result(op)
    a, b = (em.words(x, True) for x in op.operands)
    rshape = _shape(op.results[0])
    rtype = ir.RankedTensorType.get(rshape, W.u32())
    attrs = attribute_dict(op)

    def limbs(w: W.Words) -> list[ir.Value]:
        out = []
        for word in (w.lo, w.hi):
            for k in range(4):
                shifted = W.make("shift_right_logical", [word, W.splat(word, 8 * k)], word.type) if k else word
                out.append(W.make("and", [shifted, W.splat(word, 0xFF)], word.type))
        return out

    la, lb = limbs(a), limbs(b)
    zero = W.const(rshape, 0)
    total = W.Words(zero, zero, True)
    for s in range(8):
        for i in range(s + 1):
            d = ir.Operation.create(op.name, results=[rtype], operands=[la[i], lb[s - i]],
                                    attributes=attrs).results[0]
            total = W.add(total, _shifted_u32(d, 8 * s, zero))
    return [total.retag(u)]


def _shifted_u32(d: ir.Value, n: int, zero: ir.Value) -> W.Words:
    """The words of ``ui32`` ``d`` shifted left by the constant ``n`` (0 <= n < 64)."""
    if n == 0:
        return W.Words(d, zero, True)
    if n < 32:
        lo = W.make("shift_left", [d, W.splat(d, n)], d.type)
        return W.Words(lo, W.make("shift_right_logical", [d, W.splat(d, 32 - n)], d.type), True)
    hi = W.make("shift_left", [d, W.splat(d, n - 32)], d.type) if n > 32 else d
    return W.Words(zero, hi, True)


def dot_why_not(op: ir.Operation) -> str:
    if not ir.RankedTensorType(op.operands[0].type).has_static_shape:
        return "a dot_general of dynamic shape"
    return (f"a contraction over {_contraction(op)} elements; the word rule covers up to "
            f"{_DOT_MAX_CONTRACTION}")



# ------------------------------------------------- element-for-element ops
def per_operand(op: ir.Operation, em: "Emulation") -> list[Out]:
    """An op whose result *i* is operand *i* (``optimization_barrier``, ``copy``
    with several values): rebuilt with each 64-bit operand as its two words."""
    values = list(op.operands)
    wide = [_is_wide_type(em, v) for v in values]
    types = [em.type(v) for v in values]
    new = ir.Operation.create(op.name, results=em.split_types(types, wide), operands=em.split(values, wide),
                              attributes=attribute_dict(op))
    return em.joined(list(new.results), types, wide)


# ------------------------------------------------------------------ power
#: The exponent bits XLA's CPU emitter reads of an integer ``power``: it
#: squares the base six times (a larger exponent overflows 64 bits for any
#: base but 0, 1 and -1), so ``x ** 64`` is 1 and ``x ** 65`` is ``x``.
_POWER_BITS = 6
#: From an exponent of 64 on, an even base gives 0 (XLA from jaxlib 0.12 on
#: checks this; before, its emitter's six bits gave ``2 ** 64 == 1``).
_POWER_BITS_MAX = 1 << _POWER_BITS
_M64 = 1 << 64


def _xla_folded_power(b: int, e: int, unsigned: bool) -> int:
    """XLA's constant folding of an integer ``power`` (its evaluator): the
    whole exponent; a negative one gives 1 for base 1 and 0 for any other."""
    if not unsigned and e < 0:
        return 1 if b == 1 else 0
    return pow(b % _M64, e % _M64, _M64)


def _power_bits(base: W.Words, bits: int, shape: Sequence[int], exponent: W.Words | None) -> W.Words:
    """``base`` to the power of the exponent's low six bits, by squaring:
    the constant ``bits`` (``exponent`` None) or ``exponent``'s words."""
    acc = W.from_ints(shape, 1, base.unsigned)
    for i in range(_POWER_BITS):
        if exponent is None:
            if (bits >> i) & 1:
                acc = W.multiply(acc, base)
            if not bits >> (i + 1):
                break
        else:
            lo = exponent.lo
            bit = W.make("and", [lo, W.splat(lo, 1 << i)], lo.type)
            zero = W.splat(lo, 0)
            is_set = W.compare("NE", W.Words(bit, zero, True), W.Words(zero, zero, True), True)
            acc = W.select(is_set, W.multiply(acc, base), acc)
        if i + 1 < _POWER_BITS:
            base = W.multiply(base, base)
    return acc


def power(op: ir.Operation, em: "Emulation") -> list[Out]:
    """An integer ``power``, bit for bit as XLA's CPU backend computes it:

    * at run time (its emitter), by squaring over the exponent's low six
      bits, except that an even base to an exponent of 64 or more gives 0
      (its true value; XLA before jaxlib 0.12 gives the six bits' power);
      a negative exponent (of a signed type) gives that for bases 1 and -1,
      0 for any other (XLA in jaxlib 0.7 gives 0 for -1 too; XLA before
      jaxlib 0.12 reads an unsigned exponent with its top bit set as a
      negative one);
    * an exponent that is -1 everywhere (a signed type) is rewritten by
      XLA's simplifier into ``1 / base``: 1 for 1, -1 for -1 and for 0
      (XLA's integer division by zero), 0 for any other base;
    * with both operands constant, folded with the whole exponent (see
      :func:`_xla_folded_power`).
    """
    u = _unsigned_result(op)
    x, y = op.operands
    shape = _shape(op.results[0])
    b = em.words(x, u)
    fb, fe = em.analysis.fold(x, sentinels=True), em.analysis.fold(y, sentinels=True)
    splat = int(np.asarray(fe).flat[0]) if fe is not None and np.asarray(fe).size else None
    if splat is not None and any(int(v) != splat for v in np.asarray(fe).flat):
        splat = None
    if not u and splat == -1:
        one, minus_one = W.from_ints(shape, 1, u), W.from_ints(shape, -1, u)
        zero = W.from_ints(shape, 0, u)
        out = W.select(W.compare("EQ", b, one, u), one, zero)
        is_minus_one_or_zero = W.make("or", [W.compare("EQ", b, minus_one, u), W.compare("EQ", b, zero, u)],
                                      ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)))
        return [W.select(is_minus_one_or_zero, minus_one, out)]
    if fb is not None and fe is not None:
        bs = np.broadcast_to(np.asarray(fb, dtype=object), shape).reshape(-1)
        es = np.broadcast_to(np.asarray(fe, dtype=object), shape).reshape(-1)
        values = np.array([_xla_folded_power(int(p), int(q), u) % _M64 for p, q in zip(bs, es)], dtype=np.uint64)
        return [W.from_ints(shape, values, u)]
    zero = W.from_ints(shape, 0, u)
    lo = b.lo
    low_bit = W.make("and", [lo, W.splat(lo, 1)], lo.type)
    even = W.compare("EQ", W.Words(low_bit, W.splat(lo, 0), True), W.from_ints(shape, 0, True), True)
    if splat is not None:
        acc = _power_bits(b, splat % _M64 & ((1 << _POWER_BITS) - 1), shape, None)
        if splat % _M64 >= _POWER_BITS_MAX:
            acc = W.select(even, zero, acc)
        if u or not (splat % _M64) >> 63:
            return [acc]
        negative = None
    else:
        e = em.words(y, u)
        acc = _power_bits(b, 0, shape, e)
        large = W.compare("GE", e.retag(True), W.from_ints(shape, _POWER_BITS_MAX, True), True)
        both = W.make("and", [even, large], ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)))
        acc = W.select(both, zero, acc)
        if u:
            return [acc]
        negative = W.compare("LT", e, W.from_ints(shape, 0, False), False)
    unit = W.make("or", [W.compare("EQ", b, W.from_ints(shape, 1, u), u),
                         W.compare("EQ", b, W.from_ints(shape, -1, u), u)],
                  ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)))
    on_negative = W.select(unit, acc, W.from_ints(shape, 0, u))
    return [on_negative if negative is None else W.select(negative, on_negative, acc)]


# ------------------------------------------------------------------ top_k
def top_k(op: ir.Operation, em: "Emulation") -> list[Out]:
    """``chlo.top_k`` of 64-bit integers: a stable sort of (high word, low
    word, index) along the last dimension, greatest first -- ties in index
    order, as XLA's -- and its first ``k``: the values as words, the
    indices as they are."""
    if "largest" in op.attributes and not ir.BoolAttr(op.attributes["largest"]).value:
        em.refuse(op, "no64 computes top_k on 64-bit words only for the largest elements")
    x = op.operands[0]
    u = _unsigned_type(em.type(x))
    w = em.words(x, u)
    shape = w.shape
    rank = len(shape)
    k = ir.IntegerAttr(op.attributes["k"]).value
    itype = ir.RankedTensorType(op.results[1].type).element_type
    i64 = ir.IntegerType.get_signless(64)
    index = W.make("iota", [], ir.RankedTensorType.get(shape, itype), iota_dimension=ir.IntegerAttr.get(i64, rank - 1))
    sort = W.build("sort", [w.hi, w.lo, index], [w.hi.type, w.lo.type, index.type], regions=1,
                   dimension=ir.IntegerAttr.get(i64, rank - 1), is_stable=ir.BoolAttr.get(True))
    scalar = ir.RankedTensorType.get([], W.u32())
    block = sort.regions[0].blocks.append(scalar, scalar, scalar, scalar, ir.RankedTensorType.get([], itype),
                                          ir.RankedTensorType.get([], itype))
    with ir.InsertionPoint(block):
        a = block.arguments
        W.build("return", [W.compare("GT", W.Words(a[2], a[0], u), W.Words(a[3], a[1], u), u)], [])
    limits = ir.DenseI64ArrayAttr.get(shape[:-1] + [k])
    attrs = dict(start_indices=ir.DenseI64ArrayAttr.get([0] * rank), limit_indices=limits,
                 strides=ir.DenseI64ArrayAttr.get([1] * rank))

    def first(v: ir.Value) -> ir.Value:
        t = ir.RankedTensorType(v.type)
        return W.make("slice", [v], ir.RankedTensorType.get(shape[:-1] + [k], t.element_type), **attrs)

    hi, lo, idx = (first(r) for r in sort.results)
    return [W.Words(lo, hi, u), idx]
