"""Pair division and square root on a device whose f32 division and root
are not correctly rounded, simulated on the CPU (``simulated_device``):
each f32 quotient and root off by up to ``k`` ulps, subnormal results
flushed, no product contracted.  Held against exact results (rationals,
mpmath) within :func:`no64.ir.pairs.error_bounds` for that ``k``; the forms
built for a correctly rounded division exceed their bounds there."""

from __future__ import annotations

import dataclasses
import sys
from fractions import Fraction
from pathlib import Path

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from jax import lax

import no64
from no64.ir import pairs as P
from no64.jax.reference import run_module
from no64.targets import TPU_V5E_ARITHMETIC, Arithmetic, Target
from support import enable_x64, ir, make_context

sys.path.insert(0, str(Path(__file__).parent))
from simulated_device import simulate  # noqa: E402
from test_pairs import _in_range, adversarial, build  # noqa: E402

U2 = 2.0**-48
N = 2048


@pytest.fixture(scope="module")
def operands():
    x, y = adversarial(np.random.default_rng(20260921), N)
    return (*P.split_f64(x), *P.split_f64(y))


def _fr(h, lo) -> Fraction:
    return Fraction(float(h)) + Fraction(float(lo))


def _worst_divide(operands, alg_ulp: float, device: dict) -> float:
    xh, xl, yh, yl = operands
    m = build([(N, "f32")] * 4, 2, lambda a, b, c, d: P.divide(P.Pair(a, b), P.Pair(c, d), alg_ulp))
    zh, zl = run_module(simulate(m, fma=False, **device), [xh, xl, yh, yl], strict=False)
    ok = _in_range(xh, yh, zh) & (zh != 0) & (yh != 0)
    assert ok.sum() > N // 2
    worst = 0.0
    for i in np.nonzero(ok)[0]:
        t = _fr(xh[i], xl[i]) / _fr(yh[i], yl[i])
        worst = max(worst, float(abs(_fr(zh[i], zl[i]) - t) / abs(t)))
    return worst / U2


def _worst_sqrt(operands, alg: tuple[float, float], device: dict) -> float:
    xh, xl, _, _ = operands
    m = build([(N, "f32")] * 2, 2, lambda a, b: P.sqrt(P.Pair(a, b), *alg))
    zh, zl = run_module(simulate(m, fma=False, **device), [xh, xl], strict=False)
    mpmath.mp.prec = 200
    ok = _in_range(xh, zh) & (xh > 0)
    worst = 0.0
    for i in np.nonzero(ok)[0]:
        r = mpmath.sqrt(mpmath.mpf(float(xh[i])) + mpmath.mpf(float(xl[i])))
        worst = max(worst, float(abs(mpmath.mpf(float(zh[i])) + mpmath.mpf(float(zl[i])) - r) / r))
    # zeros, infinities and nan as f32's sqrt has them
    assert (zh[np.isposinf(xh)] == np.inf).all() and np.isnan(zh[xh < -(2.0**-126)]).all()
    assert (zh[xh == 0] == 0).all()
    return worst / U2


def test_the_simulated_device_is_off_by_up_to_its_ulps():
    """The simulation the bounds are tested on: quotients and roots within
    ``k`` ulps of the exact ones, most at ``k`` or near it."""
    rng = np.random.default_rng(5)
    a = ((rng.random(4096) + 0.5) * 2.0 ** rng.integers(-20, 20, 4096)).astype(np.float32)
    b = (rng.random(4096) + 0.5).astype(np.float32)
    with make_context(), ir.Location.unknown():
        m = build([(4096, "f32")] * 2, 2, lambda p, q: [ir.Operation.create(
            "stablehlo.divide", results=[p.type], operands=[p, q]).results[0], ir.Operation.create(
            "stablehlo.sqrt", results=[p.type], operands=[p]).results[0]])
    q, r = run_module(simulate(m, divide_ulp=2, sqrt_ulp=3), [a, b], strict=False)

    def ulps(got, exact):
        ulp = 2.0 ** (np.floor(np.log2(np.abs(exact))) - 23)
        return np.abs(got.astype(np.float64) - exact) / ulp

    dq = ulps(q, a.astype(np.float64) / b)
    dr = ulps(r, np.sqrt(a.astype(np.float64)))
    assert dq.max() <= 2 and (dq > 1.5).mean() > 0.3
    assert dr.max() <= 3 and (dr > 2.5).mean() > 0.3


@pytest.mark.parametrize("k", [2.0, 16.0])
def test_divide_within_its_bound_on_a_faithful_division(operands, k):
    bound = P.error_bounds(div_ulp=k)["divide"]
    assert _worst_divide(operands, k, dict(divide_ulp=k)) <= bound


def test_the_correctly_rounded_form_exceeds_its_bound_there(operands):
    """DWDivDW2 as built for a correctly rounded division (15u^2) and the
    root's single Newton step (4u^2) do not hold where the device's are 2
    and 3 ulps off: the refined forms are what makes them hold."""
    assert _worst_divide(operands, 0.5, dict(divide_ulp=2)) > P.error_bounds()["divide"]
    assert _worst_sqrt(operands, (0.5, 0.5), dict(sqrt_ulp=3, divide_ulp=2)) > P.error_bounds()["sqrt"]


