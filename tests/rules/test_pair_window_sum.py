"""Window sums on float64 pairs (``reduce_window`` with an add body that is
not a running sum: pooling's sums, ``jax.lax.reduce_window(x, 0.0,
lax.add, ...)``).

Each output is held to the exact window sum of its pair inputs within the
bound :func:`no64.rules.pair_rules._window_sum` states, ``(ceil(log2 k) +
1) * 3u^2`` of the magnitudes, with ``k`` window positions.  The exact sum is read off the
x64 program itself: run on each unit vector it gives each output's
coefficients (window counts, exact in float64), and on zeros what the init
contributes (the init once: XLA skips padded positions), so the
windows' meaning -- padding, strides, base and window dilations -- is XLA's,
not restated here.  Infinities, NaN and zero signs against the x64 program.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.rules.pair_rules import WINDOW_SUM_MAX
from support import enable_x64

RNG = np.random.default_rng(17)
U = 2.0**-24

WINDOWS = {  # name: (program of a (4, 45) operand, window elements)
    "pool-3-stride-2-same": (lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 3), (1, 2), "SAME"), 3),
    "pool-2x2": (lambda v: lax.reduce_window(v, 0.0, lax.add, (2, 2), (1, 1), "VALID"), 4),
    "dilated": (lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 3), (1, 1), [(0, 0), (1, 2)],
                                            base_dilation=(1, 2), window_dilation=(1, 2)), 3),
    "init-1.5-padded": (lambda v: lax.reduce_window(v, 1.5, lax.add, (3, 2), (2, 3), [(1, 1), (2, 0)]), 6),
    "long-40-stride-3": (lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 40), (1, 3), "VALID"), 40),
    # 64 window positions, 16 of them elements, the rest dilation's holes
    "base-dilated-64": (lambda v: lax.reduce_window(v, 0.0, lax.add, (1, 64), (1, 5), "VALID",
                                                    base_dilation=(1, 4)), 16),
}


def _cancelling() -> np.ndarray:
    """Rows whose neighbours nearly cancel: values of 2**+-30 each followed by
    its negation but for a little, and small values between."""
    x = RNG.standard_normal((4, 45)) * 2.0 ** RNG.integers(-30, 31, (4, 45))
    x[:, 1::2] = -x[:, 0:-1:2] * (1 + RNG.standard_normal((4, 22)) * 2.0**-40)
    x[1] *= 1e20
    x[2, ::5] = RNG.standard_normal(9) * 1e-3
    return no64.join_pairs(no64.split_pairs(x))  # each input the value its pair holds


def _bound(k: int) -> float:
    """A tree of ``ceil(log2 k)`` levels of pair additions, and the init's."""
    return 3 * U**2 * (math.ceil(math.log2(k)) + 1)


@pytest.mark.parametrize("name", list(WINDOWS))
def test_window_sums_against_exact(name: str) -> None:
    fn, k = WINDOWS[name]
    positions = 64 if name == "base-dilated-64" else k
    x = _cancelling()
    m = lower_x64(fn, x)
    report = no64.demote(m, float_policy="pairs", check=True)
    assert report.pairs_by_op.get("stablehlo.reduce_window") == 1
    (out,) = run_module(m, [no64.split_pairs(x)])
    got = no64.join_pairs(out).reshape(-1)
    with enable_x64(True):
        coef = np.asarray(jax.jit(jax.vmap(fn))(np.eye(x.size).reshape(-1, *x.shape)))
        from_init = np.asarray(jax.jit(fn)(np.zeros_like(x))).reshape(-1)
        f64 = np.asarray(jax.jit(fn)(x)).reshape(-1)
    coef = (coef.reshape(x.size, -1) - from_init).T  # outputs x inputs: how often each element is in each window
    assert coef.max() == 1 and (coef.sum(axis=1) <= k).all() and (coef.sum(axis=1) == k).any()
    terms = [Fraction(float(v)) for v in x.reshape(-1)]
    worst = 0.0
    for i, row in enumerate(coef):
        idx = np.flatnonzero(row)
        exact = sum((terms[j] for j in idx), Fraction(float(from_init[i])))
        mag = sum((abs(terms[j]) for j in idx), abs(Fraction(float(from_init[i]))))
        err = abs(Fraction(float(got[i])) - exact)
        assert err <= Fraction(_bound(positions)) * mag, (name, i, float(err / mag))
        if mag:
            worst = max(worst, float(err / mag))
    # not vacuous: float32 misses these sums by far more than the bound
    with enable_x64(False):
        f32 = np.asarray(jax.jit(fn)(x.astype(np.float32)), dtype=np.float64).reshape(-1)
    assert (np.abs(f32 - f64) > 1e3 * _bound(positions) * np.abs(coef) @ np.abs(x.reshape(-1))).any()


