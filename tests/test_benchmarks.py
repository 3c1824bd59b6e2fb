"""The emulation benchmark's machinery, on tiny tensors and without timing.

Every op case of ``benchmarks/bench_emulation.py`` is built, converted
under ``policy="exact"``, compiled and run once, and its emulated result is
checked bit-identical to the 64-bit program's (the check the benchmark
itself runs before it times anything), so that the benchmark cannot rot:
a case that stops being emulated, stops lowering or computes something else
fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from support import ir_compat, load_benchmark

bench = load_benchmark("bench_emulation")

#: Enough elements for every pair of the extreme inputs to meet once.
SIZE = 512
SCAN = 256


@pytest.fixture(scope="module")
def inputs() -> tuple[np.ndarray, np.ndarray]:
    return bench.make_inputs(SIZE)


def test_inputs_pair_every_extreme_with_every_other() -> None:
    x, y = bench.make_inputs(SIZE)
    pairs = set(zip(x.tolist(), y.tolist()))
    extremes = bench.EXTREMES.tolist()
    assert all((a, b) in pairs for a in extremes for b in extremes)
    assert x.dtype == y.dtype == np.int32


@pytest.mark.parametrize("name", [c.name for c in bench.CASES])
def test_case_is_emulated_and_bit_identical(name: str, inputs: tuple[np.ndarray, np.ndarray]) -> None:
    case = next(c for c in bench.CASES if c.name == name)
    x, y = inputs
    result = bench.run_case(case, x, y, scan_length=SCAN, repeats=1, timing=False)
    missing = [op for op in case.needs if bench.spec_of(op).emulate is None]
    if missing:
        # Without its emulation rule the case reports itself, and runs nothing.
        assert result.status == "not emulated"
        assert result.missing_rules == missing
        return
    # run_case raised if a result differed or the op was not emulated.
    assert result.status == "ok"
    assert result.values_emulated and result.values_emulated > 0
    assert all(op in result.emulated_by_op for op in case.emulates), result.emulated_by_op
    # (the ops of an inlined call are counted in the case's scope where the
    # binding can give them their call's location; jaxlib 0.7's cannot)
    assert (result.ops_emulated >= 1 or not ir_compat.SETS_LOCATION) and result.ops_native >= 1
    assert result.native_s is None and result.emulated_s is None  # nothing was timed


@pytest.mark.parametrize("name", ["multiply by 64-bit constant", "shift left by 40", "sort (int64 key)",
                                  "divide (signed)", "scatter-add"])
def test_a_native_int64_target_emulates_nothing(name: str, inputs: tuple[np.ndarray, np.ndarray]) -> None:
    """``--target mtl``: the converted program keeps its 64-bit integers --
    the same ops as the native one, nothing on words -- and is checked bit
    for bit against it all the same."""
    case = next(c for c in bench.CASES if c.name == name)
    x, y = inputs
    result = bench.run_case(case, x, y, scan_length=SCAN, repeats=1, timing=False, target="mtl")
    assert result.status == "ok"
    assert result.values_emulated == 0 and not result.emulated_by_op
    assert result.ops_emulated == result.ops_native >= 1


def test_the_check_catches_a_different_program(inputs: tuple[np.ndarray, np.ndarray]) -> None:
    """The bit-for-bit check fails when the converted program computes
    something else: ``add``'s native program against ``subtract``'s
    emulated one."""
    x, y = inputs
    add = next(c for c in bench.CASES if c.name == "add")
    sub = next(c for c in bench.CASES if c.name == "subtract")
    p_add = bench.prepare(add, x, y, SCAN, floor=False)
    p_sub = bench.prepare(sub, x, y, SCAN, floor=False)
    device = jax.devices("cpu")[0]
    args = [jax.device_put(x, device), jax.device_put(y, device)]
    bench.check_identical(p_add, args)
    p_add.emulated = p_sub.emulated
    with pytest.raises(bench.MismatchError, match="output #0 differs from the 64-bit program"):
        bench.check_identical(p_add, args)


def test_every_case_name_is_unique_and_selectable() -> None:
    names = [c.name for c in bench.CASES]
    assert len(names) == len(set(names))
    assert [c.name for c in bench.select_cases(["shift left"])] == [
        n for n in names if "shift left" in n
    ]
    with pytest.raises(SystemExit):
        bench.select_cases(["no such op"])


def test_command_line_checks_without_timing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_json = tmp_path / "emulation.json"
    argv = ["--size", str(SIZE), "--scan-length", str(SCAN), "--check-only", "--quiet",
            "--ops", "subtract", "divide (signed)", "--json", str(out_json)]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    data = json.loads(out_json.read_text())
    rows = {r["name"]: r for r in data["results"]}
    assert set(rows) == {"subtract", "divide (signed)"}
    sub = rows["subtract"]
    assert sub["status"] == "ok" and sub["native_s"] is None and sub["values_emulated"] > 0
    sub_line = next(line for line in out.splitlines() if line.startswith("subtract "))
    assert f"{sub['ops_native']} -> {sub['ops_emulated']}" in sub_line
    divide_line = next(line for line in out.splitlines() if line.startswith("divide (signed)"))
    assert rows["divide (signed)"]["status"] == "ok" and "not emulated" not in divide_line


def test_pair_rows_check_against_float64(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_json = tmp_path / "pairs.json"
    argv = ["--size", str(SIZE), "--scan-length", str(SCAN), "--check-only", "--quiet", "--pairs-only",
            "--json", str(out_json)]
    assert bench.main(argv) == 0
    rows = {r["name"]: r for r in json.loads(out_json.read_text())["pair_results"]}
    assert set(rows) == set(bench.PAIR_CASES)
    for r in rows.values():
        assert r["ops_pairs"] > 0 and r["max_rel_error"] <= 1e-13 and r["pairs_s"] is None
    assert "float_policy=\"pairs\"" in capsys.readouterr().out


def test_pairs_dot_benchmark_runs_briefly() -> None:
    """``benchmarks/bench_pairs_dot.py`` on a small matrix of wide exponent
    span: every program runs, each datapath's pairs come within their
    bound of the exact product relative to ``(|A| |B|)_ij``, and f32 does
    not (the check is not vacuous)."""
    module = load_benchmark("bench_pairs_dot")
    r = module.bench(48, "wide", repeats=1, samples=16)
    for name in module.PATHS:
        assert 0 < r[f"pairs {name}_err"] <= 2.0**-45 and r[f"pairs {name}_s"] > 0
    assert r["f64_err"] <= 2.0**-50 and r["f32_err"] > 2.0**-30


def test_pairs_solve_benchmark_runs_briefly() -> None:
    """``benchmarks/bench_pairs_solve.py`` on small matrices: the refined
    solve and the float64 LU on pairs come within the refinement's bound
    (``cond_inf * 2**-43``) of the exact solution where the refinement
    converges (1e4), the float64 LU's result where it cannot (1e10: the
    refined program falls back to it), and f32 does not (not vacuous)."""
    module = load_benchmark("bench_pairs_solve")
    r = module.bench(24, 1e4, repeats=1)
    assert r.exact and r.refined_s > 0 and r.pair_lu_s > 0 and r.f64_s > 0 and r.f32_s > 0
    assert r.refined_err <= 1e4 * 24 * 2.0**-43 and r.pair_lu_err <= 1e4 * 24 * 2.0**-43 and r.f32_err > 1e-5
    r = module.bench(24, 1e10, repeats=1, timing=False)
    assert r.refined_err == r.pair_lu_err and r.refined_s is None


def test_pairs_benchmark_checks_and_times_every_case_briefly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``benchmarks/bench_pairs.py`` (``make bench-pairs``) on small shapes:
    every case converts, runs on pairs within 1e-13 of float64 (the
    benchmark refuses more), and is timed three ways with its ratios."""
    module = load_benchmark("bench_pairs")
    out_json = tmp_path / "pairs.json"
    argv = ["--size", "4096", "--rows", "8", "--row-length", "64", "--dots", "48", "--repeats", "1",
            "--json", str(out_json)]
    assert module.main(argv) == 0
    rows = json.loads(out_json.read_text())["results"]
    assert [r["name"] for r in rows] == [c.name for c in module.cases([48])]
    assert len(rows) == 13  # 3 elementwise, 5 transcendentals, 2 sums, 1 matmul, 1 convolution, 1 program
    for r in rows:
        assert r["max_rel_error"] <= 1e-13
        assert r["f64_s"] > 0 and r["pairs_s"] > 0 and r["f32_s"] > 0
    # the check is not vacuous: held to 0, the pairs results (48 bits) are refused
    monkeypatch.setattr(module, "TOLERANCE", 0.0)
    with pytest.raises(AssertionError, match="pairs differ from float64"):
        module.run_case(module.cases([])[2], 64, 2, 8, repeats=1, timing=False)
