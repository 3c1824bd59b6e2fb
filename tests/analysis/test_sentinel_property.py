"""Soundness with sentinels, property-tested: a 64-bit sentinel may flow into
any op of the op table, and the converted program still computes what the
64-bit program computes -- under the default, strict and exact policies.

Each program is StableHLO text over ``%x, %y : tensor<4xi64>`` (declared
ranges drawn from small ones to the whole int32 range, so that ordinary
values may or may not reach the sentinels' 32-bit images).  Any operand of
any op may first be wrapped as ``select(x < y, v, SENTINEL)`` with
``SENTINEL`` one of ``INT64_MAX``, ``INT64_MIN`` (signed) or ``UINT64_MAX``
(the unsigned family computes in ``ui64``); the op under test (a family of
the op table: arithmetic, division and remainder, shifts, bitwise ops, bit
counts, converts, unsigned ops, compares, select/min/max/clamp, moving ops,
reductions, sorts, loops, calls, ``dot_general``) always reads at least one
wrapped operand, and elementwise arithmetic follows it.

For each policy, a program the pass accepts with no ``unproven`` or
``overflow`` verdict (the default policy reports those; strict and exact
refuse them) must equal the 64-bit program on adversarial inputs (the range extremes, INT32_MAX, INT32_MIN, 0, -1, ...),
output for output, bit for bit; a program it refuses must be refused with a
no64 error and left unchanged.  Each family is its own derandomized run,
and checks that its programs were accepted and compared under every policy,
strict included (the guard against vacuity).
"""

from __future__ import annotations

import collections

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from runner import compare_on_adversarial_inputs, demoted_unless_refused
from support import ir, make_context

T = "tensor<4xi64>"
U = "tensor<4xui64>"
S = "tensor<i64>"
B = "tensor<4xi1>"
INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)
INT64_MAX, INT64_MIN, UINT64_MAX = 2**63 - 1, -(2**63), 2**64 - 1

RANGES = st.sampled_from([(-1000, 1000), (0, 7), (INT32_MAX - 100, INT32_MAX), (INT32_MIN, INT32_MIN + 100),
                          (INT32_MIN, INT32_MAX), (-(2**20), 2**20)])
