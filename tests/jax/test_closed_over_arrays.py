"""Jitted functions closing over 32-bit device arrays of the x64 program's 64-bit
values (made outside any jit): the x64 trace takes each in with its x64 dtype,
as it takes such an argument, so the call computes -- and, under JAX's strict
dtype promotion, traces at all -- as the x64 program does; checked against the
x64 program run on the CPU without no64 (``closed_over_programs.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from children import marked_line, run_children

SCRIPT = Path(__file__).parent / "closed_over_programs.py"
HOOK = {"NO64_PLATFORMS": "cpu"}
RUNS = {
    "ref": {},
    "default": HOOK,
    "strict": {**HOOK, "NO64_POLICY": "strict"},
    "exact": {**HOOK, "NO64_POLICY": "exact"},
    "exact_pairs": {**HOOK, "NO64_POLICY": "exact", "NO64_FLOAT_POLICY": "pairs"},
}
CASES = ("int_jnp", "int_lax", "matvec", "loop", "explicit_f32", "sampled")


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    return run_children(SCRIPT, RUNS)


def test_each_function_is_traced_once(runs: dict[str, Any]) -> None:
    for tag, got in runs.items():
        for name in CASES:
            assert got[name]["traces"] == 1, (tag, name, got[name])


def test_closed_over_int64_arrays_compute_as_int64(runs: dict[str, Any]) -> None:
    """``(C * C) % 1000`` of a closed-over int64 array (a jnp function's jit inside the
    trace takes it) is a 64-bit product: 49 under exact, said at the line under default
    (never 457 unsaid), refused by strict; popcnt (a lax primitive bound on it) counts 64
    bits under every policy."""
    ref = runs["ref"]
    assert ref["int_jnp"]["value"] == [49, 49, 49] and ref["int_lax"]["value"] == [63, 62, 63]
    line = marked_line(SCRIPT, "int_jnp")
    for tag in ("exact", "exact_pairs"):
        assert runs[tag]["int_jnp"]["value"] == ref["int_jnp"]["value"], (tag, runs[tag]["int_jnp"])
    strict = runs["strict"]["int_jnp"]
    assert strict.get("error") == "NarrowingError" and f"closed_over_programs.py:{line}" in strict["message"]
    default = runs["default"]["int_jnp"]
    assert default["value"] == ref["int_jnp"]["value"] or ["UnprovenIntegerWarning", line] in default["warnings"]
    for tag in ("default", "strict", "exact", "exact_pairs"):
        got = runs[tag]["int_lax"]
        assert got["value"] == ref["int_lax"]["value"] and not got["warnings"], (tag, got)


def test_closed_over_float64_arrays_are_pairs_under_strict_promotion(runs: dict[str, Any]) -> None:
    """Under exact and pairs a closed-over float64 array (jnp.array of Python floats, a
    sampler's default dtype) meets the float64 argument as float64 -- JAX's strict
    promotion refuses float32 with float64 -- and the results are the x64 program's,
    rounded once to float32: 2**-30 where float32 alone gives 0."""
    ref, got = runs["ref"], runs["exact_pairs"]
    assert got["float_policies"] == ["pairs"]
    assert ref["matvec"]["value"] == [2.0**-30, 1.0] and ref["matvec"]["dtype"] == "float64"
    for name in ("matvec", "loop", "sampled"):
        assert "error" not in got[name] and got[name]["dtype"] == "float32", (name, got[name])
        assert not got[name]["warnings"], (name, got[name])
    assert got["matvec"]["value"] == ref["matvec"]["value"]
    want = np.asarray(ref["loop"]["value"])
    assert want[1] == 3 * 2.0**-30
    np.testing.assert_array_max_ulp(np.float32(got["loop"]["value"]), want.astype(np.float32), maxulp=1)
    assert got["loop"]["value"][1] == want[1]
    # the closed-over draw is held in float32: the product is the x64 one within that rounding
    k = np.abs(np.asarray(ref["K"])).sum()
    assert abs(got["sampled"]["value"] - ref["sampled"]["value"]) <= 2.0**-22 * k, (got["sampled"], ref["sampled"])
    # float32 computes other numbers (the cases tell pairs from float32)
    for tag in ("default", "strict", "exact"):
        assert runs[tag]["matvec"]["value"] == [0.0, 1.0] and runs[tag]["loop"]["value"][1] == 0.0, tag


def test_an_explicit_float32_array_stays_float32(runs: dict[str, Any]) -> None:
    """An array the program asked float32 for is float32 in the x64 program too:
    ``(1 + 2**-30) - 1`` of it is 0 there, and under pairs."""
    want = runs["ref"]["explicit_f32"]
    assert want["value"] == 0.0 and want["dtype"] == "float32"
    for tag in ("default", "strict", "exact", "exact_pairs"):
        got = runs[tag]["explicit_f32"]
        assert got["value"] == 0.0 and got["dtype"] == "float32" and not got["warnings"], (tag, got)
