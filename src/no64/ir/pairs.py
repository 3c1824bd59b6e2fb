"""Double-f32 arithmetic: 64-bit floats carried as normalized pairs of f32.

A float64 tensor of shape ``S`` is carried as a :class:`Pair`: two ``f32``
tensors of shape ``S``, ``hi`` and ``lo``, whose exact sum stands for the
value, *normalized* so that ``hi`` is that sum rounded to f32 (``|lo| <=
ulp(hi) / 2``) -- about 48 bits of significand, f32's exponent range.  A
non-finite value has ``lo = 0``.  Every function here builds StableHLO ops
at the current insertion point and uses only ``f32``, ``i32`` and ``i1``
(the integer converts build the 64-bit integer ops they need, for the
integer steps of the pass to narrow or emulate).

The algorithms are the double-word ones of Joldes, Muller and Popescu
("Tight and rigorous error bounds for basic building blocks of double-word
arithmetic", ACM TOMS 2017), in their forms without FMA:

* :func:`add`: DWPlusDW (their Algorithm 6), relative error <= 3u^2;
* :func:`multiply`: DWTimesDW1 (Algorithm 10), <= 7u^2;
* :func:`divide`: DWDivDW2 (Algorithm 17) with a product by a float
  without FMA, <= 15u^2;

with ``u = 2**-24``.  Zeros are signed as IEEE signs float64's: a zero
sum, product or quotient is the zero f32 gives the op on the hi words
(``x - x`` is +0; ``-0 + -0``, ``(-a) * 0`` and ``0 / -b`` are -0: sums
and products subtract their error terms negated, none -0, and a quotient
selects), a rounding to an integer keeps its operand's sign, ``minimum`` and
``maximum`` order -0 below +0 (as XLA does), and the conversion to f32 keeps
a -0.

The error-free transformations are made to survive an optimizing
compiler:

* every rounded sum that an error term is taken from passes through a
  ``stablehlo.optimization_barrier``, so that no simplifier can rewrite
  ``(a + b) - a`` into ``b`` or fold ``(a + C) - C`` with a constant ``C``,
  and every use of it sees the same rounded value;
* exact products are built from exact half-products only: each factor is
  split by masking the low 12 bits of its significand (an integer ``and``,
  which overflows for no input and which no float simplification
  touches), so a product of two halves has at most 24 significant bits and
  is exact, whether or not a backend contracts it into an FMA; the rounded
  product the error is taken from passes through a barrier, so a fused
  loop cannot recompute it differently (fused or not) per use.

The results are bit-for-bit those of the same algorithm evaluated step by
step in IEEE f32 (with denormals flushed to zero, as XLA's CPU runtime
does): the tests compare the compiled module's words with a numpy model of
it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._mlir import int_attr, ir
from .words import build, i1, i32, interleave, make, shape_of, tensor_type

__all__ = [
    "Pair",
    "f32",
    "pair_type",
    "packed_type",
    "pack",
    "unpack",
    "constant",
    "split_f64",
    "F64_TINY",
    "float_sentinels_mapped",
    "PAIR_MAX",
    "PAIR_FULL_MIN",
    "RangeCheck",
    "range_check",
    "from_f32",
    "from_float",
    "from_int",
    "to_f32",
    "to_float",
    "to_int",
    "two_sum",
    "fast_two_sum",
    "fast_two_diff",
    "two_prod",
    "add",
    "subtract",
    "negate",
    "multiply",
    "divide",
    "sqrt",
    "error_bounds",
    "MAX_QUOTIENT_ULP",
    "compare",
    "select",
    "minmax",
    "absolute",
    "sign",
    "floor",
    "ceil",
    "round_even",
    "round_afz",
    "next_after",
    "PAIR_LARGEST",
    "finish",
]


class Pair(NamedTuple):
    """A float64 tensor as a normalized pair of ``f32`` tensors."""

    hi: ir.Value
    lo: ir.Value

    @property
    def shape(self) -> list[int]:
        return list(ir.RankedTensorType(self.hi.type).shape)


# ------------------------------------------------------------------ basics
def f32() -> ir.Type:
    return ir.F32Type.get()


def pair_type(shape: Sequence[int]) -> ir.RankedTensorType:
    """The type of one word of a pair of shape ``shape``."""
    return tensor_type(shape, f32())


def packed_type(shape: Sequence[int]) -> ir.RankedTensorType:
    """The packed form of a pair of shape ``shape``: ``shape x 2`` f32,
    ``[..., 0]`` hi and ``[..., 1]`` lo."""
    return tensor_type(list(shape) + [2], f32())


def _fsplat(like: ir.Value, value: float) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(t.element_type, value)))


def _isplat(like: ir.Value, value: int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, int_attr(t.element_type, value)))


def _bin(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return make(name, [a, b], a.type)


def _un(name: str, a: ir.Value) -> ir.Value:
    return make(name, [a], a.type)


def _cmp(a: ir.Value, b: ir.Value, direction: str, kind: str | None = None) -> ir.Value:
    if kind is None:
        kind = "FLOAT" if isinstance(ir.RankedTensorType(a.type).element_type, ir.FloatType) else "SIGNED"
    return make(
        "compare", [a, b], tensor_type(shape_of(a), i1()),
        comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>"),
    )


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return make("select", [p, a, b], a.type)


def _and(a: ir.Value, b: ir.Value) -> ir.Value:
    return _bin("and", a, b)


def _or(a: ir.Value, b: ir.Value) -> ir.Value:
    return _bin("or", a, b)


def barrier(*values: ir.Value) -> list[ir.Value]:
    """``values`` through one ``stablehlo.optimization_barrier``: the
    compiler must compute each as written and may not look through it."""
    return list(build("optimization_barrier", values, [v.type for v in values]).results)


def _bar(v: ir.Value) -> ir.Value:
    return barrier(v)[0]


def _convert(v: ir.Value, elem: ir.Type) -> ir.Value:
    if ir.RankedTensorType(v.type).element_type == elem:
        return v
    return make("convert", [v], tensor_type(shape_of(v), elem))


def _bitcast(v: ir.Value, elem: ir.Type) -> ir.Value:
    return make("bitcast_convert", [v], tensor_type(shape_of(v), elem))


# ------------------------------------------------------------ pack / unpack
def pack(p: Pair, carried: bool = True) -> ir.Value:
    """The packed ``S x 2`` form of ``p`` (``[..., 0]`` hi, ``[..., 1]`` lo).

    A value ``carried`` by a loop, a branch or a call is a ``concatenate``
    of ``S x 1`` columns (unpacked again by the next iteration); a result of
    a function (``carried=False``) is packed as :func:`no64.ir.words.pack`
    packs words (:func:`no64.ir.words.interleave`): XLA's CPU compiler fuses
    the whole computation of the parts into a concatenate's per-element
    branches, which do not vectorise (``select(x > 0, 3 x, x / 7) + 1.5`` on
    pairs ran 10 to 40 times as long as with the select)."""
    return interleave(p.hi, p.lo, carried)


def unpack(v: ir.Value) -> Pair:
    """The pair of a packed ``S x 2`` tensor."""
    t = ir.RankedTensorType(v.type)
    shape = list(t.shape)[:-1]
    rank = len(shape)
    out = []
    for k in (0, 1):
        s = make(
            "slice", [v], tensor_type(shape + [1], f32()),
            start_indices=ir.DenseI64ArrayAttr.get([0] * rank + [k]),
            limit_indices=ir.DenseI64ArrayAttr.get(shape + [k + 1]),
            strides=ir.DenseI64ArrayAttr.get([1] * (rank + 1)),
        )
        out.append(make("reshape", [s], tensor_type(shape, f32())))
    return Pair(out[0], out[1])


# ------------------------------------------------------------- constants
def split_f64(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The normalized pairs of float64 ``values``: ``hi`` the value rounded
    to f32, ``lo`` the rest rounded to f32 (``lo = 0`` where ``hi`` is not
    finite).  Exact where the value has at most 48 significant bits and
    its parts are within f32's range; otherwise ``hi + lo`` is the value
    within ``2**-48`` relative (or what f32's range allows)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = v.astype(np.float32)
        rest = v - hi.astype(np.float64)
        lo = np.where(np.isfinite(hi), rest, 0.0).astype(np.float32)
        # renormalize (the rounded rest may move hi's rounding)
        s = np.where(lo == 0, hi, (hi + lo).astype(np.float32))
        lo = np.where(np.isfinite(s), (v - s.astype(np.float64)).astype(np.float32), np.float32(0))
    return s, lo


#: The largest magnitude of a pair: float32's largest finite value,
#: ``(2 - 2**-23) * 2**127`` (about 3.4028235e38).  Beyond it a hi word is
#: ``inf``.
PAIR_MAX = float(np.finfo(np.float32).max)
#: float32's smallest normal magnitude: a word below it is subnormal, which
#: XLA's CPU runtime and most accelerators flush to zero.
_F32_TINY = float(np.finfo(np.float32).tiny)  # 2**-126
#: float64's smallest normal magnitude (``finfo(float64).tiny``, 2**-1022):
#: like float64's largest, a float sentinel, which pairs hold as float32's
#: (:func:`float_sentinels_mapped`): ``jnp.where(x == 0, finfo.tiny, ...)``,
#: the smallest positive normal value of the type, is the pairs' own.
F64_TINY = float(np.finfo(np.float64).tiny)


def float_sentinels_mapped(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Float64 ``values`` with float64's largest finite magnitude and its
    smallest normal one (each of either sign, the float sentinels) mapped
    to float32's, which pairs hold; and how many were."""
    v = np.asarray(values, dtype=np.float64)
    mag = np.abs(v)
    big, tiny = mag == np.finfo(np.float64).max, mag == F64_TINY
    n = int(big.sum() + tiny.sum())
    if not n:
        return v, 0
    v = np.where(big, np.copysign(PAIR_MAX, v), v)
    return np.where(tiny, np.copysign(_F32_TINY, v), v), n


