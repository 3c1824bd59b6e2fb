"""no64.rules.limbs.combining through no64.transforms.legalize: an integer scatter that
adds (EVRF060) and the collectives all_reduce / reduce_scatter (EVRF061, EVRF063), which
Neuron computes in f32, split into one op per limb whose every partial sum is exact in
f32 -- checked against the reference (the module as it was, on the CPU, which adds in
integers) on a simulation of the device (neuron_datapath: every such integer op computed
in f32), where the op as it was is wrong; and against the target check, which must find
nothing left."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from neuron_datapath import on_datapath

from no64.cli import main
from no64.jax.reference import run_module
from no64.rules.limbs import OrderSplit, order_split, sum_split
from no64.spec.intervals import INT32, INT64
from no64.targets import F32_EXACT, Target, target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import ir, make_context

RNG = np.random.default_rng(60)
NEURON, TRN2 = target("neuron"), target("neuron-trn2")
FORMS = [pytest.param(NEURON, False, id="neuron-i32"), pytest.param(NEURON, True, id="neuron-f32")]


def lowered(f: Callable[..., Any], *args: Any, **jit: Any) -> ir.Module:
    return ir.Module.parse(jax.jit(f, **jit).lower(*args).as_text(debug_info=True), make_context())


def copy(m: ir.Module) -> ir.Module:
    return ir.Module.parse(m.operation.get_asm(enable_debug_info=True), make_context())


def extremes(shape: Sequence[int], dtype: Any) -> list[np.ndarray]:
    """Every element the type's minimum, its maximum, -1, the extremes alternating,
    odd values just past 2**24 (f32 cannot hold them), and random over the type."""
    info = np.iinfo(dtype)
    n = int(np.prod(shape))
    past = min(int(info.max), 2**24 + 1)
    picks = [np.full(n, info.min), np.full(n, info.max), np.full(n, -1),
             np.resize(np.array([info.min, info.max], dtype), n),
             np.resize([past, -past if info.min < 0 else past + 2], n),
             RNG.integers(int(info.min), int(info.max), n, dtype=np.uint64 if dtype == np.uint64 else np.int64,
                          endpoint=True)]
    return [(p if p.dtype == dtype else p.astype(np.int64).astype(dtype)).reshape(shape) for p in picks]


def legalized(m: ir.Module, t: Target, in_f32: bool, rewritten: int) -> ir.Module:
    out = copy(m)
    done = legalize(out, t, in_f32=in_f32)
    out.operation.verify()
    assert len(done.rewritten) == rewritten and not done.left, (done.rewritten, done.left)
    assert check_target(out, t, types=False) == [], [str(f) for f in check_target(out, t, types=False)]
    return out


# ------------------------------------------------------------- the simulation
def test_the_simulation_is_the_f32_datapath() -> None:
    """A simulated integer scatter-add is numpy's f32 accumulation, update by update,
    bit for bit -- and not the integer sum (values past 2**24)."""
    x = RNG.integers(-(2**26), 2**26, 8).astype(np.int32)
    idx = RNG.integers(0, 8, 20).astype(np.int32)
    upd = RNG.integers(-(2**26), 2**26, 20).astype(np.int32)
    m = lowered(lambda x, i, u: x.at[i].add(u), x, idx, upd)
    sim, n = on_datapath(m, NEURON)
    assert n == 1
    acc = x.astype(np.float32)
    for i, u in zip(idx, upd):
        acc[i] = np.float32(acc[i] + np.float32(u))
    got = compile_module(sim, strict=False)([x, idx, upd])[0]
    np.testing.assert_array_equal(got, acc.astype(np.int64).astype(np.int32))
    exact = x.astype(np.int64)
    np.add.at(exact, idx, upd)
    assert (got != exact).any()


def test_a_scatter_that_stores_is_not_on_the_datapath() -> None:
    """`.at[].set` computes nothing: neither the check nor the simulation touch it."""
    x, idx = np.zeros(8, np.int32), np.zeros(5, np.int32)
    m = lowered(lambda x, i, u: x.at[i].set(u), x, idx, idx)
    assert check_target(m, NEURON) == [] and on_datapath(m, NEURON)[1] == 0


# ------------------------------------------------------------- scatter
def _segment_sum(x: jax.Array, seg: jax.Array, u: jax.Array) -> jax.Array:
    return x + jax.ops.segment_sum(u, seg, num_segments=x.shape[0])


SCATTERS = [
    pytest.param(lambda x, i, u: x.at[i].add(u), (8,), (20,), id="at-add"),
    pytest.param(lambda x, i, u: x.at[i].add(u), (6, 3), (9, 3), id="rows"),
    pytest.param(lambda x, i, u: x.at[i, 1].add(u[:, 0]), (6, 3), (9, 2), id="column"),
    pytest.param(_segment_sum, (5,), (40,), id="segment-sum"),
]


def _scatter_exact_on_the_datapath(f: Callable[..., Any], xshape: tuple[int, ...], ushape: tuple[int, ...],
                                   dtype: Any, t: Target, in_f32: bool,
                                   inputs: Callable[[tuple[int, ...], Any], Any], simulated: int | None) -> None:
    """Scatter ``f`` (duplicate and negative indices) is reported inexact on
    ``t``; legalized, it gives on the simulated device what the original
    gives on the CPU, bit for bit, on every pair of ``inputs`` (``simulated``
    of its scatters on the f32 datapath, where given); the original on the
    simulated device gets some wrong."""
    idx = np.resize(np.array([3, -1, 0, 3, 2, 3, -2, 0, 1], np.int32), ushape[0])
    m = lowered(f, np.zeros(xshape, dtype), idx, np.zeros(ushape, dtype))
    assert any(x.kind == "inexact" for x in check_target(m, t)), "not vacuous: the check reports the scatter"
    out = legalized(m, t, in_f32, 1)
    run_ref, run_raw = compile_module(m, strict=False), compile_module(on_datapath(m, t)[0], strict=False)
    sim, on_f32 = on_datapath(out, t)
    assert simulated is None or on_f32 == simulated
    run_out = compile_module(sim, strict=False)
    wrong = 0
    for xs, us in zip(inputs(xshape, dtype), inputs(ushape, dtype)):
        want = run_ref([xs, idx, us])[0]
        np.testing.assert_array_equal(run_out([xs, idx, us])[0], want)
        wrong += not np.array_equal(run_raw([xs, idx, us])[0], want)
    assert wrong


@pytest.mark.parametrize("t, in_f32", FORMS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16])
@pytest.mark.parametrize("f, xshape, ushape", SCATTERS)
def test_scatter_add_is_exact_on_the_datapath(f: Callable[..., Any], xshape: tuple[int, ...],
                                              ushape: tuple[int, ...], dtype: Any, t: Target,
                                              in_f32: bool) -> None:
    """A full-range integer scatter-add (duplicate and negative indices), legalized, gives
    on the simulated device what the original gives on the CPU, bit for bit, with its
    wrap-around; the original on the simulated device does not.  (int16: 600 updates,
    enough for a sum past 2**24.)"""
    if dtype == np.int16:
        ushape = (600, *ushape[1:])
    _scatter_exact_on_the_datapath(f, xshape, ushape, dtype, t, in_f32, extremes, 0 if in_f32 else 2)


def test_trn2_splits_a_scatter_too() -> None:
    """Trn2 computes a combining scatter in f32 as Trn1 does (its int64 is native, its
    scatter's datapath is not)."""
    x, idx = np.zeros(8, np.int32), np.resize(np.array([3, -1, 0, 3], np.int32), 20)
    m = lowered(lambda x, i, u: x.at[i].add(u), x, idx, np.zeros(20, np.int32))
    out = legalized(m, TRN2, False, 1)
    run_ref, run_out = compile_module(m, strict=False), compile_module(on_datapath(out, TRN2)[0], strict=False)
    for xs, us in zip(extremes((8,), np.int32), extremes((20,), np.int32)):
        np.testing.assert_array_equal(run_out([xs, idx, us])[0], run_ref([xs, idx, us])[0])


def test_what_f32_holds_is_left_alone() -> None:
    """Counts (`.at[seg].add(1)`, bincount) are proven below 2**24: nothing changes."""
    seg = np.zeros(50, np.int32)
    m = lowered(lambda s: (jnp.zeros(5, jnp.int32).at[s].add(1), jnp.bincount(s, length=5)), seg)
    before = str(m)
    assert check_target(m, NEURON, types=False) == []
    assert not legalize(m, NEURON).rewritten and str(m) == before


def test_a_scatter_that_multiplies_is_left_and_reported_at_its_line() -> None:
    """A scatter whose body multiplies has no split (neither a sum nor an order of
    values): left as it is, reported with the vendor's code and why."""
    x, idx = np.zeros(8, np.int32), np.zeros(5, np.int32)
    m = lowered(lambda x, i, u: x.at[i].mul(u), x, idx, idx)
    done = legalize(m, NEURON)
    why = "its body neither adds nor takes the maximum or minimum: limbs split only those"
    assert not done.rewritten and [x.detail for x in done.left] == [why]
    (finding,) = check_target(m, NEURON)
    assert finding.kind == "inexact" and finding.code == "EVRF060"
    assert "test_combining.py" in str(finding.location)
    assert done.explain(finding).endswith("no64 cannot make it exact: " + why)


# ------------------------------------------------------------- maximum and minimum
def _ordered(shape: Sequence[int], dtype: Any) -> list[np.ndarray]:
    """:func:`extremes`, and values that share their high part and differ in their low
    bits (2**24 + k), or differ by one high step with a larger low part in the smaller
    (k * 128 + 127 against (k + 1) * 128): the low parts must be compared only where
    the high parts are equal."""
    n = int(np.prod(shape))
    base = 2**24 if np.iinfo(dtype).max > 2**24 else 0
    if np.iinfo(dtype).bits == 64:  # ties in the top part and in the next, 2**40 and 2**20 apart
        base = 2**53 + 2**41 + 2**21
    ties = (base + RNG.permutation(n) % 100).astype(np.int64)
    steps = np.resize([5 * 128 + 127, 6 * 128, 2**30 + 127, 2**30 + 128], n).astype(np.int64)
    if np.iinfo(dtype).bits == 64:
        steps = steps + np.resize([0, 0, 2**40 - 1, 2**40], n)
    if np.iinfo(dtype).min < 0:
        steps = np.resize(steps, n) * np.resize([1, 1, -1, -1, 1], n)
    return [*extremes(shape, dtype), *(p.astype(dtype).reshape(shape) for p in (ties, steps))]


def _scatter_max(x: jax.Array, i: jax.Array, u: jax.Array) -> jax.Array:
    return x.at[i].max(u)


def _scatter_min(x: jax.Array, i: jax.Array, u: jax.Array) -> jax.Array:
    return x.at[i].min(u)


def _segment_max(x: jax.Array, seg: jax.Array, u: jax.Array) -> jax.Array:
    return jnp.maximum(x, jax.ops.segment_max(u, seg, num_segments=x.shape[0]))


ORDERS = [
    pytest.param(_scatter_max, (8,), (20,), id="at-max"),
    pytest.param(_scatter_min, (8,), (20,), id="at-min"),
    pytest.param(lambda x, i, u: x.at[i].min(u), (6, 3), (9, 3), id="rows-min"),
    pytest.param(lambda x, i, u: x.at[i, 1].max(u[:, 0]), (6, 3), (9, 2), id="column-max"),
    pytest.param(_segment_max, (5,), (40,), id="segment-max"),
]


def test_the_simulation_takes_the_maximum_in_f32() -> None:
    """A simulated integer scatter-max is numpy's f32 maximum, update by update, bit for
    bit -- and not the integer maximum (values past 2**24 that f32 rounds together)."""
    x = np.full(4, 2**24 + 1, np.int32)
    idx = np.array([0, 0, 1, 2, 2], np.int32)
    upd = np.array([2**24 + 3, 2**24 + 2, 2**24, 2**24 + 2, 7], np.int32)
    m = lowered(_scatter_max, x, idx, upd)
    sim, n = on_datapath(m, NEURON)
    assert n == 1
    acc = x.astype(np.float32)
    for i, u in zip(idx, upd):
        acc[i] = np.maximum(acc[i], np.float32(u))
    got = compile_module(sim, strict=False)([x, idx, upd])[0]
    np.testing.assert_array_equal(got, acc.astype(np.int64).astype(np.int32))
    exact = x.copy()
    np.maximum.at(exact, idx, upd)
    assert (got != exact).any()


@pytest.mark.parametrize("t, in_f32", FORMS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("f, xshape, ushape", ORDERS)
def test_scatter_max_and_min_are_exact_on_the_datapath(f: Callable[..., Any], xshape: tuple[int, ...],
                                                       ushape: tuple[int, ...], dtype: Any, t: Target,
                                                       in_f32: bool) -> None:
    """A full-range integer scatter-max or -min (duplicate and negative indices),
    legalized, gives on the simulated device what the original gives on the CPU, bit for
    bit; the original on the simulated device does not."""
    _scatter_exact_on_the_datapath(f, xshape, ushape, dtype, t, in_f32, _ordered, 0 if in_f32 else 2)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("f, xshape, ushape", ORDERS[:3])
def test_trn2_takes_a_64_bit_maximum_in_three_parts(f: Callable[..., Any], xshape: tuple[int, ...],
                                                    ushape: tuple[int, ...], dtype: Any) -> None:
    """Trn2 keeps int64 and computes a combining scatter in f32: a full-range 64-bit
    scatter-max or -min becomes three (a 24-bit top part, two 20-bit low parts), exact
    bit for bit where the original is not."""
    _scatter_exact_on_the_datapath(f, xshape, ushape, dtype, TRN2, False, _ordered, 3)


def test_a_scatter_max_of_small_values_is_left_alone() -> None:
    """A maximum sums nothing: a scatter-max of int16 values, however many, is exact in
    f32 and left as it is."""
    x, idx = np.zeros(8, np.int16), np.zeros(600, np.int32)
    m = lowered(_scatter_max, x, idx, np.zeros(600, np.int16))
    assert check_target(m, NEURON, types=False) == []
    assert not legalize(m, NEURON).rewritten


def test_order_splits() -> None:
    """The fewest parts, then the narrowest low parts, whose top part and low parts (and
    the mask's sentinel 2**width) f32 holds."""
    assert order_split(INT32, 32, F32_EXACT) == OrderSplit(32, 1, 7)     # top: -2**24 .. 2**24 - 1
    assert order_split((0, 2**31 - 1), 32, F32_EXACT) == OrderSplit(32, 1, 7)
    assert order_split((0, 2**25), 32, F32_EXACT) == OrderSplit(32, 1, 1)
    assert order_split(INT64, 64, F32_EXACT) == OrderSplit(64, 2, 20)    # top: 2**63 >> 40 = 2**23
    assert order_split(INT32, 32, 2**6) == OrderSplit(32, 5, 5)          # 2**31 >> 25 = 2**6
    assert order_split(INT32, 32, 1) is None                             # no sentinel 2**w within 1
    for bound in (2**6, 2**10, F32_EXACT):
        for bits, interval in ((32, INT32), (64, INT64)):
            s = order_split(interval, bits, bound)
            assert s is not None and 2**s.width <= bound
            assert max(abs(interval[0] >> s.offsets()[0]), interval[1] >> s.offsets()[0]) <= bound


def test_sum_splits() -> None:
    """The fewest limbs whose sums of N stay within the bound; none past 2**24 terms."""
    full = (-(2**31), 2**31 - 1)
    assert sum_split(21, full, F32_EXACT).widths == (16, 16)         # 21 * 65535 < 2**24
    assert sum_split(256, full, F32_EXACT).widths == (16, 16)
    assert sum_split(257, full, F32_EXACT).widths == (11, 11, 10)    # 257 * 65535 > 2**24
    assert sum_split(2, (0, 2**20), F32_EXACT).widths == (21,)       # one limb: itself
    assert sum_split(F32_EXACT, (0, 1), F32_EXACT).widths == (1,)
    assert sum_split(F32_EXACT + 1, (0, 1), F32_EXACT) is None
    for n in (1, 3, 100, 4097, 70000):
        s = sum_split(n, full, F32_EXACT)
        assert s is not None and all(n * limb.magnitude <= F32_EXACT for limb in s.limbs)


def test_convert_with_a_target_splits_a_scatter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`no64 convert --target neuron` writes the limb scatters; `no64 check --target neuron`
    accepts what it wrote."""
    x, idx = np.zeros(8, np.int32), np.zeros(20, np.int32)
    src, out = tmp_path / "scatter.mlir", tmp_path / "out.mlir"
    src.write_text(str(lowered(lambda x, i, u: x.at[i].add(u), x, idx, idx)))
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron"]) == 0
    printed = capsys.readouterr()
    assert "2 limb sums of 16,16-bit limbs over 21 terms in i32" in printed.out and printed.err == ""
    assert main(["check", str(out), "--target", "neuron"]) == 0


# ------------------------------------------------------------- collectives
def _mesh() -> Mesh:
    return Mesh(np.array(jax.devices("cpu")[:8]), ("d",))


def _collectives(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    def local(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return lax.psum(x, "d"), lax.psum_scatter(x, "d", scatter_dimension=0, tiled=True)

    return jax.shard_map(local, mesh=_mesh(), in_specs=P("d"), out_specs=(P(), P("d")), check_vma=False)(a)


@pytest.mark.parametrize("in_f32", [False, True])
def test_all_reduce_and_reduce_scatter_are_exact(cpu_devices: Any, in_f32: bool) -> None:
    """psum and psum_scatter of full-range int32 over 8 devices: on the simulated device
    (each replica's value rounded to f32 and summed in f32) wrong as they are, and what
    the CPU gives, bit for bit, once split into limbs."""
    a = np.zeros((64,), np.int32)
    m = lowered(_collectives, a, in_shardings=NamedSharding(_mesh(), P("d")))
    found = [f for f in check_target(m, NEURON) if f.kind == "inexact"]
    assert {f.op for f in found} == {"stablehlo.all_reduce", "stablehlo.reduce_scatter"}
    assert {f.code for f in found} == {"EVRF061/EVRF063"}
    out = legalized(m, NEURON, in_f32, 2)
    _collectives_exact_on_the_datapath(m, out, NEURON, extremes(a.shape, np.int32), 0 if in_f32 else 4)


def _collectives_exact_on_the_datapath(m: ir.Module, out: ir.Module, t: Target, inputs: Sequence[np.ndarray],
                                       simulated: int) -> None:
    """``out``, ``m`` legalized for ``t`` (``simulated`` of its collectives on the
    f32 datapath), gives on the simulated device what ``m`` gives on the CPU, bit
    for bit, on each of ``inputs``; ``m`` on the simulated device gets some wrong."""
    raw, _ = on_datapath(m, t)
    sim, on_f32 = on_datapath(out, t)
    assert on_f32 == simulated
    wrong = 0
    for xs in inputs:
        want = run_module(m, [xs], strict=False)
        got = run_module(sim, [xs], strict=False)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
        wrong += any(not np.array_equal(r, w) for r, w in zip(run_module(raw, [xs], strict=False), want))
    assert wrong


def _channels(m: ir.Module) -> list[tuple[str, int, int]]:
    """(op, handle, type) of every op of ``m`` with a channel handle."""
    out = []
    for line in m.operation.get_asm().splitlines():
        found = re.search(r"(stablehlo\.\w+).*channel_handle = #stablehlo.channel_handle<handle = (\d+), "
                          r"type = (\d+)>", line)
        if found:
            out.append((found.group(1).removeprefix('"'), int(found.group(2)), int(found.group(3))))
    return out


def test_split_collectives_take_fresh_channels(cpu_devices: Any) -> None:
    """Each limb collective but the first (which keeps the op's handle) communicates on a
    channel no op of the module held, of the op's type (JAX gives the module's collectives
    the same handle: the split adds no more sharing)."""
    a = np.zeros((64,), np.int32)
    m = lowered(_collectives, a, in_shardings=NamedSharding(_mesh(), P("d")))
    before = _channels(m)
    assert len(before) == 2, before  # not vacuous: JAX gives each collective a channel
    out = legalized(m, NEURON, False, 2)
    after = _channels(out)
    assert len(after) == 4, after  # two limbs each
    handles = [h for _, h, _ in after]
    old = {h for _, h, _ in before}
    fresh = [h for h in handles if h not in old]
    assert len(fresh) == 2 and len(set(fresh)) == 2, after  # one new channel per added limb op
    # the first limb op of each collective keeps its handle
    assert all(handles.count(h) == [x for _, x, _ in before].count(h) for h in old), after
    assert {t for _, _, t in after} == {t for _, _, t in before}


def test_a_collective_of_small_values_is_left_alone(cpu_devices: Any) -> None:
    """A psum of int8 values over 8 devices is proven exact: nothing changes."""
    def small(x: jax.Array) -> jax.Array:
        return jax.shard_map(lambda y: lax.psum(y.astype(jnp.int32), "d"), mesh=_mesh(), in_specs=P("d"),
                             out_specs=P(), check_vma=False)(x)

    m = lowered(small, np.zeros(16, np.int8), in_shardings=NamedSharding(_mesh(), P("d")))
    assert check_target(m, NEURON) == []
    assert not legalize(m, NEURON).rewritten


def _extrema(a: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    def local(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        return (lax.pmax(x, "d"), lax.pmin(x, "d"),
                lax.psum_scatter(x, "d", scatter_dimension=0, tiled=True))

    return jax.shard_map(local, mesh=_mesh(), in_specs=P("d"), out_specs=(P(), P(), P("d")),
                         check_vma=False)(a)


def _with_max_scatter(m: ir.Module) -> ir.Module:
    """``m`` with its reduce_scatter's body taking the maximum instead of adding (JAX
    writes no other reduce_scatter than psum_scatter's)."""
    text = m.operation.get_asm(enable_debug_info=True)
    start = text.index('"stablehlo.reduce_scatter"')
    body = text.index("stablehlo.add", start)
    return ir.Module.parse(text[:body] + "stablehlo.maximum" + text[body + len("stablehlo.add"):], make_context())


@pytest.mark.parametrize("t, dtype, parts", [(NEURON, np.int32, 2), (NEURON, np.uint32, 2), (TRN2, np.int64, 3),
                                              (TRN2, np.uint64, 3)])
@pytest.mark.parametrize("in_f32", [False, True])
def test_pmax_pmin_and_a_max_reduce_scatter_are_exact(cpu_devices: Any, in_f32: bool, t: Target, dtype: Any,
                                                      parts: int) -> None:
    """pmax, pmin (all_reduce) and a reduce_scatter taking the maximum, of full-range
    32-bit integers over 8 devices (64-bit ones on Trn2, which keeps them): on the
    simulated device (each replica's value rounded to f32) wrong as they are, and what
    the CPU gives, bit for bit, once split into parts (each low part masked to the
    replicas whose parts above are the ones taken)."""
    a = np.zeros((64,), dtype)
    m = _with_max_scatter(lowered(_extrema, a, in_shardings=NamedSharding(_mesh(), P("d"))))
    found = [f for f in check_target(m, t) if f.kind == "inexact"]
    assert sorted(f.op for f in found) == ["stablehlo.all_reduce", "stablehlo.all_reduce", "stablehlo.reduce_scatter"]
    out = legalized(m, t, in_f32, 3)
    old = {h for _, h, _ in _channels(m)}
    fresh = [h for _, h, _ in _channels(out) if h not in old]
    ops = 2 * parts + 2 * parts - 1  # a reduce_scatter also takes each part but the last whole
    assert len(fresh) == len(set(fresh)) == ops - 3, _channels(out)  # each added collective on a channel of its own
    _collectives_exact_on_the_datapath(m, out, t, _ordered(a.shape, dtype), 0 if in_f32 else ops)


# ------------------------------------------------------------- 64-bit elements
MTL = target("mtl")
WIDE_SCATTERS = [
    pytest.param(lambda x, i, u: x.at[i].add(u), (8,), (20,), id="at-add"),
    pytest.param(_segment_sum, (5,), (40,), id="segment-sum"),
    pytest.param(lambda x, i, u: x.at[i].add(u), (6, 3), (9, 3), id="rows"),
    pytest.param(_scatter_max, (8,), (20,), id="at-max"),
    pytest.param(lambda x, i, u: x.at[i].min(u), (6, 3), (9, 3), id="rows-min"),
]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("f, xshape, ushape", WIDE_SCATTERS)
def test_mtl_combines_64_bit_elements_with_32_bit_scatters(f: Callable[..., Any], xshape: tuple[int, ...],
                                                            ushape: tuple[int, ...], dtype: Any) -> None:
    """Metal has 32-bit atomics only and refuses a scatter that combines 64-bit elements:
    a full-range int64 / uint64 scatter-add becomes scatters of limbs whose sums over the
    updates stay within 2**31 - 1, recombined in native int64 (modulo 2**64); a
    scatter-max or -min, scatters of parts compared from the top down -- bit for bit the
    x64 program, with duplicate and negative indices; nothing left that Metal refuses."""
    idx = np.resize(np.array([3, -1, 0, 3, 2, 3, -2, 0, 1], np.int32), ushape[0])
    m = lowered(f, np.zeros(xshape, dtype), idx, np.zeros(ushape, dtype))
    assert [(x.kind, x.op) for x in check_target(m, MTL)] == [("refused", "stablehlo.scatter")]
    out = legalized(m, MTL, False, 1)
    scatters: list[str] = []

    def visit(op: Any) -> Any:
        if op.name == "stablehlo.scatter":
            scatters.append(str(ir.RankedTensorType(op.results[0].type).element_type))
        return ir.WalkResult.ADVANCE

    out.operation.walk(visit)
    assert len(scatters) == 3 and set(scatters) == {"i32"}, scatters
    run_ref, run_out = compile_module(m, strict=False), compile_module(out, strict=False)
    for xs, us in zip(_ordered(xshape, dtype), _ordered(ushape, dtype)):
        np.testing.assert_array_equal(run_out([xs, idx, us])[0], run_ref([xs, idx, us])[0])


def test_mtl_keeps_a_scatter_with_unique_indices() -> None:
    """A scatter whose indices are declared unique needs no atomics: not refused, left."""
    x = np.zeros(8, np.int64)
    m = lowered(lambda x, i, u: x.at[i].add(u, unique_indices=True), x, np.arange(4, dtype=np.int32),
                np.zeros(4, np.int64))
    assert check_target(m, MTL) == [] and not legalize(m, MTL).rewritten


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_trn2_splits_a_64_bit_scatter_add(dtype: Any) -> None:
    """Trn2 keeps int64 and computes a combining scatter in f32: a full-range int64
    scatter-add becomes limb scatters whose sums stay within 2**24 (no 64-bit arithmetic
    shift, which Trn2 refuses), exact on the simulated device where the original is not."""
    _scatter_exact_on_the_datapath(lambda x, i, u: x.at[i].add(u), (8,), (20,), dtype, TRN2, False, _ordered, None)


def test_mtl_splits_narrow_64_bit_values_in_fewer_limbs() -> None:
    """int64 values known to be int32 ones (widened): two limbs, the top one from bit 16
    (taken without a 64-bit arithmetic shift: the value plus 2**63, shifted, less
    2**47), and the sum of 20 of them is the x64 program's, bit for bit."""
    idx = np.resize(np.array([3, -1, 0, 3, 2, 3, -2, 0, 1], np.int32), 20)

    def f(x: jax.Array, i: jax.Array, u: jax.Array) -> jax.Array:
        return x.astype(jnp.int64).at[i].add(u.astype(jnp.int64))

    m = lowered(f, np.zeros(8, np.int32), idx, np.zeros(20, np.int32))
    out = copy(m)
    done = legalize(out, MTL)
    assert [r.detail for r in done.rewritten] == ["2 limb sums of 16,16-bit limbs over 21 terms in i32"]
    assert check_target(out, MTL) == [] and "shift_right_arithmetic" not in str(out)
    run_ref, run_out = compile_module(m, strict=False), compile_module(out, strict=False)
    for xs, us in zip(_ordered((8,), np.int32), _ordered((20,), np.int32)):
        np.testing.assert_array_equal(run_out([xs, idx, us])[0], run_ref([xs, idx, us])[0])
