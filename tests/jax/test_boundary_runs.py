"""64-bit host data crossing a jit's boundary in a program that turned x64 on
is never narrowed silently: against the x64 program run without no64.

``boundary_programs.py`` runs under the compile hook with each policy and
without no64 (the reference); ``no64.jit`` is checked in this process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from children import marked_line, runs_fixture

import no64
from support import enable_x64

SCRIPT = Path(__file__).parent / "boundary_programs.py"
RUNS = ("ref", "f32", "pairs", "strict", "exact")
runs = runs_fixture(SCRIPT, RUNS)
HOOK = ("f32", "pairs", "strict", "exact")


def _rounded_once(values: list[str]) -> list[str]:
    """The x64 program's float64 results as the hook returns them: rounded to f32 once."""
    return [repr(float(np.float32(float(v)))) for v in values]


@pytest.mark.parametrize("case", ["enter", "scalar", "python_float", "weak_python_float", "signs", "traces"])
def test_float64_arguments_enter_the_hook_as_pairs(runs: dict[str, Any], case: str) -> None:
    """NO64_FLOAT_POLICY=pairs: a float64 argument (numpy array or scalar, a
    Python float, weakly typed as in the x64 program) enters whole, as its
    pairs: x - 1 of 1 + 2**-40 is 2**-40, as with x64 (f32 alone gives 0);
    signed zeros, infinities and NaN exactly; the result rounded to f32 once."""
    ref, pairs = runs["ref"][case], runs["pairs"][case]
    assert pairs["value"] == _rounded_once(ref["value"]), (pairs, ref)
    if case in ("enter", "scalar", "python_float", "traces"):
        assert runs["f32"][case]["value"] != pairs["value"]  # what the pairs change
    if case == "enter":
        assert [w[0] for w in pairs["warnings"] if w[0] != "X64DisabledWarning"] == []


def test_a_float64_argument_the_pairs_cannot_hold_is_said_at_the_call(runs: dict[str, Any]) -> None:
    """1e-310 (below f32's smallest normal: its pair would flush) is named at the call's line."""
    (warning,) = [w for w in runs["pairs"]["signs"]["warnings"] if w[0] == "PairRangeWarning"]
    assert warning[1] == marked_line(SCRIPT, "call") and "1e-310" in warning[2]


def test_the_users_function_is_traced_once(runs: dict[str, Any]) -> None:
    """Two calls with float64 data of one shape: one trace, under every policy."""
    for tag in RUNS:
        assert runs[tag]["traces"]["count"] == 1, tag


def test_a_float64_closure_beyond_f32s_range_is_never_a_silent_inf(runs: dict[str, Any]) -> None:
    """A closed-over float64 2e300 (f32: inf): one FloatPrecisionWarning naming
    the value under the default policy (either float policy), refused under
    strict and exact (NarrowingError, verdict overflow)."""
    assert runs["ref"]["closure_beyond"]["value"] == ["2.0", "1e+300"]
    for tag in ("f32", "pairs"):
        got = runs[tag]["closure_beyond"]
        assert got["value"] == ["2.0", "inf"]
        said = [w for w in got["warnings"] if w[0] == "FloatPrecisionWarning" and "2e+300" in w[2]]
        assert said and "[overflow]" in said[0][2], got["warnings"]
    for tag in ("strict", "exact"):
        got = runs[tag]["closure_beyond"]
        assert got["error"] == "NarrowingError" and "2e+300" in got["message"], got
        assert "overflow; refused by policy" in got["message"]


def test_a_python_float_argument_beyond_f32s_range_is_refused(runs: dict[str, Any]) -> None:
    """A Python float argument of 2e300 (float64 in the x64 program) is refused at
    the call's line as float64 numpy data is (README: refused beyond 3.4e38)."""
    assert runs["ref"]["python_float_beyond"]["value"] == ["2e+300"]
    for tag in HOOK:
        got = runs[tag]["python_float_beyond"]
        assert got["error"] == "HostRangeError", (tag, got)
        assert "a Python float argument" in got["message"] and "2e+300" in got["message"]
        assert f"{SCRIPT}:{marked_line(SCRIPT, 'call')}" in got["message"]