#: The smallest magnitude from which every float64 value is carried within
#: ``2**-48`` of itself with f32 subnormals flushed: at ``|x| >= 2**-78`` a
#: low word below ``2**-126`` is below ``2**-48 * |x|`` too.  Below it, a
#: value is carried so only where its bits past the hi word's are at
#: weights ``2**-126`` or above (``2**-100`` is; ``2**-100 * (1 + 2**-30)``
#: is not), and below ``2**-126`` not at all.
PAIR_FULL_MIN = 2.0**-78
#: The relative distance from a float64 value to its pair within which the
#: pair keeps the value's 48 leading bits (``split_f64``'s rounding).
_PAIR_REL = 2.0**-48


class RangeCheck(NamedTuple):
    """Which elements of float64 data f32 pairs cannot hold (flat masks):
    ``over``, finite beyond :data:`PAIR_MAX` (``finfo(float64).max`` and its
    negation, the float sentinels, are not counted); ``under``, nonzero
    (but for ``finfo(float64).tiny``, the other float sentinel)
    values whose pair with f32 subnormals flushed is further than
    ``2**-48 * |x|`` from them.  ``0``, ``-0``, ``inf`` and NaN enter
    exactly and are in neither."""

    over: np.ndarray
    under: np.ndarray

    @property
    def bad(self) -> np.ndarray:
        return self.over | self.under

    def first(self) -> int:
        """The flat index of the first element in either mask (``-1``: none)."""
        bad = self.bad
        return int(np.argmax(bad)) if bad.any() else -1

    def describe(self, value: float) -> str:
        """Why ``value`` (an element in a mask) is out of range, for people."""
        if abs(value) > PAIR_MAX:
            return f"{value!r} is beyond float32's range (|x| > 3.4028235e38): its pair would be inf"
        if abs(value) < _F32_TINY:
            return (f"{value!r} is below float32's smallest normal value (2**-126, 1.2e-38): its pair "
                    "would be subnormal, which XLA's CPU runtime and most accelerators flush to 0")
        return (f"{value!r} needs a low word below float32's smallest normal value (2**-126), which "
                "XLA's CPU runtime and most accelerators flush to 0: its pair would keep fewer than 48 "
                "bits of it (every value from 2**-78, 3.3e-24, keeps them)")