CONSTANTS = [1000, 7, 3, 0, 1, -1, 65535, 2**40, INT32_MAX, INT32_MIN]
POLICIES = ("default", "strict", "exact")
class Builder:
    """One module: ``@main(%x, %y : tensor<4xi64>)``, a pool of
    ``tensor<4xi64>`` values, and the mask ``%m = x < y``."""

    def __init__(self, draw) -> None:
        self.draw = draw
        self.lines: list[str] = [
            "%m = stablehlo.compare LT, %x, %y, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>"
        ]
        self.funcs: list[str] = []
        self.pool = ["%x", "%y"]
        self.n = 0
        self.wrapped = 0

    def name(self, p: str = "v") -> str:
        self.n += 1
        return f"%{p}{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def const(self, value: int, ty: str = T) -> str:
        c = self.name("c")
        self.emit(f"{c} = stablehlo.constant dense<{value}> : {ty}")
        return c

    def pick(self) -> str:
        return self.pool[-1 - self.draw(st.integers(0, len(self.pool) - 1))]

    def wrap(self, v: str, ty: str = T, sentinel: int | None = None) -> str:
        """``select(x < y, v, SENTINEL)``."""
        if sentinel is None:
            sentinel = UINT64_MAX if ty == U else self.draw(st.sampled_from([INT64_MAX, INT64_MIN]))
        c = self.const(sentinel, ty)
        r = self.name("w")
        self.emit(f"{r} = stablehlo.select %m, {v}, {c} : {B}, {ty}")
        self.wrapped += 1
        return r

    def operand(self, force: bool = False, ty: str = T) -> str:
        """A value of the pool, wrapped with a sentinel (always if ``force``)."""
        v = self.pick()
        if ty == U:
            u = self.name("u")
            self.emit(f"{u} = stablehlo.convert {v} : ({T}) -> {U}")
            v = u
        if force or self.draw(st.booleans()):
            v = self.wrap(v, ty)
        return v

    def binary(self, op: str, a: str, b: str, ty: str = T) -> str:
        r = self.name()
        self.emit(f"{r} = stablehlo.{op} {a}, {b} : {ty}")
        return r

    def back(self, v: str, ty: str) -> str:
        """``v`` as ``tensor<4xi64>``."""
        if ty == T:
            return v
        r = self.name()
        self.emit(f"{r} = stablehlo.convert {v} : ({ty}) -> {T}")
        return r

    # ------------------------------------------------------------ families
    def arith(self) -> str:
        op = self.draw(st.sampled_from(["add", "subtract", "multiply", "negate", "abs", "sign"]))
        a = self.operand(force=True)
        if op in ("negate", "abs", "sign"):
            r = self.name()
            self.emit(f"{r} = stablehlo.{op} {a} : {T}")
            return r
        b = self.operand() if self.draw(st.booleans()) else self.const(self.draw(st.sampled_from(CONSTANTS)))
        return self.binary(op, a, b)

    def divide(self) -> str:
        op = self.draw(st.sampled_from(["divide", "remainder"]))
        if self.draw(st.booleans()):  # the sentinel as dividend
            divisor = self.const(self.draw(st.sampled_from([1000, 7, 2**33, -3])))
            return self.binary(op, self.operand(force=True), divisor)
        return self.binary(op, self.operand(), self.operand(force=True))  # as divisor

    def shift(self) -> str:
        op = self.draw(st.sampled_from(["shift_left", "shift_right_arithmetic", "shift_right_logical"]))
        a = self.operand(force=True)
        amount = self.const(self.draw(st.sampled_from([1, 16, 31, 33, 40, 62])))
        return self.binary(op, a, amount)

    def bitwise(self) -> str:
        op = self.draw(st.sampled_from(["and", "or", "xor", "not"]))
        a = self.operand(force=True)
        if op == "not":
            r = self.name()
            self.emit(f"{r} = stablehlo.not {a} : {T}")
            return r
        b = self.operand() if self.draw(st.booleans()) else self.const(
            self.draw(st.sampled_from([0xFFFF, 0xFFFFFFFF, 1 << 40, 1, -2])))
        return self.binary(op, a, b)

    def bitcount(self) -> str:
        op = self.draw(st.sampled_from(["count_leading_zeros", "popcnt"]))
        a = self.operand(force=True)
        r = self.name()
        self.emit(f"{r} = stablehlo.{op} {a} : {T}")
        return r

    def convert(self) -> str:
        a = self.operand(force=True)
        to = self.draw(st.sampled_from(["i32", "i16", "i8", "ui32", "ui64", "f32"]))
        t = f"tensor<4x{to}>"
        c = self.name()
        self.emit(f"{c} = stablehlo.convert {a} : ({T}) -> {t}")
        if to != "f32":
            return self.back(c, t)
        k, p = self.name("k"), self.name("p")
        self.emit(f"{k} = stablehlo.constant dense<1.0e+10> : tensor<4xf32>")
        self.emit(f"{p} = stablehlo.compare GT, {c}, {k}, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> {B}")
        return self.back(p, B)

    def unsigned(self) -> str:
        a = self.operand(force=True, ty=U)
        op = self.draw(st.sampled_from(["remainder", "popcnt", "shift_right_logical", "and", "compare", "divide"]))
        if op == "popcnt":
            r = self.name()
            self.emit(f"{r} = stablehlo.popcnt {a} : {U}")
        elif op == "compare":
            b = self.operand(ty=U)
            p = self.name("p")
            self.emit(f"{p} = stablehlo.compare LT, {a}, {b}, UNSIGNED : ({U}, {U}) -> {B}")
            return self.back(p, B)
        else:
            k = {"remainder": 1000, "shift_right_logical": 33, "and": 0xFFFF, "divide": 2**33}[op]
            r = self.binary(op, a, self.const(k, U), U)
        return self.back(r, U)

    def compare(self) -> str:
        d = self.draw(st.sampled_from(["LT", "LE", "EQ", "NE", "GT", "GE"]))
        a = self.operand(force=True)
        if self.draw(st.booleans()):
            b = self.operand()
        else:
            b = self.const(self.draw(st.sampled_from([INT64_MAX, INT64_MIN, 0])))
        p = self.name("p")
        self.emit(f"{p} = stablehlo.compare {d}, {a}, {b}, SIGNED : ({T}, {T}) -> {B}")
        return self.back(p, B)

    def select_minmax(self) -> str:
        op = self.draw(st.sampled_from(["select", "maximum", "minimum", "clamp"]))
        a, b = self.operand(force=True), self.operand()
        r = self.name()
        if op == "select":
            self.emit(f"{r} = stablehlo.select %m, {b}, {a} : {B}, {T}")
        elif op == "clamp":
            lo, hi = self.const(-5), self.const(self.draw(st.sampled_from([1000, INT64_MAX])))
            self.emit(f"{r} = stablehlo.clamp {lo}, {a}, {hi} : {T}")
        else:
            return self.binary(op, a, b)
        return r

    def moved(self) -> str:
        kind = self.draw(st.sampled_from(["reverse", "concat_slice", "pad", "transpose", "broadcast", "dynamic_slice"]))
        a = self.operand(force=True)
        r = self.name()
        if kind == "reverse":
            self.emit(f"{r} = stablehlo.reverse {a}, dims = [0] : {T}")
        elif kind == "concat_slice":
            c = self.name()
            self.emit(f"{c} = stablehlo.concatenate {a}, {self.operand()}, dim = 0 : ({T}, {T}) -> tensor<8xi64>")
            self.emit(f"{r} = stablehlo.slice {c} [2:6] : (tensor<8xi64>) -> {T}")
        elif kind == "pad":
            s, k = self.name(), self.const(INT64_MIN, S)
            self.emit(f"{s} = stablehlo.slice {a} [1:3] : ({T}) -> tensor<2xi64>")
            self.emit(f"{r} = stablehlo.pad {s}, {k}, low = [1], high = [1], interior = [0]"
                      f" : (tensor<2xi64>, {S}) -> {T}")
        elif kind == "transpose":
            q, t = self.name(), self.name()
            self.emit(f"{q} = stablehlo.reshape {a} : ({T}) -> tensor<2x2xi64>")
            self.emit(f"{t} = stablehlo.transpose {q}, dims = [1, 0] : (tensor<2x2xi64>) -> tensor<2x2xi64>")
            self.emit(f"{r} = stablehlo.reshape {t} : (tensor<2x2xi64>) -> {T}")
        elif kind == "broadcast":
            s, e = self.name(), self.name()
            self.emit(f"{s} = stablehlo.slice {a} [0:1] : ({T}) -> tensor<1xi64>")
            self.emit(f"{e} = stablehlo.reshape {s} : (tensor<1xi64>) -> {S}")
            self.emit(f"{r} = stablehlo.broadcast_in_dim {e}, dims = [] : ({S}) -> {T}")
        else:  # the sentinel as an index
            s, e, c = self.name(), self.name(), self.name()
            self.emit(f"{s} = stablehlo.slice {a} [1:2] : ({T}) -> tensor<1xi64>")
            self.emit(f"{e} = stablehlo.reshape {s} : (tensor<1xi64>) -> {S}")
            self.emit(f"{c} = stablehlo.concatenate {self.operand()}, {self.operand()}, dim = 0"
                      f" : ({T}, {T}) -> tensor<8xi64>")
            self.emit(f"{r} = stablehlo.dynamic_slice {c}, {e}, sizes = [4] : (tensor<8xi64>, {S}) -> {T}")
        return r

    def reduce(self) -> str:
        body, init = self.draw(st.sampled_from([("add", 0), ("maximum", INT64_MIN), ("minimum", INT64_MAX), ("and", -1),
                                                ("xor", 0)]))
        a = self.operand(force=True)
        i0 = self.const(init, S)
        r, v = self.name("r"), self.name()
        self.emit(f"{r} = stablehlo.reduce({a} init: {i0}) applies stablehlo.{body} across dimensions = [0]"
                  f" : ({T}, {S}) -> {S}")
        self.emit(f"{v} = stablehlo.broadcast_in_dim {r}, dims = [] : ({S}) -> {T}")
        return v

    def sort(self) -> str:
        a, b = self.operand(force=True), self.operand()
        r, p = self.name("s"), self.name("p")
        self.emit(f'{r}:2 = "stablehlo.sort"({a}, {b}) ({{')
        self.emit(f"^bb0(%k0: {S}, %k1: {S}, %q0: {S}, %q1: {S}):")
        self.emit(f"  {p} = stablehlo.compare LT, %k0, %k1, SIGNED : ({S}, {S}) -> tensor<i1>")
        self.emit(f"  stablehlo.return {p} : tensor<i1>")
        self.emit(f"}}) {{dimension = 0 : i64, is_stable = true}} : ({T}, {T}) -> ({T}, {T})")
        return f"{r}#{self.draw(st.integers(0, 1))}"

    def loop(self) -> str:
        a = self.operand(force=True)
        zero = self.const(0, S)
        w = self.name("w")
        op = self.draw(st.sampled_from(["remainder", "add", "maximum"]))
        k = self.draw(st.sampled_from([1000, 1, 7]))
        self.emit(f"{w}:2 = stablehlo.while(%i = {zero}, %a = {a}) : {S}, {T}")
        self.emit(" cond {")
        self.emit(f"  %n = stablehlo.constant dense<3> : {S}")
        self.emit(f"  %p = stablehlo.compare LT, %i, %n, SIGNED : ({S}, {S}) -> tensor<i1>")
        self.emit("  stablehlo.return %p : tensor<i1>")
        self.emit("} do {")
        self.emit(f"  %one = stablehlo.constant dense<1> : {S}")
        self.emit(f"  %i1 = stablehlo.add %i, %one : {S}")
        self.emit(f"  %k = stablehlo.constant dense<{k}> : {T}")
        self.emit(f"  %b = stablehlo.{op} %a, %k : {T}")
        self.emit(f"  stablehlo.return %i1, %b : {S}, {T}")
        self.emit("}")
        return f"{w}#1"

    def call(self) -> str:
        a = self.operand(force=True)
        fname = f"@f{len(self.funcs)}"
        op = self.draw(st.sampled_from(["remainder", "shift_right_arithmetic", "maximum"]))
        k = {"remainder": 1000, "shift_right_arithmetic": 33, "maximum": 5}[op]
        self.funcs.append(
            f"  func.func private {fname}(%q: {T}) -> {T} {{\n"
            f"    %k = stablehlo.constant dense<{k}> : {T}\n"
            f"    %o = stablehlo.{op} %q, %k : {T}\n"
            f"    return %o : {T}\n  }}"
        )
        r = self.name("r")
        self.emit(f"{r} = func.call {fname}({a}) : ({T}) -> {T}")
        return r

    def dot(self) -> str:
        a, b = self.operand(force=True), self.operand()
        d, r = self.name(), self.name()
        self.emit(f"{d} = stablehlo.dot_general {a}, {b}, contracting_dims = [0] x [0] : ({T}, {T}) -> {S}")
        self.emit(f"{r} = stablehlo.broadcast_in_dim {d}, dims = [] : ({S}) -> {T}")
        return r

    # ---------------------------------------------------------------- module
    def filler(self) -> str:
        op = self.draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
        b = self.pick() if self.draw(st.booleans()) else self.const(self.draw(st.sampled_from(CONSTANTS)))
        return self.binary(op, self.pick(), b)

    def module(self, family: str) -> str:
        for _ in range(self.draw(st.integers(0, 1))):
            self.pool.append(self.filler())
        self.pool.append(getattr(self, family)())
        for _ in range(self.draw(st.integers(0, 2))):
            self.pool.append(self.filler())
        outs = self.pool[2:][-2:]
        ret = ", ".join([T] * len(outs))
        body = "".join(f"    {line}\n" for line in self.lines)
        return (
            "module {\n"
            f"  func.func public @main(%x: {T}, %y: {T}) -> ({ret}) {{\n{body}"
            f"    return {', '.join(outs)} : {ret}\n  }}\n" + "".join(f + "\n" for f in self.funcs) + "}\n"
        )


