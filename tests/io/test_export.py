"""jax.export artifacts in and out: ``Exported.serialize()`` bytes and the bare
portable artifact inside them are read (detected by content), checked and
converted; a converted artifact keeps its calling convention with 32-bit
avals and runs with ``jax.export.deserialize(...).call(...)``."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.export  # noqa: F401 - JAX 0.7 loads the submodule only when it is imported
import jax.numpy as jnp
import numpy as np
import pytest

import no64
import no64.io
from no64 import cli
from no64.transforms import constants as C

I64 = np.iinfo(np.int64)


def model(x, labels, w):
    """A small 64-bit model: float64 math, int64 labels, an INT64_MAX sentinel."""
    logits = x @ w
    pred = jnp.argmax(logits, -1)
    idx = jnp.arange(labels.shape[0], dtype=jnp.int64)
    first_wrong = jnp.min(jnp.where(pred != labels, idx, I64.max))
    loss = -jnp.mean(jax.nn.log_softmax(logits)[idx, labels])
    return {"loss": loss, "first_wrong": first_wrong, "count": jnp.sum(labels) + jnp.int64(7)}


def _inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 5)), rng.integers(0, 3, size=8), rng.normal(size=(5, 3))


@pytest.fixture(scope="module")
def exported() -> jax.export.Exported:
    assert jax.config.jax_enable_x64
    x, labels, w = _inputs()
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (x, labels, w)]
    return jax.export.export(jax.jit(model), platforms=["cpu"])(*specs)


def _narrowed(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v)
    if v.dtype == np.int64:
        res = C.narrow_integers(v.reshape(-1), False, "error")
        assert res.values is not None
        return res.values.reshape(v.shape)
    if v.dtype == np.float64:
        return C.narrow_floats(v.reshape(-1)).values.reshape(v.shape)
    return v


def test_serialized_artifact_is_read_and_checked(exported: jax.export.Exported,
                                                 tmp_path: Path, capsys) -> None:
    data = bytes(exported.serialize())
    assert no64.io.detect_format(data) == "jaxexport"
    module, fmt = no64.io.load_with_format(data)
    assert fmt == "jaxexport" and no64.find_64bit(module)
    assert no64.io.exported_of(module) is not None
    # The bare payload is the portable artifact.
    payload = bytes(exported.mlir_module_serialized)
    assert no64.io.detect_format(payload) == "vhlo"
    assert no64.find_64bit(no64.io.load(payload))
    # The CLI reads both (any extension, or none).
    (tmp_path / "model.bin").write_bytes(data)
    (tmp_path / "payload").write_bytes(payload)
    assert cli.main(["check", str(tmp_path / "model.bin")]) != 0
    assert cli.main(["check", str(tmp_path / "payload")]) != 0
    out = capsys.readouterr()
    assert "cannot tell the format" not in out.out + out.err
    assert "decode" not in out.out + out.err


def test_converted_artifact_round_trips(exported: jax.export.Exported, tmp_path: Path) -> None:
    src = tmp_path / "model.jaxexport"
    src.write_bytes(bytes(exported.serialize()))
    dest = tmp_path / "model32.jaxexport"
    assert cli.main(["convert", str(src), "-o", str(dest)]) == 0
    data = dest.read_bytes()
    assert no64.io.detect_format(data) == "jaxexport"
    assert not no64.find_64bit(no64.io.load(data))

    exp32 = jax.export.deserialize(bytearray(data))
    assert [str(a.dtype) for a in exp32.in_avals] == ["float32", "int32", "float32"]
    assert sorted(str(a.dtype) for a in exp32.out_avals) == ["float32", "int32", "int32"]
    assert [a.shape for a in exp32.in_avals] == [a.shape for a in exported.in_avals]
    assert exp32.in_tree == exported.in_tree and exp32.out_tree == exported.out_tree
    assert exp32.platforms == exported.platforms and exp32.nr_devices == exported.nr_devices
    assert exp32.calling_convention_version == exported.calling_convention_version
    assert exp32.module_kept_var_idx == exported.module_kept_var_idx
    assert exp32.ordered_effects == exported.ordered_effects
    assert exp32.in_shardings_hlo == exported.in_shardings_hlo

    x, labels, w = _inputs()
    ref = exported.call(x, labels, w)
    got = exp32.call(x.astype(np.float32), labels.astype(np.int32), w.astype(np.float32))
    assert got["first_wrong"].dtype == np.int32 and got["count"].dtype == np.int32
    assert int(got["count"]) == int(_narrowed(ref["count"])) == int(ref["count"])  # fits int32
    np.testing.assert_array_equal(got["first_wrong"], _narrowed(ref["first_wrong"]))
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-5)


def test_sentinel_survives_the_round_trip(tmp_path: Path) -> None:
    """All labels right: first_wrong is INT64_MAX in the x64 artifact, INT32_MAX after."""
    def f(labels):
        idx = jnp.arange(labels.shape[0], dtype=jnp.int64)
        return jnp.min(jnp.where(labels < 0, idx, I64.max))

    exp = jax.export.export(jax.jit(f), platforms=["cpu"])(
        jax.ShapeDtypeStruct((4,), np.int64))
    module = no64.io.load(bytes(exp.serialize()))
    report = no64.demote(module)
    assert report.count("sentinel") >= 1
    exp32 = jax.export.deserialize(bytearray(no64.io.dumps(module, "jaxexport")))
    assert int(exp.call(np.arange(4))) == I64.max
    assert int(exp32.call(np.arange(4, dtype=np.int32))) == np.iinfo(np.int32).max


def test_writing_an_artifact_needs_one_as_input(exported: jax.export.Exported) -> None:
    module = no64.io.load(bytes(exported.mlir_module_serialized))
    with pytest.raises(no64.io.OutputError, match="calling convention"):
        no64.io.dumps(module, "jaxexport")
    assert no64.io.format_from_extension("m.jaxexport") == "jaxexport"


def test_emulated_outputs_are_word_pairs_in_the_artifact(tmp_path: Path, capsys) -> None:
    """An output that needs 64 bits (converted with --policy exact) is declared as its
    shape plus a trailing 2 in the written artifact, and so is a 64-bit input the program
    may need all 64 bits of; calling it with the input's words returns the words of the
    x64 program's result."""
    def hashed(ids, scale):
        return ids.astype(jnp.uint64) * np.uint64(0x9E3779B97F4A7C15) + scale, ids * 2

    specs = (jax.ShapeDtypeStruct((6,), jnp.int32), jax.ShapeDtypeStruct((), jnp.uint64))
    exp = jax.export.export(jax.jit(hashed), platforms=["cpu"])(*specs)
    src, out = tmp_path / "h.jaxexport", tmp_path / "h32.jaxexport"
    src.write_bytes(bytes(exp.serialize()))
    assert cli.main(["convert", str(src), "-o", str(out), "--policy", "exact"]) == 0
    text = capsys.readouterr().out
    assert "come back as [..., 2] word pairs" in text and "inputs [1] enter as [..., 2] word pairs" in text
    converted = jax.export.deserialize(out.read_bytes())
    assert [(a.shape, str(a.dtype)) for a in converted.in_avals] == [((6,), "int32"), ((2,), "uint32")]
    assert [(a.shape, str(a.dtype)) for a in converted.out_avals] == [((6, 2), "uint32"), ((6,), "int32")]
    ids = np.array([0, 1, -1, 2**31 - 1, -(2**31), 12345], np.int32)
    for scale in (np.uint64(2**32 - 1), np.uint64(2**64 - 1), np.uint64(0xC2B2_AE3D_27D4_EB4F)):
        words, doubled = converted.call(ids, no64.split_words(scale))
        expected, expected_doubled = exp.call(ids, scale)
        np.testing.assert_array_equal(no64.join_words(np.asarray(words)), np.asarray(expected))
        np.testing.assert_array_equal(np.asarray(doubled), np.asarray(expected_doubled))


