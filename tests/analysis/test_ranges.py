"""The range analysis: a verdict for every narrowed integer, checked for soundness.

Soundness is what matters: whenever the analysis says every narrowed value
is exact, the 32-bit program must compute what the 64-bit program computes.
The property-based test draws random integer programs and input ranges and
checks exactly that against the 64-bit reference on the CPU backend; it is
derandomized, so a failure is a reproducible bug, never a flake.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import no64
from no64.analysis.ranges import RangeAnalysis, verdict
from no64.jax.reference import lower_x64, run_module
from support import ir, make_context

I32 = np.iinfo(np.int32)


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def lossy(report: no64.DemotionReport) -> dict[str, int]:
    return {k: n for k, n in report.verdicts.items() if k in ("unproven", "overflow")}


# ------------------------------------------------------------ unit checks


def test_intervals_of_basic_ops() -> None:
    m = parse(
        """
func.func public @main(%x: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>) {
  %i = stablehlo.iota dim = 0 : tensor<8xi64>
  %c = stablehlo.constant dense<1000> : tensor<8xi64>
  %m = stablehlo.multiply %i, %c : tensor<8xi64>
  %r = stablehlo.remainder %x, %c : tensor<8xi64>
  %a = stablehlo.and %x, %c : tensor<8xi64>
  %s = stablehlo.shift_right_arithmetic %x, %c : tensor<8xi64>
  return %m, %r, %a, %s : tensor<8xi64>, tensor<8xi64>, tensor<8xi64>, tensor<8xi64>
}"""
    )
    ra = RangeAnalysis(m.operation)
    ops = list(m.body.operations[0].regions[0].blocks[0].operations)
    iv = {op.operation.name: ra.interval(op.results[0]) for op in ops if len(op.results)}
    assert iv["stablehlo.iota"] == (0, 7)
    assert iv["stablehlo.multiply"] == (0, 7000)
    assert iv["stablehlo.remainder"] == (-999, 999)
    assert iv["stablehlo.and"] == (0, 1000)
    assert verdict(iv["stablehlo.remainder"], False) == "exact"
    assert verdict((0, 2**40), False) == "unproven"
    assert verdict((2**40, 2**41), False) == "overflow"
    assert verdict((0, 2**32 - 1), True) == "exact"


def test_loop_counter_is_exact_and_unbounded_loop_is_unproven() -> None:
    def f(n):
        counted = jax.lax.fori_loop(0, 1000, lambda i, acc: acc + i, jnp.int64(0))
        doubling = jax.lax.while_loop(lambda v: v < n, lambda v: v * 2 + 1, jnp.int64(1))
        return counted, doubling

    m = lower_x64(f, np.int64(50))
    report = no64.demote(m, input_ranges={0: (0, 1000)})
    events = [e for e in report.events if e.kind == "unproven"]
    # the fori_loop counter and its sum (<= 999 * 1000) are proven; the
    # doubling value is bounded by the condition, its next value is not
    assert report.verdicts.get("exact", 0) > 0
    assert all("fori_loop" not in str(e.location) for e in events), report.summary()
    assert any(e.op in ("stablehlo.multiply", "stablehlo.add", "stablehlo.while") for e in events)


def test_argmax_argsort_topk_indices_are_exact() -> None:
    def f(x):
        return jnp.argmax(x), jnp.argsort(x), jax.lax.top_k(x, 3)[1].astype(jnp.int64), jnp.argmin(x, axis=0)

    m = lower_x64(f, np.arange(10.0))
    report = no64.demote(m)
    assert lossy(report) == {}, report.summary()
    assert report.verdicts["exact"] > 0


def test_declared_input_ranges_prove_indexing_exact() -> None:
    vocab, d = 50, 8

    def embed(table, tokens):
        x = table[tokens]  # gather with int64 ids
        onehot = (tokens[:, None] == jnp.arange(vocab)[None, :]).astype(jnp.int64)
        return x, onehot.sum(axis=0), jnp.cumsum(tokens)

    table = np.ones((vocab, d))
    tokens = np.arange(16, dtype=np.int64) % vocab
    undeclared = no64.demote(lower_x64(embed, table, tokens))
    assert lossy(undeclared), "token ids of unknown range must not be proven"
    declared = no64.demote(lower_x64(embed, table, tokens), input_ranges={1: (0, vocab - 1)})
    assert lossy(declared) == {}, declared.summary()
    by_name = no64.demote(lower_x64(embed, table, tokens), input_ranges={"tokens": (0, vocab - 1)})
    assert lossy(by_name) == {}


def test_cumsum_of_a_large_array_is_bounded_by_its_length() -> None:
    def f(x):
        return jnp.cumsum(x), jnp.sum(x)

    small = no64.demote(lower_x64(f, np.zeros(1000, np.int64)), input_ranges={0: (0, 1000)})
    assert lossy(small) == {}, small.summary()
    big = no64.demote(lower_x64(f, np.zeros(1 << 16, np.int64)), input_ranges={0: (0, 1 << 20)})
    assert lossy(big), "2**16 elements of up to 2**20 can sum past 2**31"


def test_hashing_that_needs_64_bits_is_never_exact() -> None:
    def h(x):
        for _ in range(3):
            x = (x * 1000003) ^ (x >> 7)
        return x

    m = lower_x64(h, np.arange(4, dtype=np.int64))
    report = no64.demote(m, input_ranges={0: (0, 2**20)}, policy="permissive")
    assert lossy(report), report.summary()
    with pytest.raises(no64.NarrowingError) as exc:
        no64.demote(lower_x64(h, np.arange(4, dtype=np.int64)), input_ranges={0: (0, 2**20)}, policy="strict")
    # the first product, x * 1000003 in [0, 2**20 * 1000003], is the first refusal:
    # it may fit (x = 0) and may not, so it is unproven, not overflow
    err = exc.value
    assert err.op == "stablehlo.multiply" and err.verdict == "unproven", err
    assert err.interval[0] <= 0 and err.interval[1] >= 2**20 * 1000003, err
    assert "may not fit in 32 bits" in str(err)


def test_policies() -> None:
    src = """
