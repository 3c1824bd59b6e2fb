"""Double-f32 arithmetic (:mod:`no64.ir.pairs`) on the CPU backend.

Every op is compiled by XLA at its default flags and checked two ways:

* bit for bit against a numpy model of the same algorithm evaluated one
  IEEE f32 operation at a time (``pairs_model``): a compiler that
  reassociates a sum, folds ``(a + C) - C`` or contracts a product into an
  FMA changes some word, and the test names it;
* against the exact result (fractions, or mpmath at 200 bits) within the
  published double-word bounds (Joldes, Muller, Popescu 2017, without FMA:
  add <= 3u^2, multiply <= 7u^2, divide <= 15u^2, u = 2**-24), on random
  and adversarial inputs: cancellation, magnitudes near f32's overflow and
  underflow, signed zeros, inf and nan.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest

from no64.ir import pairs as P
from no64.jax.reference import run_module
from support import ir, make_context

sys.path.insert(0, str(Path(__file__).parent))
import pairs_model as M  # noqa: E402

U2 = 2.0**-48
F32_MAX = float(np.finfo(np.float32).max)
BOUNDS = {"add": 3.0, "subtract": 3.0, "multiply": 7.0, "divide": 15.0, "sqrt": 4.0}


def build(shapes: list[tuple[int, str]], n_out: int, fn) -> ir.Module:
    """A module ``main`` with f32 (or integer) vector arguments whose body
    ``fn`` builds; its outputs are f32 or i1 vectors."""
    ctx = make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.create()
        with ir.InsertionPoint(m.body):
            in_types = [ir.RankedTensorType.get([n], ir.Type.parse(e)) for n, e in shapes]
            ftype = ir.FunctionType.get(in_types, [])
            f = ir.Operation.create("func.func", regions=1, attributes={
                "sym_name": ir.StringAttr.get("main"), "function_type": ir.TypeAttr.get(ftype)})
            block = f.regions[0].blocks.append(*in_types)
            with ir.InsertionPoint(block):
                outs = fn(*block.arguments)
                ir.Operation.create("func.return", operands=list(outs))
            f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(in_types, [o.type for o in outs]))
        m.operation.verify()
    return m


def bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    # every NaN compares as one pattern
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32))


def random_values(rng: np.random.Generator, n: int, lo_exp: int = -30, hi_exp: int = 30) -> np.ndarray:
    return rng.standard_normal(n) * 2.0 ** rng.integers(lo_exp, hi_exp, n)


def adversarial(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of operands: cancellation, near overflow and underflow, zeros, inf, nan."""
    x = random_values(rng, n)
    y = random_values(rng, n)
    k = n // 8
    # cancellation: y = -x (1 + tiny)
    y[:k] = -x[:k] * (1 + rng.standard_normal(k) * 2.0 ** rng.integers(-50, -20, k))
    # near f32's overflow
    x[k:2 * k] = rng.uniform(0.5, 1.0, k) * F32_MAX * rng.choice([-1, 1], k)
    y[k:2 * k] = rng.uniform(-2.0, 2.0, k)
    # near f32's underflow (the low words vanish there)
    x[2 * k:3 * k] = rng.standard_normal(k) * 2.0**-120
    y[2 * k:3 * k] = rng.standard_normal(k) * 2.0 ** rng.integers(-126, 10, k)
    # 1 + tiny: the low word carries the value
    x[3 * k:4 * k] = 1.0 + rng.standard_normal(k) * 2.0**-40
    y[3 * k:4 * k] = 1.0 + rng.standard_normal(k) * 2.0**-40
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0e38, -3.0e38, 2e-38])
    s = len(specials)
    x[4 * k:4 * k + s * s] = np.repeat(specials, s)
    y[4 * k:4 * k + s * s] = np.tile(specials, s)
    return x, y


def value(h: np.ndarray, l: np.ndarray) -> np.ndarray:
    """The float64 values of pairs (a zero keeps hi's sign)."""
    return np.where(l == 0, h.astype(np.float64), h.astype(np.float64) + l)


def mp(h: np.float32, l: np.float32) -> mpmath.mpf:
    return mpmath.mpf(float(h)) + mpmath.mpf(float(l))


