"""A ``dot_general`` on float64 pairs as exact f32 ``dot_general``s (the Ozaki scheme).

The lhs is laid out ``batch x free x contracting`` (``[B, M, K]``), the
rhs ``batch x contracting x free`` (``[B, K, N]``, the layout an f32 dot
takes without a copy), and each *row* (a batch and free index of either
operand, along the contraction) is handled on its own:

1. **Exact scaling.**  The row is multiplied by the power of two that puts
   its largest hi word in ``[2, 4)`` (from the exponent bits of its
   maximum; a zero row is left alone).  Products of power-of-two scalings
   of pairs are exact, so a row near f32's overflow or underflow loses
   nothing; the result is scaled back by the two rows' powers at the end,
   overflowing or underflowing only where the result does.
2. **Exact slices on a common grid.**  The scaled row ``x`` (every
   ``|x| < 4``) is cut into ``s`` slices, slice ``i`` an integer multiple
   of ``g_i = 2**(2 - i*beta)``, at most ``2**beta`` units for ``i = 1``
   and ``2**(beta - 1)`` after.  ``t_i = (h + sigma_i) - sigma_i`` with
   ``sigma_i = 1.5 * 2**23 * g_i`` rounds a remainder's hi word ``h`` to
   the grid (while ``|h| <= 2**22 g_i``), and slice ``i`` is
   ``t_i - t_(i-1)``: the slices of a *phase* (those with ``i * beta <=
   22`` past its start) come straight from one remainder pair ``(h, l)``,
   without a chain between them (a compiler that fuses the slices'
   computations recomputes a chain for each), and the next phase's
   remainder ``(h - t_last) + l`` is taken exactly as a pair (TwoSum).
   Every remainder is within ``g/2`` of its last grid (plus its lo word,
   below ``2**-24`` of it), so the slices hold the magnitudes above and
   after ``s`` slices the remainder is below ``g_s / 2`` and a lo word.
3. **Exact f32 products, summed exactly in f32 by level.**  Each product
   of slice ``i`` of a lhs row and slice ``j`` of a rhs column (``i + j <=
   s + 1``: ``s * (s + 1) / 2`` of them) is one f32 ``dot_general`` with
   ``precision_config = [HIGHEST, HIGHEST]`` (so that no backend computes
   it in bf16 or TF32) over chunks of ``c`` contraction elements, ``c *
   2**(2*beta) <= 2**24`` (one chunk where the contraction allows; else
   the chunks are a batch dimension of the dots).  Its terms are integer
   multiples of the level's unit ``g_i g_j = 2**(4 - (i + j) beta)``, at
   most ``2**(2 beta) w_ij`` units each (``w_ij`` 1, 1/2 or 1/4 as ``i``,
   ``j`` are first slices or not); the products of one level are added in
   f32 in *groups* whose ``c * 2**(2 beta) * sum(w_ij) <= 2**24``: every
   partial sum of a group, in any order (the dots' own included), is an
   integer number of units below ``2**24`` -- exact.  Over several chunks
   a group's sum is split per chunk on the grid of ``2**12`` units
   (``(x + sigma) - sigma`` again) into a high and a low part, and each
   part summed over the chunks in f32 (a plain ``reduce``), exact for up
   to 4095 chunks.
4. **One exact running sum.**  The groups' f32 terms, smallest level
   first, are added by Ogita, Rump and Oishi's Sum2: a running f32 sum,
   each addition's exact error (TwoSum) added in f32 beside it, the two
   added exactly at the end (TwoSum) -- elementwise ops only, no
   variadic ``reduce``.

**Bound.**  With ``u = 2**-24``, for every output element ``(i, j)`` of
pair operands ``A`` and ``B`` (contraction length ``k``)::

    |C_ij - (AB)_ij| <= eps(k) * k * max_l |A_il| * max_l |B_lj| + 2**-125

    eps(k) = (s + 1) * 2**(2 - s*beta)                    (dropped slices)
           + 1.01 u^2 (1 + u)^(2n) sum_{i=3..n} sum_{j=2..i} T_j   (Sum2)

with ``T_j`` the sum of the bounds of the first ``j`` of the ``n`` terms
(relative to ``k max|A_i:| max|B_:j|``: a group's is ``sum r_i r_j``
with ``r_1 = (1 + 2**-beta)(1 + u)`` and ``r_i = 2**(-(i-1) beta)``
after; a chunked group's low part is below ``C 2**(15 - level*beta) /
(4k)``).  Sum2's running sum ``p`` and errors ``q_i`` (``|q_i| <= u
|p_i|``) add up to the exact sum; the f32 sum of the ``q_i`` errs by at
most ``u`` of each partial sum, which with the terms smallest first is
the ``u^2`` double sum above -- about ``u^2`` of the result, where
the former blocked pair sums cost ``3u^2`` per addition.  The absolute
``2**-125`` is f32's range: scaled back, a result below about
``2**-102`` has its lo word flushed (below ``2**-126``, its hi word too),
as every pair there.
:func:`plan` computes ``beta``, ``s``, the chunks, the groups and ``eps``
for a contraction length (``k = 512``: ``beta = 7``, 8 slices, 36 dots in
10 groups, ``eps`` ``2**-47.7``); ``beta`` is the cheapest by a cost model
of the dots, the terms and the chunks, ``s`` the fewest slices whose
dropped remainder costs at most ``2**-48``.
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
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..ir import pairs as P
from ..ir._mlir import int_attr, ir, stablehlo
from ..ir.words import build, i32, make

__all__ = ["Group", "SplitPlan", "plan", "split_dot", "BETA_CANDIDATES", "SPLIT_ACCURACY"]

#: The dropped slices cost at most this, relative to ``k`` times the row's
#: and the column's largest magnitudes (pairs claim about 48 bits).
SPLIT_ACCURACY = 2.0**-48

#: Bits per slice the planner considers.
BETA_CANDIDATES = tuple(range(5, 12))

#: The planner's cost model, per output element, in multiply-adds of a dot:
#: one term of the final sum (a TwoSum and an addition) and one chunk of a
#: group's dots (its exact split and its share of two sums over the chunks).
#: On the CPU backend a 512 x 512 term costs about what 100 multiply-adds
#: per element do.
_TERM_COST = 100.0
_CHUNK_COST = 1000.0

#: A group's chunks are summed on grids ``2**12`` units apart: at most this
#: many keep both sums exact.
_MAX_CHUNKS = 4095

_U = 2.0**-24


def _product_weight(i: int, j: int) -> Fraction:
    """Slice product ``(i, j)``'s largest magnitude per contraction element
    in units of ``2**(2 beta)`` of its grid (a first slice holds ``2**beta``
    units of its grid, a later one ``2**(beta - 1)``)."""
    return Fraction(1, 2 ** ((i > 1) + (j > 1)))


@dataclass(frozen=True)
class Group:
    """Slice products of one level whose f32 dots are added in f32, exactly."""

    level: int
    products: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SplitPlan:
    """How a contraction of ``k`` elements is split."""

    k: int
    beta: int  #: bits per slice
    slices: int  #: slices per row

    @property
    def chunks(self) -> int:
        """The contraction is cut into this many chunks (a batch dimension
        of the dots), each at most ``2**(24 - 2 beta)`` elements."""
        return -(-self.k // 2 ** (24 - 2 * self.beta))

    @property
    def chunk(self) -> int:
        """Elements per chunk (the contraction zero-padded to ``chunks * chunk``)."""
        return -(-self.k // self.chunks)

    @property
    def products(self) -> int:
        """The slice products formed (one f32 dot each): ``i + j <= slices + 1``."""
        return self.slices * (self.slices + 1) // 2

    @property
    def groups(self) -> list[Group]:
        """Each level's products (``i`` ascending) in groups whose weights
        add up to at most ``2**(24 - 2 beta) / chunk``: every partial sum of
        a group's dots, in any order, within ``2**24`` units of its grid."""
        budget = Fraction(2 ** (24 - 2 * self.beta), self.chunk)
        out: list[Group] = []
        for lv in range(2, self.slices + 2):
            cur: list[tuple[int, int]] = []
            for i in range(1, lv):
                pr = (i, lv - i)
                if cur and sum(_product_weight(*q) for q in cur) + _product_weight(*pr) > budget:
                    out.append(Group(lv, tuple(cur)))
                    cur = []
                cur.append(pr)
            out.append(Group(lv, tuple(cur)))
        return out

    @property
    def terms(self) -> int:
        """The f32 terms of the final sum: one per group, two (the chunks'
        exact high and low sums) where there are several chunks."""
        return len(self.groups) * (1 if self.chunks == 1 else 2)

    def term_bounds(self) -> list[float]:
        """Each term's magnitude bound relative to ``k * max|A_i:| *
        max|B_:j|``, in the order they are summed (smallest level first,
        a group's low sum before its high one)."""
        out = []
        for g in reversed(self.groups):
            b = sum(_rel(i, self.beta) * _rel(j, self.beta) for i, j in g.products)
            if self.chunks > 1:
                # each chunk's low part below half a unit of the 2**12 grid
                # (a row's largest is at least 2: k max|A| max|B| >= 4k)
                lo = self.chunks * 2.0 ** (11 + 4 - g.level * self.beta) / (4 * self.k)
                out.append(lo)
                b += lo
            out.append(b)
        return out

    @property
    def eps(self) -> float:
        """The bound's factor (see the module's docstring)."""
        s, b = self.slices, self.beta
        drop = (s + 1) * 2.0 ** (2 - s * b)
        bounds = self.term_bounds()
        n = len(bounds)
        prefix = [sum(bounds[: i + 1]) for i in range(n)]  # T_i
        sums = _U**2 * (1 + _U) ** (2 * n) * sum(sum(prefix[1: i + 1]) for i in range(2, n))
        return drop + sums * 1.01

    @property
    def phases(self) -> list[list[int]]:
        """The slices taken from one remainder pair (``i * beta <= 22``
        past the phase's start: the rounding constant's trick holds)."""
        out: list[list[int]] = []
        start = 0
        for i in range(1, self.slices + 1):
            if not out or (i - start) * self.beta > 22:
                out.append([])
                start = i - 1
            out[-1].append(i)
        return out


