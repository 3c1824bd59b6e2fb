"""Host callbacks (jax.debug.print, jax.debug.callback, jax.pure_callback,
io_callback) keep the x64 meaning under the compile hook: against the x64
program run without no64.

``callback_programs.py`` runs under the compile hook with each policy and
without no64 (the reference): what each callback receives, what
``jax.debug.print`` prints and what the program returns are the x64
program's, integers bit for bit, or no64 says so (a warning at the line, a
refusal naming the callback's line); never a silently other number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from children import marked_line, runs_fixture

SCRIPT = Path(__file__).parent / "callback_programs.py"
RUNS = ("ref", "default", "strict", "exact", "pairs")
runs = runs_fixture(SCRIPT, RUNS)
HOOK = ("default", "strict", "exact", "pairs")
INTEGER_CASES = ("print_fits", "print_past", "callback_big", "pure_back", "pure_fits", "pure_min", "io_ordered",
                 "in_loop", "traces")


def _seen(got: dict[str, Any]) -> tuple[Any, Any, Any]:
    return got.get("value"), got["printed"], got["received"]


def test_the_reference_runs_every_case(runs: dict[str, Any]) -> None:
    """The x64 program's own run: what the cases hold (values beyond 32 bits reach the host)."""
    ref = runs["ref"]
    assert all("error" not in ref[case] for case in ref), ref
    assert ref["print_past"]["printed"] == ["sum 2147483653"]
    assert ref["callback_big"]["received"][0][2] == [[2**40 + 1, 2 * (2**40 + 1), -3 * (2**40 + 1)],
                                                     [-2**63 + 1, -2**63, -2**63 + 1]]


@pytest.mark.parametrize("case", INTEGER_CASES)
def test_exact_gives_the_x64_program_bit_for_bit(runs: dict[str, Any], case: str) -> None:
    """NO64_POLICY=exact: every callback receives the x64 values (2**40 + 1,
    INT64_MIN, a sum past 2**31), returns 64-bit results whole (3x + 2**40 + 1,
    INT64_MIN), prints the x64 text, and the program returns the x64 results;
    no warning."""
    got = runs["exact"][case]
    assert _seen(got) == _seen(runs["ref"][case]), got
    assert got["warnings"] == []


@pytest.mark.parametrize("tag", HOOK)
@pytest.mark.parametrize("case", INTEGER_CASES)
def test_never_a_silently_other_number(runs: dict[str, Any], tag: str, case: str) -> None:
    """Under every policy each case gives the x64 program's values, received,
    printed and returned, or no64 says otherwise: a warning at a line, or an error."""
    got = runs[tag][case]
    if "error" in got or got["warnings"]:
        return
    assert _seen(got) == _seen(runs["ref"][case]), (tag, got)


@pytest.mark.parametrize("tag", HOOK)
def test_callbacks_have_the_x64_meaning(runs: dict[str, Any], tag: str) -> None:
    """No NoX64MeaningWarning for a program with callbacks any more, and the
    ones whose values fit (or that the pass computes on words) run as with x64."""
    for case, got in runs[tag].items():
        if not isinstance(got, dict):
            continue
        assert not any(w[0] == "NoX64MeaningWarning" for w in got["warnings"]), (tag, case, got)
        assert "NoX64Meaning" not in got.get("error", ""), (tag, case, got)
    for case in ("print_fits", "print_past", "pure_fits", "io_ordered", "in_loop", "traces"):
        assert _seen(runs[tag][case]) == _seen(runs["ref"][case]), (tag, case)


@pytest.mark.parametrize("tag", ("default", "strict", "pairs"))
@pytest.mark.parametrize("case", ("pure_back", "pure_min"))
def test_a_result_beyond_32_bits_is_refused_at_the_callbacks_line(runs: dict[str, Any], tag: str,
                                                                 case: str) -> None:
    """Outside exact an integer result of a callback enters the program as a
    32-bit value: one beyond 32 bits (2**40 + 4; INT64_MIN, a sentinel the
    program would read as INT32_MIN) is refused when it runs, naming the
    callback's line, never wrapped."""
    got = runs[tag][case]
    assert "HostRangeError" in got.get("message", ""), (tag, got)
    assert f"{SCRIPT}:{marked_line(SCRIPT, case)}" in got["message"]
    assert "NO64_POLICY=exact" in got["message"]


def test_float64_pairs_reach_the_host_whole(runs: dict[str, Any]) -> None:
    """NO64_FLOAT_POLICY=pairs: a callback receives x - 1 of 1 + 2**-40 as 2**-40
    (f32 alone gives 0), and a float64 result (x * (1 + 2**-30)) comes back whole:
    y - x is the x64 program's, rounded to f32 once."""
    ref, pairs, f32 = runs["ref"]["float_pairs"], runs["pairs"]["float_pairs"], runs["default"]["float_pairs"]
    assert pairs["received"] == ref["received"]
    assert ref["received"][0][2][0][0] == repr(2.0**-40)
    assert f32["received"][0][2][0][0] == "0.0"  # what the pairs change
    assert pairs["value"] == [[repr(float(np.float32(float(v)))) for v in ref["value"][0]]]
    assert pairs["warnings"] == []


def test_the_users_function_is_traced_once(runs: dict[str, Any]) -> None:
    """A function with jax.debug.print and pure_callback, called twice: one trace,
    under every policy, and both prints."""
    for tag in RUNS:
        assert runs[tag]["traces"]["count"] == 1, tag
        assert runs[tag]["traces"]["printed"] == ["traced [1 2]", "traced [3 4]"], tag
