"""The compatibility seams: type tests that cannot lie, on every supported jaxlib.

The value, attribute and location tests of no64 go through one helper each
(:mod:`no64.ir._compat`).  These tests check each helper against what the
module's structure says (a block's own argument list, an op's own result
list), never against another type test, and run the program on which a
binding whose ``isinstance(v, ir.BlockArgument)`` answered "no" for a block
argument got a wrong number.  The whole file is in the compatibility subset
(``pytest -m compat``) that CI runs on every supported JAX release.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import no64
from no64.jax.reference import (
    compare_outputs,
    converted_inputs,
    run_module,
    word_pair_inputs,
    word_pair_outputs,
)
from no64.transforms.emulate import join_words
from runner import demoted_unless_refused
from support import ir, ir_compat as _compat, make_context

pytestmark = pytest.mark.compat

# An arithmetic shift of ui64 values: the entry argument reaches the program
# as ui32, so it may hold 2**32 - 1, whose ui32 arithmetic shift keeps the
# top bit set.  A pass that took the argument for an op result called the
# narrowing exact and returned 4294967295 where the program computes 33554431.
SHIFT_UI64 = """
func.func public @main(%x: tensor<6xui64>) -> tensor<6xui64> {
  %c = stablehlo.constant dense<7> : tensor<6xui64>
  %s = stablehlo.shift_right_arithmetic %x, %c : tensor<6xui64>
  return %s : tensor<6xui64>
}"""

# The same shift on a loop-carried value: a region's block argument.
SHIFT_UI64_LOOP = """
func.func public @main(%x: tensor<6xui64>) -> tensor<6xui64> {
  %c = stablehlo.constant dense<7> : tensor<6xui64>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %i0, %v = %x) : tensor<i32>, tensor<6xui64>
    cond {
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %s = stablehlo.shift_right_arithmetic %v, %c : tensor<6xui64>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %s : tensor<i32>, tensor<6xui64>
    }
  return %r#1 : tensor<6xui64>
}"""

UI32_EXTREMES = np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1], dtype=np.uint64)


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


@pytest.mark.parametrize("text", [SHIFT_UI64, SHIFT_UI64_LOOP], ids=["entry-argument", "loop-argument"])
@pytest.mark.parametrize("policy", ["strict", "default", "exact"])
def test_ui64_arithmetic_shift_of_an_argument_is_exact_or_refused(text: str, policy: str) -> None:
    """The miscompile's program: converted, it computes what the 64-bit one
    computes on every 32-bit input (2**32 - 1 >> 7 is 33554431), or it is
    refused and left unchanged."""
    original, m = parse(text), parse(text)
    if demoted_unless_refused(m, policy=policy) is None:
        return
    args = [UI32_EXTREMES]
    ref = run_module(original, args, strict=False)
    assert ref[0][-1] == 33554431  # the reference itself, for the record
    got = run_module(m, converted_inputs(args, word_pair_inputs(original, m)), strict=True)
    wide = word_pair_outputs(original, m)
    for j in wide:
        got[j] = join_words(got[j])
    compare_outputs(ref, got, what=f"ui64 shift under policy {policy!r}", wide=wide)


def _all_ops(m: ir.Module) -> list[ir.Operation]:
    out: list[ir.Operation] = []
    stack = [m.operation]
    while stack:
        op = stack.pop()
        out.append(op)
        for region in op.regions:
            for block in region.blocks:
                stack.extend(o.operation for o in block.operations)
    return out


def test_value_down_casting_agrees_with_the_module_structure() -> None:
    """Every operand is a block argument exactly when it is one of its
    block's arguments, and an op result exactly when its op lists it."""
    m = parse(SHIFT_UI64_LOOP)
    seen_args = seen_results = 0
    for op in _all_ops(m):
        for v in op.operands:
            arg, res = _compat.block_argument(v), _compat.op_result(v)
            owner = v.owner
            if isinstance(owner, ir.Block):
                assert arg is not None and res is None
                assert arg.owner == owner
                assert list(owner.arguments)[arg.arg_number] == v
                seen_args += 1
            else:
                producer = owner if isinstance(owner, ir.Operation) else owner.operation
                assert res is not None and arg is None
                assert list(producer.results)[res.result_number] == v
                seen_results += 1
    assert seen_args >= 3 and seen_results >= 4  # %x, %i, %v; constants, compare, shift, add


