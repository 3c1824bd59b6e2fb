"""A probe of a backend's f32 arithmetic for ``float_policy="pairs"``.

Double-f32 arithmetic rests on a few properties of the device's f32, not on
IEEE's words bit for bit: sums and products rounded to nearest, so that
TwoSum and TwoProduct (Dekker's, from exact half-products) are exact; a
quotient and a square root within the ulps the device's profile declares
(:class:`no64.targets.Arithmetic`), since the pair division and root refine
theirs with exact residuals; subnormals flushed or kept as declared; no
product contracted into a fused multiply-add where the profile says there is
none.  The probe module computes, on fixed inputs chosen to expose each:

* TwoSum of sums whose exact value is not an f32 (halfway cases among
  them, the same fraction of an ulp at many positions: a stochastic
  rounding rounds some of them the other way), of operands far apart and
  of cancelling ones;
* TwoProduct of products that are not f32s;
* f32 quotients and square roots, measured in ulps of the exact results;
* ``a * b + c`` with ``c = -RN(a * b)``: 0 unless the product is fused;
* products and differences whose exact results are subnormal;
* the pair algorithms themselves (:mod:`no64.ir.pairs`) in the forms the
  profile selects -- a sum with a constant operand (a compiler that folds
  ``(a + C) - C`` loses its error term), products, quotients (also by a
  constant, which a compiler may turn into a product by a rounded
  reciprocal) and roots -- held to their bounds
  (:func:`no64.ir.pairs.error_bounds`) against exact rationals.

:func:`check` says which property failed first, with an example, or
``None``.  The JAX layer (:mod:`no64.jax.pair_probe`) runs the module once
per platform (and arithmetic) before it runs a pair program there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..ir import pairs as P
from ..ir._mlir import func, ir, make_context
from ..ir.words import make
from ..targets import IEEE_ARITHMETIC, Arithmetic

__all__ = ["PROBE_X", "PROBE_Y", "PROBE_C", "N", "probe_inputs", "probe_text", "check", "declared_problem"]

#: The pair operations' inputs (float64, given as pairs) and their constant operand.
PROBE_X = [3.141592653589793, -271.8281828459045, 0.0001234567890123, 1.4142135623730951e5,
           -9.999999999999e-3, 7.77777777777777, -123456.789012345, 5.0e-20,
           1.0000000001, -0.3333333333333333, 42.424242424242, -6.02214076e10,
           2.718281828459045e-5, 65504.00000001, -1.0e-3, 0.7071067811865476]
PROBE_Y = [1.0000000000001, 3.3333333333333, -0.1428571428571, 2.0e-10,
           -77.7777777777, 1.0e15, 0.999999999999, -3.0e19,
           12345.6789, -0.0101010101, 8.8888888888e-8, 1.6180339887498949,
           -2.5e3, 1.0e-5, 999.999999999, -1.4142135623730951]
PROBE_C = 0.1

#: The number of f32 operand pairs the elementwise properties are probed on.
N = 96
#: The first ``_ROUNDING`` of them: sums whose exact value is a fraction of
#: an ulp past an f32 (a quarter, a half, three quarters), two at each.
_ROUNDING = 48
#: Subnormal probes: two products of ``2**-130`` in size, then two
#: differences of values just above ``2**-126``.
_SUB = 4
_U2 = 2.0**-48
#: The pair results are held to their relative bounds above this magnitude,
#: and below it to the bound times it (a quotient in the probe underflows).
_FLOOR = Fraction(2) ** -60


def _operands() -> tuple[np.ndarray, np.ndarray]:
    """The f32 operands ``a``, ``b`` (``N`` each) of the elementwise probes."""
    rng = np.random.default_rng(0x5EED)
    a = np.empty(N, np.float64)
    b = np.empty(N, np.float64)
    # sums a + b = (1 + j 2**-16) + f ulp, f a quarter, a half or three quarters:
    # round to nearest gives one answer, a stochastic rounding either
    for j in range(_ROUNDING):
        a[j] = (1.0 + (j + 1) * 2.0**-16) * 2.0 ** (j % 5 - 2)
        b[j] = (0.25 * (1 + j % 3)) * 2.0**-23 * 2.0 ** (j % 5 - 2) * (-1) ** (j // 3)
    # operands of every size apart, signs mixed, cancelling ones
    k = N - _ROUNDING
    a[_ROUNDING:] = (1 + rng.random(k)) * 2.0 ** rng.integers(-40, 40, k) * rng.choice([-1, 1], k)
    b[_ROUNDING:] = (1 + rng.random(k)) * 2.0 ** rng.integers(-40, 40, k) * rng.choice([-1, 1], k)
    c = _ROUNDING + k // 2
    b[c:c + 8] = -a[c:c + 8] * (1 + rng.integers(1, 2**10, 8) * 2.0**-23)
    # quotients and roots near the ends of a binade
    b[c + 8:c + 12] = [1.9999999, 1.0000001, 1.5, 1.9999998]
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    return a, b


def _subnormal_operands() -> tuple[np.ndarray, np.ndarray]:
    """``p``, ``q`` whose products ``p * q`` (the first two) and differences
    ``p - q`` (the last two) have exact results below ``2**-126``, none
    zero."""
    p = np.array([2.0**-100, -1.5 * 2.0**-110, 1.25 * 2.0**-125, -1.75 * 2.0**-125], np.float32)
    q = np.array([2.0**-30, 1.25 * 2.0**-20, 2.0**-125, -1.5 * 2.0**-125], np.float32)
    return p, q


def probe_inputs() -> list[np.ndarray]:
    """The probe module's arguments: ``a``, ``b``, ``c = -RN(a * b)``, a
    copy of ``a`` (its product with ``b`` is the one a compiler may fuse
    with ``c``: a product it cannot merge with TwoProduct's); the subnormal
    operands ``p``, ``q``; the pairs' ``x`` hi, lo and ``y`` hi, lo (all
    f32)."""
    a, b = _operands()
    c = -(a * b)  # (numpy's f32 product: correctly rounded)
    p, q = _subnormal_operands()
    xh, xl = P.split_f64(np.array(PROBE_X))
    yh, yl = P.split_f64(np.array(PROBE_Y))
    return [a, b, c.astype(np.float32), a.copy(), p, q, xh, xl, yh, yl]


#: The probe's outputs, in order.
_OUTPUTS = ("sum", "sum error", "product", "product error", "quotient", "root", "a*b + c",
            "subnormal product", "subnormal difference",
            "pair add hi", "pair add lo", "pair multiply hi", "pair multiply lo", "pair divide hi",
            "pair divide lo", "pair divide by a constant hi", "pair divide by a constant lo",
            "pair sqrt hi", "pair sqrt lo")


def probe_text(arithmetic: Arithmetic = IEEE_ARITHMETIC) -> str:
    """The probe module, as StableHLO text (f32 only), its pair operations
    in the forms ``arithmetic`` selects."""
    n, m = N, len(PROBE_X)
    kd, ks = arithmetic.divide_ulp, arithmetic.sqrt_ulp
    with make_context(), ir.Location.unknown():
        mod = ir.Module.create()
        tn = ir.RankedTensorType.get([n], ir.F32Type.get())
        ts = ir.RankedTensorType.get([_SUB], ir.F32Type.get())
        tm = ir.RankedTensorType.get([m], ir.F32Type.get())
        ins = [tn, tn, tn, tn, ts, ts, tm, tm, tm, tm]
        outs_t = [tn] * 7 + [ts] * 2 + [tm] * 10
        with ir.InsertionPoint(mod.body):
            f = func.FuncOp("main", ir.FunctionType.get(ins, outs_t))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                a, b, c, a2, p, q, xh, xl, yh, yl = block.arguments
                s = P.two_sum(a, b)
                t = P.two_prod(a, b)
                quotient = make("divide", [a, P.barrier(b)[0]], tn)
                root = make("sqrt", [make("abs", [a], tn)], tn)
                fused = make("add", [make("multiply", [a2, b], tn), c], tn)
                sub_p = make("multiply", [p, q], ts)
                sub_d = make("subtract", [p, q], ts)
                x, y = P.Pair(xh, xl), P.Pair(yh, yl)
                k = P.constant([m], PROBE_C)
                outs: list[ir.Value] = [s.hi, s.lo, t.hi, t.lo, quotient, root, fused, sub_p, sub_d]
                for z in (P.add(x, k), P.multiply(x, y), P.divide(x, y, kd), P.divide(x, k, kd),
                          P.sqrt(P.absolute(x), ks, kd)):
                    outs += [z.hi, z.lo]
                func.ReturnOp(outs)
        return mod.operation.get_asm()


# ------------------------------------------------------------------ checks
def _f(v: Any) -> Fraction:
    return Fraction(float(v))


def _rn32(v: Fraction) -> float:
    """``v`` rounded to the nearest f32, ties to even (no overflow, no
    subnormals: the probe's values are normal)."""
    f = np.float32(float(v))
    best = None
    for cand in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))):
        d = abs(_f(cand) - v)
        key = (d, int(np.array(cand, np.float32).view(np.uint32)) & 1)
        if best is None or key < best[0]:
            best = (key, float(cand))
    assert best is not None
    return best[1]


