"""The default float policy says where computing float64 in f32 changes a result.

Each program is built with JAX (x64 on).  Where a hint is expected, the test
checks that the hint names the program's own line, and -- against the truth,
not against the analysis -- that the converted program (``float_policy="f32"``)
run on the CPU backend does give another result than the x64 program run
without no64.  Benign programs (a float32 model, the float64 parts of the
GPT-2 benchmark step, a variance of values near 1) get no hint.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.analysis.float_hints import FloatHint, float_hints
from no64.ir.locations import decode_location
from no64.jax.reference import lower_x64, run_module
from no64.spec.walk import all_ops
from support import enable_x64, load_benchmark

FMAX = float(np.finfo(np.float64).max)


def line_of(fn: Callable[..., Any], marker: str) -> int:
    """The line of ``fn``'s source that holds ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, t in enumerate(lines) if marker in t]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@functools.cache
def loop_condition_lines() -> bool:
    """Whether JAX's module locates a ``while_loop`` condition's ops at the
    condition's own lines: JAX 0.7-0.8 locate them at the ``while_loop``
    call (the condition's lines are not in the module)."""
    def f(x):
        def cond(c):
            return c < 3.0  # COND

        return lax.while_loop(cond, lambda c: c + 1.0, x)

    m = lower_x64(f, np.float64(0.0))
    lines = {decode_location(op.location).line for op in all_ops(m.operation)
             if op.name == "stablehlo.compare"}
    return line_of(f, "# COND") in lines


def loop_condition_line(fn: Callable[..., Any], marker: str) -> int:
    """The line a hint inside ``fn``'s loop condition is named at: the
    marked line, or the ``while_loop`` call where JAX locates it there."""
    return line_of(fn, marker) if loop_condition_lines() else line_of(fn, "lax.while_loop(")


def hints_of(fn: Callable[..., Any], *args: Any) -> list[FloatHint]:
    return no64.demote(lower_x64(fn, *args)).float_hints


def assert_hint(hints: list[FloatHint], kind: str, line: int, pairs: bool) -> FloatHint:
    assert hints, "the analysis found nothing"
    found = [h for h in hints if h.kind == kind and h.location.line == line
             and h.location.file == __file__]
    assert found, [str(h) for h in hints]
    h = found[0]
    assert h.pairs_fixes is pairs
    assert ('float_policy="pairs" computes it' in h.detail) is pairs
    assert ('float_policy="pairs" does not help' in h.detail) is (not pairs)
    return h


def x64(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    with enable_x64(True):
        out = jax.jit(fn)(*args)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else [out])]


