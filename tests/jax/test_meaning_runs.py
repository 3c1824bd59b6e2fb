"""Under the compile hook, a program that asked for x64 runs its x64 program --
the float policy on its own, host data f32 cannot hold, programs with effects,
typed keys and random floats on pairs -- checked against the x64 program run on
the CPU without no64."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from children import marked_line, runs_fixture

import no64
from no64.jax import intent
from support import enable_x64

SCRIPT = Path(__file__).parent / "meaning_programs.py"
RUNS = ("ref", "jax32", "f32", "pairs", "strict", "exact")
runs = runs_fixture(SCRIPT, RUNS)


def test_float_policy_pairs_alone_computes_pairs(runs: dict[str, Any]) -> None:
    """NO64_FLOAT_POLICY=pairs, with no NO64_POLICY, computes the x64 program's float64
    as pairs: 1e8 + k/1024 - 1e8 is k/1024 as with x64, where f32 loses it."""
    ref, f32, pairs = runs["ref"]["cancel"], runs["f32"]["cancel"], runs["pairs"]["cancel"]
    assert ref["value"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert pairs["value"] == ref["value"] and pairs["dtype"] == "float32"
    assert f32["value"] != ref["value"]  # not vacuous: f32 cannot hold 1e8 + 1/1024
    assert runs["pairs"]["float_policies"] == ["pairs"] and runs["f32"]["float_policies"] == ["f32"]


def test_the_x64_warning_says_how_float64_is_computed(runs: dict[str, Any]) -> None:
    """The X64DisabledWarning's second line says float64 is computed as float32 and how
    to get pairs, or, under NO64_FLOAT_POLICY=pairs, that it is computed as pairs."""
    (f32,) = runs["f32"]["x64_warnings"]
    assert f32.splitlines()[1].startswith(
        "JAX computes in 32 bits: float64 as float32 (NO64_FLOAT_POLICY=pairs for pairs)")
    (pairs,) = runs["pairs"]["x64_warnings"]
    assert pairs.splitlines()[1].startswith("JAX computes in 32 bits: float64 as pairs of float32")
    assert not runs["ref"]["x64_warnings"]


def test_host_float_beyond_f32_is_refused(runs: dict[str, Any]) -> None:
    """A float64 host argument beyond float32's range is refused at the call's line (it
    would become inf), under every float policy; x64 computes with it."""
    line = next(i for i, t in enumerate(SCRIPT.read_text().splitlines(), 1)
                if "jax.jit(fun, **kwargs)(*args)" in t)
    assert runs["ref"]["huge_float"]["value"] == [2.0, 2e300]
    for tag in ("f32", "pairs", "strict"):
        got = runs[tag]["huge_float"]
        assert got.get("error") == "HostRangeError", (tag, got)
        assert f"meaning_programs.py:{line}" in got["message"]
        assert "beyond float32's range" in got["message"]
        # the float policy cannot help, and the message names what does
        assert ("would become inf under either float policy (NO64_FLOAT_POLICY=pairs keeps float32's range)"
                in got["message"]), got["message"]
        assert "NO64_INTEGER_POLICY (no64.jit: integer_policy=) 'saturate' or 'wrap'" in got["message"]


def test_effects_keep_the_x64_meaning(runs: dict[str, Any]) -> None:
    """A function with jax.debug.print is judged by its x64 program like any
    other (its print kept there, its boundary made 32-bit: tests/jax/
    test_callback_runs.py): the default policy reports its cumsum past 2**31
    at its line (UnprovenIntegerWarning), strict refuses it there, exact
    refuses the result 2**32 the 32-bit array cannot hold; no
    NoX64MeaningWarning, never a silent number."""
    assert runs["ref"]["effects"]["value"] == 2**32
    default = runs["f32"]["effects"]
    assert default["warnings"] == [["UnprovenIntegerWarning", marked_line(SCRIPT, "effects")]], default
    strict = runs["strict"]["effects"]
    assert strict.get("error") == "NarrowingError", strict
    assert f"meaning_programs.py:{marked_line(SCRIPT, 'effects')}" in strict["message"]
    exact = runs["exact"]["effects"]
    assert exact.get("error") == "OutputRangeError", exact


def test_eager_primitive_on_64bit_host_data_has_its_x64_meaning(runs: dict[str, Any]) -> None:
    """An eager lax primitive on int64 host data (JAX canonicalises its operands to int32
    before it runs) computes the x64 program's popcnt under every policy: 64 for -1."""
    assert runs["ref"]["eager_popcnt"]["value"] == [64, 2]
    for tag in ("f32", "strict", "exact"):
        got = runs[tag]["eager_popcnt"]
        assert got.get("value") == [64, 2], (tag, got)
        assert not got["warnings"], (tag, got)