def test_window_sums_of_inf_nan_and_zeros_are_float64s() -> None:
    """Window sums, and max and min pools, of infinities, NaN, signed zeros
    and values only the lo word tells apart: the x64 program's values."""
    x = np.zeros((3, 12))
    x[0, 2], x[0, 7], x[0, 8] = np.inf, -np.inf, 5.0
    x[1, 3] = np.nan
    x[1, 6:] = -0.0
    x[2] = -0.0
    x[2, 9] = 3e38  # beside another: beyond a pair's range
    x[2, 10] = 3e38
    x[1, :6] = 1.0 + np.array([3, 1, 4, 1, 5, 9]) * 2.0**-30  # apart in their lo words only

    def fn(v):
        return (lax.reduce_window(v, 0.0, lax.add, (1, 3), (1, 1), "SAME"),
                lax.reduce_window(v, 0.0, lax.add, (1, 1), (1, 2), "VALID"),  # strided single elements
                lax.reduce_window(v, -0.0, lax.add, (1, 2), (1, 2), "VALID"),
                # (max and min pooling: the body on pairs, exact)
                lax.reduce_window(v, -np.inf, lax.max, (1, 3), (1, 2), "SAME"),
                lax.reduce_window(v, np.inf, lax.min, (2, 2), (1, 1), "VALID"))

    m = lower_x64(fn, x)
    no64.demote(m, float_policy="pairs", check=True)
    outs = run_module(m, [no64.split_pairs(x)])
    with enable_x64(True):
        refs = jax.jit(fn)(x)
    for out, ref in zip(outs, refs):
        got, ref = no64.join_pairs(out), np.asarray(ref)
        finite = np.isfinite(ref)
        np.testing.assert_array_equal(got[~finite & (np.abs(ref) < 3.5e38)], ref[~finite & (np.abs(ref) < 3.5e38)])
        np.testing.assert_array_equal(got[finite & (np.abs(ref) < 1e38)], ref[finite & (np.abs(ref) < 1e38)])
        np.testing.assert_array_equal(np.signbit(got[ref == 0]), np.signbit(ref[ref == 0]))
    assert np.isinf(no64.join_pairs(outs[0])[2, 10])  # 6e38: beyond a pair's range, as every pair op


def test_average_pooling_runs_on_pairs() -> None:
    """An average pool (a window sum over a window count), as Equinox's and
    Flax's ``avg_pool`` compute it, in a jitted program under the pairs."""
    x = no64.join_pairs(no64.split_pairs(RNG.standard_normal((2, 45, 1)) + 1e8))

    def avg_pool(v):
        s = lax.reduce_window(v, 0.0, lax.add, (1, 4, 1), (1, 2, 1), "VALID")
        return s / 4.0 - 1e8

    got = np.asarray(no64.jit(avg_pool, float_policy="pairs", restore_dtypes=True)(x))
    with enable_x64(True):
        want = np.asarray(jax.jit(avg_pool)(x))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=0, atol=1e8 * 2.0**-46)
    with enable_x64(False):
        f32 = np.asarray(jax.jit(avg_pool)(x.astype(np.float32)), dtype=np.float64)
    assert np.abs(f32 - want).max() > 1  # not vacuous: float32 loses the values beside 1e8


def test_a_longer_window_is_refused_at_its_line() -> None:
    m = lower_x64(lambda v: lax.reduce_window(v, 0.0, lax.add, (1, WINDOW_SUM_MAX + 1), (1, 1), "SAME"),
                  np.ones((2, 300)))
    with pytest.raises(no64.UnsupportedOpError, match=f"up to {WINDOW_SUM_MAX} positions.*has 257") as exc:
        no64.demote(m, float_policy="pairs")
    assert "test_pair_window_sum.py" in str(exc.value)
