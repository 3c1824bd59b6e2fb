"""A ``dot_general`` on float64 pairs as exact f32 ``dot_general``s (the Ozaki scheme).

Both operands are laid out ``batch x free x contracting`` (``[B, R, K]``;
the lhs's rows and the rhs's columns alike) and each *row* (a batch and
free index of either operand, along the contraction) is handled on its own:

1. **Exact scaling.**  The row is multiplied by the power of two that puts
   its largest hi word in ``[2, 4)`` (from the exponent bits of its
   maximum; a zero row is left alone).  Products of power-of-two scalings
   of pairs are exact, so a row near f32's overflow or underflow loses
   nothing; the result is scaled back by the two rows' powers at the end,
   overflowing or underflowing only where the result does.
2. **Exact slices on a common grid.**  The scaled row ``x`` (every
   ``|x| < 4``) is cut into ``s`` slices, slice ``i`` an integer multiple
   of ``g_i = 2**(2 - i*beta)`` of magnitude at most ``2**beta * g_i``:
   ``slice = (h + sigma_i) - sigma_i`` with ``sigma_i = 1.5 * 2**23 * g_i``
   rounds the running remainder's hi word ``h`` to the grid, and the
   remainder ``(h - slice) + l`` is taken exactly again as a pair
   (TwoSum).  After ``s`` slices the remainder is below ``g_s / 2``.
3. **Exact f32 products.**  The contraction is cut into chunks of ``c``
   elements with ``c * 2**(2*beta) <= 2**24``; a chunk's dot of slice
   ``i`` of a lhs row and slice ``j`` of a rhs column is then a sum of
   integer multiples of ``g_i * g_j`` each at most ``2**(2*beta)`` units,
   every partial sum below ``2**24`` units: exact in f32 in any order of
   summation.  Each is one f32 ``dot_general`` with
   ``precision_config = [HIGHEST, HIGHEST]`` (so that no backend computes
   it in bf16 or TF32); the chunks are a batch dimension of it.  Only the
   products ``i + j <= s + 1`` are formed: ``s * (s + 1) / 2`` dots.
4. **Pair sums.**  The exact products are added as pairs (DWPlusDW, each
   addition ``<= 3u^2``) by blocked sums (variadic ``reduce``s, as the
   pair rules sum; a chain of pair additions between the dots makes XLA's
   compile time grow exponentially): the levels ``i + j >= 3`` smallest
   first, the leading products ``i = j = 1`` apart, and the two added.

**Bound.**  With ``u = 2**-24``, ``P = s (s + 1) / 2`` products and ``C``
chunks, for every output element ``(i, j)`` of pair operands ``A`` and
``B`` (contraction length ``k``)::

    |C_ij - (AB)_ij| <= eps(k) * k * max_l |A_il| * max_l |B_lj| + 2**-125

    eps(k) = (s + 1) * 2**(2 - s*beta)                         (dropped slices)
           + 3u^2 * 4.04 (1 + d)^2 * (w(C) + 2d * w((P-1) C) + 1)  (pair sums)

with ``d = 2**-beta / (1 - 2**-beta)`` and ``w(n)`` the additions of a
blocked sum of ``n`` terms, each level counted ``min(n_level, 16)`` times
(``w(1) = 0``).  The products of slice levels ``i + j >= 3`` (all below
``2d`` of the rest) are summed as pairs in blocks, smallest first, the
leading products over the chunks likewise, and the two added last.  The
absolute ``2**-125`` is f32's range: scaled back, a result below about
``2**-102`` has its lo word flushed (below ``2**-126``, its hi word too),
as every pair there.
:func:`plan` computes ``beta``, ``s``, the chunk and
``eps`` for a contraction length; ``beta`` is chosen so that the f32 dots
are exact, ``s`` so that the dropped slices cost at most ``2**-48``.
The bound is relative to the *largest* magnitudes of the row and the
column, not to ``(|A| |B|)_ij``: the slices share the row's grid, so an
element far below its row's largest (``2**-60`` of it) keeps only the
bits above ``2**-50`` or so of that largest.  Where a row's magnitudes
are alike the two agree within a factor of ``k``.

**Inf and NaN.**  A row or column holding an inf or a NaN is left out of
the scaling (its finite elements are sliced as usual) and every output it
reaches is the f32 ``dot_general`` of the hi words (HIGHEST): inf where
float64 gives inf, NaN where it gives NaN (``inf * 0``, ``inf - inf``, a
NaN operand) -- but for a finite product that overflows f32 beside an
infinite one of the other sign (NaN here, an infinity in float64).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ir import pairs as P
from ..ir._mlir import ir, stablehlo
from ..ir.words import build, i32, make

__all__ = ["SplitPlan", "plan", "split_dot", "CHUNK_CANDIDATES", "SPLIT_ACCURACY"]

#: The dropped slices cost at most this, relative to ``k`` times the row's
#: and the column's largest magnitudes (pairs claim about 48 bits).
SPLIT_ACCURACY = 2.0**-48

#: Chunk lengths the planner considers (powers of two; a contraction shorter
#: than one is taken whole).
CHUNK_CANDIDATES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)

#: What one pair addition of an ``m x n`` result costs against one
#: multiply-add of a dot of the same result (the planner's cost model; on
#: the CPU backend a pair addition in a blocked reduce costs about a
#: thousand: at 512 x 512, one chunk of 512 (36 dots) took 150 ms where two
#: chunks of 256 (56 dots of half the length) took 200 ms).
_ADD_COST = 1000.0

_U2 = 2.0**-48
_SUM_BLOCK = 16


@dataclass(frozen=True)
class SplitPlan:
    """How a contraction of ``k`` elements is split."""

    k: int
    chunk: int  #: contraction elements per f32 dot
    chunks: int  #: the contraction padded with zeros to ``chunks * chunk``
    beta: int  #: bits per slice
    slices: int  #: slices per row

    @property
    def products(self) -> int:
        """The f32 dots formed: slice pairs ``i + j <= slices + 1``."""
        return self.slices * (self.slices + 1) // 2

    @property
    def eps(self) -> float:
        """The bound's factor (see the module's docstring)."""
        s, b = self.slices, self.beta
        drop = (s + 1) * 2.0 ** (2 - s * b)
        d = 2.0**-b / (1 - 2.0**-b)
        q = 1 - 1 / (1 + d) ** 2
        w_small = _weight((self.products - 1) * self.chunks) if self.products > 1 else 0
        sums = 3 * _U2 * 4 * (1 + d) ** 2 * 1.01 * (_weight(self.chunks) + q * w_small + 1)
        return drop + sums


def _weight(n: int) -> int:
    """``w(n)``: the additions of a blocked sum of ``n`` terms, each level's
    blocks counted ``min(n_level, 16)`` times (0 for one term)."""
    w = 0
    while n > 1:
        w += min(n, _SUM_BLOCK)
        n = -(-n // _SUM_BLOCK)
    return w


def _beta(chunk: int) -> int:
    """The most bits per slice that keep a dot over ``chunk`` elements exact."""
    return min(12, (24 - math.ceil(math.log2(max(chunk, 1)))) // 2)


def _slices(beta: int) -> int:
    s = 1
    while (s + 1) * 2.0 ** (2 - s * beta) > SPLIT_ACCURACY:
        s += 1
    return s


def plan(k: int) -> SplitPlan:
    """The cheapest split of a contraction of ``k`` elements (the planner's
    cost model: ``products * padded k`` multiply-adds for the dots plus
    ``_ADD_COST`` per pair addition of the result)."""
    best: SplitPlan | None = None
    best_cost = math.inf
    for c in sorted({min(k, c) for c in CHUNK_CANDIDATES}):
        chunks = -(-k // c)
        beta = _beta(c)
        p = SplitPlan(k, c, chunks, beta, _slices(beta))
        cost = p.products * chunks * c + _ADD_COST * (p.products * chunks + 16 * chunks)
        if cost < best_cost:
            best, best_cost = p, cost
    assert best is not None
    assert (best.slices + 1) * best.beta <= 120  # every product's unit is a normal f32
    return best


# ------------------------------------------------------------------ IR
def _t(shape: Sequence[int], elem: ir.Type | None = None) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), elem if elem is not None else P.f32())


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _splat(like: ir.Value, value: float | int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    e = t.element_type
    attr = ir.FloatAttr.get(e, float(value)) if isinstance(e, ir.FloatType) else ir.IntegerAttr.get(e, int(value))
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, attr))


def _bin(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return make(name, [a, b], a.type)


def _cmp(a: ir.Value, b: ir.Value, direction: str, kind: str) -> ir.Value:
    return make("compare", [a, b], _t(_shape(a), ir.IntegerType.get_signless(1)),
                comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
                compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>"))


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return make("select", [p, a, b], a.type)


def _reduce_last(x: ir.Value, init: float | bool, combine: str) -> ir.Value:
    """``x`` reduced over its last axis by ``combine`` (``maximum``, ``or``)."""
    shape = _shape(x)
    elem = ir.RankedTensorType(x.type).element_type
    st = _t([], elem)
    if isinstance(elem, ir.FloatType):
        attr: ir.Attribute = ir.FloatAttr.get(elem, float(init))
    else:
        attr = ir.IntegerAttr.get(elem, int(init))
    c = make("constant", [], st, value=ir.DenseElementsAttr.get_splat(st, attr))
    new = build("reduce", [x, c], [_t(shape[:-1], elem)], regions=1,
                dimensions=ir.DenseI64ArrayAttr.get([len(shape) - 1]))
    block = new.regions[0].blocks.append(st, st)
    with ir.InsertionPoint(block):
        build("return", [make(combine, list(block.arguments), st)], [])
    return new.results[0]


def _bcast(v: ir.Value, shape: Sequence[int], dims: Sequence[int]) -> ir.Value:
    elem = ir.RankedTensorType(v.type).element_type
    return make("broadcast_in_dim", [v], _t(shape, elem), broadcast_dimensions=ir.DenseI64ArrayAttr.get(list(dims)))


def _pow2(e: ir.Value) -> ir.Value:
    """``2**e`` as f32 for i32 ``e`` in ``[-126, 127]`` (built from its bits)."""
    bits = make("shift_left", [_bin("add", e, _splat(e, 127)), _splat(e, 23)], e.type)
    return make("bitcast_convert", [bits], _t(_shape(e)))


def f32_dot(a: ir.Value, b: ir.Value, batch: Sequence[int], contract: int, out: Sequence[int]) -> ir.Value:
    """An f32 ``dot_general`` of ``a`` and ``b`` batched over ``batch`` and
    contracting axis ``contract`` of both, computed at HIGHEST precision."""
    dn = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(batch), rhs_batching_dimensions=list(batch),
        lhs_contracting_dimensions=[contract], rhs_contracting_dimensions=[contract])
    prec = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
    return make("dot_general", [a, b], _t(out), dot_dimension_numbers=dn, precision_config=prec)


@dataclass
class _Rows:
    """One operand's rows, scaled and sliced."""

    slices: list[ir.Value]  #: ``[B, R, C, c]`` each
    exponent: ir.Value  #: ``[B, R]`` i32: the row was scaled by ``2**-exponent``
    bad: ir.Value  #: ``[B, R]`` i1: the row holds an inf or a NaN