def test_host_data_entering_a_vmap_outside_jit_is_judged_as_in_a_jit(runs: dict[str, Any]) -> None:
    """jax.vmap(f)(int64 host data) outside any jit, f calling jnp functions: the vmap
    runs in a jit of its own, whose x64 program squares in 64 bits -- reported at the line
    under default (computed as 32-bit values there: 408 where x64 gives 0), refused under
    strict, the x64 value under exact, as jax.jit(jax.vmap(f)) gives."""
    line = marked_line(SCRIPT, "square_mod")
    assert runs["ref"]["vmap_host_data"]["value"] == [0, 0, 0]
    default = runs["f32"]["vmap_host_data"]
    assert default.get("value") == [408, 408, 408], default
    assert default["warnings"] == [["UnprovenIntegerWarning", line]], default
    strict = runs["strict"]["vmap_host_data"]
    assert strict.get("error") == "NarrowingError" and f"meaning_programs.py:{line}" in strict["message"], strict
    exact = runs["exact"]["vmap_host_data"]
    assert exact.get("value") == [0, 0, 0] and not exact["warnings"], exact


def test_index_normalisation_of_take_is_proven_under_strict(runs: dict[str, Any]) -> None:
    """jnp.take and Flax's Embed of int64 token ids: JAX normalises each index by
    where(i < 0, i + n, i) in jnp.where's own jit; the sum is proven inside 32 bits where
    it is selected, so strict accepts the program and every policy gives the x64 rows."""
    for name in ("take", "flax_embed"):
        ref = runs["ref"][name]
        assert "value" in ref, ref
        for tag in ("f32", "strict", "exact"):
            got = runs[tag][name]
            assert got.get("value") == ref["value"], (tag, name, got)
            assert not got["warnings"], (tag, name, got)


def test_assume_states_a_range_strict_and_exact_accept(runs: dict[str, Any]) -> None:
    """no64.assume(mask, 0, 1) in the program bounds the int64 sum of an int32 0/1 mask by
    its element count: strict accepts it and exact returns it in int32, with the x64 value
    (run without no64, the same program gives it too); without the assumption strict
    refuses the sum at the line, and exact checks it by value when it runs."""
    ref = runs["ref"]["mask_sum_assumed"]
    assert ref["value"] == runs["ref"]["mask_sum"]["value"] == 86
    for tag in ("f32", "strict", "exact"):
        got = runs[tag]["mask_sum_assumed"]
        assert got.get("value") == 86 and not got["warnings"], (tag, got)
    line = marked_line(SCRIPT, "mask_sum")
    strict = runs["strict"]["mask_sum"]
    assert strict.get("error") == "NarrowingError" and f"meaning_programs.py:{line}" in strict["message"]
    # exact computes the sum on words and checks it by value when it runs: it fits
    assert runs["exact"]["mask_sum"].get("value") == 86, runs["exact"]["mask_sum"]