def _ulps(got: float, exact: Fraction) -> float:
    """``|got - exact|`` in f32 ulps of ``exact``'s binade."""
    if exact == 0:
        return 0.0 if got == 0 else math.inf
    _, e = math.frexp(float(abs(exact)))
    if Fraction(2) ** (e - 1) > abs(exact):
        e -= 1
    return float(abs(_f(got) - exact) / Fraction(2) ** (e - 1 - 23))


def _show(v: float | np.floating) -> str:
    return repr(float(np.float32(v)))


def declared_problem(arithmetic: Arithmetic) -> str | None:
    """Why pairs cannot rest on ``arithmetic`` as declared, or ``None``."""
    if arithmetic.rounding != "nearest":
        return f"its f32 rounds {arithmetic.rounding}ally, which breaks TwoSum"
    if not arithmetic.add_rounded:
        return "its f32 add and subtract do not round correctly, which breaks TwoSum"
    if not arithmetic.multiply_rounded:
        return "its f32 multiply does not round correctly, which breaks TwoProduct"
    for op, ulp in (("division", arithmetic.divide_ulp), ("square root", arithmetic.sqrt_ulp)):
        if ulp > P.MAX_QUOTIENT_ULP:
            return (f"its f32 {op} is declared within {ulp:g} ulp; the pairs' bounds hold up to "
                    f"{P.MAX_QUOTIENT_ULP:g}")
    return None


