"""The audit attributes refusals and verdicts to the right 64-bit values,
through the error's SourceLocation and the report's per-value records."""

from __future__ import annotations

import os

from no64.jax.audit import Compiled, _handlings, analyze
from no64.kinds import Handling
from no64.transforms.scan import find_64bit
from support import ir, make_context


def handlings(text: str) -> dict[tuple[str, str, int | None], Handling]:
    findings = find_64bit(ir.Module.parse(text, make_context()))
    out, _ = _handlings(text, findings)
    return {(f.op, f.role, f.location.line): h for f, h in zip(findings, out)}


def test_refusal_goes_to_the_op_at_the_errors_location() -> None:
    # two custom calls of the same name: only the one on 64-bit data (line 11) is refused
    text = """
func.func public @main(%x: tensor<i64> loc("a.py":1:1), %y: tensor<i32> loc("a.py":1:2)) -> (tensor<i64>, tensor<i32>) {
  %c3 = stablehlo.constant dense<3> : tensor<i64> loc("a.py":2:1)
  %a = stablehlo.shift_left %x, %c3 : tensor<i64> loc("jit(f)/shift_left"("a.py":10:5))
  %b = stablehlo.custom_call @my_kernel(%a) : (tensor<i64>) -> tensor<i64> loc("jit(f)/my_kernel"("a.py":11:5))
  %d = stablehlo.custom_call @my_kernel(%y) : (tensor<i32>) -> tensor<i32> loc("jit(f)/my_kernel"("a.py":12:5))
  return %b, %d : tensor<i64>, tensor<i32>
}"""
    got = handlings(text)
    assert got["stablehlo.custom_call", "result #0", 11] is Handling.REFUSED
    assert got["stablehlo.shift_left", "result #0", 10] is Handling.BLOCKED
    assert [h for h in got.values()].count(Handling.REFUSED) == 1
    report = analyze([Compiled("m", "cpu", text)])
    assert report.modules[0].status == "refused"
    (refused,) = [g for g in report.groups if g.handling == "refused"]
    assert (refused.file, refused.line, refused.count) == ("a.py", 11, 1)


def test_each_value_gets_its_own_verdict() -> None:
    # two adds of the same name and primitive, one line apart: one provably
    # in range, one not; and a while whose second result may not fit
    text = """
func.func public @main(%x: tensor<i64> loc("a.py":1:1)) -> (tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) {
  %c = stablehlo.constant dense<7> : tensor<i64> loc("a.py":2:1)
  %big = stablehlo.constant dense<2000000000> : tensor<i64> loc("a.py":3:1)
  %a = stablehlo.add %c, %c : tensor<i64> loc("jit(f)/add"("a.py":10:5))
  %b = stablehlo.add %big, %big : tensor<i64> loc("jit(f)/add"("a.py":11:5))
  %r:2 = stablehlo.while(%i = %c, %k = %x) : tensor<i64>, tensor<i64>
   cond {
    %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    stablehlo.return %i, %k : tensor<i64>, tensor<i64>
  } loc("jit(f)/while"("a.py":12:5))
  return %a, %b, %r#0, %r#1 : tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>
}"""
    got = handlings(text)
    assert got["stablehlo.add", "result #0", 10] is Handling.EXACT
    assert got["stablehlo.add", "result #0", 11] is Handling.OVERFLOW
    assert got["stablehlo.while", "result #0", 12] is Handling.EXACT
    assert got["stablehlo.while", "result #1", 12] is Handling.UNPROVEN
    assert got["func.func", "function argument #0", 1] is Handling.UNPROVEN
    assert got["stablehlo.constant", "result #0", 3] is Handling.EXACT
    # region arguments are joined by argument number (the parser puts both
    # regions' arguments on the while's line 7)
    for region in (0, 1):
        assert got["stablehlo.while", f"region {region} block 0 argument #0", 7] is Handling.EXACT
        assert got["stablehlo.while", f"region {region} block 0 argument #1", 7] is Handling.UNPROVEN


def test_the_x64_guard_outlives_an_audit_in_the_process(tmp_path) -> None:
    """An audit run in-process that activates no64 first (its watch on jax_enable_x64
    below the compile hook's x64 guard) leaves the guard working after it: a later
    global jax_enable_x64=True under no64.install is still undone, with its warning."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "prog.py"
    script.write_text("import jax, jax.numpy as jnp\nprint(int(jax.jit(lambda x: x + 1)(jnp.int32(1))))\n")
    check = textwrap.dedent(f"""
        import os, sys, warnings
        os.environ.pop("NO64_PLATFORMS", None)
        import jax, no64
        from no64.jax import audit
        report = audit.run_program({str(script)!r}, [], platform="cpu")
        assert report.exit_status == 0, report.exit_status
        no64.install("cpu")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            jax.config.update("jax_enable_x64", True)
        assert not jax.config.jax_enable_x64, "the x64 guard is gone"
        assert any("turned on while no64 is active" in str(w.message) for w in seen), seen
        print("guard ok")
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_") and k != "JAX_ENABLE_X64"}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "guard ok" in proc.stdout, proc.stderr[-3000:]
