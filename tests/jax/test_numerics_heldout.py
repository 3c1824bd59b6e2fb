"""``no64.numerics`` on float64 programs written apart from its design.

Each gross program has one known float32 failure at a marked line: an
overflow, a cancellation, a changed trip count, an error far beyond the
tolerance.  The report must name that line with the size of the failure
computed independently here (numpy in float32 against float64, or the same
loop run step by step in numpy float32), within a factor of 2; the benign
programs, which float32 computes within the tolerance, list nothing.
"""

from __future__ import annotations

import inspect
import math

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64

pytestmark = [pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
              pytest.mark.filterwarnings("ignore::no64.UnprovenIntegerWarning")]

F32 = np.float32


def _line(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _only(report, fn, marker: str):
    """The report's one line, which must be ``fn``'s marked line."""
    assert [x.location.line for x in report.lines] == [_line(fn, marker)], str(report)
    return report.lines[0]


def _normwise(got: np.ndarray, ref: np.ndarray) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _within_2x(measured: float, independent: float) -> bool:
    return independent / 2 <= measured <= independent * 2


# ----------------------------------------------------------------- gross


def running_sum(ticks):
    clock, _ = lax.scan(lambda t, dt: (t + dt, None), jnp.zeros((), ticks.dtype), ticks)  # ACCUMULATES
    return clock


def test_a_running_sum_of_ten_million_ticks():
    """A clock advanced 1e7 times by 0.1 ms, without compensation: past 512 s
    float32's spacing (6.1e-5) rounds each tick to 2 of its units."""
    ticks = np.full(10**7, 1e-4) * (1.0 + 1e-3 * np.sin(np.arange(10**7)))
    line = _only(no64.numerics(running_sum, ticks, pairs=False), running_sum, "ACCUMULATES")
    assert line.kind == "introduces"
    s32 = np.cumsum(ticks.astype(F32), dtype=F32)[-1]  # the same sum, tick after tick, in float32
    exact = math.fsum(ticks)
    independent = abs(float(s32) - exact) / exact
    assert independent > 0.05 and _within_2x(line.error, independent)


def quadratic_root(b, c):
    disc = b * b - 4.0 * c
    return (-b + jnp.sqrt(disc)) / 2.0  # CANCELS


def test_the_quadratic_formula_cancels_when_b_squared_dwarfs_4ac():
    b = np.array([1e4, 3e4, 5e3, 2e4])
    c = np.array([1.0, 0.5, 2.0, 1.0])
    line = _only(no64.numerics(quadratic_root, b, c, pairs=False), quadratic_root, "CANCELS")
    assert line.kind == "introduces"
    b32, c32 = b.astype(F32), c.astype(F32)
    got = (-b32 + np.sqrt(b32 * b32 - F32(4.0) * c32)) / F32(2.0)
    ref = (-b + np.sqrt(b * b - 4.0 * c)) / 2.0
    independent = _normwise(got, ref)
    assert independent > 0.1 and _within_2x(line.error, independent)


def naive_variance(x):
    mean_sq = jnp.mean(x * x, axis=-1)
    mean = jnp.mean(x, axis=-1)
    return mean_sq - mean * mean  # CANCELS


def two_pass_variance(x):
    d = x - jnp.mean(x, axis=-1, keepdims=True)
    return jnp.mean(d * d, axis=-1)


def _readings() -> np.ndarray:
    """Four readings per sample around 2000: integers, so every sum is exact
    in float32 in any order and only the square of the mean rounds."""
    rng = np.random.default_rng(3)
    return 2000.0 + rng.integers(-2, 3, (64, 4)).astype(np.float64)


def test_a_variance_as_mean_square_minus_squared_mean():
    x = _readings()
    line = _only(no64.numerics(naive_variance, x, pairs=False), naive_variance, "CANCELS")
    assert line.kind == "introduces"
    x32 = x.astype(F32)
    m32 = x32.sum(-1) / F32(4.0)
    got = (x32 * x32).sum(-1) / F32(4.0) - m32 * m32
    ref = x.var(-1)
    independent = _normwise(got, ref)
    assert independent > 0.01 and _within_2x(line.error, independent)
    # the two-pass variance of the same data is exact in float32
    assert no64.numerics(two_pass_variance, x, pairs=False).lines == []


def intervals(t):
    return t[1:] - t[:-1]  # STAMPS


def test_the_difference_of_time_stamps_near_1_7e9_seconds():
    """Unix time stamps in seconds, events milliseconds apart: float32 spaces
    values 128 s apart there."""
    t = 1.7e9 + np.cumsum(np.full(16, 0.004) + 0.001 * np.arange(16))
    line = _only(no64.numerics(intervals, t, pairs=False), intervals, "STAMPS")
    assert line.kind == "introduces"
    t32 = t.astype(F32)
    independent = _normwise(t32[1:] - t32[:-1], t[1:] - t[:-1])
    assert independent >= 1 and _within_2x(line.error, independent)


def unstable_logsumexp(x):
    e = jnp.exp(x)  # OVERFLOWS
    return jnp.log(jnp.sum(e, axis=-1))


def stable_logsumexp(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    return jnp.log(jnp.sum(jnp.exp(x - m), axis=-1)) + m[..., 0]


def test_a_log_sum_exp_without_the_max_overflows():
    x = np.array([[10.0, 20.0, 30.0], [85.0, 95.0, 120.0]])
    line = _only(no64.numerics(unstable_logsumexp, x, pairs=False), unstable_logsumexp, "OVERFLOWS")
    assert line.kind == "inf/nan"
    with np.errstate(over="ignore"):
        overflows = ~np.isfinite(np.exp(x.astype(F32)))
    assert overflows[line.index] and line.got == np.inf
    assert line.reference == pytest.approx(np.exp(x[line.index]), rel=1e-12)
    # with the max subtracted float32 holds it
    report = no64.numerics(stable_logsumexp, x, pairs=False)
    assert report.lines == [] and report.output_error < 1e-6


def newton_fixed_point(x0):
    def cond(c):
        k, dx, _ = c
        return (k < 50) & (jnp.abs(dx) > 1e-12)

    def body(c):
        k, _, y = c
        dx = (y - jnp.cos(y)) / (1.0 + jnp.sin(y))
        return k + 1, dx, y - dx

    k, _, y = lax.while_loop(cond, body, (0, jnp.ones_like(x0), x0))  # ITERATES
    return k, y


def test_newton_with_a_tolerance_of_1e_12_stops_at_another_step():
    line = _only(no64.numerics(newton_fixed_point, np.float64(1.0), pairs=False), newton_fixed_point, "ITERATES")
    assert line.kind == "differs"

    def steps(dtype) -> int:
        y, dx, k = dtype(1.0), dtype(1.0), 0
        while k < 50 and abs(dx) > 1e-12:
            dx = dtype((y - np.cos(y)) / (dtype(1.0) + np.sin(y)))
            y, k = dtype(y - dx), k + 1
        return k

    assert (line.got, line.reference) == (steps(F32), steps(np.float64))
    assert steps(F32) != steps(np.float64)


def euler(y0, h):
    def cond(c):
        return c[0] < 1.0

    def body(c):
        t, y, k = c
        return t + h, y - h * y, k + 1

    _, y, k = lax.while_loop(cond, body, (jnp.zeros_like(h), y0, 0))  # STEPS
    return y, k


def test_an_euler_integrator_with_a_tiny_step_takes_another_number_of_steps():
    """t += 1e-5 up to 1: float32 rounds each step of t, and the loop stops elsewhere."""
    line = _only(no64.numerics(euler, np.float64(1.0), np.float64(1e-5), pairs=False), euler, "STEPS")
    assert line.kind == "differs"

    def steps(dtype) -> int:
        t, h, k = dtype(0.0), dtype(1e-5), 0
        while t < 1.0:
            t, k = dtype(t + h), k + 1
        return k

    assert (line.got, line.reference) == (steps(F32), steps(np.float64)) and steps(F32) < 100_000


def hilbert_solve(a, b):
    return jnp.linalg.solve(a, b)  # SOLVES


def test_a_hilbert_matrix_solve():
    """H_5 (condition number 4.8e5): float32's LU pivots in another order
    (a changed decision, listed as such) and the solution is off by about
    what numpy's float32 solve is."""
    i = np.arange(5)
    h = 1.0 / (i[:, None] + i[None, :] + 1.0)
    b = h @ np.ones(5)
    report = no64.numerics(hilbert_solve, h, b, pairs=False)
    line = _only(report, hilbert_solve, "SOLVES")
    assert line.kind == "differs"
    independent = _normwise(np.linalg.solve(h.astype(F32), b.astype(F32)), np.linalg.solve(h, b))
    assert independent > 1e-3 and _within_2x(report.output_error, independent)


# ----------------------------------------------------------------- benign


def stable_quadratic_roots(b, c):
    q = -0.5 * (b + jnp.sign(b) * jnp.sqrt(b * b - 4.0 * c))
    return q, c / q


def test_benign_programs_list_nothing():
    b = np.array([1e4, 3e4, 5e3, 2e4])
    c = np.array([1.0, 0.5, 2.0, 1.0])
    rng = np.random.default_rng(4)
    for fn, args in [(stable_quadratic_roots, (b, c)),
                     (two_pass_variance, (rng.standard_normal((8, 1000)) + 1e3,)),
                     (stable_logsumexp, (rng.standard_normal((8, 50)) * 30.0,))]:
        report = no64.numerics(fn, *args, pairs=False)
        assert report.lines == [] and report.output_error < 1e-4, str(report)


def test_a_benign_variance_of_values_near_1():
    x = 1.0 + 0.1 * np.random.default_rng(6).standard_normal((16, 256))
    report = no64.numerics(lambda v: jnp.var(v, axis=-1), x, pairs=False)
    assert report.lines == [] and report.output_error < 1e-5, str(report)


def test_a_float32_flax_training_step_lists_nothing():
    """A Flax model keeps float32 parameters in the x64 program too: both
    programs compute the same float32 step, and nothing is listed (no
    float64 promotion of a Python scalar, say, makes them differ)."""
    nn = pytest.importorskip("flax.linen")
    import jax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(nn.tanh(nn.Dense(32)(x)))

    model = MLP()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 8)).astype(F32)
    labels = rng.integers(0, 4, 16).astype(np.int32)
    params = jax.tree.map(np.asarray, model.init(jax.random.key(0), x))

    def step(params, x, labels):
        def loss_fn(p):
            logits = model.apply(p, x)
            picked = jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
            return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return loss, jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    report = no64.numerics(step, params, x, labels, pairs=False)
    assert report.lines == [] and report.output_error < 1e-6, str(report)
    assert report.equations > 20

