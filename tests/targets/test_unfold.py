"""no64.rules.unfold through no64.transforms.legalize: a reduce of several inputs (JAX's
argmax/argmin, no64's pair sums) and a reduce_window of more than two operands (no64's
cumulative pair sums, a pooling of (value, index)), which Neuron refuses, rewritten into
their bodies on whole tensors -- checked against the module as it was (bit for bit where
the order of combination cannot matter) and, on pairs, against the x64 program within the
pairs' bounds; and against the target check, which must find no such op left."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import enable_x64, ir, make_context

NEURON = target("neuron")
RNG = np.random.default_rng(7)
REFUSED = ("stablehlo.reduce", "stablehlo.reduce_window")


def lowered(f: Callable[..., Any], *args: Any, x64: bool = False) -> ir.Module:
    if x64:
        with enable_x64(True):
            text = jax.jit(f).lower(*args).as_text()
    else:
        text = jax.jit(f).lower(*args).as_text()
    return ir.Module.parse(text, make_context())


def refused(m: ir.Module) -> list[Any]:
    return [f for f in check_target(m, NEURON) if f.kind == "refused" and f.op in REFUSED]


def ops_named(m: ir.Module, name: str) -> int:
    count = 0

    def walk(op: Any) -> None:
        nonlocal count
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    count += inner.name == name
                    walk(inner)

    walk(m.operation)
    return count


def unfolded(m: ir.Module) -> ir.Module:
    """A legalized copy of ``m``, with nothing of REFUSED left."""
    copy = ir.Module.parse(str(m), make_context())
    assert refused(copy), "not vacuous: the module holds an op Neuron refuses"
    done = legalize(copy, NEURON)
    assert not done.left, [str(x) for x in done.left]
    assert not refused(copy), [str(f) for f in refused(copy)]
    return copy


def same_bits(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(np.asarray(x).reshape(-1).view(np.uint8),
                                      np.asarray(y).reshape(-1).view(np.uint8))


def specials(shape: tuple[int, ...]) -> list[np.ndarray]:
    """Float inputs where argmax/argmin decide by ties, NaN, infinities and signed zeros."""
    n = int(np.prod(shape))
    picks = [np.zeros(n), np.full(n, -np.inf), np.full(n, np.nan),
             np.resize([1.0, 3.0, 3.0, -2.0, 3.0], n), np.resize([-0.0, 0.0], n),
             np.resize([np.inf, 1.0, np.inf, np.nan, 2.0], n), np.resize([5.0, -np.inf, -np.inf], n),
             RNG.standard_normal(n), np.round(RNG.standard_normal(n))]
    return [p.reshape(shape).astype(np.float32) for p in picks]


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((1,), 0), ((8,), 0), ((5, 7), 0), ((5, 7), 1),
                                        ((3, 4, 6), 2), ((3, 5), None)])
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_argmax_and_argmin_unfold_bit_for_bit(shape: tuple[int, ...], axis: int | None, which: str) -> None:
    """JAX's argmax/argmin (a reduce of value and index) as halvings: every index the
    original module gives, on ties (the first), NaN (the first), infinities, signed zeros."""
    fn = getattr(jnp, which)
    m = lowered(lambda x: fn(x, axis=axis), np.zeros(shape, np.float32))
    u = unfolded(m)
    assert ops_named(u, "stablehlo.reduce") == 0
    run_m, run_u = compile_module(m, strict=False), compile_module(u, strict=False)
    for x in specials(shape):
        same_bits(run_u([x]), run_m([x]))


def test_a_variadic_reduce_in_a_loop_body() -> None:
    """An argmax inside a fori_loop's body is unfolded there too."""
    def f(x: jax.Array) -> jax.Array:
        return lax.fori_loop(0, 3, lambda i, c: c + jnp.argmax(x * (i + 1), axis=1).astype(jnp.int32),
                             jnp.zeros(4, jnp.int32))

    m = lowered(f, np.zeros((4, 9), np.float32))
    u = unfolded(m)
    for x in specials((4, 9)):
        same_bits(compile_module(u, strict=False)([x]), compile_module(m, strict=False)([x]))


