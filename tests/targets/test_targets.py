"""Device profiles (no64.targets) and what a module holds that a device refuses or
computes inexactly (no64.targets.legality, `no64 check --target`, the compile hook
under NO64_TARGET), with Neuron's f32 integer datapath simulated on the CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from no64.cli import main
from no64.targets import BUILT_IN, TARGETS, Target, profiles_table, register, target, target_for_platform
from no64.targets.legality import check_target
from support import enable_x64, ir, make_context

RNG = np.random.default_rng(0)


def lowered(f, *args, x64: bool = False) -> ir.Module:
    with enable_x64(x64):
        text = jax.jit(f).lower(*args).as_text(debug_info=True)
    return ir.Module.parse(text, make_context())


def kinds(findings) -> list[tuple[str, str, str]]:
    return [(f.kind, f.op, f.code) for f in findings]


def f32_datapath_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An integer matmul as Neuron's engine computes it (EVRF035): operands and every
    partial sum in f32, accumulated in order along the contraction."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    for k in range(a.shape[1]):
        acc = (acc + np.outer(fa[:, k], fb[k, :]).astype(np.float32)).astype(np.float32)
    return acc.astype(np.int64)


def test_profiles_are_data_with_sources() -> None:
    for name in ("generic", "neuron", "neuron-trn2", "mtl", "mps", "iree-vulkan", "coreml", "litert", "tt"):
        t = target(name)
        assert t.description and (t.sources or name == "generic"), name
        for entry in (*t.refuses, *t.datapaths):
            assert entry.reason and entry.source, (name, entry)
    assert target("neuron-trn2").native >= {"i64", "u64"} and target("mtl").native >= {"i64", "u64"}
    assert not target("neuron").native and not target("generic").refuses
    assert target_for_platform("neuron").name == "neuron" and target_for_platform("cpu").name == "generic"
    with pytest.raises(ValueError, match="unknown target 'nope'; known: .*neuron"):
        target("nope")
    with pytest.raises(ValueError, match="declared twice"):
        register(Target("neuron", "again"))
    assert "neuron" in TARGETS


def test_integer_dot_on_neurons_f32_datapath() -> None:
    """An int32 dot whose products and sums may pass 2**24 is inexact on Neuron (the
    simulated f32 engine gets it wrong on such data); one whose operands are masked to
    4 bits (15 * 15 * 128 < 2**24) is proven exact (and the simulation agrees, at the
    extremes of the masked range); Trn2 refuses integer dots outright (EVRF035)."""
    a = RNG.integers(-5000, 5000, (8, 128), dtype=np.int32)
    b = RNG.integers(-5000, 5000, (128, 4), dtype=np.int32)
    wide = lowered(lambda a, b: a @ b, a, b)
    found = check_target(wide, target("neuron"))
    assert kinds(found) == [("inexact", "stablehlo.dot_general", "EVRF035")]
    assert found[0].location.file == __file__ and "2**24" in found[0].detail
    exact = a.astype(np.int64) @ b.astype(np.int64)
    assert (f32_datapath_dot(a, b) != exact).any()  # not vacuous: the datapath is wrong here

    masked = lowered(lambda a, b: (a & 15) @ (b & 15), a, b)
    assert check_target(masked, target("neuron")) == []
    full = np.full((8, 128), 15, np.int32), np.full((128, 4), 15, np.int32)
    np.testing.assert_array_equal(f32_datapath_dot(*full), full[0].astype(np.int64) @ full[1])
    assert kinds(check_target(masked, target("neuron-trn2"))) == [("refused", "stablehlo.dot_general", "EVRF035")]
    assert check_target(wide, target("generic")) == [] and check_target(wide, target("mtl")) == []


def test_forms_a_target_refuses() -> None:
    """argmax's variadic reduce and reduce_precision are refused on Neuron (its JAX known
    issues), a sort with an LT comparator is not; a combining scatter of int64 elements
    is refused on Apple's mtl (32-bit atomics) unless its indices are unique."""
    x = np.zeros(8, np.float32)
    assert kinds(check_target(lowered(lambda x: jnp.argmax(x), x), target("neuron"))) == [
        ("refused", "stablehlo.reduce", "")]
    assert check_target(lowered(lambda x: jnp.argmax(x), x), target("mtl")) == []
    rp = check_target(lowered(lambda x: jax.lax.reduce_precision(x, 5, 10), x), target("neuron"))
    assert kinds(rp) == [("refused", "stablehlo.reduce_precision", "")]
    assert check_target(lowered(lambda x: jnp.sort(x), np.zeros(8, np.int32)), target("neuron")) == []
    idx, vals = np.array([0, 2, 2]), np.array([1, 2, 3], np.int64)
    scatter = lowered(lambda i, v: jnp.zeros(4, jnp.int64).at[i].add(v), idx, vals, x64=True)
    mtl = check_target(scatter, target("mtl"))
    assert kinds(mtl) == [("refused", "stablehlo.scatter", "")] and "64-bit atomics" in mtl[0].detail
    unique = lowered(lambda i, v: jnp.zeros(4, jnp.int64).at[i].add(v, unique_indices=True), idx, vals, x64=True)
    assert check_target(unique, target("mtl")) == []


