"""``float_policy="pairs"`` and the range of f32 pairs in the pass: float64
constants outside it recorded (``pair-range``, ``float-overflow``) at the
line that computes with them or refused (``PairRangeError``, policies
``strict`` and ``exact``); the magnitude analysis
(:mod:`no64.analysis.pair_range`) names the ops that may take a value out
of it, once, where it first arises; results compared with the x64
program."""

from __future__ import annotations

import inspect
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import lower_x64, run_module
from support import enable_x64

HERE = __file__


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


def events(report, kind="pair-range"):
    """The report's events of ``kind`` at a line of this file."""
    return [e for e in report.events if e.kind == kind and e.location.file == HERE]


def run_pairs(fn, *args, **kw):
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy="pairs", check=True, **kw)
    ins = [no64.split_pairs(a) if i in report.pair_inputs else a for i, a in enumerate(args)]
    outs = run_module(m, ins)
    got = [no64.join_pairs(o) if i in report.pair_outputs else o for i, o in enumerate(outs)]
    with enable_x64(True):
        ref = jax.jit(fn)(*args)
    return got, [np.asarray(r) for r in (ref if isinstance(ref, tuple) else (ref,))], report


def constants(x):
    a = x * 1e-40      # below 2**-126: flushed
    b = x + 1e39       # beyond 3.4e38: inf
    c = x * 2.0**-100  # an exact pair (lo = 0): no record
    d = x * 0.1        # an ordinary constant
    return a, b, c, d


X = np.array([1.0, -3.0, 0.0, -0.0, np.inf, np.nan])


def test_constants_recorded_at_their_line_and_computed_as_x64_where_in_range():
    got, ref, report = run_pairs(constants, X)
    (under,) = events(report)
    assert under.location.file == HERE and under.location.line == line_of(constants, "1e-40")
    assert "1e-40" in under.detail and "flush" in under.detail
    # (one record at the line that adds it; JAX may also locate the constant
    # op itself at the jitted function's call, which it did in this process
    # after some other tests had run, and that op's narrowing is recorded there)
    (over,) = [e for e in events(report, "float-overflow") if e.location.line == line_of(constants, "1e39")]
    assert not report.exact
    # the pairs' x * 1e-40 is 0 (with signed zeros and NaN as f32 gives them);
    # x64 keeps it
    assert (got[0][:4] == 0).all() and (ref[0][:2] != 0).all()
    assert np.isinf(got[1][:4]).all() and np.isfinite(ref[1][:4]).all()
    # in range: as x64, signed zeros, inf and NaN included
    for g, r in zip(got[2:], ref[2:]):
        with np.errstate(invalid="ignore"):
            same = (g == r) | (np.isnan(g) & np.isnan(r)) | (np.abs(g - r) <= 2.0**-46 * np.abs(r))
        assert same.all() and (np.signbit(g) == np.signbit(r)).all()


@pytest.mark.parametrize("policy", ["strict", "exact"])
def test_constants_refused_under_strict_and_exact(policy):
    m = lower_x64(constants, X)
    before = str(m)
    with pytest.raises(no64.PairRangeError) as e:
        no64.demote(m, float_policy="pairs", policy=policy)
    assert isinstance(e.value, ValueError)
    assert e.value.location.line == line_of(constants, "1e-40")
    assert f"{HERE}:{line_of(constants, '1e-40')}" in str(e.value)
    assert e.value.value == 1e-40
    assert str(m) == before  # the module left as it was


def test_zero_inf_nan_and_f32_range_constants_pass_silently():
    def f(x):
        f32max = np.finfo(np.float32).max
        return x * 0.0 + jnp.float64(-0.0), x + jnp.inf, x * jnp.nan, jnp.maximum(x, f32max), x * 2.0**-126
    m = lower_x64(f, X)
    report = no64.demote(m, float_policy="pairs", policy="strict", check=True)
    assert not events(report) and not events(report, "float-overflow")


def program(x, y, t):
    p = x * y                                # named: a product of unknowns
    q = p * y                                # not again: downstream of p
    s = x + y - 3.0                          # not: a sum of them stays in range
    h = x * 2.0 + y / 4.0                    # not: ordinary constants
    e = jnp.exp(t)                           # named: exp of an unknown
    k = jnp.exp(jnp.arange(4, dtype=jnp.float64) / 4)  # not: exp of [0, 1]
    d = x / y                                # named: a divisor that may be tiny
    g = x * 1e30                             # named: beyond 2**64 times an unknown
    w = jnp.float64(1e20) * jnp.arange(4.0) * 1e20  # named: up to 3e40
    return q + s + h + e + d + g, k, w


def test_analysis_names_each_op_where_a_value_may_leave_the_range():
    x = np.linspace(1.0, 2.0, 4)
    m = lower_x64(program, x, x, x)
    report = no64.demote(m, float_policy="pairs", check=True)
    named = {e.location.line: e for e in events(report) if e.location.file == HERE}
    want = {line_of(program, t) for t in ("p = x * y", "e = jnp.exp(t)", "d = x / y", "g = x * 1e30",
                                          "w = jnp.float64")}
    assert set(named) == want, sorted(named)
    assert "unknown magnitude" in named[line_of(program, "p = x * y")].detail
    assert "2**134" in named[line_of(program, "w = jnp.float64")].detail
    assert "divisor" in named[line_of(program, "d = x / y")].detail
    # "pair-range" reports, and refuses nothing, under every policy
    no64.demote(lower_x64(program, x, x, x), float_policy="pairs", policy="strict", check=True)
    # the f32 policy has its own hints and no pair-range record
    assert not events(no64.demote(lower_x64(program, x, x, x)))


def test_a_named_product_does_leave_the_range_where_x64_does_not():
    def f(x, y):
        return x * y
    x = np.array([1e20, 3.0])
    got, ref, report = run_pairs(f, x, x)
    assert len(events(report)) == 1
    assert np.isinf(got[0][0]) and ref[0][0] == 1e40
    assert got[0][1] == 9.0


def test_analysis_cost_is_small_beside_the_pass():
    from no64.analysis.pair_range import pair_range

    def f(x):
        for _ in range(40):
            x = jnp.sin(x) * x + x / (x * x + 1.0) - jnp.exp(-x * x)
        return x
    m = lower_x64(f, np.ones(64))
    t0 = time.perf_counter()
    records = pair_range(m)
    t_analysis = time.perf_counter() - t0
    t0 = time.perf_counter()
    no64.demote(m, float_policy="pairs")
    t_pass = time.perf_counter() - t0
    assert records
    assert t_analysis < 0.25 * t_pass, (t_analysis, t_pass)