def _pairs(f: Callable[..., Any], *args: np.ndarray) -> tuple[ir.Module, Any]:
    m = lowered(f, *args, x64=True)
    report = no64.demote(m, float_policy="pairs", check=True)
    return m, report


def _run_pairs(m: ir.Module, report: Any, *args: np.ndarray) -> list[np.ndarray]:
    ins = [no64.split_pairs(a) if i in report.pair_inputs else a for i, a in enumerate(args)]
    outs = compile_module(m, strict=True)(ins)
    return [no64.join_pairs(o) if i in report.pair_outputs else o for i, o in enumerate(outs)]


def _cancelling(shape: tuple[int, ...]) -> np.ndarray:
    """Values near 1e8 with small parts, half of them negated: f32 loses the small parts."""
    x = 1e8 + RNG.integers(0, 1000, shape) / 1024.0
    return np.where(RNG.random(shape) < 0.5, -x, x)


@pytest.mark.parametrize("shape,axis", [((13,), None), ((6, 7), 0), ((6, 7), 1), ((5, 3, 4), (0, 2)),
                                        ((1, 9), None)])
def test_pair_sums_unfold_within_the_pairs_bound(shape: tuple[int, ...], axis: Any) -> None:
    """A float64 sum on pairs (a reduce of hi and lo), unfolded, is within the pairs'
    bound of the x64 program's sum (f32 is not: not vacuous)."""
    x = _cancelling(shape)
    m, report = _pairs(lambda x: jnp.sum(x, axis=axis), x)
    u = unfolded(m)
    with enable_x64(True):
        ref = np.asarray(jax.jit(lambda x: jnp.sum(x, axis=axis))(x))
    scale = np.sum(np.abs(x), axis=axis)
    got = _run_pairs(u, report, x)[0]
    assert np.all(np.abs(got - ref) <= 2.0**-44 * scale), np.max(np.abs(got - ref) / scale)
    f32 = np.sum(x.astype(np.float32), axis=axis, dtype=np.float32)
    assert np.any(np.abs(f32 - ref) > 2.0**-44 * scale)


@pytest.mark.parametrize("shape,axis", [((16,), 0), ((11,), 0), ((3, 10), 1), ((10, 3), 0)])
def test_cumulative_pair_sums_unfold(shape: tuple[int, ...], axis: int) -> None:
    """A cumulative float64 sum on pairs (JAX's doubling scan, each step a reduce_window
    of hi and lo over two positions), unfolded into shifted slices: equal, bit for bit,
    to the module as it was (each step combines the same two elements) and within the
    pairs' bound of the x64 program."""
    x = _cancelling(shape)
    m, report = _pairs(lambda x: jnp.cumsum(x, axis=axis), x)
    u = unfolded(m)
    assert ops_named(u, "stablehlo.reduce_window") == 0
    got, was = _run_pairs(u, report, x)[0], _run_pairs(m, report, x)[0]
    np.testing.assert_array_equal(got, was)
    with enable_x64(True):
        ref = np.asarray(jax.jit(lambda x: jnp.cumsum(x, axis=axis))(x))
    scale = np.cumsum(np.abs(x), axis=axis)
    assert np.all(np.abs(got - ref) <= 2.0**-44 * scale)