def _rows(x: P.Pair, pl: SplitPlan) -> _Rows:
    """Scale and slice the rows of ``x`` (``[B, R, K]``)."""
    nb, r, k = x.shape
    i1 = ir.IntegerType.get_signless(1)
    fin = make("is_finite", [x.hi], _t([nb, r, k], i1))
    bad = _reduce_last(make("not", [fin], fin.type), False, "or")
    zero = _splat(x.hi, 0.0)
    hi, lo = _sel(fin, x.hi, zero), _sel(fin, x.lo, zero)
    top = _reduce_last(make("abs", [hi], hi.type), 0.0, "maximum")  # [B, R], finite, >= 0
    tb = make("bitcast_convert", [top], _t([nb, r], i32()))
    ebits = make("shift_right_logical", [tb, _splat(tb, 23)], tb.type)
    # biased exponent 0 (a zero row, or one f32 flushes): left unscaled
    zero_row = _cmp(ebits, _splat(ebits, 0), "EQ", "SIGNED")
    exponent = _sel(zero_row, _splat(ebits, 0), _bin("subtract", ebits, _splat(ebits, 128)))
    scale = _bcast(_pow2(make("negate", [exponent], exponent.type)), [nb, r, k], [0, 1])
    h, l = _bin("multiply", hi, scale), _bin("multiply", lo, scale)
    pad = pl.chunks * pl.chunk - k
    if pad:
        h, l = _pad_last(h, pad), _pad_last(l, pad)
    out: list[ir.Value] = []
    for i in range(1, pl.slices + 1):
        sigma = _splat(h, 1.5 * 2.0 ** (25 - i * pl.beta))
        s = _bin("subtract", P.barrier(_bin("add", h, sigma))[0], sigma)
        out.append(make("reshape", [s], _t([nb, r, pl.chunks, pl.chunk])))
        if i < pl.slices:
            h, l = P.two_sum(_bin("subtract", h, s), l)
    return _Rows(out, exponent, bad)


