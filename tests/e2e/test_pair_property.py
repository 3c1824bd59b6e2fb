"""``float_policy="pairs"`` on random float64 programs, checked against the
exact result.

Each program is StableHLO text over ``%x, %y : tensor<8xf64>``, a scalar
``%s : tensor<f64>`` and ``%k : tensor<8xi32>``: a focal op of one family
(add/subtract, multiply, divide, sqrt, negate/abs/sign, min/max/clamp,
compares of every direction with select, converts f64<->f32, f64<->i32,
constants f32 cannot hold, the ops that move elements, reduce sum and max,
a cumulative sum, ``dot_general``, a ``while`` loop, ``if``/``case`` and a
private ``func.call``), with random arithmetic before and after it.  Each
program is converted with ``check=True`` (no 64-bit type left) and run on
three input sets drawn lane by lane: cancelling (``y = x (1 + d)``, values
f32 cannot hold such as ``1 + 2**-40`` and ``1e4 + 1e-9``), extreme (tiny
values from ``2**-104`` met with huge ones up to ``2**97`` and ordinary
ones) and special (signed zeros, inf, nan).

The truth is an exact evaluation of the float64 program on its float64
inputs (:class:`V`): rationals for ``+ - * /``, mpmath at 320 bits for
``sqrt``.  Beside each exact value it carries a rigorous bound on the
distance of the pair program's value from it, built forward op by op:
each op's relative bound on the pairs it reads (Joldes, Muller and Popescu
2017, ``u = 2**-24``: add <= 3u^2, multiply <= 7u^2, divide <= 15u^2;
sqrt <= 4u^2, the bound the project states for its Newton step) plus an
absolute ``2**-120`` for words below f32's smallest normal, the operands'
own errors carried through the op, and the error of an input (its words'
exact sum, a word below f32's normals flushed) or a constant (``u^2``).
A finite result must lie within its bound.  Where the bound cannot decide
an outcome (a compare of values within their errors of each other, a
rounding or truncation near a boundary, a value beyond ``2**120``, where a
pair may overflow) the element is left unchecked, and counted.

Infinities and NaN follow IEEE (and XLA's converts: NaN to 0, saturation);
there the pair result must agree with the truth *and* with the x64
program run on the CPU backend, sign of an infinity included; so must an
exact zero, signed as IEEE signs it: a sum of operands the pairs hold
exactly (+0 unless both are -0), a product with a zero factor, a zero
divided or a division by an infinity (the operands' signs), negate, abs,
sign, sqrt, min/max (-0 below +0), select, moves, f64->f32.  Other zeros
(a factor or divisor of no certain sign, a reduction's) are counted with
whether their sign is x64's.  The x64 program is also held to the truth within
``bound + 2**-44 M`` (``M`` the magnitude of the computation: the program
on the inputs' magnitudes, without cancellation) -- a check of the
evaluator.

Guards against vacuity: every family counts its programs, the programs
converted and the elements compared, and must have compared elements,
infinities or NaN, its ops computed on pairs (the report's
``pairs_by_op``), and (compare_select) decided compares of every
direction; the same programs converted with ``float_policy="f32"`` must
fall outside the bounds on a share of the elements, and on the cancelling
ones of add_sub be 2**16 times further from the truth (in ``u^2 M``).
Each family prints (``-s``) its counts, its worst relative error in u^2
on well-conditioned elements and the largest share of a bound used
(elements reading a word below f32's normals left out of both).
"""

from __future__ import annotations

import collections
import math
from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import no64
from runner import compile_module
from support import ir, make_context

T = "tensor<8xf64>"
S = "tensor<f64>"
B = "tensor<8xi1>"
I = "tensor<8xi32>"
U2 = 2.0**-48  # u^2, u = 2**-24
TINY = 2.0**-126  # f32's smallest normal: below it a backend flushes to zero
SLACK = 2.0**-120  # per op: words and error terms flushed there (64 x TINY)
BIG = 2.0**120  # beyond it a pair's intermediate step may overflow f32
F32_MAX = float(np.finfo(np.float32).max)
#: Relative error bound of each pair op, in u^2.
REL = {"add": 3.0, "multiply": 7.0, "divide": 15.0, "sqrt": 4.0}
#: Covers the bounds' u^3 terms and the float arithmetic of the bounds.
FUDGE = 1 + 2.0**-10
DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def hexf(v: float) -> str:
    """A float64 literal for StableHLO text, bit-exact."""
    return "0x%016X" % np.array(v, dtype=np.float64).view(np.uint64)


# ================================================================ the truth
@dataclass(frozen=True)
class V:
    """One element of the float64 program, exactly.

    ``kind`` is ``"F"`` (finite: the exact value ``e``, the pair program's
    value within ``b`` of it, ``m`` the magnitude of its computation),
    ``"S"`` (inf or nan: ``e`` the float; ``signed`` whether the sign of an
    infinity is promised) or ``"U"`` (not decidable: unchecked).  ``zs`` is
    the sign of an exact zero (``e == 0``, ``b == 0``) where the pair
    algorithms promise it."""

    kind: str
    e: Any = Fraction(0)
    b: float = 0.0
    m: float = 0.0
    zs: int | None = None
    signed: bool = True
    local: bool = False  # whether ``b`` holds some op's rounding error (not only the inputs')
    flushed: bool = False  # whether it reads an input or constant with a word below f32's normals


UNKNOWN = V("U")
NAN = V("S", math.nan)


def exact(v: float, b: float = 0.0) -> V:
    """An exact float64 value (from the text or an input)."""
    v = float(v)
    if math.isnan(v) or math.isinf(v):
        return V("S", float(v))
    zs = int(math.copysign(1, v)) if v == 0 else None
    return V("F", Fraction(v), b, abs(v), zs)


def finite(e: Fraction, b: float, m: float, zs: int | None = None, local: bool = True,
           reads: Sequence[V] = ()) -> V:
    if float(abs(e)) + b > BIG:
        return UNKNOWN
    return V("F", e, b, m, zs if (e == 0 and b == 0) else None, local=local, flushed=any(r.flushed for r in reads))


def exact_zero(zs: int | None, m: float, reads: Sequence[V]) -> V:
    """An exact zero (the pair program's too), of sign ``zs`` where promised."""
    return V("F", Fraction(0), 0.0, m, zs, flushed=any(r.flushed for r in reads))


def inf(sign: int | None) -> V:
    return V("S", math.inf * (sign or 1), signed=sign is not None)


def sign_of(v: V) -> int | None:
    """The sign the pair value surely has (0: exactly zero), or None."""
    if v.kind == "S":
        return None if math.isnan(v.e) else (1 if v.e > 0 else -1)
    if v.kind != "F":
        return None
    if v.e == 0 and v.b == 0:
        return 0
    if abs(v.e) > v.b:
        return 1 if v.e > 0 else -1
    return None