def test_attribute_down_casting_and_listing() -> None:
    m = parse(SHIFT_UI64)
    const = next(op for op in _all_ops(m) if op.name == "stablehlo.constant")
    dense = _compat.as_attribute(const.attributes["value"], ir.DenseIntElementsAttr)
    assert dense is not None and dense.is_splat
    assert _compat.as_attribute(const.attributes["value"], ir.StringAttr) is None
    fn = next(op for op in _all_ops(m) if op.name == "func.func")
    attrs = _compat.attribute_dict(fn)
    assert set(attrs) == {"sym_name", "function_type", "sym_visibility"}
    assert ir.StringAttr(attrs["sym_name"]).value == "main"


COMPLEX_CONSTANTS = """
func.func public @main(%x: tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
  %a = stablehlo.constant dense<[(1.5, -2.0), (0x7FF8000000000000, 64.0), (1.0e-300, 3.25e+64)]>
       : tensor<3xcomplex<f64>>
  %b = stablehlo.constant dense<(0.5, 2.0)> : tensor<3xcomplex<f64>>
  %0 = stablehlo.multiply %x, %a : tensor<3xcomplex<f64>>
  %1 = stablehlo.add %0, %b : tensor<3xcomplex<f64>>
  return %1 : tensor<3xcomplex<f64>>
}"""


def test_complex_constant_literals_read_while_the_module_does_not_verify() -> None:
    """The elements of a complex constant are read from its printed form: also while a
    pass has left the module unverified (the printer would then print every op in the
    generic form, whose type ``complex<f64>`` holds a number); splat and not."""
    m = parse(COMPLEX_CONSTANTS)
    constants = [op for op in _all_ops(m) if op.name == "stablehlo.constant"]
    assert [_compat.constant_value(c) for c in constants] == [None, None]  # never read through the bindings
    want = {("dense", "[(1.500000e+00,-2.000000e+00), (0x7FF8000000000000,6.400000e+01), "
                      "(1.000000e-300,3.250000e+64)]"), ("dense", "(5.000000e-01,2.000000e+00)")}
    assert {_compat.constant_literal(c) for c in constants} == want
    # the module no longer verifies: the add's result type differs from its operands'
    add = next(op for op in _all_ops(m) if op.name == "stablehlo.add")
    with m.context, ir.Location.unknown():
        add.results[0].set_type(ir.RankedTensorType.get([3], ir.ComplexType.get(ir.F32Type.get())))
    with pytest.raises(ir.MLIRError):
        m.operation.verify()
    assert {_compat.constant_literal(c) for c in constants} == want


LOCATED = """
func.func public @main(%a: tensor<2xi64> loc("tokens")) -> tensor<2xi64> {
  %0 = stablehlo.add %a, %a : tensor<2xi64> loc(callsite("f"("a.py":3:4) at "g"("b.py":5:6)))
  %1 = stablehlo.multiply %0, %0 : tensor<2xi64> loc(fused["x.py":1:2, "jit(f)/mul"("y.py":7:8)])
  %2 = stablehlo.subtract %1, %a : tensor<2xi64> loc("c.py":9:10)
  return %2 : tensor<2xi64>
}"""


