"""no64.transforms.widen through no64.transforms.legalize: int16/uint16 programs converted
for Neuron (no 16-bit integer datapath: 16-bit integers carried as 32-bit ones), checked to
hold no 16-bit integer type but at the entry's boundary, run on the CPU and compared bit for
bit with the same program run without no64 -- on wrapping arithmetic, shifts by 0..40 of
negative values, bit counts, division by 0 and -1, converts from int32 and float32 (NaN,
infinities, out of range), sorts, cumulative sums, scatter-adds and reductions that wrap; and
the refusal of what cannot be carried exactly (an int16 <-> f16 bitcast)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.cli import main
from no64.errors import UnsupportedOpError
from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import enable_x64, ir, make_context, with_support

NEURON = target("neuron")
I16 = np.array([0, 1, -1, 2, -2, 300, -300, 255, 256, 32767, -32768, 32766, -32767, 12345, -12345, 181],
               np.int16)
U16 = I16.view(np.uint16)


def lowered(f: Callable[..., Any], *args: Any) -> ir.Module:
    return ir.Module.parse(jax.jit(f).lower(*args).as_text(debug_info=True), make_context())


def narrow_types(m: ir.Module) -> list[str]:
    """The 16-bit integer values of ``m`` other than the entry's arguments and the
    converts that return its results."""
    found = []

    def walk(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                is_entry = op.operation.name == "func.func"
                for a in block.arguments:
                    if "i16" in str(a.type) and not is_entry:
                        found.append(f"argument {a.type} of {op.operation.name}")
                for inner in block.operations:
                    for r in inner.results:
                        if "i16" not in str(r.type):
                            continue
                        users = [u.owner.operation.name for u in r.uses]
                        if inner.operation.name == "stablehlo.convert" and users and set(users) == {"func.return"}:
                            continue
                        found.append(f"{inner.operation.name}: {r.type}")
                    walk(inner)

    walk(m.operation)
    return found


def widened(m: ir.Module, target_name: str = "neuron") -> ir.Module:
    copy = ir.Module.parse(str(m), make_context())
    assert narrow_types(copy), "not vacuous: the module holds 16-bit integers"
    done = legalize(copy, target(target_name))
    assert not done.left, [str(x) for x in done.left]
    assert done.widened_values and "16-bit integers carried in 32 bits" in done.summary()
    assert not narrow_types(copy), narrow_types(copy)
    assert not [f for f in check_target(copy, target(target_name)) if f.kind == "type" and "16-bit" in f.detail]
    return copy


def same_bits(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
        np.testing.assert_array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8),
                                      err_msg=f"{x} != {y}")


def exposed(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f``, each 16-bit integer result also returned as f32: the 32-bit value the device
    holds is read whole inside the program (the entry's convert back to 16 bits would
    truncate a value the widening left outside the 16-bit range)."""
    def g(*args: Any) -> list[jax.Array]:
        out = []
        for r in jax.tree_util.tree_leaves(f(*args)):
            out.append(r)
            if r.dtype in (jnp.int16, jnp.uint16):
                out.append(r.astype(jnp.float32))
        return out
    return g


def check(f: Callable[..., Any], *inputs: np.ndarray, target_name: str = "neuron") -> ir.Module:
    """``f`` widened for the target, compared bit for bit with ``f`` on the CPU."""
    m = lowered(exposed(f), *inputs)
    w = widened(m, target_name)
    same_bits(compile_module(w, strict=False)(list(inputs)), compile_module(m, strict=False)(list(inputs)))
    return w


def pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of ``values``, as two flat arrays."""
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.reshape(-1), b.reshape(-1)


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_wrapping_arithmetic(values: np.ndarray) -> None:
    """INT16_MAX + 1, INT16_MIN * -1, 300 * 300, -INT16_MIN, abs(INT16_MIN): the 16-bit wrap-around."""
    a, b = pairs(values)
    check(lambda x, y: (x + y, x - y, x * y, -x, jnp.abs(x) if x.dtype == jnp.int16 else x,
                        x & y, x | y, x ^ y, ~x, jnp.maximum(x, y), jnp.minimum(x, y), x < y, x == y,
                        jnp.clip(x, y, 1000), jnp.where(x > y, x, y)), a, b)


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_chains_wrap_once(values: np.ndarray) -> None:
    """A chain of adds, subtracts, multiplies and negations is wrapped once, where a value
    leaves it (each intermediate agrees with the 16-bit one modulo 2**16), and read by
    compares, divisions, shifts and converts in between."""
    a, b = pairs(values)

    def f(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
        p = -(x * y + x) * 7 - y
        q = p * p + 12345
        return q, p < q, lax.div(q, y | 1), q >> 3, (x * y).astype(jnp.int32), x * y + x < y

    m = check(f, a, b)
    text = str(m)
    # 10 ring ops of 16-bit results, each wrapped were every one wrapped; only those read by
    # something other than a ring op are
    wraps = text.count("stablehlo.shift_left") if values.dtype == np.int16 else text.count("stablehlo.and")
    assert wraps <= 5, text


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_division_and_remainder(values: np.ndarray) -> None:
    """Division and remainder by every value, INT16_MIN / -1 and x / 0 among them."""
    a, b = pairs(values)
    check(lambda x, y: (lax.div(x, y), lax.rem(x, y)), a, b)


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_shifts(values: np.ndarray) -> None:
    """Shifts by 0, 1, 15, 16, 17, 31, 40 (and negative amounts) of negative values:
    logical, arithmetic, left."""
    amounts = np.array([0, 1, 15, 16, 17, 31, 40, 65535, 32768, 2], np.uint16).astype(values.dtype)
    x, s = (g.reshape(-1) for g in np.meshgrid(values, amounts, indexing="ij"))
    check(lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s),
                        lax.shift_right_arithmetic(x, s)), x, s)


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_bit_counts(values: np.ndarray) -> None:
    check(lambda x: (lax.population_count(x), lax.clz(x)), values)


def test_converts_to_16_bits() -> None:
    """From int32 (truncated and wrapped), uint32, float32 (NaN, infinities, out of range:
    saturated as XLA's CPU gives), f16, and between int16 and uint16."""
    i32 = np.array([0, 1, -1, 32767, 32768, -32768, -32769, 65535, 65536, 70000, -70000, 2**31 - 1, -2**31,
                    123456789, -123456789, 40000], np.int32)
    f32 = np.array([np.nan, np.inf, -np.inf, 40000.0, -40000.0, 1e10, -1e10, 3.7, -3.7, 32767.9, -32768.9,
                    65535.5, 70000.0, -1.0, -0.0, 0.5], np.float32)
    check(lambda i, f: (i.astype(jnp.int16), i.astype(jnp.uint16), i.astype(jnp.uint32).astype(jnp.int16),
                        f.astype(jnp.int16), f.astype(jnp.uint16), f.astype(jnp.float16).astype(jnp.int16),
                        f.astype(jnp.bfloat16).astype(jnp.uint16),
                        i.astype(jnp.int16).astype(jnp.uint16), i.astype(jnp.uint16).astype(jnp.int16),
                        lax.bitcast_convert_type(i.astype(jnp.int16), jnp.uint16),
                        i.astype(jnp.int16).astype(jnp.float32), i.astype(jnp.uint16).astype(jnp.int32),
                        i.astype(jnp.int16).astype(jnp.uint32), i.astype(jnp.int16).astype(jnp.int8)), i32, f32)


@pytest.mark.parametrize("values", [I16, U16], ids=["int16", "uint16"])
def test_sort_argmax_cumsum_scatter_reduce(values: np.ndarray) -> None:
    """Sorts, argmax, cumulative sums, scatter-adds and sums that wrap, iota and constants."""
    idx = np.array([0, 1, 0, 2, 1, 0, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3], np.int32)

    def f(x: jax.Array, i: jax.Array) -> tuple[jax.Array, ...]:
        dt = x.dtype
        return (jnp.sort(x), jnp.argmax(x), jnp.argmin(x), jnp.cumsum(x, dtype=dt), jnp.sum(x, dtype=dt),
                jnp.prod(x[:6], dtype=dt), jnp.zeros(4, dt).at[i].add(x), jnp.max(x), x[i],
                jnp.arange(16, dtype=dt) * x + jnp.asarray([7, -3, 30000, 4] * 4).astype(dt),
                lax.dynamic_slice(x, (x[3].astype(jnp.int32) % 8,), (4,)), jnp.argsort(x))

    check(f, values, idx)


def test_while_loop_and_private_call() -> None:
    """A loop carrying int16 that wraps, and a private function of int16."""
    @jax.jit
    def g(x: jax.Array) -> jax.Array:
        return x * 3 + 1

    def f(x: jax.Array) -> jax.Array:
        return lax.fori_loop(0, 7, lambda _, v: g(v) - x, x)

    check(f, I16)


def test_neuron_trn2_widens_too() -> None:
    a, b = pairs(I16[:8])
    check(lambda x, y: x * y + y, a, b, target_name="neuron-trn2")


def test_bitcast_to_f16_is_refused() -> None:
    """An int16 <-> f16 bitcast reads the 16-bit pattern: refused, the module unchanged."""
    m = lowered(lambda x: lax.bitcast_convert_type(x + 1, jnp.float16), I16)
    before = str(m)
    with pytest.raises(UnsupportedOpError, match=r"stablehlo.bitcast_convert at .*test_widen16.py:\d+.*"
                                                 r"target neuron has no 16-bit integers.*f16"):
        legalize(m, NEURON)
    assert str(m) == before


def test_check_target_reports_16_bit_integers() -> None:
    """A module not converted holds 16-bit integers, which Neuron lacks; after legalize only
    the entry's boundary does, which the check allows; a target that has them finds none."""
    m = lowered(lambda x: x * x, I16)
    found = [f for f in check_target(m, NEURON) if f.kind == "type"]
    assert found and all("16-bit integer" in f.detail for f in found), [str(f) for f in found]
    assert any("stablehlo.multiply" == f.op and "test_widen16.py" in str(f) for f in found), [str(f) for f in found]
    assert not [f for f in check_target(m, target("mtl")) if f.kind == "type"]
    legalize(m, NEURON)
    assert not [str(f) for f in check_target(m, NEURON) if f.kind == "type"]


def test_demote_jit_and_convert_for_neuron(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``no64.demote(..., target="neuron")``, ``no64.jit(target="neuron")`` and ``no64 convert
    --target neuron`` widen too; widening a widened module changes nothing."""
    def f(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        y = x * x + 1
        return y, y.astype(jnp.float32)

    m = lowered(f, I16)
    ref = compile_module(m, strict=False)([I16])
    report = no64.demote(m, target="neuron")
    assert not narrow_types(m)
    assert any("16-bit integers carried in 32 bits" in e.detail for e in report.events)
    same_bits(compile_module(m, strict=False)([I16]), ref)
    before = str(m)
    again = legalize(m, NEURON)
    assert not again.rewritten and not again.widened_values and str(m) == before

    jitted = no64.jit(f, target="neuron")
    same_bits(jax.tree_util.tree_leaves(jitted(I16)), ref)
    assert not narrow_types(ir.Module.parse(jitted.lower(I16).as_text(), make_context()))

    src, out = tmp_path / "i16.mlir", tmp_path / "out.mlir"
    src.write_text(str(lowered(f, I16)))
    assert main(["check", str(src), "--target", "neuron"]) == 1
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron"]) == 0
    assert "16-bit integers carried in 32 bits" in capsys.readouterr().out
    converted = ir.Module.parse(out.read_text(), make_context())
    assert not narrow_types(converted)
    same_bits(compile_module(converted, strict=False)([I16]), ref)
    assert main(["check", str(out), "--target", "neuron"]) == 0


def test_x64_program_with_int16_converted_for_neuron() -> None:
    """An x64 program mixing int16 with int64 (widened and wrapped back), converted for
    Neuron by ``no64.demote`` (int64 narrowed or emulated, int16 carried in 32 bits),
    against the x64 program run without no64, bit for bit."""
    def f(x: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
        big = x.astype(jnp.int64) * w + 70000
        return (big.astype(jnp.int16), (big.astype(jnp.int16) * 3) >> 1, jnp.sum(x, dtype=jnp.int16),
                big > 0)

    # products within int32 (the int64 values are narrowed, not emulated), past int16 (wrapped)
    w = np.array([1, -1, 2**15, 3, -(2**15), 7, 0, 32767, 1, -1, 5, 30000, -3, 9, 11, 13], np.int64)
    with enable_x64(True):
        m = lowered(f, I16, w)
        ref = compile_module(m, strict=False)([I16, w])
    report = no64.demote(m, target="neuron")
    assert not narrow_types(m) and not report.emulated_inputs
    assert any("16-bit integers carried in 32 bits" in e.detail for e in report.events)
    w32 = w.astype(np.int32)
    got = compile_module(m, strict=True)([I16, w32])
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r).astype(np.asarray(g).dtype))
        assert np.asarray(g).dtype.itemsize == min(np.asarray(r).dtype.itemsize, 4)


def test_a_custom_call_of_16_bit_integers_is_refused() -> None:
    """A custom_call receives the 16-bit data as its callee expects it: refused, the module
    unchanged; a 32-bit one beside 16-bit values is not in the way."""
    text = """
    func.func public @main(%x: tensor<4xi16>, %y: tensor<4xi32>) -> (tensor<4xi16>, tensor<4xi32>) {
      %s = stablehlo.add %x, %x : tensor<4xi16>
      %c = stablehlo.custom_call @user_kernel(%s) : (tensor<4xi16>) -> tensor<4xi16>
      %d = stablehlo.custom_call @user_kernel(%y) : (tensor<4xi32>) -> tensor<4xi32>
      return %c, %d : tensor<4xi16>, tensor<4xi32>
    }"""
    m = ir.Module.parse(text, make_context())
    before = str(m)
    with pytest.raises(UnsupportedOpError, match=r"stablehlo.custom_call at .*target neuron has no 16-bit "
                                                 r"integers; custom_call @user_kernel"):
        legalize(m, NEURON)
    assert str(m) == before
    ok = ir.Module.parse(text.replace("(%s) : (tensor<4xi16>) -> tensor<4xi16>", "(%y) : (tensor<4xi32>) -> "
                                      "tensor<4xi32>").replace("return %c,", "return %s,"), make_context())
    assert legalize(ok, NEURON).widened_values
    assert not narrow_types(ok)



#: An int16/uint16 program, run by the child under the hook and here as the x64 program.
HOOK_PROGRAM = textwrap.dedent("""
    def f(x, y):
        u, v = x.astype(jnp.uint16), y.astype(jnp.uint16)
        return (x * y, x + y, x - y, -x, (x * y) >> 3, jnp.sum(x * y, dtype=jnp.int16),
                jnp.cumsum(x, dtype=jnp.int16), u * v, u - v, u + v)
""")

HOOK_SCRIPT = textwrap.dedent("""
    import json, re, sys
    import numpy as np, jax, jax.numpy as jnp
    from support import Intercept

    x, y = (np.array(v, np.int16) for v in json.loads(sys.argv[1]))
""") + HOOK_PROGRAM + textwrap.dedent("""
    with Intercept() as seen:
        got = jax.jit(f)(x, y)
        plain = jax.jit(lambda a: a * 3 + 1)(x.astype(np.int32))  # nothing to widen
    narrow = [line.strip() for line in seen.modules[0].splitlines()
              if re.search(r"stablehlo\\.(multiply|add|subtract|negate|shift_right_arithmetic|reduce)"
                           r".*tensor<[0-9x]*u?i16>", line)]
    print(json.dumps({"results": [np.asarray(r).astype(np.int64).tolist() for r in got],
                      "dtypes": [str(r.dtype) for r in got], "narrow": narrow,
                      "plain_unchanged": seen.modules[1] == jax.jit(lambda a: a * 3 + 1)
                      .lower(x.astype(np.int32)).as_text(),
                      "plain": np.asarray(plain).tolist()}))
""")


@pytest.mark.parametrize("target_name", ["neuron", "neuron-trn2"])
def test_the_hook_widens_a_module_without_64_bit_values(tmp_path: Path, target_name: str) -> None:
    """``NO64_TARGET=neuron``/``neuron-trn2``: the compile hook carries the 16-bit integers of
    a module that holds no 64-bit value in 32 bits too (the backend receives no 16-bit
    arithmetic), with the wrap-around of the x64 program run without no64 (300 * 300,
    INT16_MIN * -1, INT16_MAX + 1, sums and running sums that wrap, uint16 borrows), bit for
    bit; a module with nothing to widen reaches the backend as JAX lowered it."""
    a, b = pairs(I16[:8:2].copy()), pairs(I16[9:].copy())
    x, y = np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])
    script = tmp_path / "i16.py"
    script.write_text(HOOK_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", NO64_TARGET=target_name, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(script), json.dumps([x.tolist(), y.tolist()])],
                          env=with_support(env), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["narrow"] == [], out["narrow"]
    program: dict[str, Any] = {"jnp": jnp}
    exec(HOOK_PROGRAM, program)
    with enable_x64(True):
        ref = jax.jit(program["f"])(x, y)
    assert out["dtypes"] == [str(r.dtype) for r in ref]
    for got, want in zip(out["results"], ref, strict=True):
        np.testing.assert_array_equal(np.asarray(got, np.int64), np.asarray(want).astype(np.int64))
    assert out["plain_unchanged"] and out["plain"] == (x.astype(np.int64) * 3 + 1).tolist()