def test_types_a_target_lacks() -> None:
    """int64 values are findings for Neuron (Trn1) but not for Trn2 or mtl; float64
    is a finding for all three."""
    m = lowered(lambda a: (a * 2, a.astype(jnp.float64)), np.arange(3, dtype=np.int64), x64=True)
    by = {name: {f.detail.split(" is ")[1].split(",")[0] for f in check_target(m, target(name))
                 if f.kind == "type"} for name in ("neuron", "neuron-trn2", "mtl")}
    assert any("i64" in t for t in by["neuron"])
    for name in ("neuron-trn2", "mtl"):
        assert not any("i64" in t for t in by[name]) and any("f64" in t for t in by[name]), by


def test_complex64_is_no_64_bit_type() -> None:
    """complex64 (complex<f32>) is no type a profile lacks; complex128 is one for all."""
    c64 = lowered(lambda x: x * (1 + 2j), np.ones(3, np.complex64))
    c128 = lowered(lambda x: x * (1 + 2j), np.ones(3, np.complex128), x64=True)
    for name in ("generic", "neuron", "mtl"):
        assert not [f for f in check_target(c64, target(name)) if f.kind == "type"], name
        assert any("complex<f64>" in f.detail for f in check_target(c128, target(name)) if f.kind == "type")


def test_check_target_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = np.zeros((8, 128), np.int32), np.zeros((128, 4), np.int32)
    path = tmp_path / "mm.mlir"
    with enable_x64(False):
        path.write_text(jax.jit(lambda a, b: (a @ b, jnp.argmax(a, axis=1))).lower(a, b).as_text(debug_info=True))
    code = main(["check", "--target", "neuron", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    assert "inexact [EVRF035]" in out and "refused: variadic reductions" in out
    assert out.strip().splitlines()[-1] == f"{path}: 2 findings for target neuron (1 inexact, 1 refused)"
    assert f"{__file__}:" in out  # the user's line
    assert main(["check", "--target", "mtl", str(path)]) == 0
    assert "nothing target mtl refuses" in capsys.readouterr().out
    assert main(["check", "--target", "nope", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("no64: error: check: unknown target 'nope'")


SCRIPT = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    a = np.full((8, 128), 4000, np.int32); b = np.arange(128 * 4, dtype=np.int32).reshape(128, 4)
    for f, args in ((lambda a, b: a @ b, (a, b)),  # DOT LINE
                    (lambda b: jnp.argmax(b, axis=0), (b,)),  # ARGMAX LINE
                    (lambda a: jax.lax.reduce_precision(a * 1.0, 8, 7)  # ROUNDED LINE
                     + jax.lax.reduce_precision(a.astype(jnp.float16), 5, 2).astype(jnp.float32), (a,)),
                    (lambda a: jax.lax.top_k(a, 1)[0], (a,))):  # REFUSED LINE
        try:
            print(int(np.asarray(jax.jit(f)(*args)).flat[0]))
        except Exception as exc:
            print(type(exc).__name__, str(exc).splitlines()[0])
""")


@pytest.mark.parametrize("policy", ["default", "strict"])
def test_hook_checks_the_platforms_profile(tmp_path: Path, policy: str) -> None:
    """NO64_TARGET=neuron (the CPU standing in for a Neuron device): the user's own int32
    matmul, whose sums may pass 2**24, is split into limb dots exact on the f32 engine
    (no finding, its exact result); argmax's variadic reduce is unfolded into its body on
    halves (no finding, its result); reduce_precision of f32 and of f16, rounded on their
    bits (no finding, their result: 4000 and 4096); an int32 top_k, which has no form
    Neuron compiles (EVRF013), is a TargetWarning at its line under default and a
    TargetError under strict."""
    script = tmp_path / "mm.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", NO64_TARGET="neuron", NO64_POLICY=policy, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-W", "always", str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = next(i for i, t in enumerate(SCRIPT.splitlines(), 1) if "REFUSED LINE" in t)
    dot, argmax, on_bits, rounded = proc.stdout.strip().splitlines()
    assert dot == str(4000 * sum(range(0, 512, 4))) and "EVRF035" not in proc.stderr
    assert argmax == "127" and "variadic" not in proc.stderr
    on_bits_line = next(i for i, t in enumerate(SCRIPT.splitlines(), 1) if "ROUNDED LINE" in t)
    assert on_bits == str(4000 + 4096) and f"mm.py:{on_bits_line}:" not in proc.stderr
    if policy == "default":
        assert rounded == "4000"
        assert f"mm.py:{line}: TargetWarning: " in proc.stderr and "EVRF013" in proc.stderr
    else:
        assert rounded.startswith("TargetError no64 (NO64_POLICY=strict) refuses"), rounded
        assert f"mm.py:{line}:" in rounded and "top_k" in rounded


def test_an_unknown_target_fails_closed(tmp_path: Path) -> None:
    """NO64_TARGET names a profile or nothing runs: the first compile raises
    ConfigurationError naming the variable, the value and the choices."""
    script = tmp_path / "mm.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", NO64_TARGET="nope", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ConfigurationError no64: NO64_TARGET='nope' is not one of "), proc.stdout
    assert "neuron" in proc.stdout and "mtl" in proc.stdout



def test_the_reference_page_is_the_declaration() -> None:
    """docs/reference/targets.md holds every built-in profile's entries, each with
    its code and source, as made from the declaration."""
    page = (Path(__file__).parents[2] / "docs" / "reference" / "targets.md").read_text()
    generated = page.split("<!-- generated from no64.targets.TARGETS: do not edit by hand -->\n", 1)[1]
    generated = generated.split("<!-- end of generated profiles -->", 1)[0]
    assert generated == profiles_table()
    for name in BUILT_IN:
        t = target(name)
        assert f"### `{name}`" in generated
        for entry in (*t.refuses, *t.datapaths):
            assert f"`{entry.form.value}` | {entry.code or '-'} | {entry.reason} | {entry.source} |" in generated
        for w in t.widens:
            assert f"| carries `{w.narrow}` as `{w.wide}`" in generated and w.source in generated


def test_arithmetic_profiles() -> None:
    """Every profile declares its f32 arithmetic: IEEE's unless said; Neuron
    rounds to nearest and names the switch to stochastic rounding; the TPU
    v5e's measured values are one constant for its profile."""
    from no64.targets import IEEE_ARITHMETIC, TPU_V5E_ARITHMETIC, Arithmetic

    assert target("generic").arithmetic == IEEE_ARITHMETIC == Arithmetic()
    assert IEEE_ARITHMETIC.ieee_quotients and IEEE_ARITHMETIC.rounding == "nearest"
    for name in ("neuron", "neuron-trn2"):
        a = target(name).arithmetic
        assert a.rounding == "nearest" and "NEURON_RT_STOCHASTIC_ROUNDING_EN" in a.rounding_switch
    t = TPU_V5E_ARITHMETIC
    assert (t.divide_ulp, t.sqrt_ulp, t.flushes_subnormals, t.contracts_fma) == (2.0, 3.0, True, False)
    assert t.add_rounded and t.multiply_rounded and not t.ieee_quotients
    assert dict(t.transcendental_ulp)["log"] == 4030.5
    for bad in (dict(rounding="up"), dict(divide_ulp=0.25), dict(sqrt_ulp=float("nan"))):
        with pytest.raises(ValueError, match="Arithmetic"):
            Arithmetic(**bad)  # type: ignore[arg-type]