def as_float(v: V) -> float:
    if v.kind == "S":
        return v.e
    return float(v.e) if v.e != 0 else math.copysign(0.0, v.zs or 1)


def _xf(v: V) -> float:
    """A bound on the magnitude of the pair program's value."""
    return float(abs(v.e)) + v.b


def v_neg(a: V) -> V:
    if a.kind == "S":
        return replace(a, e=-a.e)
    if a.kind != "F":
        return a
    return replace(a, e=-a.e, zs=-a.zs if a.zs else None)


def v_abs(a: V) -> V:
    if a.kind == "S":
        return replace(a, e=abs(a.e), signed=True)
    if a.kind != "F":
        return a
    return replace(a, e=abs(a.e), zs=1 if a.e == 0 and a.b == 0 else None)


def v_sign(a: V) -> V:
    if a.kind == "S":
        return a if math.isnan(a.e) else (exact(1.0) if a.e > 0 else exact(-1.0))
    s = sign_of(a)
    if s is None:
        return UNKNOWN
    if s == 0:  # sign(+-0) = +-0
        return V("F", Fraction(0), 0.0, 0.0, a.zs)
    return exact(float(s))


def v_add(a: V, b: V) -> V:
    if "U" in (a.kind, b.kind):
        return UNKNOWN
    if "S" in (a.kind, b.kind):
        r = as_float(a) + as_float(b)
        if math.isnan(r):
            return NAN
        return V("S", r, signed=(a.kind != "S" or a.signed) and (b.kind != "S" or b.signed))
    e = a.e + b.e
    if e == 0 and a.b == 0 and b.b == 0:  # both held exactly: an exact zero, +0 unless both are -0
        zs = -1 if a.zs == b.zs == -1 else (1 if a.e != 0 or 1 in (a.zs, b.zs) else None)
        return exact_zero(zs, a.m + b.m, (a, b))
    x = float(abs(e)) + a.b + b.b
    return finite(e, a.b + b.b + (REL["add"] * U2 * x + SLACK) * FUDGE, a.m + b.m, reads=(a, b))


def v_sub(a: V, b: V) -> V:
    return v_add(a, v_neg(b))


def v_mul(a: V, b: V) -> V:
    if "U" in (a.kind, b.kind):
        return UNKNOWN
    if "S" in (a.kind, b.kind):
        if (a.kind == "S" and math.isnan(a.e)) or (b.kind == "S" and math.isnan(b.e)):
            return NAN
        sa, sb = sign_of(a), sign_of(b)
        if sa is None or sb is None:
            return UNKNOWN
        if sa == 0 or sb == 0:
            return NAN  # inf * 0
        signed = all(v.kind != "S" or v.signed for v in (a, b))
        return inf(sa * sb if signed else None)
    sa, sb = sign_of(a), sign_of(b)
    if sa == 0 or sb == 0:  # a factor exactly zero: an exact zero, signed as the factors
        za, zb = (a.zs if sa == 0 else sa), (b.zs if sb == 0 else sb)
        return exact_zero(za * zb if (za and zb) else None, a.m * b.m, (a, b))
    e = a.e * b.e
    prop = float(abs(a.e)) * b.b + float(abs(b.e)) * a.b + a.b * b.b
    x = float(abs(e)) + prop
    return finite(e, prop + (REL["multiply"] * U2 * x + SLACK) * FUDGE, a.m * b.m, reads=(a, b))


def v_div(a: V, b: V) -> V:
    if "U" in (a.kind, b.kind):
        return UNKNOWN
    sa, sb = sign_of(a), sign_of(b)
    if (a.kind == "S" and math.isnan(a.e)) or (b.kind == "S" and math.isnan(b.e)):
        return NAN
    if a.kind == "S" and b.kind == "S":
        return NAN  # inf / inf
    if b.kind == "S":  # finite / inf: a zero, signed as the operands
        za = a.zs if sa == 0 else sa
        return V("F", Fraction(0), 0.0, 0.0, za * sb if (za and b.signed) else None)
    zb = b.zs if sb == 0 else sb
    if a.kind == "S":  # inf / finite
        if sb is None:
            return UNKNOWN
        return inf(sa * zb if (zb and a.signed) else None)
    if sb == 0:  # a division by an exact zero
        if sa == 0:
            return NAN
        if sa is None:
            return UNKNOWN
        return inf(sa * zb if zb else None)
    if sb is None:
        return UNKNOWN
    if sa == 0:  # a zero dividend: an exact zero, signed as the operands
        return exact_zero(a.zs * sb if a.zs else None, 0.0, (a, b))
    e = a.e / b.e
    eb = float(abs(b.e))
    low = eb - b.b
    prop = (a.b * eb + float(abs(a.e)) * b.b) / (eb * low)
    x = float(abs(e)) + prop
    m = a.m / eb + float(abs(e)) * b.m / eb
    return finite(e, prop + (REL["divide"] * U2 * x + SLACK) * FUDGE, m, reads=(a, b))


def _frac_sqrt(q: Fraction) -> Fraction:
    with mpmath.workprec(320):
        r = mpmath.sqrt(mpmath.mpf(q.numerator) / q.denominator)
        man, exp = r.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)


def v_sqrt(a: V) -> V:
    if a.kind == "S":
        return a if a.e > 0 else NAN  # sqrt(inf) = inf; sqrt(-inf), sqrt(nan) = nan
    if a.kind != "F":
        return a
    s = sign_of(a)
    if s == 0:
        return a  # sqrt(+-0) = +-0
    if s is None:
        return UNKNOWN
    if s < 0:
        return NAN
    e = _frac_sqrt(a.e)
    fe = float(e)
    low = math.sqrt(float(a.e) - a.b) if float(a.e) > a.b else 0.0
    prop = a.b / (fe + low)
    x = fe + prop
    bound = prop + (REL["sqrt"] * U2 * x + SLACK) * FUDGE + fe * 2.0**-300
    return finite(e, bound, fe + a.m / (2 * fe), reads=(a,))


def v_max(a: V, b: V, kind: str = "max") -> V:
    if "U" in (a.kind, b.kind):
        return UNKNOWN
    if (a.kind == "S" and math.isnan(a.e)) or (b.kind == "S" and math.isnan(b.e)):
        return NAN  # max/min propagate NaN
    pick = max if kind == "max" else min
    if "S" in (a.kind, b.kind):
        if any(v.kind == "S" and not v.signed for v in (a, b)):
            return UNKNOWN
        fa, fb = as_float(a), as_float(b)
        return a if fa == fb or pick(fa, fb) == fa else b
    if a.e == b.e == 0 and a.b == b.b == 0 and a.zs and b.zs:  # exact zeros: -0 below +0 (as XLA's)
        return a if pick(a.zs, b.zs) == a.zs else b
    e = pick(a.e, b.e)
    if abs(a.e - b.e) > a.b + b.b:  # determined: the pick's own error
        return a if e == a.e else b
    zs = a.zs if (a.zs == b.zs) else None
    return finite(e, max(a.b, b.b), max(a.m, b.m), zs, a.local or b.local, reads=(a, b))