def elapsed_and_buckets(t, ids, keys):
    """Nanosecond timestamps, 64-bit feature ids, 40-bit hash keys."""
    seconds = (t - t[0]) // 10**9
    bucket = (ids * np.int64(-0x61C8_8646_80B5_83EB)) % 1_000_003
    return seconds, bucket, jnp.argmin(keys), jnp.max(keys) - jnp.min(ids)


def test_exact_inputs_round_trip_through_jax_export(tmp_path: Path) -> None:
    """A converted artifact declares every 64-bit input it takes as words with its trailing
    2: ``deserialize(...).call(split_words(x))`` computes what the 64-bit artifact computes,
    bit for bit, on inputs over the whole int64 range; a declared range keeps an input
    32-bit."""
    i32 = np.iinfo(np.int32)
    t = np.array([0, 1, 100, 86_400], np.int64) * 10**9 + 1_700_000_000_123_456_789
    ids = np.array([I64.max, I64.min, i32.max, i32.min, 0x7A3F_12C4_9E01_5B66, -1], np.int64)
    keys = np.array([(1 << 40) - 1, 1 << 39, I64.min, i32.min, 0, 0xFF_FFFF_FFFF], np.int64)
    exp = jax.export.export(jax.jit(elapsed_and_buckets), platforms=["cpu"])(t, ids, keys)
    module = no64.io.load(exp.serialize())
    report = no64.demote(module, policy="exact")
    assert report.emulated_inputs == [0, 1, 2]
    converted = jax.export.deserialize(no64.io.dumps(module, "jaxexport"))
    assert [(a.shape, str(a.dtype)) for a in converted.in_avals] == [((4, 2), "int32"), ((6, 2), "int32"),
                                                                       ((6, 2), "int32")]
    got = converted.call(*(no64.split_words(a) for a in (t, ids, keys)))
    expected = exp.call(t, ids, keys)
    for j, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        if j in report.emulated_outputs:
            g = no64.join_words(g)
        np.testing.assert_array_equal(g.astype(np.asarray(e).dtype), np.asarray(e))
    np.testing.assert_array_equal(no64.join_words(np.asarray(got[0])), [0, 1, 100, 86_400])
    # with the ids declared to fit, they enter as int32
    module = no64.io.load(exp.serialize())
    report = no64.demote(module, policy="exact", input_ranges={1: (-5, 5)})
    assert report.emulated_inputs == [0, 2]
    converted = jax.export.deserialize(no64.io.dumps(module, "jaxexport"))
    assert [(a.shape, str(a.dtype)) for a in converted.in_avals] == [((4, 2), "int32"), ((6,), "int32"),
                                                                       ((6, 2), "int32")]
    small = np.array([-5, 5, 0, 1, -1, 3], np.int64)
    got = converted.call(no64.split_words(t), small.astype(np.int32), no64.split_words(keys))
    expected = exp.call(t, small, keys)
    for j, (g, e) in enumerate(zip(got, expected)):
        g = no64.join_words(np.asarray(g)) if j in report.emulated_outputs else np.asarray(g)
        np.testing.assert_array_equal(g.astype(np.asarray(e).dtype), np.asarray(e))