N = 4096
BINARY = {
    "add": (P.add, M.add, lambda a, b: a + b),
    "subtract": (P.subtract, M.sub, lambda a, b: a - b),
    "multiply": (P.multiply, M.mul, lambda a, b: a * b),
    "divide": (P.divide, M.div, lambda a, b: a / b),
}


@pytest.fixture(scope="module")
def operands():
    rng = np.random.default_rng(20170901)
    x, y = adversarial(rng, N)
    xh, xl = P.split_f64(x)
    yh, yl = P.split_f64(y)
    return xh, xl, yh, yl


def _in_range(*vals: np.ndarray) -> np.ndarray:
    """Elements where every value is finite and, if nonzero, far from f32's
    underflow and overflow (where the bounds assume no underflow)."""
    ok = np.ones(vals[0].shape, bool)
    for v in vals:
        a = np.abs(v.astype(np.float64))
        ok &= np.isfinite(a) & ((a == 0) | ((a > 2.0**-70) & (a < 2.0**120)))
    return ok


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_bit_for_bit_and_within_bound(name, operands):
    build_fn, model, exact = BINARY[name]
    xh, xl, yh, yl = operands
    m = build([(N, "f32")] * 4, 2, lambda a, b, c, d: build_fn(P.Pair(a, b), P.Pair(c, d)))
    zh, zl = run_module(m, [xh, xl, yh, yl])
    (mh, ml), flushed = M.run(model, xh, xl, yh, yl)
    # bit for bit wherever no step underflowed
    same = (bits(zh) == bits(mh)) & (bits(zl) == bits(ml))
    assert (same | flushed).all(), f"{name}: differs from the model at {np.nonzero(~same & ~flushed)[0][:5]}"
    assert (~flushed).sum() > N * 3 // 4
    # where a step underflowed: within a few of f32's smallest normal
    # (the backend reads subnormal words as zero: so does the reference)
    with np.errstate(all="ignore"):
        ref = exact(M.ftz(xh).astype(np.float64) + M.ftz(xl), M.ftz(yh).astype(np.float64) + M.ftz(yl))
    # the absolute error of a word lost there, carried through the op
    under = flushed & (np.abs(ref) < F32_MAX)  # (beyond f32's range a pair is inf)
    assert under.sum() > 0
    with np.errstate(all="ignore"):
        ax, ay = np.abs(M.ftz(xh).astype(np.float64)), np.abs(M.ftz(yh).astype(np.float64))
        scale = {"multiply": np.maximum(1, np.maximum(ax, ay)), "divide": np.maximum(1, 1 / ay)}.get(name, 1.0)
    with np.errstate(invalid="ignore"):
        err = np.abs(zh.astype(np.float64) + zl - ref)
    lim = 16 * 2.0**-126 * scale + BOUNDS[name] * U2 * np.abs(ref)
    assert (err <= lim)[under].all(), np.nonzero(under & (err > lim))[0][:5]
    # exact results (rationals), within the published bound
    ok = _in_range(xh, yh, zh) & (zh != 0)
    if name == "divide":
        ok &= yh != 0
    worst = 0.0
    for i in np.nonzero(ok)[0]:
        a = Fraction(float(xh[i])) + Fraction(float(xl[i]))
        b = Fraction(float(yh[i])) + Fraction(float(yl[i]))
        t = exact(a, b)
        got = Fraction(float(zh[i])) + Fraction(float(zl[i]))
        rel = abs(got - t) / abs(t) if t else abs(got)
        worst = max(worst, float(rel))
    assert ok.sum() > N // 2
    assert worst <= BOUNDS[name] * U2, f"{name}: worst relative error {worst / U2:.3f} u^2"
    # normalized: hi is the pair rounded to f32
    fin = np.isfinite(zh)
    assert (np.float32(zh[fin]) == (zh[fin].astype(np.float64) + zl[fin]).astype(np.float32)).all()
    assert (zl[~fin] == 0).all()
    # non-finite and zero results as f64 has them
    with np.errstate(all="ignore"):
        ref = exact(value(xh, xl), value(yh, yl))
    # (where the f64 result overflows f32, the pair is infinite too)
    special = ~np.isfinite(ref) & (np.isinf(xh) | np.isinf(yh) | np.isnan(xh) | np.isnan(yh))
    assert special.sum() > 20
    assert (np.isnan(zh[special]) == np.isnan(ref[special])).all()
    infs = special & np.isinf(ref)
    assert (zh[infs] == ref[infs]).all()
    over = np.isfinite(ref) & (np.abs(ref) > 2 * F32_MAX)
    assert np.isinf(zh[over]).all()


