"""Programs that turn x64 on because the numbers need it, converted with
``float_policy="pairs"`` and compared with the x64 program run without
no64 on the CPU backend.

Relative error is ``max|got - ref| / max|ref|`` over each output.  Under
``float_policy="f32"`` (the default) these programs lose most or all of
their digits (each test checks that too, so the comparison can fail);
under pairs each is within the envelope its conditioning allows with
about 48 bits of significand:

* the variance by ``E[x^2] - E[x]^2`` of 10**6 values near 1e4;
* intervals of timestamps in seconds since 1970 (1.7e9 s + 0.1 ms steps);
* a finite-difference derivative with ``h = 1e-8``;
* a sum and a cumulative sum of 10**6 values;
* a Newton iteration for a square root that stops at a relative step
  below 1e-12, in a ``while`` loop (it converges, in as many steps);
* a leapfrog integrator of a harmonic oscillator over 10,000 steps (a
  ``fori_loop``): positions and the energy drift;
* a log-softmax of logits near 1e4 (exp and log on pairs: within the
  logits' rounding to 48 bits).

The converted module holds no 64-bit type (``check=True``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from runner import pair_inputs
from support import enable_x64


def run_pairs(fn: Callable[..., Any], *args: np.ndarray, float_policy: str = "pairs") -> list[np.ndarray]:
    """``fn`` lowered with x64, converted, run; float64 outputs as float64."""
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy=float_policy, check=True)
    outs = run_module(m, pair_inputs(args, report.pair_inputs))
    return [no64.join_pairs(o) if i in report.pair_outputs else np.asarray(o, dtype=np.float64)
            for i, o in enumerate(outs)]


def reference(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    with enable_x64(True):
        out = jax.jit(fn)(*args)
    return [np.asarray(o, dtype=np.float64) for o in (out if isinstance(out, (tuple, list)) else [out])]


def rel(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def errors(fn: Callable[..., Any], *args: np.ndarray) -> tuple[list[float], list[float]]:
    """Relative errors under pairs and under f32, per output."""
    ref = reference(fn, *args)
    pairs = [rel(g, r) for g, r in zip(run_pairs(fn, *args), ref)]
    f32 = [rel(g, r) for g, r in zip(run_pairs(fn, *args, float_policy="f32"), ref)]
    return pairs, f32


def test_variance_of_values_near_1e4():
    x = 1e4 + np.random.default_rng(0).standard_normal(10**6)

    def var(x):
        return jnp.mean(x * x) - jnp.mean(x) ** 2

    (p,), (f,) = errors(var, x)
    assert p < 1e-6, p
    assert f > 1e-2


#: Seconds since 1970, 0.1 ms apart, from an instant that f32 does not hold.
T0 = 1712345678.9


def test_timestamp_intervals():
    t = T0 + np.arange(4096) * 1e-4

    def intervals(t):
        return jnp.diff(t)

    (p,), (f,) = errors(intervals, t)
    # a pair holds a time near 1.7e9 s to 2**-18 s (3.8e-6 s) at worst --
    # 4 % of a 0.1 ms interval; f32 holds it to 128 s
    assert p < 5e-2, p
    assert f >= 1.0


def test_timestamps_generated_in_the_program():
    # instants made in the program, 1.7e9 s plus steps of 0.1 ms: the pair
    # (1.7e9, steps) resolves them to 2**-25 s, finer than float64 itself
    # (2**-22 s there), so the intervals are closer to the exact 0.1 ms than
    # the x64 program's
    def intervals(x):
        t = 1.7e9 + jnp.arange(4096) * 1e-4 + x
        return jnp.diff(t)

    x = np.zeros(4096)
    (ref,) = reference(intervals, x)
    (got,) = run_pairs(intervals, x)
    (f32,) = run_pairs(intervals, x, float_policy="f32")
    exact = np.full(4095, 1e-4)
    assert rel(got, exact) < 1e-3 and rel(got, exact) < rel(ref, exact) / 2
    assert rel(f32, exact) >= 1.0


def test_finite_difference_derivative():
    x = np.linspace(0.5, 2.0, 64)

    def deriv(x):
        f = lambda v: v**3 - 2.0 * v  # noqa: E731
        h = 1e-8
        return (f(x + h) - f(x - h)) / (2 * h)

    (p,), (f,) = errors(deriv, x)
    assert p < 1e-6, p
    assert f > 0.5


def test_sum_and_cumsum():
    x = np.random.default_rng(1).uniform(0.0, 1.0, 10**6)

    def sums(x):
        return jnp.sum(x), jnp.cumsum(x)

    (ps, pc), (fs, fc) = errors(sums, x)
    assert ps < 1e-12, ps
    assert pc < 1e-12, pc
    assert fs > 100 * ps and fc > 1e-7


def test_log_softmax_of_logits_near_1e4():
    # x - logsumexp(x): the shift by the maximum, the differences, exp and
    # log all computed on pairs (no64.ir.pair_math), so the error is the
    # logits' rounding to 48 bits (2**-48 * 1e4, 3.6e-11) -- where f32 alone
    # loses their fractions
    x = 1e4 + np.random.default_rng(2).standard_normal(1000) * 3

    def log_softmax(x):
        return jax.nn.log_softmax(x)

    (ref,) = reference(log_softmax, x)
    (got,) = run_pairs(log_softmax, x)
    (f32,) = run_pairs(log_softmax, x, float_policy="f32")
    assert np.max(np.abs(got - ref)) < 2 * 2.0**-48 * 1e4, np.max(np.abs(got - ref))
    assert np.max(np.abs(f32 - ref)) > 1e-5


def test_newton_iteration_converges_at_1e_12():
    a = np.array([2.0, 3.0, 10.0, 1234.5678, 0.1, 7e5])

    def newton_sqrt(a):
        # stops when the residual is below 1e-12 relative (or at 100 steps)
        def cond(s):
            x, k = s
            return jnp.any(jnp.abs(x * x - a) > 1e-12 * a) & (k < 100)

        def body(s):
            x, k = s
            return 0.5 * (x + a / x), k + 1

        return lax.while_loop(cond, body, (a, 0))

    ref_x, ref_k = reference(newton_sqrt, a)
    got_x, got_k = run_pairs(newton_sqrt, a)
    assert rel(got_x, ref_x) < 1e-13
    assert got_k == ref_k and ref_k < 100  # converges, in as many steps
    _, f32_k = run_pairs(newton_sqrt, a, float_policy="f32")
    assert f32_k == 100  # runs to its step cap


def test_leapfrog_integrator():
    q0 = np.array([1.0, 0.5, -0.25])
    p0 = np.array([0.0, 0.3, 0.7])

    def leapfrog(q, p):
        dt = 1e-3
        k = jnp.array([1.0, 4.0, 9.0])

        def step(_, s):
            q, p = s
            p = p - 0.5 * dt * k * q
            q = q + dt * p
            p = p - 0.5 * dt * k * q
            return q, p

        q, p = lax.fori_loop(0, 10_000, step, (q, p))
        energy = 0.5 * jnp.sum(p * p + k * q * q)
        return q, p, energy

    (pq, pp, pe), (fq, fp, fe) = errors(leapfrog, q0, p0)
    assert pq < 1e-12 and pp < 1e-12, (pq, pp)
    assert pe < 1e-12, pe
    assert fq > 1e-7


def test_report_lists_f32_ops_per_line():
    x = np.linspace(0.1, 1.0, 8)
    m = lower_x64(lambda x: jnp.tan(x) + jnp.exp(x), x)
    report = no64.demote(m, float_policy="pairs", check=True)
    reduced = [n for n in report.narrowings if n.verdict == "precision-reduced"]
    assert [n.op for n in reduced] == ["stablehlo.tan"]  # (exp is computed on pairs)
    assert reduced[0].location.line is not None
    assert report.float_policy == "pairs" and report.pair_inputs == [0] and report.pair_outputs == [0]


def test_complex128_is_refused_with_its_line():
    x = np.linspace(0.1, 1.0, 8)
    m = lower_x64(lambda x: (x * (1 + 2j)).real, x)
    with pytest.raises(no64.UnsupportedOpError, match="complex128"):
        no64.demote(m, float_policy="pairs")


def test_exponent_range_stays_f32s():
    # pairs have f32's exponent range: beyond it they overflow or vanish
    x = np.array([1e20, 1e-300])

    def fn(x):
        return x[0] * 1e30, x[1] / 1e-300

    big, tiny = run_pairs(fn, x)
    ref_big, ref_tiny = reference(fn, x)
    assert np.isclose(ref_big, 1e50) and np.isclose(ref_tiny, 1.0)
    assert np.isinf(big) and np.isnan(tiny)
