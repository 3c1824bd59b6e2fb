"""The range of float64 pairs (``float_policy="pairs"``): which float64
values f32 pairs hold within ``2**-48`` once f32 subnormals flush
(:func:`no64.ir.pairs.range_check`), checked against exact rationals, and
the arithmetic's published bounds held down to the smallest magnitude
claimed (2**-78) and up to 2**127, compiled and run on XLA's CPU backend
(which flushes f32 subnormals)."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from no64.ir import pairs as P
from no64.jax.reference import run_module

sys.path.insert(0, str(Path(__file__).parent))
from test_pairs import BINARY, BOUNDS, U2, build  # noqa: E402

F32_MAX = float(np.finfo(np.float32).max)
TINY = 2.0**-126


def flushed_pair(v: float) -> Fraction:
    """The exact value of ``v``'s pair with subnormal words read as zero."""
    hi, lo = P.split_f64(np.array([v]))
    h, lw = float(hi[0]), float(lo[0])
    return Fraction(0 if abs(h) < TINY else h) + Fraction(0 if abs(lw) < TINY else lw)


def out(v: float) -> bool:
    return bool(P.range_check(np.array([v])).bad[0])


@pytest.mark.parametrize("v, bad", [
    (F32_MAX, False), (-F32_MAX, False),
    (float(np.nextafter(F32_MAX, np.inf)), True), (2.0**128, True), (-1e300, True),
    (float(np.finfo(np.float64).max), False),  # the sentinel: mapped to f32's
    (TINY, False), (-TINY, False), (2.0**-100, False),  # exact pairs: lo = 0
    (2.0**-149, True), (1e-45, True), (float(np.nextafter(np.float32(TINY), np.float32(0))), True), (1e-300, True),
    (TINY * (1 + 2.0**-30), True),  # its low word would be 2**-156
    (2.0**-79 + 0.75 * TINY, True),  # a low word of 0.75 * 2**-126 flushes: 2**-47.4 of it lost
    (2.0**-78 + 0.75 * TINY, False), (PAIR_FULL := P.PAIR_FULL_MIN, False),
    (0.0, False), (-0.0, False), (np.inf, False), (-np.inf, False), (np.nan, False),
    (1.0 + 2.0**-140, False),  # a subnormal low word, far below 2**-48 of the value
    (float(np.nextafter(TINY, 0)), False),  # just below 2**-126, but its pair is 2**-126 within 2**-53
])
def test_boundary_values(v, bad):
    assert out(v) == bad
    assert PAIR_FULL == 2.0**-78


def test_over_and_under_masks():
    c = P.range_check(np.array([[1e39, 1.0], [1e-40, 0.0]]))
    assert c.over.tolist() == [True, False, False, False]
    assert c.under.tolist() == [False, False, True, False]
    assert c.first() == 0
    assert "beyond float32's range" in c.describe(1e39)
    assert "flush" in c.describe(1e-40)


@settings(max_examples=600, deadline=None)
@given(st.floats(min_value=2.0**-140, max_value=F32_MAX, allow_subnormal=False), st.booleans())
def test_range_check_is_the_exact_48_bit_claim(mag, negative):
    """A value passes exactly when its pair, words below 2**-126 flushed,
    is within 2**-48 of it (rationals); every value from 2**-78 passes."""
    v = -mag if negative else mag
    err = abs(flushed_pair(v) - Fraction(v))
    assert out(v) == (err > Fraction(2) ** -48 * abs(Fraction(v)))
    if mag >= 2.0**-78:
        assert not out(v)


def _operands(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Operands over the claimed range, half of them close in magnitude."""
    def draw(k: int) -> np.ndarray:
        e = rng.integers(-76, 125, k)  # (y below: within a factor 4 of x)
        return rng.uniform(1.0, 2.0, k) * 2.0**e * rng.choice([-1.0, 1.0], k)
    x, y = draw(n), draw(n)
    k = n // 2
    y[:k] = x[:k] * rng.uniform(0.25, 4.0, k) * rng.choice([-1.0, 1.0], k)  # sums that cancel, products that stay
    return x, y


@pytest.mark.parametrize("name", list(BINARY))
def test_bounds_hold_over_the_claimed_range(name):
    build_fn, _, exact = BINARY[name]
    rng = np.random.default_rng(78)
    n = 2048
    x, y = _operands(rng, n)
    assert not P.range_check(np.concatenate([x, y])).bad.any()
    xh, xl = P.split_f64(x)
    yh, yl = P.split_f64(y)
    m = build([(n, "f32")] * 4, 2, lambda a, b, c, d: build_fn(P.Pair(a, b), P.Pair(c, d)))
    zh, zl = run_module(m, [xh, xl, yh, yl])
    checked, worst = 0, Fraction(0)
    for i in range(n):
        a = Fraction(float(xh[i])) + Fraction(float(xl[i]))
        b = Fraction(float(yh[i])) + Fraction(float(yl[i]))
        t = exact(a, b)
        if not (Fraction(2) ** -78 <= abs(t) <= Fraction(2) ** 127):
            continue
        got = Fraction(float(zh[i])) + Fraction(float(zl[i]))
        worst = max(worst, abs(got - t) / abs(t))
        checked += 1
    assert checked > n // 3, checked
    assert worst <= BOUNDS[name] * Fraction(U2), f"{name}: {float(worst) / U2:.2f} u^2"