@pytest.mark.parametrize("ks, kd", [(3.0, 2.0), (16.0, 16.0)])
def test_sqrt_within_its_bound_on_a_faithful_root(operands, ks, kd):
    bound = P.error_bounds(div_ulp=kd, sqrt_ulp=ks)["sqrt"]
    assert _worst_sqrt(operands, (ks, kd), dict(sqrt_ulp=ks, divide_ulp=kd)) <= bound


def _program(x, y):
    return x / y, jnp.sqrt(jnp.abs(x)), lax.rsqrt(jnp.abs(y)), jnp.fmod(x, y)


def test_converted_programs_hold_their_bounds_on_a_simulated_tpu():
    """``no64.demote(..., arithmetic=TPU_V5E_ARITHMETIC)`` builds the refined
    forms: run on a simulated TPU (division within 2 ulps, root within 3),
    a quotient, root, reciprocal root and remainder are within the bounds
    for that arithmetic (the remainder exact to ``2**-44 |x|``); converted
    for IEEE arithmetic instead, the quotient misses its bound there."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(512) * 2.0 ** rng.integers(-20, 20, 512)
    y = rng.standard_normal(512) * 2.0 ** rng.integers(-20, 20, 512)
    with enable_x64(True):
        text = jax.jit(_program).lower(x, y).as_text()
    bounds = P.error_bounds(TPU_V5E_ARITHMETIC.divide_ulp, TPU_V5E_ARITHMETIC.sqrt_ulp)
    worst = {}
    for arithmetic in (TPU_V5E_ARITHMETIC, None):
        m = ir.Module.parse(text, make_context())
        no64.demote(m, float_policy="pairs", arithmetic=arithmetic)
        outs = run_module(simulate(m, divide_ulp=2, sqrt_ulp=3, fma=False),
                          [no64.split_pairs(x), no64.split_pairs(y)], strict=False)
        xs, ys = no64.split_pairs(x), no64.split_pairs(y)
        mpmath.mp.prec = 200
        errs = {"divide": 0.0, "sqrt": 0.0, "rsqrt": 0.0, "fmod": 0.0}
        for i in range(len(x)):
            a, b = _fr(*xs[i]), _fr(*ys[i])
            got = [_fr(*o[i]) for o in outs]
            errs["divide"] = max(errs["divide"], float(abs(got[0] - a / b) / abs(a / b)))
            ra = mpmath.sqrt(mpmath.mpf(a.numerator) / a.denominator * (1 if a > 0 else -1))
            errs["sqrt"] = max(errs["sqrt"], float(abs(mpmath.mpf(got[1].numerator) / got[1].denominator - ra) / ra))
            rb = 1 / mpmath.sqrt(abs(mpmath.mpf(b.numerator) / b.denominator))
            errs["rsqrt"] = max(errs["rsqrt"], float(abs(mpmath.mpf(got[2].numerator) / got[2].denominator - rb) / rb))
            r = a - b * int(a / b)  # fmod: x - trunc(x / y) * y, exactly
            errs["fmod"] = max(errs["fmod"], float(abs(got[3] - r) / abs(a)))
        worst[arithmetic] = errs
    tpu = worst[TPU_V5E_ARITHMETIC]
    assert tpu["divide"] <= bounds["divide"] * U2 and tpu["sqrt"] <= bounds["sqrt"] * U2
    # 1 / sqrt: a root, then a quotient of pairs
    assert tpu["rsqrt"] <= (bounds["divide"] + bounds["sqrt"] + 1) * U2
    assert tpu["fmod"] <= 2.0**-44
    assert worst[None]["divide"] > P.error_bounds()["divide"] * U2


def test_jit_builds_pairs_for_the_devices_declared_arithmetic():
    """``no64.jit`` converts for the arithmetic of the device's profile:
    with a profile declaring the TPU's quotients (which the CPU satisfies:
    its division and root are correctly rounded, and it flushes subnormals;
    it does fuse products into sums, so the profile leaves that open), the
    quotient carries its refinement -- three f32 divisions where the IEEE
    form has two -- and the result is the x64 program's within the bound."""
    tpu_like = Target("cpu-as-tpu", "the CPU, declared with the TPU v5e's quotients",
                      arithmetic=dataclasses.replace(TPU_V5E_ARITHMETIC, contracts_fma=None))
    x = np.array([1.0, 3.0, -7.5, 1e10])
    y = np.array([3.0, 7.0, 0.1, -3.3])
    counts = {}
    for t in (None, tpu_like):
        f = no64.jit(lambda a, b: a / b, float_policy="pairs", target=t, restore_dtypes=True)
        counts[t] = f.lower(x, y).as_text().count("stablehlo.divide")
        got = np.asarray(f(x, y))
        np.testing.assert_allclose(got, x / y, rtol=2.0**-44, atol=0)
    assert counts[tpu_like] == counts[None] + 1, counts


def test_arithmetic_is_an_option():
    assert no64.Options(arithmetic=TPU_V5E_ARITHMETIC).pair_arithmetic is TPU_V5E_ARITHMETIC
    assert no64.Options(target="neuron").pair_arithmetic.rounding_switch
    assert no64.Options().pair_arithmetic == Arithmetic()
    with pytest.raises(TypeError, match="arithmetic must be"):
        no64.Options(arithmetic="tpu")  # type: ignore[arg-type]
