"""Transcendentals on float64 pairs (``no64.ir.pair_math``), held against
mpmath within ``pair_math.bounds`` on adversarial inputs -- near 0, near
f32's overflow and underflow thresholds, near 1 for the logarithms, near
multiples of pi/2 up to 2**20 for sine and cosine -- both on the CPU's
IEEE f32 and on a simulated device whose f32 division is 2 ulps off and
whose root 3 (``simulated_device``: no product contracted; subnormal
results flushed by XLA's CPU runtime itself); and the converted x64
programs against the x64 programs on XLA's CPU for the special values
(NaN, infinities, signed zeros, overflow and underflow)."""

from __future__ import annotations

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
from no64.ir import pair_math as PM, pairs as P
from no64.jax.reference import run_module
from support import enable_x64, ir, make_context

sys.path.insert(0, str(Path(__file__).parent))
from simulated_device import simulate  # noqa: E402
from test_pairs import build  # noqa: E402

U2 = 2.0**-48
mpmath.mp.prec = 200
_RNG = np.random.default_rng(20260922)
_TPU = dict(divide_ulp=2.0, sqrt_ulp=3.0)


def _near_multiples_of_half_pi(ks: np.ndarray) -> np.ndarray:
    """The float64 value of the pair nearest ``k pi/2`` for each ``k``."""
    out = []
    for k in ks:
        v = mpmath.mpf(int(k)) * mpmath.pi / 2
        h = np.float32(float(v))
        lo = np.float32(float(v - mpmath.mpf(float(h))))
        out.append(float(h) + float(lo))
    return np.array(out)


def _mixed(n: int, lo: int, hi: int) -> np.ndarray:
    return _RNG.uniform(-1, 1, n) * 2.0 ** _RNG.integers(lo, hi, n)


def _inputs(name: str) -> np.ndarray:
    r = _RNG
    if name in ("exp", "expm1", "logistic"):
        edges = np.array([88.72, 88.7228, -87.33, -87.3, -80.0, 0.34657359, -0.34657359, 0.3466, 2.0**-40, -(2.0**-60)])
        return np.concatenate([r.uniform(-87, 88.7, 150), _mixed(100, -60, 2), edges])
    if name in ("log", "log_div"):
        return np.concatenate([np.abs(_mixed(120, -100, 120)), 1 + _mixed(80, -46, -1),
                               np.array([1 - 2.0**-40, 1 + 2.0**-44, 2.0**-125, 3.0e38, 0.70710678, 1.41421356])])
    if name == "log1p":
        x = np.concatenate([_mixed(120, -60, 0), r.uniform(-0.999, 3, 80), np.abs(_mixed(40, 0, 120)),
                            np.array([-0.2928932, 0.41421356, -0.99999, 2.0**-50, -(2.0**-70)])])
        return x[x > -1]
    if name in ("sin", "cos"):
        ks = np.concatenate([np.arange(1, 40), r.integers(40, 667000, 60)])
        near = _near_multiples_of_half_pi(ks)
        return np.concatenate([r.uniform(-10, 10, 80), _mixed(80, -60, 20), near, -near,
                               np.array([2.0**20, -(2.0**20), 0.785398, 2.0**-100])])
    if name == "tanh":
        return np.concatenate([r.uniform(-20, 20, 100), _mixed(120, -60, 3), np.array([18.0, 19.5, 2.0**-30])])
    raise AssertionError(name)


_UNARY = {
    "exp": (PM.exp, mpmath.exp),
    "expm1": (PM.expm1, mpmath.expm1),
    "log": (PM.log, mpmath.log),
    "log1p": (PM.log1p, mpmath.log1p),
    "sin": (PM.sin, mpmath.sin),
    "cos": (PM.cos, mpmath.cos),
    "tanh": (PM.tanh, mpmath.tanh),
    "logistic": (PM.logistic, lambda v: 1 / (1 + mpmath.exp(-v))),
}
_DIVIDES = ("log", "log1p", "tanh", "logistic")


