"""no64.transforms.legalize: an integer dot_general that Neuron's f32 engine (EVRF035)
would compute inexactly, or that Trn2 refuses, split into limb dots whose every partial
sum is exact in f32 (no64.rules.limbs), checked against the reference -- the int32 dot
with int64 accumulation wrapped to 32 bits, which is what XLA CPU's int32 dot computes --
on the CPU backend and on a simulation of the device that computes every dot_general
(integer or f32) as its f32 engine does, sequentially in f32; and against the target
check, which must find nothing left."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from test_targets import f32_datapath_dot, lowered

from no64.cli import main
from no64.kinds import OpForm
from no64.rules.limbs import plan
from no64.targets import F32_EXACT, Datapath, Target, target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import ir, load_benchmark, make_context, stablehlo

RNG = np.random.default_rng(2024)
I32 = np.iinfo(np.int32)
FULL = (int(I32.min), int(I32.max))
NEURON, TRN2 = target("neuron"), target("neuron-trn2")
#: (target, in_f32): Trn1 with integer limb dots, Trn1 with f32 ones, Trn2 (f32 only).
FORMS = [pytest.param(NEURON, False, id="neuron-i32"), pytest.param(NEURON, True, id="neuron-f32"),
         pytest.param(TRN2, False, id="trn2")]

DotDims = tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]]


# ------------------------------------------------------------- the reference
def _einsum_spec(nda: int, ndb: int, dims: DotDims) -> str:
    (ca, cb), (ba, bb) = dims
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    la: list[str] = [""] * nda
    lb: list[str] = [""] * ndb
    for i, j in (*zip(ba, bb), *zip(ca, cb)):
        la[i] = lb[j] = next(letters)
    la = [x or next(letters) for x in la]
    lb = [x or next(letters) for x in lb]
    out = [la[i] for i in ba] + [la[i] for i in range(nda) if i not in (*ba, *ca)]
    out += [lb[j] for j in range(ndb) if j not in (*bb, *cb)]
    return f"{''.join(la)},{''.join(lb)}->{''.join(out)}"


def reference(a: np.ndarray, b: np.ndarray, dims: DotDims, dtype: Any) -> np.ndarray:
    """The integer dot as XLA CPU computes it: exact products and sums modulo 2**64
    (numpy's int64 wraps), wrapped to the result type."""
    spec = _einsum_spec(a.ndim, b.ndim, dims)
    return np.einsum(spec, a.astype(np.int64), b.astype(np.int64)).astype(dtype)


# ----------------------------------------------- the device's f32 engine, simulated
def f32_engine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``f32_datapath_dot`` over a batch (``[B, M, K] @ [B, K, N]``), vectorised:
    the products in f32, accumulated in order along the contraction in f32."""
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    products = fa[:, :, :, None] * fb[:, None, :, :]
    if a.shape[2] == 0:
        return np.zeros((a.shape[0], a.shape[1], b.shape[2]), np.float32)
    return np.add.accumulate(products, axis=2, dtype=np.float32)[:, :, -1, :]


def engine_dot_general(op: ir.Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A ``dot_general`` as the device's engine computes it, integer or f32."""
    dims = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    ba, bb = list(dims.lhs_batching_dimensions), list(dims.rhs_batching_dimensions)
    ca, cb = list(dims.lhs_contracting_dimensions), list(dims.rhs_contracting_dimensions)
    fa = [i for i in range(a.ndim) if i not in ba + ca]
    fb = [j for j in range(b.ndim) if j not in bb + cb]
    batch = [a.shape[i] for i in ba]
    free_a, free_b = [a.shape[i] for i in fa], [b.shape[j] for j in fb]
    k = int(np.prod([a.shape[i] for i in ca], dtype=np.int64))
    a3 = a.transpose(ba + fa + ca).reshape(int(np.prod(batch, dtype=np.int64)), -1, k)
    b3 = b.transpose(bb + cb + fb).reshape(int(np.prod(batch, dtype=np.int64)), k, -1)
    return f32_engine(a3, b3).reshape(batch + free_a + free_b)


_DTYPES = {"i32": np.int32, "ui32": np.uint32, "i16": np.int16, "ui16": np.uint16, "i8": np.int8,
           "ui8": np.uint8, "f32": np.float32, "i1": np.bool_}


def _dtype(v: ir.Value) -> Any:
    return _DTYPES[str(ir.RankedTensorType(v.type).element_type)]


def _u32(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32)


def device_run(module: ir.Module, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``module``'s ``main`` op by op in numpy, every ``dot_general`` on the
    simulated f32 engine (an integer one too: the device computes it in f32)."""
    main_fn = next(op for op in module.body.operations
                   if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    block = main_fn.regions[0].blocks[0]
    env: dict[Any, np.ndarray] = dict(zip(block.arguments, args))
    for op in block.operations:
        x = [env[v] for v in op.operands]
        name = op.name.split(".", 1)[1]
        if name == "return":
            return x
        t = _dtype(op.results[0])
        if name == "constant":
            r = np.array(ir.DenseElementsAttr(op.attributes["value"])).astype(t)
        elif name == "convert":
            r = x[0].astype(t)
        elif name == "bitcast_convert":
            r = x[0].view(t)
        elif name == "and":
            r = x[0] & x[1]
        elif name == "add":
            r = x[0] + x[1]
        elif name == "shift_left":
            r = (_u32(x[0]) << _u32(x[1])).view(t)
        elif name == "shift_right_logical":
            r = (_u32(x[0]) >> _u32(x[1])).view(t)
        elif name == "shift_right_arithmetic":
            r = x[0] >> x[1]
        elif name == "broadcast_in_dim":
            shape = ir.RankedTensorType(op.results[0].type).shape
            mapped = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
            inner = [x[0].shape[mapped.index(i)] if i in mapped else 1 for i in range(len(shape))]
            r = np.broadcast_to(x[0].reshape(inner), shape)
        elif name == "dot_general":
            got = engine_dot_general(op, x[0], x[1])
            # the engine's f32 result, as the device hands it back in the result's type
            # (a sum past int64 in the original dot becomes some integer: it is wrong anyway)
            with np.errstate(invalid="ignore"):
                r = got if t == np.float32 else got.astype(np.int64).astype(t)
        else:
            raise NotImplementedError(op.name)
        env[op.results[0]] = np.asarray(r, t).reshape(ir.RankedTensorType(op.results[0].type).shape)
    raise AssertionError("main has no return")


def test_the_engine_simulation_is_the_f32_datapath() -> None:
    """The vectorised engine is f32_datapath_dot, bit for bit, also where f32 rounds."""
    a = RNG.integers(-(2**20), 2**20, (5, 300), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-(2**20), 2**20, (300, 4), dtype=np.int64).astype(np.int32)
    got = f32_engine(a[None], b[None])[0].astype(np.int64)
    np.testing.assert_array_equal(got, f32_datapath_dot(a, b))
    assert (got != a.astype(np.int64) @ b.astype(np.int64)).any()


# ------------------------------------------------------------- inputs
def extremes(shape: Sequence[int], dtype: Any) -> Iterator[np.ndarray]:
    """The adversarial operands: every element the type's minimum, its maximum, -1
    (all bits set), the two extremes alternating, and random over the whole type."""
    info = np.iinfo(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    yield np.full(shape, info.min, dtype)
    yield np.full(shape, info.max, dtype)
    yield np.full(shape, -1, np.int64).astype(dtype)
    yield np.resize(np.array([info.min, info.max], dtype), n).reshape(shape)
    yield RNG.integers(int(info.min), int(info.max), shape, dtype=np.int64, endpoint=True).astype(dtype)


def input_pairs(sa: Sequence[int], sb: Sequence[int], da: Any, db: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    xs, ys = list(extremes(sa, da)), list(extremes(sb, db))
    pairs = [(x, y) for x in xs for y in ys[:4]]  # every extreme with every other
    return pairs + [(xs[-1], ys[-1]), (xs[0], ys[-1]), (xs[-1], ys[1])]


# ------------------------------------------------------------- the check
def dots(module: ir.Module) -> list[ir.Operation]:
    out = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "stablehlo.dot_general":
            out.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return out


def _is_int(op: ir.Operation) -> bool:
    return isinstance(ir.RankedTensorType(op.operands[0].type).element_type, ir.IntegerType)


def exact_on(f: Callable[..., Any], a: np.ndarray, b: np.ndarray, dims: DotDims, t: Target, in_f32: bool,
             pairs: list[tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[ir.Module, int]:
    """Legalize ``f``'s module for ``t``, check that the target check finds nothing,
    and run it on the CPU and on the simulated engine against the reference (the dot
    ``dims`` of the inputs: ``pairs`` are given as ``f`` sees them after any mask);
    the number of limb dots."""
    m = lowered(f, a, b)
    done = legalize(m, t, in_f32=in_f32)
    m.operation.verify()
    assert check_target(m, t) == [], check_target(m, t)
    limb_dots = dots(m)
    assert len(done.rewritten) == 1 and done.rewritten[0].ops == len(limb_dots) and not done.left
    assert all(not _is_int(d) for d in limb_dots) or (t is NEURON and not in_f32)
    out_dtype = np.dtype(jax.eval_shape(f, a, b).dtype)
    run = compile_module(m, strict=True)
    for x, y in pairs if pairs is not None else input_pairs(a.shape, b.shape, a.dtype, b.dtype):
        want = reference(x, y, dims, out_dtype)
        np.testing.assert_array_equal(run([x, y])[0], want)
        np.testing.assert_array_equal(device_run(m, [x, y])[0], want)
    return m, len(limb_dots)


MATMUL: DotDims = (((1,), (0,)), ((), ()))


@pytest.mark.parametrize("t, in_f32", FORMS)
@pytest.mark.parametrize("k, expected", [(1, 6), (7, 8), (512, 14), (4096, 20)])
def test_full_range_int32_matmul(k: int, expected: int, t: Target, in_f32: bool) -> None:
    """A full-range int32 matmul of K = 1, 7, 512, 4096 terms: 6, 8, 14, 20 limb dots,
    bit-identical to the reference on the extremes and on random data, on the CPU and
    on the simulated engine; the target check finds nothing left."""
    a, b = np.zeros((3, k), np.int32), np.zeros((k, 2), np.int32)
    _, n = exact_on(lambda a, b: a @ b, a, b, MATMUL, t, in_f32)
    assert n == expected


def test_the_datapath_gets_the_unsplit_dot_wrong() -> None:
    """Not vacuous: the simulated engine computes the original full-range dot wrong."""
    a = RNG.integers(I32.min, I32.max, (3, 512), dtype=np.int64).astype(np.int32)
    b = RNG.integers(I32.min, I32.max, (512, 2), dtype=np.int64).astype(np.int32)
    m = lowered(lambda a, b: a @ b, a, b)
    assert (device_run(m, [a, b])[0] != reference(a, b, MATMUL, np.int32)).any()


@pytest.mark.parametrize("t, in_f32", FORMS)
def test_uint32_matmul(t: Target, in_f32: bool) -> None:
    """uint32 operands (0xFFFFFFFF, 2**31 ...) are split as the int32 of their bits,
    equal modulo 2**32; the uint32 result is the reference's."""
    a, b = np.zeros((2, 512), np.uint32), np.zeros((512, 3), np.uint32)
    pairs = input_pairs(a.shape, b.shape, np.uint32, np.uint32)
    pairs.append((np.full(a.shape, 2**31, np.uint32), np.full(b.shape, 2**31 + 1, np.uint32)))
    _, n = exact_on(lambda a, b: a @ b, a, b, MATMUL, t, in_f32, pairs)
    assert n == 14


@pytest.mark.parametrize("t, in_f32", FORMS)
def test_batch_dims_and_contracting_orders(t: Target, in_f32: bool) -> None:
    """Batch dimensions, a contraction over the lhs's first and the rhs's last
    dimension, and one over two dimensions taken in opposite orders."""
    a, b = np.zeros((2, 3, 64), np.int32), np.zeros((2, 64, 4), np.int32)
    dims: DotDims = (((2,), (1,)), ((0,), (0,)))
    exact_on(lambda a, b: lax.dot_general(a, b, dims), a, b, dims, t, in_f32)
    a, b = np.zeros((96, 3), np.int32), np.zeros((2, 96), np.int32)
    dims = (((0,), (1,)), ((), ()))
    exact_on(lambda a, b: lax.dot_general(a, b, dims), a, b, dims, t, in_f32)
    a, b = np.zeros((3, 8, 16), np.int32), np.zeros((16, 8, 2), np.int32)
    dims = (((1, 2), (1, 0)), ((), ()))
    _, n = exact_on(lambda a, b: lax.dot_general(a, b, dims), a, b, dims, t, in_f32)
    assert n == plan(128, FULL, FULL, 32, F32_EXACT).dots  # type: ignore[union-attr]


@pytest.mark.parametrize("t, in_f32", FORMS)
def test_narrow_operands_and_results(t: Target, in_f32: bool) -> None:
    """int8 operands into an int32 result (127 * 128 * 4096 passes 2**24) and an int16
    matmul with its int16 result: Neuron has no 16-bit integers, so it is an int32 matmul
    of the 16-bit values (no64.transforms.widen), wrapped to 16 bits after it -- the limb
    pairs below 32 bits are kept."""
    a, b = np.zeros((2, 4096), np.int8), np.zeros((4096, 3), np.int8)

    def i8(a: jax.Array, b: jax.Array) -> jax.Array:
        return lax.dot_general(a, b, MATMUL, preferred_element_type=jnp.int32)

    _, n = exact_on(i8, a, b, MATMUL, t, in_f32)
    assert 1 < n < 20
    a, b = np.zeros((2, 512), np.int16), np.zeros((512, 3), np.int16)
    _, n = exact_on(lambda a, b: a @ b, a, b, MATMUL, t, in_f32)
    assert n == plan(512, (-(2**15), 2**15 - 1), (-(2**15), 2**15 - 1), 32, F32_EXACT).dots  # type: ignore[union-attr]


def test_known_small_operands_are_left_alone() -> None:
    """Operands masked to 4 bits (15 * 15 * 128 < 2**24), or declared small through
    input_ranges: proven exact on Trn1's datapath, the module is unchanged; Trn2
    refuses any integer dot, so there it is one f32 dot, exact."""
    a, b = np.zeros((4, 128), np.int32), np.zeros((128, 3), np.int32)
    for f, ranges in ((lambda a, b: (a & 15) @ (b & 15), None), (lambda a, b: a @ b, {0: (-8, 7), 1: (-8, 7)})):
        m = lowered(f, a, b)
        before = str(m)
        done = legalize(m, NEURON, input_ranges=ranges)
        assert str(m) == before and not done.rewritten and not done.left
        assert check_target(m, NEURON, input_ranges=ranges) == []
    masked = [(x & 15, y & 15) for x, y in input_pairs(a.shape, b.shape, np.int32, np.int32)]
    _, n = exact_on(lambda a, b: (a & 15) @ (b & 15), a, b, MATMUL, TRN2, False, masked)
    assert n == 1


def test_a_narrow_range_needs_fewer_limbs() -> None:
    """An operand known to hold 10 bits pairs with wider limbs of the other."""
    a, b = np.zeros((3, 512), np.int32), np.zeros((512, 2), np.int32)
    _, n = exact_on(lambda a, b: (a & 1023) @ b, a, b, MATMUL, NEURON, False,
                    [(x & 1023, y) for x, y in input_pairs(a.shape, b.shape, np.int32, np.int32)])
    assert n < 14


def test_limb_widths() -> None:
    """The rule: per operand one width for all limbs but the top one; the fewest limb
    dots whose every product and partial sum is within 2**24."""
    for k in (1, 7, 100, 512, 4096, 65536, 2**24):
        p = plan(k, FULL, FULL, 32, F32_EXACT)
        assert p is not None
        assert all(p.largest_sum(pair) <= F32_EXACT for pair in p.pairs)
        assert all(p.shift(pair) < 32 for pair in p.pairs)
        assert sum(p.lhs.widths) == sum(p.rhs.widths) == 32
    p = plan(512, FULL, FULL, 32, F32_EXACT)
    assert p is not None and p.dots == 14 and (p.lhs.widths, p.rhs.widths) == ((8, 8, 8, 8), (7, 7, 7, 7, 4))
    assert plan(2**24, FULL, FULL, 32, F32_EXACT).dots == 32 * 33 // 2  # type: ignore[union-attr]
    assert plan(2**24 + 1, FULL, FULL, 32, F32_EXACT) is None
    assert plan(128, (0, 15), (0, 15), 32, F32_EXACT).dots == 1  # type: ignore[union-attr]


TOO_LONG = """\
func.func public @main(%a: tensor<1x16777217xi32>, %b: tensor<16777217x1xi32>) -> tensor<1x1xi32> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
      : (tensor<1x16777217xi32>, tensor<16777217x1xi32>) -> tensor<1x1xi32>
  return %d : tensor<1x1xi32>
}
"""


def test_a_contraction_past_2_24_is_left_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Over more than 2**24 terms even 1-bit limbs may sum past 2**24: the dot is left
    as it is, with why, and still reported; `no64 convert --target` warns at its line,
    and under --policy strict refuses and writes nothing."""
    m = ir.Module.parse(TOO_LONG, make_context())
    done = legalize(m, NEURON)
    assert not done.rewritten and len(done.left) == 1
    assert "a contraction over 16777217 elements" in done.left[0].detail
    assert str(m) == str(ir.Module.parse(TOO_LONG, make_context()))
    (finding,) = check_target(m, NEURON)
    assert finding.kind == "inexact" and "no64 cannot make it exact: a contraction" in done.explain(finding)
    src, out = tmp_path / "long.mlir", tmp_path / "out.mlir"
    src.write_text(TOO_LONG)
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"no64: warning: stablehlo.dot_general at {src}:2:") and "EVRF035" in err
    assert "no64 cannot make it exact: a contraction over 16777217 elements" in err
    out.unlink()
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron", "--policy", "strict"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("no64: error: target neuron (policy strict): stablehlo.dot_general at ")
    assert not out.exists()


def test_convert_with_a_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`no64 convert --target neuron-trn2` writes a module with f32 limb dots only, which
    `no64 check --target` accepts; the summary says what each dot became."""
    a, b = np.zeros((4, 512), np.int32), np.zeros((512, 3), np.int32)
    src, out = tmp_path / "mm.mlir", tmp_path / "out.mlir"
    src.write_text(str(lowered(lambda a, b: a @ b, a, b)))
    assert main(["check", "--target", "neuron-trn2", str(src)]) == 1
    capsys.readouterr()
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron-trn2"]) == 0
    got = capsys.readouterr()
    assert got.err == "" and "target neuron-trn2: 1 op rewritten into 14 exact ops of their kind" in got.out
    assert "14 limb dots of 8,8,8,8 x 7,7,7,7,4-bit limbs over 512 terms in f32" in got.out
    converted = ir.Module.parse(out.read_text(), make_context())
    assert len(dots(converted)) == 14 and not any(_is_int(d) for d in dots(converted))
    assert main(["check", "--target", "neuron-trn2", str(out)]) == 0
    capsys.readouterr()
    out.unlink()
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"]["target"] == "neuron" and doc["target"]["rewritten"][0]["ops"] == 14
    assert doc["target"]["findings"] == [] and doc["target"]["left"] == []
    assert main(["convert", str(src), "-o", str(tmp_path / "x.mlir"), "--target", "nope"]) == 2
    assert "convert: unknown target 'nope'" in capsys.readouterr().err


def test_the_benchmark_runs() -> None:
    """benchmarks/bench_limbs.py, on a small matmul and without timing much."""
    bench = load_benchmark("bench_limbs")
    rows = bench.run(m=8, k=512, n=4, repeats=1)
    assert [r["program"] for r in rows] == ["int32 dot", "limb dots (i32)", "limb dots (f32)"]
    assert [r["dots"] for r in rows] == [1, 14, 14]


def test_the_simulation_catches_a_split_too_wide_for_f32() -> None:
    """Not vacuous either: limbs planned for a datapath exact up to 2**28 (a profile
    that claims more than f32 has) give sums the simulated f32 engine rounds."""
    wide = Target("wide", "claims 28 exact bits", datapaths=(Datapath(OpForm.MATMUL, "f32", 2**28, "", "", ""),))
    a, b = np.zeros((3, 512), np.int32), np.zeros((512, 2), np.int32)
    m = lowered(lambda a, b: a @ b, a, b)
    assert legalize(m, wide).rewritten[0].ops < 14
    wrong = [(x, y) for x, y in input_pairs(a.shape, b.shape, np.int32, np.int32)
             if (device_run(m, [x, y])[0] != reference(x, y, MATMUL, np.int32)).any()]
    assert wrong


@pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning")
def test_the_hook_legalizes_a_copy_then_checks() -> None:
    """check_device: a module that is not no64's own copy is legalized in a copy (the
    one the backend gets); a dot with no exact form stays a TargetWarning, and under
    strict a TargetError, that says why no64 left it."""
    import no64
    from no64.jax import hook
    from no64.jax.hook import Config, check_device
    from no64.options import Options

    hook.prepare._warned_target.clear()  # each line is warned of once per process

    a, b = np.zeros((4, 512), np.int32), np.zeros((512, 3), np.int32)
    m = lowered(lambda a, b: a @ b, a, b)
    before = str(m)
    config = Config(frozenset({"cpu"}), options=Options(target="neuron"))
    got = check_device(m, config, "cpu")
    assert got is not m and str(m) == before and len(dots(got)) == 14
    assert check_device(m, config, "cpu", owned=True) is m and len(dots(m)) == 14
    long = ir.Module.parse(TOO_LONG, make_context())
    with pytest.warns(no64.TargetWarning, match="no64 cannot make it exact: a contraction over 16777217"):
        assert check_device(long, config, "cpu") is long
    strict = Config(frozenset({"cpu"}), options=Options(target="neuron", policy="strict"))
    with pytest.raises(no64.TargetError, match="no64 cannot make it exact: a contraction over 16777217"):
        check_device(long, strict, "cpu")


def test_the_word_emulations_dots_are_split_too() -> None:
    """policy="exact" computes an int64 matmul on 32-bit words with 36 dots of 8-bit
    limbs, whose sums over 512 terms pass 2**24: each is split again, and the words
    are still the int64 product's."""
    import no64
    from no64.transforms.emulate import join_words, split_words
    from support import enable_x64

    a, b = np.zeros((2, 512), np.int64), np.zeros((512, 3), np.int64)
    with enable_x64(True):
        text = jax.jit(lambda a, b: a @ b).lower(a, b).as_text()
    m = ir.Module.parse(text, make_context())
    no64.demote(m, policy="exact")
    assert len(check_target(m, NEURON)) == 36
    done = legalize(m, NEURON)
    assert len(done.rewritten) == 36 and check_target(m, NEURON) == []
    run = compile_module(m, strict=True)
    i64 = np.iinfo(np.int64)
    for x, y in ((np.full(a.shape, i64.min), np.full(b.shape, i64.max)),
                 (RNG.integers(i64.min, i64.max, a.shape), RNG.integers(i64.min, i64.max, b.shape))):
        np.testing.assert_array_equal(join_words(run([split_words(x), split_words(y)])[0]), x @ y)


def test_dots_in_a_loop_and_in_a_row() -> None:
    """A dot in a fori_loop's body, and one of its result: both split, still exact."""
    a = RNG.integers(I32.min, I32.max, (3, 64), dtype=np.int64).astype(np.int32)
    b = RNG.integers(I32.min, I32.max, (64, 64), dtype=np.int64).astype(np.int32)

    def f(a: jax.Array, b: jax.Array) -> jax.Array:
        return lax.fori_loop(0, 3, lambda i, x: x @ b, a) @ b.T

    m = lowered(f, a, b)
    assert len(legalize(m, NEURON).rewritten) == 2 and check_target(m, NEURON) == []
    want = a
    for _ in range(3):
        want = reference(want, b, MATMUL, np.int32)
    want = reference(want, b.T, MATMUL, np.int32)
    np.testing.assert_array_equal(compile_module(m, strict=True)([a, b])[0], want)