def _rel(i: int, beta: int) -> float:
    """Slice ``i``'s largest magnitude relative to its row's largest."""
    return (1 + 2.0**-beta) * (1 + _U) if i == 1 else 2.0 ** (-(i - 1) * beta)


def _slices(beta: int) -> int:
    s = 1
    while (s + 1) * 2.0 ** (2 - s * beta) > SPLIT_ACCURACY:
        s += 1
    return s


def plan(k: int) -> SplitPlan:
    """The cheapest split of a contraction of ``k`` elements (the planner's
    cost model: ``products * k`` multiply-adds for the dots plus
    ``_TERM_COST`` per term of the final sum and ``_CHUNK_COST`` per chunk
    of a group, where there are several)."""
    best: SplitPlan | None = None
    best_cost = math.inf
    for beta in BETA_CANDIDATES:
        p = SplitPlan(k, beta, _slices(beta))
        if p.chunks > _MAX_CHUNKS:
            continue
        cost = p.products * k + _TERM_COST * p.terms
        if p.chunks > 1:
            cost += _CHUNK_COST * p.chunks * len(p.groups)
        if cost < best_cost:
            best, best_cost = p, cost
    if best is None:
        raise ValueError(f"a contraction of {k} elements is too long to split exactly")
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
    attr = ir.FloatAttr.get(e, float(value)) if isinstance(e, ir.FloatType) else int_attr(e, int(value))
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, attr))


