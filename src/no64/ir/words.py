"""Exact 64-bit integer arithmetic on pairs of 32-bit words.

A 64-bit integer tensor of shape ``S`` is carried as a :class:`Words`: two
``ui32`` tensors of shape ``S``, the low and the high 32 bits, and whether
the 64-bit type was unsigned.  Every function here builds StableHLO ops at
the current insertion point and computes exactly what the 64-bit op
computes (two's-complement wrap-around, StableHLO's rules for shifts of 64
or more).  Only 32-bit (and ``i1``) types are used.

Between regions and at a function's boundary the pair is *packed* into one
tensor of shape ``S x 2`` (:func:`pack`): ``[..., 0]`` the low and
``[..., 1]`` the high word, ``ui32`` for unsigned and ``i32`` bit patterns
for signed values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._mlir import int_attr, ir
from .fold import fold, splat_attr, splat_int

__all__ = [
    "Words",
    "u32",
    "i32",
    "i1",
    "tensor_type",
    "shape_of",
    "packed_type",
    "make",
    "const",
    "splat",
    "from_ints",
    "pack",
    "interleave",
    "unpack",
    "from_single",
    "low_single",
    "saturated_single",
    "all_fit",
    "all_true",
    "add",
    "subtract",
    "negate",
    "multiply",
    "bitwise",
    "bit_not",
    "shift",
    "compare",
    "select",
    "minmax",
    "absolute",
    "sign",
    "to_float",
    "from_float",
    "mul_wide32",
    "divmod_unsigned",
    "divmod_signed",
    "count_leading_zeros",
    "popcount",
]

_MASK = 0xFFFFFFFF


class Words(NamedTuple):
    """A 64-bit integer tensor as its low and high ``ui32`` words."""

    lo: ir.Value
    hi: ir.Value
    unsigned: bool

    @property
    def shape(self) -> list[int]:
        return list(ir.RankedTensorType(self.lo.type).shape)

    def retag(self, unsigned: bool) -> "Words":
        """The same bits read as another signedness."""
        return Words(self.lo, self.hi, unsigned)


# ------------------------------------------------------------------ basics
def u32() -> ir.Type:
    return ir.IntegerType.get_unsigned(32)


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def tensor_type(shape: Sequence[int], elem: ir.Type) -> ir.RankedTensorType:
    """The ranked tensor type of ``shape`` and element type ``elem``."""
    return ir.RankedTensorType.get(list(shape), elem)


def shape_of(v: ir.Value) -> list[int]:
    """The shape of ranked tensor ``v``."""
    return list(ir.RankedTensorType(v.type).shape)


def _elem(v: ir.Value) -> ir.Type:
    return ir.RankedTensorType(v.type).element_type


def packed_type(shape: Sequence[int], unsigned: bool) -> ir.RankedTensorType:
    """The type of a packed pair of shape ``shape``: ``shape x 2``."""
    return tensor_type(list(shape) + [2], u32() if unsigned else i32())


def build(
    name: str, operands: Sequence[ir.Value], results: Sequence[ir.Type], regions: int = 0, **attrs: ir.Attribute
) -> ir.Operation:
    """Build ``stablehlo.<name>`` (the one place the rules spell the dialect
    of what they build; what an op *is* comes from the op table)."""
    return ir.Operation.create(
        "stablehlo." + name, results=list(results), operands=list(operands), attributes=attrs, regions=regions
    )


def make(name: str, operands: Sequence[ir.Value], result: ir.Type, **attrs: ir.Attribute) -> ir.Value:
    """Build ``stablehlo.<name>`` with one result, or the value it folds to
    (:func:`no64.ir.fold.fold`: constants computed, identities taken)."""
    folded = fold(name, operands, result, attrs)
    if isinstance(folded, int):
        t = ir.RankedTensorType(result)
        return build("constant", [], [t], value=splat_attr(t, folded)).results[0]
    if folded is not None:
        return folded
    return build(name, operands, [result], **attrs).results[0]


def _same(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return make(name, [a, b], a.type)


def const(shape: Sequence[int], values: np.ndarray | int, elem: ir.Type | None = None) -> ir.Value:
    """A constant tensor (``ui32`` unless ``elem`` says otherwise)."""
    elem = elem or u32()
    t = tensor_type(shape, elem)
    if isinstance(values, (int, np.integer)):
        return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, int_attr(elem, int(values))))
    arr = np.asarray(values)
    if arr.size and (arr == arr.flat[0]).all():
        v = int(arr.flat[0])
        return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, int_attr(elem, v)))
    dtype = np.uint32 if elem == u32() else (np.int32 if elem == i32() else None)
    if dtype is None:
        raise TypeError(f"no constant of element type {elem}")
    arr = np.ascontiguousarray(arr.astype(dtype).reshape(list(shape)))
    return make("constant", [], t, value=ir.DenseElementsAttr.get(arr, type=t))


def splat(like: ir.Value, value: int) -> ir.Value:
    """A constant of ``like``'s type with every element ``value``."""
    t = ir.RankedTensorType(like.type)
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, int_attr(t.element_type, value)))