def _pad_last(w: ir.Value, extra: int) -> ir.Value:
    shape = _shape(w)
    rank = len(shape)
    return make("pad", [w, make("constant", [], _t([]), value=ir.DenseElementsAttr.get_splat(
        _t([]), ir.FloatAttr.get(P.f32(), 0.0)))], _t(shape[:-1] + [shape[-1] + extra]),
        edge_padding_low=ir.DenseI64ArrayAttr.get([0] * rank),
        edge_padding_high=ir.DenseI64ArrayAttr.get([0] * (rank - 1) + [extra]),
        interior_padding=ir.DenseI64ArrayAttr.get([0] * rank))


def _sum_axis1(x: ir.Value, blocked_sum: Callable[[P.Pair, Sequence[int]], P.Pair]) -> P.Pair:
    """The pair sum of exact f32 terms ``x`` (``[B, T, M, N]``) over ``T``."""
    nb, t, m, n = _shape(x)
    if t == 1:
        return P.from_f32(make("reshape", [x], _t([nb, m, n])))
    return blocked_sum(P.from_f32(x), [1])


def split_dot(a: P.Pair, b: P.Pair, blocked_sum: Callable[[P.Pair, Sequence[int]], P.Pair]) -> P.Pair:
    """``sum_l a[., i, l] * b[., j, l]`` of pairs ``a`` (``[B, M, K]``) and
    ``b`` (``[B, N, K]``) as a ``[B, M, N]`` pair, by exact slices (see the
    module's docstring for the method and its bound).  ``blocked_sum`` sums
    a pair over axes (the pair rules' blocked sum)."""
    nb, m, k = a.shape
    n = b.shape[1]
    pl = plan(k)
    ra, rb = _rows(a, pl), _rows(b, pl)
    cshape = [nb, pl.chunks, m, n]
    # the levels i + j >= 3, smallest first, stacked on the chunk axis and
    # summed in blocks (one tree of variadic reduces: a chain of pair
    # additions between dots makes XLA's compile time grow exponentially)
    small: list[ir.Value] = []
    for level in range(pl.slices + 1, 2, -1):
        for i in range(level - 1, 0, -1):
            j = level - i
            if i <= pl.slices and j <= pl.slices:
                small.append(f32_dot(ra.slices[i - 1], rb.slices[j - 1], [0, 2], 3, cshape))
    big = f32_dot(ra.slices[0], rb.slices[0], [0, 2], 3, cshape)
    z = _sum_axis1(big, blocked_sum)
    if small:
        stacked = make("concatenate", small, _t([nb, pl.chunks * len(small), m, n]),
                       dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))
        z = P.add(_sum_axis1(stacked, blocked_sum), z)
    # back: 2**(ea + eb) in two exact steps (each factor a normal f32)
    e = _bin("add", _bcast(ra.exponent, [nb, m, n], [0, 1]), _bcast(rb.exponent, [nb, m, n], [0, 2]))
    e1 = make("shift_right_arithmetic", [e, _splat(e, 1)], e.type)
    e2 = _bin("subtract", e, e1)
    low = _splat(e, -126)
    f1, f2 = _pow2(_bin("maximum", e1, low)), _pow2(_bin("maximum", e2, low))
    z = P.Pair(_bin("multiply", _bin("multiply", z.hi, f1), f2), _bin("multiply", _bin("multiply", z.lo, f1), f2))
    z = P.finish(z)
    # rows or columns with an inf or a NaN: the f32 dot of the hi words
    bad = make("or", [_bcast(ra.bad, [nb, m, n], [0, 1]), _bcast(rb.bad, [nb, m, n], [0, 2])],
               _t([nb, m, n], ir.IntegerType.get_signless(1)))
    plain = f32_dot(a.hi, b.hi, [0], 2, [nb, m, n])
    zf = _splat(plain, 0.0)
    return P.Pair(_sel(bad, plain, z.hi), _sel(bad, zf, z.lo))