def test_eager_primitive_mixing_host_data_and_an_eager_array_has_the_x64_meaning(runs: dict[str, Any]) -> None:
    """An eager lax.add of jnp.arange(2) (int64 under x64: no64 notes that of the int32
    array it makes) and int64 host data is the x64 program's int64 sum: its result, which
    the 32-bit array JAX returns may not hold, is reported at the line under default,
    refused there under strict, and checked by value under exact (it fits); an eager
    float64 scalar under grad (floats are float32 under this float policy) gives no word."""
    line = marked_line(SCRIPT, "mixed")
    assert runs["ref"]["eager_mixed"]["value"] == [2**31 - 1, 2]
    default = runs["f32"]["eager_mixed"]
    assert default["value"] == [2**31 - 1, 2]
    assert ["UnprovenIntegerWarning", line] in default["warnings"], default
    got = runs["strict"]["eager_mixed"]
    assert got.get("error") == "NarrowingError", got
    assert f"meaning_programs.py:{line}" in got["message"], got["message"]
    # exact checks the sum by value when it runs: it fits, and is returned
    assert runs["exact"]["eager_mixed"]["value"] == [2**31 - 1, 2], runs["exact"]["eager_mixed"]
    for tag in ("f32", "strict", "exact"):
        got = runs[tag]["grad_f64_scalar"]
        assert got.get("value") == [2.0, 2.0, 2.0] and not got["warnings"], (tag, got)


def test_cache_is_keyed_by_the_host_dtypes(runs: dict[str, Any]) -> None:
    """A jitted function called with int32 data, then with int64 host data of the same
    shape, is not served the first call's 32-bit program: the second call is judged by its
    own x64 program (a 64-bit square): reported at the line under default, refused under
    strict, the x64 value under exact -- never JAX's cached int32 answer unwarned."""
    line = marked_line(SCRIPT, "cache_order")
    ref = runs["ref"]["cache_order"]
    assert ref["value"] == [0, 0, 0]  # 10**10 % 1000; int32 wraps to 1410065408 -> 408
    default = runs["f32"]["cache_order"]
    assert ["UnprovenIntegerWarning", line] in default["warnings"], default
    strict = runs["strict"]["cache_order"]
    assert strict.get("error") == "NarrowingError" and "unproven" in strict["message"], strict
    assert runs["exact"]["cache_order"].get("value") == [0, 0, 0], runs["exact"]["cache_order"]


def test_jit_under_vmap_outside_jit_has_the_x64_meaning(runs: dict[str, Any]) -> None:
    """vmap of a jit, called eagerly, runs in a jit of its own: the inner jit is traced in
    its x64 trace, and popcnt of an int64 gives 64 under every policy, as jit of the vmap
    does -- not JAX's 32-bit popcnt (32 for -1)."""
    assert runs["ref"]["vmap_of_jit"]["value"] == [64, 2]
    assert runs["jax32"]["vmap_of_jit"]["value"] == [32, 2]  # not vacuous: the 32-bit program differs
    for tag in ("f32", "strict", "exact"):
        for name in ("vmap_of_jit", "jit_of_vmap"):
            got = runs[tag][name]
            assert got.get("value") == [64, 2] and not got["warnings"], (tag, name, got)


def test_an_error_while_taking_the_meaning_is_no_verdict(runs: dict[str, Any]) -> None:
    """A computation evaluated eagerly while tracing (jax.ensure_compile_time_eval, as
    Diffrax does) is a 64-bit computation in the x64 trace, which the no64 platform
    refuses: the function has no x64 meaning, and says so at the call's line (default:
    JAX's 32-bit program runs, 704 where x64 gives 0) or is refused (strict, exact) --
    never run unjudged as if it had been judged."""
    line = marked_line(SCRIPT, "cte")
    assert runs["ref"]["compile_time_eval"]["value"] == 0
    default = runs["f32"]["compile_time_eval"]
    assert ["NoX64MeaningWarning", line] in default["warnings"] and default["value"] == 704, default
    for tag in ("strict", "exact"):
        got = runs[tag]["compile_time_eval"]
        assert got.get("error") == "NoX64MeaningError" and "tracing it with x64 on raised" in got["message"]


