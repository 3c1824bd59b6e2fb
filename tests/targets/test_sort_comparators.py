"""no64.rules.unfold.sort through no64.transforms.legalize: Neuron's sort takes only
comparators of LT, LE, GT and GE comparisons, and JAX's comparators test equality (a
float sort canonicalises -0.0 and NaN with EQ and NE, a sort on several keys ties on
EQ, and so do no64's sorts of 64-bit words).  Each EQ becomes LE and GE, each NE
not (LE and GE), of the same compare type -- checked against the x64 program on the
CPU (sorted values and permutations bit for bit: stable ties, NaN, -0.0, full-range
int64 keys) and against the target check, which must find no sort left to refuse;
and, comparison by comparison, against the comparator as it was on every pair of
special values."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import converted_inputs, join_words, lower_x64, run_module
from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import ir, make_context

NEURON = target("neuron")
RNG = np.random.default_rng(11)
I64 = np.iinfo(np.int64)


def refused_sorts(m: ir.Module) -> list[Any]:
    return [f for f in check_target(m, NEURON, types=False) if f.op == "stablehlo.sort"]


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal element for element; floats compared as float64 values, NaN with NaN and
    each zero with its sign."""
    assert got.shape == want.shape
    if np.issubdtype(want.dtype, np.floating):
        g, w = got.astype(np.float64), want.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        ok = ~np.isnan(w)
        np.testing.assert_array_equal(g[ok], w[ok])
        np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]))
    else:
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64))


def on_neuron(f: Callable[..., Any], *args: np.ndarray, policy: str = "default") -> None:
    """``f``'s x64 program converted for Neuron and legalized, with no sort left that
    Neuron refuses, run on the CPU against the x64 program, bit for bit."""
    original = lower_x64(f, *args)
    want = run_module(original, list(args), strict=False)
    m = ir.Module.parse(str(original), make_context())
    report = no64.demote(m, target=NEURON, policy=policy)
    before = ir.Module.parse(str(m), make_context())
    assert refused_sorts(before), "not vacuous: a comparator tests equality"
    done = legalize(m, NEURON)
    m.operation.verify()
    assert any("comparator as LE and GE" in r.detail for r in done.rewritten)
    assert refused_sorts(m) == [] and not done.left
    assert check_target(m, NEURON) == [], [str(x) for x in check_target(m, NEURON)]
    ins = converted_inputs(list(args), report.emulated_inputs, report.kept_native)
    got = run_module(m, ins)
    was = run_module(before, ins)
    for j in report.emulated_outputs:
        got[j], was[j] = join_words(got[j]), join_words(was[j])
    for g, w, o in zip(got, was, want, strict=True):
        same_bits(g, o)
        same_bits(g, w)


#: Float keys where a sort decides by its canonicalisation: NaN of either sign,
#: signed zeros, infinities, ties, all exact in f32.
SPECIALS = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -1.5, 1.5, -np.nan, 0.0, -0.0, 2.0, -0.0,
                     np.nan, 3.0, -np.inf, 1.5, 0.0])


def _floats(shape: Sequence[int]) -> np.ndarray:
    n = int(np.prod(shape))
    return np.concatenate([SPECIALS, RNG.choice(SPECIALS, max(n - SPECIALS.size, 0))])[:n].reshape(shape)


FLOAT_SORTS = [
    pytest.param(lambda x: jnp.sort(x), id="sort"),
    pytest.param(lambda x: jnp.argsort(x, stable=True), id="argsort-stable"),
    pytest.param(lambda x: jnp.argsort(x, stable=True, descending=True), id="argsort-descending"),
    pytest.param(lambda x: (jnp.sort(x, axis=0), jnp.argsort(x, axis=0)), id="axis-0"),
    pytest.param(lambda x: lax.sort((x, lax.broadcasted_iota(jnp.int32, x.shape, 1)), num_keys=1),
                 id="sort-with-payload"),
]


@pytest.mark.parametrize("f", FLOAT_SORTS)
def test_float_sorts(f: Callable[..., Any]) -> None:
    """NaN (either sign) last, -0.0 and 0.0 equal and kept in their order, ties stable."""
    on_neuron(f, _floats((3, 18)))


def test_a_sort_on_two_keys() -> None:
    """Ties on the first key (float, then int64) broken by the second, then by position."""
    x = _floats((24,))
    k = RNG.integers(-3, 3, 24).astype(np.int64)
    on_neuron(lambda x, k: lax.sort((x, k, jnp.arange(24)), num_keys=2), x, k)
    on_neuron(lambda x, k: lax.sort((k, x, jnp.arange(24)), num_keys=2), x, k)


