"""A ``dot_general`` on float64 pairs as exact dots of integer slices (the Ozaki scheme, I and II).

The lhs is laid out ``batch x free x contracting`` (``[B, M, K]``), the
rhs ``batch x contracting x free`` (``[B, K, N]``, the layout a dot takes
without a copy), and each *row* (a batch and free index of either operand,
along the contraction) is handled on its own.  The products are computed
on the matrix engine's exact datapath, which the device profile names
(:class:`no64.targets.Matmul`): ``int8 x int8 -> int32`` (a TPU),
``bf16 x bf16 -> f32`` (Neuron) or f32 products at ``HIGHEST`` precision
(anything else).

1. **Exact scaling.**  The row is multiplied by the power of two that puts
   its largest hi word in ``[1, 2)`` (from the exponent bits of its
   maximum; a row whose maximum is zero or below f32's normal range is
   left alone).  Products of power-of-two scalings of pairs are exact, so
   a row near f32's overflow or underflow loses nothing; the result is
   scaled back by the two rows' powers at the end.
2. **Integer digits on a common grid.**  The scaled row ``x`` (``|x| <=
   2``) is cut into ``s`` digits, digit ``i`` an integer ``d_i`` on the grid
   ``g_i = g_1 2**(-(i - 1) beta)``, ``g_1 = 2 / F``: ``|d_1| <= F`` (``F =
   2**beta``, or ``2**(beta - 1)`` for int8, whose range stops at 127) and
   about ``2**(beta - 1)`` after (:meth:`SplitPlan.digit_bounds` bounds each
   exactly).  ``t_i = (h + sigma_i) - sigma_i`` with ``sigma_i = 1.5 *
   2**23 * g_i`` rounds a remainder's hi word ``h`` to the grid (while
   ``|h| <= 2**22 g_i``), and digit ``i`` is ``(t_i - t_(i-1)) / g_i``: the
   digits of a *phase* (those with ``i * beta <= 22`` past its start) come
   straight from one remainder pair ``(h, l)``, and the next phase's
   remainder ``(h - t_last) + l`` is taken exactly as a pair (TwoSum).
   After ``s`` digits the remainder is below ``g_s / 2`` plus a lo word.
3. **Exact products, summed exactly by level.**  Each product of digit
   ``i`` of a lhs row and digit ``j`` of a rhs column (*level* ``i + j``)
   is one ``dot_general`` on the datapath, over chunks of ``c``
   contraction elements (one chunk where the contraction allows; else the
   chunks are a batch dimension of the dots) small enough that every
   partial sum is an integer within the datapath's exact range: the dots
   of one level are added in it (f32 ones in groups within ``2**24``),
   and every level's sum becomes one ``i32`` integer (``<= 2**30``) in
   units of its grid ``g_1**2 2**(-(L - 2) beta)``.  Over several chunks,
   each chunk's level sum is split into its low ``beta`` bits, summed over
   the chunks into its own level, and the rest, summed into the level
   above.
4. **Levels as the data need them.**  The levels ``2 .. fewest + 1`` are
   always computed; each further level ``L`` up to ``slices + 1`` only
   where the data need it (where the device runs a loop whose trip count
   depends on the data -- :attr:`no64.targets.Matmul.branches` -- one
   ``while`` loop over the further levels' products, a product an
   iteration, as many as the levels needed hold; else always):
   where, for some output element, ``k * phi(L - 2)`` exceeds ``TAU``
   times a lower bound of ``(|A| |B|)_ij`` in scaled units, taken from one
   one-pass dot of the hi words' magnitudes (bf16 on a TPU or Neuron).
5. **One exact integer, rounded once.**  The level sums are carried into
   one fixed-point number (``c = S_L + (c >> beta)`` from the smallest
   level up: a signed ``i32`` top and ``beta``-bit digits below, exact),
   taken as sign and magnitude, packed into words of at most 24 bits
   (each an exact f32), and the words, smallest first, added by Ogita,
   Rump and Oishi's Sum2 into a pair: the words do not overlap and are
   not negative, so the pair is within ``SUM_ACCURACY`` of the exact sum
   of the computed products (the running sum's errors are each below
   ``u`` times a partial sum that grows by ``2**20`` or more per word).

**Residues (Ozaki scheme II).**  On an integer datapath (``int8``) that
runs a ``case`` and whose profile says they pay
(:attr:`no64.targets.Matmul.residues`: not a TPU v5e's, where they were
measured 4 to 6 times slower than the levels at ``n`` = 1024 and 2048),
where they compute fewer products than the levels do
always (:func:`scheme`: 15 to 17 against 36, for ``k`` from 1 to
``10**6``), the product is computed from residues where the data are
within their span, by the levels above where not (the other branch of a
``case``; :func:`crt_plan` plans it):

1. **One integer per element.**  The scaled element ``a`` is cut into its
   first ``s`` digits (step 2; ``s`` the fewest whose remainder meets
   data of ``_TYPICAL_BITS``: 8 for int8), taken as one integer ``A' =
   sum_j d_j 2**(beta (s - j))``: ``|a - A' g_s| <= r_s`` (about
   ``2**-55``) and ``|A'| <= (2 + r_s) / g_s = 2**55``.
2. **Residues.**  ``C' = sum_l A'_l B'_l`` (``|C'| <= k 2**110``) is
   computed modulo ``N`` pairwise coprime odd moduli ``m_i <= 255`` (255,
   253, 251, 247, 241, ..., the fewest whose balanced mixed radix below
   covers ``|C'|``; 16 for ``k`` from 84 to 15859): ``A' mod m_i``,
   balanced (``|.| <= 127``, an int8), is ``sum_j d_j (2**(beta (s - j))
   mod m_i)`` reduced.  Every reduction of an f32 integer ``x``, ``|x| <
   2**22``, is ``x - m round(x fl(1/m))``, exact: ``x fl(1/m)`` is within
   ``|x| 2**-23 / m < 1 / (2m)`` of ``x / m``, which is at least that far
   from a half-integer for an odd ``m``.
3. **One batched int8 dot.**  The residues of all moduli, stacked, make one
   ``dot_general`` batched over them, each sum exact in ``i32`` (a chunk's
   within ``c 127**2``, the contraction chunked where longer); a result
   ``x = hi 2**17 + lo`` reduces as ``hi (2**17 mod m) + lo`` (below
   ``2**22``), and over several chunks the reduced chunks are summed and
   reduced again: ``c_i = C' mod m_i``, balanced.
4. **Garner.**  ``v_i = (P_i**-1 c_i - sum_(j < i) (P_j P_i**-1 mod m_i)
   v_j) mod m_i`` (``P_i = m_1 ... m_(i-1)``; each sum an f32 integer
   below ``2**22``), so ``C' = sum_i v_i P_i`` with ``|v_i| <= (m_i - 1) /
   2``: the balanced mixed radix is unique on ``[-R, R]``, ``R = sum_i
   (m_i - 1) / 2 P_i >= k 2**110``, and holds ``C'`` there.
5. **Exact sum, rounded once.**  ``sum_i v_i P_i`` is summed in positions
   of 12 bits (``P_i``'s digits ``p_it``: a position's ``sum_i v_i p_it``
   an f32 integer below ``2**24``), carried and rounded once by step 5
   above, in units of ``g_1**2``: within ``SUM_ACCURACY`` of ``C' g_s**2``.

Their error per term is ``phi_r = 2 r_s + (2 + r_s) r_s`` (``|ab - A'B'
g_s**2| <= |r_a| |b| + |A' g_s| |r_b|``: no product is dropped), and they
run where the one-pass estimate of step 4 puts every ``(|A| |B|)_ij``
(scaled units) at or above :attr:`CrtPlan.threshold` ``= k phi_r / (TAU
slack)`` (about ``2**-7 k``: normally distributed data are about
``2**-2`` to ``2**-5 k``), so that ``k phi_r <= TAU (|A| |B|)_ij``.  An
output whose row or column is not scaled (its largest hi word below
f32's normal range) has its ``A'`` zero there and errs by at most
``(|A| |B|)_ij <= k 2**-125 2**(a_i + b_j)``; the rounding of step 5
errs by ``SUM_ACCURACY`` of ``|C' g_s**2| <= (1 + TAU) (|A| |B|)_ij``.  So
the bound below holds with either branch.

**Bound.**  With ``u = 2**-24``, for every output element ``(i, j)`` of
pair operands ``A`` and ``B`` (contraction length ``k``) whose row and
column hold no inf or NaN::

    |C_ij - (AB)_ij| <= max(TAU (|A||B|)_ij, k phi(slices) 2**(a_i + b_j))
                        + SUM_ACCURACY (1 + 2**-40) (|A||B|)_ij + 2**-125

``2**a_i`` and ``2**b_j`` are the row's and the column's scalings back
(``max_l |hi(A_il)|`` is in ``[2**a_i, 2**(a_i + 1))``), and
``phi(s)`` (:meth:`SplitPlan.phi`) bounds the error of one term ``a b``
of two scaled elements (``|a|, |b| <= 2``) with ``s`` digits: the
remainders' share ``2 r_s + (2 + r_s) r_s`` and the dropped products
``sum_{i + j > s + 1} D_i g_i D_j g_j``.  The first term of the max is
what the run-time choice of levels guarantees; the second holds always
(all levels): where ``k max|A_i:| max|B_:j|`` exceeds ``(|A||B|)_ij`` by
more than :attr:`SplitPlan.cap`, the bound is the second.  ``TAU +
SUM_ACCURACY`` is about ``2**-45.2``.  The absolute ``2**-125`` is f32's
range: scaled back, a result below about ``2**-102`` has its lo word
flushed (below ``2**-126``, its hi word too), as every pair there.
:func:`plan` computes ``beta``, the digits, the chunks and ``phi`` for a
contraction length and a datapath.

**Inf and NaN.**  A row or column holding an inf or a NaN is left out of
the scaling (its finite elements are sliced as usual) and every output it
reaches -- every one is inf or NaN in float64 -- is the dot of the hi
words with each finite element replaced by its sign (-1, 0 or 1): the inf
and NaN float64 gives (``inf * 0``, ``inf - inf``, a NaN operand), and no
finite product can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..ir import pairs as P
from ..ir._mlir import int_attr, ir, stablehlo
from ..ir.words import build, const, i32, make
from ..targets import F32_EXACT, F32_MATMUL, I32_MAX, Matmul

__all__ = ["SplitPlan", "plan", "split_dot", "BETA_CANDIDATES", "TAU", "SUM_ACCURACY", "SPAN_BITS",
           "STATIC_SPAN_BITS", "CrtPlan", "crt_plan", "scheme", "products", "RESIDUES"]

_U = 2.0**-24

#: The dropped digits' share of the bound, relative to ``(|A| |B|)_ij``:
#: the levels computed at run time keep ``k phi(s)`` within it.
TAU = 2.0**-46

#: The pair formed from the exact fixed-point sum errs by at most this
#: relative to it (Sum2 over words that do not overlap, smallest first:
#: ``u`` times the last partial sum, ``u`` times the one before, and ``u``
#: of their sum, each below ``u`` of the total; see the module docstring).
SUM_ACCURACY = 3.01 * _U**2

#: Where the device runs a ``case``, the levels computed at run time cover
#: data whose ``k max|A_i:| max|B_:j|`` exceeds ``(|A| |B|)_ij`` by up to
#: about ``2**SPAN_BITS`` more than the fewest levels do.
SPAN_BITS = 36

#: Where it does not (every level computed always), this many.
STATIC_SPAN_BITS = 12

#: The levels always computed are those data whose ``(|A| |B|)_ij`` is
#: ``2**-4`` of ``k`` in scaled units need (normally distributed data are
#: about ``2**-3`` to ``2**-5``): the further ones run a product at a time.
_TYPICAL_BITS = 6

#: Digits' bits per datapath the planner considers (int8's are 7: the
#: first digit up to 64, later ones about 64, each within 127).
BETA_CANDIDATES: dict[str, tuple[int, ...]] = {"f32": tuple(range(5, 12)), "bf16": tuple(range(5, 9)),
                                               "i8": (7,)}

#: Every level's sum over one chunk stays within this (so that the carries
#: of step 5 stay within ``i32``).
_LEVEL_BUDGET = 2**30

#: The planner's cost model, per output element, in multiply-adds of a
#: dot: one level's share of the carries and the sum, one chunk of a level.
_LEVEL_COST = 100.0
_CHUNK_COST = 1000.0

#: The slices' remainder may lose this much (scaled units) where a device
#: flushes f32 subnormals.
_FLUSH = 2.0**-125


@dataclass(frozen=True)
class SplitPlan:
    """How a contraction of ``k`` elements is split on a datapath."""

    k: int
    beta: int  #: bits per digit
    slices: int  #: digits per element (``s``: levels ``2 .. s + 1`` at most)
    fewest: int  #: levels ``2 .. fewest + 1`` are always computed
    chunks: int  #: the contraction is cut into this many chunks
    path: Matmul

    @property
    def first(self) -> int:
        """``F``: the first digit's bound (``2**beta``; ``2**(beta - 1)`` for int8)."""
        return 2 ** (self.beta - (self.path.operands == "i8"))

    @property
    def chunk(self) -> int:
        """Elements per chunk (the contraction zero-padded to ``chunks * chunk``)."""
        return -(-self.k // self.chunks)

    def grid(self, i: int) -> float:
        """``g_i``: digit ``i``'s unit, relative to the scaled row (largest in ``[1, 2)``)."""
        return 2.0 / self.first * 2.0 ** (-(i - 1) * self.beta)

    @cached_property
    def phases(self) -> list[list[int]]:
        """The digits taken from one remainder pair (``i * beta <= 22``
        past the phase's start: the rounding constant's trick holds)."""
        out: list[list[int]] = []
        start = 0
        for i in range(1, self.slices + 1):
            if not out or (i - start) * self.beta > 22:
                out.append([])
                start = i - 1
            out[-1].append(i)
        return out

    @cached_property
    def digit_bounds(self) -> tuple[list[int], list[float]]:
        """``D_i``, the bound of digit ``i``'s magnitude, and ``r_i``, of the
        remainder after it (scaled units), for ``i = 1 .. slices``.

        In the first phase the hi word is below 2 and the lo word at most
        ``2**-24``; ``t_1`` rounds to a grid that divides 2 (``|d_1| <=
        F``), and a later digit is ``t_i - t_(i-1)``, within ``g_i / 2 +
        g_(i-1) / 2``.  A later phase starts from ``(h - t_last) + l``
        rounded, at most ``(g_last / 2 + l)(1 + u)``, its lo word within
        ``u`` of that, and its first digit is ``t_i`` itself."""
        bounds: list[int] = []
        rems: list[float] = []
        lo = _U  # the lo word's bound in this phase
        for n, phase in enumerate(self.phases):
            if n == 0:
                bounds.append(self.first)
            else:
                top = (rems[-1]) * (1 + _U)
                lo = _U * top
                bounds.append(math.floor(top / self.grid(phase[0]) + 0.5))
            rems.append(self.grid(phase[0]) / 2 + lo + _FLUSH)
            for i in phase[1:]:
                bounds.append(2 ** (self.beta - 1))
                rems.append(self.grid(i) / 2 + lo + _FLUSH)
        return bounds, rems

    def phi(self, s: int) -> float:
        """The error of one term ``a b`` of two scaled elements (``|a|, |b|
        <= 2``) with ``s`` digits: ``a b - sum_{i + j <= s + 1} d_i g_i e_j
        g_j`` is ``r_a b + (a - r_a) r_b`` plus the dropped products."""
        d, r = self.digit_bounds
        rs = r[s - 1]
        dropped = sum(d[i - 1] * self.grid(i) * d[j - 1] * self.grid(j)
                      for i in range(2, s + 1) for j in range(s + 2 - i, s + 1))
        return 2 * rs + (2 + rs) * rs + dropped

    def products(self, level: int) -> list[tuple[int, int]]:
        """The digit products of a level (``i + j = level``, both within ``slices``)."""
        return [(i, level - i) for i in range(max(1, level - self.slices), min(self.slices, level - 1) + 1)]

    def level_bound(self, level: int) -> int:
        """The largest magnitude of a level's sum over one chunk, in its units."""
        d, _ = self.digit_bounds
        return self.chunk * sum(d[i - 1] * d[j - 1] for i, j in self.products(level))

    def groups(self, level: int) -> list[list[tuple[int, int]]]:
        """A level's products in groups whose dots are added in the
        accumulation type: every partial sum within its exact range."""
        d, _ = self.digit_bounds
        out: list[list[tuple[int, int]]] = []
        total = 0
        for pr in self.products(level):
            w = self.chunk * d[pr[0] - 1] * d[pr[1] - 1]
            if out and total + w <= self.path.exact_below:
                out[-1].append(pr)
                total += w
            else:
                out.append([pr])
                total = w
        return out

    @property
    def levels(self) -> list[int]:
        """The levels, smallest first (``slices + 1`` down to 2)."""
        return list(range(self.slices + 1, 1, -1))

    def conditional(self, level: int) -> bool:
        """Whether the level is computed only where the data need it."""
        return self.path.branches and level > self.fewest + 1

    @property
    def slack(self) -> float:
        """The one-pass estimate of ``(|A| |B|)_ij`` times this is below it:
        each operand rounded to the one-pass type (within ``2**-7`` of its
        magnitude for bf16, ``2**-23`` for f32), the hi word within
        ``2**-23`` of the pair, the sum of ``k`` terms within ``(1 +
        2**-23)**k`` of theirs."""
        d = 2.0**-7 if self.path.one_pass == "bf16" else 2.0**-23
        return 1 / ((1 + d) ** 2 * (1 + 2.0**-23) ** (self.k + 4))

    def threshold(self, s: int) -> float:
        """With ``s`` digits the bound's first term holds where the estimate
        of ``(|A| |B|)_ij`` (scaled units) is at least this."""
        return self.k * self.phi(s) / (TAU * self.slack)

    @property
    def cap(self) -> float:
        """The largest ``k max|A_i:| max|B_:j| / (|A| |B|)_ij`` every level
        together keeps within ``TAU`` (the scaled maxima are at least 1)."""
        return TAU * self.slack / self.phi(self.slices)

    @property
    def carries(self) -> int:
        """The largest magnitude the carried sum reaches (step 5)."""
        c = 0
        for lv in self.levels + ([1] if self.chunks > 1 else []):
            c = self._position_bound(lv) + c // 2**self.beta + 1
        return c

    def _position_bound(self, level: int) -> int:
        """A position's sum over the chunks: its level's (one chunk), or its
        own low bits and the level below's high bits (several)."""
        if self.chunks == 1:
            return self.level_bound(level)
        lo = self.chunks * (2**self.beta - 1) if level > 1 else 0
        hi = self.chunks * (self.level_bound(level + 1) // 2**self.beta + 1) if level < self.slices + 1 else 0
        return lo + hi


def _fewest(p: SplitPlan, bits: float) -> int:
    """The fewest digits whose ``phi`` is within ``4 TAU 2**-bits``: with
    fewer, no data whose ``(|A| |B|)_ij`` is above ``2**-bits`` of its
    largest (``4k`` scaled) satisfy the bound."""
    s = 1
    while p.phi(s) > 4 * TAU * 2.0**-bits:
        s += 1
        if s > 40:
            raise ValueError("no slice count reaches the accuracy")
    return s


def plan(k: int, path: Matmul = F32_MATMUL) -> SplitPlan:
    """The cheapest split of a contraction of ``k`` elements on ``path``
    (the planner's cost model: the products of the levels typical data
    need -- every level where the device cannot skip one --, ``k``
    multiply-adds each, plus ``_LEVEL_COST`` per level and ``_CHUNK_COST``
    per chunk of a level where there are several)."""
    best: SplitPlan | None = None
    best_cost = math.inf
    span = SPAN_BITS if path.branches else STATIC_SPAN_BITS
    for beta in BETA_CANDIDATES[path.operands]:
        probe = SplitPlan(k, beta, 40, 40, 1, path)
        # the levels typical data need always (as grouped dots); more only in the loop
        lo = _fewest(probe, _TYPICAL_BITS)
        hi = max(lo, _fewest(probe, span))
        if (hi + 1) * beta > 100:  # every grid and rounding constant a normal f32
            continue
        base = SplitPlan(k, beta, hi, lo, 1, path)
        d, _ = base.digit_bounds
        if max(d) > (127 if path.operands == "i8" else 256 if path.operands == "bf16" else 2**24):
            continue
        widest = max(sum(d[i - 1] * d[j - 1] for i, j in base.products(lv)) for lv in base.levels)
        per_dot = max(a * b for a in d for b in d)
        chunk = min(_LEVEL_BUDGET // widest, path.exact_below // per_dot)
        if chunk < 1:
            continue
        p = SplitPlan(k, beta, hi, lo, -(-k // chunk), path)
        if p.chunks > 2 ** (beta - 1) or p.carries >= 2**31 - 1:
            continue
        paid = lo if path.branches else hi
        cost = paid * (paid + 1) / 2 * k + _LEVEL_COST * (hi + 1)
        if p.chunks > 1:
            cost += _CHUNK_COST * p.chunks * (paid + 1)
        if cost < best_cost:
            best, best_cost = p, cost
    if best is None:
        raise ValueError(f"a contraction of {k} elements is too long to split exactly")
    return best


# ------------------------------------------------------------- residues (CRT)
def _coprime_moduli(top: int) -> tuple[int, ...]:
    """Odd moduli from ``top`` down, each coprime to every larger one taken
    (greedy): 255, 253, 251, 247, 241, 239, 233, 229, ... for ``top`` 255."""
    out: list[int] = []
    for m in range(top | 1, 2, -2):
        if all(math.gcd(m, x) == 1 for x in out):
            out.append(m)
    return tuple(out)


#: The largest integer magnitude each operand type holds exactly (the
#: residues' balanced range: moduli up to ``2 * this + 1``).
_OPERAND_MAX: dict[str, int] = {"i8": 127}

#: A residue, a chunk's dot reduced and Garner's running sums stay below
#: this in magnitude: exact in f32, and ``round(x * fl(1/m))`` is the
#: nearest integer to ``x / m`` (its error below ``|x| 2**-23 / m < 1 / (2m)``).
_MOD_EXACT = 2**22

#: The dot's ``i32`` result is taken as ``hi 2**_SPLIT + lo`` (``lo`` in
#: ``[0, 2**_SPLIT)``, ``|hi| <= 2**(31 - _SPLIT)``) before its reduction.
_SPLIT = 17

#: Bits of the positions the reconstructed integer is summed in.
_POSITION_BITS = 12

#: Whether :func:`split_dot` may compute a contraction by residues where
#: they apply and need fewer products (a benchmark or a test sets it
#: ``False`` to time or check the levels alone on the same datapath).
RESIDUES = True


def _balanced(x: int, m: int) -> int:
    """``x mod m`` in ``[-(m - 1) / 2, (m - 1) / 2]`` (``m`` odd)."""
    r = x % m
    return r - m if r > m // 2 else r


@dataclass(frozen=True)
class CrtPlan:
    """A contraction of ``k`` elements as residues on an integer datapath
    (Ozaki scheme II; see the module docstring): each scaled element an
    integer ``A' = sum_i d_i 2**(beta (s - i))`` of the digits of
    :attr:`digits`, the products ``A'_i B'_i`` of its residues modulo each of
    :attr:`moduli` one batched dot, the exact ``C'`` rebuilt by Garner."""

    k: int
    digits: SplitPlan  #: the grid the elements are cut on (``slices`` digits)
    moduli: tuple[int, ...]
    chunks: int
    path: Matmul

    @property
    def chunk(self) -> int:
        return -(-self.k // self.chunks)

    @property
    def unit(self) -> float:
        """``g_s``: the unit of ``A'`` relative to the scaled row."""
        return self.digits.grid(self.digits.slices)

    @property
    def phi(self) -> float:
        """The error of one term ``a b`` (``|a|, |b| < 2``): ``a = A' g_s +
        r_a`` with ``|r_a| <= r_s``, so ``|a b - A' B' g_s**2| <= |r_a| |b|
        + |A' g_s| |r_b| <= 2 r_s + (2 + r_s) r_s`` (no product dropped)."""
        rs = self.digits.digit_bounds[1][self.digits.slices - 1]
        return 2 * rs + (2 + rs) * rs

    @property
    def largest(self) -> int:
        """The largest ``|A'|``: ``(|a| + r_s) / g_s`` with ``|a| < 2``."""
        rs = self.digits.digit_bounds[1][self.digits.slices - 1]
        return math.floor((2 + rs) / self.unit)

    @property
    def product_bound(self) -> int:
        """The largest ``|C'| = |sum_l A'_l B'_l|``."""
        return self.k * self.largest**2

    @property
    def threshold(self) -> float:
        """The residues meet the bound's first term where the one-pass
        estimate of every ``(|A| |B|)_ij`` (scaled units) is at least this."""
        return self.k * self.phi / (TAU * self.digits.slack)

    @property
    def prefixes(self) -> list[int]:
        """``P_i = m_1 ... m_(i-1)``, the mixed radix's place values."""
        out = [1]
        for m in self.moduli[:-1]:
            out.append(out[-1] * m)
        return out

    @property
    def digit_weights(self) -> list[list[int]]:
        """``2**(beta (s - j)) mod m_i`` (balanced), the weight of digit ``j``
        in ``A' mod m_i``."""
        s, beta = self.digits.slices, self.digits.beta
        return [[_balanced(2 ** (beta * (s - j)), m) for j in range(1, s + 1)] for m in self.moduli]

    @property
    def garner(self) -> list[tuple[int, list[int]]]:
        """For each modulus ``m_i``: ``P_i**-1`` and ``P_j P_i**-1`` (``j < i``)
        modulo ``m_i``, balanced, so that ``v_i = (P_i**-1 c_i - sum_j
        (P_j P_i**-1) v_j) mod m_i``."""
        out = []
        for i, (m, p) in enumerate(zip(self.moduli, self.prefixes)):
            inv = pow(p, -1, m)
            out.append((_balanced(inv, m), [_balanced(q * inv, m) for q in self.prefixes[:i]]))
        return out

    @property
    def positions(self) -> list[list[int]]:
        """``P_i`` in base ``2**_POSITION_BITS``, least significant first."""
        out = []
        for p in self.prefixes:
            ds = []
            while p:
                ds.append(p % 2**_POSITION_BITS)
                p //= 2**_POSITION_BITS
            out.append(ds)
        return out

    @property
    def base(self) -> int:
        """The exponent of the top position's unit, relative to ``g_1**2``
        (``C' g_s**2`` is the pair in units of ``g_1**2`` the levels give)."""
        return _POSITION_BITS * (len(self.positions[-1]) - 1) + 2 * round(math.log2(self.unit / self.digits.grid(1)))

    def check(self) -> None:
        """Every intermediate within its type's exact range, and ``C'``
        within the range the balanced mixed radix represents (raises
        ``ValueError`` where not)."""
        half = [m // 2 for m in self.moduli]
        if any(math.gcd(a, b) != 1 for i, a in enumerate(self.moduli) for b in self.moduli[i + 1:]):
            raise ValueError("moduli not pairwise coprime")
        if max(half) > _OPERAND_MAX[self.path.operands]:
            raise ValueError("a residue outside the operand type")
        reach = sum(h * p for h, p in zip(half, self.prefixes))  # the mixed radix covers [-reach, reach]
        if self.product_bound > reach:
            raise ValueError("the moduli do not cover the product")
        d, _ = self.digits.digit_bounds
        for w in self.digit_weights:
            if sum(di * abs(wi) for di, wi in zip(d, w)) >= _MOD_EXACT:
                raise ValueError("a residue's sum beyond f32's exact reduction")
        if self.chunk * max(half) ** 2 > self.path.exact_below:
            raise ValueError("a chunk's dot beyond the accumulator's exact range")
        reduced = 2 ** (31 - _SPLIT) * max(half) + 2**_SPLIT
        if reduced >= _MOD_EXACT or self.chunks * max(half) >= _MOD_EXACT:
            raise ValueError("a dot's reduction beyond f32's exact range")
        for (inv, ws), h in zip(self.garner, half):
            if abs(inv) * h + sum(abs(w) * hj for w, hj in zip(ws, half)) >= _MOD_EXACT:
                raise ValueError("Garner's sum beyond f32's exact reduction")
        carry = 0
        for t in range(len(self.positions[-1])):
            s = sum(h * (ds[t] if t < len(ds) else 0) for h, ds in zip(half, self.positions))
            if s >= F32_EXACT:
                raise ValueError("a position's sum beyond f32's exact integers")
            carry = s + carry // 2**_POSITION_BITS + 1
            if carry >= I32_MAX:
                raise ValueError("the carried sum beyond i32")
        lowest = self.base - _POSITION_BITS * (len(self.positions[-1]) - 1)
        if lowest < -126 or self.base + 31 > 127:
            raise ValueError("a word of the carried sum outside f32's normal range")


def crt_plan(k: int, path: Matmul) -> CrtPlan | None:
    """The residue scheme for a contraction of ``k`` elements on ``path``,
    or ``None`` where it does not apply: an integer datapath (its operand
    type the residues) that runs a ``case`` (the fallback to the levels for
    data of wide exponent span).  The digits are those of the levels'
    grid, as many as data of ``_TYPICAL_BITS`` need; the moduli the fewest
    that cover ``|C'|``."""
    if path.operands not in _OPERAND_MAX or not path.branches:
        return None
    top = _OPERAND_MAX[path.operands]
    probe = SplitPlan(k, BETA_CANDIDATES[path.operands][0], 40, 40, 1, path)
    rems = probe.digit_bounds[1]
    s = 1
    while 2 * rems[s - 1] + (2 + rems[s - 1]) * rems[s - 1] > 4 * TAU * 2.0**-_TYPICAL_BITS:
        s += 1
    digits = SplitPlan(k, probe.beta, s, s, 1, path)
    chunk = min(k, path.exact_below // top**2)
    chunks = -(-k // chunk)
    pool = _coprime_moduli(2 * top + 1)
    for n in range(1, len(pool) + 1):
        p = CrtPlan(k, digits, pool[:n], chunks, path)
        half = sum(m // 2 * q for m, q in zip(p.moduli, p.prefixes))
        if half >= p.product_bound:
            p.check()
            return p
    raise ValueError(f"a contraction of {k} elements is too long for the residues")


def products(k: int, path: Matmul) -> dict[str, int]:
    """The products of ``k`` contraction elements (``n**3`` each, for
    ``n x n`` operands) each scheme always computes on ``path``: the levels'
    (those typical data need, or every level where the device cannot skip
    one) and the residues' (one per modulus; absent where they do not apply)."""
    pl = plan(k, path)
    paid = pl.fewest if path.branches else pl.slices
    out = {"levels": paid * (paid + 1) // 2}
    cp = crt_plan(k, path)
    if cp is not None:
        out["residues"] = len(cp.moduli)
    return out


# ------------------------------------------------------------------ IR
_I8 = "i8"


def _elem(name: str) -> ir.Type:
    if name == "i8":
        return ir.IntegerType.get_signless(8)
    if name == "i32":
        return i32()
    if name == "bf16":
        return ir.BF16Type.get()
    return P.f32()


def _t(shape: Sequence[int], elem: ir.Type | None = None) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), elem if elem is not None else P.f32())


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _splat(like: ir.Value, value: float | int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    e = t.element_type
    attr = ir.FloatAttr.get(e, float(value)) if isinstance(e, ir.FloatType) else int_attr(e, int(value))
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, attr))


def _zeros(shape: Sequence[int], elem: ir.Type) -> ir.Value:
    t = _t(shape, elem)
    attr = ir.FloatAttr.get(elem, 0.0) if isinstance(elem, ir.FloatType) else ir.IntegerAttr.get(elem, 0)
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, attr))


def _bin(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return make(name, [a, b], a.type)


def _cmp(a: ir.Value, b: ir.Value, direction: str, kind: str) -> ir.Value:
    return make("compare", [a, b], _t(_shape(a), ir.IntegerType.get_signless(1)),
                comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
                compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>"))


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return make("select", [p, a, b], a.type)


def _convert(v: ir.Value, elem: ir.Type) -> ir.Value:
    if ir.RankedTensorType(v.type).element_type == elem:
        return v
    return make("convert", [v], _t(_shape(v), elem))


def _reduce(x: ir.Value, axes: Sequence[int], init: float | bool, combine: str) -> ir.Value:
    """``x`` reduced over ``axes`` by ``combine`` (``maximum``, ``minimum``, ``or``, ``add``)."""
    shape = _shape(x)
    elem = ir.RankedTensorType(x.type).element_type
    st = _t([], elem)
    if isinstance(elem, ir.FloatType):
        attr: ir.Attribute = ir.FloatAttr.get(elem, float(init))
    else:
        attr = int_attr(elem, int(init))
    c = make("constant", [], st, value=ir.DenseElementsAttr.get_splat(st, attr))
    new = build("reduce", [x, c], [_t([n for i, n in enumerate(shape) if i not in axes], elem)], regions=1,
                dimensions=ir.DenseI64ArrayAttr.get(list(axes)))
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


def _dot(a: ir.Value, b: ir.Value, batch: Sequence[int], contract: int, rhs_contract: int, out: Sequence[int],
         result: ir.Type, highest: bool) -> ir.Value:
    """A ``dot_general`` of ``a`` and ``b`` batched over ``batch`` (both),
    contracting ``contract`` of ``a`` and ``rhs_contract`` of ``b``, its
    result's element type ``result`` (at ``HIGHEST`` precision with ``highest``)."""
    dn = stablehlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(batch), rhs_batching_dimensions=list(batch),
        lhs_contracting_dimensions=[contract], rhs_contracting_dimensions=[rhs_contract])
    attrs: dict[str, ir.Attribute] = {"dot_dimension_numbers": dn}
    if highest:
        attrs["precision_config"] = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
    return make("dot_general", [a, b], _t(out, result), **attrs)


def _case(pred: ir.Value, types: Sequence[ir.Type], then: Callable[[], list[ir.Value]],
          otherwise: Callable[[], list[ir.Value]] | None = None) -> list[ir.Value]:
    """``then()`` where the scalar ``pred`` holds, else ``otherwise()``
    (zeros if ``None``): a ``case`` on ``pred``, branch 1 ``then``."""
    index = _convert(pred, i32())
    op = build("case", [index], list(types), regions=2)
    with ir.InsertionPoint(op.regions[0].blocks.append()):
        if otherwise is None:
            build("return", [_zeros(_shape_of(t), ir.RankedTensorType(t).element_type) for t in types], [])
        else:
            build("return", otherwise(), [])
    with ir.InsertionPoint(op.regions[1].blocks.append()):
        build("return", then(), [])
    return list(op.results)


def _shape_of(t: ir.Type) -> list[int]:
    return list(ir.RankedTensorType(t).shape)


@dataclass
class _Rows:
    """One operand's rows, scaled (:func:`_rows`; :func:`_cut` cuts them into digits)."""

    h: ir.Value  #: the scaled hi words (0 for inf and NaN)
    l: ir.Value  #: the scaled lo words (0 for inf and NaN)
    exponent: ir.Value  #: ``[B, R]`` i32: the row was scaled by ``2**-exponent``
    bad: ir.Value  #: ``[B, R]`` i1: the row holds an inf or a NaN
    scaled: ir.Value  #: ``[B, R]`` i1: the row was scaled (its largest in ``[1, 2)``)
    magnitude: ir.Value  #: the scaled hi words' magnitudes (0 for inf and NaN)
    signs: ir.Value  #: the hi words' signs (-1, 0, 1), inf and NaN as they are


def _round_to(y: ir.Value, unit: float) -> ir.Value:
    """``y`` rounded to a multiple of ``unit`` (``|y| <= 2**22 unit``: the
    sum with ``1.5 * 2**23 * unit`` has ``unit`` as its ulp)."""
    sigma = _splat(y, 1.5 * 2.0**23 * unit)
    return _bin("subtract", P.barrier(_bin("add", y, sigma))[0], sigma)


def _rows(x: P.Pair, axis: int) -> _Rows:
    """Scale the rows of ``x`` (``[B, R, K]`` with ``axis`` 2, or ``[B, K,
    R]`` with ``axis`` 1: the contraction)."""
    shape = x.shape
    keep = [0, 3 - axis]
    i1 = ir.IntegerType.get_signless(1)
    fin = make("is_finite", [x.hi], _t(shape, i1))
    bad = _reduce(make("not", [fin], fin.type), [axis], False, "or")
    zero = _splat(x.hi, 0.0)
    hi, lo = _sel(fin, x.hi, zero), _sel(fin, x.lo, zero)
    top = _reduce(make("abs", [hi], hi.type), [axis], 0.0, "maximum")  # [B, R], finite, >= 0
    tb = make("bitcast_convert", [top], _t(_shape(top), i32()))
    ebits = make("shift_right_logical", [tb, _splat(tb, 23)], tb.type)
    # biased exponent 0 (a zero row, or one f32 flushes): left unscaled
    zero_row = _cmp(ebits, _splat(ebits, 0), "EQ", "SIGNED")
    exponent = _sel(zero_row, _splat(ebits, 0), _bin("subtract", ebits, _splat(ebits, 127)))
    scale = _bcast(_pow2(make("negate", [exponent], exponent.type)), shape, keep)
    h, l = _bin("multiply", hi, scale), _bin("multiply", lo, scale)
    signs = _sel(fin, make("sign", [x.hi], x.hi.type), x.hi)
    magnitude = make("abs", [h], h.type)
    return _Rows(h, l, exponent, bad, make("not", [zero_row], zero_row.type), magnitude, signs)


def _cut(rows: _Rows, pl: SplitPlan) -> list[ir.Value]:
    """The scaled rows' digits ``d_1 .. d_s`` (f32 integers, the operand's shape each)."""
    out: list[ir.Value] = []
    h, l = rows.h, rows.l
    # each phase's digits straight from its remainder (h, l): digit i is
    # the remainder's hi word rounded to g_i less it rounded to g_(i-1);
    # the next phase's remainder is the rest, taken exactly as a pair
    for phase in pl.phases:
        prev: ir.Value | None = None
        for i in phase:
            t = _round_to(h, pl.grid(i))
            piece = t if prev is None else _bin("subtract", t, prev)
            out.append(_bin("multiply", piece, _splat(piece, 1 / pl.grid(i))))
            prev = t
        assert prev is not None
        if phase[-1] < pl.slices:
            h, l = P.two_sum(_bin("subtract", h, prev), l)
    return out


def _pad(w: ir.Value, axis: int, extra: int) -> ir.Value:
    shape = _shape(w)
    rank = len(shape)
    high = [0] * rank
    high[axis] = extra
    shape[axis] += extra
    elem = ir.RankedTensorType(w.type).element_type
    return make("pad", [w, _zeros([], elem)], _t(shape, elem),
                edge_padding_low=ir.DenseI64ArrayAttr.get([0] * rank),
                edge_padding_high=ir.DenseI64ArrayAttr.get(high),
                interior_padding=ir.DenseI64ArrayAttr.get([0] * rank))


def _chunked(w: ir.Value, axis: int, pl: SplitPlan | CrtPlan) -> ir.Value:
    """A digit array with its contraction axis cut into ``[chunks, chunk]``,
    the chunks next to the batch axis: ``[B, C, M, c]`` (lhs, ``axis`` 2) or
    ``[B, C, c, N]`` (rhs, ``axis`` 1), the layouts a batched dot takes."""
    shape = _shape(w)
    elem = ir.RankedTensorType(w.type).element_type
    pad = pl.chunks * pl.chunk - shape[axis]
    if pad:
        w = _pad(w, axis, pad)
    cut = make("reshape", [w], _t(shape[:axis] + [pl.chunks, pl.chunk] + shape[axis + 1:], elem))
    if axis == 1:
        return cut
    nb, m = shape[0], shape[1]
    return make("transpose", [cut], _t([nb, pl.chunks, m, pl.chunk], elem),
                permutation=ir.DenseI64ArrayAttr.get([0, 2, 1, 3]))


def _split_chunks(total: ir.Value, pl: SplitPlan) -> list[ir.Value]:
    """A level's ``i32`` sum: itself (one chunk), or its low ``beta`` bits
    and the rest, each summed over the chunks (axis 1)."""
    if pl.chunks == 1:
        return [total]
    low = _bin("and", total, _splat(total, 2**pl.beta - 1))
    high = make("shift_right_arithmetic", [total, _splat(total, pl.beta)], total.type)
    return [_reduce(low, [1], 0, "add"), _reduce(high, [1], 0, "add")]


def _dims(pl: SplitPlan, out: list[int]) -> tuple[list[int], list[int], int, int]:
    """A product's dot: its result's shape, batch dimensions and contracting
    dimensions of the lhs and the rhs (the chunks a batch dimension)."""
    nb, m, n = out
    if pl.chunks == 1:
        return out, [0], 2, 1
    return [nb, pl.chunks, m, n], [0, 1], 3, 2


def _cat(values: list[ir.Value], axis: int) -> ir.Value:
    """``values`` concatenated along ``axis``."""
    if len(values) == 1:
        return values[0]
    shape = _shape(values[0])
    shape[axis] *= len(values)
    elem = ir.RankedTensorType(values[0].type).element_type
    return make("concatenate", values, _t(shape, elem),
                dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), axis))


@dataclass
class _Digits:
    """Both operands' digits, each concatenated along the contraction: the
    lhs's ``d_1 .. d_s``, the rhs's ``e_s .. e_1``, so that the products
    of a run ``(i, L - i)``, ``i = i0 .. i1``, are one dot of two slices."""

    lhs: ir.Value
    rhs: ir.Value
    axes: tuple[int, int]  #: the contracting axes
    width: int  #: elements per digit along them

    def run(self, i0: int, i1: int, level: int, s: int) -> tuple[ir.Value, ir.Value]:
        def cut(v: ir.Value, axis: int, start: int, stop: int) -> ir.Value:
            shape = _shape(v)
            lo, hi = [0] * len(shape), list(shape)
            lo[axis], hi[axis] = start * self.width, stop * self.width
            out = list(shape)
            out[axis] = hi[axis] - lo[axis]
            if out == shape:
                return v
            elem = ir.RankedTensorType(v.type).element_type
            return make("slice", [v], _t(out, elem), start_indices=ir.DenseI64ArrayAttr.get(lo),
                        limit_indices=ir.DenseI64ArrayAttr.get(hi), strides=ir.DenseI64ArrayAttr.get([1] * len(shape)))

        # e_j is block s - j of the rhs
        rhs = cut(self.rhs, self.axes[1], s - (level - i0), s - (level - i1) + 1)
        return cut(self.lhs, self.axes[0], i0 - 1, i1), rhs


def _product(a: ir.Value, b: ir.Value, pl: SplitPlan, out: list[int]) -> ir.Value:
    shape, batch, contract, rhs_contract = _dims(pl, out)
    return _dot(a, b, batch, contract, rhs_contract, shape, _elem(pl.path.accumulates),
                highest=pl.path.operands == "f32")


def _level(dg: _Digits, level: int, pl: SplitPlan, out: list[int]) -> list[ir.Value]:
    """A level's exact sum as ``i32`` (``[B, M, N]``; see :func:`_split_chunks`):
    each group of its products one dot."""
    total: ir.Value | None = None
    for group in pl.groups(level):
        a, b = dg.run(group[0][0], group[-1][0], level, pl.slices)
        acc = _convert(_product(a, b, pl, out), i32())  # an integer within the exact range: exact
        total = acc if total is None else _bin("add", total, acc)
    assert total is not None
    return _split_chunks(total, pl)


def _scalar_i32(value: int) -> ir.Value:
    t = _t([], i32())
    return make("constant", [], t, value=ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(i32(), value)))


def _at(table: ir.Value, t: ir.Value) -> ir.Value:
    """Element ``t`` (a scalar ``i32``) of a 1-d ``i32`` table, as a scalar."""
    one = make("dynamic_slice", [table, t], _t([1], i32()), slice_sizes=ir.DenseI64ArrayAttr.get([1]))
    return make("reshape", [one], _t([], i32()))


def _block(v: ir.Value, axis: int, width: int, index: ir.Value) -> ir.Value:
    """Block ``index`` (a scalar ``i32``) of ``width`` elements along ``axis``."""
    shape = _shape(v)
    elem = ir.RankedTensorType(v.type).element_type
    zero = _scalar_i32(0)
    start = _bin("multiply", index, _scalar_i32(width))
    sizes = list(shape)
    sizes[axis] = width
    return make("dynamic_slice", [v] + [start if d == axis else zero for d in range(len(shape))], _t(sizes, elem),
                slice_sizes=ir.DenseI64ArrayAttr.get(sizes))


def _extra_levels(dg: _Digits, levels: list[int], needs: list[ir.Value],
                  pl: SplitPlan, out: list[int]) -> dict[int, list[ir.Value]]:
    """The ``levels`` (ascending) computed only where their ``needs``
    (scalar ``i1``, each implied by the next) hold: one ``while`` loop over
    their products, a product an iteration, as many as the levels needed
    hold -- a loop whose size does not grow with the levels it may compute."""
    table = [(i, j, n) for n, lv in enumerate(levels) for i, j in pl.products(lv)]
    count: ir.Value = _scalar_i32(0)
    for lv, need in zip(levels, needs):
        count = _bin("add", count, _sel(need, _scalar_i32(len(pl.products(lv))), _scalar_i32(0)))
    # the lhs's block i - 1, the rhs's block s - j
    tables = [const([len(table)], np.array([row[0] - 1 for row in table], dtype=np.int32), i32()),
              const([len(table)], np.array([pl.slices - row[1] for row in table], dtype=np.int32), i32()),
              const([len(table)], np.array([row[2] for row in table], dtype=np.int32), i32())]
    da, db = dg.lhs, dg.rhs
    shape, _, _, _ = _dims(pl, out)
    acc = _zeros([len(levels)] + shape, i32())
    state = [_scalar_i32(0), acc, count, da, db, *tables]
    types = [v.type for v in state]
    loop = build("while", state, types, regions=2)
    cond = loop.regions[0].blocks.append(*types)
    with ir.InsertionPoint(cond):
        t, _, n = cond.arguments[0], cond.arguments[1], cond.arguments[2]
        build("return", [_cmp(t, n, "LT", "SIGNED")], [])
    body = loop.regions[1].blocks.append(*types)
    with ir.InsertionPoint(body):
        t, acc, n, sa, sb, ti, tj, tl = list(body.arguments)
        i, j, slot = _at(ti, t), _at(tj, t), _at(tl, t)
        d = _convert(_product(_block(sa, dg.axes[0], dg.width, i), _block(sb, dg.axes[1], dg.width, j), pl, out),
                     i32())
        zero = _scalar_i32(0)
        idx = [slot] + [zero] * len(shape)
        cur = make("dynamic_slice", [acc, *idx], _t([1] + shape, i32()),
                   slice_sizes=ir.DenseI64ArrayAttr.get([1] + shape))
        new = _bin("add", cur, make("reshape", [d], _t([1] + shape, i32())))
        acc = make("dynamic_update_slice", [acc, new, *idx], acc.type)
        build("return", [_bin("add", t, _scalar_i32(1)), acc, n, sa, sb, ti, tj, tl], [])
    done = loop.results[1]
    got: dict[int, list[ir.Value]] = {}
    for n, lv in enumerate(levels):
        total = make("slice", [done], _t([1] + shape, i32()),
                     start_indices=ir.DenseI64ArrayAttr.get([n] + [0] * len(shape)),
                     limit_indices=ir.DenseI64ArrayAttr.get([n + 1] + shape),
                     strides=ir.DenseI64ArrayAttr.get([1] * (len(shape) + 1)))
        got[lv] = _split_chunks(make("reshape", [total], _t(shape, i32())), pl)
    return got


def _estimate_minimum(ra: _Rows, rb: _Rows, path: Matmul, out: list[int]) -> ir.Value:
    """The smallest one-pass estimate of ``(|A| |B|)_ij`` (scaled units)
    over the outputs whose row and column are scaled (``+inf`` if none)."""
    nb, m, n = out
    one = _elem(path.one_pass)
    est = _dot(_convert(ra.magnitude, one), _convert(rb.magnitude, one), [0], 2, 1, out, P.f32(), highest=False)
    i1 = ir.IntegerType.get_signless(1)
    both = make("and", [_bcast(ra.scaled, out, [0, 1]), _bcast(rb.scaled, out, [0, 2])], _t(out, i1))
    est = _sel(both, est, _splat(est, math.inf))
    return _reduce(est, [0, 1, 2], math.inf, "minimum")


def _carried(sums: dict[int, ir.Value], beta: int, base: int = 0) -> P.Pair:
    """The positions' exact ``i32`` sums (position ``p`` in units of
    ``2**(base - (p - 2) beta)``) as a pair: carried into one signed top and
    ``beta``-bit digits, taken as sign and magnitude, packed into words of
    at most 24 bits, added by Sum2."""
    mask = 2**beta - 1
    positions = sorted(sums)
    c = sums[positions[-1]]
    digits: dict[int, ir.Value] = {}
    for p in reversed(positions[:-1]):
        digits[p + 1] = _bin("and", c, _splat(c, mask))
        c = _bin("add", sums[p], make("shift_right_arithmetic", [c, _splat(c, beta)], c.type))
    top = positions[0]
    # sign and magnitude: -(c + f) = (~c) + (1 - f), 1 - f the digits
    # complemented plus one unit of the lowest
    neg = make("shift_right_arithmetic", [c, _splat(c, 31)], c.type)  # 0 or -1
    cm = make("xor", [c, neg], c.type)
    low = _bin("and", neg, _splat(neg, mask))
    digits = {p: make("xor", [d, low], d.type) for p, d in digits.items()}
    last = positions[-1]
    if last in digits:
        digits[last] = _bin("add", digits[last], _bin("and", neg, _splat(neg, 1)))
    # words: the top's 31 bits as two, then floor(24 / beta) digits each
    per = 24 // beta
    terms: list[tuple[ir.Value, int]] = []  # (word, exponent of its unit relative to g_1**2)
    unit = lambda p: base - (p - 2) * beta  # noqa: E731
    order = sorted(digits)
    for start in range(0, len(order), per):
        group = order[start:start + per]
        word: ir.Value | None = None
        for p in group:
            shifted = make("shift_left", [digits[p], _splat(digits[p], (group[-1] - p) * beta)], c.type)
            word = shifted if word is None else _bin("add", word, shifted)
        assert word is not None
        terms.append((word, unit(group[-1])))
    terms.append((_bin("and", cm, _splat(cm, 4095)), unit(top)))
    terms.append((make("shift_right_logical", [cm, _splat(cm, 12)], cm.type), unit(top) + 12))
    terms.sort(key=lambda t: t[1])
    fl = [_bin("multiply", _convert(w, P.f32()), _splat(_convert(w, P.f32()), 2.0**e)) for w, e in terms]
    acc, err = fl[0], None
    for t in fl[1:]:
        acc, q = P.two_sum(acc, t)
        err = q if err is None else _bin("add", err, q)
    assert err is not None
    z = P.two_sum(acc, err)
    isneg = _cmp(neg, _splat(neg, 0), "NE", "SIGNED")
    return P.Pair(_sel(isneg, make("negate", [z.hi], z.hi.type), z.hi),
                  _sel(isneg, make("negate", [z.lo], z.lo.type), z.lo))


def _levels(ra: _Rows, rb: _Rows, pl: SplitPlan, out: list[int], smallest: ir.Value | None) -> P.Pair:
    """The product by levels (steps 2 to 5) as a pair in units of ``g_1**2``
    (the rows' scalings left out); ``smallest`` the estimate's minimum
    (:func:`_estimate_minimum`), or ``None`` to compute it where needed."""
    operand = _elem(pl.path.operands)
    da = [_convert(d, operand) for d in _cut(ra, pl)]  # integers within the type's exact range
    db = [_convert(d, operand) for d in _cut(rb, pl)]
    axes = (2, 1)
    if pl.chunks > 1:
        da = [_chunked(w, 2, pl) for w in da]
        db = [_chunked(w, 1, pl) for w in db]
        axes = (3, 2)
    dg = _Digits(_cat(da, axes[0]), _cat(db[::-1], axes[1]), axes, _shape(da[0])[axes[0]])
    conditional = sorted(lv for lv in pl.levels if pl.conditional(lv))
    extra: dict[int, list[ir.Value]] = {}
    if conditional:
        if smallest is None:
            smallest = _estimate_minimum(ra, rb, pl.path, out)
        needs = [_cmp(smallest, _splat(smallest, pl.threshold(lv - 2)), "LT", "FLOAT") for lv in conditional]
        extra = _extra_levels(dg, conditional, needs, pl, out)
    sums: dict[int, ir.Value] = {}
    for lv in pl.levels:
        got = extra[lv] if lv in extra else _level(dg, lv, pl, out)
        for pos, v in zip((lv, lv - 1), got):
            sums[pos] = v if pos not in sums else _bin("add", sums[pos], v)
    return _carried(sums, pl.beta)


def _fvec(values: Sequence[float], shape: Sequence[int]) -> ir.Value:
    """An f32 constant, ``values`` along axis 0 of ``shape``."""
    t = _t([len(values)])
    vec = make("constant", [], t, value=ir.DenseElementsAttr.get(np.asarray(values, dtype=np.float32), type=t))
    return _bcast(vec, shape, [0])


def _reduced(x: ir.Value, moduli: Sequence[int]) -> ir.Value:
    """``x mod m`` in ``[-(m - 1) / 2, (m - 1) / 2]`` for f32 integers ``x``,
    ``|x| < 2**22``, and odd ``m`` (one modulus, or one for each index of
    ``x``'s axis 0): ``x - m round(x fl(1/m))``, exact (see ``_MOD_EXACT``)."""
    if len(moduli) == 1:
        mv, inv = _splat(x, float(moduli[0])), _splat(x, float(np.float32(1 / moduli[0])))
    else:
        mv, inv = _fvec([float(q) for q in moduli], _shape(x)), _fvec([1 / q for q in moduli], _shape(x))
    q = make("round_nearest_even", [_bin("multiply", x, inv)], x.type)
    return _bin("subtract", x, _bin("multiply", q, mv))


def _residues(rows: _Rows, cp: CrtPlan, axis: int) -> ir.Value:
    """``A' mod m_i`` for each modulus, balanced, as the operand type,
    stacked on a new axis 0 (and chunked as :func:`_chunked` lays out)."""
    digits = _cut(rows, cp.digits)
    stacked: list[ir.Value] = []
    for m, weights in zip(cp.moduli, cp.digit_weights):
        acc: ir.Value | None = None
        for d, w in zip(digits, weights):
            if w == 0:
                continue
            term = d if w == 1 else _bin("multiply", d, _splat(d, float(w)))
            acc = term if acc is None else _bin("add", acc, term)
        assert acc is not None  # the last digit's weight is 1
        r = _convert(_reduced(acc, [m]), _elem(cp.path.operands))
        if cp.chunks > 1:
            r = _chunked(r, axis, cp)
        stacked.append(make("reshape", [r], _t([1] + _shape(r), ir.RankedTensorType(r.type).element_type)))
    return _cat(stacked, 0)


def _crt(ra: _Rows, rb: _Rows, cp: CrtPlan, out: list[int]) -> P.Pair:
    """The product by residues as a pair in units of ``g_1**2`` (the rows'
    scalings left out): one batched dot of the residues, each result
    reduced modulo its modulus, the mixed-radix digits by Garner, their
    exact sum in positions of ``_POSITION_BITS`` bits, rounded once."""
    n_mod = len(cp.moduli)
    lhs, rhs = _residues(ra, cp, 2), _residues(rb, cp, 1)
    nb, m, n = out
    chunked = cp.chunks > 1
    batch = [0, 1, 2] if chunked else [0, 1]
    shape = [n_mod, nb] + ([cp.chunks] if chunked else []) + [m, n]
    total = _dot(lhs, rhs, batch, len(batch) + 1, len(batch), shape, _elem(cp.path.accumulates), highest=False)
    total = _convert(total, i32())
    # the exact i32 dots reduced: hi 2**_SPLIT + lo, hi times 2**_SPLIT mod m
    if cp.chunk * (max(cp.moduli) // 2) ** 2 < _MOD_EXACT:
        x = _convert(total, P.f32())
    else:
        hi = make("shift_right_arithmetic", [total, _splat(total, _SPLIT)], total.type)
        lo = _bin("and", total, _splat(total, 2**_SPLIT - 1))
        x = _bin("add", _bin("multiply", _convert(hi, P.f32()), _fvec([_balanced(2**_SPLIT, q) for q in cp.moduli],
                                                                       shape)), _convert(lo, P.f32()))
    c = _reduced(x, cp.moduli)
    if chunked:
        c = _reduced(_reduce(c, [2], 0.0, "add"), cp.moduli)
    res = [make("reshape", [make("slice", [c], _t([1] + out), start_indices=ir.DenseI64ArrayAttr.get([i, 0, 0, 0]),
                                 limit_indices=ir.DenseI64ArrayAttr.get([i + 1] + out),
                                 strides=ir.DenseI64ArrayAttr.get([1] * 4))], _t(out))
           for i in range(n_mod)]
    # Garner: v_i = (P_i**-1 c_i - sum_j (P_j P_i**-1) v_j) mod m_i, every
    # sum an f32 integer below 2**22
    v: list[ir.Value] = []
    for (inv, ws), q, ci in zip(cp.garner, cp.moduli, res):
        acc = ci if inv == 1 else _bin("multiply", ci, _splat(ci, float(inv)))
        for w, vj in zip(ws, v):
            if w:
                acc = _bin("subtract", acc, _bin("multiply", vj, _splat(vj, float(w))))
        v.append(_reduced(acc, [q]) if v else acc)  # v_1 = c_1
    # C' = sum_i v_i P_i, summed exactly in positions of _POSITION_BITS bits
    top = len(cp.positions[-1])
    sums: dict[int, ir.Value] = {}
    for t in range(top):
        acc = None
        for vi, ds in zip(v, cp.positions):
            if t < len(ds) and ds[t]:
                term = vi if ds[t] == 1 else _bin("multiply", vi, _splat(vi, float(ds[t])))
                acc = term if acc is None else _bin("add", acc, term)
        sums[top + 1 - t] = _convert(acc if acc is not None else _splat(v[0], 0.0), i32())
    return _carried(sums, _POSITION_BITS, cp.base)


def scheme(k: int, path: Matmul) -> CrtPlan | None:
    """The residues' plan where :func:`split_dot` computes a contraction of
    ``k`` elements on ``path`` by residues (they apply, :data:`RESIDUES`
    allows them, the datapath's profile says they pay there
    (:attr:`no64.targets.Matmul.residues`), and they compute fewer products
    than the levels do always), else ``None`` (the levels)."""
    if not (RESIDUES and path.residues):
        return None
    cp = crt_plan(k, path)
    if cp is None or len(cp.moduli) >= products(k, path)["levels"]:
        return None
    return cp


def split_dot(a: P.Pair, b: P.Pair, path: Matmul = F32_MATMUL) -> P.Pair:
    """``sum_l a[., i, l] * b[., l, j]`` of pairs ``a`` (``[B, M, K]``) and
    ``b`` (``[B, K, N]``) as a ``[B, M, N]`` pair, by exact integer
    digits on ``path``: by residues where :func:`scheme` says so and the
    data are within their span, else by levels (see the module's
    docstring for the method and its bound)."""
    nb, m, k = a.shape
    n = b.shape[2]
    out = [nb, m, n]
    pl = plan(k, path)
    ra, rb = _rows(a, 2), _rows(b, 1)
    cp = scheme(k, path)
    if cp is None:
        z = _levels(ra, rb, pl, out, None)
    else:
        assert cp.digits.grid(1) == pl.grid(1)  # both pairs in units of g_1**2
        smallest = _estimate_minimum(ra, rb, path, out)
        within = _cmp(smallest, _splat(smallest, cp.threshold), "GE", "FLOAT")
        hi, lo = _case(within, [_t(out), _t(out)], lambda: list(_crt(ra, rb, cp, out)),
                       lambda: list(_levels(ra, rb, pl, out, smallest)))
        z = P.Pair(hi, lo)
    # back: 2**(ea + eb) g_1**2 in two exact steps (each factor a normal f32)
    e = _bin("add", _bcast(ra.exponent, out, [0, 1]), _bcast(rb.exponent, out, [0, 2]))
    e = _bin("add", e, _splat(e, 2 * round(math.log2(pl.grid(1)))))
    e1 = make("shift_right_arithmetic", [e, _splat(e, 1)], e.type)
    e2 = _bin("subtract", e, e1)
    low = _splat(e, -126)
    f1, f2 = _pow2(_bin("maximum", e1, low)), _pow2(_bin("maximum", e2, low))
    z = P.Pair(_bin("multiply", _bin("multiply", z.hi, f1), f2), _bin("multiply", _bin("multiply", z.lo, f1), f2))
    z = P.finish(z)
    # rows or columns with an inf or a NaN: the dot of the signs, inf and NaN
    i1 = ir.IntegerType.get_signless(1)
    bad = make("or", [_bcast(ra.bad, out, [0, 1]), _bcast(rb.bad, out, [0, 2])], _t(out, i1))
    one = _elem(path.one_pass)

    def special() -> list[ir.Value]:
        return [_dot(_convert(ra.signs, one), _convert(rb.signs, one), [0], 2, 1, out, P.f32(), highest=False)]

    if path.branches:
        (plain,) = _case(_reduce(bad, [0, 1, 2], False, "or"), [_t(out)], special)
    else:
        (plain,) = special()
    zf = _splat(plain, 0.0)
    return P.Pair(_sel(bad, plain, z.hi), _sel(bad, zf, z.lo))
