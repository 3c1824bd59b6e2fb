"""64-bit integer inputs under ``policy="exact"``: an input not proven to fit enters
the converted module as ``[..., 2]`` 32-bit words (low, high) and is computed exactly.

Every program is lowered with x64 on and run without no64 as the reference; the
converted program is run on the same inputs -- over the whole 64-bit range: nanosecond
timestamps, 64-bit feature ids, 40-bit hash keys, ``INT64_MIN``/``INT64_MAX`` next to the
int32 extremes -- split into words with :func:`no64.split_words`, and every integer
output is compared bit for bit.  Under the other policies such an input is narrowed and
judged ``unproven``, never ``exact``; a declared range keeps it 32-bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
import no64.io
from no64.cli import main
from no64.jax.reference import (
    compare_with_reference,
    converted_inputs,
    lower_x64,
    main_signature,
    run_module,
)

I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
RNG = np.random.default_rng(19)

#: int64 values that need all 64 bits, beside the int32 extremes
WIDE = np.array([I64.max, I64.min, I64.max - 1, I64.min + 1, I32.max, I32.min, I32.max + 1, I32.min - 1,
                 0, -1, 1, 1 << 40, -(1 << 40), (1 << 40) - 1, 0x7A3F_12C4_9E01_5B66,
                 -0x5DEE_CE66_D1CE_4E5B, 1_700_000_000_123_456_789, U32.max], dtype=np.int64)
N = WIDE.size
UWIDE = np.array([U64.max, U64.max - 1, 1 << 63, (1 << 63) - 1, U32.max, U32.max + 1, 0, 1, 1 << 40,
                  0xC2B2_AE3D_27D4_EB4F, I32.max, 1 << 32, 3, 0xFFFF_FFFF_0000_0000, 7, 1 << 31, 2, 5],
                 dtype=np.uint64)


def wide_sets() -> list[np.ndarray]:
    """The extremes, their reverse, and random values over the whole int64 range."""
    return [WIDE, WIDE[::-1].copy(), RNG.integers(I64.min, I64.max, N, endpoint=True, dtype=np.int64)]


def timestamps() -> np.ndarray:
    return np.int64(1_700_000_000_000_000_000) + np.array(
        [0, 1, 100, 86_400, 3_600, 59, 1_000_000, 2**31, 2**32 + 1, 7, 12, 13, 14, 15, 16, 17, 18, 19],
        np.int64) * 10**9 + np.arange(N, dtype=np.int64) * 999_999_937


def keys40() -> np.ndarray:
    """40-bit hash keys."""
    return (RNG.integers(0, 1 << 40, N, dtype=np.int64) | (np.arange(N, dtype=np.int64) << 36)) & ((1 << 40) - 1)


# ---------------------------------------------------------------- programs
def elapsed_seconds(t):
    return (t - t[0]) // 10**9


def feature_hash(ids, n_buckets):
    """64-bit feature ids hashed into buckets with a 64-bit multiplier."""
    h = (ids ^ lax.shift_right_logical(ids, jnp.int64(31))) * np.int64(-0x4B47_5F55_0C8F_8E6B)
    return lax.rem(lax.shift_right_logical(h, jnp.int64(1)), n_buckets), h


def key_table(keys, ids):
    """40-bit keys: masks, compares, sorting, min/argmin, a sum; mixed with 64-bit ids."""
    order = jnp.argsort(keys)
    return {
        "sorted": keys[order],
        "hi_bits": keys >> 32,
        "in_range": (keys >= (1 << 39)) & (keys < (1 << 40)),
        "argmin": jnp.argmin(ids),
        "argmax": jnp.argmax(ids),
        "min": jnp.min(ids),
        "is_max": ids == I64.max,
        "is_min": ids == I64.min,
        "sum": jnp.sum(keys),
        "mixed": keys * 3 + ids,
        "as_i32": ids.astype(jnp.int32),
        "as_f32": ids.astype(jnp.float32),
        "clamped": jnp.clip(ids, I32.min, I32.max).astype(jnp.int32),
    }


def unsigned_mix(u, x):
    """uint64 values over the whole range next to int64 ones."""
    return u * np.uint64(0x9E37_79B9_7F4A_7C15) + (u >> np.uint64(33)), u < np.uint64(1 << 63), \
        (x.astype(jnp.uint64) ^ u), jnp.max(u)


def passthrough(x, y):
    """An input returned as it is, and through a loop, a call and a scan."""
    def body(carry, xi):
        return carry + xi, carry

    total, prefix = lax.scan(body, jnp.int64(0), x)
    n = lax.fori_loop(0, 3, lambda i, c: c * 3 + y, y)
    return x, total, prefix, n, jax.jit(lambda a: a - 1)(x)


CASES = {
    "timestamps": (elapsed_seconds, lambda w: [timestamps()]),
    "feature_hash": (feature_hash, lambda w: [w, np.int64(1_000_003)]),
    "feature_hash_64bit_modulus": (feature_hash, lambda w: [w, np.int64((1 << 40) + 15)]),
    "key_table": (key_table, lambda w: [keys40(), w]),
    "unsigned_mix": (unsigned_mix, lambda w: [UWIDE, w]),
    "passthrough": (passthrough, lambda w: [w, w[:4].copy()]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_demote_exact_inputs_are_words_and_bit_identical(name: str) -> None:
    fn, make_args = CASES[name]
    for w in wide_sets():
        result = compare_with_reference(fn, make_args(w), policy="exact")
        report = result.report
        n_wide = sum(1 for a in make_args(w) if np.asarray(a).dtype.itemsize == 8)
        assert report.emulated_inputs == list(range(n_wide))
        assert report.exact and report.values_emulated > 0
        in_specs, _ = main_signature(result.demoted)
        for i in report.emulated_inputs:
            a = np.asarray(make_args(w)[i])
            assert in_specs[i].shape == a.shape + (2,)
            assert in_specs[i].dtype == (np.uint32 if a.dtype == np.uint64 else np.int32)
        for j in report.emulated_outputs:
            np.testing.assert_array_equal(result.demoted_values[j], result.reference_values[j])
    assert not any(n.verdict in ("exact", "unproven") and n.role == "argument" and n.op == "func.func"
                   for n in report.narrowings)


def test_timestamps_give_seconds() -> None:
    """The held-out case: [0, 1, 100] seconds between timestamps in nanoseconds."""
    t = np.array([0, 1, 100], np.int64) * 10**9 + 1_700_000_000_000_000_000
    m = lower_x64(elapsed_seconds, t)
    report = no64.demote(m, policy="exact")
    (seconds,) = run_module(m, [no64.split_words(t)])
    np.testing.assert_array_equal(no64.join_words(seconds), [0, 1, 100])
    assert report.emulated_inputs == [0] and report.verdicts.get("unproven", 0) == 0


def test_narrowed_inputs_are_never_exact_without_proof() -> None:
    """Default and permissive narrow an undeclared 64-bit input and record it unproven (a
    Narrowing record for the argument); strict refuses it, naming the argument; a declared
    range proves it."""
    t = timestamps()[:3]
    for policy in ("default", "permissive"):
        m = lower_x64(elapsed_seconds, t)
        report = no64.demote(m, policy=policy)
        args = [n for n in report.narrowings if n.op == "func.func" and n.role == "argument" and n.index == 0]
        assert args and all(n.verdict == "unproven" for n in args), report.narrowings
        assert report.emulated_inputs == [] and not report.exact
    with pytest.raises(no64.NarrowingError, match="func.func") as err:
        no64.demote(lower_x64(elapsed_seconds, t), policy="strict")
    assert err.value.narrowing.role == "argument" and err.value.narrowing.verdict == "unproven"
    m = lower_x64(lambda x: x + 1, np.zeros(3, np.int64))
    report = no64.demote(m, policy="strict", input_ranges={0: (-10, 10)})
    assert report.exact


def test_exact_with_narrowed_outputs_refuses_undeclared_inputs() -> None:
    """outputs="narrow" (a runtime that fixes the types, as JAX's compile hook) cannot take
    words: an undeclared 64-bit input would be narrowed without proof, which policy "exact"
    refuses; a declared range lets it through."""
    m = lower_x64(lambda x: x * 3, np.zeros(3, np.int64))
    text = str(m)
    with pytest.raises(no64.NarrowingError, match=r"func.func at x: argument #0 in \[-9223372036854775808, "
                       r"9223372036854775807\] is taken as a 32-bit value without a declared range "
                       r"\(unproven; refused by policy 'exact'\)"):
        no64.demote(m, policy="exact", outputs="narrow")
    assert str(m) == text  # left unchanged
    report = no64.demote(m, policy="exact", outputs="narrow", input_ranges={0: (-1000, 1000)})
    assert report.exact and report.emulated_inputs == []


def test_declared_range_keeps_an_input_32_bit() -> None:
    """A declared range (by position or by name) proves an input fits: it stays int32, and
    the program is exact on every value of the range; an undeclared one becomes words."""

    def f(tokens, t):
        return tokens * 2 + 1, (t - t[0]) // 10**9

    tokens = np.array([0, 50256, 7, 3, 0, 1], np.int64)
    t = timestamps()[:6]
    for ranges in ({0: (0, 50256)}, {"tokens": (0, 50256)}):
        result = compare_with_reference(f, [tokens, t], policy="exact")  # undeclared: both words
        assert result.report.emulated_inputs == [0, 1]
        m = lower_x64(f, tokens, t)
        report = no64.demote(m, policy="exact", input_ranges=ranges)
        assert report.emulated_inputs == [1]
        in_specs, _ = main_signature(m)
        assert [(s.shape, s.dtype) for s in in_specs] == [((6,), np.int32), ((6, 2), np.int32)]
        ref = run_module(lower_x64(f, tokens, t), [tokens, t], strict=False)
        got = run_module(m, converted_inputs([tokens, t], report.emulated_inputs))
        np.testing.assert_array_equal(got[0], ref[0])  # proven to fit: a 32-bit output
        np.testing.assert_array_equal(no64.join_words(got[1]), ref[1])


def test_inputs_proven_to_fit_add_nothing() -> None:
    """With every 64-bit input declared within 32 bits, policy "exact" converts the program
    exactly as the default policy does: nothing emulated, the same module."""

    def f(tokens, step):
        return jnp.cumsum(tokens % 100) * 3 + step + jnp.arange(6, dtype=jnp.int64)

    tokens, step = np.arange(6, dtype=np.int64), np.int64(5)
    ranges = {0: (0, 50256), 1: (0, 2**30)}
    default, exact = lower_x64(f, tokens, step), lower_x64(f, tokens, step)
    r_default = no64.demote(default, input_ranges=ranges)
    r_exact = no64.demote(exact, policy="exact", input_ranges=ranges)
    assert r_exact.values_emulated == r_exact.ops_emulated == 0 and r_exact.emulated_inputs == []
    assert str(default) == str(exact) and r_default.exact and r_exact.exact


def test_split_words_and_join_words() -> None:
    for a in (WIDE, UWIDE, WIDE.reshape(3, 6), np.int64(I64.min), np.uint64(U64.max), np.zeros((0, 2), np.int64)):
        w = no64.split_words(a)
        assert w.shape == np.shape(a) + (2,)
        assert w.dtype == (np.uint32 if np.asarray(a).dtype == np.uint64 else np.int32)
        back = no64.join_words(w)
        assert back.dtype == np.asarray(a).dtype
        np.testing.assert_array_equal(back, a)
    np.testing.assert_array_equal(no64.split_words(np.array([-1, 1 << 32, I64.min], np.int64)),
                                  np.array([[-1, -1], [0, 1], [0, I32.min]], np.int32))
    for bad in (np.zeros(3, np.int32), np.zeros(3, np.uint32), np.zeros(3, np.float64)):
        with pytest.raises(ValueError, match="not 64-bit integers"):
            no64.split_words(bad)
    assert "split_words" in no64.__all__


def test_report_lists_emulated_inputs() -> None:
    m = lower_x64(feature_hash, WIDE, np.int64(7))
    report = no64.demote(m, policy="exact")
    assert report.emulated_inputs == [0, 1]
    assert report.to_dict()["emulated_inputs"] == [0, 1]
    assert "inputs [0, 1] enter as [..., 2] word pairs (low, high)" in report.summary()
    m = lower_x64(feature_hash, WIDE, np.int64(7))
    assert no64.demote(m).to_dict()["emulated_inputs"] == []


def test_cli_convert_exact_takes_words_and_range_keeps_32_bit(tmp_path: Path, capsys) -> None:
    """no64 convert --policy exact: the written module takes the words of an undeclared
    64-bit input (its --json report lists it) and runs bit-identical to the 64-bit
    program; --range keeps the input 32-bit."""
    original = lower_x64(feature_hash, WIDE, np.int64(1_000_003))
    src = tmp_path / "hash.mlir"
    src.write_text(original.operation.get_asm(enable_debug_info=True))
    for ranges, words in (([], [0, 1]), (["--range", "1=1:2000000"], [0])):
        dest = tmp_path / f"hash{len(ranges)}.no64.mlir"
        code = main(["convert", str(src), "-o", str(dest), "--policy", "exact", "--json", *ranges])
        out, err = capsys.readouterr()
        assert code == 0, err
        report = json.loads(out)
        assert report["emulated_inputs"] == words
        converted = no64.io.load(dest)
        assert no64.find_64bit(converted) == []
        for w in wide_sets():
            args = [w, np.int64(1_000_003)]
            ref = run_module(original, args, strict=False)
            got = run_module(converted, converted_inputs(args, words))
            for j in report["emulated_outputs"]:
                got[j] = no64.join_words(got[j])
            for g, r in zip(got, ref):
                np.testing.assert_array_equal(np.asarray(g).astype(r.dtype), r)
