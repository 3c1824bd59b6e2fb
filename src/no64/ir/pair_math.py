"""Transcendental functions on float64 pairs, from ``+``, ``-``, ``*`` and range reduction.

The functions here (``exp``, ``expm1``, ``log``, ``log1p``, ``sin``,
``cos``, ``tanh``, ``logistic``, ``power``) take and give normalized pairs
(:class:`no64.ir.pairs.Pair`) and never call a device's f32 transcendental
(the TPU v5e's f32 ``log`` is 4,030 ulps off, its ``exp`` 116): each is a
range reduction by exact error-free transformations (TwoSum, Dekker's
TwoProduct), a polynomial evaluated in pair arithmetic (its smallest terms
in f32, where their rounding is below ``2**-50`` of the result), and a
reconstruction by exact scalings.  The only quotients are pair quotients
(:func:`no64.ir.pairs.divide`), refined for the device's f32 division
(``div_ulp``), in ``log``'s reduction (where an exact residual makes its
error vanish to third order), ``tanh`` and ``logistic``.

* ``exp``: ``x = k ln2 + r`` with ``ln2`` in three f32 words (``k ln2``
  exact as pairs), ``|r| <= 0.35``; ``expm1(r)`` by its Taylor polynomial
  (degree 14: terms 2 to 8 in pairs, 9 to 14 in f32); ``2**k`` applied as
  two exact power-of-two factors.  Beyond f32's range the result is
  ``inf`` (``x > 88.73``), below ``2**-126`` zero, as the pairs' range
  says.
* ``log``: ``x = 2**e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (the
  exponent read from the hi word's bits, exact scalings), ``log m =
  2 atanh(s)``, ``s = (m - 1) / (m + 1)`` as a pair quotient corrected by
  its exact residual to a third word, ``2 atanh(s) = 2s + s z Q(z)``,
  ``z = s**2``, and ``e ln2`` exact in three words: the logarithm is
  carried as a hi word and a pair (:class:`Wide`) for ``power``.
* ``sin``, ``cos``: ``x = k pi/2 + r`` with ``pi/2`` in five f32 words,
  for ``|x| <= SIN_COS_MAX`` (2**20); their Taylor polynomials on ``r``,
  the quadrant ``k mod 4`` choosing.  Beyond, NaN.
* ``tanh``: ``-expm1(-2|x|) / (2 + expm1(-2|x|))`` with ``x``'s sign;
  ``logistic``: ``1 / (1 + exp(-x))`` as ``exp(-|x|)`` over ``1 +
  exp(-|x|)`` (for ``x < 0``) or ``1`` over it.
* ``power``: ``|x|**y = exp(y log|x|)`` with the logarithm and the product
  kept to about ``2**-70`` in three words, so that the reduction of the
  exponent loses nothing; C99's special cases as XLA's float64 ``power``.

The error bounds are :func:`bounds`; ``tests/rules/test_pair_math.py``
holds each to them against mpmath, on IEEE f32 and on a simulated device
whose division and square root are a few ulps off and which flushes
subnormals.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial
from typing import NamedTuple

import numpy as np

from ._mlir import ir
from .pairs import (
    Pair,
    _and,
    _bin,
    _bitcast,
    _cmp,
    _fsplat,
    _isplat,
    _or,
    _sel,
    _times_float,
    _un,
    absolute,
    add,
    barrier,
    compare,
    divide,
    error_bounds as P_error_bounds,
    finish,
    floor,
    from_f32,
    multiply,
    negate,
    select,
    two_prod,
    two_sum,
)
from .words import i1, i32, make, shape_of, tensor_type

__all__ = ["Wide", "exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "logistic", "power",
           "SIN_COS_MAX", "bounds"]

#: ln 2 and pi/2 to 170 and 240 bits (their decimal expansions cut after 55 and 74 digits).
_LN2 = Fraction("0.6931471805599453094172321214581765680755001343602552541")
_PI_2 = Fraction("1.57079632679489661923132169163975144209858469968755291048747229615390820314")
_TWO_OVER_PI = 0.6366197723675814
_LOG2E = 1.4426950408889634

#: ``sin`` and ``cos`` hold their bound for ``|x|`` up to this (2**20); beyond
#: it the reduction by ``pi/2`` in five words would lose the quadrant's bits,
#: and they are NaN.
SIN_COS_MAX = 2.0**20

#: ``exp``'s operand is clamped to this range before the reduction (its
#: result beyond it is ``inf`` or 0, selected).
_EXP_HIGH = 89.0
_EXP_LOW = -104.0


def _words(v: Fraction, n: int) -> list[float]:
    """``v`` as ``n`` f32 words, each the rest rounded (their sum within
    ``2**(-24 n)`` of ``v`` relative)."""
    out = []
    for _ in range(n):
        w = float(np.float32(float(v)))
        out.append(w)
        v -= Fraction(w)
    return out


_LN2_W = _words(_LN2, 3)
_PI_2_W = _words(_PI_2, 5)


class Wide(NamedTuple):
    """A value carried to about ``2**-70``: ``hi`` an f32, ``rest`` a pair of
    at most a few ulps of ``hi`` (not normalized against ``hi``)."""

    hi: ir.Value
    rest: Pair


# ------------------------------------------------------------------ helpers
def _consts(like: ir.Value, *values: float) -> list[ir.Value]:
    """f32 splats through one barrier (a compiler folding arithmetic on
    constants does not keep error terms)."""
    return barrier(*[_fsplat(like, v) for v in values])


def _cpair(like: ir.Value, v: Fraction) -> Pair:
    hi, lo = _words(v, 2)
    h, lo_ = _consts(like, hi, lo)
    return Pair(h, lo_)


def _pow2(k: ir.Value) -> ir.Value:
    """``2**k`` for an integer-valued f32 ``k`` in ``[-126, 127]`` (from its bits)."""
    ki = make("convert", [k], tensor_type(shape_of(k), i32()))
    b = _bin("shift_left", _bin("add", ki, _isplat(ki, 127)), _isplat(ki, 23))
    return _bitcast(b, ir.F32Type.get())


def _scale2(x: Pair, k: ir.Value) -> Pair:
    """``x * 2**k`` for an integer-valued f32 ``k`` in ``[-252, 254]``: two
    exact power-of-two factors (unless the result leaves f32's range)."""
    k1 = _un("floor", _bin("multiply", k, _fsplat(k, 0.5)))
    k2 = _bin("subtract", k, k1)
    f1, f2 = _pow2(k1), _pow2(k2)
    return Pair(_bin("multiply", _bin("multiply", x.hi, f1), f2), _bin("multiply", _bin("multiply", x.lo, f1), f2))


def _horner32(z: ir.Value, coeffs: list[float]) -> ir.Value:
    """``sum(c_i z**i)`` in f32 by Horner's rule (coefficients from the constant term up)."""
    cs = _consts(z, *coeffs)
    t = cs[-1]
    for c in reversed(cs[:-1]):
        t = _bin("add", c, _bin("multiply", z, t))
    return t


def _horner(z: Pair, pair_coeffs: list[Fraction], tail: list[Fraction]) -> Pair:
    """``sum(c_i z**i)``: the coefficients ``pair_coeffs`` (from the
    constant term up) in pair arithmetic, the further ones ``tail`` in
    f32 on ``z``'s hi word."""
    t = _horner32(z.hi, [float(c) for c in tail])
    p = _times_float(z, t)
    for c in reversed(pair_coeffs[1:]):
        p = multiply(z, add(_cpair(z.hi, c), p))
    return add(_cpair(z.hi, pair_coeffs[0]), p)


def _sum_floats(*terms: ir.Value) -> Pair:
    """The floats ``terms`` (each at most a few ulps of the value they are
    added to) summed as a pair: pairwise TwoSums, then pair additions."""
    pairs = [two_sum(terms[i], terms[i + 1]) if i + 1 < len(terms) else from_f32(terms[i])
             for i in range(0, len(terms), 2)]
    acc = pairs[0]
    for p in pairs[1:]:
        acc = add(acc, p)
    return acc


def _is_nan(v: ir.Value) -> ir.Value:
    return _cmp(v, v, "NE")


def _fin(v: ir.Value) -> ir.Value:
    return make("is_finite", [v], tensor_type(shape_of(v), i1()))


def _splat_pair(like: ir.Value, v: float) -> Pair:
    return from_f32(_fsplat(like, v))


# ---------------------------------------------------------------------- exp
_EXPM1_PAIR = [Fraction(1, factorial(j)) for j in range(2, 9)]  # 1/2! .. 1/8!
_EXPM1_TAIL = [Fraction(1, factorial(j)) for j in range(9, 15)]  # 1/9! .. 1/14!


def _exp_reduced(x: Wide) -> tuple[ir.Value, Pair]:
    """``k`` (integer-valued f32) and ``e = expm1(r)`` (a pair) with
    ``x = k ln2 + r``, ``|r| <= 0.35``: ``exp(x) = 2**k (1 + e)``.  ``x.hi``
    is clamped to ``[_EXP_LOW, _EXP_HIGH]`` (callers select beyond)."""
    hi = make("clamp", [_fsplat(x.hi, _EXP_LOW), x.hi, _fsplat(x.hi, _EXP_HIGH)], x.hi.type)
    log2e, l1, l2, l3 = _consts(hi, _LOG2E, *_LN2_W)
    k = _un("round_nearest_even", _bin("multiply", hi, log2e))
    p1 = two_prod(k, l1)
    p2 = two_prod(k, l2)
    r = add(two_sum(hi, _un("negate", p1.hi)), x.rest)  # (hi - k l1 exact by Sterbenz's lemma)
    low = two_sum(p1.lo, p2.hi)
    low = Pair(low.hi, _bin("add", low.lo, _bin("add", p2.lo, _bin("multiply", k, l3))))
    r = add(r, negate(low))
    # expm1(r) = r + r^2 (1/2 + r/6 + ...)
    p = _horner(r, _EXPM1_PAIR, _EXPM1_TAIL)
    e = add(r, multiply(multiply(r, r), p))
    return k, e


def _exp_wide(x: Wide) -> Pair:
    k, e = _exp_reduced(x)
    one = _splat_pair(x.hi, 1.0)
    z = finish(_scale2(add(one, e), k))
    big = _cmp(x.hi, _fsplat(x.hi, _EXP_HIGH), "GT")
    small = _cmp(x.hi, _fsplat(x.hi, _EXP_LOW), "LT")
    z = select(big, _splat_pair(x.hi, float("inf")), z)
    z = select(small, _splat_pair(x.hi, 0.0), z)
    return select(_is_nan(x.hi), Pair(x.hi, _fsplat(x.hi, 0.0)), z)


def exp(x: Pair) -> Pair:
    """``e**x``: see the module docstring; bound :func:`bounds` ``exp``."""
    return _exp_wide(Wide(x.hi, from_f32(x.lo)))


def expm1(x: Pair) -> Pair:
    """``e**x - 1``, relative to itself also near 0: ``2**k e + (2**k - 1)``
    for ``k <= 0`` (``e`` itself for ``k = 0``), ``2**k (e + (1 - 2**-k))``
    for ``k > 0``; -1 below ``_EXP_LOW``, ``inf`` above ``_EXP_HIGH``."""
    k, e = _exp_reduced(Wide(x.hi, from_f32(x.lo)))
    one = _fsplat(k, 1.0)
    # k <= 0: 2^k e + (2^k - 1)
    kn = make("clamp", [_fsplat(k, -126.0), k, _fsplat(k, 0.0)], k.type)
    neg = add(_scale2(e, k), two_sum(_pow2(kn), _un("negate", one)))
    # k > 0: 2^k (e + (1 - 2^-k))
    kp = make("clamp", [_fsplat(k, 1.0), k, _fsplat(k, 126.0)], k.type)
    pos = _scale2(add(e, two_sum(one, _un("negate", _pow2(_un("negate", kp))))), k)
    z = finish(select(_cmp(k, _fsplat(k, 0.0), "GT"), pos, neg))
    big = _cmp(x.hi, _fsplat(x.hi, _EXP_HIGH), "GT")
    small = _cmp(x.hi, _fsplat(x.hi, _EXP_LOW), "LT")
    z = select(big, _splat_pair(x.hi, float("inf")), z)
    z = select(small, _splat_pair(x.hi, -1.0), z)
    # -0, +0 and NaN as they are
    keep = _or(_cmp(x.hi, _fsplat(x.hi, 0.0), "EQ"), _is_nan(x.hi))
    return select(keep, x, z)


# ---------------------------------------------------------------------- log
_ATANH_PAIR = [Fraction(2, 2 * j + 3) for j in range(0, 4)]  # 2/3, 2/5, 2/7, 2/9
_ATANH_TAIL = [Fraction(2, 2 * j + 3) for j in range(4, 9)]  # 2/11 .. 2/19


def _log1p_reduced(f: Pair, div_ulp: float) -> Wide:
    """``log(1 + f)`` for ``f`` in ``[sqrt(1/2) - 1, sqrt(2) - 1]`` to about
    ``2**-70``: ``2 atanh(s)``, ``s = f / (2 + f)``.  The pair quotient
    ``s`` is corrected by ``c = rho / (2 + f)``, its residual ``rho = f -
    2s - s f`` summed from exact products (no rounding of ``2 + f``), so
    ``s + c`` is within about ``2**-66`` of ``f / (2 + f)``."""
    two = _splat_pair(f.hi, 2.0)
    d = add(two, f)
    s = divide(f, d, div_ulp)
    # rho = (fh - 2sh - sh fh) + (fl - 2sl - sh fl - sl fh - sl fl): every term exact
    a = _bin("subtract", f.hi, _bin("add", s.hi, s.hi))  # exact: 2s within (0.8, 1.3) of f
    ph = two_prod(s.hi, f.hi)
    q1 = two_prod(s.hi, f.lo)
    q2 = two_prod(s.lo, f.hi)
    small = _bin("add", _bin("add", q1.lo, q2.lo), _bin("multiply", s.lo, f.lo))
    rho = add(two_sum(a, _un("negate", ph.hi)), two_sum(f.lo, _un("negate", _bin("add", s.lo, s.lo))))
    rho = add(rho, negate(two_sum(ph.lo, q1.hi)))
    rho = add(rho, negate(two_sum(q2.hi, small)))
    c = _bin("divide", rho.hi, d.hi)
    # 2 atanh(s) = 2s + s z Q(z), z = s^2
    z = multiply(s, s)
    q = multiply(multiply(s, z), _horner(z, _ATANH_PAIR, _ATANH_TAIL))
    s2h = _bin("add", s.hi, s.hi)
    top = two_sum(s2h, q.hi)
    rest = add(two_sum(_bin("add", s.lo, s.lo), top.lo), two_sum(_bin("add", c, c), q.lo))
    return Wide(top.hi, rest)


_SQRT2 = float(np.float32(1.4142135))


def _log_wide(x: Pair, div_ulp: float, one_plus: Pair | None = None) -> Wide:
    """``log(x)`` for a positive normal ``x`` (or ``log1p(one_plus)`` with
    ``x = 1 + one_plus``) as a :class:`Wide`."""
    bits = _bitcast(x.hi, i32())
    ex = _bin("and", make("shift_right_logical", [bits, _isplat(bits, 23)], bits.type), _isplat(bits, 255))
    e = _bin("subtract", make("convert", [ex], x.hi.type), _fsplat(x.hi, 127.0))
    m = _scale2(x, _un("negate", e))  # in [1, 2)
    up = _cmp(m.hi, _fsplat(m.hi, _SQRT2), "GE")
    e = _sel(up, _bin("add", e, _fsplat(e, 1.0)), e)
    m = Pair(_sel(up, _bin("multiply", m.hi, _fsplat(m.hi, 0.5)), m.hi),
             _sel(up, _bin("multiply", m.lo, _fsplat(m.lo, 0.5)), m.lo))
    f = two_sum(_bin("subtract", m.hi, _fsplat(m.hi, 1.0)), m.lo)  # exact
    if one_plus is not None:
        f = select(_cmp(e, _fsplat(e, 0.0), "EQ"), one_plus, f)
    lm = _log1p_reduced(f, div_ulp)
    l1, l2, l3 = _consts(e, *_LN2_W)
    a1 = two_prod(e, l1)
    a2 = two_prod(e, l2)
    top = two_sum(a1.hi, lm.hi)
    rest = add(two_sum(top.lo, a1.lo), two_sum(a2.hi, _bin("add", a2.lo, _bin("multiply", e, l3))))
    rest = add(rest, lm.rest)
    return Wide(top.hi, rest)


def _log_specials(x: Pair, z: Pair, at_zero: ir.Value) -> Pair:
    """``z`` where ``x`` (the operand of ``log``, or ``1 + x`` of ``log1p``)
    is positive, normal and finite; ``-inf`` at ``at_zero``, NaN below
    zero or at NaN, ``inf`` at ``inf``."""
    zero = _fsplat(x.hi, 0.0)
    z = select(_cmp(x.hi, _fsplat(x.hi, float("inf")), "EQ"), _splat_pair(x.hi, float("inf")), z)
    z = select(at_zero, _splat_pair(x.hi, float("-inf")), z)
    nan = _or(_is_nan(x.hi), _and(_cmp(x.hi, zero, "LT"), _un("not", at_zero)))
    return select(nan, _splat_pair(x.hi, float("nan")), z)


def _wide_to_pair(w: Wide) -> Pair:
    return finish(add(from_f32(w.hi), w.rest))


def log(x: Pair, div_ulp: float = 0.5) -> Pair:
    """The natural logarithm: bound :func:`bounds` ``log``; ``-inf`` at
    ``+-0`` (and below ``2**-126``, flushed), NaN below zero."""
    tiny = _cmp(_un("abs", x.hi), _fsplat(x.hi, 2.0**-126), "LT")
    safe = select(tiny, _splat_pair(x.hi, 1.0), x)
    z = _wide_to_pair(_log_wide(safe, div_ulp))
    return _log_specials(x, z, tiny)


def log1p(x: Pair, div_ulp: float = 0.5) -> Pair:
    """``log(1 + x)``, relative to itself also near 0 (``1 + x`` reduced
    as ``log`` reduces it, but ``x`` itself taken where the exponent is
    0); ``-inf`` at -1, NaN below."""
    u = add(_splat_pair(x.hi, 1.0), x)
    at = compare("EQ", u, _splat_pair(x.hi, 0.0))
    tiny = _cmp(_un("abs", u.hi), _fsplat(u.hi, 2.0**-126), "LT")
    safe = select(tiny, _splat_pair(x.hi, 1.0), u)
    xs = select(tiny, _splat_pair(x.hi, 0.0), x)
    z = _wide_to_pair(_log_wide(safe, div_ulp, one_plus=xs))
    z = _log_specials(u, z, _or(at, tiny))
    z = select(_cmp(x.hi, _fsplat(x.hi, -1.0), "LT"), _splat_pair(x.hi, float("nan")), z)
    keep = _or(_cmp(x.hi, _fsplat(x.hi, 0.0), "EQ"), _is_nan(x.hi))
    return select(keep, x, z)


# ------------------------------------------------------------------ sin, cos
_SIN_PAIR = [Fraction((-1) ** (j + 1), factorial(2 * j + 3)) for j in range(0, 4)]  # -1/3! .. 1/9!
_SIN_TAIL = [Fraction((-1) ** (j + 1), factorial(2 * j + 3)) for j in range(4, 8)]  # -1/11! .. 1/17!
_COS_PAIR = [Fraction((-1) ** (j + 1), factorial(2 * j + 2)) for j in range(0, 5)]  # -1/2! .. 1/10!
_COS_TAIL = [Fraction((-1) ** (j + 1), factorial(2 * j + 2)) for j in range(5, 9)]  # -1/12! .. 1/18!


def _sincos_reduced(x: Pair) -> tuple[ir.Value, Pair, Pair]:
    """``k mod 4`` (f32) and ``sin r``, ``cos r`` (pairs), ``x = k pi/2 + r``."""
    c, w1, w2, w3, w4, w5 = _consts(x.hi, _TWO_OVER_PI, *_PI_2_W)
    k = _un("round_nearest_even", _bin("multiply", x.hi, c))
    p1 = two_prod(k, w1)
    r = add(two_sum(x.hi, _un("negate", p1.hi)), two_sum(x.lo, _un("negate", p1.lo)))
    for w in (w2, w3):
        r = add(r, negate(two_prod(k, w)))
    p4 = two_prod(k, w4)
    r = add(r, negate(Pair(p4.hi, _bin("add", p4.lo, _bin("multiply", k, w5)))))
    quarter = _bin("multiply", k, _fsplat(k, 0.25))
    n = _bin("subtract", k, _bin("multiply", _un("floor", quarter), _fsplat(k, 4.0)))
    z = multiply(r, r)
    sin_r = add(r, multiply(multiply(r, z), _horner(z, _SIN_PAIR, _SIN_TAIL)))
    cos_r = add(_splat_pair(x.hi, 1.0), multiply(z, _horner(z, _COS_PAIR, _COS_TAIL)))
    return n, sin_r, cos_r


def _quadrant(n: ir.Value, sin_r: Pair, cos_r: Pair, shift: float) -> Pair:
    """``sin(r + (n + shift) pi/2)``."""
    m = _bin("add", n, _fsplat(n, shift))
    m = _bin("subtract", m, _bin("multiply", _un("floor", _bin("multiply", m, _fsplat(m, 0.25))), _fsplat(m, 4.0)))
    odd = _cmp(_bin("subtract", m, _bin("multiply", _un("floor", _bin("multiply", m, _fsplat(m, 0.5))),
                                        _fsplat(m, 2.0))), _fsplat(m, 1.0), "EQ")
    v = select(odd, cos_r, sin_r)
    return select(_cmp(m, _fsplat(m, 2.0), "GE"), negate(v), v)


def _trig(x: Pair, shift: float) -> Pair:
    big = _cmp(_un("abs", x.hi), _fsplat(x.hi, SIN_COS_MAX), "GT")  # (and inf)
    bad = _or(big, _is_nan(x.hi))
    safe = select(bad, _splat_pair(x.hi, 0.0), x)
    n, s, c = _sincos_reduced(safe)
    z = finish(_quadrant(n, s, c, shift))
    return select(bad, _splat_pair(x.hi, float("nan")), z)


def sin(x: Pair) -> Pair:
    """The sine for ``|x| <= SIN_COS_MAX`` (NaN beyond, at inf and NaN;
    ``+-0`` as it is): bound :func:`bounds` ``sin``."""
    z = _trig(x, 0.0)
    return select(_cmp(x.hi, _fsplat(x.hi, 0.0), "EQ"), x, z)


def cos(x: Pair) -> Pair:
    """The cosine for ``|x| <= SIN_COS_MAX`` (NaN beyond, at inf and NaN)."""
    return _trig(x, 1.0)


# --------------------------------------------------------- tanh, logistic
def tanh(x: Pair, div_ulp: float = 0.5) -> Pair:
    """``-expm1(-2|x|) / (2 + expm1(-2|x|))`` with ``x``'s sign (``+-1``
    where ``expm1`` is -1; ``+-0`` and NaN as they are)."""
    ax = absolute(x)
    e = expm1(negate(add(ax, ax)))
    t = divide(negate(e), add(_splat_pair(x.hi, 2.0), e), div_ulp)
    t = select(_cmp(x.hi, _fsplat(x.hi, 0.0), "LT"), negate(t), t)
    keep = _or(_cmp(x.hi, _fsplat(x.hi, 0.0), "EQ"), _is_nan(x.hi))
    return finish(select(keep, x, t))


def logistic(x: Pair, div_ulp: float = 0.5) -> Pair:
    """``1 / (1 + exp(-x))``: ``exp(-|x|)`` over ``1 + exp(-|x|)`` for
    negative ``x``, 1 over it for the others (NaN as it is)."""
    e = exp(negate(absolute(x)))
    one = _splat_pair(x.hi, 1.0)
    num = select(_cmp(x.hi, _fsplat(x.hi, 0.0), "LT"), e, one)
    z = divide(num, add(one, e), div_ulp)
    return finish(select(_is_nan(x.hi), x, z))


# -------------------------------------------------------------------- power
def _is_int(y: Pair) -> ir.Value:
    return compare("EQ", floor(y), y)


def _is_odd(y: Pair) -> ir.Value:
    half = Pair(_bin("multiply", y.hi, _fsplat(y.hi, 0.5)), _bin("multiply", y.lo, _fsplat(y.lo, 0.5)))
    return _and(_is_int(y), _un("not", _is_int(half)))


def power(x: Pair, y: Pair, div_ulp: float = 0.5) -> Pair:
    """``x**y`` as C99's ``pow`` (XLA's float64 ``power``): ``exp(y
    log|x|)`` with the logarithm and the product carried in three words,
    negated for a negative ``x`` and an odd integer ``y``, NaN for a
    negative ``x`` and any other finite ``y``; 1 where ``y`` is 0 or ``x``
    is 1 (NaN or not); the signed zeros and infinities of ``pow``."""
    zero = _fsplat(x.hi, 0.0)
    ax = absolute(x)
    tiny = _cmp(ax.hi, _fsplat(ax.hi, 2.0**-126), "LT")
    xinf = _cmp(ax.hi, _fsplat(ax.hi, float("inf")), "EQ")
    safe = select(_or(tiny, _or(xinf, _is_nan(x.hi))), _splat_pair(x.hi, 2.0), ax)
    lw = _log_wide(safe, div_ulp)
    # t = y * log|x| to about 2**-70
    p = two_prod(y.hi, lw.hi)
    q1 = two_prod(y.hi, lw.rest.hi)
    q2 = two_prod(y.lo, lw.hi)
    small = _bin("add", _bin("add", q1.lo, q2.lo),
                 _bin("add", _bin("multiply", y.hi, lw.rest.lo), _bin("multiply", y.lo, lw.rest.hi)))
    rest = add(two_sum(p.lo, q1.hi), two_sum(q2.hi, small))
    yinf = _cmp(_un("abs", y.hi), _fsplat(y.hi, float("inf")), "EQ")
    # (an infinite t is selected below; keep the reduction finite)
    t_ok = _fin(p.hi)
    rest = select(t_ok, rest, _splat_pair(x.hi, 0.0))
    z = _exp_wide(Wide(p.hi, rest))
    yint, yodd = _is_int(y), _is_odd(y)
    xneg = _cmp(x.hi, zero, "LT")
    # a negative x: its sign for an odd y, NaN for a non-integer one
    z = select(_and(xneg, yodd), negate(z), z)
    z = select(_and(xneg, _and(_un("not", yint), _fin(y.hi))), _splat_pair(x.hi, float("nan")), z)
    ypos = _cmp(y.hi, zero, "GT")
    inf, nan = _splat_pair(x.hi, float("inf")), _splat_pair(x.hi, float("nan"))
    zp = _splat_pair(x.hi, 0.0)
    # x = +-0 (or below f32's normals): +-0 / +-inf by y's sign, x's sign for an odd y
    sx = select(ypos, _splat_pair(x.hi, 0.0), _splat_pair(x.hi, float("inf")))
    signed = _and(yodd, _cmp(_bitcast(x.hi, i32()), _isplat(_bitcast(x.hi, i32()), 0), "LT"))
    at0 = select(signed, negate(sx), sx)
    z = select(tiny, at0, z)
    # x = +-inf: +inf / +0 by y's sign, -inf / -0 for x = -inf and an odd y
    atinf = select(ypos, inf, zp)
    atinf = select(_and(xneg, yodd), negate(atinf), atinf)
    z = select(xinf, atinf, z)
    # y = +-inf: by |x| against 1
    one = _splat_pair(x.hi, 1.0)
    bigger = compare("GT", ax, one)
    smaller = compare("LT", ax, one)
    aty = select(_or(_and(bigger, ypos), _and(smaller, _un("not", ypos))), inf, zp)
    aty = select(compare("EQ", ax, one), one, aty)
    z = select(_and(yinf, _un("not", _is_nan(x.hi))), aty, z)
    z = select(_or(_is_nan(x.hi), _is_nan(y.hi)), nan, z)
    # y = +-0, x = 1: 1 whatever the other
    z = select(_or(_cmp(y.hi, zero, "EQ"), compare("EQ", x, one)), one, z)
    return finish(z)


# ------------------------------------------------------------------- bounds
def bounds(div_ulp: float = 0.5) -> dict[str, float]:
    """Relative error bounds of the functions here, in ``u^2`` (``u =
    2**-24``), for operands and results between ``2**-70`` and ``2**120`` in
    magnitude, on a device whose f32 add, subtract and multiply round
    correctly and whose division is within ``div_ulp`` ulps (``sin``,
    ``cos`` for ``|x| <= SIN_COS_MAX``; ``power`` within ``power_0 +
    power_t |y log x|``).  The float pairs guide sketches how each is
    derived.

    * ``exp`` 10: the reduced ``r`` within ``2.2u^2`` absolute (two pair
      additions on values below 0.36, ``k ln2`` exact but for ``128 *
      2**-73``); ``expm1(r)`` within ``4u^2`` of ``1 + expm1(r)`` (its
      last addition ``3u^2 |e|``, ``|e| <= 0.42``, the product ``r^2 p``
      ``7u^2`` of ``0.07``, the rest below ``0.5u^2``, the polynomial's
      truncation ``2**-52``); ``1 + e`` rounded, ``3u^2``; the scaling exact.
    * ``expm1`` 12: the same ``e``, and one more pair addition whose
      operands are at most twice the result.
    * ``log`` 6: ``log m`` carried to about ``2**-66`` (the quotient's
      residual is summed from exact products, so the division's ulps fall
      on a third word) but for ``s z Q(z)``, at most 0.01 of it and within
      ``25u^2`` of itself; ``e ln2`` exact to ``2**-65``; the final
      rounding to a pair ``3u^2``.
    * ``log1p`` 16: ``log``'s, and where the exponent of ``1 + x`` is not
      0 (``x < -0.29`` or ``x > 0.41``), ``1 + x`` rounded (``3u^2``,
      amplified at most 4.1 times: ``|1 + x| / |log(1 + x)|``).
    * ``sin``, ``cos`` 16: ``r = x - k pi/2`` with ``pi/2`` in five
      words (truncated ``2**-120``), each ``k w_i`` exact as a pair, taken
      off by four pair additions; the first two are exact where ``x`` and
      ``k (w_1 + w_2)`` lie on a common grid of ``2**-48`` at most 48 bits
      wide (``|x| <= 2**20``), the others within ``3u^2`` of a value below
      ``|r| + 2**-28``; the polynomials within ``4u^2`` (``|r| <= 0.9``).
      The additions' exactness is not proven: the tests hold it to the
      bound on the pairs nearest ``k pi/2`` (where ``r`` is smallest).
    * ``tanh``: twice ``expm1``'s, ``2 + e`` (``3u^2``) and the pair
      quotient (:func:`no64.ir.pairs.error_bounds`' ``divide``);
      ``logistic``: twice ``exp``'s, ``3u^2`` and the quotient's.
    * ``power``: ``exp``'s (``power_0``) and ``y log|x|`` within ``0.5u^2``
      of itself (``power_t``): the logarithm's ``s z Q(z)`` is its only
      term rounded to a pair, at most 0.01 of it."""
    div = P_error_bounds(div_ulp=div_ulp)["divide"]
    b = dict(_BOUNDS_BASE)
    b["tanh"] = 2 * b["expm1"] + 3.0 + div
    b["logistic"] = 2 * b["exp"] + 3.0 + div
    return b


_BOUNDS_BASE: dict[str, float] = {"exp": 10.0, "expm1": 12.0, "log": 6.0, "log1p": 16.0, "sin": 16.0,
                                  "cos": 16.0, "power_0": 10.0, "power_t": 0.5}