def v_min(a: V, b: V) -> V:
    return v_max(a, b, "min")


@dataclass(frozen=True)
class Pred:
    """A compare's exact outcome, and whether the pair program surely has it."""

    truth: bool | None
    det: bool


def v_compare(direction: str, a: V, b: V, same: bool = False) -> Pred:
    ops = {"EQ": lambda x, y: x == y, "NE": lambda x, y: x != y, "LT": lambda x, y: x < y,
           "LE": lambda x, y: x <= y, "GT": lambda x, y: x > y, "GE": lambda x, y: x >= y}
    fn = ops[direction]
    if "U" in (a.kind, b.kind):
        return Pred(None, False)
    if same:  # one value compared with itself
        v = as_float(a) if a.kind == "S" else 0.0
        return Pred(fn(v, v), True)
    if "S" in (a.kind, b.kind):
        if any(v.kind == "S" and not v.signed for v in (a, b)):
            return Pred(None, False)
        return Pred(fn(as_float(a), as_float(b)), True)
    truth = fn(a.e, b.e)
    det = (a.e == b.e and a.b == 0 and b.b == 0) or abs(a.e - b.e) > a.b + b.b
    return Pred(truth, det)


def v_select(p: Pred, a: V, b: V) -> V:
    if p.truth is None:
        return UNKNOWN
    chosen, other = (a, b) if p.truth else (b, a)
    if p.det:
        return chosen
    if chosen.kind == "F" and other.kind == "F":
        # the pair program may pick the other: within its error and the gap
        gap = float(abs(chosen.e - other.e))
        return finite(chosen.e, max(chosen.b, other.b + gap), max(chosen.m, other.m), reads=(a, b))
    return UNKNOWN


def rn32(q: Fraction) -> Fraction:
    """``q`` rounded to the nearest f32 (normal range), ties to even."""
    if q == 0:
        return q
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (e - 23)
    n, r = divmod(a, ulp)
    if r > ulp / 2 or (r == ulp / 2 and n % 2):
        n += 1
    return (n * ulp) * (1 if q > 0 else -1)


def v_round_f32(a: V) -> V:
    """f64 -> f32 -> f64."""
    if a.kind != "F":
        return a
    if a.e == 0 and a.b == 0:
        return V("F", Fraction(0), 0.0, 0.0, a.zs)
    x = _xf(a)
    if x >= F32_MAX / 2 or float(abs(a.e)) - a.b < 2.0**-125:
        return UNKNOWN
    lo, hi = rn32(a.e - Fraction(a.b)), rn32(a.e + Fraction(a.b))
    if lo != hi:
        return UNKNOWN
    return finite(lo, 0.0, float(abs(lo)), local=False)


def v_to_i32(a: V) -> V:
    """f64 -> i32 (truncated; NaN to 0 and saturated, as XLA's converts)."""
    if a.kind == "S":
        return exact(0.0) if math.isnan(a.e) else (exact(2.0**31 - 1) if a.e > 0 else exact(-(2.0**31)))
    if a.kind != "F" or _xf(a) >= 2.0**31 - 1:
        return UNKNOWN
    lo, hi = math.trunc(a.e - Fraction(a.b)), math.trunc(a.e + Fraction(a.b))
    if lo != hi:
        return UNKNOWN
    return V("F", Fraction(lo), 0.0, float(abs(lo)), 1 if lo == 0 else None)


def v_sum(terms: Sequence[V], adds: int) -> V:
    """A sum of ``terms`` by any order of at most ``adds`` pair additions."""
    if any(t.kind == "U" for t in terms):
        return UNKNOWN
    if any(t.kind == "S" for t in terms):
        r = sum(as_float(t) for t in terms if t.kind == "S")
        if math.isnan(r):
            return NAN
        return V("S", r, signed=all(t.signed for t in terms if t.kind == "S"))
    e = sum((t.e for t in terms), Fraction(0))
    mags = sum(_xf(t) for t in terms)
    if mags > BIG:
        return UNKNOWN
    err = sum(t.b for t in terms)
    return finite(e, err + (adds * REL["add"] * U2 * mags + adds * SLACK) * FUDGE, sum(t.m for t in terms),
                  reads=terms)


vec = {name: np.vectorize(fn, otypes=[object]) for name, fn in {
    "add": v_add, "subtract": v_sub, "multiply": v_mul, "divide": v_div, "maximum": v_max, "minimum": v_min,
    "negate": v_neg, "abs": v_abs, "sign": v_sign, "sqrt": v_sqrt, "select": v_select,
    "round_f32": v_round_f32, "to_i32": v_to_i32}.items()}


def arr(values: Sequence[Any] | Any, shape: Sequence[int] | None = None) -> np.ndarray:
    """An object array of ``values`` (a list, reshaped to ``shape``) or of one value."""
    if not isinstance(values, (list, tuple)):
        a = np.empty((), dtype=object)
        a[()] = values
        return a
    a = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        a[i] = v
    return a.reshape(tuple(shape) if shape is not None else (len(values),))


