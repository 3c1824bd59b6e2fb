"""32-bit device arrays of the x64 program's 64-bit values, made before the call
that takes them (jax.device_put and jnp.asarray of int64 host data, eager
creations from a canonicalised dtype, astype, the results of jit calls): the
call is judged and run by its x64 program, in which they are 64-bit -- checked
against the x64 program run on the CPU without no64."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
from children import marked_line, runs_fixture

from no64.jax import x64_arrays

SCRIPT = Path(__file__).parent / "x64_array_programs.py"
RUNS = ("ref", "default", "strict", "exact")
runs = runs_fixture(SCRIPT, RUNS)
NO64_ERRORS = {"NarrowingError", "OutputRangeError", "NoX64MeaningError", "HostRangeError"}


def test_no_case_returns_another_number_unsaid(runs: dict[str, Any]) -> None:
    """Under every policy each case gives the x64 program's number, or says at a line
    of the script that it may not (default: a warning), or refuses (strict, exact)."""
    ref = runs["ref"]
    for tag in ("default", "strict", "exact"):
        for name, got in runs[tag].items():
            want = ref[name]["value"]
            if "error" in got:
                assert got["error"] in NO64_ERRORS, (tag, name, got)
                assert "x64_array_programs.py:" in got["message"], (tag, name, got["message"])
                continue
            if got["value"] != want:
                assert tag == "default", (tag, name, got, want)
                assert ["UnprovenIntegerWarning", marked_line(SCRIPT, name)] in got["warnings"], (name, got, want)


def test_width_dependent_results_are_the_x64_programs(runs: dict[str, Any]) -> None:
    """popcnt of values that are int64 in the x64 program counts 64 bits (an int32 count
    would give 32 for -1): for an array made by astype, a jit result entering the next
    call, a call after one with int32 data of the same 32-bit signature, and (default)
    arrays made eagerly; exact computes the squares of device_put/asarray data on words."""
    ref = runs["ref"]
    assert ref["astype"]["value"] == [64, 3] and ref["threaded"]["value"] == 62
    assert ref["fast_path_order"]["value"] == [32, 64] and ref["eager"]["value"] == [63, 62, 63]
    for tag in ("default", "strict", "exact"):
        for name in ("astype", "threaded", "fast_path_order"):
            assert runs[tag][name]["value"] == ref[name]["value"], (tag, name, runs[tag][name])
            assert not runs[tag][name]["warnings"], (tag, name, runs[tag][name])
    # zeros the host made (zeros_like) minus 1: known to lie within 2**15, proven everywhere
    for tag in ("default", "strict", "exact"):
        got = runs[tag]["zeros_like"]
        assert got["value"] == ref["zeros_like"]["value"] and not got["warnings"], (tag, got)
    for name in ("eager", "promoted"):
        got = runs["default"][name]
        assert got["value"] == ref[name]["value"], (name, got)
        # the eager subtraction's int64 result may not fit the int32 array that holds
        # it: said under default, refused under strict, checked by value under exact
        assert ["UnprovenIntegerWarning", marked_line(SCRIPT, name)] in got["warnings"], (name, got)
        assert runs["strict"][name].get("error") == "NarrowingError", (name, runs["strict"][name])
        assert runs["exact"][name]["value"] == ref[name]["value"], (name, runs["exact"][name])
    for name in ("device_put", "asarray", "array", "arange", "arange_int64", "full_int64", "list"):
        assert ref[name]["value"] in ([49, 64, 81][: len(ref[name]["value"])], [49, 49, 49]), name
        assert runs["exact"][name]["value"] == ref[name]["value"], (name, runs["exact"][name])
        assert runs["strict"][name].get("error") == "NarrowingError", (name, runs["strict"][name])
        assert runs["default"][name]["warnings"] or runs["default"][name]["value"] == ref[name]["value"]


def test_an_explicit_int32_array_stays_int32(runs: dict[str, Any]) -> None:
    """An array the program asked int32 for is int32 in the x64 program too: its square
    wraps there as it does without x64, under every policy, and nothing is said."""
    want = runs["ref"]["explicit_int32"]["value"]
    assert want == [1410065408, 1410265409]
    for tag in ("default", "strict", "exact"):
        got = runs[tag]["explicit_int32"]
        assert got["value"] == want and not got["warnings"], (tag, got)


def test_a_note_lives_as_long_as_its_array() -> None:
    a = jnp.arange(3)
    x64_arrays.mark(a, np.int64)
    assert x64_arrays.x64_dtype(a) == np.dtype(np.int64) and x64_arrays.any_marked([a])
    before = x64_arrays.marked_count()
    del a
    assert x64_arrays.marked_count() == before - 1
    b = jnp.arange(3)
    assert x64_arrays.x64_dtype(b) is None
    with x64_arrays.assumed({id(b): np.dtype(np.int64)}):
        assert x64_arrays.x64_dtype(b) == np.dtype(np.int64)
    assert x64_arrays.x64_dtype(b) is None
    x64_arrays.mark(3, np.int64)  # no weak reference: not noted
    assert x64_arrays.x64_dtype(3) is None
