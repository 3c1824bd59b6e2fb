"""Under NO64_POLICY=exact, a result of the x64 program that is not proven to fit
the 32-bit array JAX returns is checked by its value when the program runs: a
result that fits is returned (a scan summing arange(10) of int64 data gives 45),
one that does not is an OutputRangeError naming the line -- checked against the
x64 program run on the CPU without no64; the core form (demote's
outputs="checked") returns the check as its entry function's last result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from no64.transforms.demote import demote
from runner import compile_module
from support import enable_x64, ir, make_context

SCRIPT = Path(__file__).parent / "exact_output_programs.py"
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def _line(tag: str) -> int:
    return next(i for i, t in enumerate(SCRIPT.read_text().splitlines(), 1) if t.endswith(f"# LINE {tag}"))


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    procs = {}
    for tag, extra in (("ref", {}), ("exact", {"NO64_PLATFORMS": "cpu", "NO64_POLICY": "exact"})):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
        env.update(XLA_FLAGS=FAST_COMPILE, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu", **extra)
        procs[tag] = subprocess.Popen([sys.executable, str(SCRIPT)], env=env, cwd=SCRIPT.parent,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for tag, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, (tag, stderr[-3000:])
        out[tag] = json.loads(stdout.strip().splitlines()[-1])
    return out


FITS = ("scan_sum", "cumsum_fits", "cumsum_fits_again", "unsigned_fits", "aot_fits", "eager_counter", "several")
OVERFLOWS = ("cumsum_overflow", "unsigned_overflow", "aot_overflow", "eager_overflow")


def test_results_that_fit_are_the_x64_programs(runs: dict[str, Any]) -> None:
    ref, exact = runs["ref"], runs["exact"]
    assert ref["scan_sum"]["value"] == 45
    for name in FITS:
        assert exact[name] == ref[name], (name, exact[name], ref[name])
    # the programs above were checked by value (not vacuous: their results are unproven)
    assert {"jit__lambda", "jit_add"} <= set(exact["checked"]), exact["checked"]


def test_results_that_do_not_fit_are_refused_at_the_run(runs: dict[str, Any]) -> None:
    ref, exact = runs["ref"], runs["exact"]
    for name in OVERFLOWS:
        value = np.asarray(ref[name]["value"])
        assert (np.abs(value) > 2**31 - 1).any() or value.dtype.kind == "u", (name, value)
        got = exact[name]
        assert got.get("error") == "OutputRangeError", (name, got)
        assert "checked by value when it ran" in got["message"] and "exact_output_programs.py:" in got["message"]
    # named where the op is, and where the failing call is
    message = exact["cumsum_overflow"]["message"]
    assert f"exact_output_programs.py:{_line('cumsum')}" in message
    assert f"called at {SCRIPT}:{_line('overflow')}" in message or f":{_line('overflow')}" in message, message


def _lowered(f: Any, *args: Any) -> ir.Module:
    with enable_x64(True):
        text = jax.jit(f).lower(*args).as_text(debug_info=True)
    return ir.Module.parse(text, make_context())


def _run(module: ir.Module, *args: Any) -> list[np.ndarray]:
    return [np.asarray(o) for o in compile_module(module, strict=True)(list(args))]


def test_demote_checked_returns_the_check_last() -> None:
    m = _lowered(lambda a: (jnp.cumsum(a.astype(jnp.int64)), a.astype(jnp.int64) % 5), np.arange(5, dtype=np.int32))
    report = demote(m, policy="exact", outputs="checked", check=True)
    # the cumulative sum is unproven; the remainder is proven, and not checked
    assert [n.op for n in report.checked_outputs] == ["func.call"] or len(report.checked_outputs) == 1
    main = next(op for op in m.body.operations if "main" in str(op.attributes["sym_name"]))
    results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
    assert [str(t) for t in results] == ["tensor<5xi32>", "tensor<5xi32>", "tensor<i1>"]
    big = np.array([2**31 - 1, 1, -5, 2**20, 7], np.int32)
    assert np.cumsum(big.astype(np.int64))[1] == 2**31  # does not fit
    total, rem, ok = _run(m, big)
    assert not bool(ok)
    fitting = np.array([1, -2, 3, 2**20, 7], np.int32)
    total, rem, ok = _run(m, fitting)
    assert bool(ok) and total.tolist() == np.cumsum(fitting.astype(np.int64)).tolist()
    assert rem.tolist() == (fitting.astype(np.int64) % 5).tolist()
