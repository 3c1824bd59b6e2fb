"""Under NO64_POLICY=exact, a result of the x64 program that is not proven to fit
the 32-bit array JAX returns is checked by its value when the program runs: a
result that fits is returned (a scan summing arange(10) of int64 data gives 45),
one that does not is an OutputRangeError naming the line -- checked against the
x64 program run on the CPU without no64; the core form (demote's
outputs="checked") returns the check as its entry function's last result.
Under NO64_FLOAT_POLICY=pairs too, the float64 results beside them are
returned as JAX's float32 arrays, rounded once from their pairs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from children import marked_line, runs_fixture

from no64.transforms.demote import demote
from runner import compile_module
from support import enable_x64, ir, make_context

SCRIPT = Path(__file__).parent / "exact_output_programs.py"
PAIRS_SCRIPT = Path(__file__).parent / "exact_pairs_programs.py"
runs = runs_fixture(SCRIPT, ("ref", "exact"))
pair_runs = runs_fixture(PAIRS_SCRIPT, ("ref", "exact_pairs"))


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
    assert f"exact_output_programs.py:{marked_line(SCRIPT, 'cumsum')}" in message
    overflow = marked_line(SCRIPT, "overflow")
    assert f"called at {SCRIPT}:{overflow}" in message or f":{overflow}" in message, message


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


def test_float64_results_on_pairs_are_the_x64_programs_rounded_once(pair_runs: dict[str, Any]) -> None:
    """Under exact + pairs each float64 result (a vector, a scalar, a matrix, var/std
    with ddof=n, results of a tuple or a pytree beside int64 ones) has JAX's 32-bit
    shape and dtype and is the x64 program's value rounded to float32 (pairs hold
    about 48 bits: within one float32 ulp, NaN where x64 has NaN); the int64 results
    beside them are the x64 program's, bit for bit."""
    ref, got = pair_runs["ref"], pair_runs["exact_pairs"]
    assert got["float_policies"] == ["pairs"]
    narrow = {"float64": "float32", "int64": "int32"}
    for name, want in ref.items():
        have = got[name]
        if name == "mixed_overflow":  # the int64 cumsum does not fit: checked by value
            assert have["error"] == "OutputRangeError" and "exact_pairs_programs.py:" in have["message"]
            assert np.abs(np.asarray(want["value"][4])).max() > 2**31 - 1
            continue
        assert "error" not in have, (name, have)
        assert have["dtype"] == [narrow[d] for d in want["dtype"]], name
        for a, b, dtype in zip(have["value"], want["value"], want["dtype"]):
            a, b = np.asarray(a), np.asarray(b, dtype=dtype)
            assert a.shape == b.shape, (name, a.shape, b.shape)
            if dtype == "float64":
                assert np.array_equal(np.isnan(a), np.isnan(b)), name
                np.testing.assert_array_max_ulp(a.astype(np.float32), b.astype(np.float32), maxulp=1)
            else:
                assert a.tolist() == b.tolist(), name
    # pairs, not float32 (which loses k/1024 beside 1e8)
    assert got["cancel"]["value"] == ref["cancel"]["value"]
    assert np.float32(1e8) + np.float32(1 / 1024) - np.float32(1e8) != 1 / 1024
    assert np.isnan(ref["var_ddof_n"]["value"][0]) and np.shape(got["var_ddof_n"]["value"][0]) == ()


def test_demote_checked_keeps_float64_at_the_signature_under_pairs() -> None:
    """demote(outputs="checked", float_policy="pairs") keeps the entry's float64
    arguments and results as JAX's 32-bit signature has them (f32, taken as exact
    pairs and rounded once), as outputs="narrow" does, with the check last."""
    def f(v: Any, n: Any) -> Any:
        return v * 3.0, jnp.sum(v), jnp.cumsum(n.astype(jnp.int64))

    m = _lowered(f, np.zeros(3), np.zeros(3, np.int32))
    demote(m, policy="exact", outputs="checked", float_policy="pairs", check=True)
    main = next(op for op in m.body.operations if "main" in str(op.attributes["sym_name"]))
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    assert [str(t) for t in ftype.inputs] == ["tensor<3xf32>", "tensor<3xi32>"]
    assert [str(t) for t in ftype.results] == ["tensor<3xf32>", "tensor<f32>", "tensor<3xi32>", "tensor<i1>"]
    v = np.array([1e8 + 1, -2.5, 3.0], np.float32)
    n = np.array([2**31 - 1, 0, 5], np.int32)
    with enable_x64(True):
        want = jax.jit(f)(v.astype(np.float64), n)
    tripled, total, sums, ok = _run(m, v, n)
    assert tripled.tolist() == np.asarray(want[0], np.float32).tolist()
    assert total == np.float32(want[1])
    assert not bool(ok)  # 2**31 - 1 + 0 + 5 does not fit
    tripled, total, sums, ok = _run(m, v, np.array([1, -2, 3], np.int32))
    assert bool(ok) and sums.tolist() == [1, -1, 2]