def _pool(x: jax.Array, window: tuple[int, int], strides: tuple[int, int],
          padding: Sequence[tuple[int, int]]) -> tuple[jax.Array, jax.Array]:
    """Max pooling that also returns where the maximum is: a reduce_window of
    (value, index), four operands."""
    idx = lax.broadcasted_iota(jnp.int32, x.shape, 0) * x.shape[1] + lax.broadcasted_iota(jnp.int32, x.shape, 1)

    def body(a: tuple[jax.Array, jax.Array], b: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return jnp.where(take_a, a[0], b[0]), jnp.where(take_a, a[1], b[1])

    return lax.reduce_window((x, idx), (jnp.float32(-jnp.inf), jnp.int32(2**31 - 1)), body, window, strides, padding)


@pytest.mark.parametrize("window,strides,padding", [((3, 3), (1, 1), ((1, 1), (1, 1))),
                                                     ((2, 3), (2, 2), ((0, 1), (2, 0))),
                                                     ((1, 4), (1, 3), ((0, 0), (0, 0)))])
def test_a_pooling_of_value_and_index_unfolds_bit_for_bit(window: tuple[int, int], strides: tuple[int, int],
                                                          padding: Sequence[tuple[int, int]]) -> None:
    """A reduce_window of four operands with strides and padding: the body over the
    window's strided slices gives every value and index the original gives."""
    x = np.round(RNG.standard_normal((7, 9)), 1).astype(np.float32)
    m = lowered(lambda x: _pool(x, window, strides, padding), x)
    u = unfolded(m)
    same_bits(compile_module(u, strict=False)([x]), compile_module(m, strict=False)([x]))


def test_what_cannot_unfold_is_left_with_why() -> None:
    """A window of more than 64 positions is left as it is, and the target check still
    reports it, with no64's reason beside the vendor's."""
    x = np.zeros((12, 12), np.float32)
    m = lowered(lambda x: _pool(x, (9, 9), (1, 1), ((0, 0), (0, 0))), x)
    done = legalize(m, NEURON)
    assert [x.detail for x in done.left] == ["its window has 81 positions (more than 64)"]
    assert refused(m)
    assert "no64 cannot make it exact: its window has 81 positions" in done.explain(refused(m)[0])


def test_one_input_reductions_are_left_alone() -> None:
    """A plain sum (one input) is no variadic reduce: the target compiles it; nothing changes."""
    m = lowered(lambda x: jnp.sum(x, axis=0), np.zeros((4, 5), np.float32))
    before = str(m)
    assert not legalize(m, NEURON).rewritten and str(m) == before


@pytest.mark.parametrize("dtype", [np.int64, np.int8])
def test_an_arithmetic_shift_not_of_32_bits_unfolds_bit_for_bit(dtype: type) -> None:
    """Neuron refuses an arithmetic right shift of other than 32-bit values (EVRF022),
    which a device keeping int64 meets in every ``x >> k``: as a logical shift of the
    value flipped by its sign it gives the same bits for every value and every amount,
    past the width and negative ones included.  (int16 is carried as int32 on Neuron,
    its shifts with it: ``test_widen16.py``.)"""
    info = np.iinfo(dtype)
    bits = info.bits
    values = np.array([info.min, info.min + 1, -(2 ** (bits - 2)) - 3, -2, -1, 0, 1, 5, 2 ** (bits - 2) + 3,
                       info.max - 1, info.max], dtype)
    amounts = np.arange(-2, bits + 3).astype(dtype)
    x, k = (a.ravel() for a in np.meshgrid(values, amounts))
    m = lowered(lambda x, k: lax.shift_right_arithmetic(x, k), x, k, x64=dtype == np.int64)
    neuron_trn2 = target("neuron-trn2")
    for profile in (NEURON, neuron_trn2):
        copy = ir.Module.parse(str(m), make_context())
        assert [f.op for f in check_target(copy, profile, types=False)] == ["stablehlo.shift_right_arithmetic"]
        done = legalize(copy, profile)
        assert [r.op for r in done.rewritten] == ["stablehlo.shift_right_arithmetic"] and not done.left
        assert check_target(copy, profile, types=False) == []
        assert ops_named(copy, "stablehlo.shift_right_arithmetic") == 0
        keep = frozenset({"i64"}) if dtype == np.int64 else frozenset()
        same_bits(compile_module(copy, strict=False, keep=keep)([x, k]),
                  compile_module(m, strict=False, keep=keep)([x, k]))
    with enable_x64(True):                            # and what JAX computes
        want = np.asarray(jax.jit(lax.shift_right_arithmetic)(x, k))
    same_bits(compile_module(copy, strict=False)([x, k]), [want])


def test_an_arithmetic_shift_of_32_bits_is_left_as_it_is() -> None:
    x = np.array([-5, 7], np.int32)
    m = lowered(lambda x: x >> 1, x)
    assert not legalize(m, NEURON).rewritten and ops_named(m, "stablehlo.shift_right_arithmetic") == 1