def test_location_kinds_and_decoding() -> None:
    m = parse(LOCATED)
    fn = next(op for op in _all_ops(m) if op.name == "func.func")
    block = fn.regions[0].blocks[0]
    arg_loc = block.arguments[0].location
    assert _compat.location_kind(arg_loc) == "name" and arg_loc.name_str == "tokens"
    kinds = {op.name: _compat.location_kind(op.location) for op in _all_ops(m)}
    assert kinds["stablehlo.add"] == "callsite"
    assert kinds["stablehlo.multiply"] == "fused"
    assert kinds["stablehlo.subtract"] == "file"
    by_name = {op.name: no64.decode_location(op.location) for op in _all_ops(m)}
    assert (by_name["stablehlo.add"].file, by_name["stablehlo.add"].line) == ("a.py", 3)
    assert by_name["stablehlo.multiply"].primitive == "mul"
    assert (by_name["stablehlo.subtract"].file, by_name["stablehlo.subtract"].column) == ("c.py", 10)


def test_version_judgement() -> None:
    with pytest.raises(_compat.UnsupportedJaxlibError) as info:
        _compat.judge_version("0.6.2")
    assert "\n" not in str(info.value) and "0.7.0 through 0.12.x" in str(info.value)
    assert _compat.judge_version("0.7.0") is None
    assert _compat.judge_version("0.12.0.1") is None
    note = _compat.judge_version("0.13.0")
    assert note is not None and "\n" not in note and "0.7.0 through 0.12.x" in note


# ---------------------------------------------- outside the tested range

def _run(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith(("NO64_", "JAX_ENABLE_X64"))}
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, env=full, timeout=300)


def _pretend(version: str) -> str:
    """Code that makes the running jaxlib report ``version``."""
    return f"import jaxlib.version as _v; _v.__version__ = {version!r}\n"


def test_newer_jaxlib_loads_with_one_warning_line() -> None:
    proc = _run(_pretend("0.13.0") + "import no64\nprint('loaded')\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "loaded"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "UntestedJaxlibWarning" in lines[0] and "0.7.0 through 0.12.x" in lines[0], \
        proc.stderr


def test_older_jaxlib_is_refused_in_one_line() -> None:
    proc = _run(_pretend("0.6.2") + "try:\n    import no64\nexcept ImportError as e:\n    print(e)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and "jaxlib 0.6.2 is installed" in proc.stdout


def test_command_exits_2_with_one_line_where_no64_cannot_load(tmp_path: Path) -> None:
    f = tmp_path / "m.mlir"
    f.write_text(SHIFT_UI64)
    for command in (["check", str(f)], ["convert", str(f), "-o", str(tmp_path / "out.mlir")]):
        proc = _run(_pretend("0.6.2") + "import sys\nfrom no64_entry import main\nsys.exit(main())\n",
                    *command)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("no64: error: "), proc.stderr
        assert "Traceback" not in proc.stderr


def test_import_jax_works_and_says_once_why_no64_is_inactive() -> None:
    """JAX checks the jaxlib version itself, so here no64 fails to load
    another way: one of its modules cannot be imported."""
    code = """
import sys
sys.modules["no64.ir._compat"] = None  # no64 cannot be imported
import jax, jax.numpy as jnp
print(int(jax.jit(lambda x: x * 2)(jnp.arange(3)).sum()))
"""
    proc = _run(code, env={"NO64_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6"
    said = [ln for ln in proc.stderr.splitlines() if "no64" in ln]
    assert len(said) == 1 and "NO64_PLATFORMS is set but no64 is inactive" in said[0], proc.stderr
    assert "no64.ir._compat" in said[0]


def test_pytest_run_goes_on_where_no64_cannot_load(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    code = _pretend("0.6.2") + "import sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
    base = [str(tmp_path), "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(tmp_path)]
    proc = _run(code, *base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    asked = _run(code, *base, "--no64")
    assert asked.returncode == 4, asked.stdout + asked.stderr  # pytest's usage error
    assert "no64: the plugin cannot run" in asked.stderr and "jaxlib 0.6.2" in asked.stderr


def test_pins_admit_exactly_the_tested_range() -> None:
    """pip never replaces a jax in the tested range, and never installs one outside it."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    (low, high) = _compat.TESTED
    for name in ("jax", "jaxlib"):
        pin = f"{name}>={low[0]}.{low[1]},<{high[0]}.{high[1]}"
        assert pin in project["dependencies"], (pin, project["dependencies"])