def range_check(values: np.ndarray | float) -> RangeCheck:
    """Which elements of ``values`` (float64, any shape; masks flat) leave
    the range of f32 pairs (see :class:`RangeCheck`)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(v)
        mag = np.abs(v)
        over = finite & (mag > PAIR_MAX) & (mag != np.finfo(np.float64).max)
        small = finite & (v != 0) & (mag < PAIR_FULL_MIN) & (mag != F64_TINY)
        under = np.zeros_like(small)
        if small.any():
            hi, lo = split_f64(v[small])
            h = np.where(np.abs(hi) < _F32_TINY, 0.0, hi.astype(np.float64))
            lw = np.where(np.abs(lo) < _F32_TINY, 0.0, lo.astype(np.float64))
            err = np.abs((v[small] - h) - lw)  # exact: each step cancels known bits
            under[small] = err > _PAIR_REL * mag[small]
    return RangeCheck(over, under)


def constant(shape: Sequence[int], values: np.ndarray | float) -> Pair:
    """The pair of float64 constant(s) ``values`` (one or one per element),
    through a barrier: a compiler that folds pair arithmetic on constants
    at compile time does not keep its error terms (XLA's CPU compiler
    does not)."""
    arr = np.asarray(values, dtype=np.float64)
    hi, lo = split_f64(arr.reshape(-1))
    h, l = barrier(_fconst(shape, hi), _fconst(shape, lo))
    return Pair(h, l)


def _fconst(shape: Sequence[int], arr: np.ndarray) -> ir.Value:
    t = pair_type(shape)
    a = np.asarray(arr, dtype=np.float32).reshape(-1)
    if a.size == 0 or (a.size >= 1 and (a.view(np.uint32) == a.view(np.uint32)[0]).all()):
        scalar = float(a[0]) if a.size else 0.0
        return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(f32(), scalar)))
    a = np.ascontiguousarray(a.reshape(list(shape)))
    return make("constant", [], t, value=ir.DenseElementsAttr.get(a, type=t))


# ------------------------------------------- error-free transformations
def two_sum(a: ir.Value, b: ir.Value, negated: bool = False) -> Pair:
    """``s = RN(a + b)`` and its exact error (Knuth's TwoSum, 6 additions);
    with ``negated``, the error negated (computed so, exactly: never -0)."""
    s = _bar(_bin("add", a, b))
    bb = _bar(_bin("subtract", s, a))
    if negated:
        err = _bin("add", _bin("subtract", _bin("subtract", s, bb), a), _bin("subtract", bb, b))
    else:
        err = _bin("add", _bin("subtract", a, _bin("subtract", s, bb)), _bin("subtract", b, bb))
    return Pair(s, err)


def fast_two_sum(a: ir.Value, b: ir.Value) -> Pair:
    """``s = RN(a + b)`` and its exact error, for ``|a| >= |b|`` (or ``a = 0``)."""
    s = _bar(_bin("add", a, b))
    return Pair(s, _bin("subtract", b, _bin("subtract", s, a)))


def fast_two_diff(a: ir.Value, nb: ir.Value) -> Pair:
    """``fast_two_sum(a, b)`` given ``nb = -b``: ``s = RN(a - nb)`` and its
    exact error.  Where ``nb`` is +0, ``s`` is ``a`` with its sign: a
    negated error term that is never -0 leaves the zero IEEE gives the hi
    words (``-0 - (+0)`` is -0, where ``-0 + (+0)`` would be +0)."""
    s = _bar(_bin("subtract", a, nb))
    return Pair(s, _bin("subtract", _bin("subtract", a, s), nb))


_HALF_MASK = -4096  # 0xFFFFF000: sign, exponent and the top 12 significand bits
_SIGN_BIT = -(2**31)  # 0x80000000


def _halves(a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``a = ah + al`` with ``ah`` the top 12 bits of ``a``'s significand and
    ``al`` the remaining (at most 12) bits, both exact."""
    bits = _bitcast(a, i32())
    ah = _bitcast(_and(bits, _isplat(bits, _HALF_MASK)), f32())
    al = _bin("subtract", a, ah)
    return ah, al


def _halves_product(ah: ir.Value, al: ir.Value, bh: ir.Value, bl: ir.Value) -> ir.Value:
    """``a * b`` from the exact half-products, smallest first (within
    ``u * (1 + 2**-10)`` of the product; the same whether or not a backend
    contracts a product into an FMA with the sum, since each is exact)."""
    m = lambda x, y: _bin("multiply", x, y)  # noqa: E731
    return _bin("add", _bin("add", _bin("add", m(al, bl), m(al, bh)), m(ah, bl)), m(ah, bh))


def _rprod(a: ir.Value, b: ir.Value) -> ir.Value:
    """The product of two floats, rounded, built from exact half-products
    (a plain ``multiply`` followed by an add may be contracted into an FMA
    by the backend, and so give another result)."""
    return _halves_product(*_halves(a), *_halves(b))


def two_prod(a: ir.Value, b: ir.Value, negated: bool = False) -> Pair:
    """``p = RN(a * b)`` and its exact error (Dekker's product, from exact
    half-products; exact unless a partial product underflows); with
    ``negated``, the error negated (computed so, exactly: never -0)."""
    p = _bar(_bin("multiply", a, b))
    ah, al = _halves(a)
    bh, bl = _halves(b)
    m = lambda x, y: _bin("multiply", x, y)  # noqa: E731
    if negated:
        t = _bin("subtract", p, m(ah, bh))
        t = _bin("subtract", t, m(ah, bl))
        t = _bin("subtract", t, m(al, bh))
        return Pair(p, _bin("subtract", t, m(al, bl)))
    t = _bin("subtract", m(ah, bh), p)
    t = _bin("add", t, m(ah, bl))
    t = _bin("add", t, m(al, bh))
    err = _bin("add", t, m(al, bl))
    return Pair(p, err)


def finish(p: Pair) -> Pair:
    """``lo = 0`` where ``hi`` is not finite (inf, nan)."""
    fin = make("is_finite", [p.hi], tensor_type(p.shape, i1()))
    return Pair(p.hi, _sel(fin, p.lo, _fsplat(p.lo, 0.0)))


def _guard(z: Pair, plain: ir.Value) -> Pair:
    """``z``, or -- where ``plain`` (the op on the hi words alone) is not
    finite -- ``(plain, 0)``: an infinite or NaN operand or an overflow gives
    what f32 gives, where the error terms would be NaN."""
    fin = make("is_finite", [plain], tensor_type(shape_of(plain), i1()))
    return Pair(_sel(fin, z.hi, plain), _sel(fin, z.lo, _fsplat(plain, 0.0)))


# ------------------------------------------------------------- arithmetic
def add(x: Pair, y: Pair) -> Pair:
    """DWPlusDW (accurate): relative error <= 3u^2.  The terms added to
    the hi words' sum are carried negated and subtracted (the same words):
    none is -0, so a zero sum is the zero f32 gives the hi words, as IEEE
    signs it (``-0 + -0`` is -0, ``x - x`` is +0), at no cost."""
    s = two_sum(x.hi, y.hi, negated=True)
    t = two_sum(x.lo, y.lo, negated=True)
    nc = _bin("subtract", s.lo, t.hi)  # -(s's error + t.hi)
    v = fast_two_diff(s.hi, nc)
    nw = _bin("subtract", t.lo, v.lo)  # -(t's error + v's error)
    return finish(_guard(fast_two_diff(v.hi, nw), s.hi))


def negate(x: Pair) -> Pair:
    return Pair(_un("negate", x.hi), _un("negate", x.lo))


def subtract(x: Pair, y: Pair) -> Pair:
    return add(x, negate(y))


def _scaled(x: Pair, f: ir.Value) -> Pair:
    return Pair(_bin("multiply", x.hi, f), _bin("multiply", x.lo, f))


def _pick(p: ir.Value, a: float, q: ir.Value, b: float, like: ir.Value) -> ir.Value:
    """``a`` where ``p``, else ``b`` where ``q``, else 1."""
    return _sel(p, _fsplat(like, a), _sel(q, _fsplat(like, b), _fsplat(like, 1.0)))


#: Below this, the low half of a pair's lo word (about ``2**-36`` of the
#: value) may be subnormal, which backends flush, and a product of halves
#: of the value's size may underflow: losing up to ``2**-126``, more than
#: ``u^2`` of the value.  A factor, divisor, dividend or square root below
#: it is scaled up by a power of two first (exact).
_LOW = 2.0**-70
#: A factor that can be scaled down by ``2**32`` and stay above ``_LOW``.
_MID = 2.0**-38


def multiply(x: Pair, y: Pair) -> Pair:
    """DWTimesDW1 (no FMA): relative error <= 7u^2.  A factor below
    ``_LOW`` is scaled up by ``2**32`` and the other one down (both exact)
    where the other one is at least ``_MID``; where it is not, the product
    is below ``2**-108``, where its own lo word is below f32's normals.  The
    error terms are carried negated, as :func:`add`'s: a zero product is the
    zero f32 gives the hi words (``(-a) * 0`` is -0)."""
    ax, ay = _un("abs", x.hi), _un("abs", y.hi)
    low, mid = _fsplat(ax, _LOW), _fsplat(ax, _MID)
    up_x = _and(_cmp(ax, low, "LT"), _cmp(ay, mid, "GE"))
    up_y = _and(_cmp(ay, low, "LT"), _cmp(ax, mid, "GE"))
    x = _scaled(x, _pick(up_x, 2.0**32, up_y, 2.0**-32, ax))
    y = _scaled(y, _pick(up_x, 2.0**-32, up_y, 2.0**32, ay))
    c = two_prod(x.hi, y.hi, negated=True)
    t1, t2 = _rprod(x.hi, y.lo), _rprod(x.lo, y.hi)
    cl2 = _bin("add", t1, t2)
    ncl3 = _bin("subtract", c.lo, cl2)  # -(c's error + cl2), never -0 (as add's terms)
    return finish(_guard(fast_two_diff(c.hi, ncl3), c.hi))


def _times_float(x: Pair, y: ir.Value) -> Pair:
    """DWTimesFP1 (no FMA): the pair ``x * y`` for a float ``y``."""
    c = two_prod(x.hi, y)
    cl2 = _rprod(x.lo, y)
    t = fast_two_sum(c.hi, cl2)
    tl2 = _bin("add", t.lo, c.lo)
    return fast_two_sum(t.hi, tl2)


def divide(x: Pair, y: Pair, div_ulp: float = 0.5) -> Pair:
    """DWDivDW2 with a product by a float without FMA: relative error <= 15u^2
    where f32 division is correctly rounded.  A divisor below ``_LOW`` is
    scaled up by ``2**32``, and the dividend with it; a dividend still
    below ``_LOW`` is scaled up by ``2**32`` alone, and the quotient down by
    as much (all exact, but for a quotient whose lo word is below f32's
    normals).

    The f32 quotient ``th`` need only be close: the residual ``x - th * y``
    is computed exactly (a pair product and TwoSum) and the correction
    ``tl`` is the residual over the divisor.  Where the device's f32
    division is within ``div_ulp`` > 0.5 ulps rather than correctly
    rounded, ``th`` may be further off (so ``tl`` larger), and ``tl`` is
    refined by its own residual (:func:`_refined_quotient`), so that the
    division's error falls on a term ``2**-22`` times smaller: the bound is
    then :func:`error_bounds`' ``divide``."""
    ay = _un("abs", y.hi)
    up = _cmp(ay, _fsplat(ay, _LOW), "LT")
    f = _sel(up, _fsplat(ay, 2.0**32), _fsplat(ay, 1.0))
    x, y = _scaled(x, f), _scaled(y, f)
    ax = _un("abs", x.hi)
    up_x = _cmp(ax, _fsplat(ax, _LOW), "LT")
    x = _scaled(x, _sel(up_x, _fsplat(ax, 2.0**32), _fsplat(ax, 1.0)))
    back = _sel(up_x, _fsplat(ax, 2.0**-32), _fsplat(ax, 1.0))
    # (a divisor the compiler can see as a constant would become a product
    # by its rounded reciprocal)
    y = Pair(_bar(y.hi), y.lo)
    th = _bin("divide", x.hi, y.hi)
    r = _times_float(y, th)
    pi = two_sum(x.hi, _un("negate", r.hi))
    dh = _bin("subtract", pi.lo, r.lo)
    dl = _bin("add", dh, x.lo)
    d = _bin("add", pi.hi, dl)
    tl = _bin("divide", d, y.hi)
    if div_ulp > 0.5:
        tl = _refined_quotient(d, y.hi, tl)
    z = fast_two_sum(th, tl)
    # th is what f32 division gives where y.hi is 0 or either is not finite,
    # and the zero IEEE gives (signed) where the quotient is zero
    ok = _and(make("is_finite", [z.hi], tensor_type(x.shape, i1())), _cmp(z.hi, _fsplat(z.hi, 0.0), "NE"))
    return finish(_scaled(Pair(_sel(ok, z.hi, th), _sel(ok, z.lo, _fsplat(th, 0.0))), back))


def _refined_quotient(d: ir.Value, b: ir.Value, t: ir.Value) -> ir.Value:
    """``t``, an f32 quotient ``d / b`` within a few ulps, corrected by its
    residual: ``t + (d - t * b) / b``.  The residual is rounded once or
    twice (a few ``u`` of ``d`` off, whether or not the product is fused
    into the difference) and its quotient is a few ulps of ``t`` in size,
    so its division's error is negligible: the result is within about
    ``2u`` of ``d / b`` (a correctly rounded quotient: ``u``)."""
    e = _bin("subtract", d, _bin("multiply", t, b))
    return _bin("add", t, _bin("divide", e, b))


def sqrt(x: Pair, sqrt_ulp: float = 0.5, div_ulp: float = 0.5) -> Pair:
    """One Newton step from the f32 square root: ``s + (x - s*s) / 2s``
    (relative error a few u^2; 0, inf and nan as f32's sqrt has them).  An
    operand below ``_LOW`` is scaled up by ``2**64`` first, and the root
    down by ``2**32`` (both exact).

    The residual ``x - s*s`` is exact (TwoProduct) whatever ``s`` is, and
    the step leaves ``(s - sqrt(x))**2 / 2s``.  Where the device's f32
    root or division is not correctly rounded (``sqrt_ulp`` or ``div_ulp``
    above 0.5), ``s`` is first refined by one Newton step in f32 from the
    same kind of exact residual, ``s + RN(x.hi - s*s) / 2s`` (within about
    ``1.1u`` of ``sqrt(x.hi)`` however far within a few ulps ``s`` was),
    and the pair step's division is refined as :func:`divide` refines its
    own: the bound is then :func:`error_bounds`' ``sqrt``."""
    small = _cmp(x.hi, _fsplat(x.hi, _LOW), "LT")
    x = _scaled(x, _sel(small, _fsplat(x.hi, 2.0**64), _fsplat(x.hi, 1.0)))
    down = _sel(small, _fsplat(x.hi, 2.0**-32), _fsplat(x.hi, 1.0))
    s0 = _un("sqrt", x.hi)
    s = s0
    faithful = sqrt_ulp > 0.5 or div_ulp > 0.5
    if faithful:
        sq0 = two_prod(s0, s0)
        r0 = _bin("subtract", _bin("subtract", x.hi, sq0.hi), sq0.lo)
        s1 = _bar(_bin("add", s0, _bin("divide", r0, _bin("add", s0, s0))))
        # (where s0 is 0, inf or nan the step is not finite: s0 is kept)
        fin = _and(make("is_finite", [s1], tensor_type(x.shape, i1())), _cmp(s0, _fsplat(s0, 0.0), "NE"))
        s = _sel(fin, s1, s0)
    sq = two_prod(s, s)
    r = _bin("add", _bin("subtract", _bin("subtract", x.hi, sq.hi), sq.lo), x.lo)
    s2 = _bin("add", s, s)
    t = _bin("divide", r, s2)
    if faithful:
        t = _refined_quotient(r, s2, t)
    z = fast_two_sum(s, t)
    zero = _fsplat(s, 0.0)
    ok = _and(make("is_finite", [s], tensor_type(x.shape, i1())), _cmp(s, zero, "NE"))
    return finish(_scaled(Pair(_sel(ok, z.hi, s0), _sel(ok, z.lo, zero)), down))


#: The largest error of f32 division or square root, in ulps, for which
#: :func:`error_bounds` holds (its terms of order ``ulps * u`` stay small).
MAX_QUOTIENT_ULP = 1024.0


def error_bounds(div_ulp: float = 0.5, sqrt_ulp: float = 0.5) -> dict[str, float]:
    """The relative error bounds of the pair ops, in units of ``u^2``
    (``u = 2**-24``), on a device whose f32 add, subtract and multiply round
    correctly (TwoSum and TwoProduct exact) and whose division and square
    root are within ``div_ulp`` and ``sqrt_ulp`` ulps (0.5: correctly
    rounded), up to :data:`MAX_QUOTIENT_ULP`; for operands and results
    between ``2**-70`` and ``2**120`` in magnitude.

    * ``add``, ``subtract`` 3, ``multiply`` 7: DWPlusDW and DWTimesDW1
      (Joldes, Muller, Popescu 2017); no division or root in them.
    * ``divide``: 15 (DWDivDW2) with a correctly rounded division.  With
      one within ``k`` ulps, the f32 quotient ``th`` is within ``(2k + 2)u``
      of ``x / y``, the residual ``x - th * y`` is computed within ``(2k +
      6.5)u^2 |x|`` (the pair product's ``1.5u^2``, three roundings of
      terms at most ``u |x|``, ``u |x|`` and ``(2k + 2)u |x|``), and the
      refined correction is within ``2u`` of the residual over ``y.hi``
      (``y.lo`` neglected: ``u``): ``(2k + 2) * 3 + (2k + 6.5) = 8k + 12.5``.
    * ``sqrt``: 4 with a correctly rounded root and division (one Newton
      step from the f32 root ``s`` of ``x.hi``, measured within 2.5).  With
      either not correctly rounded, ``s`` is first refined to within about
      ``1.001u`` of ``sqrt(x.hi)`` by an f32 Newton step, so ``|s -
      sqrt(x)| <= 1.5u sqrt(x)`` as a correctly rounded root is: the pair
      step leaves ``(s - sqrt x)^2 / 2s <= 1.125u^2``, its residual's two
      roundings at most ``3u^2`` and its refined division (within ``2u`` of
      a correction of at most ``1.5u``) ``3u^2``: 8."""
    for name, ulp in (("div_ulp", div_ulp), ("sqrt_ulp", sqrt_ulp)):
        if not 0.5 <= ulp <= MAX_QUOTIENT_ULP:
            raise ValueError(f"{name} must be within [0.5, {MAX_QUOTIENT_ULP:g}], not {ulp!r}")
    faithful = div_ulp > 0.5 or sqrt_ulp > 0.5
    return {"add": 3.0, "subtract": 3.0, "multiply": 7.0,
            "divide": 15.0 if div_ulp == 0.5 else 8.0 * div_ulp + 12.5,
            "sqrt": 8.0 if faithful else 4.0}


def remainder(x: Pair, y: Pair, div_ulp: float = 0.5) -> Pair:
    """``fmod``: ``x - trunc(x / y) * y``, with ``x``'s sign and below
    ``|y|`` in magnitude (as XLA's float64 ``remainder``).  The quotient is
    truncated from the pair quotient and corrected by one ``|y|`` where
    that put the result on the wrong side; the product ``trunc(x/y) * y``
    is a pair product, so the result is exact to about ``2**-44 * |x|``
    (exact where ``|x / y|`` is small enough that the product fits in a
    pair).  NaN where ``y`` is 0 or ``x`` is not finite; ``x`` where ``y``
    is infinite; a zero result carries ``x``'s sign."""
    q = divide(x, y, div_ulp)
    whole = select(compare("GE", q, from_f32(_fsplat(q.hi, 0.0))), floor(q), ceil(q))
    r = subtract(x, multiply(whole, y))
    zero = from_f32(_fsplat(x.hi, 0.0))
    ay = absolute(y)
    x_neg = _cmp(x.hi, _fsplat(x.hi, 0.0), "LT")
    step = select(x_neg, negate(ay), ay)  # |y| with x's sign
    # the wrong side of zero: one |y| back; one |y| or more: one |y| less
    wrong = _or(_and(x_neg, compare("GT", r, zero)), _and(_un("not", x_neg), compare("LT", r, zero)))
    r = select(wrong, add(r, step), r)
    over = compare("GE", absolute(r), ay)
    r = select(over, subtract(r, step), r)
    # signs and special values
    r = Pair(_signed_as(r.hi, x.hi), r.lo)
    finite_x = make("is_finite", [x.hi], tensor_type(x.shape, i1()))
    inf_y = _and(_un("not", make("is_finite", [y.hi], tensor_type(x.shape, i1()))), _cmp(y.hi, y.hi, "EQ"))
    nan = _or(_un("not", finite_x), _cmp(y.hi, _fsplat(y.hi, 0.0), "EQ"))
    nan = _or(nan, _cmp(y.hi, y.hi, "NE"))
    r = select(inf_y, x, r)
    return select(nan, from_f32(_fsplat(x.hi, float("nan"))), r)


# ------------------------------------------------------------ comparisons
def compare(direction: str, x: Pair, y: Pair, kind: str = "FLOAT") -> ir.Value:
    """``x <direction> y`` on normalized pairs (``i1``): the hi words
    decide unless equal, then the lo words.  With ``kind="FLOAT"`` NaN
    compares unordered, as in IEEE (only ``NE`` is true); with
    ``"TOTALORDER"`` the hi words are compared in IEEE's total order (as
    sort comparators do)."""
    eq_hi = _cmp(x.hi, y.hi, "EQ", kind)
    if direction == "EQ":
        return _and(eq_hi, _cmp(x.lo, y.lo, "EQ"))
    if direction == "NE":
        return _or(_cmp(x.hi, y.hi, "NE", kind), _cmp(x.lo, y.lo, "NE"))
    strict = {"LT": "LT", "LE": "LT", "GT": "GT", "GE": "GT"}[direction]
    return _or(_cmp(x.hi, y.hi, strict, kind), _and(eq_hi, _cmp(x.lo, y.lo, direction)))


def select(p: ir.Value, x: Pair, y: Pair) -> Pair:
    return Pair(_sel(p, x.hi, y.hi), _sel(p, x.lo, y.lo))


def _is_neg_zero(v: ir.Value) -> ir.Value:
    bits = _bitcast(v, i32())
    return _cmp(bits, _isplat(bits, _SIGN_BIT), "EQ")


def minmax(kind: str, x: Pair, y: Pair) -> Pair:
    """``maximum``/``minimum``: NaN if either is NaN, and -0 below +0 (as
    XLA's float64 ones)."""
    strict = "GT" if kind == "max" else "LT"
    eq_hi = _cmp(x.hi, y.hi, "EQ")
    pick_x = _or(_cmp(x.hi, y.hi, strict), _and(eq_hi, _cmp(x.lo, y.lo, strict)))
    # equal zeros: x where it is the maximum (y is -0) or the minimum (x is -0)
    pick_x = _or(pick_x, _and(eq_hi, _is_neg_zero(y.hi if kind == "max" else x.hi)))
    pick_x = _or(pick_x, _cmp(x.hi, x.hi, "NE"))  # x is NaN
    return select(pick_x, x, y)


def absolute(x: Pair) -> Pair:
    neg = _cmp(x.hi, _fsplat(x.hi, 0.0), "LT")
    return Pair(_un("abs", x.hi), _sel(neg, _un("negate", x.lo), x.lo))


def sign(x: Pair) -> Pair:
    """-1, 0 or 1 (signed zeros and NaN kept), as the f64 ``sign``."""
    return Pair(_un("sign", x.hi), _fsplat(x.lo, 0.0))


def _signed_as(v: ir.Value, x: ir.Value) -> ir.Value:
    """``v`` with ``x``'s sign bit set in it: a zero ``v`` signed as ``x``
    (for a result whose sign is always its operand's, as a rounding's)."""
    bits = _bitcast(x, i32())
    return _bitcast(_or(_bitcast(v, i32()), _and(bits, _isplat(bits, _SIGN_BIT))), f32())


def _is_integral(v: ir.Value) -> ir.Value:
    return _cmp(_un("floor", v), v, "EQ")


def floor(x: Pair) -> Pair:
    """The exact floor: where ``hi`` is an integer, ``hi + floor(lo)``;
    elsewhere ``floor(hi)`` (``|lo|`` is below ``hi``'s distance to the
    next integer)."""
    fh = _un("floor", x.hi)
    whole = _cmp(fh, x.hi, "EQ")
    lo = _sel(whole, _un("floor", x.lo), _fsplat(x.lo, 0.0))
    z = fast_two_sum(fh, lo)
    return finish(Pair(_signed_as(z.hi, x.hi), z.lo))


def ceil(x: Pair) -> Pair:
    return negate(floor(negate(x)))


def _round(x: Pair, name: str) -> Pair:
    """``round_nearest_even``/``_afz``: where ``hi`` is an integer, ``hi``
    plus ``lo`` rounded; elsewhere ``hi`` rounded, except that a ``hi``
    exactly halfway between integers goes the way ``lo`` points."""
    rh = _un(name, x.hi)
    fh = _un("floor", x.hi)
    whole = _cmp(fh, x.hi, "EQ")
    zero = _fsplat(x.lo, 0.0)
    half = _cmp(_bin("subtract", x.hi, fh), _fsplat(x.hi, 0.5), "EQ")
    up = _cmp(x.lo, zero, "GT")
    down = _cmp(x.lo, zero, "LT")
    ch = _bin("add", fh, _fsplat(fh, 1.0))
    rh = _sel(_and(half, up), ch, _sel(_and(half, down), fh, rh))
    lo = _sel(whole, _un(name, x.lo), zero)
    z = fast_two_sum(rh, lo)
    return finish(Pair(_signed_as(z.hi, x.hi), z.lo))


def round_even(x: Pair) -> Pair:
    return _round(x, "round_nearest_even")


def round_afz(x: Pair) -> Pair:
    return _round(x, "round_nearest_afz")


# ------------------------------------------------------------- neighbours
_TINY_BITS = 0x00800000  # f32's smallest normal, 2**-126
_TINY = 2.0**-126
_F32_MAX = float(np.finfo(np.float32).max)
#: The largest finite pair: f32's largest value and the largest f32 below
#: half its ulp (``2**103``), which rounds to it (``FLT_MAX + 2**103`` is
#: f32's overflow threshold); a float64 value (``2**103 - 2**79`` is a
#: multiple of float64's spacing there, ``2**75``).
PAIR_LARGEST = (_F32_MAX, 2.0**103 - 2.0**79)


def _step(v: ir.Value, by: int) -> ir.Value:
    """The f32 ``by`` steps from ``v`` (of either sign) away from zero
    (``by`` > 0) or toward it: its bits moved as an integer."""
    bits = _bitcast(v, i32())
    return _bitcast(_bin("add", bits, _isplat(bits, by)), f32())


def _normal_or_zero(v: ir.Value) -> ir.Value:
    """``v``, or +0 where it is below f32's smallest normal in magnitude
    (a word the pairs never hold: backends flush it), read on its bits."""
    bits = _bitcast(v, i32())
    mag = _and(bits, _isplat(bits, 0x7FFFFFFF))
    return _sel(_cmp(mag, _isplat(mag, _TINY_BITS), "LT"), _fsplat(v, 0.0), v)


def _pow2(e: ir.Value) -> ir.Value:
    """``2**e`` as f32, for an ``i32`` ``e`` in [-126, 127]."""
    biased = _bin("add", e, _isplat(e, 127))
    return _bitcast(make("shift_left", [biased, _isplat(e, 23)], biased.type), f32())


def _scaled_by(v: ir.Value, e: ir.Value) -> ir.Value:
    """``v * 2**e`` for ``e`` in [-252, 254], as two exact products (each
    factor an f32; the first product lies between ``v`` and the result)."""
    a = make("shift_right_arithmetic", [e, _isplat(e, 1)], e.type)
    return _bin("multiply", _bin("multiply", v, _pow2(a)), _pow2(_bin("subtract", e, a)))


def _lo_up(lo: ir.Value, inv_q: ir.Value) -> ir.Value:
    """The least f32 above ``lo`` that is zero or normal (the words a pair
    keeps) and a multiple of ``q = 2**-inv_q`` (float64's spacing where the
    value lies): the larger of the next such f32 (``2**-126`` above a
    zero, +0 above ``-2**-126``) and the next multiple of ``q``.  Either is
    below the answer; one is it: where f32's spacing at ``lo`` is ``q`` or
    more, every f32 there is a multiple, and where it is less, the next
    multiple of ``q`` is an f32.  The multiple is ``(floor(lo / q) + 1) q``,
    each step exact (the quotient below ``2**24`` where it is the answer);
    a quotient below f32's normals is flushed to a zero, whose floor is -1
    for a negative ``lo``."""
    zero = _fsplat(lo, 0.0)
    neg = _cmp(lo, zero, "LT")
    up = _sel(_cmp(lo, zero, "GT"), _step(lo, 1), _normal_or_zero(_step(lo, -1)))
    up = _sel(_cmp(lo, zero, "EQ"), _fsplat(lo, _TINY), up)
    k = _un("floor", _scaled_by(lo, inv_q))
    k = _sel(_and(neg, _cmp(k, zero, "EQ")), _fsplat(lo, -1.0), k)
    multiple = _normal_or_zero(_scaled_by(_bin("add", k, _fsplat(k, 1.0)), _un("negate", inv_q)))
    return _bin("maximum", up, multiple)


def _is_even(v: ir.Value) -> ir.Value:
    bits = _bitcast(v, i32())
    return _cmp(_and(bits, _isplat(bits, 1)), _isplat(bits, 0), "EQ")


def _half_gap(near: ir.Value, far: ir.Value) -> ir.Value:
    """The largest ``|lo|`` a pair whose hi is ``near`` may have on the side
    of its neighbour ``far``: half their distance where ``near`` is even
    (a halfway sum rounds to it), the f32 below that where it is odd, 0
    where that is not a normal f32 (both multiples of float64's spacing
    there).  ``|far - near|`` is exact (the two are adjacent f32s; below
    ``2**-103`` it is subnormal, flushed or not, and the result 0 either
    way)."""
    half = _normal_or_zero(_bin("multiply", _un("abs", _bin("subtract", far, near)), _fsplat(near, 0.5)))
    zero = _fsplat(near, 0.0)
    # (the step below a zero would be a NaN's bits)
    below = _sel(_cmp(half, zero, "EQ"), zero, _normal_or_zero(_step(half, -1)))
    return _sel(_is_even(near), half, below)


def _inverse_spacing(h: ir.Value, lo: ir.Value, below: str) -> ir.Value:
    """``-log2`` of float64's spacing at the values beside the positive pair
    ``(h, lo)`` on one side: ``2**(e - 52)`` for ``h``'s exponent ``e``,
    half that where ``h`` is a power of two and ``lo`` is ``below`` 0
    (``"LT"``, ``"LE"``: the values there lie in the binade below)."""
    bits = _bitcast(h, i32())
    biased = _and(make("shift_right_logical", [bits, _isplat(bits, 23)], bits.type), _isplat(bits, 0xFF))
    inv = _bin("subtract", _isplat(bits, 127 + 52), biased)
    power = _cmp(_and(bits, _isplat(bits, 0x7FFFFF)), _isplat(bits, 0), "EQ")
    halved = _and(power, _cmp(lo, _fsplat(lo, 0.0), below))
    return _bin("add", inv, _sel(halved, _isplat(inv, 1), _isplat(inv, 0)))


def _successor(h: ir.Value, lo: ir.Value) -> Pair:
    """The least float64 pair above the positive finite pair ``(h, lo)``:
    ``h`` with the next lo (:func:`_lo_up`) where ``h`` stays its rounding,
    else the next f32 ``h2`` with the most negative lo it admits (inf
    where ``h`` is f32's largest)."""
    up = _lo_up(lo, _inverse_spacing(h, lo, "LT"))
    keeps = _cmp(_bar(_bin("add", h, up)), h, "EQ")
    h2 = _step(h, 1)
    lo2 = _sel(make("is_finite", [h2], tensor_type(shape_of(h2), i1())), _un("negate", _half_gap(h2, h)),
               _fsplat(h, 0.0))
    return Pair(_sel(keeps, h, h2), _sel(keeps, up, lo2))


def _predecessor(h: ir.Value, lo: ir.Value) -> Pair:
    """The greatest float64 pair below the positive pair ``(h, lo)``: ``h``
    with the next lo down where ``h`` stays its rounding, else the f32
    ``h0`` below ``h`` with the largest lo it admits; +0 below f32's
    smallest normal, :data:`PAIR_LARGEST` below inf."""
    down = _un("negate", _lo_up(_un("negate", lo), _inverse_spacing(h, lo, "LE")))
    keeps = _cmp(_bar(_bin("add", h, down)), h, "EQ")
    h0 = _step(h, -1)
    lo0 = _half_gap(h0, h)
    bits = _bitcast(h, i32())
    smallest = _cmp(bits, _isplat(bits, _TINY_BITS), "EQ")
    h0 = _sel(smallest, _fsplat(h, 0.0), h0)
    lo0 = _sel(smallest, _fsplat(h, 0.0), lo0)
    r = Pair(_sel(keeps, h, h0), _sel(keeps, down, lo0))
    inf = _un("not", make("is_finite", [h], tensor_type(shape_of(h), i1())))
    return Pair(_sel(inf, _fsplat(h, PAIR_LARGEST[0]), r.hi), _sel(inf, _fsplat(h, PAIR_LARGEST[1]), r.lo))


def next_after(x: Pair, y: Pair) -> Pair:
    """``nextafter(x, y)``: the neighbour of ``x`` toward ``y`` among the
    float64 values a pair holds -- normalized pairs ``hi + lo`` whose words
    are normal f32s or zeros (the words backends keep) and whose value is
    a float64.  So the result is float64's own ``nextafter`` wherever that
    is such a pair (``nextafter(1, 2)`` is ``1 + 2**-52``, ``nextafter(1,
    0)`` is ``1 - 2**-53``), and otherwise the nearest pair beyond ``x``
    that is a float64 (the step is one ulp of ``lo`` where that is more
    than float64's: ``0.1``'s pair steps by ``2**-53``, not ``2**-56``; where
    ``lo`` can go no further beside the same hi, the next hi with the
    most negative lo its rounding allows): no float64 value a pair holds lies strictly
    between ``x`` and the result, and it comes back from the pair as a
    float64 unchanged.  A pair that is no float64 (``1 + 2**-100``,
    which arithmetic may give) moves to the nearest such value beyond it.

    ``y`` where ``x == y`` (``nextafter(0, -0)`` is -0), NaN where either
    is NaN, ``+-2**-126`` (the least pair: f32's smallest normal) from a
    zero, a zero of ``x``'s sign toward zero from ``+-2**-126``,
    :data:`PAIR_LARGEST` (f32's largest value and ``2**103 - 2**79``) from
    ``inf``, and ``inf`` beyond it.  For normalized pairs, as every pair op
    gives them."""
    zero = _fsplat(x.hi, 0.0)
    neg = _cmp(x.hi, zero, "LT")
    up = compare("LT", x, y)
    away = _bin("xor", up, neg)
    a = absolute(x)
    s, p = _successor(a.hi, a.lo), _predecessor(a.hi, a.lo)
    m = select(away, s, p)
    r = select(neg, negate(m), m)
    least = Pair(_sel(up, _fsplat(x.hi, _TINY), _fsplat(x.hi, -_TINY)), zero)
    r = select(_cmp(x.hi, zero, "EQ"), least, r)
    r = select(compare("EQ", x, y), y, r)
    nan = _or(_cmp(x.hi, x.hi, "NE"), _cmp(y.hi, y.hi, "NE"))
    return select(nan, Pair(_fsplat(x.hi, float("nan")), zero), r)


# --------------------------------------------------------------- converts
def from_f32(v: ir.Value) -> Pair:
    return Pair(v, _fsplat(v, 0.0))


def from_float(v: ir.Value) -> Pair:
    """The pair of an f32, f16 or bf16 tensor (exact)."""
    return from_f32(_convert(v, f32()))


def to_f32(x: Pair) -> ir.Value:
    """The pair rounded once to f32 (``hi`` where ``lo`` is zero: a -0 stays
    -0)."""
    return _sel(_cmp(x.lo, _fsplat(x.lo, 0.0), "EQ"), x.hi, _bin("add", x.hi, x.lo))


def to_float(x: Pair, elem: ir.Type) -> ir.Value:
    """The pair rounded to ``elem`` (f32 once; f16/bf16 from the f32
    rounding, as a double rounding)."""
    return _convert(to_f32(x), elem)


def _int_chunks_to_pair(chunks: list[tuple[ir.Value, float]]) -> Pair:
    """The pair of ``sum(chunk * scale)``, chunks exact in f32 and given
    from the most significant one down."""
    acc: Pair | None = None
    for v, scale in chunks:
        f = _convert(v, f32())
        if scale != 1.0:
            f = _bin("multiply", f, _fsplat(f, scale))
        acc = from_f32(f) if acc is None else add(acc, from_f32(f))
    assert acc is not None
    return acc


def from_int(v: ir.Value) -> Pair:
    """The pair of an integer tensor: exact for every 32-bit or narrower
    integer and for 64-bit integers below ``2**48`` in magnitude (beyond,
    within ``2**-48`` relative).  A 64-bit integer is split with 64-bit
    integer ops (which the pass narrows or computes on words)."""
    e = ir.IntegerType(ir.RankedTensorType(v.type).element_type)
    if e.width <= 16:
        return from_f32(_convert(v, f32()))
    if e.width == 32:
        # the top 24 bits and the low 8, each exact in f32
        high = _and(v, _isplat(v, -256 if not e.is_unsigned else 0xFFFFFF00))
        low = _and(v, _isplat(v, 255))
        return _int_chunks_to_pair([(high, 1.0), (low, 1.0)])
    shr = "shift_right_logical" if e.is_unsigned else "shift_right_arithmetic"
    top = make(shr, [v, _isplat(v, 48)], v.type)
    mid = _and(make(shr, [v, _isplat(v, 24)], v.type), _isplat(v, 0xFFFFFF))
    low = _and(v, _isplat(v, 0xFFFFFF))
    return _int_chunks_to_pair([(top, 2.0**48), (mid, 2.0**24), (low, 1.0)])


def to_int(x: Pair, elem: ir.Type) -> ir.Value:
    """The pair truncated toward zero, as integer type ``elem``; beyond
    the type's range saturated, NaN to 0 (as XLA's converts).  For a 64-bit
    ``elem`` this builds 64-bit integer ops (for the pass to narrow or
    compute on words)."""
    e = ir.IntegerType(elem)
    w = e.width
    if w == 1:
        return _cmp(x.hi, _fsplat(x.hi, 0.0), "NE")
    neg = _cmp(x.hi, _fsplat(x.hi, 0.0), "LT")
    t = select(neg, ceil(x), floor(x))
    if w <= 16:
        return _convert(to_f32(t), elem)
    # hi converted whole, or -- where it may be the type's bound 2**(w-1)
    # (2**w unsigned), which the type cannot hold while the pair's value
    # can -- as twice its half; lo converted signed and added wrapping
    big_at = 2.0 ** (w - 1) if e.is_unsigned else 2.0 ** (w - 2)
    big = _cmp(_un("abs", t.hi), _fsplat(t.hi, big_at), "GE")
    half = _convert(_bin("multiply", t.hi, _fsplat(t.hi, 0.5)), elem)
    ih = _sel(big, _bin("add", half, half), _convert(t.hi, elem))
    signed = ir.IntegerType.get_signless(w)
    il = _convert(t.lo, signed)
    if e.is_unsigned:
        il = _bitcast(il, elem)
    r = _bin("add", ih, il)
    # saturation and NaN, as XLA's float-to-integer converts
    top = 2.0**w if e.is_unsigned else 2.0 ** (w - 1)
    bottom = 0.0 if e.is_unsigned else -(2.0 ** (w - 1))
    info_max = (1 << w) - 1 if e.is_unsigned else (1 << (w - 1)) - 1
    info_min = 0 if e.is_unsigned else -(1 << (w - 1))
    # on the whole pair: beside a bound, hi may be the bound itself (2**64
    # for 2**64 - 2048) while the pair's value is inside
    over = compare("GE", t, from_f32(_fsplat(t.hi, top)))
    under = compare("LT", t, from_f32(_fsplat(t.hi, bottom)))
    nan = _cmp(x.hi, x.hi, "NE")
    r = _sel(over, _isplat(r, info_max), r)
    r = _sel(under, _isplat(r, info_min), r)
    return _sel(nan, _isplat(r, 0), r)