def test_no64_jit_exact_takes_a_typed_key() -> None:
    """policy="exact" of a function taking a typed PRNG key: the key's words go in, the
    x64 program's bits come out (bit for bit with restore_dtypes)."""
    key = jax.random.key(7)
    f = lambda k: jax.random.bits(k, (4,), jnp.uint64)  # noqa: E731
    got = no64.jit(f, policy="exact", restore_dtypes=True)(key)
    with enable_x64(True):
        ref = jax.jit(f)(key)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))


def test_pairs_random_floats_from_the_x64_bits() -> None:
    """float_policy="pairs": jax.random.uniform's float64 from 52 random bits becomes a
    pair from the same bits (within 2**-48 of the x64 draw, where the f32 idiom keeps 23
    bits); an int64 seed beyond int32 is a one-line ArgumentRangeError, not a crash."""
    f = lambda s: jax.random.uniform(jax.random.PRNGKey(s), (64,))  # noqa: E731
    got = np.asarray(no64.jit(f, float_policy="pairs", restore_dtypes=True)(np.int64(12345)))
    with enable_x64(True):
        ref = np.asarray(jax.jit(f)(np.int64(12345)))
    assert got.dtype == np.float64
    err = np.abs(got - ref).max()
    assert err <= 2.0**-48, err
    f32 = np.asarray(no64.jit(f)(np.int64(12345)))
    assert np.abs(f32 - ref).max() > 2.0**-30  # not vacuous: the f32 draw differs
    with pytest.raises(no64.ArgumentRangeError, match="outside int32's range"):
        no64.jit(f, float_policy="pairs")(np.int64(2**40 + 5))


def test_pairs_float_to_int64_not_proven_is_reported() -> None:
    """no64.jit(float_policy="pairs") of a float -> int64 convert whose values may not fit
    in 32 bits: reported at its line under the default policy (never silently another
    number), refused under strict, the x64 value under exact with restore_dtypes."""
    intent.clear_warned()
    f = lambda x: x.astype(jnp.int64)  # noqa: E731  # CONVERT LINE
    x = np.array([3e9, 2.5e15])
    with pytest.warns(no64.UnprovenIntegerWarning, match=r"test_meaning_runs.py:\d+ \(convert"):
        no64.jit(f, float_policy="pairs", restore_dtypes=True)(x)
    with pytest.raises(no64.NarrowingError, match="unproven"):
        no64.jit(f, float_policy="pairs", policy="strict", restore_dtypes=True)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.UnprovenIntegerWarning)
        got = no64.jit(f, float_policy="pairs", policy="exact", restore_dtypes=True)(x)
    assert got.tolist() == [3_000_000_000, 2_500_000_000_000_000]


def test_eager_samplers_draw_the_x64_programs_numbers(runs: dict[str, Any]) -> None:
    """jax.random.normal/uniform/randint called outside any jit fix their dtype (float64,
    int64: 64 random bits) in Python before their own jit: each runs in a jit of its own,
    so the numbers are the x64 program's (float64's rounded to float32; the same integers)
    under every policy -- not JAX's 32-bit draw, which is another set of numbers (more
    than 1e-3 apart, where these are 1e-5 apart at most)."""
    for name in ("eager_normal", "eager_uniform", "eager_randint"):
        ref = np.asarray(runs["ref"][name]["value"])
        jax32 = np.asarray(runs["jax32"][name]["value"])
        assert not np.allclose(jax32, ref, rtol=1e-3), name  # not vacuous: other numbers
        for tag in ("f32", "pairs", "strict", "exact"):
            got = runs[tag][name]
            assert "value" in got and not got["warnings"], (tag, name, got)
            if name == "eager_randint":
                assert got["value"] == ref.tolist() and got["dtype"] == "int32", (tag, got)
            else:
                assert got["dtype"] == "float32", (tag, got)
                # the x64 program's transform of the same bits, computed in float32
                # (float32's erfinv: a few units in its last place)
                np.testing.assert_allclose(got["value"], ref, rtol=1e-5, err_msg=f"{tag} {name}")