def _int64s(n: int) -> np.ndarray:
    picks = np.array([I64.min, I64.max, -1, 0, 2**32, 2**32 - 1, -(2**32), 2**31, -(2**31) - 1, 5, 5, I64.min],
                     np.int64)
    return np.concatenate([picks, RNG.integers(I64.min, I64.max, n - picks.size, dtype=np.int64)])


@pytest.mark.parametrize("f", [pytest.param(lambda k: jnp.sort(k), id="sort"),
                               pytest.param(lambda k: jnp.argsort(k, stable=True), id="argsort"),
                               pytest.param(lambda k: jnp.argsort(-k, descending=True), id="descending")])
def test_full_range_int64_keys_as_words(f: Callable[..., Any]) -> None:
    """Full-range int64 keys emulated as 32-bit words (policy exact): the words'
    comparator ties on the high word with EQ, rewritten; bit for bit with the x64 program."""
    on_neuron(f, _int64s(40), policy="exact")


# ------------------------------------------------- comparison by comparison
_PAIR_SORT = """
func.func public @main(%x: tensor<{n}x2x{t}>, %i: tensor<{n}x2xi32>) -> (tensor<{n}x2x{t}>, tensor<{n}x2xi32>) {{
  %r:2 = "stablehlo.sort"(%x, %i) <{{dimension = 1 : i64, is_stable = true}}> ({{
  ^bb0(%a: tensor<{t}>, %b: tensor<{t}>, %c: tensor<i32>, %d: tensor<i32>):
    %e = stablehlo.compare {d}, %a, %b, {k} : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
    stablehlo.return %e : tensor<i1>
  }}) : (tensor<{n}x2x{t}>, tensor<{n}x2xi32>) -> (tensor<{n}x2x{t}>, tensor<{n}x2xi32>)
  return %r#0, %r#1 : tensor<{n}x2x{t}>, tensor<{n}x2xi32>
}}
"""

_VALUES = {
    "f32": np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 1e-45, -1e-45], np.float32),
    "i32": np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0, 1, 7], np.int32),
    "ui32": np.array([0, 1, 2**31, 2**32 - 1, 7], np.uint32),
}


@pytest.mark.parametrize("d", ["EQ", "NE"])
@pytest.mark.parametrize("t, k", [("f32", "FLOAT"), ("f32", "TOTALORDER"), ("i32", "SIGNED"), ("ui32", "UNSIGNED")])
def test_each_comparison_keeps_its_truth_value(d: str, t: str, k: str) -> None:
    """A two-element sort swaps exactly where its comparator holds of (second, first):
    over every pair of special values, the rewritten comparator swaps where the
    original does -- NaN unequal to itself (FLOAT) and equal to itself (TOTALORDER),
    -0.0 equal to 0.0 (FLOAT) and not (TOTALORDER)."""
    v = _VALUES[t]
    x = np.stack(np.meshgrid(v, v, indexing="ij"), axis=-1).reshape(-1, 2)
    idx = np.tile(np.array([0, 1], np.int32), (x.shape[0], 1))
    text = _PAIR_SORT.format(n=x.shape[0], t=t, d=d, k=k)
    m = ir.Module.parse(text, make_context())
    u = ir.Module.parse(text, make_context())
    assert refused_sorts(u)
    done = legalize(u, NEURON)
    assert [r.detail for r in done.rewritten] == ["1 EQ/NE comparison of its comparator as LE and GE"]
    assert refused_sorts(u) == [] and "compare EQ" not in str(u) and "compare NE" not in str(u)
    want = compile_module(m, strict=True)([x, idx])
    got = compile_module(u, strict=True)([x, idx])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0].view(np.uint32), want[0].view(np.uint32))
    swapped = want[1][:, 0] == 1
    assert swapped.any() and not swapped.all(), "not vacuous: the comparator decides"
    if t == "f32":
        both_nan = np.isnan(x[:, 0]) & np.isnan(x[:, 1])
        zeros = (x[:, 0] == 0) & (x[:, 1] == 0) & (np.signbit(x[:, 0]) != np.signbit(x[:, 1]))
        zeros_equal = k == "FLOAT"  # -0.0 == 0.0 compared as floats, not in the total order
        assert (swapped[zeros] == (zeros_equal == (d == "EQ"))).all()
        if k == "FLOAT":  # NaN equals nothing, not even itself
            assert (swapped[both_nan] == (d == "NE")).all()


def test_a_sort_with_only_ordered_comparisons_is_left_alone() -> None:
    """lax.sort of int32 keys compares LT only: nothing to refuse, nothing changes."""
    text = lower_x64(lambda k: lax.sort(k), np.arange(5, dtype=np.int32)).operation.get_asm()
    m = ir.Module.parse(text, make_context())
    assert refused_sorts(m) == [] and not legalize(m, NEURON).rewritten and str(m) == str(
        ir.Module.parse(text, make_context()))