def native_step(ids, x, unused):
    """64-bit integer math that wraps (the x64 program's), a float64 sum, an int64
    argument JAX drops as unused."""
    return ids * np.int64(3_000_000_007) + 1, jnp.sum(x) * 2.0, jnp.cumsum(ids), jnp.argmax(ids)


@pytest.mark.parametrize("target,extra", [("mtl", []), ("neuron-trn2", []),
                                          ("mtl", ["--float-policy", "pairs"]),
                                          ("neuron-trn2", ["--policy", "exact"])])
def test_native_target_artifact_is_called_as_its_module_takes(tmp_path: Path, target: str,
                                                              extra: list[str]) -> None:
    """A target with native 64-bit integers keeps them in the module: the converted
    artifact declares them int64 too (float64 as float32, or as f32 pairs), and
    ``deserialize(...).call(...)`` computes the 64-bit artifact's integers bit for bit
    on adversarial values (wrapping products, the int64 extremes)."""
    specs = (jax.ShapeDtypeStruct((5,), np.int64), jax.ShapeDtypeStruct((3,), np.float64),
             jax.ShapeDtypeStruct((2,), np.int64))
    exp = jax.export.export(jax.jit(native_step), platforms=["cpu"])(*specs)
    assert exp.module_kept_var_idx == (0, 1)  # the third argument is not in the module
    src, dest = tmp_path / "n.jaxexport", tmp_path / "n32.jaxexport"
    src.write_bytes(bytes(exp.serialize()))
    assert cli.main(["convert", str(src), "-o", str(dest), "--target", target, *extra]) == 0
    converted = jax.export.deserialize(bytearray(dest.read_bytes()))
    pairs = "pairs" in extra
    x_aval = ((3, 2), "float32") if pairs else ((3,), "float32")
    assert [(a.shape, str(a.dtype)) for a in converted.in_avals] == [((5,), "int64"), x_aval, ((2,), "int64")]
    assert [str(a.dtype) for a in converted.out_avals] == ["int64", "float32", "int64", "int64"]
    ids = np.array([I64.max, I64.min, 2**40 + 3, -1, 3_074_457_345_618_258_602], np.int64)
    x = np.array([1e8, 1 / 1024, -2.5])
    unused = np.array([I64.min, 7], np.int64)
    got = converted.call(ids, no64.split_pairs(x) if pairs else x.astype(np.float32), unused)
    want = exp.call(ids, x, unused)
    for j in (0, 2, 3):
        np.testing.assert_array_equal(np.asarray(got[j]), np.asarray(want[j]))
    total = no64.join_pairs(np.asarray(got[1])) if pairs else float(got[1])
    if pairs:  # 2 * (1e8 + 1/1024 - 2.5) within the pairs' bound
        assert abs(total - float(want[1])) <= 2**-44 * abs(float(want[1]))
    else:  # computed in float32
        assert abs(total - float(want[1])) <= 2**-22 * abs(float(want[1]))