# ============================================================ the programs
class Scope:
    """The text and the evaluation of one block."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.evals: list[Callable[[ChainMap], None]] = []

    def run(self, env: ChainMap) -> None:
        for f in self.evals:
            f(env)


BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
#: Constants: f32 holds none of the first ones.
CONSTANTS = (0.1, 1e-12, 1 / 3, 1e4 + 1e-9, 1 + 2.0**-40, 1.7e9 + 1e-4, 2 / 3 * 1e8, 3.0, -2.5, 1e4, 1.0, 1e29,
             1e-29, 0.0, -0.0, 0.5)


class Builder:
    """One module ``@main(%x, %y : tensor<8xf64>, %s : tensor<f64>, %k :
    tensor<8xi32>)``: a pool of ``tensor<8xf64>`` values, each with its
    exact evaluation."""

    def __init__(self, draw, variant: int) -> None:
        self.draw = draw
        self.variant = variant  # which of its family's variants this program takes
        self.main = Scope()
        self.scope = self.main
        self.funcs: list[str] = []
        self.n = 0
        self.pool = ["%x", "%y"]
        self.det_directions: set[str] = set()
        sb = self.name("sb")
        self.emit(f"{sb} = stablehlo.broadcast_in_dim %s, dims = [] : ({S}) -> {T}",
                  lambda env: env.__setitem__(sb, np.broadcast_to(env["%s"], (8,)).copy()))
        self.pool.append(sb)

    def name(self, p: str = "v") -> str:
        self.n += 1
        return f"%{p}{self.n}"

    def emit(self, line: str, ev: Callable[[ChainMap], None] | None = None) -> None:
        self.scope.lines.append(line)
        if ev is not None:
            self.scope.evals.append(ev)

    def rotate(self, options: Sequence[Any]) -> Any:
        """The option of this program's variant."""
        return options[self.variant % len(options)]

    def pick(self, pool: list[str] | None = None) -> str:
        pool = pool or self.pool
        return pool[-1 - self.draw(st.integers(0, len(pool) - 1))]

    # ------------------------------------------------------------ elementary
    def const(self, value: float | Sequence[float] | None = None, ty: str = T) -> str:
        if value is None:
            if self.draw(st.integers(0, 3)) == 0:
                value = [self.draw(st.sampled_from(CONSTANTS)) for _ in range(8)]
            else:
                value = self.draw(st.sampled_from(CONSTANTS))
        c = self.name("c")
        if isinstance(value, (list, tuple)):
            text = "[" + ", ".join(hexf(v) for v in value) + "]"
            vals = list(value)
        else:
            text = hexf(value)
            vals = [value] * (8 if ty == T else 1)
        shape = (8,) if ty == T else ()
        self.emit(f"{c} = stablehlo.constant dense<{text}> : {ty}",
                  lambda env: env.__setitem__(c, arr([const_value(v) for v in vals], shape)))
        return c

    def operands(self) -> tuple[str, str]:
        """Two operands for a focal op: the inputs themselves half the time
        (so that each input set's lanes meet: tiny with huge, near values)."""
        k = self.draw(st.integers(0, 3))
        if k < 2:
            return ("%x", "%y") if k == 0 else ("%y", "%x")
        return (self.pick(), self.operand()) if k == 2 else (self.draw(st.sampled_from(["%x", "%y"])), self.const())

    def one(self) -> str:
        """One operand for a focal op: an input, or a pool value."""
        k = self.draw(st.integers(0, 2))
        return ("%x", "%y")[k] if k < 2 else self.pick()

    def operand(self) -> str:
        """A pool value, or a constant."""
        return self.const() if self.draw(st.integers(0, 3)) == 0 else self.pick()

    def binary(self, op: str, a: str, b: str, ty: str = T) -> str:
        r = self.name()
        fn = vec[op]
        self.emit(f"{r} = stablehlo.{op} {a}, {b} : {ty}", lambda env: env.__setitem__(r, fn(env[a], env[b])))
        return r

    def unary(self, op: str, a: str, ty: str = T) -> str:
        r = self.name()
        fn = vec[op]
        self.emit(f"{r} = stablehlo.{op} {a} : {ty}", lambda env: env.__setitem__(r, fn(env[a])))
        return r

    def compare(self, direction: str, a: str, b: str, ty: str = T) -> str:
        p = self.name("p")
        bty = B if ty == T else "tensor<i1>"
        cmp = np.vectorize(lambda x, y: v_compare(direction, x, y, a == b), otypes=[object])

        def ev(env: ChainMap) -> None:
            res = cmp(env[a], env[b])
            env[p] = res
            if any(q.det for q in np.ravel(res)):
                self.det_directions.add(direction)

        self.emit(f"{p} = stablehlo.compare {direction}, {a}, {b}, FLOAT : ({ty}, {ty}) -> {bty}", ev)
        return p

    def select(self, p: str, a: str, b: str) -> str:
        r = self.name()
        fn = vec["select"]
        self.emit(f"{r} = stablehlo.select {p}, {a}, {b} : {B}, {T}",
                  lambda env: env.__setitem__(r, fn(env[p], env[a], env[b])))
        return r

    def convert(self, a: str, src: str, dst: str, fn: Callable[[np.ndarray], np.ndarray]) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.convert {a} : ({src}) -> {dst}", lambda env: env.__setitem__(r, fn(env[a])))
        return r

    def broadcast(self, scalar: str) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.broadcast_in_dim {scalar}, dims = [] : ({S}) -> {T}",
                  lambda env: env.__setitem__(r, np.broadcast_to(env[scalar], (8,)).copy()))
        return r

    def reshape(self, a: str, src: list[int], dst: list[int]) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.reshape {a} : ({ty(src)}) -> {ty(dst)}",
                  lambda env: env.__setitem__(r, env[a].reshape(dst)))
        return r

    def slice(self, a: str, start: int, stop: int) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.slice {a} [{start}:{stop}] : ({T}) -> {ty([stop - start])}",
                  lambda env: env.__setitem__(r, env[a][start:stop].copy()))
        return r

    def concat(self, a: str, b: str, na: int, nb: int) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.concatenate {a}, {b}, dim = 0 : ({ty([na])}, {ty([nb])}) -> {ty([na + nb])}",
                  lambda env: env.__setitem__(r, np.concatenate([env[a], env[b]])))
        return r

    def sum_or_max(self, a: str, body: str) -> str:
        """``reduce`` of ``a`` (8 elements) to a scalar, broadcast back."""
        init = self.const(0.0 if body == "add" else -math.inf, S)
        r = self.name("r")

        def ev(env: ChainMap) -> None:
            terms = list(env[a])
            if body == "add":
                env[r] = arr(v_sum(terms, len(terms) + 2))
            else:
                acc = env[init][()]
                for t in terms:
                    acc = v_max(acc, t)
                env[r] = arr(acc)

        self.emit(f"{r} = stablehlo.reduce({a} init: {init}) applies stablehlo.{body} across dimensions = [0] "
                  f": ({T}, {S}) -> {S}", ev)
        return self.broadcast(r)

    def filler(self) -> str:
        op = self.draw(st.sampled_from(BINARY))
        return self.binary(op, self.pick(), self.operand())

    # -------------------------------------------------------------- families
    def add_sub(self) -> str:
        op = self.rotate(["subtract", "add"])
        a, b = "%x", "%y"  # the cancelling pair (in the cancelling input set)
        if self.draw(st.booleans()):
            a, b = self.pick(), self.operand()
        return self.binary(op, a, b)

    def multiply(self) -> str:
        return self.binary("multiply", *self.operands())

    def divide(self) -> str:
        a, b = self.operands()
        if self.draw(st.booleans()):  # by a difference: cancellation in the divisor
            b = self.binary("subtract", "%x", "%y")
        return self.binary("divide", a, b)

    def sqrt(self) -> str:
        a = self.one()
        if self.rotate([True, True, False]):
            a = self.unary("abs", a)
        return self.unary("sqrt", a)

    def unary_ops(self) -> str:
        op = self.rotate(["negate", "abs", "sign"])
        r = self.unary(op, self.one())
        if self.draw(st.booleans()):
            r = self.unary(self.rotate(["abs", "sign", "negate"]), r)
        return r

    def minmax(self) -> str:
        kind = self.rotate(["maximum", "minimum", "clamp_scalar", "clamp"])
        a, b = self.operands()
        if kind in ("maximum", "minimum"):
            return self.binary(kind, a, b)
        r = self.name()
        if kind == "clamp":
            lo, hi = b, self.operand()
            tys = f"{T}"
        else:
            lo = self.const(self.draw(st.sampled_from([-1.0, 0.1, 1e4, 1 / 3, -0.0])), S)
            hi = self.const(self.draw(st.sampled_from([1.0, 1e4 + 1e-9, 1 + 2.0**-40, 0.5, math.inf])), S)
            tys = f"({S}, {T}, {S}) -> {T}"

        def ev(env: ChainMap) -> None:
            env[r] = vec["minimum"](vec["maximum"](env[a], env[lo]), env[hi])

        self.emit(f"{r} = stablehlo.clamp {lo}, {a}, {hi} : {tys}", ev)
        return r

    def compare_select(self) -> str:
        r = self.pick()
        for j in range(3):
            d = DIRECTIONS[(3 * self.variant + j) % 6]
            a, b = self.pick(), self.operand()
            if self.draw(st.booleans()):
                a, b = ("%x", "%y") if self.draw(st.booleans()) else ("%y", "%x")
            p = self.compare(d, a, b)
            if j == 2 and self.draw(st.booleans()):
                # the predicate itself, as 0.0 or 1.0
                c = self.convert(p, B, T, np.vectorize(
                    lambda q: UNKNOWN if not q.det else exact(float(q.truth)), otypes=[object]))
                r = self.binary("add", r, c)
            else:
                x, y = (a, b) if self.draw(st.booleans()) else (self.pick(), self.operand())
                r = self.select(p, x, y)
        return r

    def converts(self) -> str:
        kind = self.rotate(["f32", "i32", "from_i32"])
        if kind == "f32":
            a = self.one()
            f = self.convert(a, T, "tensor<8xf32>", lambda v: v)
            return self.convert(f, "tensor<8xf32>", T, vec["round_f32"])
        if kind == "i32":
            a = self.binary("multiply", self.one(), self.const(self.draw(st.sampled_from([1.0, 1e3, 1e6, 0.5]))))
            i = self.convert(a, T, I, vec["to_i32"])
            return self.convert(i, I, T, lambda v: v)
        r = self.convert("%k", I, T, lambda v: v)
        return self.binary(self.draw(st.sampled_from(["add", "multiply", "subtract"])), r, self.pick())

    def constants(self) -> str:
        op = self.draw(st.sampled_from(["add", "subtract", "multiply", "divide"]))
        c = self.const(self.rotate([None, [c for c in CONSTANTS[:8]], 1e4, 0.1]))
        a = self.one()
        return self.binary(op, a, c) if self.draw(st.booleans()) else self.binary(op, c, a)

    def moves(self) -> str:
        kind = self.rotate(["reverse", "concat_slice", "transpose", "broadcast"])
        a = self.one()
        if kind == "reverse":
            r = self.name()
            self.emit(f"{r} = stablehlo.reverse {a}, dims = [0] : {T}",
                      lambda env: env.__setitem__(r, env[a][::-1].copy()))
            return r
        if kind == "concat_slice":
            lo, hi = self.slice(a, 0, 3), self.slice(self.pick(), 3, 8)
            return self.concat(hi, lo, 5, 3)
        if kind == "transpose":
            q = self.reshape(a, [8], [2, 4])
            t = self.name()
            self.emit(f"{t} = stablehlo.transpose {q}, dims = [1, 0] : ({ty([2, 4])}) -> {ty([4, 2])}",
                      lambda env: env.__setitem__(t, env[q].T.copy()))
            return self.reshape(t, [4, 2], [8])
        one = self.slice(a, 5, 6)
        e = self.reshape(one, [1], [])
        return self.binary("subtract", self.pick(), self.broadcast(e))

    def reduce(self) -> str:
        body = self.rotate(["add", "maximum"])
        r = self.sum_or_max(self.one(), body)
        return self.binary("subtract", self.pick(), r) if self.draw(st.booleans()) else r

    def cumsum(self) -> str:
        reverse = self.rotate([False, True])
        a = self.one()
        z = self.const(0.0, S)
        r, p, q, t = self.name("cs"), self.name("a"), self.name("b"), self.name()
        pad = "[[0, 7]]" if reverse else "[[7, 0]]"

        def ev(env: ChainMap) -> None:
            v = list(env[a])
            out = []
            for j in range(8):
                terms = v[j:] if reverse else v[: j + 1]
                out.append(v_sum(terms, 8))
            env[r] = arr(out, (8,))

        self.emit(f'{r} = "stablehlo.reduce_window"({a}, {z}) ({{', ev)
        self.emit(f"^bb0({p}: {S}, {q}: {S}):")
        self.emit(f"  {t} = stablehlo.add {p}, {q} : {S}")
        self.emit(f"  stablehlo.return {t} : {S}")
        self.emit(f"}}) {{window_dimensions = array<i64: 8>, padding = dense<{pad}> : tensor<1x2xi64>}} "
                  f": ({T}, {S}) -> {T}")
        return r

    def dot(self) -> str:
        a, b = self.operands()
        if self.rotate([True, False]):
            d = self.name("d")

            def ev(env: ChainMap) -> None:
                env[d] = arr(v_sum([v_mul(x, y) for x, y in zip(env[a], env[b])], 9))

            self.emit(f"{d} = stablehlo.dot_general {a}, {b}, contracting_dims = [0] x [0] : ({T}, {T}) -> {S}", ev)
            return self.binary("add", self.pick(), self.broadcast(d))
        qa, qb = self.reshape(a, [8], [2, 4]), self.reshape(b, [8], [4, 2])
        d = self.name("d")

        def ev2(env: ChainMap) -> None:
            x, y = env[qa], env[qb]
            out = [[v_sum([v_mul(x[i, k], y[k, j]) for k in range(4)], 5) for j in range(2)] for i in range(2)]
            env[d] = arr([out[0][0], out[0][1], out[1][0], out[1][1]], (2, 2))

        self.emit(f"{d} = stablehlo.dot_general {qa}, {qb}, contracting_dims = [1] x [0] "
                  f": ({ty([2, 4])}, {ty([4, 2])}) -> {ty([2, 2])}", ev2)
        f = self.reshape(d, [2, 2], [4])
        return self.concat(f, self.slice(self.pick(), 2, 6), 4, 4)

    def _body(self, pool: list[str]) -> str:
        """One or two random arithmetic ops on ``pool`` in the current scope."""
        r = pool[0]
        for _ in range(self.draw(st.integers(1, 2))):
            op = self.draw(st.sampled_from(BINARY))
            b = self.const(self.draw(st.sampled_from([0.5, 1.0000001, 0.1, 3.0, 1 / 3])), T) \
                if self.draw(st.booleans()) else self.pick(pool)
            r = self.binary(op, r, b)
            pool = pool + [r]
        return r

    def _region(self) -> Scope:
        saved, self.scope = self.scope, Scope()
        return saved

    def loop(self) -> str:
        f64_cond = self.rotate([False, True])
        trips = self.draw(st.integers(1, 3))
        a, b = self.operands()
        i0, t0 = self.name("i"), self.const(0.0, S)
        self.emit(f"{i0} = stablehlo.constant dense<0> : tensor<i32>",
                  lambda env: env.__setitem__(i0, arr(exact(0.0))))
        w, wi, wv, ww, wt = self.name("w"), self.name("wi"), self.name("wv"), self.name("ww"), self.name("wt")
        outer = self._region()
        if f64_cond:
            n = self.const(trips - 0.5, S)
            p = self.compare("LT", wt, n, S)
        else:
            n, p = self.name("n"), self.name("p")
            self.emit(f"{n} = stablehlo.constant dense<{trips}> : tensor<i32>")
            self.emit(f"{p} = stablehlo.compare LT, {wi}, {n}, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
                      lambda env: env.__setitem__(p, arr(Pred(int(env[wi][()].e) < trips, True))))
        self.emit(f"stablehlo.return {p} : tensor<i1>")
        cond = self.scope
        self.scope = Scope()
        one, i1, tone = self.name("c"), self.name("i"), self.const(1.0, S)
        self.emit(f"{one} = stablehlo.constant dense<1> : tensor<i32>")
        self.emit(f"{i1} = stablehlo.add {wi}, {one} : tensor<i32>",
                  lambda env: env.__setitem__(i1, arr(exact(float(env[wi][()].e) + 1))))
        t1 = self.binary("add", wt, tone, S)
        v1 = self._body([wv, ww])
        self.emit(f"stablehlo.return {i1}, {v1}, {ww}, {t1} : tensor<i32>, {T}, {T}, {S}")
        body = self.scope
        self.scope = outer
        self.emit(f"{w}:4 = stablehlo.while({wi} = {i0}, {wv} = {a}, {ww} = {b}, {wt} = {t0}) "
                  f": tensor<i32>, {T}, {T}, {S}")
        self.emit(" cond {")
        self.scope.lines += ["  " + line for line in cond.lines]
        self.emit("} do {")
        self.scope.lines += ["  " + line for line in body.lines]

        def ev(env: ChainMap) -> None:
            state = [env[i0], env[a], env[b], env[t0]]
            names = [wi, wv, ww, wt]
            for _ in range(10):
                sub = ChainMap(dict(zip(names, state)))
                cond.run(sub)
                pred = sub[p][()]
                if not pred.det:
                    state = [state[0]] + [np.full(np.shape(s), UNKNOWN, dtype=object) for s in state[1:]]
                    break
                if not pred.truth:
                    break
                body.run(sub)
                state = [sub[i1], sub[v1], sub[ww], sub[t1]]
            for k, s in enumerate(state):
                env[f"{w}#{k}"] = s

        self.emit("}", ev)
        return f"{w}#1"

    def branch(self) -> str:
        kind = self.rotate(["if", "case"])
        a, b = self.operands()
        r = self.name("br")
        if kind == "if":
            c = self.const(self.draw(st.sampled_from([0.0, 1.0, 1e4 + 1e-9, -0.0])), S)
            key = self.compare(self.draw(st.sampled_from(DIRECTIONS)), "%s", c, S)
            count = 2
            text = f'{r} = "stablehlo.if"({key}) ('
            tail = f") : (tensor<i1>) -> {T}"
        else:
            q = self.binary("multiply", "%s", self.const(self.draw(st.sampled_from([1.0, 0.5, 3.0])), S), S)
            key = self.convert(q, S, "tensor<i32>", vec["to_i32"])
            count = 3
            text = f'{r} = "stablehlo.case"({key}) ('
            tail = f") : (tensor<i32>) -> {T}"
        outer = self.scope
        branches: list[tuple[Scope, str]] = []
        for j in range(count):
            self.scope = Scope()
            if j == count - 1 and self.draw(st.booleans()):
                res = b  # an outer value passed through
            else:
                res = self._body([a, b] if j % 2 == 0 else [b, a])
            self.emit(f"stablehlo.return {res} : {T}")
            branches.append((self.scope, res))
        self.scope = outer

        def ev(env: ChainMap) -> None:
            k = env[key][()]
            if kind == "if":
                j = None if not k.det else (0 if k.truth else 1)
            else:
                j = None if k.kind != "F" else int(k.e)
                if j is not None and not 0 <= j < count:
                    j = count - 1
            if j is None:
                env[r] = np.full((8,), UNKNOWN, dtype=object)
                return
            scope, res = branches[j]
            sub = env.new_child()
            scope.run(sub)
            env[r] = sub[res]

        body = ", ".join("{\n" + "\n".join("  " + line for line in s.lines) + "\n}" for s, _ in branches)
        self.emit(text + body + tail, ev)
        return r

    def call(self) -> str:
        a, b = self.operands()
        fname = f"@f{self.n}"
        pa, pb = self.name("pa"), self.name("pb")
        outer = self.scope
        self.scope = Scope()
        res = self._body([pa, pb])
        self.emit(f"return {res}, {pa} : {T}, {T}")
        fn = self.scope
        self.scope = outer
        self.funcs.append(f"  func.func private {fname}({pa}: {T}, {pb}: {T}) -> ({T}, {T}) {{\n"
                          + "".join(f"    {line}\n" for line in fn.lines) + "  }")
        c = self.name("call")

        def ev(env: ChainMap) -> None:
            sub = ChainMap({pa: env[a], pb: env[b]})
            fn.run(sub)
            env[f"{c}#0"], env[f"{c}#1"] = sub[res], sub[pa]

        self.emit(f"{c}:2 = func.call {fname}({a}, {b}) : ({T}, {T}) -> ({T}, {T})", ev)
        return self.binary("subtract", f"{c}#0", f"{c}#1")

    # ---------------------------------------------------------------- module
    def module(self, family: str) -> tuple[str, list[str]]:
        for _ in range(self.draw(st.integers(0, 2))):
            self.pool.append(self.filler())
        focal = getattr(self, FAMILIES[family])()
        self.pool.append(focal)
        for _ in range(self.draw(st.integers(0, 1))):
            self.pool.append(self.filler())
        outs = [focal] if self.pool[-1] == focal else [focal, self.pool[-1]]
        ret = ", ".join([T] * len(outs))
        body = "".join(f"    {line}\n" for line in self.main.lines)
        text = ("module {\n"
                f"  func.func public @main(%x: {T}, %y: {T}, %s: {S}, %k: {I}) -> ({ret}) {{\n{body}"
                f"    return {', '.join(outs)} : {ret}\n  }}\n" + "".join(f + "\n" for f in self.funcs) + "}\n")
        return text, outs