def test_sqrt_bit_for_bit_and_within_bound(operands):
    xh, xl, _, _ = operands
    m = build([(N, "f32")] * 2, 2, lambda a, b: P.sqrt(P.Pair(a, b)))
    zh, zl = run_module(m, [xh, xl])
    (mh, ml), flushed = M.run(M.sqrt, xh, xl)
    same = (bits(zh) == bits(mh)) & (bits(zl) == bits(ml))
    assert (same | flushed).all(), np.nonzero(~same & ~flushed)[0][:5]
    mpmath.mp.prec = 200
    ok = _in_range(xh, zh) & (xh > 0)
    worst = max(float(abs(mp(zh[i], zl[i]) - mpmath.sqrt(mp(xh[i], xl[i]))) / mpmath.sqrt(mp(xh[i], xl[i])))
                for i in np.nonzero(ok)[0])
    assert worst <= BOUNDS["sqrt"] * U2, worst / U2
    neg = (xh < -(2.0**-126)) | np.isnan(xh)
    assert np.isnan(zh[neg]).all()
    assert (bits(zh[xh == 0]) == bits(xh[xh == 0])).all()  # sqrt(-0) = -0
    assert (zh[np.isposinf(xh)] == np.inf).all()


DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]


def test_compare_every_direction(operands):
    xh, xl, yh, yl = operands
    # equal hi words with different lo words, and equal pairs
    xh, xl, yh, yl = (a.copy() for a in (xh, xl, yh, yl))
    yh[:64] = xh[:64]
    yl[:32] = xl[:32]
    m = build([(N, "f32")] * 4, 6, lambda a, b, c, d: [P.compare(dr, P.Pair(a, b), P.Pair(c, d)) for dr in DIRECTIONS])
    got = run_module(m, [xh, xl, yh, yl])
    mpmath.mp.prec = 200
    x = [mp(xh[i], xl[i]) for i in range(N)]
    y = [mp(yh[i], yl[i]) for i in range(N)]
    ops = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
           "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}
    for dr, g in zip(DIRECTIONS, got):
        want = np.array([ops[dr](a, b) for a, b in zip(x, y)])
        assert (g == want).all(), f"{dr}: {np.nonzero(g != want)[0][:5]}"


def test_minmax_abs_sign_floor_select(operands):
    xh, xl, yh, yl = operands
    def body(a, b, c, d, p):
        x, y = P.Pair(a, b), P.Pair(c, d)
        outs = []
        for q in (P.minmax("max", x, y), P.minmax("min", x, y), P.absolute(x), P.sign(x), P.floor(x),
                  P.ceil(x), P.select(p, x, y)):
            outs += [q.hi, q.lo]
        return outs
    pred = (np.arange(N) % 3 == 0)
    m = build([(N, "f32")] * 4 + [(N, "i1")], 14, body)
    got = run_module(m, [xh, xl, yh, yl, pred])
    # (the backend reads subnormal words as zero: so does the reference)
    x = M.ftz(xh).astype(np.float64) + M.ftz(xl)
    y = M.ftz(yh).astype(np.float64) + M.ftz(yl)
    with np.errstate(invalid="ignore"):
        want = [np.maximum(x, y), np.minimum(x, y), np.abs(x), np.sign(x), np.floor(x), np.ceil(x),
                np.where(pred, x, y)]
    for k, w in enumerate(want):
        h, l = M.ftz(got[2 * k]), M.ftz(got[2 * k + 1])
        v = h.astype(np.float64) + l
        same = (v == w) | (np.isnan(v) & np.isnan(w))
        assert same.all(), f"op {k}: {np.nonzero(~same)[0][:5]}"
    # abs of -0 is +0, sign keeps the zero's sign as f64 does
    assert not np.signbit(got[4][xh == 0]).any()