def test_int64_beyond_32_bits_under_exact_says_the_hook_cannot_carry_it(runs: dict[str, Any]) -> None:
    """Under NO64_POLICY=exact the hook refuses an int64 argument beyond 32 bits at
    the call's line, saying why (JAX passes it as int32) and what carries it."""
    got = runs["exact"]["int64_beyond"]
    assert got["error"] == "HostRangeError"
    assert f"{SCRIPT}:{marked_line(SCRIPT, 'call')}" in got["message"] and "1099511627777" in got["message"]
    assert "calling convention" in got["message"] and "no64.jit(f, policy='exact')" in got["message"]
    assert "calling convention" not in runs["f32"]["int64_beyond"].get("message", "")


I64, I32 = np.iinfo(np.int64), np.iinfo(np.int32)
INTS = np.array([I64.max, I64.min, 2**40 + 1, int(I32.min) - 1, int(I32.max) + 1, -1, 0], np.int64)
FLOATS = np.array([1 + 2**-40, 1e-310, -0.0, np.inf, -np.inf, np.nan, 1e30, -3.0])


def test_no64_jit_exact_carries_int64_arguments_bit_for_bit() -> None:
    """no64.jit owns its boundary: int64 arguments beyond 32 bits cross whole."""
    def f(v, k):
        return (v // 3 + k) % 1000, v ^ k, (v % 1000).astype(jnp.int32)

    with enable_x64(True):
        ref = [np.asarray(r) for r in jax.jit(f)(INTS, np.int64(2**40 + 1))]
    got = no64.jit(f, policy="exact", restore_dtypes=True)(INTS, np.int64(2**40 + 1))
    for g, r in zip(got, ref):
        assert np.asarray(g).dtype == r.dtype and np.array_equal(np.asarray(g), r)


def test_no64_jit_pairs_carries_float64_arguments() -> None:
    """no64.jit(float_policy="pairs"): float64 arguments enter as pairs and
    leave as float64, within 2**-48 of the x64 program's; zeros' signs,
    infinities and NaN exactly; 1e-310 (the pairs flush it) warned of."""
    def f(x, c):
        return x * 2 - c, x - 1

    with enable_x64(True):
        ref = [np.asarray(r) for r in jax.jit(f)(FLOATS, 1 + 2**-40)]
    with pytest.warns(no64.PairRangeWarning, match="1e-310"):
        got = [np.asarray(g) for g in no64.jit(f, float_policy="pairs", restore_dtypes=True)(FLOATS, 1 + 2**-40)]
    for g, r in zip(got, ref):
        assert g.dtype == np.float64
        held = np.abs(FLOATS) >= 2.0**-78  # (1e-310 is below the pairs' range)
        finite = np.isfinite(r) & held
        assert np.all(np.abs(g[finite] - r[finite]) <= 2.0**-48 * np.maximum(np.abs(r[finite]), 1.0))
        same = ~np.isfinite(r) | (r == 0)
        assert np.array_equal(g[same & held], r[same & held], equal_nan=True)
        assert np.array_equal(np.signbit(g[same & held]), np.signbit(r[same & held]))


def test_a_host_sentinel_meeting_its_32_bit_image_under_exact(runs: dict[str, Any]) -> None:
    """``x == INT64_MAX, x > INT32_MAX, x == INT32_MAX`` of an argument
    holding ``INT64_MAX``, on one line: ``exact`` computes the x64 program's
    answer (the 32-bit program cannot tell the sentinel's image from the
    literal ``INT32_MAX``: it gives True, False, True)."""
    want = runs["ref"]["sentinel_meets"]["value"]
    assert want == ["1.0", "1.0", "0.0"]
    assert runs["exact"]["sentinel_meets"]["value"] == want


def test_a_host_sentinel_meeting_its_32_bit_image_is_said_under_the_default_policies(runs: dict[str, Any]) -> None:
    """``x == INT64_MAX, x > INT32_MAX, x == INT32_MAX`` on one line, of a host
    INT64_MAX: the literal of the first expression is the sentinel, those of
    the others are ordinary INT32_MAX meeting it (told apart by the
    expression, not the line): warned of at the line, refused by strict."""
    want = runs["ref"]["sentinel_meets"]["value"]
    line = marked_line(SCRIPT, "sentinel_meets")
    for tag in ("f32", "pairs"):
        got = runs[tag]["sentinel_meets"]
        if got.get("value") != want:
            said = [w for w in got["warnings"] if w[0] == "UnprovenIntegerWarning"]
            assert said and said[0][1] == line, got
    got = runs["strict"]["sentinel_meets"]
    assert got.get("error") == "HostRangeError" and f"boundary_programs.py:{line}" in got["message"], got
    assert "meets, in gt" in got["message"], got


HELD = ["held_full", "held_array", "held_jit_result", "held_passed", "eager_held_rem"]


@pytest.mark.parametrize("case", HELD)
def test_host_sentinels_held_by_arrays_keep_their_meaning(runs: dict[str, Any], case: str) -> None:
    """An array made earlier holding host sentinels (``jnp.full(3, INT64_MAX)``,
    ``jnp.array([INT64_MAX, 5, INT64_MIN])``, a jit's result filled with
    ``INT64_MIN``, ``jnp.asarray`` of int64 data holding one) holds their
    32-bit images under the hook: the call it enters next (jitted or eager)
    computes the x64 program's values under ``exact`` (``% 1000`` of
    INT64_MAX is 807, of its image 647; INT64_MAX > INT32_MAX), and is never
    silently otherwise under the default policies (warned of at the line
    that reads or compares it) or ``strict`` (refused there)."""
    want = runs["ref"][case]["value"]
    line = marked_line(SCRIPT, case)
    assert runs["exact"][case]["value"] == want, runs["exact"][case]
    assert not [w for w in runs["exact"][case]["warnings"] if w[0] != "X64DisabledWarning"], runs["exact"][case]
    for tag in ("f32", "pairs"):
        got = runs[tag][case]
        assert got.get("value") != want, got  # the 32-bit program computes with the image here
        said = [w for w in got["warnings"] if w[0] == "UnprovenIntegerWarning" and "host sentinel" in w[2]]
        assert said and said[0][1] == line, got
    got = runs["strict"][case]
    assert got.get("error") == "HostRangeError" and f"boundary_programs.py:{line}" in got["message"], got


@pytest.mark.parametrize("case", ["small_ints", "small_numpy"])
def test_small_host_integers_are_proven(runs: dict[str, Any], case: str) -> None:
    """``2 * x + y`` and ``x * y`` of int64 values the host knows lie within
    2**15 (``jnp.array(3)``, a Python int 4, int64 numpy data): the x64
    program is judged with that range, so every policy computes the x64
    values without a warning (``-W error`` passes)."""
    want = runs["ref"][case]["value"]
    for tag in HOOK:
        got = runs[tag][case]
        assert got.get("value") == want, (tag, got)
        assert [w for w in got["warnings"] if w[0] != "X64DisabledWarning"] == [], (tag, got)


def test_a_larger_host_integer_is_judged_again(runs: dict[str, Any]) -> None:
    """The same ``2 * x + y`` given ``2**31 - 10``: beyond the stated class, the
    call has another x64 signature, judged with the 32-bit range: warned of
    at the line (default), refused (strict), computed exactly (exact)."""
    want = runs["ref"]["large_int"]["value"]
    line = marked_line(SCRIPT, "large_int")
    assert runs["exact"]["large_int"]["value"] == want
    got = runs["f32"]["large_int"]
    said = [w for w in got["warnings"] if w[0] == "UnprovenIntegerWarning"]
    assert said and said[0][1] == line, got
    got = runs["strict"]["large_int"]
    assert got.get("error") == "NarrowingError" and f"boundary_programs.py:{line}" in got["message"], got