def _run(fn, args: list[np.ndarray], device: dict | None) -> tuple[np.ndarray, np.ndarray, list]:
    n = len(args[0])
    words = []
    for a in args:
        words += list(P.split_f64(a))
    m = build([(n, "f32")] * len(words), 2, lambda *w: fn(*[P.Pair(w[i], w[i + 1]) for i in range(0, len(w), 2)]))
    if device is not None:
        # (XLA's CPU runtime flushes subnormal results itself)
        m = simulate(m, fma=False, flush=False, **device)
    zh, zl = run_module(m, words, strict=False)
    return zh, zl, [Fraction(float(words[i][j])) + Fraction(float(words[i + 1][j]))
                    for j in range(n) for i in range(0, len(words), 2)]


def _mp(v: Fraction) -> mpmath.mpf:
    return mpmath.mpf(v.numerator) / v.denominator


def _worst(got_h, got_l, refs) -> float:
    worst = 0.0
    for h, lo, ref in zip(got_h, got_l, refs):
        if ref is None:
            continue
        err = abs(mpmath.mpf(float(h)) + mpmath.mpf(float(lo)) - ref) / abs(ref)
        worst = max(worst, float(err))
    return worst / U2


def _in_range(ref) -> bool:
    return bool(mpmath.isfinite(ref)) and ref != 0 and 2.0**-70 < abs(ref) < 2.0**120


def test_constants_are_exact_words():
    """ln 2 in three f32 words and pi/2 in five, each within the words' precision."""
    ln2 = sum(Fraction(w) for w in PM._LN2_W)
    half_pi = sum(Fraction(w) for w in PM._PI_2_W)
    assert all(np.float32(w) == w for w in PM._LN2_W + PM._PI_2_W)
    assert abs(_mp(ln2) - mpmath.log(2)) < mpmath.mpf(2) ** -72
    assert abs(_mp(half_pi) - mpmath.pi / 2) < mpmath.mpf(2) ** -119


@pytest.mark.parametrize("device", [None, _TPU], ids=["ieee", "tpu"])
@pytest.mark.parametrize("name", list(_UNARY))
def test_unary_within_bound(name, device):
    fn, ref_fn = _UNARY[name]
    ulp = device["divide_ulp"] if device else 0.5
    call = (lambda x: fn(x, ulp)) if name in _DIVIDES else fn
    x = _inputs(name)
    zh, zl, args = _run(call, [x], device)
    refs = []
    for a in args:
        ref = ref_fn(_mp(a)) if a != 0 else None
        refs.append(ref if ref is not None and abs(a) >= 2.0**-78 and _in_range(ref) else None)
    assert sum(r is not None for r in refs) > 0.8 * len(x)
    worst = _worst(zh, zl, refs)
    assert worst <= PM.bounds(ulp)[name], (name, worst)


def test_power_within_bound():
    """``x**y`` within ``power_0 + power_t |y log x|`` u^2, ``|y log x|`` up
    to 88 (results up to f32's overflow and down to 2**-126), ``x`` near 1
    with ``|y|`` up to 10**11, on IEEE f32 and the simulated TPU."""
    n = 150
    x = np.abs(_RNG.standard_normal(n)) * 2.0 ** _RNG.integers(-20, 20, n)
    y = _RNG.uniform(-87, 88, n) / np.log(x)
    x2 = 1 + _mixed(n, -36, -2)
    y2 = _RNG.uniform(-87, 88, n) / np.log(x2)
    x3, y3 = _RNG.uniform(0.05, 20, n), _RNG.uniform(-12, 12, n)
    xs, ys = np.concatenate([x, x2, x3]), np.concatenate([y, y2, y3])
    for device in (None, _TPU):
        ulp = device["divide_ulp"] if device else 0.5
        zh, zl, args = _run(lambda a, b, k=ulp: PM.power(a, b, k), [xs, ys], device)
        b = PM.bounds(ulp)
        worst = 0.0
        for i in range(len(xs)):
            a, e = _mp(args[2 * i]), _mp(args[2 * i + 1])
            ref = mpmath.power(a, e)
            if not _in_range(ref):
                continue
            err = abs(mpmath.mpf(float(zh[i])) + mpmath.mpf(float(zl[i])) - ref) / abs(ref) / U2
            worst = max(worst, float(err / (b["power_0"] + b["power_t"] * abs(float(e * mpmath.log(a))))))
        assert worst <= 1.0, worst