def from_ints(shape: Sequence[int], values: np.ndarray | int, unsigned: bool) -> Words:
    """The words of integer constant(s) (any 64-bit values, as Python ints or an array)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "i":
        bits = arr.reshape(-1).astype(np.int64).view(np.uint64)
    elif arr.dtype.kind == "u":
        bits = arr.reshape(-1).astype(np.uint64)
    else:
        bits = np.array([int(x) & ((1 << 64) - 1) for x in arr.reshape(-1)], dtype=np.uint64)
    if bits.size == 1 and int(np.prod(shape, dtype=np.int64)) != 1:
        bits = np.full(int(np.prod(shape, dtype=np.int64)), bits[0], dtype=np.uint64)
    lo = (bits & np.uint64(_MASK)).astype(np.uint32)
    hi = (bits >> np.uint64(32)).astype(np.uint32)
    return Words(const(shape, lo), const(shape, hi), unsigned)


def bitcast(v: ir.Value, elem: ir.Type) -> ir.Value:
    if _elem(v) == elem:
        return v
    return make("bitcast_convert", [v], tensor_type(shape_of(v), elem))


def convert(v: ir.Value, elem: ir.Type) -> ir.Value:
    if _elem(v) == elem:
        return v
    return make("convert", [v], tensor_type(shape_of(v), elem))


def _cmp(a: ir.Value, b: ir.Value, direction: str, kind: str) -> ir.Value:
    return make(
        "compare",
        [a, b],
        tensor_type(shape_of(a), i1()),
        comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>"),
    )


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return make("select", [p, a, b], a.type)


def _bit(p: ir.Value) -> ir.Value:
    """An ``i1`` tensor as ``ui32`` 0/1."""
    return convert(p, u32())


# ------------------------------------------------------------ pack / unpack
def pack(w: Words, carried: bool = False) -> ir.Value:
    """The packed ``S x 2`` form of ``w``.

    A result (of the entry function, or a ``bitcast_convert`` to words) is
    each word broadcast along a new leading dimension of 2, the low one
    chosen where an iota along it is 0, then transposed to ``S x 2``.  Not
    a ``concatenate`` of ``S x 1`` columns: XLA's CPU compiler fuses the
    words' computation into a concatenate's per-element branches, which do
    not vectorise (a remainder, whose two words share one division, then
    ran 60 times as long as its native form), and IREE forms a kernel for
    each word and for each piece the two share.  The select runs over
    ``2 x S`` rather than ``S x 2``: IREE then fuses the select, the
    transpose and both words' computation into one kernel whose threads
    run along ``S`` (over ``S x 2`` they ran 5 to 10 times as long on a
    Vulkan device).

    A value ``carried`` by a loop (or handed to a branch or a call) is a
    concatenate: unpacked again by the next iteration, it costs less than
    the select, which computes both words at each of its elements (a
    call's is forwarded to the callee's slices, :mod:`no64.transforms.forward`)."""
    elem = u32() if w.unsigned else i32()
    return interleave(bitcast(w.lo, elem), bitcast(w.hi, elem), carried)


def interleave(first: ir.Value, second: ir.Value, carried: bool = False) -> ir.Value:
    """Two parts of one shape ``S`` as one ``S x 2`` tensor, ``first`` at
    ``[..., 0]``: a concatenate where ``carried``, else the select over
    ``2 x S`` transposed (see :func:`pack`; float pairs are packed so too)."""
    t = ir.RankedTensorType(first.type)
    shape, elem = list(t.shape), t.element_type
    packed = tensor_type(shape + [2], elem)
    rank = len(shape)
    if carried:
        col = tensor_type(shape + [1], elem)
        return make(
            "concatenate", [make("reshape", [first], col), make("reshape", [second], col)], packed,
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank),
        )
    if rank > 1 and t.has_static_shape:
        # as a vector (see unpack)
        flat = [int(np.prod(shape, dtype=np.int64))]
        first, second = (make("reshape", [x], tensor_type(flat, elem)) for x in (first, second))
        return make("reshape", [interleave(first, second)], packed)
    lead = tensor_type([2] + shape, elem)
    dims = ir.DenseI64ArrayAttr.get(list(range(1, rank + 1)))
    first, second = (make("broadcast_in_dim", [x], lead, broadcast_dimensions=dims) for x in (first, second))
    index = make("iota", [], tensor_type([2] + shape, i32()),
                 iota_dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0))
    chosen = _sel(_cmp(index, splat(index, 0), "EQ", "SIGNED"), first, second)
    return make("transpose", [chosen], packed, permutation=ir.DenseI64ArrayAttr.get(list(range(1, rank + 1)) + [0]))


def unpack(p: ir.Value) -> Words:
    """The words of a packed ``S x 2`` tensor.

    Taken from its ``2N`` vector (two strided slices) where ``S`` has more
    than one dimension:
    IREE's Vulkan kernels reading the columns of a ``64 x 257 x 2`` tensor
    ran 13 times as long as those reading a ``16448 x 2`` one (a pack
    likewise, :func:`interleave`)."""
    t = ir.RankedTensorType(p.type)
    shape = list(t.shape)[:-1]
    unsigned = t.element_type == u32()
    n = int(np.prod(shape, dtype=np.int64)) if t.has_static_shape else 0
    if len(shape) > 1 and n > 0:  # (an empty vector has no element at 1 to start from)
        flat = make("reshape", [p], tensor_type([2 * n], t.element_type))
        words = [make("slice", [flat], tensor_type([n], t.element_type), start_indices=ir.DenseI64ArrayAttr.get([k]),
                      limit_indices=ir.DenseI64ArrayAttr.get([2 * n]), strides=ir.DenseI64ArrayAttr.get([2]))
                 for k in (0, 1)]
        lo, hi = (bitcast(make("reshape", [x], tensor_type(shape, t.element_type)), u32()) for x in words)
        return Words(lo, hi, unsigned)
    rank = len(shape)
    out = []
    for k in (0, 1):
        s = make(
            "slice", [p], tensor_type(shape + [1], t.element_type),
            start_indices=ir.DenseI64ArrayAttr.get([0] * rank + [k]),
            limit_indices=ir.DenseI64ArrayAttr.get(shape + [k + 1]),
            strides=ir.DenseI64ArrayAttr.get([1] * (rank + 1)),
        )
        out.append(bitcast(make("reshape", [s], tensor_type(shape, t.element_type)), u32()))
    return Words(out[0], out[1], unsigned)


def from_single(x: ir.Value, unsigned: bool) -> Words:
    """The words of a value held in one (narrower) integer tensor: sign- or
    zero-extended from its own type (``i1`` counts as unsigned)."""
    e = ir.IntegerType(_elem(x))
    signed_src = not e.is_unsigned and e.width > 1
    if signed_src:
        xi = convert(x, i32())
        hi = bitcast(make("shift_right_arithmetic", [xi, splat(xi, 31)], xi.type), u32())
        lo = bitcast(xi, u32())
    else:
        lo = convert(x, u32())
        hi = splat(lo, 0)
    return Words(lo, hi, unsigned)


def low_single(w: Words, elem: ir.Type) -> ir.Value:
    """The low bits of ``w`` as integer element type ``elem`` (truncating,
    as a 64-bit convert to a narrower type does)."""
    e = ir.IntegerType(elem)
    if e.width == 32:
        return bitcast(w.lo, elem)
    if e.width == 1:
        return _cmp(make("or", [w.lo, w.hi], w.lo.type), splat(w.lo, 0), "NE", "UNSIGNED")
    # narrower: truncating converts of the low word
    return convert(bitcast(w.lo, i32()) if not e.is_unsigned else w.lo, elem)


def saturated_single(w: Words) -> ir.Value:
    """``w`` as one 32-bit value (``i32``, or ``ui32`` if unsigned), clipped to
    the 32-bit range: values that fit are kept, the 64-bit extremes (the
    sentinels ``INT64_MAX``/``INT64_MIN``/``UINT64_MAX``) become the 32-bit
    ones, as the narrowing pass maps them."""
    fits = _fits(w)
    if w.unsigned:
        return _sel(fits, w.lo, splat(w.lo, _MASK))
    lo_s = bitcast(w.lo, i32())
    negative = _cmp(bitcast(w.hi, i32()), splat(lo_s, 0), "LT", "SIGNED")
    clipped = _sel(negative, splat(lo_s, -(2**31)), splat(lo_s, 2**31 - 1))
    return _sel(fits, lo_s, clipped)


def _fits(w: Words) -> ir.Value:
    """Per element, whether ``w`` fits in 32 bits (its high word is the low
    word's sign, or zero if unsigned): an ``i1`` tensor."""
    if w.unsigned:
        return _cmp(w.hi, splat(w.hi, 0), "EQ", "UNSIGNED")
    lo_s = bitcast(w.lo, i32())
    sign = bitcast(make("shift_right_arithmetic", [lo_s, splat(lo_s, 31)], lo_s.type), u32())
    return _cmp(w.hi, sign, "EQ", "UNSIGNED")


def all_fit(ws: Sequence[Words]) -> ir.Value:
    """Whether every element of every ``w`` in ``ws`` fits in 32 bits: a
    scalar ``i1`` (an ``and`` over each one's elements, then over them)."""
    return all_true([_fits(w) for w in ws])


def all_true(tests: Sequence[ir.Value]) -> ir.Value:
    """Whether every element of every ``i1`` tensor in ``tests`` is true: a
    scalar ``i1`` (an ``and`` over each one's elements, then over them)."""
    scalar = tensor_type([], i1())
    flag: ir.Value | None = None
    for fits in tests:
        shape = shape_of(fits)
        if shape:
            init = make("constant", [], scalar, value=ir.DenseElementsAttr.get_splat(
                scalar, ir.IntegerAttr.get(i1(), 1)))
            red = build("reduce", [fits, init], [scalar], regions=1,
                        dimensions=ir.DenseI64ArrayAttr.get(list(range(len(shape)))))
            block = red.regions[0].blocks.append(scalar, scalar)
            with ir.InsertionPoint(block):
                build("return", [make("and", [block.arguments[0], block.arguments[1]], scalar)], [])
            fits = red.results[0]
        flag = fits if flag is None else make("and", [flag, fits], scalar)
    assert flag is not None, "nothing to check"
    return flag


# --------------------------------------------------------------- arithmetic
def add(a: Words, b: Words) -> Words:
    lo = _same("add", a.lo, b.lo)
    carry = _bit(_cmp(lo, a.lo, "LT", "UNSIGNED"))
    hi = _same("add", _same("add", a.hi, b.hi), carry)
    return Words(lo, hi, a.unsigned)


def subtract(a: Words, b: Words) -> Words:
    lo = _same("subtract", a.lo, b.lo)
    borrow = _bit(_cmp(a.lo, b.lo, "LT", "UNSIGNED"))
    hi = _same("subtract", _same("subtract", a.hi, b.hi), borrow)
    return Words(lo, hi, a.unsigned)


def negate(a: Words) -> Words:
    zero = splat(a.lo, 0)
    return subtract(Words(zero, zero, a.unsigned), a)


def mul_wide32(a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The full 64-bit product of two ``ui32`` tensors, as (low, high) words.

    The low word is the 32-bit product (which wraps); the high one is summed
    from the 16-bit partial products ``p_ij = a_i * b_j`` as Hacker's
    Delight's ``mulhu`` sums them, without a compare: ``t = p10 + (p00 >> 16)``
    and ``w = p01 + (t & 0xFFFF)`` stay below ``2**32`` (a partial product is
    at most ``(2**16 - 1)**2``), and the high word is ``p11 + (t >> 16) + (w
    >> 16)``."""
    m16 = splat(a, 0xFFFF)
    s16 = splat(a, 16)
    a0, a1 = _same("and", a, m16), _same("shift_right_logical", a, s16)
    b0, b1 = _same("and", b, m16), _same("shift_right_logical", b, s16)
    if splat_int(a1) == 0:  # a constant below 2**16: taken as b
        a, b, a0, a1, b0, b1 = b, a, b0, b1, a0, a1
    t = _same("add", _same("multiply", a1, b0), _same("shift_right_logical", _same("multiply", a0, b0), s16))
    if splat_int(b1) == 0:  # a constant b below 2**16: p01 and p11 are 0, and w = t & 0xFFFF
        return _same("multiply", a, b), _same("shift_right_logical", t, s16)
    w = _same("add", _same("multiply", a0, b1), _same("and", t, m16))
    hi = _same("add", _same("add", _same("multiply", a1, b1), _same("shift_right_logical", t, s16)),
               _same("shift_right_logical", w, s16))
    return _same("multiply", a, b), hi


def multiply(a: Words, b: Words) -> Words:
    """The low 64 bits of the product (the same for signed and unsigned)."""
    lo, hi = mul_wide32(a.lo, b.lo)
    cross = _same("add", _same("multiply", a.lo, b.hi), _same("multiply", a.hi, b.lo))
    return Words(lo, _same("add", hi, cross), a.unsigned)


def bitwise(name: str, a: Words, b: Words) -> Words:
    """``and``, ``or`` or ``xor``, word by word."""
    return Words(_same(name, a.lo, b.lo), _same(name, a.hi, b.hi), a.unsigned)


def bit_not(a: Words) -> Words:
    return Words(make("not", [a.lo], a.lo.type), make("not", [a.hi], a.hi.type), a.unsigned)


def shift(name: str, a: Words, amount: Words) -> Words:
    """``shift_left``, ``shift_right_logical`` or ``shift_right_arithmetic``
    by a 64-bit amount (an amount of 64 or more, or negative, shifts
    everything out: 0, or the sign for an arithmetic right shift)."""
    lo, hi = a.lo, a.hi
    # n = min(amount, 64) as an unsigned 64-bit number
    big = _cmp(amount.hi, splat(hi, 0), "NE", "UNSIGNED")
    c64 = splat(lo, 64)
    n = _sel(big, c64, make("minimum", [amount.lo, c64], lo.type))
    c32 = splat(lo, 32)
    wide = _cmp(n, c32, "GE", "UNSIGNED")  # n >= 32
    n_hi = _same("subtract", n, c32)  # n - 32 (only read when wide)
    back = _same("subtract", c32, n)  # 32 - n (only read when not wide; 32 when n == 0)
    if name == "shift_left":
        # n < 32: lo << n, (hi << n) | (lo >> (32 - n)); n >= 32: 0, lo << (n - 32)
        # (StableHLO shifts of 32 or more give 0, which covers n == 0 and n >= 64.)
        lo_small = _same("shift_left", lo, n)
        hi_small = _same("or", _same("shift_left", hi, n), _same("shift_right_logical", lo, back))
        hi_wide = _same("shift_left", lo, n_hi)
        zero = splat(lo, 0)
        return Words(_sel(wide, zero, lo_small), _sel(wide, hi_wide, hi_small), a.unsigned)
    lo_small = _same("or", _same("shift_right_logical", lo, n), _same("shift_left", hi, back))
    if name == "shift_right_logical":
        hi_small = _same("shift_right_logical", hi, n)
        lo_wide = _same("shift_right_logical", hi, n_hi)
        zero = splat(lo, 0)
        return Words(_sel(wide, lo_wide, lo_small), _sel(wide, zero, hi_small), a.unsigned)
    # arithmetic: the high word's sign fills in
    hs = bitcast(hi, i32())
    c31 = splat(n, 31)
    hi_small = bitcast(
        make("shift_right_arithmetic", [hs, bitcast(make("minimum", [n, c31], n.type), i32())], hs.type), u32()
    )
    lo_wide = bitcast(
        make("shift_right_arithmetic", [hs, bitcast(make("minimum", [n_hi, c31], n.type), i32())], hs.type), u32()
    )
    fill = bitcast(make("shift_right_arithmetic", [hs, splat(hs, 31)], hs.type), u32())
    return Words(_sel(wide, lo_wide, lo_small), _sel(wide, fill, hi_small), a.unsigned)


# ----------------------------------------------------------------- division
#
# Unsigned 64-bit division without integer division: the quotient is
# estimated in f32 (the divisor's reciprocal, shrunk so that every estimate
# is at or below the true quotient) and refined by exact multiply-subtract
# steps on the words; each step leaves a remainder about 2**18 times smaller,
# and a last compare-and-subtract makes it exact.  Every step is the same for
# every element (no loop, no data-dependent branch), and nothing but f32
# converts, multiplies and adds and 32-bit integer ops is used, so the whole
# division vectorises (a native 32-bit integer division does not, on most
# CPUs, and is itself emulated on accelerators without one).
#
# Error bound.  An f32 convert, add or multiply rounds with a relative error
# of at most u = 2**-24; the reciprocal's division is allowed 4u (correctly
# rounded division has u; the bound leaves room for approximate hardware
# division).  The estimate of a/b is fl(fl(a) * fl(SHRINK / fl(b))), with
# fl(x) of a two-word value rounding at most twice (the high word's convert
# scaled by 2**32 exactly, then the add): at most 11 roundings' worth,
# |error| < 2**-20 relative, against the shrink SHRINK = 1 - 2**-19.  So the
# estimate lies in [(a/b)(1 - 2**-18), a/b): its truncation q is at most
# floor(a/b) (the remainder a - q b stays >= 0) and at least
# a/b - (a/b) 2**-18 - 1, which leaves a remainder below
# (a/b 2**-18 + 1) b.

_SHRINK = 1.0 - 2.0**-19


def _fsplat(like: ir.Value, value: float) -> ir.Value:
    t = tensor_type(shape_of(like), ir.F32Type.get())
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(ir.F32Type.get(), value)))


def _approx(lo: ir.Value, hi: ir.Value | None = None) -> ir.Value:
    """``hi * 2**32 + lo`` (``ui32`` words; ``hi`` absent: 0) as an f32,
    within two roundings."""
    f = convert(lo, ir.F32Type.get())
    if hi is None:
        return f
    fh = convert(hi, ir.F32Type.get())
    return _same("add", _same("multiply", fh, _fsplat(fh, 2.0**32)), f)


def _estimate(a: ir.Value, rcp: ir.Value) -> ir.Value:
    """The truncated f32 estimate ``a * rcp`` (``a`` an f32 approximation of
    the dividend, ``rcp`` the shrunk reciprocal) as ``ui32``: at most the
    true quotient, so below 2**32 where that is."""
    return convert(_same("multiply", a, rcp), u32())


def _times(q: ir.Value, d: Words) -> Words:
    """The low 64 bits of ``q * d`` (``q`` one ``ui32`` word)."""
    lo, hi = mul_wide32(q, d.lo)
    return Words(lo, _same("add", hi, _same("multiply", q, d.hi)), True)


def _divmod_narrow(n: Words, d: Words, rcp: ir.Value) -> tuple[ir.Value, Words]:
    """The quotient (one ``ui32`` word) and remainder of ``n / d`` where the
    quotient is known to fit in 32 bits (``n < 2**32 d``, ``d != 0``);
    ``rcp`` is ``d``'s shrunk f32 reciprocal.

    The first estimate leaves a remainder below (2**14 + 1) d, the second
    one below 2 d (its quotient estimate is below 2**14 + 2, where the
    relative error costs less than one unit), and a compare-and-subtract
    finishes."""
    q1 = _estimate(_approx(n.lo, n.hi), rcp)
    r1 = subtract(n, _times(q1, d))
    q2 = _estimate(_approx(r1.lo, r1.hi), rcp)
    r2 = subtract(r1, _times(q2, d))
    again = compare("GE", r2, d, True)
    q = _same("add", _same("add", q1, q2), _bit(again))
    return q, select(again, subtract(r2, d), r2)


def _divmod_word(a: ir.Value, b: ir.Value, rcp: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The quotient and remainder of ``ui32`` words ``a / b`` (``b != 0``),
    with ``rcp`` the shrunk f32 reciprocal of ``b``: two estimates (the
    first leaves a remainder below (2**14 + 1) b, the second one below 2 b)
    and a compare-and-subtract."""
    q1 = _estimate(_approx(a), rcp)
    r1 = _same("subtract", a, _same("multiply", q1, b))
    q2 = _estimate(_approx(r1), rcp)
    r2 = _same("subtract", r1, _same("multiply", q2, b))
    again = _cmp(r2, b, "GE", "UNSIGNED")
    q = _same("add", _same("add", q1, q2), _bit(again))
    return q, _sel(again, _same("subtract", r2, b), r2)


def divmod_unsigned(n: Words, d: Words, small_divisor: bool = False) -> tuple[Words, Words]:
    """The quotient and remainder of unsigned 64-bit division, as XLA
    computes them: ``n / 0`` is all ones and ``n % 0`` is ``n``.

    A divisor below 2**32 divides the high word first (a word by a word),
    and its remainder with the low word has a quotient below 2**32; a
    divisor of 2**32 or more has a quotient below 2**32 anyway.  Both cases
    then share one :func:`_divmod_narrow`, its dividend chosen per element.

    ``small_divisor``: ``d`` is known to be below ``2**32`` (its high word
    is zero), which saves the choice."""
    zero, one = splat(n.lo, 0), splat(n.lo, 1)
    ones = splat(n.lo, _MASK)
    d_zero = _cmp(_same("or", d.lo, d.hi), zero, "EQ", "UNSIGNED")
    d_lo = _sel(d_zero, one, d.lo)  # any nonzero divisor: the result is replaced below
    d = Words(d_lo, zero if small_divisor else d.hi, True)
    fd = _approx(d_lo) if small_divisor else _approx(d_lo, d.hi)
    rcp = _same("divide", _fsplat(fd, _SHRINK), fd)
    q_hi, r_hi = _divmod_word(n.hi, d_lo, rcp)
    if small_divisor:
        q_lo, rem = _divmod_narrow(Words(n.lo, r_hi, True), d, rcp)
        quot = Words(q_lo, q_hi, True)
    else:
        large = _cmp(d.hi, zero, "NE", "UNSIGNED")
        q_lo, rem = _divmod_narrow(Words(n.lo, _sel(large, n.hi, r_hi), True), d, rcp)
        quot = Words(q_lo, _sel(large, zero, q_hi), True)
    quot = select(d_zero, Words(ones, ones, True), quot)
    rem = select(d_zero, n.retag(True), rem)
    return quot.retag(n.unsigned), rem.retag(n.unsigned)


def divmod_signed(n: Words, d: Words, small_divisor: bool = False) -> tuple[Words, Words]:
    """The quotient and remainder of signed 64-bit division, as XLA computes
    them: truncating toward zero, the remainder with the dividend's sign,
    ``n / 0 == -1``, ``n % 0 == n``, ``INT64_MIN / -1 == INT64_MIN`` and
    ``INT64_MIN % -1 == 0``.

    ``small_divisor``: ``|d|`` is known to be below ``2**32``."""
    neg_n, neg_d = _is_negative(n), _is_negative(d)
    # |INT64_MIN| is 2**63 as an unsigned number: its quotient by 1 wraps
    # back to INT64_MIN, as XLA's does
    quot, rem = divmod_unsigned(select(neg_n, negate(n), n).retag(True),
                                select(neg_d, negate(d), d).retag(True), small_divisor)
    d_zero = _cmp(_same("or", d.lo, d.hi), splat(d.lo, 0), "EQ", "UNSIGNED")
    flip = _same("and", _same("xor", neg_n, neg_d), make("not", [d_zero], d_zero.type))
    quot = select(flip, negate(quot), quot)
    rem = select(neg_n, negate(rem), rem)
    return quot.retag(False), rem.retag(False)


# ---------------------------------------------- division by a constant
#
# A divisor known at conversion time (``i // 128``, ``i % 1000``) divides by
# multiplying: q = floor(n m / 2**k) for a magic number m (Granlund and
# Montgomery, "Division by invariant integers using multiplication", 1994,
# theorem 4.2): if 2**k <= m d <= 2**k + 2**(k - N), the identity holds for
# every dividend below 2**N.  The multiplier is sought below 2**64 (the
# dividend shifted right first by the divisor's factors of two, which
# shrinks N); failing that, the 65-bit multiplier 2**64 + m' is applied as
# t = mulhi(n, m'), q = (t + (n - t) / 2) >> (l - 1) with l = ceil(log2 d)
# (their figure 4.1).  A signed division divides the magnitudes, as
# :func:`divmod_signed` does.


def _srl(a: Words, k: int) -> Words:
    """``a`` shifted right logically by the constant ``k`` (0 <= k < 64)."""
    if k == 0:
        return a
    zero = splat(a.lo, 0)
    if k >= 32:
        return Words(_same("shift_right_logical", a.hi, splat(a.hi, k - 32)) if k > 32 else a.hi, zero, a.unsigned)
    lo = _same("or", _same("shift_right_logical", a.lo, splat(a.lo, k)), _same("shift_left", a.hi, splat(a.hi, 32 - k)))
    return Words(lo, _same("shift_right_logical", a.hi, splat(a.hi, k)), a.unsigned)


def _mulhi(n: Words, m: int) -> Words:
    """The high 64 bits of the 128-bit product ``n * m`` (``0 < m < 2**64``)."""
    zero = splat(n.lo, 0)
    mid: list[ir.Value] = []  # words at bit 32 of the product (their sum's carry goes to bit 64)
    high: list[Words] = []  # words at bit 64
    for word, shift in ((m & _MASK, 0), (m >> 32, 1)):
        if word:
            lo_lo, lo_hi = mul_wide32(n.lo, splat(n.lo, word))
            hi_lo, hi_hi = mul_wide32(n.hi, splat(n.lo, word))
            if shift:
                mid.append(lo_lo)
                high += [Words(lo_hi, zero, True), Words(hi_lo, hi_hi, True)]
            else:
                mid += [lo_hi, hi_lo]
                high.append(Words(hi_hi, zero, True))
    total = Words(mid[0], zero, True)
    for x in mid[1:]:
        total = add(total, Words(x, zero, True))
    out = Words(total.hi, zero, True)
    for w in high:
        out = add(out, w)
    return out


def magic(d: int) -> tuple[int, int, int, bool]:
    """How to divide 64-bit unsigned dividends by ``d`` (``1 < d < 2**63``,
    not a power of two): ``(pre, m, post, add)``.  Without ``add``,
    ``q = mulhi(n >> pre, m) >> post``; with it (``pre == 0``),
    ``t = mulhi(n, m)`` and ``q = (t + ((n - t) >> 1)) >> post``."""
    tz = (d & -d).bit_length() - 1
    for pre in sorted({0, tz}):
        dd, bits = d >> pre, 64 - pre
        for post in range(64):
            k = 64 + post
            m = -(-(1 << k) // dd)
            if m >= 1 << 64:
                break
            if m * dd - (1 << k) <= 1 << (k - bits):
                return pre, m, post, False
    lg = d.bit_length()  # ceil(log2 d), d not a power of two
    m = -(-(1 << (64 + lg)) // d) - (1 << 64)
    return 0, m, lg - 1, True


def divmod_unsigned_by(n: Words, d: int) -> tuple[Words, Words]:
    """The quotient and remainder of unsigned 64-bit ``n`` by the constant
    ``d`` (``0 <= d < 2**64``), as :func:`divmod_unsigned` gives them."""
    shape, zero = n.shape, splat(n.lo, 0)
    if d == 0:
        ones = splat(n.lo, _MASK)
        return Words(ones, ones, n.unsigned), n
    if d & (d - 1) == 0:
        k = d.bit_length() - 1
        low = from_ints(shape, d - 1, True)
        return _srl(n, k), bitwise("and", n, low).retag(n.unsigned)
    dw = from_ints(shape, d, True)
    if d >= 1 << 63:  # the quotient is 0 or 1
        one = compare("GE", n, dw, True)
        q = Words(_bit(one), zero, True)
    else:
        pre, m, post, wide = magic(d)
        if wide:
            t = _mulhi(n, m)
            q = _srl(add(t, _srl(subtract(n.retag(True), t), 1)), post)
        else:
            q = _srl(_mulhi(_srl(n.retag(True), pre), m), post)
    r = subtract(n.retag(True), multiply(q, dw))
    return q.retag(n.unsigned), r.retag(n.unsigned)


def divmod_signed_by(n: Words, d: int) -> tuple[Words, Words]:
    """The quotient and remainder of signed 64-bit ``n`` by the constant
    ``d`` (``-2**63 <= d < 2**63``), as :func:`divmod_signed` gives them
    (``INT64_MIN / -1 == INT64_MIN``, ``INT64_MIN % -1 == 0``)."""
    if d == 0:
        quot, rem = divmod_unsigned_by(n.retag(True), 0)
        return quot.retag(False), n
    neg_n = _is_negative(n)
    quot, rem = divmod_unsigned_by(select(neg_n, negate(n), n).retag(True), abs(d))
    flip = make("not", [neg_n], neg_n.type) if d < 0 else neg_n
    quot = select(flip, negate(quot), quot)
    rem = select(neg_n, negate(rem), rem)
    return quot.retag(False), rem.retag(False)


def count_leading_zeros(a: Words) -> ir.Value:
    """The leading zero bits of the 64-bit value (0..64), as ``ui32``."""
    hi_clz = make("count_leading_zeros", [a.hi], a.hi.type)
    lo_clz = make("count_leading_zeros", [a.lo], a.lo.type)
    high_zero = _cmp(a.hi, splat(a.hi, 0), "EQ", "UNSIGNED")
    return _sel(high_zero, _same("add", lo_clz, splat(lo_clz, 32)), hi_clz)


def popcount(a: Words) -> ir.Value:
    """The set bits of the 64-bit value (0..64), as ``ui32``."""
    return _same("add", make("popcnt", [a.lo], a.lo.type), make("popcnt", [a.hi], a.hi.type))


# -------------------------------------------------------------- comparisons
def compare(direction: str, a: Words, b: Words, unsigned: bool) -> ir.Value:
    """``a <direction> b`` as an ``i1`` tensor (signed or unsigned order)."""
    eq_hi = _cmp(a.hi, b.hi, "EQ", "UNSIGNED")
    if direction in ("EQ", "NE"):
        eq = _same("and", eq_hi, _cmp(a.lo, b.lo, "EQ", "UNSIGNED"))
        return eq if direction == "EQ" else make("not", [eq], eq.type)
    if unsigned:
        hi_cmp = _cmp(a.hi, b.hi, direction, "UNSIGNED")
    else:
        hi_cmp = _cmp(bitcast(a.hi, i32()), bitcast(b.hi, i32()), direction, "SIGNED")
    lo_cmp = _cmp(a.lo, b.lo, direction, "UNSIGNED")
    return _sel(eq_hi, lo_cmp, hi_cmp)


def select(p: ir.Value, a: Words, b: Words) -> Words:
    return Words(_sel(p, a.lo, b.lo), _sel(p, a.hi, b.hi), a.unsigned)


def minmax(which: str, a: Words, b: Words) -> Words:
    lt = compare("LT", a, b, a.unsigned)
    return select(lt, a, b) if which == "min" else select(lt, b, a)


def _is_negative(a: Words) -> ir.Value:
    return _cmp(bitcast(a.hi, i32()), splat(bitcast(a.hi, i32()), 0), "LT", "SIGNED")


def absolute(a: Words) -> Words:
    if a.unsigned:
        return a
    return select(_is_negative(a), negate(a), a)


def sign(a: Words) -> Words:
    zero = splat(a.lo, 0)
    nz = _bit(_cmp(make("or", [a.lo, a.hi], a.lo.type), zero, "NE", "UNSIGNED"))
    if a.unsigned:
        return Words(nz, zero, True)
    neg = _is_negative(a)
    ones = splat(a.lo, _MASK)
    return Words(_sel(neg, ones, nz), _sel(neg, ones, zero), False)


# ------------------------------------------------------------------- floats
def to_float(a: Words, elem: ir.Type) -> ir.Value:
    """``a`` converted to float type ``elem`` (``f32``; ``f16``/``bf16`` via f32)
    with one rounding: the value is first brought into 24 significant bits
    with a sticky bit, then converted."""
    f32 = ir.F32Type.get()
    neg = _is_negative(a) if not a.unsigned else None
    mag = absolute(a) if not a.unsigned else a
    lo, hi = mag.lo, mag.hi
    zero = splat(lo, 0)
    # k = number of low bits to drop so that the rest fits in 32 bits
    clz = make("count_leading_zeros", [hi], hi.type)
    k = _same("subtract", splat(lo, 32), clz)  # 0..32 (0 when hi == 0)
    shifted = shift("shift_right_logical", Words(lo, hi, True), Words(k, zero, True))
    # sticky: any dropped bit set -> or 1 into bit 0 (below f32's precision
    # for values of 33 bits or more, so the rounding stays correct)
    dropped_mask = _same("subtract", _same("shift_left", splat(lo, 1), k), splat(lo, 1))  # k==32 -> 0-1
    dropped_mask = _sel(_cmp(k, splat(lo, 32), "EQ", "UNSIGNED"), splat(lo, _MASK), dropped_mask)
    sticky = _bit(_cmp(_same("and", lo, dropped_mask), zero, "NE", "UNSIGNED"))
    top = _same("or", shifted.lo, sticky)
    # top < 2**32: f32(top) rounds once (the sticky bit breaks ties right);
    # then scale by 2**k exactly
    f = make("convert", [top], tensor_type(shape_of(lo), f32))
    scale = make(
        "bitcast_convert",
        [_same("shift_left", _same("add", k, splat(k, 127)), splat(k, 23))],
        tensor_type(shape_of(lo), f32),
    )
    f = make("multiply", [f, scale], f.type)
    if neg is not None:
        f = _sel(neg, make("negate", [f], f.type), f)
    if elem != f32:
        f = make("convert", [f], tensor_type(shape_of(lo), elem))
    return f


def from_float(x: ir.Value, unsigned: bool) -> Words:
    """A float tensor (``f32`` or narrower) converted to a 64-bit integer as
    XLA converts it: truncating toward zero, saturating at the type's
    extremes (infinities included), NaN to 0, and negative values to 0 for
    an unsigned result."""
    f32 = ir.F32Type.get()
    if ir.RankedTensorType(x.type).element_type != f32:
        x = make("convert", [x], tensor_type(shape_of(x), f32))
    shape = shape_of(x)

    def fconst(value: float) -> ir.Value:
        return make("constant", [], x.type, value=ir.DenseElementsAttr.get_splat(x.type, ir.FloatAttr.get(f32, value)))

    def fcmp(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
        return _cmp(a, b, direction, "FLOAT")

    mag = make("abs", [x], x.type)
    two32 = fconst(4294967296.0)
    q = make("floor", [make("divide", [mag, two32], x.type)], x.type)  # exact: a power of two
    rest = make("subtract", [mag, make("multiply", [q, two32], x.type)], x.type)  # exact
    hi = make("convert", [q], tensor_type(shape, u32()))
    lo = make("convert", [make("floor", [rest], x.type)], tensor_type(shape, u32()))
    w = Words(lo, hi, unsigned)
    zero = splat(lo, 0)
    ones = splat(lo, _MASK)
    nan = fcmp(x, x, "NE")
    if unsigned:
        out_low = _same("or", fcmp(x, fconst(0.0), "LT"), nan)
        over = fcmp(x, fconst(18446744073709551616.0), "GE")
        w = select(over, Words(ones, ones, True), w)
        return select(out_low, Words(zero, zero, True), w)
    w = select(fcmp(x, fconst(0.0), "LT"), negate(w), w)
    over = fcmp(x, fconst(9223372036854775808.0), "GE")
    under = fcmp(x, fconst(-9223372036854775808.0), "LT")
    w = select(over, Words(ones, splat(lo, 0x7FFFFFFF), False), w)
    w = select(under, Words(zero, splat(lo, 0x80000000), False), w)
    return select(nan, Words(zero, zero, False), w)