def test_split_f64_constants_exact_to_48_bits():
    rng = np.random.default_rng(1)
    # 48-bit significands split exactly
    v = np.ldexp(rng.integers(2**47, 2**48, 1000).astype(np.float64), rng.integers(-60, 60, 1000))
    h, l = P.split_f64(v)
    assert (h.astype(np.float64) + l == v).all()
    # any double: within 2**-48 relative, normalized
    w = random_values(rng, 1000)
    h, l = P.split_f64(w)
    assert (np.abs(h.astype(np.float64) + l - w) <= np.abs(w) * 2.0**-48).all()
    assert (h == (h.astype(np.float64) + l).astype(np.float32)).all()
    h, l = P.split_f64(np.array([np.inf, -np.inf, np.nan, 1e300, -0.0]))
    assert list(l) == [0, 0, 0, 0, 0] and np.isinf(h[3]) and np.signbit(h[4])


@pytest.mark.parametrize("elem", ["i32", "ui32", "i16", "i8", "ui8"])
def test_integer_to_pair_exact(elem):
    rng = np.random.default_rng(2)
    dtype = {"i32": np.int32, "ui32": np.uint32, "i16": np.int16, "i8": np.int8, "ui8": np.uint8}[elem]
    info = np.iinfo(dtype)
    vals = np.concatenate([rng.integers(info.min, int(info.max) + 1, 2000, dtype=np.int64),
                           [info.min, info.max, 0, info.max - 1]]).astype(dtype)
    n = len(vals)
    m = build([(n, elem)], 2, lambda v: list(P.from_int(v)))
    h, l = run_module(m, [vals])
    assert (h.astype(np.float64) + l == vals.astype(np.float64)).all()
    assert (h == (h.astype(np.float64) + l).astype(np.float32)).all()


@pytest.mark.parametrize("elem", ["i32", "ui32", "i16"])
def test_pair_to_integer_truncates_and_saturates(elem):
    dtype = {"i32": np.int32, "ui32": np.uint32, "i16": np.int16}[elem]
    info = np.iinfo(dtype)
    vals = np.array([0.0, -0.0, 0.5, -0.5, 1.0 - 2**-40, -(1.0 - 2**-40), 2.0**14 + 0.75, -(2.0**14) - 0.75,
                     123456789.999, -123456789.999, 16777217.0, -16777217.5, 2.0**31 - 1.0, -(2.0**31),
                     2.0**32 - 1.0, 2.0**32 - 0.5, 2.0**31 - 0.25, float(info.max) + 1, float(info.min) - 1,
                     1e30, -1e30, np.inf, -np.inf, np.nan,
                     # hi is the bound itself, lo negative: inside the range
                     2.0**31 - 64, 2.0**32 - 256, 2.0**15 - 2.0**-12])
    h, l = P.split_f64(vals)
    n = len(vals)
    m = build([(n, "f32")] * 2, 1, lambda a, b: [P.to_int(P.Pair(a, b), ir.Type.parse(elem))])
    (got,) = run_module(m, [h, l])
    v = h.astype(np.float64) + l
    want = np.where(np.isnan(v), 0, np.clip(np.trunc(np.nan_to_num(v)), info.min, info.max)).astype(dtype)
    assert (got == want).all(), (got, want)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("mode", ["splat", "dense", "both"])
def test_constant_operands_bit_for_bit(name, mode):
    """Constant operands: XLA's CPU compiler turns a division by a constant
    into a product by its reciprocal and folds pair arithmetic on constants
    at compile time without its error terms -- unless the constants come
    through a barrier, as :func:`no64.ir.pairs.constant` makes them."""
    rng = np.random.default_rng(5)
    n = 256
    x = random_values(rng, n)
    y = np.full(n, 5e-4) if mode == "splat" else random_values(rng, n)
    xh, xl = P.split_f64(x)
    yh, yl = P.split_f64(y)

    def body(a, b):
        xx = P.constant([n], x) if mode == "both" else P.Pair(a, b)
        return BINARY[name][0](xx, P.constant([n], y))

    zh, zl = run_module(build([(n, "f32")] * 2, 2, body), [xh, xl])
    mh, ml = BINARY[name][1](xh, xl, yh, yl)
    assert (bits(zh) == bits(mh)).all() and (bits(zl) == bits(ml)).all()
