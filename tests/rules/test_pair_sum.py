"""Sums over an axis on float64 pairs (``reduce`` with an add body).

Each converted program's output is held to the exact sum of its pair inputs
(rationals of ``hi + lo``) within the bound :func:`no64.rules.pair_rules.blocked_sum`
states: ``(SUM_FOLDS + depth * SUM_BLOCK + 1) * 3u^2`` of the sum of
magnitudes (each term passes through ``SUM_FOLDS`` folding additions, a
blocked tree of ``depth`` levels of up to ``SUM_BLOCK`` additions, and the
init's), on rows spanning ``2**+-60``, cancelling rows and odd lengths; and
inf, NaN and zero signs against the x64 program.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import lower_x64, run_module
from no64.rules.pair_rules import SUM_BLOCK, SUM_FOLDS
from support import enable_x64

RNG = np.random.default_rng(5)
U = 2.0**-24


def _convert(fn, x: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    m = lower_x64(fn, x)
    no64.demote(m, float_policy="pairs", check=True)
    ins = no64.split_pairs(x)
    (out,) = run_module(m, [ins])
    return str(m), ins, no64.join_pairs(out)


def _bound_factor(n: int) -> float:
    folds = 0
    while folds < SUM_FOLDS and n > SUM_BLOCK:
        n = -(-n // 2)
        folds += 1
    depth = max(1, math.ceil(math.log(max(n, 2), SUM_BLOCK)))
    return 3 * U**2 * (folds + depth * SUM_BLOCK + 1) * 1.01


@pytest.mark.parametrize("n", [1, 17, 100, 1000, 4097])
def test_row_sums_against_exact(n: int) -> None:
    rows = 5
    x = RNG.standard_normal((rows, n)) * 2.0 ** RNG.integers(-60, 61, (rows, 1))
    x[1] *= 2.0 ** RNG.integers(-30, 31, n)  # one row spreads over 2**+-30 itself
    if n > 1:
        x[2, n // 2:] = -x[2, : n - n // 2][: n - n // 2]  # cancelling halves ...
        x[2, 0] += 1e-9 * x[2, 0]  # ... but for a little
    x[3] = 0.0
    text, ins, got = _convert(lambda v: jnp.sum(v, axis=1), x)
    assert "f64" not in text
    hi, lo = ins[..., 0], ins[..., 1]
    worst = 0.0
    for r in range(rows):
        terms = [Fraction(float(h)) + Fraction(float(l_)) for h, l_ in zip(hi[r], lo[r])]
        exact = sum(terms, Fraction(0))
        mag = sum((abs(t) for t in terms), Fraction(0))
        err = abs(Fraction(float(got[r])) - exact)
        assert err <= Fraction(_bound_factor(n)) * mag + Fraction(2.0**-140), (r, float(err / mag) if mag else err)
        if mag:
            worst = max(worst, float(err / mag))
    assert got[3] == 0
    if n >= 100:
        assert worst > 0  # not vacuous: the sums do round


def test_inf_nan_and_zero_signs_match_float64() -> None:
    x = RNG.standard_normal((6, 40))
    x[0, 3] = np.inf
    x[1, 5], x[1, 6] = np.inf, -np.inf
    x[2, 7] = np.nan
    x[3] = -0.0
    x[4] = 0.0
    x[4, ::2] = -0.0
    x[5, 0] = 3e38  # the hi words' sum overflows f32
    x[5, 1] = 3e38
    with enable_x64(True):
        ref = np.asarray(jax.jit(lambda v: jnp.sum(v, axis=1))(x))
    _, _, got = _convert(lambda v: jnp.sum(v, axis=1), x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(got[:2][~np.isnan(got[:2])], ref[:2][~np.isnan(ref[:2])])
    assert np.signbit(got[3]) == np.signbit(ref[3]) and np.signbit(got[4]) == np.signbit(ref[4])
    assert got[5] == np.inf  # beyond a pair's range (f32's), as every pair op


def test_sums_of_inputs_and_of_values_read_once_are_folded_others_not() -> None:
    """Inputs, and values computed from them by values each read once, are
    folded in halves (elementwise pair additions, no reduce over the whole
    row); a computed value read twice goes to the blocked reduces as it is
    -- within the bound either way."""
    x = RNG.standard_normal((3, 256))

    def twice(v):
        w = v * v
        return jnp.sum(w, axis=1) + w[:, 0]

    folded, ins, got = _convert(lambda v: jnp.sum(v, axis=1), x)
    once, _, got_once = _convert(lambda v: jnp.sum(v * v, axis=1), x)
    blocked, _, got_twice = _convert(twice, x)

    def reduces(text: str) -> str:
        return " ".join(line for line in text.splitlines() if "stablehlo.reduce(" in line)

    # folded: one reduce of the 256 / 2**4 terms left; not: blocks of 16 x 16
    for text in (folded, once):
        assert "tensor<3x16x16xf32>" not in reduces(text) and "tensor<3x16xf32>" in reduces(text)
    assert "tensor<3x16x16xf32>" in reduces(blocked)
    for r in range(3):
        terms = [Fraction(float(h)) + Fraction(float(l_)) for h, l_ in zip(ins[r, :, 0], ins[r, :, 1])]
        exact = sum(terms, Fraction(0))
        mag = sum((abs(t) for t in terms), Fraction(0))
        assert abs(Fraction(float(got[r])) - exact) <= Fraction(_bound_factor(256)) * mag
    np.testing.assert_allclose(got_once, (x * x).sum(1), rtol=1e-13)
    np.testing.assert_allclose(got_twice, (x * x).sum(1) + x[:, 0] ** 2, rtol=1e-13)
