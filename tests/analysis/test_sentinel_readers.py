"""Every op that reads a 64-bit sentinel computes what the 64-bit program computes.

The pass narrows ``INT64_MAX``, ``INT64_MIN`` and ``UINT64_MAX`` to the
32-bit extremes.  Where an op moves, selects or orders a sentinel, the
32-bit extreme stands for it; where an op computes with it (a remainder, a
division, a shift, a bit count, a bitwise op, a convert to another type),
the 64-bit program computes with the sentinel itself, so the pass computes
that op on 32-bit words with the sentinel's 64-bit value -- under every
policy -- or judges the value unproven where it cannot.

Each program is run by the 64-bit program (x64 on, CPU, no no64) and by its
conversion under the default, strict and exact policies, on inputs at the
edges of their declared ranges, and the outputs must agree bit for bit.  (An
earlier pass accepted each of them under ``policy="strict"`` and computed
another number: ``INT64_MAX % 1000`` gave 647 instead of 807.)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from test_soundness_regressions import I32, parse

import no64
from no64.jax.reference import compare_outputs, lower_x64, narrow_inputs, run_module, word_pair_outputs
from no64.transforms.emulate import join_words
from runner import compile_module

I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
INT64_MAX, INT64_MIN, UINT64_MAX = int(I64.max), int(I64.min), int(U64.max)
POLICIES = ["default", "strict", "exact"]
N = 6

#: The mask and the values of ``x``: the ranges declared for ``x`` are
#: (-1000, 1000) -- the sentinel cannot be confused with them, so strict
#: accepts -- and the whole int32 range.
MASKS = [np.array([True, False, True, False, False, True]), np.zeros(N, bool), np.ones(N, bool)]
SMALL = [np.array([5, -7, 1000, -1000, 0, 999], np.int64), np.array([-1, 1, 3, 7, -999, 2], np.int64)]
FULL = SMALL + [np.array([I32.max, I32.min, I32.max - 1, I32.min + 1, -1, 0], np.int64)]


def uint(x: np.ndarray) -> np.ndarray:
    return np.abs(x).astype(np.uint64)


def run_both(m, xs: list[np.ndarray], policy: str, ranges: dict) -> no64.DemotionReport:
    """Convert ``m(x, mask)`` (which must be accepted) and compare it with the
    64-bit program on every ``x`` with every mask; returns the report."""
    original = parse(str(m))
    report = no64.demote(m, input_ranges=ranges, policy=policy)
    run_original = compile_module(original, strict=False)
    run_converted = compile_module(m, strict=True)  # (checks that no 64-bit type is left)
    wide = word_pair_outputs(original, m)
    for x in xs:
        for mask in MASKS:
            args = [x, mask]
            ref = run_original(args)
            got = run_converted(narrow_inputs(args))
            for j in wide:
                got[j] = join_words(got[j])
            compare_outputs(ref, got, what=f"converted program (policy {policy!r}) on {[a.tolist() for a in args]}",
                            wide=wide)
    return report


def masked(x, m, s):
    return jnp.where(m, x, s)


# Each case: fn(x, m) of int64 x (or uint64 where named), and a one-line description.
CASES = {
    "rem_1000": lambda x, m: masked(x, m, INT64_MAX) % 1000,
    "rem_7": lambda x, m: lax.rem(masked(x, m, INT64_MAX), jnp.int64(7)),
    "rem_min": lambda x, m: lax.rem(masked(x, m, INT64_MIN), jnp.int64(1000)),
    "urem_1000": lambda x, m: masked(jnp.abs(x).astype(jnp.uint64), m, np.uint64(U64.max)) % jnp.uint64(1000),
    "rem_divisor": lambda x, m: lax.rem(x, masked(x * 0 + 3, m, INT64_MAX)),
    "div_divisor": lambda x, m: lax.div(x, masked(x * 0 + 3, m, INT64_MAX)),
    "div_dividend": lambda x, m: lax.div(masked(x, m, INT64_MAX), jnp.int64(2**33)),
    "clz": lambda x, m: lax.clz(masked(x, m, INT64_MAX)),
    "popcnt": lambda x, m: lax.population_count(masked(x, m, INT64_MAX)),
    "upopcnt": lambda x, m: lax.population_count(masked(jnp.abs(x).astype(jnp.uint64), m, np.uint64(U64.max))),
    "shift_right_33": lambda x, m: masked(x, m, INT64_MAX) >> 33,
    "shift_right_logical": lambda x, m: lax.shift_right_logical(masked(x, m, INT64_MIN), jnp.int64(40)),
    "shift_left": lambda x, m: lax.shift_left(masked(x, m, INT64_MIN), jnp.int64(1)) + x,
    "to_float_compared": lambda x, m: masked(x, m, INT64_MAX).astype(jnp.float32) > 1e10,
    "to_float": lambda x, m: masked(x, m, INT64_MIN).astype(jnp.float32),
    "and": lambda x, m: masked(x, m, INT64_MAX) & 0xFFFF,
    "and_high": lambda x, m: (masked(x, m, INT64_MAX) & (1 << 40)) >> 40,
    "or": lambda x, m: (masked(x, m, INT64_MIN) | 1) >> 62,
    "xor": lambda x, m: masked(x, m, INT64_MAX) ^ x,
    "not": lambda x, m: ~masked(x, m, INT64_MIN),
    "to_int32": lambda x, m: masked(x, m, INT64_MAX).astype(jnp.int32),
    "to_int16": lambda x, m: masked(x, m, INT64_MAX).astype(jnp.int16),
    "to_uint64": lambda x, m: masked(x, m, INT64_MIN).astype(jnp.uint64) >> jnp.uint64(33),
    "abs": lambda x, m: jnp.abs(masked(x, m, INT64_MIN)) >> 40,
    "sign_of_sum": lambda x, m: jnp.sign(masked(x, m, INT64_MAX) + 1),
    "constant_minus": lambda x, m: (INT64_MAX - x) >> 40,
    "constant_halved": lambda x, m: x + jnp.int64(INT64_MIN) // 2 ** 40,
    "index": lambda x, m: jnp.arange(N, dtype=jnp.int64)[masked(x * 0 + 2, m, INT64_MAX)],
    "and_reduce": lambda x, m: lax.reduce(masked(x & 0xFF, m, INT64_MAX), jnp.int64(0xFFFF), lax.bitwise_and, (0,)),
    "sum": lambda x, m: jnp.sum(masked(x, m, INT64_MIN)) >> 32,
    "in_a_loop": lambda x, m: lax.fori_loop(0, 3, lambda i, c: c % 1000 + i, masked(x, m, INT64_MAX)),
}


#: A 64-bit to 32-bit convert of the same signedness is also how JAX writes a
#: 64-bit value entering a program traced with x64 off: there the sentinel
#: meets its own 32-bit image (see test_a_sentinel_narrowed_to_int32_meets_its_image).
MEETS_IMAGE = {"to_int32"}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", sorted(set(CASES) - MEETS_IMAGE))
def test_a_sentinel_read_as_a_number_is_its_64bit_value(case: str, policy: str) -> None:
    fn = CASES[case]
    m = lower_x64(fn, np.zeros(N, np.int64), np.ones(N, bool))
    report = run_both(m, SMALL, policy, {0: (-1000, 1000)})
    assert not report.verdicts.get("unproven") and not report.verdicts.get("overflow"), report.summary()


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", ["rem_1000", "clz", "to_float_compared", "shift_right_33"])
def test_over_the_whole_int32_range(case: str, policy: str) -> None:
    """With ``x`` reaching INT32_MAX the sentinel's 32-bit image would be an
    ordinary value too: the reader still computes on the 64-bit value."""
    m = lower_x64(CASES[case], np.zeros(N, np.int64), np.ones(N, bool))
    run_both(m, FULL, policy, {0: (int(I32.min), int(I32.max))})


@pytest.mark.parametrize("policy", POLICIES)
def test_a_sentinel_narrowed_to_int32_meets_its_image(policy: str) -> None:
    """``where(m, x, INT64_MAX).astype(int32)``: the 64-bit program gives -1
    for the sentinel; under ``exact`` the convert is computed on words and
    agrees with it bit for bit; under the other policies the sentinel meets
    its 32-bit image, ``unproven`` (reported under default, refused under
    strict), never an ``exact`` verdict."""
    m = lower_x64(CASES["to_int32"], np.zeros(N, np.int64), np.ones(N, bool))
    if policy == "exact":
        run_both(m, FULL, policy, {0: (int(I32.min), int(I32.max))})
    elif policy == "strict":
        before = str(m)
        with pytest.raises(no64.NarrowingError, match="may be a 64-bit sentinel"):
            no64.demote(m, input_ranges={0: (-1000, 1000)}, policy=policy)
        assert str(m) == before
    else:
        report = no64.demote(m, input_ranges={0: (-1000, 1000)}, policy=policy)
        assert report.verdicts.get("unproven"), report.summary()
        assert any("may be a 64-bit sentinel" in (n.detail or "") for n in report.narrowings), report.summary()


def test_issue_numbers() -> None:
    """The numbers an earlier pass got wrong, under strict."""
    x = np.array([5, 0], np.int64)
    mask = np.array([True, False])
    for fn, want in [
        (lambda x, m: masked(x, m, INT64_MAX) % 1000, [5, 807]),
        (lambda x, m: lax.clz(masked(x, m, INT64_MAX)), [61, 1]),
        (lambda x, m: lax.population_count(masked(x, m, INT64_MAX)), [2, 63]),
        (lambda x, m: masked(x, m, INT64_MAX) >> 33, [0, 1073741823]),
    ]:
        m = lower_x64(fn, x, mask)
        report = no64.demote(m, input_ranges={0: (-1000, 1000)}, policy="strict")
        got = run_module(m, [x.astype(np.int32), mask], strict=True)[0]
        if report.emulated_outputs:  # (a shift by 33 is computed on words, and returned so)
            got = join_words(got)
        assert got.tolist() == want


def test_the_reader_is_computed_on_words_and_reported() -> None:
    m = lower_x64(CASES["rem_1000"], np.zeros(N, np.int64), np.ones(N, bool))
    report = no64.demote(m, input_ranges={0: (-1000, 1000)}, policy="strict")
    assert report.emulated_by_op.get("stablehlo.remainder") == 1
    assert report.emulated_outputs == []  # the remainder fits: it leaves the words


# --------------------------------------------- compares: the same sentinel


def test_a_masked_minimum_compared_with_its_sentinel_stays_32bit() -> None:
    """Moving, selecting and ordering ops carry the sentinel, and a compare
    with the same sentinel keeps its outcome when no ordinary value can
    reach the 32-bit extreme: nothing is emulated."""

    def f(x, m):
        smallest = jnp.min(masked(x, m, INT64_MAX))
        return smallest == INT64_MAX, jnp.sort(masked(x, m, INT64_MIN)), jnp.maximum(masked(x, m, INT64_MAX), x)

    m = lower_x64(f, np.zeros(N, np.int64), np.ones(N, bool))
    for policy in ("default", "strict"):
        report = run_both(parse(str(m)), SMALL, policy, {0: (-1000, 1000)})
        assert report.values_emulated == 0 and report.verdicts.get("sentinel")


@pytest.mark.parametrize("policy", ["default", "strict"])
def test_a_compare_that_may_confuse_the_sentinel_is_unproven(policy: str) -> None:
    def f(x, m):
        return masked(x, m, INT64_MAX) == INT64_MAX

    m = lower_x64(f, np.zeros(N, np.int64), np.ones(N, bool))
    if policy == "strict":
        with pytest.raises(no64.NarrowingError, match=r"compares a 64-bit sentinel \(INT64_MAX\)"):
            no64.demote(m, input_ranges={0: (int(I32.min), int(I32.max))}, policy=policy)
        return
    report = no64.demote(m, input_ranges={0: (int(I32.min), int(I32.max))}, policy=policy)
    assert report.verdicts.get("unproven")
    assert any("compares a 64-bit sentinel" in e.detail for e in report.events)


def test_under_exact_a_confusable_compare_is_computed_on_words() -> None:
    def f(x, m):
        return masked(x, m, INT64_MAX) == INT64_MAX

    m = lower_x64(f, np.zeros(N, np.int64), np.ones(N, bool))
    run_both(m, FULL, "exact", {0: (int(I32.min), int(I32.max))})


# ----------------------------------------------- a reader with no word rule

POWER = """
func.func public @main(%x: tensor<4xi64>, %m: tensor<4xi1>) -> tensor<4xi64> {
  %s = stablehlo.constant dense<9223372036854775807> : tensor<4xi64>
  %v = stablehlo.select %m, %x, %s : tensor<4xi1>, tensor<4xi64>
  %two = stablehlo.constant dense<2> : tensor<4xi64>
  %p = stablehlo.power %v, %two : tensor<4xi64>
  return %p : tensor<4xi64>
}"""


def test_a_reader_with_no_word_rule_is_unproven_under_default(without_word_rule) -> None:
    without_word_rule("stablehlo.power")
    report = no64.demote(parse(POWER), input_ranges={0: (-1000, 1000)})
    assert report.verdicts.get("unproven")
    assert any("reads a value that may be a 64-bit sentinel (INT64_MAX) as a number" in e.detail
               for e in report.events)


def test_a_reader_with_no_word_rule_is_refused_under_strict_and_exact(without_word_rule) -> None:
    without_word_rule("stablehlo.power")
    m = parse(POWER)
    before = str(m)
    with pytest.raises(no64.NarrowingError, match="reads a value that may be a 64-bit sentinel"):
        no64.demote(m, input_ranges={0: (-1000, 1000)}, policy="strict")
    assert str(m) == before
    with pytest.raises(no64.UnsupportedOpError, match="stablehlo.power"):
        no64.demote(m, input_ranges={0: (-1000, 1000)}, policy="exact")
    assert str(m) == before


# ------------------------------------------------------------- the op table


def test_one_place_declares_what_carries_a_sentinel() -> None:
    """The op table's ``sentinels`` field: moving, selecting and ordering ops
    carry, compare compares, and every other op reads."""
    from no64.kinds import SentinelUse
    from no64.rules import REGISTRY
    from no64.spec.registry import UNKNOWN

    carries = {n for n, s in REGISTRY.items() if s.sentinels is SentinelUse.CARRIES or isinstance(s.sentinels, tuple)}
    for name in ("select", "maximum", "minimum", "clamp", "sort", "reduce", "while", "concatenate",
                 "optimization_barrier", "broadcast_in_dim", "gather", "dynamic_slice", "return", "transpose",
                 "slice", "reshape", "pad", "case", "if", "all_gather", "copy", "reduce_window", "scatter"):
        assert "stablehlo." + name in carries or callable(REGISTRY["stablehlo." + name].sentinels), name
    for name in ("chlo.top_k", "func.call", "func.return"):
        assert REGISTRY[name].sentinels is SentinelUse.CARRIES, name
    assert REGISTRY["stablehlo.compare"].sentinels is SentinelUse.COMPARES
    for name in ("add", "remainder", "divide", "shift_right_arithmetic", "and", "popcnt", "count_leading_zeros",
                 "abs", "power", "bitcast_convert", "dot_general"):
        assert REGISTRY["stablehlo." + name].sentinels is SentinelUse.READS, name
    assert UNKNOWN.sentinels is SentinelUse.READS
    # indices are read: a gather carries its operand, not its indices
    assert REGISTRY["stablehlo.gather"].sentinels == (SentinelUse.CARRIES,)


POWER_THEN_READER = """
func.func public @main(%x: tensor<4xi64>, %m: tensor<4xi1>) -> tensor<4xi64> {
  %two = stablehlo.constant dense<2> : tensor<4xi64>
  %p = stablehlo.power %x, %two : tensor<4xi64>
  %s = stablehlo.constant dense<9223372036854775807> : tensor<4xi64>
  %v = stablehlo.select %m, %p, %s : tensor<4xi1>, tensor<4xi64>
  %k = stablehlo.constant dense<1000> : tensor<4xi64>
  %r = stablehlo.remainder %v, %k : tensor<4xi64>
  return %r : tensor<4xi64>
}"""


def test_a_reader_of_an_unproven_value_with_no_word_rule_is_still_computed_on_words(without_word_rule) -> None:
    """``x ** 2`` may not fit and (its rule taken out) has no rule on words,
    so it stays a narrowed value (unproven, reported); the remainder still
    reads the sentinel's 64-bit value: 807 where the mask is off."""
    without_word_rule("stablehlo.power")
    m = parse(POWER_THEN_READER)
    report = no64.demote(m, input_ranges={0: (-(2**20), 2**20)})
    assert report.verdicts.get("unproven") and report.emulated_by_op.get("stablehlo.remainder") == 1
    x = np.array([3, 2**20, -5, 0], np.int64)
    got = run_module(m, [x.astype(np.int32), np.array([True, True, False, False])], strict=True)[0]
    assert got.tolist()[2:] == [807, 807] and got.tolist()[0] == 9