# ---------------------------------------------------- against the x64 program
_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0**-30, -(2.0**-30), 88.72, 88.73,
                     -87.3, -87.4, -103.9, -104.5, -745.0, 709.0, 800.0, 20.0, -20.0, 2.0**20, -3.0, 2.0**-100])
_FNS = {
    "exp": jnp.exp, "expm1": jnp.expm1, "log": jnp.log, "log1p": jnp.log1p, "sin": jnp.sin, "cos": jnp.cos,
    "tanh": jnp.tanh, "logistic": jax.nn.sigmoid,
}


def _compare_with_x64(got: np.ndarray, ref: np.ndarray, rel: float) -> None:
    """NaN, infinities and signed zeros as x64's; finite values within
    ``rel``, where x64's result is within the pairs' range (beyond f32's
    largest a pair is inf; below 2**-126, 0 -- each with x64's sign)."""
    for g, r in zip(got.ravel(), ref.ravel()):
        if np.isnan(r):
            assert np.isnan(g), (g, r)
        elif np.isinf(r) or abs(r) > P.PAIR_MAX:
            assert g == np.copysign(np.inf, r), (g, r)
        elif r == 0 or abs(r) < 2.0**-126:
            assert g == 0 and np.signbit(g) == np.signbit(r), (g, r)
        else:  # (below 2**-78 a pair keeps the bits at 2**-126 and above)
            assert abs(g - r) <= rel * abs(r) + (2.0**-126 if abs(r) < 2.0**-78 else 0.0), (g, r)


def test_converted_programs_match_x64_on_special_values():
    """Every function converted by ``no64.jit(float_policy="pairs")`` gives
    x64's NaN, infinities, signed zeros, saturations and thresholds, and
    computes no f32 transcendental: the module holds none."""
    x = _SPECIAL
    f = no64.jit(lambda v: [fn(v) for fn in _FNS.values()], float_policy="pairs", restore_dtypes=True)
    text = f.lower(x).as_text()
    for op in ("exponential", "log", "sine", "cosine", "tanh", "logistic", "power"):
        assert f"stablehlo.{op} " not in text and f"stablehlo.{op}_" not in text, op
    got = f(x)
    with enable_x64(True):
        refs = [np.asarray(fn(jnp.asarray(x))) for fn in _FNS.values()]
    for name, g, r in zip(_FNS, got, refs):
        g, r = np.asarray(g), r.copy()
        x_in = x.copy()
        if name in ("sin", "cos"):
            # beyond 2**20, NaN (stated); 1e-40 is below the pairs' range: 0
            assert np.isnan(g[np.abs(x_in) > PM.SIN_COS_MAX]).all()
            r[np.abs(x_in) > PM.SIN_COS_MAX] = np.nan
        _compare_with_x64(g, r, 2.0**-40)


def test_power_matches_x64_on_special_values():
    """C99's ``pow`` cases as XLA's float64 ``power`` computes them: zeros,
    infinities and NaN in either operand, negative bases with integer and
    other exponents, ``|x| = 1`` with infinite exponents."""
    vals = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan,
                     1e10, -1e-10])
    xs, ys = (a.ravel() for a in np.meshgrid(vals, vals))
    f = no64.jit(lambda a, b: a**b, float_policy="pairs", restore_dtypes=True)
    got = np.asarray(f(xs, ys))
    with enable_x64(True):
        ref = np.asarray(lax.pow(jnp.asarray(xs), jnp.asarray(ys)))
    _compare_with_x64(got, ref, 2.0**-40)


def test_no_transcendental_is_recorded_as_computed_in_f32():
    """Converted under pairs, a program of these functions records no
    ``precision-reduced`` op: each is computed on the pairs."""
    x = np.linspace(-3, 3, 16)
    with enable_x64(True):
        text = jax.jit(lambda v, w: [jnp.exp(v), jnp.expm1(v), jnp.log(w), jnp.log1p(w), jnp.sin(v), jnp.cos(v),
                                     jnp.tanh(v), jax.nn.sigmoid(v), w**v]).lower(x, np.abs(x) + 0.5).as_text()
    report = no64.demote(ir.Module.parse(text, make_context()), float_policy="pairs", check=True)
    assert not [n.op for n in report.narrowings if n.verdict == "precision-reduced"]
