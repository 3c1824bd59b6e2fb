"""Regression tests for known defects of the range analysis and the pass.

Each test states what a correct no64 does, for a program on which an
earlier pass silently computed a wrong number (the number is in the test's
docstring or name) or was needlessly conservative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import compare_outputs, lower_x64, narrow_inputs, run_module, word_pair_outputs
from no64.rules import REGISTRY, register
from no64.transforms.emulate import join_words
from runner import demoted_unless_refused
from support import ir, make_context

I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)
INT32_RANGE = (int(I32.min), int(I32.max))
def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def refused_or_exact(m: ir.Module, inputs: list[list[np.ndarray]], **demote_kwargs) -> None:
    """``demote`` refuses ``m`` (leaving it unchanged), or the converted
    program equals the 64-bit one on every input set."""
    original = parse(str(m))
    if demoted_unless_refused(m, **demote_kwargs) is None:
        return
    wide = word_pair_outputs(original, m)  # emulated outputs come back as word pairs
    for args in inputs:
        ref = run_module(original, args, strict=False)
        got = run_module(m, narrow_inputs(args), strict=True)
        for j in wide:
            got[j] = join_words(got[j])
        compare_outputs(ref, got, what=f"converted program on {[a.tolist() for a in args]}", wide=wide)


def lossy(report: no64.DemotionReport) -> dict[str, int]:
    return {k: n for k, n in report.verdicts.items() if k in ("unproven", "overflow")}


# ----------------------------------------------- multi-result ops: barrier

BARRIER_PRODUCT = """
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %i, %x : tensor<4xi64>, tensor<4xi64>
  %k = stablehlo.constant dense<100000> : tensor<4xi64>
  %z = stablehlo.multiply %b#1, %k : tensor<4xi64>
  return %z : tensor<4xi64>
}"""


def test_barrier_second_result_is_not_its_first_operand() -> None:
    m = parse(BARRIER_PRODUCT)
    before = str(m)
    with pytest.raises(no64.NarrowingError, match="may not fit in 32 bits"):
        no64.demote(m, input_ranges={0: (0, 100000)}, policy="strict")
    assert str(m) == before


def test_the_same_product_without_a_barrier_is_refused() -> None:
    """The control: without the barrier the analysis sees x * 100000."""
    src = BARRIER_PRODUCT.replace("%b#1", "%x")
    with pytest.raises(no64.NarrowingError, match="may not fit in 32 bits"):
        no64.demote(parse(src), input_ranges={0: (0, 100000)}, policy="strict")


SHIFT_THROUGH_BARRIER = """
func.func public @main(%x: tensor<i64>, %n: tensor<i64>) -> tensor<i64> {
  %c = stablehlo.constant dense<3> : tensor<i64>
  %b:2 = stablehlo.optimization_barrier %c, %n : tensor<i64>, tensor<i64>
  %z = stablehlo.SHIFT %x, %b#1 : tensor<i64>
  return %z : tensor<i64>
}"""


@pytest.mark.parametrize("policy", ["default", "strict"])
def test_shift_amount_through_a_barrier_is_refused(policy: str) -> None:
    m = parse(SHIFT_THROUGH_BARRIER.replace("SHIFT", "shift_left"))
    refused_or_exact(
        m,
        [[np.array(-1), np.array(n)] for n in (0, 3, 31, 32, 33)],
        input_ranges={0: (-1, -1), 1: (0, 33)},
        policy=policy,
    )


SHIFT_INPUTS = [[np.array(x), np.array(n)] for x in (-1, 5, I32.max, I32.min) for n in (0, 3, 31, 32, 33, 63, 64)]


def test_logical_shift_amount_through_a_barrier_is_not_a_constant() -> None:
    """A non-constant amount that may reach 32 has no 32-bit form: the shift
    is emulated in 32-bit words, exactly, whatever the policy."""
    m = parse(SHIFT_THROUGH_BARRIER.replace("SHIFT", "shift_right_logical"))
    original = parse(str(m))
    report = no64.demote(m, input_ranges={0: (-1, -1), 1: (0, 33)})
    assert report.emulated_by_op.get("stablehlo.shift_right_logical") == 1
    assert no64.find_64bit(m) == []
    refused_or_exact(original, SHIFT_INPUTS)


def test_a_shift_by_an_input_is_emulated() -> None:
    """The control: the amount %n itself, not a constant, is emulated too."""
    src = SHIFT_THROUGH_BARRIER.replace("SHIFT", "shift_left").replace("%b#1", "%n")
    m = parse(src)
    report = no64.demote(m, input_ranges={0: (-1, -1), 1: (0, 64)}, policy="strict")
    assert report.emulated_by_op.get("stablehlo.shift_left") == 1 and report.verdicts["emulated"] >= 1
    refused_or_exact(parse(src), SHIFT_INPUTS)


# ------------------------------------------- sentinels at the 32-bit extreme


def test_compare_with_a_sentinel_at_the_int32_extreme() -> None:
    def f(x):
        return x < jnp.iinfo(jnp.int64).max, x > jnp.iinfo(jnp.int64).min

    m = lower_x64(f, np.zeros(4, np.int64))
    x = np.array([I32.max, I32.min, 0, -1], np.int64)
    refused_or_exact(m, [[x]], input_ranges={0: INT32_RANGE}, policy="strict")


def test_masked_minimum_equal_to_int32_max_is_not_the_sentinel() -> None:
    def f(x, mask):
        big = jnp.iinfo(jnp.int64).max
        return jnp.where(mask, x, big).min() == big

    m = lower_x64(f, np.zeros(4, np.int64), np.ones(4, bool))
    x = np.full(4, I32.max, np.int64)
    masks = [np.array([True, False, False, False]), np.zeros(4, bool), np.ones(4, bool)]
    refused_or_exact(m, [[x, k] for k in masks], input_ranges={0: INT32_RANGE}, policy="strict")


def test_sentinels_away_from_the_extremes_stay_exact() -> None:
    """The control: with x inside the int32 range's interior the same
    programs convert and agree with the 64-bit reference."""

    def f(x, mask):
        big = jnp.iinfo(jnp.int64).max
        return x < big, jnp.where(mask, x, big).min() == big

    m = lower_x64(f, np.zeros(4, np.int64), np.ones(4, bool))
    original = parse(str(m))
    report = no64.demote(m, input_ranges={0: (-1000, 1000)}, policy="strict")
    assert report.verdicts.get("sentinel", 0) > 0
    x = np.array([1000, -1000, 0, -1], np.int64)
    for mask in (np.zeros(4, bool), np.ones(4, bool), np.array([True, False] * 2)):
        ref = run_module(original, [x, mask], strict=False)
        got = run_module(m, [x.astype(np.int32), mask])
        compare_outputs(ref, got)


# --------------------------------------------------- input-free arithmetic


def test_input_free_overflow_is_refused_by_default() -> None:
    m = lower_x64(lambda: jnp.arange(4, dtype=jnp.int64) * 2**30)
    before = str(m)
    with pytest.raises(no64.NarrowingError):
        no64.demote(m)
    assert str(m) == before


# ----------------------------------------------- precision (not too strict)


def test_counted_loop_adding_a_bounded_input_is_exact() -> None:
    def f(x):
        return jax.lax.fori_loop(0, 100, lambda i, acc: acc + x, jnp.int64(0))

    m = lower_x64(f, np.int64(0))
    original = parse(str(m))
    report = no64.demote(m, input_ranges={0: (0, 1000)}, policy="strict")
    assert lossy(report) == {}
    for x in (0, 1, 999, 1000):
        ref = run_module(original, [np.array(x, np.int64)], strict=False)
        got = run_module(m, [np.array(x, np.int32)])
        compare_outputs(ref, got)
        assert int(got[0]) == 100 * x


def variadic_sum_and_max(x):
    return jax.lax.reduce(
        (x, x),
        (jnp.int64(0), jnp.int64(-1)),
        lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
        (0,),
    )


def argmax_pair(x, where=jax.lax.select):
    idx = jnp.arange(x.shape[0], dtype=jnp.int64)

    def body(a, b):
        take = b[0] > a[0]
        return where(take, b[0], a[0]), where(take, b[1], a[1])

    return jax.lax.reduce((x, idx), (jnp.int64(-1), jnp.int64(0)), body, (0,))


def argmax_pair_jnp_where(x):
    # jnp.where in the body lowers to a func.call of a private @_where
    return argmax_pair(x, where=jnp.where)


@pytest.mark.parametrize(
    "fn",
    [
        variadic_sum_and_max,
        argmax_pair,
        argmax_pair_jnp_where,
    ],
)
def test_variadic_reduce_of_bounded_values_is_exact(fn) -> None:
    m = lower_x64(fn, np.zeros(8, np.int64))
    original = parse(str(m))
    report = no64.demote(m, input_ranges={0: (0, 1000)}, policy="strict")
    assert lossy(report) == {}, report.summary()
    for x in (np.arange(8) * 100, np.full(8, 1000), np.zeros(8), np.array([0, 1000] * 4)):
        x = x.astype(np.int64)
        ref = run_module(original, [x], strict=False)
        got = run_module(m, [x.astype(np.int32)])
        compare_outputs(ref, got)


# ------------------------------------------- clamp with a computed bound


def test_clamp_with_a_computed_upper_bound() -> None:
    def f(x, y):
        return jax.lax.clamp(jnp.int64(0), x, y) * 200_000_000

    m = lower_x64(f, np.int64(0), np.int64(0))
    inputs = [[np.array(10), np.array(y)] for y in (-100, -1, 0, 5, 100)]
    refused_or_exact(m, inputs, input_ranges={0: (10, 10), 1: (-100, 100)}, policy="strict")


# --------------------------------------------------- rules are reachable


@pytest.fixture
def spy_rules():
    """Register a spy rule for some ops; the registry is restored afterwards."""
    saved = dict(REGISTRY)
    calls: list[str] = []

    def install(*names: str) -> list[str]:
        @register(*names)
        def spy(op, ctx) -> bool:
            calls.append(op.name)
            return False  # not its business: the pass goes on as usual

        return calls

    yield install
    REGISTRY.clear()
    REGISTRY.update(saved)


@pytest.mark.parametrize("op", ["stablehlo.xor", "stablehlo.convert"])
def test_a_registered_rule_is_called(spy_rules, op: str) -> None:
    calls = spy_rules(op)

    def f(x, y):
        return (x ^ y.astype(jnp.int64)) + 1

    m = lower_x64(f, np.int64(0), np.int32(0))
    assert op in str(m)
    no64.demote(m, input_ranges={0: (0, 10)})
    assert calls.count(op) > 0


def test_a_registered_rule_for_a_sensitive_op_is_called(spy_rules) -> None:
    """The control: a rule for an op the pass inspects is called."""
    calls = spy_rules("stablehlo.and")
    m = lower_x64(lambda x: x & 7, np.int64(0))
    no64.demote(m, input_ranges={0: (0, 10)})
    assert calls == ["stablehlo.and"]


# ----------------------------------------------- arithmetic on a sentinel


def test_arithmetic_on_a_sentinel_is_not_exact() -> None:
    def f(x, y):
        return jnp.where(y < x, y, jnp.iinfo(jnp.int64).min) + x

    m = lower_x64(f, np.zeros(4, np.int64), np.zeros(4, np.int64))
    x = np.array([1, 0, 100000, 5], np.int64)
    y = np.array([7, 0, 0, 7], np.int64)
    refused_or_exact(m, [[x, y]], input_ranges={0: (0, 100000), 1: (0, 7)}, policy="strict")


# ---------------------------------------------- min/max next to a sentinel

MAX_WITH_SENTINEL = """
func.func public @main(%m: tensor<4xi1>, %x: tensor<4xi64>, %y: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %min = stablehlo.constant dense<-9223372036854775808> : tensor<4xi64>
  %a = stablehlo.select %m, %x, %min : tensor<4xi1>, tensor<4xi64>
  %r = stablehlo.maximum %a, %y : tensor<4xi64>
  %c = stablehlo.maximum %min, %x : tensor<4xi64>
  return %r, %c : tensor<4xi64>, tensor<4xi64>
}
"""


def test_max_of_a_masked_value_holds_the_other_operand_below_it() -> None:
    """``max(where(m, x, INT64_MIN), y)`` is ``y`` where the mask is off, also
    when ``y`` lies below every ``x``: an earlier analysis bounded it by the
    lowest ``x`` (0 here) while it can be -10.  ``max(INT64_MIN, x)`` is
    ``x`` and holds no sentinel."""
    from no64.analysis.ranges import RangeAnalysis

    m = parse(MAX_WITH_SENTINEL)
    declared = {1: (0, 5), 2: (-10, -5)}
    with m.context:
        analysis = RangeAnalysis(m.operation, declared)
        ret = list(m.body.operations[0].regions[0].blocks[0].operations)[-1]
        r, c = (analysis.range(v) for v in ret.operands)
    mask = np.array([True, False, True, False])
    x = np.array([0, 5, 3, 1], np.int64)
    y = np.array([-10, -5, -7, -10], np.int64)
    got_r, got_c = run_module(m, [mask, x, y], strict=False)
    for values, rng_ in ((got_r, r), (got_c, c)):
        for v in values.tolist():
            assert rng_.lo <= v <= rng_.hi or v in rng_.sentinels, (v, rng_)
    assert (c.lo, c.hi, c.sentinels) == (0, 5, frozenset())