func.func public @main(%x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %c = stablehlo.constant dense<1000000> : tensor<i64>
  %big = stablehlo.multiply %c, %c : tensor<i64> loc("jit(f)/mul"("p.py":3:1))
  %y = stablehlo.add %x, %c : tensor<i64> loc("jit(f)/add"("p.py":4:1))
  return %big, %y : tensor<i64>, tensor<i64>
}"""
    with pytest.raises(no64.NarrowingError, match=r"mul at p.py:3:1.*certain to leave.*overflow"):
        no64.demote(parse(src))  # default: proven overflow is refused
    report = no64.demote(parse(src), policy="permissive")
    assert report.verdicts["overflow"] == 1 and report.verdicts["unproven"] >= 1
    with pytest.raises(no64.NarrowingError, match="unproven"):
        no64.demote(parse(src), policy="strict", input_ranges={})
    m = parse(src.replace("%big = stablehlo.multiply %c, %c", "%big = stablehlo.add %c, %c"))
    report = no64.demote(m, policy="strict", input_ranges={0: (-5, 5)})
    assert lossy(report) == {}
    m = parse(src)
    before = str(m)
    with pytest.raises(no64.NarrowingError):
        no64.demote(m)
    assert str(m) == before  # refused before anything changed


def test_bad_input_ranges_are_clear_errors() -> None:
    m = parse("func.func public @main(%x: tensor<i64>, %f: tensor<f64>) -> tensor<i64> { return %x : tensor<i64> }")
    with pytest.raises(no64.InputRangeError, match="no argument named 'tokens'"):
        no64.demote(m, input_ranges={"tokens": (0, 1)})
    with pytest.raises(no64.InputRangeError, match="not an integer"):
        no64.demote(m, input_ranges={1: (0, 1)})
    with pytest.raises(no64.InputRangeError, match="does not exist"):
        no64.demote(m, input_ranges={5: (0, 1)})


def test_sentinels_keep_reductions_exact() -> None:
    def f(x, mask):
        masked = jnp.where(mask, x, jnp.iinfo(jnp.int64).max)
        return masked.min(), jnp.where(mask, x, jnp.iinfo(jnp.int64).min).max()

    m = lower_x64(f, np.arange(6, dtype=np.int64), np.arange(6) % 2 == 0)
    report = no64.demote(m, input_ranges={0: (-100, 100)})
    assert lossy(report) == {}, report.summary()
    assert report.verdicts["sentinel"] >= 2


# ------------------------------------------------------- property: soundness

UNARY = ["neg", "abs", "not", "shl3", "sra2", "srl1", "i32roundtrip"]
BINARY = ["add", "sub", "mul", "max", "min", "and", "or", "xor", "div", "rem"]


def build(expr, x, y):
    kind = expr[0]
    if kind == "x":
        return x
    if kind == "y":
        return y
    if kind == "c":
        return jnp.int64(expr[1])
    if kind == "iota":
        return jnp.arange(x.shape[0], dtype=jnp.int64) * expr[1]
    if kind == "where":
        a, b, c = (build(e, x, y) for e in expr[1:])
        return jnp.where(a > b, b, c)
    if kind == "clip":
        return jnp.clip(build(expr[1], x, y), -expr[2], expr[2])
    if kind in UNARY:
        a = build(expr[1], x, y)
        return {
            "neg": lambda: -a,
            "abs": lambda: jnp.abs(a),
            "not": lambda: ~a,
            "shl3": lambda: jax.lax.shift_left(a, jnp.int64(3)),
            "sra2": lambda: jax.lax.shift_right_arithmetic(a, jnp.int64(2)),
            "srl1": lambda: jax.lax.shift_right_logical(a, jnp.int64(1)),
            "i32roundtrip": lambda: a.astype(jnp.int32).astype(jnp.int64),
        }[kind]()
    a, b = build(expr[1], x, y), build(expr[2], x, y)
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "max": lambda: jnp.maximum(a, b),
        "min": lambda: jnp.minimum(a, b),
        "and": lambda: a & b,
        "or": lambda: a | b,
        "xor": lambda: a ^ b,
        "div": lambda: jax.lax.div(a, b),
        "rem": lambda: jax.lax.rem(a, b),
    }[kind]()


leaf = st.one_of(
    st.just(("x",)),
    st.just(("y",)),
    st.tuples(st.just("c"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("iota"), st.integers(0, 2**20)),
)
exprs = st.recursive(
    leaf,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(UNARY), sub),
        st.tuples(st.sampled_from(BINARY), sub, sub),
        st.tuples(st.just("where"), sub, sub, sub),
        st.tuples(st.just("clip"), sub, st.integers(0, 2**31 - 1)),
    ),
    max_leaves=6,
)
bounds = st.one_of(
    st.tuples(st.integers(-1000, 1000), st.integers(0, 1000)),
    st.tuples(st.integers(-(2**31), 2**31 - 2**16), st.integers(0, 2**16)),
    st.tuples(st.integers(-(2**40), 2**40), st.integers(0, 2**34)),
).map(lambda t: (t[0], t[0] + t[1]))
CHECKED: list[int] = []


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(expr=exprs, xr=bounds, yr=bounds, seed=st.integers(0, 2**32 - 1))
def test_exact_verdicts_are_sound(expr, xr, yr, seed) -> None:
    n = 12

    def f(x, y):
        return build(expr, x, y)

    rng = np.random.default_rng(seed)

    def draw(lo, hi):
        v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
        v[0], v[-1] = lo, hi  # the endpoints, where overflow hides
        return v

    x, y = draw(*xr), draw(*yr)
    m = lower_x64(f, x, y)
    ref = run_module(m, [x, y], strict=False)
    report = no64.demote(m, policy="permissive", integer_policy="wrap", input_ranges={0: xr, 1: yr})
    if lossy(report) or report.count("wrapped"):
        return  # not claimed exact: nothing to check
    assert no64.find_64bit(m) == []
    fits = all(I32.min <= v.min() and v.max() <= I32.max for v in (x, y))
    assert fits, "an exact verdict implies the declared inputs fit in int32"
    got = run_module(m, [x.astype(np.int32), y.astype(np.int32)])
    CHECKED.append(1)
    np.testing.assert_array_equal(ref[0], got[0].astype(np.int64), err_msg=f"{expr} with x in {xr}, y in {yr}")


def test_the_property_checked_enough_programs() -> None:
    """Guard against a generator that only yields programs the analysis
    cannot prove (which would make the soundness property vacuous)."""
    if not CHECKED:
        test_exact_verdicts_are_sound()
    assert len(CHECKED) >= 15, f"only {len(CHECKED)} programs were proven exact and compared"
