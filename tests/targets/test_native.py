"""Targets with native 64-bit integers (``mtl``, ``neuron-trn2``): only what
the device lacks is removed.

Their profiles keep ``i64``/``u64``: the pass narrows float64 (and
complex128) and leaves every 64-bit integer as it is, so nothing is
emulated and width-dependent integer ops (shifts by 32, ``popcnt``,
composite sort keys, 64-bit hashes) run as the x64 program runs them.
Checked against the x64 program on the CPU (which has int64): integers bit
for bit on full 64-bit inputs, floats within float32's rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import compare_with_reference, lower_x64
from no64.targets import TARGETS
from programs import PROGRAMS, Program

#: The profiles that keep 64-bit integers and not float64 (``tpu`` keeps every 64-bit type:
#: tests/targets/test_tpu.py).
NATIVE_INT = [name for name, t in TARGETS.items() if {"i64", "u64"} <= t.native and "f64" not in t.native]
I64 = np.iinfo(np.int64)


def test_the_profiles_that_keep_64_bit_integers() -> None:
    assert sorted(NATIVE_INT) == ["mtl", "neuron-trn2"]
    for name in NATIVE_INT:
        assert "f64" not in TARGETS[name].native


def _width_dependent(a: jax.Array, b: jax.Array, x: jax.Array) -> tuple[jax.Array, ...]:
    h = (a.astype(jnp.uint64) * jnp.uint64(0x9E3779B97F4A7C15)) ^ (b.astype(jnp.uint64) >> 7)
    keys = jnp.argsort((a << 32) + b)                  # composite keys
    return (h % 1000003, keys, lax.population_count(a), lax.clz(b), a >> 40,
            jnp.cumsum(a), jnp.sum(x * 2.0), (a * b) // 7)


def _full_range_args() -> tuple[np.ndarray, ...]:
    a = np.array([-1, 2**40 + 5, 3, I64.max, I64.min, 2**31, -(2**31) - 1, 0], np.int64)
    b = np.array([7, 1, 2**33, -5, 2**62, I64.max, 2**32 - 1, I64.min], np.int64)
    x = np.array([1.5, 2.5, 1e-3, -0.0, 3.25, 1e30, -7.0, 0.125])
    return a, b, x


@pytest.mark.parametrize("name", NATIVE_INT)
def test_width_dependent_integers_run_as_the_x64_program(name: str) -> None:
    result = compare_with_reference(_width_dependent, _full_range_args(), target=name)
    assert all(o.ok for o in result.outputs), result.summary()
    report = result.report
    # nothing emulated, no integer narrowed: only float64 was retyped
    assert report.ops_emulated == 0 and report.values_emulated == 0
    assert report.kept_native == ["i64", "u64"] and report.target == name
    assert set(report.retyped_by_type) == {"f64"}, report.retyped_by_type
    text = str(result.demoted)
    assert "xi64>" in text and "xui64>" in text and "f64" not in text
    # the integers really needed 64 bits: the ordinary conversion emulates them
    plain = no64.demote(lower_x64(_width_dependent, *_full_range_args()), policy="exact")
    assert plain.ops_emulated > 0


@pytest.mark.parametrize("name", NATIVE_INT)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_for_a_native_int64_target(program: Program, name: str,
                                                 request: pytest.FixtureRequest) -> None:
    if program.needs_devices > 1:
        request.getfixturevalue("cpu_devices")
    args = program.make_args(np.random.default_rng(0))
    result = compare_with_reference(program.fn, args, jit_kwargs=program.jit_kwargs(),
                                    tolerance=program.tolerance, target=name)
    assert all(o.ok for o in result.outputs), result.summary()
    assert result.report.ops_emulated == 0
    assert not any(k in result.report.retyped_by_type for k in ("i64", "ui64", "si64"))
    no64.check(result.demoted, keep=TARGETS[name].native)


def test_the_strict_check_keeps_only_what_the_target_has() -> None:
    module = lower_x64(lambda a, x: (a * 3, x * 2.0), np.arange(3, dtype=np.int64), np.ones(3))
    with pytest.raises(no64.Remaining64BitError):
        no64.check(module, keep=frozenset({"i64"}))   # f64 remains
    no64.demote(module, target="mtl")
    no64.check(module, keep=frozenset({"i64", "u64"}))
    with pytest.raises(no64.Remaining64BitError):
        no64.check(module)                            # i64 remains: not for a device without it
    with pytest.raises(ValueError, match="unknown 64-bit element type"):
        no64.check(module, keep=frozenset({"i65"}))


def test_bitcast_between_float64_and_int64_is_refused_on_a_native_int64_target() -> None:
    # float64 narrows to float32 while int64 stays: the bits would not match
    module = lower_x64(lambda x: lax.bitcast_convert_type(x, jnp.int64), np.array([1.5]))
    with pytest.raises(no64.UnsupportedOpError, match="bitcast_convert"):
        no64.demote(module, target="mtl")


def test_convert_target_keeps_native_integers(tmp_path, capsys) -> None:
    from no64.cli import main

    src = tmp_path / "hash.mlir"
    src.write_text(lower_x64(_width_dependent, *_full_range_args()).operation.get_asm())
    out = tmp_path / "hash.mtl.mlir"
    assert main(["convert", str(src), "-o", str(out), "--target", "mtl"]) == 0
    printed = capsys.readouterr().out
    assert "kept i64, u64 as they are (native on target mtl)" in printed
    text = out.read_text()
    assert "xi64>" in text and "f64" not in text