def check(outputs: Sequence[np.ndarray], arithmetic: Arithmetic = IEEE_ARITHMETIC) -> str | None:
    """``None`` if the probe's outputs have every property the pair
    algorithms need on ``arithmetic``; else the first that fails, with an
    example."""
    outs = [np.asarray(o, dtype=np.float32).reshape(-1) for o in outputs]
    got = dict(zip(_OUTPUTS, outs))
    a, b, c, _, p, q, xh, xl, yh, yl = probe_inputs()
    problem = declared_problem(arithmetic)
    if problem is not None:
        return problem
    # rounding to nearest, the sums first (a stochastic rounding shows there)
    wrong = [i for i in range(N) if float(got["sum"][i]) != _rn32(_f(a[i]) + _f(b[i]))]
    if wrong:
        i = wrong[0]
        r = sum(1 for j in wrong if j < _ROUNDING)
        said = f" ({r} of the {_ROUNDING} sums a fraction of an ulp past an f32)" if r else ""
        hint = f"; {arithmetic.rounding_switch}" if arithmetic.rounding_switch and r else ""
        return (f"f32 addition does not round to nearest{' (stochastic rounding?)' if r else ''}: "
                f"{_show(a[i])} + {_show(b[i])} gave {_show(got['sum'][i])}, round to nearest gives "
                f"{_show(_rn32(_f(a[i]) + _f(b[i])))}, at {len(wrong)} of {N} sums{said}{hint}")
    for i in range(N):
        if _f(got["sum"][i]) + _f(got["sum error"][i]) != _f(a[i]) + _f(b[i]):
            return (f"TwoSum is not exact: {_show(a[i])} + {_show(b[i])} gave {_show(got['sum'][i])} "
                    f"and error {_show(got['sum error'][i])}, whose sum is not the exact one (a compiler "
                    "that reassociates or simplifies sums, fast-math?)")
    for i in range(N):
        exact = _f(a[i]) * _f(b[i])
        if float(got["product"][i]) != _rn32(exact):
            return (f"f32 multiplication does not round to nearest: {_show(a[i])} * {_show(b[i])} gave "
                    f"{_show(got['product'][i])}, round to nearest gives {_show(_rn32(exact))}")
        if _f(got["product"][i]) + _f(got["product error"][i]) != exact:
            return (f"TwoProduct (Dekker's, from exact half-products) is not exact: {_show(a[i])} * "
                    f"{_show(b[i])} gave {_show(got['product'][i])} and error "
                    f"{_show(got['product error'][i])}, whose sum is not the exact product")
    for name, op, ulp, exact_of in (
            ("quotient", "division", arithmetic.divide_ulp, lambda i: _f(a[i]) / _f(b[i])),
            ("root", "square root", arithmetic.sqrt_ulp, None)):
        worst, at = 0.0, 0
        for i in range(N):
            if exact_of is not None:
                off = _ulps(float(got[name][i]), exact_of(i))
            else:  # |sqrt(v) - g| in ulps, from g^2 against v (exact rationals)
                off = _root_ulps(float(got[name][i]), abs(_f(a[i])))
            if off > worst:
                worst, at = off, i
        if worst > ulp:
            i = at
            what = (f"{_show(a[i])} / {_show(b[i])}" if exact_of is not None else f"sqrt({_show(abs(a[i]))})")
            allowed = "correctly rounded (0.5 ulp)" if ulp == 0.5 else f"within {ulp:g} ulp"
            return (f"f32 {op} is {worst:.3g} ulp off: {what} gave {_show(got[name][i])}; the device's "
                    f"profile declares it {allowed}")
    fused = np.nonzero(got["a*b + c"] != 0)[0]
    if arithmetic.contracts_fma is False and fused.size:
        i = int(fused[0])
        return (f"a*b + c is contracted into a fused multiply-add: {_show(a[i])} * {_show(b[i])} + "
                f"({_show(c[i])}) gave {_show(got['a*b + c'][i])} (0 unfused), where the device's profile "
                "declares no contraction")
    if arithmetic.flushes_subnormals is not None:
        for name, exact_of, where in (("subnormal product", lambda i: _f(p[i]) * _f(q[i]), (0, 1)),
                                      ("subnormal difference", lambda i: _f(p[i]) - _f(q[i]), (2, 3))):
            for i in where:
                g = float(got[name][i])
                if arithmetic.flushes_subnormals and g != 0:
                    return (f"subnormal results are kept, where the device's profile declares them flushed: "
                            f"{name} {_show(p[i])}, {_show(q[i])} gave {g!r}")
                if not arithmetic.flushes_subnormals and _ulps(g, exact_of(i)) > 0.5 * 2.0**23:
                    return (f"subnormal results are flushed, where the device's profile declares them kept: "
                            f"{name} {_show(p[i])}, {_show(q[i])} gave {g!r}")
    bounds = P.error_bounds(arithmetic.divide_ulp, arithmetic.sqrt_ulp)
    xs = [_f(h) + _f(lo) for h, lo in zip(xh, xl)]
    ys = [_f(h) + _f(lo) for h, lo in zip(yh, yl)]
    kc = P.split_f64(np.array([PROBE_C]))
    cc = _f(kc[0][0]) + _f(kc[1][0])
    for name, op, exact_of in (
            ("pair add", "add", lambda i: xs[i] + cc),
            ("pair multiply", "multiply", lambda i: xs[i] * ys[i]),
            ("pair divide", "divide", lambda i: xs[i] / ys[i]),
            ("pair divide by a constant", "divide", lambda i: xs[i] / cc),
            ("pair sqrt", "sqrt", None)):
        hi, lo = got[f"{name} hi"], got[f"{name} lo"]
        for i in range(len(PROBE_X)):
            if not np.isfinite(hi[i]):
                err = math.inf
            else:
                z = _f(hi[i]) + _f(lo[i])
                if exact_of is None:  # |z - sqrt v| / sqrt v, to first order
                    v = abs(xs[i])
                    err = float(abs(z * z - v) / (2 * v))
                else:  # (a result below 2**-60: its error against 2**-60)
                    t = exact_of(i)
                    err = float(abs(z - t) / max(abs(t), _FLOOR))
            if err > bounds[op] * _U2:
                return (f"{name} of element {i} is {err / _U2:.3g} u^2 off the exact result (the pairs' "
                        f"bound on this arithmetic: {bounds[op]:g} u^2): got ({_show(hi[i])}, {_show(lo[i])})")
    return None


def _root_ulps(g: float, v: Fraction) -> float:
    """``|g - sqrt(v)|`` in f32 ulps of ``sqrt(v)``, from ``g^2 - v`` (exact)."""
    if v == 0:
        return 0.0 if g == 0 else math.inf
    r = math.sqrt(float(v))
    _, e = math.frexp(r)
    ulp = Fraction(2) ** (e - 1 - 23)
    # |g - sqrt v| = |g^2 - v| / (g + sqrt v), sqrt v between r's neighbours
    lo_root = Fraction(r) * (1 - Fraction(1, 2**50))
    return float(abs(_f(g) ** 2 - v) / ((_f(g) + lo_root) * ulp)) if g > 0 else math.inf
