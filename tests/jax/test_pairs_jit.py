"""``no64.jit(..., float_policy="pairs")``: the x64 program with float64
carried as f32 pairs, compiled and run by no64, against ``jax.jit`` with
x64 on."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64


def f(x, n):
    # the variance by E[x^2] - E[x]^2 and a count: f64 and int64 outputs
    return jnp.mean(x * x) - jnp.mean(x) ** 2, jnp.sum(x > 1e4) + n


X = 1e4 + np.random.default_rng(3).standard_normal(10_000)


def test_restore_dtypes_returns_float64_at_pair_precision():
    with jax.enable_x64(True):
        ref_v, ref_n = jax.jit(f)(X, np.int64(3))
    v, n = no64.jit(f, float_policy="pairs", restore_dtypes=True)(X, np.int64(3))
    assert isinstance(v, np.ndarray) and v.dtype == np.float64
    # (cancellation by a factor 1e8: the pairs' 2**-48 leave about 1e-7)
    assert abs(v - float(ref_v)) <= 1e-6 * abs(float(ref_v))
    assert n.dtype == np.int64 and int(n) == int(ref_n)
    # f32 alone loses the variance entirely
    v32, _ = no64.jit(f, restore_dtypes=True)(X, np.int64(3))
    assert abs(v32 - float(ref_v)) > 1e-2 * abs(float(ref_v))


def test_without_restore_outputs_are_packed_pairs():
    v, _ = no64.jit(f, float_policy="pairs")(X, np.int64(3))
    assert v.shape == (2,) and v.dtype == np.float32
    assert abs(no64.join_pairs(np.asarray(v)) - np.var(X)) <= 1e-6 * np.var(X)


def test_lower_reports_pairs():
    low = no64.jit(f, float_policy="pairs").lower(X, np.int64(3))
    assert low.report.float_policy == "pairs"
    assert low.report.pair_inputs == [0] and low.report.pair_outputs == [0]
    no64.check(low.module)


def test_unknown_float_policy():
    with pytest.raises(ValueError, match="float_policy"):
        no64.jit(f, float_policy="f64")