def in_f32(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    """``fn``'s x64 program converted under the default float policy, run."""
    m = lower_x64(fn, *args)
    no64.demote(m)
    ins = [a.astype(np.float32) if a.dtype == np.float64 else
           a.astype(np.int32) if a.dtype == np.int64 else a for a in args]
    return [np.asarray(o) for o in run_module(m, ins)]


# -- hints that fire ------------------------------------------------------------


def newton(a):
    # stops when the residual is below 1e-12 relative (or at 60 steps)
    def cond(s):
        x, k = s
        return jnp.any(jnp.abs(x * x - a) > 1e-12 * a) & (k < 60)  # TOL

    def body(s):
        x, k = s
        return 0.5 * (x + a / x), k + 1

    return lax.while_loop(cond, body, (a, 0))


def test_newton_tolerance_is_named_at_its_line():
    a = np.array([2.0, 3.0, 10.0, 1234.5678, 0.1, 7e5])
    h = assert_hint(hints_of(newton, a), "tolerance", loop_condition_line(newton, "# TOL"), pairs=True)
    assert "1e-12" in h.detail
    (_, k64), (_, k32) = x64(newton, a), in_f32(newton, a)
    assert k64 < 60 and k32 == 60  # x64 converges; f32 runs to its cap


def newton_steps(a):
    def cond(s):
        x, x_old, k = s
        return jnp.any(jnp.abs(x - x_old) > 1e-12) & (k < 60)  # STEP

    def body(s):
        x, _, k = s
        return 0.5 * (x + a / x), x, k + 1

    return lax.while_loop(cond, body, (a, a + 1.0, 0))


def test_absolute_step_tolerance_is_named_at_its_line():
    # |x_new - x| < 1e-12 near 1: f32 ends the loop only when a step is exactly 0
    h = assert_hint(hints_of(newton_steps, np.array([2.0, 3.0])), "tolerance",
                    loop_condition_line(newton_steps, "# STEP"), pairs=True)
    assert "below f32's epsilon" in h.detail and "8.4e-06" in h.detail
    # a tolerance f32 resolves at the compared values (1e-3 near 1): no hint
    assert not hints_of(lambda x, y: jnp.abs(x - y) < 1e-3, np.ones(2), np.ones(2))


def intervals(x):
    t = 1.7e9 + jnp.arange(1024) * 1e-4
    return (t[1:] - t[:-1]) * x  # DIFF


def test_timestamp_cancellation_is_named_at_its_line():
    x = np.ones(1023)
    h = assert_hint(hints_of(intervals, x), "cancellation", line_of(intervals, "# DIFF"), pairs=True)
    assert "1.7e+09" in h.detail and "128" in h.detail
    (ref,), (got,) = x64(intervals, x), in_f32(intervals, x)
    assert np.allclose(ref, 1e-4, rtol=1e-2)  # float64 resolves 1.7e9 s to 2.4e-7 s
    assert np.max(np.abs(got - ref)) / 1e-4 >= 1.0


def add_sub(x):
    return (x + 2.0**40) - 2.0**40  # ADDSUB


def test_add_then_subtract_a_large_constant():
    x = np.array([0.125, 3.3, -7.75])
    assert_hint(hints_of(add_sub, x), "cancellation", line_of(add_sub, "# ADDSUB"), pairs=True)
    (ref,), (got,) = x64(add_sub, x), in_f32(add_sub, x)
    # x64: x to within float64's spacing at 2**40, 2**-12 (XLA's CPU backend
    # folds the constants away before jax 0.12, and keeps them from 0.12)
    assert np.allclose(ref, x, rtol=0, atol=2.0**-12) and not np.array_equal(got, ref)


def overflow(x):
    return x * (jnp.asarray(1e20) * 1e30)  # OVERFLOW


def test_overflow_of_f32_is_named_and_pairs_do_not_help():
    x = np.ones(2)
    assert_hint(hints_of(overflow, x), "overflow", line_of(overflow, "# OVERFLOW"), pairs=False)
    (ref,), (got,) = x64(overflow, x), in_f32(overflow, x)
    assert np.all(np.isfinite(ref)) and np.all(np.isinf(got))


def fits_f32(x):
    # 1e20 * 1e10 = 1e30 is inside f32's range (3.4e38): no overflow
    return x * (jnp.asarray(1e20) * 1e10)


def test_1e20_times_1e10_fits_f32_and_is_not_named():
    x = np.ones(2)
    assert not [h for h in hints_of(fits_f32, x) if h.kind == "overflow"]
    (ref,), (got,) = x64(fits_f32, x), in_f32(fits_f32, x)
    assert np.allclose(got, ref, rtol=1e-7)


def underflow(x):
    return (x * 1e-300) / 1e-300  # UNDERFLOW


def test_underflow_to_zero_is_named():
    x = np.ones(2)
    assert_hint(hints_of(underflow, x), "underflow", line_of(underflow, "# UNDERFLOW"), pairs=False)
    (ref,), (got,) = x64(underflow, x), in_f32(underflow, x)
    assert np.allclose(ref, 1.0) and not np.any(np.isclose(got, 1.0))  # f32: 0 / 0


def sentinel_divided(x):
    masked = jnp.where(x > 0, x, -jnp.finfo(jnp.float64).max)
    return masked / 1e30  # SENTINEL


def test_float_sentinel_read_by_arithmetic_is_named():
    x = np.array([1.0, -1.0])
    assert_hint(hints_of(sentinel_divided, x), "sentinel-arithmetic",
                line_of(sentinel_divided, "# SENTINEL"), pairs=False)
    (ref,), (got,) = x64(sentinel_divided, x), in_f32(sentinel_divided, x)
    assert ref[1] == pytest.approx(-FMAX / 1e30) and got[1] == pytest.approx(-3.4028235e8, rel=1e-6)


def long_sum(x):
    return jnp.sum(x)  # SUM


def test_sum_of_more_than_2_to_24_terms_is_named():
    # lowered only: running 2**24 float64 elements is not needed to know f32 loses them
    spec = jax.ShapeDtypeStruct((2**24 + 16,), jnp.float64)
    with enable_x64(True):
        m = jax.jit(long_sum).lower(spec).compiler_ir("stablehlo")
    assert_hint(float_hints(m), "long-sum", line_of(long_sum, "# SUM"), pairs=True)
    # 2**24 terms is still exact in f32's count of ones: no hint
    spec = jax.ShapeDtypeStruct((2**24,), jnp.float64)
    with enable_x64(True):
        m = jax.jit(long_sum).lower(spec).compiler_ir("stablehlo")
    assert not float_hints(m)


def test_report_lists_hints_in_dict_and_summary():
    report = no64.demote(lower_x64(newton, np.array([2.0])))
    d = report.to_dict()
    assert [h["kind"] for h in d["float_hints"]] == ["tolerance"]
    assert d["float_hints"][0]["location"]["line"] == loop_condition_line(newton, "# TOL")
    assert "float hints: 1 place where" in report.summary()
    # float_policy="pairs" computes them: no hints
    assert no64.demote(lower_x64(newton, np.array([2.0])), float_policy="pairs").float_hints == []


# -- benign programs: no hint ---------------------------------------------------


def variance_near_1(x):
    return jnp.mean((x - jnp.mean(x)) ** 2)


def test_no_hint_on_a_variance_of_values_near_1():
    x = np.linspace(0.9, 1.1, 64)
    assert hints_of(variance_near_1, x) == []
    # values declared near 1 inside the program: the subtraction is of values
    # whose difference f32 resolves
    assert hints_of(lambda x: variance_near_1(1.0 + 0.1 * jnp.sin(jnp.arange(64.0))) * x, x[:1]) == []
    assert hints_of(lambda x: (1.0 + jnp.arange(64.0) * 1e-3)[1:] - (1.0 + jnp.arange(64.0) * 1e-3)[:-1] + x,
                    x[:63]) == []


def test_no_hint_on_a_float32_model():
    def mlp(w1, w2, x):
        h = jnp.tanh(x @ w1)
        logits = h @ w2
        loss = jnp.mean(jax.nn.logsumexp(logits, axis=-1) - logits[:, 0])
        return loss, jnp.abs(loss) < 1e-12

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(8, 16)).astype(np.float32), rng.normal(size=(16, 4)).astype(np.float32),
            rng.normal(size=(2, 8)).astype(np.float32))
    assert float_hints(lower_x64(mlp, *args)) == []


def test_no_hint_on_the_float64_parts_of_the_gpt2_step():
    bench = load_benchmark("bench_gpt2")
    cfg = bench.GPTConfig(layers=1, d_model=32, heads=2, seq=8, batch=2)
    with enable_x64(True):
        module = jax.jit(partial(bench.train_step, cfg=cfg)).trace(*bench.abstract_args(cfg)).lower()
        module = module.compiler_ir("stablehlo")
    # a float64 model step: its masked softmax subtracts the row maximum from
    # finfo(float64).min and exponentiates it (0 in both types), LayerNorm and
    # Adam subtract values of unknown magnitude
    assert "f64" in str(module)
    assert float_hints(module) == []