FAMILIES = ("arith", "divide", "shift", "bitwise", "bitcount", "convert", "unsigned", "compare", "select_minmax",
            "moved", "reduce", "sort", "loop", "call", "dot")
#: Programs drawn per family (fewer where each costs more: an emulated
#: dot_general compiles slowly), and how many each policy must accept with
#: no lossy verdict and compare.  (Strict refuses programs whose ordinary
#: values may reach a sentinel's 32-bit image before a compare, or whose
#: arithmetic may overflow; the default reports them.)
EXAMPLES = {"dot": 3}
DEFAULT_EXAMPLES = 6
ENOUGH = {"default": 1, "strict": 1, "exact": 3}


def run_property(family: str) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()

    @settings(max_examples=EXAMPLES.get(family, DEFAULT_EXAMPLES), deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(data=st.data(), xr=RANGES, yr=RANGES)
    def prop(data, xr, yr) -> None:
        builder = Builder(data.draw)
        text = builder.module(family)
        assert builder.wrapped >= 1
        counts["programs"] += 1
        ranges = {0: xr, 1: yr}
        for policy in POLICIES:
            m = ir.Module.parse(text, make_context())
            report = demoted_unless_refused(m, input_ranges=ranges, policy=policy)
            if report is None:
                counts[f"{policy} refused"] += 1
                continue
            if any(report.verdicts.get(v) for v in ("unproven", "overflow")):
                # the default policy reports what it cannot prove (strict and
                # exact refuse it): such a program may differ, as reported
                assert policy == "default", report.summary()
                counts[f"{policy} reported"] += 1
                continue
            counts[policy] += 1
            compare_on_adversarial_inputs(
                ir.Module.parse(text, make_context()), m, ranges,
                f"this program (x in {xr}, y in {yr}), converted under policy={policy!r}:\n{text}\n",
                limit=16,
            )

    prop()
    return counts


@pytest.mark.parametrize("family", FAMILIES)
def test_a_sentinel_into_any_op_keeps_the_64bit_result(family: str) -> None:
    counts = run_property(family)
    # the guard against vacuity: every program read a sentinel, and enough
    # were accepted and compared under each policy
    assert counts["programs"] == EXAMPLES.get(family, DEFAULT_EXAMPLES), counts
    for policy, enough in ENOUGH.items():
        assert counts[policy] >= enough, (policy, counts)


def test_every_op_family_of_the_registry_is_drawn() -> None:
    """The families cover the op table's kinds of ops that read integers."""
    from no64.rules import REGISTRY

    drawn = {
        "add", "subtract", "multiply", "negate", "abs", "sign", "divide", "remainder", "shift_left",
        "shift_right_arithmetic", "shift_right_logical", "and", "or", "xor", "not", "count_leading_zeros",
        "popcnt", "convert", "compare", "select", "maximum", "minimum", "clamp", "reverse", "concatenate",
        "slice", "pad", "transpose", "reshape", "broadcast_in_dim", "dynamic_slice", "reduce", "sort", "while",
        "dot_general",
    }
    assert all("stablehlo." + name in REGISTRY for name in drawn)
    source = open(__file__).read()
    for name in drawn:
        assert f"{name}" in source