def ty(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + "f64>"


def const_value(v: float) -> V:
    """A float64 constant as the pair program holds it: split into words
    (within ``u^2`` of it; a word below f32's normals is flushed)."""
    if math.isnan(v) or math.isinf(v):
        return V("S", float(v))
    slack = TINY if 0 < abs(v) < 2.0**-76 else 0.0
    return replace(exact(v, U2 * abs(v) * (1 + 2.0**-20) + slack), flushed=slack > 0)


FAMILIES = {
    "add_sub": "add_sub", "multiply": "multiply", "divide": "divide", "sqrt": "sqrt", "negate_abs_sign": "unary_ops",
    "min_max_clamp": "minmax", "compare_select": "compare_select", "converts": "converts",
    "constants": "constants", "moves": "moves", "reduce": "reduce", "cumsum": "cumsum", "dot_general": "dot",
    "while": "loop", "if_case": "branch", "call": "call",
}


# ================================================================= inputs
def element(draw, kind: str) -> float:
    """One input element of a kind: ordinary, one f32 cannot hold, huge,
    tiny, zero, or inf/nan."""
    sign = draw(st.sampled_from([1.0, -1.0]))
    mant = 1.0 + draw(st.integers(0, 2**52 - 1)) * 2.0**-52
    if kind == "plain":
        return sign * mant * 2.0 ** draw(st.integers(-10, 10))
    if kind == "unholdable":
        return sign * draw(st.sampled_from([1 + 2.0**-40, 1e4 + 1e-9, 0.1, 1 / 3, 1e-12, 1.7e9 + 1e-4, 1 - 2.0**-45]))
    if kind == "huge":
        return sign * mant * 2.0 ** draw(st.integers(40, 97))
    if kind == "tiny":  # (mostly where a pair still holds 48 bits, down to 2**-102)
        return sign * mant * 2.0 ** draw(st.integers(-104, -70))
    if kind == "zero":
        return sign * 0.0
    return draw(st.sampled_from([math.inf, -math.inf, math.nan]))


#: The kinds of ``(x[i], y[i])`` of each input set: in the cancelling set
#: ``y[i]`` is near ``x[i]``; the extreme one meets tiny values with huge
#: and ordinary ones (products, quotients and roots near f32's underflow).
LANES = {
    "cancel": [("plain", "near"), ("unholdable", "near"), ("plain", "near")],
    "extreme": [("tiny", "huge"), ("huge", "tiny"), ("tiny", "plain"), ("plain", "tiny"), ("tiny", "near"),
                ("huge", "plain"), ("zero", "tiny"), ("unholdable", "huge")],
    "special": [("plain", "special"), ("special", "plain"), ("zero", "plain"), ("plain", "zero"),
                ("unholdable", "near"), ("special", "special"), ("zero", "zero")],
}
#: Relative offsets of ``y`` from ``x`` in cancelling pairs.
NEAR = (2.0**-30, -(2.0**-30), 2.0**-40, -(2.0**-40), 1e-9, -1e-12, 2.0**-20, 3 * 2.0**-45)


def input_set(draw, mode: str) -> list[np.ndarray]:
    x, y = np.zeros(8), np.zeros(8)
    for i in range(8):
        kx, ky = draw(st.sampled_from(LANES[mode]))
        x[i] = element(draw, kx)
        y[i] = x[i] * (1 + draw(st.sampled_from(NEAR))) if ky == "near" else element(draw, ky)
    s = element(draw, draw(st.sampled_from(["plain", "unholdable"] + [k for k, _ in LANES[mode]])))
    if mode == "cancel" and draw(st.booleans()):
        s = draw(st.sampled_from([1e4, 1.0, 0.5, 2.5]))
    k = np.array([draw(st.sampled_from([0, 1, -7, 123456, 2**24 + 1, 2**31 - 1, -(2**31), 99999999]))
                  for _ in range(8)], dtype=np.int32)
    return [x, y, np.array(s), k]


def input_value(v: float, words: np.ndarray) -> V:
    """An input element as the pair program holds it: its words' exact sum
    (a word below f32's normals flushed), within ``u^2`` of it."""
    if not math.isfinite(v):
        return V("S", float(v))
    held = sum((Fraction(float(w)) for w in words if abs(w) >= TINY), Fraction(0))
    b = float(abs(held - Fraction(v))) * (1 + 2.0**-40)
    assert b <= U2 * abs(v) * (1 + 2.0**-20) or abs(v) < 2.0**-76, ("split_pairs", v, words)
    return replace(exact(v, b), flushed=any(0 < abs(w) < TINY for w in words))


# ================================================================ the check
def pair_value(words: np.ndarray) -> tuple[Fraction | None, float]:
    hi, lo = float(words[0]), float(words[1])
    if not math.isfinite(hi):
        assert lo == 0, ("a non-finite pair has lo = 0", hi, lo)
        return None, hi
    return Fraction(hi) + Fraction(lo), hi


def same_special(got: float, want: float, signed: bool) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return math.isinf(got) and (not signed or got == want)


class Stats:
    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.worst_rel = 0.0  # |err| / |exact| in u^2, well-conditioned elements
        self.worst_used = 0.0  # |err| / bound
        self.cancel: list[tuple[float, float]] = []  # (pairs, f32) |err| / (u^2 M), cancelling elements
        self.zero_signs: collections.Counter[str] = collections.Counter()
        self.directions: set[str] = set()  # compare directions with a determined outcome
        self.ops: set[str] = set()  # the ops the pass computed on pairs


def check_output(want: np.ndarray, got: np.ndarray, ref: np.ndarray, f32: np.ndarray, stats: Stats,
                 where: Callable[[int], str]) -> None:
    for i, v in enumerate(want):
        if v.kind == "U":
            stats.counts["unchecked"] += 1
            continue
        g, ghi = pair_value(got[i])
        r = float(ref[i])
        if v.kind == "S":
            assert g is None and same_special(ghi, v.e, v.signed), f"pairs {ghi} != {v.e}\n{where(i)}"
            assert same_special(r, v.e, v.signed), f"x64 {r} != {v.e}\n{where(i)}"
            stats.counts["specials"] += 1
            continue
        assert g is not None, f"pairs {ghi} where the exact value is {float(v.e)!r}\n{where(i)}"
        err = abs(g - v.e)
        assert err <= Fraction(v.b) * (1 + Fraction(1, 2**30)), (
            f"pairs {float(g)!r} is {float(err):.3e} from the exact {float(v.e)!r}, beyond the bound {v.b:.3e} "
            f"({float(err) / v.b:.2f} x)\n{where(i)}")
        # the evaluator, held to the x64 program
        assert math.isfinite(r) and abs(Fraction(r) - v.e) <= Fraction(v.b + 2.0**-44 * v.m), \
            f"x64 {r!r} vs exact {float(v.e)!r}\n{where(i)}"
        stats.counts["compared"] += 1
        f = float(f32[i])
        if not math.isfinite(f) or abs(Fraction(f) - v.e) > Fraction(v.b):
            stats.counts["f32 beyond the bound"] += 1
        if v.e == 0 and v.b == 0:
            stats.counts["zeros"] += 1
            gz = math.copysign(1, ghi)
            if v.zs is not None:
                assert gz == v.zs and math.copysign(1, r) == v.zs, f"zero's sign {ghi} x64 {r} want {v.zs}\n{where(i)}"
                stats.counts["signed zeros"] += 1
                stats.counts["-0"] += int(v.zs < 0)
            else:
                stats.zero_signs["same as x64" if gz == math.copysign(1, r) else "differs from x64"] += 1
            continue
        fe = float(abs(v.e))
        fg = float(err)
        if v.flushed:  # (the figures below are the pair ops', not the format's underflow)
            continue
        if fe > 0 and v.m <= 4 * fe and v.b <= 64 * U2 * fe:
            stats.worst_rel = max(stats.worst_rel, fg / fe / U2)
        if v.b > 0 and v.local:
            stats.worst_used = max(stats.worst_used, fg / v.b)
        if v.m > 2.0**10 * fe and v.b <= 64 * U2 * v.m:  # (a bound of double-word accuracy)
            ferr = abs(Fraction(f) - v.e) if math.isfinite(f) else math.inf
            stats.cancel.append((fg / (U2 * v.m), float(ferr) / (U2 * v.m)))
            stats.counts["cancelling"] += 1


#: The ops each family's programs must have had computed on pairs.
FAMILY_OPS = {
    "add_sub": {"add", "subtract"}, "multiply": {"multiply"}, "divide": {"divide"}, "sqrt": {"sqrt"},
    "negate_abs_sign": {"negate", "abs", "sign"}, "min_max_clamp": {"maximum", "minimum", "clamp"},
    "compare_select": {"compare", "select"}, "converts": {"convert"}, "constants": {"constant"},
    "moves": {"reverse", "slice", "concatenate", "reshape", "transpose", "broadcast_in_dim"},
    "reduce": {"reduce"}, "cumsum": {"reduce_window"}, "dot_general": {"dot_general"}, "while": {"while"},
    "if_case": {"if", "case"}, "call": {"func.call"},
}
#: Variants of each family (each drawn as often): the ops of the family
#: taken in turn (``Builder.rotate``).
VARIANTS = {"add_sub": 2, "sqrt": 3, "negate_abs_sign": 3, "min_max_clamp": 4, "compare_select": 2, "converts": 3,
            "constants": 4, "moves": 4, "reduce": 2, "cumsum": 2, "dot_general": 2, "while": 2, "if_case": 2}
#: Programs drawn per variant.
EXAMPLES = {"multiply": 8, "divide": 8, "call": 4}
DEFAULT_EXAMPLES = 3
MODES = ("cancel", "extreme", "special")


def run_family(family: str) -> Stats:
    stats = Stats()
    for variant in range(VARIANTS.get(family, 1)):
        run_variant(family, variant, stats)
    return stats


def run_variant(family: str, variant: int, stats: Stats) -> None:
    @settings(max_examples=EXAMPLES.get(family, DEFAULT_EXAMPLES), deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def prop(data) -> None:
        builder = Builder(data.draw, variant)
        text, outs = builder.module(family)
        stats.counts["programs"] += 1
        sets = [input_set(data.draw, mode) for mode in MODES]
        m = ir.Module.parse(text, make_context())
        report = no64.demote(m, float_policy="pairs", check=True)
        assert report.pair_inputs == [0, 1, 2] and report.pair_outputs == list(range(len(outs))), text
        stats.counts["converted"] += 1
        stats.ops |= set(report.pairs_by_op)
        run_pairs = compile_module(m, strict=True)
        run_x64 = compile_module(ir.Module.parse(text, make_context()), strict=False)
        f = ir.Module.parse(text, make_context())
        no64.demote(f, float_policy="f32", check=True)
        run_f32 = compile_module(f, strict=True)
        for args in sets:
            words = [no64.split_pairs(a) for a in args[:3]]
            env: ChainMap = ChainMap({
                "%x": arr([input_value(v, w) for v, w in zip(args[0], words[0])], (8,)),
                "%y": arr([input_value(v, w) for v, w in zip(args[1], words[1])], (8,)),
                "%s": arr(input_value(float(args[2]), words[2])),
                "%k": arr([exact(float(v)) for v in args[3]], (8,)),
            })
            with np.errstate(all="ignore"):  # (the evaluator's IEEE steps: inf - inf, ...)
                builder.main.run(env)
            got = run_pairs(words + [args[3]])
            ref = run_x64(args)
            low = run_f32([a.astype(np.float32) for a in args[:3]] + [args[3]])
            for j, name in enumerate(outs):
                def where(i: int, j: int = j) -> str:
                    return (f"output {j}, element {i}; inputs x={args[0].tolist()}, y={args[1].tolist()}, "
                            f"s={float(args[2])!r}, k={args[3].tolist()}\n{text}")

                check_output(env[name], got[j], ref[j], low[j], stats, where)
        stats.counts["input sets"] += len(sets)
        stats.directions |= builder.det_directions

    prop()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_pairs_within_the_double_word_bounds_of_the_exact_result(family: str) -> None:
    stats = run_family(family)
    c = stats.counts
    pairs_cancel = max((p for p, _ in stats.cancel), default=0.0)
    f32_cancel = max((f for _, f in stats.cancel), default=0.0)
    print(f"\n{family}: {dict(c)}; worst {stats.worst_rel:.2f} u^2 relative (well-conditioned elements), "
          f"{stats.worst_used:.3f} of the bound; compares decided {sorted(stats.directions)}; cancelling elements: "
          f"pairs {pairs_cancel:.3g}, f32 {f32_cancel:.3g} u^2 M; zeros of no promised sign {dict(stats.zero_signs)}")
    # the guard against vacuity: every program converted and run, elements
    # compared, infinities and NaN met, and f32 would have failed the bounds
    assert c["programs"] == VARIANTS.get(family, 1) * EXAMPLES.get(family, DEFAULT_EXAMPLES), c
    assert c["converted"] == c["programs"], c
    assert c["compared"] >= 8 * c["programs"], c
    assert c["specials"] >= 1, c
    assert c["f32 beyond the bound"] >= c["compared"] // 10, c
    ops = {name.removeprefix("stablehlo.") for name in stats.ops}
    assert FAMILY_OPS[family] <= ops, (FAMILY_OPS[family] - ops, ops)
    if family == "compare_select":
        assert stats.directions == set(DIRECTIONS), stats.directions
    if family == "while":  # (the loop whose condition compares float64 pairs)
        assert "LT" in stats.directions, stats.directions
    if family in ("add_sub", "multiply", "divide", "negate_abs_sign", "sqrt", "min_max_clamp", "converts"):
        assert c["signed zeros"] >= 1 and c["-0"] >= 1, c
    if family == "add_sub":
        # cancellation: pairs within a few u^2 of the magnitudes, f32 within u
        assert c["cancelling"] >= 16, c
        assert pairs_cancel <= 4 and f32_cancel >= 2.0**16, (pairs_cancel, f32_cancel)
