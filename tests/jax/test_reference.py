"""Demoted programs against their 64-bit originals, on real JAX programs.

Every program in ``programs.PROGRAMS`` is lowered with 64-bit types, demoted,
checked to hold no 64-bit value, verified, compiled and run on the CPU (over
8 devices for the sharded ones) and compared with the 64-bit run on the same
inputs.  The rest of the file tests the harness itself (``no64.jax.reference``):
a comparison that could not fail would prove nothing.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
import programs
from no64.jax import reference
from no64.jax.reference import (
    ComparisonResult,
    Tolerance,
    compare_output,
    compare_outputs,
    compare_with_reference,
    lower_x64,
    narrow_inputs,
    run_module,
)
from programs import PROGRAMS, Program
from support import enable_x64, ir

BY_NAME = {p.name: p for p in PROGRAMS}


@functools.cache
def _compared(name: str) -> ComparisonResult:
    """Compare one program with its reference (cached: several tests read it)."""
    program = BY_NAME[name]
    args = program.make_args(np.random.default_rng(0))
    return compare_with_reference(
        program.fn,
        args,
        jit_kwargs=program.jit_kwargs(),
        tolerance=program.tolerance,
    )


def _result(program: Program, request: pytest.FixtureRequest) -> ComparisonResult:
    if program.needs_devices > 1:
        request.getfixturevalue("cpu_devices")
    return _compared(program.name)


# --------------------------------------------------------------------------
# every program
# --------------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_matches_64bit_reference(program: Program, request: pytest.FixtureRequest) -> None:
    result = _result(program, request)
    # The reference really is a 64-bit program...
    assert no64.find_64bit(result.original), "the reference program holds no 64-bit value"
    # ...and the demoted one holds no 64-bit value and verifies.
    assert no64.find_64bit(result.demoted) == []
    assert result.demoted.operation.verify()
    assert result.report.changed
    assert result.report.values_retyped > 0
    if program.sentinel_events:
        assert result.report.count("sentinel") > 0, result.report.summary()
    # Every output was compared; floats to within the tolerance.
    assert len(result.outputs) == len(result.reference_values) > 0
    assert all(o.ok for o in result.outputs), result.summary()


def test_mlp_adam_step_updates_params_and_loss() -> None:
    result = _compared("mlp_adam")
    names = [o.name for o in result.outputs]
    # params (4 leaves), Adam state (count, mu x4, nu x4), losses.
    assert len(names) == 4 + 9 + 1
    params_before = programs.mlp_args(np.random.default_rng(0))[0]
    assert all(v.dtype == np.float32 for v in result.demoted_values[:4])
    # The steps moved the parameters and the loss went down, in both programs.
    for values in (result.reference_values, result.demoted_values):
        for before, after in zip(jax.tree_util.tree_leaves(params_before), values[:4]):
            assert not np.allclose(before, after)
        losses = values[-1]
        assert losses.shape == (3,) and losses[-1] < losses[0]
    assert result.report.retyped_by_type.get("f64", 0) > 0


def test_transformer_grads_and_token_ids() -> None:
    result = _compared("transformer")
    loss = result.outputs[0]
    assert loss.reference_dtype == np.float64 and loss.demoted_dtype == np.float32
    assert 0.0 < float(result.demoted_values[0]) < 20.0
    # Token ids were int64 arguments and are int32 ones now.
    text = str(result.demoted)
    assert "tensor<2x8xi32>" in text and "tensor<2x8xi64>" not in text
    # Gradients are non-trivial for every parameter.
    assert all(np.abs(g).max() > 0 for g in result.demoted_values[1:])
    # The causal mask's finfo(float64).min became finfo(float32).min.
    assert any("sentinel" == e.kind for e in result.report.events)


def test_fft_keeps_complex_outputs() -> None:
    result = _compared("fft")
    kinds = {o.name: (o.reference_dtype, o.demoted_dtype) for o in result.outputs}
    assert (np.dtype(np.complex128), np.dtype(np.complex64)) in kinds.values()
    assert result.report.retyped_by_type.get("complex<f64>", 0) > 0
    assert "complex<f32>" in str(result.demoted)


def test_sentinel_outputs_map_to_32bit_extremes() -> None:
    result = _compared("sentinels")
    i32, i64 = np.iinfo(np.int32), np.iinfo(np.int64)
    masked_min_ref, masked_min = result.reference_values[0], result.demoted_values[0]
    # Row 2 selects nothing: INT64_MAX in the reference, INT32_MAX after demotion.
    assert masked_min_ref[2] == i64.max and masked_min[2] == i32.max
    assert result.reference_values[1][2] == i64.min and result.demoted_values[1][2] == i32.min
    assert result.demoted_values[5][2] == np.iinfo(np.uint32).max
    assert result.demoted_values[7][2] == -np.finfo(np.float32).max
    assert np.isposinf(result.demoted_values[9]).sum() == 0  # nan_to_num kept finite
    assert result.demoted_values[9][1] == np.finfo(np.float32).max
    # float -> int64 converts saturate: INT64_MAX/MIN, then INT32_MAX/MIN.
    assert list(result.reference_values[10][[1, 4]]) == [i64.max, i64.min]
    assert list(result.demoted_values[10][[1, 4]]) == [i32.max, i32.min]
    sentinel_events = [e for e in result.report.events if e.kind == "sentinel"]
    assert sentinel_events
    # Events carry source locations; those of ops traced inside the function
    # point at programs.py (constants JAX materialises at the jit boundary
    # carry the location of the jit call instead).
    assert any(
        e.location.file and e.location.file.endswith("programs.py") and e.location.line
        for e in sentinel_events
    ), [str(e) for e in sentinel_events]


def test_donated_buffers_keep_their_aliases() -> None:
    """donate_argnums marks arguments as aliased to outputs of the same type;
    both sides are narrowed together, so the aliases stay valid."""
    x, k = np.arange(4.0), np.arange(4, dtype=np.int64)
    result = compare_with_reference(
        lambda a, b: (2 * a, b + 1), [x, k], jit_kwargs={"donate_argnums": (0, 1)}
    )
    main = str(result.demoted).split("func.func public @main", 1)[1].split("{\n", 1)[0]
    assert main.count("tf.aliasing_output") == 2, main
    assert "tensor<4xf32> {tf.aliasing_output = 0 : i32}" in main


# --------------------------------------------------------------------------
# sharded programs: Shardy annotations survive, and the program runs sharded
# --------------------------------------------------------------------------

# A tensor sharding as Shardy prints it, in attributes (``#sdy.sharding<...>``)
# and in op syntax (sharding_constraint, manual_computation in/out_shardings).
_SDY_SHARDING = re.compile(r"<@\w+, \[[^\]]*\][^>]*>")


def _sdy_summary(module: ir.Module) -> dict[str, object]:
    text = str(module)
    return {
        "meshes": re.findall(r"sdy\.mesh @\w+ = <[^>]*>", text),
        "shardings": sorted(_SDY_SHARDING.findall(text)),
        "manual_axes": re.findall(r"manual_axes=\{[^}]*\}", text),
        "sharding_constraint": text.count("sdy.sharding_constraint"),
        "manual_computation": text.count("sdy.manual_computation"),
        "partitions": ir.IntegerAttr(module.operation.attributes["mhlo.num_partitions"]).value,
    }


@pytest.mark.parametrize(
    ("name", "op"),
    [("sharded_mlp", "sharding_constraint"), ("shard_map", "manual_computation")],
)
def test_shardy_annotations_survive_demotion(name: str, op: str, cpu_devices: list) -> None:
    result = _compared(name)
    before, after = _sdy_summary(result.original), _sdy_summary(result.demoted)
    assert before["meshes"] and before["shardings"] and before[op], before
    assert after == before
    assert after["partitions"] == 8
    text = str(result.demoted)
    assert "sdy.mesh @mesh" in text and "sdy.sharding = #sdy.sharding<@mesh" in text


def test_sharded_runs_match_jax(cpu_devices: list) -> None:
    """The harness's own sharded execution agrees with jax.jit's."""
    for name in ("sharded_mlp", "shard_map"):
        program = BY_NAME[name]
        args = program.make_args(np.random.default_rng(0))
        module = lower_x64(program.fn, *args, **program.jit_kwargs())
        ours = run_module(module, args, strict=False)
        with enable_x64(True):
            theirs = jax.jit(program.fn, **program.jit_kwargs())(*args)
        for a, b in zip(ours, jax.tree_util.tree_leaves(theirs)):
            np.testing.assert_array_equal(a, np.asarray(b))


# --------------------------------------------------------------------------
# programs that cannot be demoted exactly must be refused
# --------------------------------------------------------------------------


def test_large_integer_constant_is_emulated_exactly() -> None:
    """A 64-bit multiplier (6364136223846793005) has no 32-bit form: the hash
    is computed in 32-bit words and matches the 64-bit program bit for bit."""
    k = np.array([0, 1, -1, 7, np.iinfo(np.int32).max, np.iinfo(np.int32).min, 123456789, -99], np.int64)
    result = compare_with_reference(programs.hash_mix, [k])
    assert all(o.exact and o.ok for o in result.outputs)
    assert result.report.ops_emulated and result.report.verdicts.get("emulated")
    assert no64.find_64bit(result.demoted) == []


def _popcount(k: jax.Array) -> jax.Array:
    return lax.population_count(k)


def _clz(k: jax.Array) -> jax.Array:
    return lax.clz(k)


def _logical_shift(k: jax.Array) -> jax.Array:
    return lax.shift_right_logical(k, jnp.int64(1))


def _shift_round_trip(k: jax.Array) -> jax.Array:
    return (k << 33) >> 33  # == k in 64 bits; the shift amount is >= 32


def _bitcast_mantissa(x: jax.Array) -> jax.Array:
    return lax.bitcast_convert_type(x, jnp.int64) & 0xFFFF


_I32_EXTREMES = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0, 1]


@pytest.mark.parametrize(
    ("fn", "arg", "expected"),
    [
        (_popcount, np.array([-1, -5, 3, 0, *_I32_EXTREMES], np.int64), "exact"),
        (_clz, np.array([1, 5, 300, 70000, *_I32_EXTREMES], np.int64), "exact"),
        (_logical_shift, np.array([8, 1, 6, 0, np.iinfo(np.int32).max], np.int64), "exact"),
        (_shift_round_trip, np.array([-8, -1, 6, 1000, *_I32_EXTREMES], np.int64), "exact"),
        (_bitcast_mantissa, np.array([0.1, 1.5, -3.25, 1e-3], np.float64),
         (no64.UnsupportedOpError, "bitcast_convert reinterprets the bits")),
    ],
    ids=["popcount", "clz", "shift_right_logical", "shift_by_33", "bitcast_convert"],
)
def test_width_dependent_ops_are_exact_or_refused(fn, arg, expected) -> None:
    """Ops whose result depends on the bit width: each is either made exact
    (the 32-bit program gives the 64-bit answer, bit for bit, also at the
    int32 extremes and for negative values; a shift by 33 is emulated in
    32-bit words) or refused, as pinned here."""
    if expected == "exact":
        result = compare_with_reference(fn, [arg])  # integers compared for equality
        assert all(o.exact and o.ok for o in result.outputs)
        return
    error, message = expected
    with pytest.raises(error, match=message) as err:
        compare_with_reference(fn, [arg])
    assert err.value.location and err.value.op


def test_logical_shift_of_negative_int64_is_not_silent() -> None:
    """``shift_right_logical`` of a negative int64 gives a value no int32
    holds (-8 >>> 1 == 2**63 - 4); its 32-bit form is exact only for
    non-negative operands.  Like a float -> int64 convert, that must be
    refused or recorded as ``"unproven"`` in the report, never silent."""
    module = lower_x64(_logical_shift, np.array([-8, 6], np.int64))
    report = no64.demote(module)
    assert any(
        e.kind == "unproven" and e.op == "stablehlo.shift_right_logical" for e in report.events
    ), report.summary()


def test_float64_random_draws_are_close_and_reported_or_refused() -> None:
    """float64 draws are made of 64 random bits.  A 32-bit program can give
    the same numbers to f32 precision (from the high 32 bits), and the
    report must say that the bit-level rewrite reduced precision.  It must
    never draw other numbers."""
    (key,) = programs.prng_float32_args(np.random.default_rng(0))
    result = compare_with_reference(programs.prng_float64, [key])
    bit_events = [e for e in result.report.events if e.op == "stablehlo.bitcast_convert"]
    assert bit_events and all(e.kind == "precision-reduced" for e in bit_events), (
        result.report.summary()
    )


# --------------------------------------------------------------------------
# the harness itself
# --------------------------------------------------------------------------


def _affine(x: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
    return 2.0 * x + 1.0, k * 3


def test_run_module_is_strict_about_64bit_types() -> None:
    x, k = np.arange(4.0), np.arange(4, dtype=np.int64)
    module = lower_x64(_affine, x, k)
    assert module.context is not None and no64.find_64bit(module)
    with pytest.raises(no64.Remaining64BitError):
        run_module(module, [x, k])
    y, j = run_module(module, [x, k], strict=False)
    assert y.dtype == np.float64 and j.dtype == np.int64
    np.testing.assert_array_equal(y, 2 * x + 1)
    np.testing.assert_array_equal(j, 3 * k)


def test_run_module_accepts_text_and_checks_arguments() -> None:
    text = """
    func.func public @main(%a: tensor<3xf32>, %b: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xi32>) {
      %0 = stablehlo.multiply %a, %a : tensor<3xf32>
      %1 = stablehlo.add %b, %b : tensor<3xi32>
      return %0, %1 : tensor<3xf32>, tensor<3xi32>
    }
    """
    a = np.array([1.0, -2.0, 3.0], np.float32)
    b = np.array([1, 2, 3], np.int32)
    sq, dbl = run_module(text, [a, b])
    np.testing.assert_array_equal(sq, a * a)
    np.testing.assert_array_equal(dbl, 2 * b)
    with pytest.raises(ValueError, match="argument #1"):
        run_module(text, [a, b.astype(np.int64)])
    with pytest.raises(ValueError, match="takes 2 arguments"):
        run_module(text, [a])
    with pytest.raises(no64.InputError, match="does not parse"):
        run_module(text.replace("stablehlo.add", "stablehlo.plus"), [a, b])


def test_run_module_refuses_python_callbacks() -> None:
    """A callback's Python function is not in the module: refuse, don't crash."""

    def printing(x: jax.Array) -> jax.Array:
        jax.debug.print("x = {}", x)
        return 2 * x

    x = np.arange(3, dtype=np.float32)
    module = lower_x64(printing, x)
    with pytest.raises(ValueError, match="calls back into Python"):
        run_module(module, [x])


def test_lower_x64_keeps_locations_and_is_demotable() -> None:
    x, k = np.arange(4.0), np.arange(4, dtype=np.int64)
    module = lower_x64(_affine, x, k)
    text = module.operation.get_asm(enable_debug_info=True)
    assert "tensor<4xf64>" in text and "tensor<4xi64>" in text
    assert "test_reference.py" in text
    files = {f.location.file for f in no64.find_64bit(module) if f.location.file}
    assert any(f.endswith("test_reference.py") for f in files), files
    # It lives in a no64 context: it can be demoted and run.
    no64.demote(module)
    no64.check(module)
    y, j = run_module(module, narrow_inputs([x, k]))
    np.testing.assert_array_equal(y, (2 * x + 1).astype(np.float32))
    assert j.dtype == np.int32


def test_narrow_inputs() -> None:
    out = narrow_inputs(
        [np.ones(2), np.arange(3, dtype=np.int64), np.ones(1, np.complex128), np.array([1], np.uint64),
         np.ones(2, np.float32), np.array([True])]
    )
    assert [o.dtype for o in out] == [
        np.float32, np.int32, np.complex64, np.uint32, np.float32, np.bool_,
    ]
    with pytest.raises(ValueError, match="input #0"):
        narrow_inputs([np.array([2**31], np.int64)])


def test_comparison_catches_wrong_results() -> None:
    ref = np.linspace(-1.0, 1.0, 11)
    good = ref.astype(np.float32)
    assert compare_output(ref, good).ok
    off = good.copy()
    off[3] += 1e-2
    bad = compare_output(ref, off, name="y")
    assert not bad.ok and bad.mismatches == 1 and "(3,)" in bad.worst
    with pytest.raises(AssertionError, match="y: float64->float32"):
        compare_outputs([ref], [off], names=["y"])
    # Integers: exact, sentinels mapped, out-of-range reference values fail.
    k = np.array([1, np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64)
    mapped = np.array([1, np.iinfo(np.int32).max, np.iinfo(np.int32).min], np.int32)
    assert compare_output(k, mapped).ok
    assert not compare_output(k, np.array([2, *mapped[1:]], np.int32)).ok
    assert not compare_output(np.array([2**40], np.int64), np.array([0], np.int32)).ok
    # Wrong dtype or shape.
    with pytest.raises(AssertionError, match="should return float32"):
        compare_output(ref, ref)
    # Non-finite values must match in place and sign.
    inf = np.array([np.inf, np.nan, 1.0])
    assert compare_output(inf, inf.astype(np.float32)).ok
    assert not compare_output(inf, np.array([-np.inf, np.nan, 1.0], np.float32)).ok
    assert not compare_output(np.array([1e300, 1.0]), np.array([np.inf, 1.0], np.float32)).ok
    # Float sentinels map exactly and do not loosen the rest of the output.
    fmax = np.finfo(np.float64).max
    f32max = np.finfo(np.float32).max
    assert compare_output(np.array([fmax, -fmax, 1.0]), np.array([f32max, -f32max, 1.0], np.float32)).ok
    assert not compare_output(np.array([-fmax, 1.0]), np.array([-f32max, 1.5], np.float32)).ok
    assert not compare_output(np.array([fmax, 1.0]), np.array([np.inf, 1.0], np.float32)).ok
    # Complex: modulus of the difference.
    z = np.array([1 + 1j, -2j])
    assert compare_output(z, z.astype(np.complex64)).ok
    assert not compare_output(z, (z + 0.01j).astype(np.complex64)).ok
    # The norm-wise floor: tiny elements are judged against the output's scale.
    ref2 = np.array([1000.0, 1e-9])
    assert compare_output(ref2, np.array([1000.0, 2e-9], np.float32)).ok
    assert not compare_output(ref2, np.array([1000.0, 2e-9], np.float32), tolerance=Tolerance(atol=0.0)).ok


def test_compare_with_reference_reports_a_broken_demotion(monkeypatch: pytest.MonkeyPatch) -> None:
    """A demotion that changes a constant is caught by the comparison."""
    real_demote = reference.demote

    def demote_then_break(module: ir.Module, *args: object, **kwargs: object) -> object:
        report = real_demote(module, *args, **kwargs)
        main = module.body.operations[0]
        for op in main.regions[0].blocks[0].operations:
            if op.operation.name == "stablehlo.constant" and isinstance(
                op.result.type.element_type, ir.F32Type
            ):
                with module.context, ir.Location.unknown():
                    op.operation.attributes["value"] = ir.DenseElementsAttr.get_splat(
                        op.result.type, ir.FloatAttr.get(op.result.type.element_type, 2.5)
                    )
                break
        else:
            raise AssertionError("no f32 constant to break")
        return report

    monkeypatch.setattr(reference, "demote", demote_then_break)
    with pytest.raises(AssertionError, match="differs from the 64-bit reference"):
        compare_with_reference(_affine, [np.arange(4.0), np.arange(4, dtype=np.int64)])