def _bin(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return make(name, [a, b], a.type)


def _cmp(a: ir.Value, b: ir.Value, direction: str, kind: str) -> ir.Value:
    return make("compare", [a, b], _t(_shape(a), ir.IntegerType.get_signless(1)),
                comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
                compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>"))


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return make("select", [p, a, b], a.type)


def _reduce_axis(x: ir.Value, axis: int, init: float | bool, combine: str) -> ir.Value:
    """``x`` reduced over ``axis`` by ``combine`` (``maximum``, ``or``, ``add``)."""
    shape = _shape(x)
    elem = ir.RankedTensorType(x.type).element_type
    st = _t([], elem)
    if isinstance(elem, ir.FloatType):
        attr: ir.Attribute = ir.FloatAttr.get(elem, float(init))
    else:
        attr = int_attr(elem, int(init))
    c = make("constant", [], st, value=ir.DenseElementsAttr.get_splat(st, attr))
    new = build("reduce", [x, c], [_t(shape[:axis] + shape[axis + 1:], elem)], regions=1,
                dimensions=ir.DenseI64ArrayAttr.get([axis]))
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


def f32_dot(a: ir.Value, b: ir.Value, batch: Sequence[int], contract: int, out: Sequence[int],
            rhs_batch: Sequence[int] | None = None, rhs_contract: int | None = None) -> ir.Value:
    """An f32 ``dot_general`` of ``a`` and ``b`` batched over ``batch`` and
    contracting axis ``contract`` (of both, unless the rhs's are given),
    computed at HIGHEST precision."""
    dn = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(batch),
        rhs_batching_dimensions=list(batch if rhs_batch is None else rhs_batch),
        lhs_contracting_dimensions=[contract],
        rhs_contracting_dimensions=[contract if rhs_contract is None else rhs_contract])
    prec = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
    return make("dot_general", [a, b], _t(out), dot_dimension_numbers=dn, precision_config=prec)


@dataclass
class _Rows:
    """One operand's rows, scaled and sliced."""

    slices: list[ir.Value]  #: the operand's shape each
    exponent: ir.Value  #: ``[B, R]`` i32: the row was scaled by ``2**-exponent``
    bad: ir.Value  #: ``[B, R]`` i1: the row holds an inf or a NaN


def _round_to(y: ir.Value, unit: float) -> ir.Value:
    """``y`` rounded to a multiple of ``unit`` (``|y| <= 2**22 unit``: the
    sum with ``1.5 * 2**23 * unit`` has ``unit`` as its ulp)."""
    sigma = _splat(y, 1.5 * 2.0**23 * unit)
    return _bin("subtract", P.barrier(_bin("add", y, sigma))[0], sigma)


def _rows(x: P.Pair, pl: SplitPlan, axis: int) -> _Rows:
    """Scale and slice the rows of ``x`` (``[B, R, K]`` with ``axis`` 2, or
    ``[B, K, R]`` with ``axis`` 1: the contraction)."""
    shape = x.shape
    keep = [0, 3 - axis]
    i1 = ir.IntegerType.get_signless(1)
    fin = make("is_finite", [x.hi], _t(shape, i1))
    bad = _reduce_axis(make("not", [fin], fin.type), axis, False, "or")
    zero = _splat(x.hi, 0.0)
    hi, lo = _sel(fin, x.hi, zero), _sel(fin, x.lo, zero)
    top = _reduce_axis(make("abs", [hi], hi.type), axis, 0.0, "maximum")  # [B, R], finite, >= 0
    tb = make("bitcast_convert", [top], _t(_shape(top), i32()))
    ebits = make("shift_right_logical", [tb, _splat(tb, 23)], tb.type)
    # biased exponent 0 (a zero row, or one f32 flushes): left unscaled
    zero_row = _cmp(ebits, _splat(ebits, 0), "EQ", "SIGNED")
    exponent = _sel(zero_row, _splat(ebits, 0), _bin("subtract", ebits, _splat(ebits, 128)))
    scale = _bcast(_pow2(make("negate", [exponent], exponent.type)), shape, keep)
    h, l = _bin("multiply", hi, scale), _bin("multiply", lo, scale)
    out: list[ir.Value] = []
    # each phase's slices straight from its remainder (h, l): slice i is
    # the remainder's hi word rounded to g_i less it rounded to g_(i-1);
    # the next phase's remainder is the rest, taken exactly as a pair
    for phase in pl.phases:
        prev: ir.Value | None = None
        for i in phase:
            t = _round_to(h, 2.0 ** (2 - i * pl.beta))
            out.append(t if prev is None else _bin("subtract", t, prev))
            prev = t
        assert prev is not None
        if phase[-1] < pl.slices:
            h, l = P.two_sum(_bin("subtract", h, prev), l)
    return _Rows(out, exponent, bad)


def _pad(w: ir.Value, axis: int, extra: int) -> ir.Value:
    shape = _shape(w)
    rank = len(shape)
    high = [0] * rank
    high[axis] = extra
    shape[axis] += extra
    return make("pad", [w, make("constant", [], _t([]), value=ir.DenseElementsAttr.get_splat(
        _t([]), ir.FloatAttr.get(P.f32(), 0.0)))], _t(shape),
        edge_padding_low=ir.DenseI64ArrayAttr.get([0] * rank),
        edge_padding_high=ir.DenseI64ArrayAttr.get(high),
        interior_padding=ir.DenseI64ArrayAttr.get([0] * rank))


def _chunked(w: ir.Value, axis: int, pl: SplitPlan) -> ir.Value:
    """A slice with its contraction axis cut into ``[chunks, chunk]``, the
    chunks next to the batch axis: ``[B, C, M, c]`` (lhs, ``axis`` 2) or
    ``[B, C, c, N]`` (rhs, ``axis`` 1), the layouts a batched dot takes."""
    shape = _shape(w)
    pad = pl.chunks * pl.chunk - shape[axis]
    if pad:
        w = _pad(w, axis, pad)
    cut = make("reshape", [w], _t(shape[:axis] + [pl.chunks, pl.chunk] + shape[axis + 1:]))
    if axis == 1:
        return cut
    nb, m = shape[0], shape[1]
    return make("transpose", [cut], _t([nb, pl.chunks, m, pl.chunk]),
                permutation=ir.DenseI64ArrayAttr.get([0, 2, 1, 3]))


def _group_terms(ra: _Rows, rb: _Rows, g: Group, pl: SplitPlan, out: list[int]) -> list[ir.Value]:
    """The group's exact sum as f32 terms (``[B, M, N]`` each), smaller
    first: its dots added in f32, or -- over several chunks -- the exact low
    and high sums of the chunks' (each chunk split on the grid of ``2**12``
    of the level's units)."""
    nb, m, n = out
    acc: ir.Value | None = None
    for i, j in g.products:
        if pl.chunks == 1:
            d = f32_dot(ra.slices[i - 1], rb.slices[j - 1], [0], 2, out, rhs_contract=1)
        else:
            d = f32_dot(ra.slices[i - 1], rb.slices[j - 1], [0, 1], 3, [nb, pl.chunks, m, n],
                        rhs_contract=2)
        acc = d if acc is None else _bin("add", acc, d)
    assert acc is not None
    if pl.chunks == 1:
        return [acc]
    hi = _round_to(acc, 2.0 ** (12 + 4 - g.level * pl.beta))
    lo = _bin("subtract", acc, hi)
    # every partial sum of either is a multiple of its grid within 2**24 of it: exact
    return [_reduce_axis(lo, 1, 0.0, "add"), _reduce_axis(hi, 1, 0.0, "add")]


def _exact_sum(terms: Sequence[ir.Value]) -> P.Pair:
    """The pair sum of f32 ``terms``, smallest first: a running f32 sum,
    each addition's exact error (TwoSum) summed in f32 beside it (Ogita,
    Rump and Oishi's Sum2), the two added exactly at the end."""
    acc, err = terms[0], None
    for t in terms[1:]:
        acc, q = P.two_sum(acc, t)
        err = q if err is None else _bin("add", err, q)
    if err is None:
        return P.from_f32(acc)
    return P.two_sum(acc, err)


def split_dot(a: P.Pair, b: P.Pair) -> P.Pair:
    """``sum_l a[., i, l] * b[., l, j]`` of pairs ``a`` (``[B, M, K]``) and
    ``b`` (``[B, K, N]``) as a ``[B, M, N]`` pair, by exact slices (see the
    module's docstring for the method and its bound)."""
    nb, m, k = a.shape
    n = b.shape[2]
    pl = plan(k)
    ra, rb = _rows(a, pl, 2), _rows(b, pl, 1)
    if pl.chunks > 1:
        ra.slices[:] = [_chunked(w, 2, pl) for w in ra.slices]
        rb.slices[:] = [_chunked(w, 1, pl) for w in rb.slices]
    terms: list[ir.Value] = []
    for g in reversed(pl.groups):
        terms += _group_terms(ra, rb, g, pl, [nb, m, n])
    z = _exact_sum(terms)
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
    plain = f32_dot(a.hi, b.hi, [0], 2, [nb, m, n], rhs_contract=1)
    zf = _splat(plain, 0.0)
    return P.Pair(_sel(bad, plain, z.hi), _sel(bad, zf, z.lo))