def test_eager_bits_are_64_bits_or_said(runs: dict[str, Any]) -> None:
    """jax.random.bits(key) outside any jit draws uint64 in the x64 program: the 32-bit
    array JAX returns cannot hold them, which the default policy reports at the line and
    exact refuses when it runs -- never JAX's 32 random bits in their place unwarned."""
    line = marked_line(SCRIPT, "eager_bits")
    ref = runs["ref"]["eager_bits"]
    assert ref["dtype"] == "uint64" and max(ref["value"]) >= 2**32
    default = runs["f32"]["eager_bits"]
    assert ["UnprovenIntegerWarning", line] in default["warnings"], default
    assert runs["exact"]["eager_bits"].get("error") == "OutputRangeError", runs["exact"]["eager_bits"]
    assert runs["strict"]["eager_bits"].get("error") == "NarrowingError", runs["strict"]["eager_bits"]


def test_a_host_sentinel_meeting_its_image_is_never_silent(runs: dict[str, Any]) -> None:
    """A host INT64_MAX compared with INT32_MAX: its 32-bit image is INT32_MAX itself, so
    the 32-bit comparison says False where x64 says True -- reported at the line with an
    UnprovenIntegerWarning under default, refused there under strict; under exact the x64
    module takes the sentinel back at its entry and gives the x64 answer."""
    line = marked_line(SCRIPT, "sentinel")
    assert runs["ref"]["sentinel_meets"]["value"] is True
    default = runs["f32"]["sentinel_meets"]
    assert ["UnprovenIntegerWarning", line] in default["warnings"], default
    got = runs["strict"]["sentinel_meets"]
    assert got.get("error") == "HostRangeError", got
    assert f"meaning_programs.py:{line}" in got["message"] and "meets" in got["message"], got
    assert runs["exact"]["sentinel_meets"]["value"] is True, runs["exact"]["sentinel_meets"]


@pytest.mark.parametrize("case", ["sentinel_equal", "sentinel_min", "sentinel_constant_rem"])
def test_host_sentinels_keep_their_meaning(runs: dict[str, Any], case: str) -> None:
    """A host sentinel argument compared with the sentinel constant, INT64_MIN beside
    ordinary values compared with INT32_MIN, and a sentinel constant read as a number
    (``jnp.full(3, INT64_MAX) % 1000``, which the x64 module holds exactly): the x64
    program's values under exact, with no word said (the 32-bit program gave False and
    a refusal); under default and strict, which compute with the sentinels' 32-bit
    images, the x64 value or a word at the line, never a silently other value."""
    ref = runs["ref"][case]["value"]
    assert runs["exact"][case] == {"value": ref, "dtype": runs["exact"][case]["dtype"], "warnings": []}
    for tag in ("f32", "strict"):
        got = runs[tag][case]
        said = got.get("error") == "HostRangeError" or any(
            w[0] == "UnprovenIntegerWarning" for w in got["warnings"])
        assert got.get("value") == ref or said, (tag, got, ref)


def test_donated_argument_keeps_its_buffer_and_one_warning(runs: dict[str, Any]) -> None:
    """A jit donating a float32 argument whose x64 program returns float64 (it adds a
    float64 constant): what runs is the x64 module, converted, and it aliases what JAX's
    32-bit module aliases -- the result is written into the donated buffer, as JAX's own
    32-bit program does -- and the donation JAX cannot use is warned of once, not again
    for the x64 module."""
    jax32 = runs["jax32"]["donated"]["value"]
    assert jax32 == [1.0, 1.0, 4.0, 4.0, 4.0, 4.0], jax32
    for tag in ("f32", "pairs", "strict", "exact"):
        got = runs[tag]["donated"]
        assert got.get("value") == jax32 and not got["warnings"], (tag, got)
