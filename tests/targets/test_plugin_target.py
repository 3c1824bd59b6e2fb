"""A plugin's own device profile, as the README shows it: the profile module
and the entry point its comment names are installed as a distribution, and a
fresh process finds the profile by target name and by platform name, checks
a module against its entries and keeps its native types in a conversion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).parents[2]
MARKER = "<!-- docs-test: checked-by tests/targets/test_plugin_target.py::test_the_readme_plugin_profile -->"


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    after = text.split(MARKER, 1)[1]
    block = re.match(r"\s*```python\n(.*?)\n```", after, re.S)
    assert block, "the plugin block follows its marker"
    return block.group(1)


def install_plugin(site: Path, code: str) -> None:
    """Write the profile module and a distribution whose entry points are the
    ``[project.entry-points."no64.targets"]`` lines of the block's comment."""
    lines = [ln.removeprefix("#").strip() for ln in code.splitlines() if ln.startswith("#   ")]
    assert lines[0] == '[project.entry-points."no64.targets"]', lines
    module_path = code.splitlines()[0].removeprefix("# ").split(",")[0]
    (site / module_path).parent.mkdir(parents=True)
    (site / module_path).parent.joinpath("__init__.py").write_text("")
    (site / module_path).write_text(code + "\n")
    dist = site / "my_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    entries = [ln.replace(" = ", "=").replace('"', "") for ln in lines[1:]]
    (dist / "entry_points.txt").write_text("[no64.targets]\n" + "\n".join(entries) + "\n")


def test_the_readme_plugin_profile(tmp_path: Path) -> None:
    install_plugin(tmp_path / "site", readme_block())
    module = tmp_path / "step.mlir"
    module.write_text(textwrap.dedent("""\
        #loc1 = loc("model.py":41:12)
        module @jit_step {
          func.func public @main(%a: tensor<8x128xi32>, %b: tensor<128x4xi32>, %n: tensor<4xi64>, %x: tensor<4xf64>)
              -> (tensor<8x4xi32>, tensor<4xi64>, tensor<4xf64>) {
            %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
              : (tensor<8x128xi32>, tensor<128x4xi32>) -> tensor<8x4xi32> loc(#loc2)
            %1 = stablehlo.multiply %n, %n : tensor<4xi64>
            %2 = stablehlo.add %x, %x : tensor<4xf64>
            return %0, %1, %2 : tensor<8x4xi32>, tensor<4xi64>, tensor<4xf64>
          }
        }
        #loc2 = loc("dot_general"(#loc1))
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path])}
    script = textwrap.dedent("""\
        from no64.targets import BUILT_IN, target, target_for_platform
        t = target_for_platform("myaccel")
        assert t.name == "myaccel" and t is target("myaccel") and "myaccel" not in BUILT_IN, t
        assert t.native == {"i64", "u64"} and t.refuses[0].code == "E013", t
        print("found", t.name)
        """)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and "found myaccel" in run.stdout, run.stderr

    check = subprocess.run([sys.executable, "-m", "no64", "check", "--target", "myaccel", str(module)],
                           env=env, capture_output=True, text=True, cwd=tmp_path)
    assert check.returncode == 1, check.stderr
    assert re.search(r"model\.py:41:12: stablehlo\.dot_general: inexact: integer dot in f32", check.stdout), \
        check.stdout
    assert "f64" in check.stdout and "i64" not in check.stdout.replace("native", ""), check.stdout

    out = tmp_path / "step32.mlir"
    convert = subprocess.run([sys.executable, "-m", "no64", "convert", str(module), "-o", str(out),
                              "--target", "myaccel"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert convert.returncode == 0, convert.stderr
    text = out.read_text()
    assert "tensor<4xi64>" in text and "f64" not in text, text
