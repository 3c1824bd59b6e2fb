"""Real programs whose 64 bits are load-bearing, converted with
``policy="exact"`` and bit-identical to the 64-bit programs.

* a PCG generator (64-bit LCG state with multiplier 6364136223846793005,
  xorshift, a data-dependent 32-bit rotate of the output and a 64-bit
  rotate of the state), stepped in a loop;
* the sum and the cumulative sums of squares of int32 values (each
  square needs 62 bits, their sums 64);
* feature hashing for an embedding lookup: splitmix64 and FNV-1a over int32
  token ids (and bigrams of them), the bucket taken with a power-of-two
  mask (no division), the rows gathered from a float32 table.

Each runs on inputs over the whole 32-bit range (the extremes, 0, +-1,
and random values) against the x64 program on the CPU backend; the
converted module holds no 64-bit type.  The PCG and hashing programs, and
a cumulative sum of squares of int64 inputs, also go through the command
line: ``no64 convert --policy exact`` of the lowered module, then the
written file runs (its 64-bit inputs given as 32-bit values, its emulated
outputs joined from their words) and is compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
import no64.io
from no64.cli import main
from no64.jax.reference import (
    compare_outputs,
    compare_with_reference,
    converted_inputs,
    lower_x64,
    run_module,
    word_pair_inputs,
    word_pair_outputs,
)
from no64.transforms.emulate import join_words

I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
RNG = np.random.default_rng(12)
EXTREMES = np.array([I32.max, I32.min, 0, -1, 1, I32.max - 1, I32.min + 1, 46341, -46341, 65536, -65536, 3,
                     1 << 30, -(1 << 30), 2**31 - 2**15, 7], np.int32)
N = EXTREMES.size


def int32_sets() -> list[np.ndarray]:
    """The extremes, and random values over the whole int32 range."""
    return [EXTREMES, RNG.integers(I32.min, I32.max, N, endpoint=True, dtype=np.int32),
            EXTREMES[::-1].copy()]


def u64(v):
    return v.astype(jnp.uint64)


def shl(a, n):
    return lax.shift_left(a, jnp.full_like(a, n))


def shr(a, n):
    return lax.shift_right_logical(a, jnp.full_like(a, n))


# --------------------------------------------------------------------- PCG
PCG_MULT = 6364136223846793005
PCG_INC = 1442695040888963407


def pcg32(seeds, streams):
    """PCG-XSH-RR: four 32-bit outputs per generator, and the final state
    (64-bit rotated by its own low 6 bits)."""
    state = u64(seeds) * jnp.uint64(PCG_MULT) + (shl(u64(streams), 1) | jnp.uint64(1))
    inc = shl(u64(streams), 1) | jnp.uint64(1)

    def step(_, carry):
        state, out = carry
        old = state
        state = old * jnp.uint64(PCG_MULT) + inc
        xorshifted = (shr(shr(old, 18) ^ old, 27)).astype(jnp.uint32)
        rot = shr(old, 59).astype(jnp.uint32)
        word = lax.shift_right_logical(xorshifted, rot) | lax.shift_left(xorshifted, (-rot) & jnp.uint32(31))
        out = jnp.concatenate([out[:, 1:], word[:, None]], axis=1)
        return state, out

    state, out = lax.fori_loop(0, 4, step, (state, jnp.zeros((seeds.shape[0], 4), jnp.uint32)))
    r = state & jnp.uint64(63)
    rotated = lax.shift_left(state, r) | lax.shift_right_logical(state, (jnp.uint64(64) - r) & jnp.uint64(63))
    return out, rotated


def pcg32_numpy(seeds: np.ndarray, streams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same generator in Python integers, independently of JAX."""
    mask = (1 << 64) - 1
    outs, finals = [], []
    for s, t in zip(seeds.tolist(), streams.tolist()):
        inc = ((t % 2**64) << 1 | 1) & mask
        state = ((s % 2**64) * PCG_MULT + inc) & mask
        words = []
        for _ in range(4):
            old = state
            state = (old * PCG_MULT + inc) & mask
            x = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
            rot = old >> 59
            words.append(((x >> rot) | (x << ((-rot) & 31))) & 0xFFFFFFFF)
        r = state & 63
        finals.append(((state << r) | (state >> ((64 - r) & 63))) & mask)
        outs.append(words)
    return np.array(outs, np.uint32), np.array(finals, np.uint64)


def test_pcg_hash_is_bit_identical() -> None:
    for seeds in int32_sets():
        streams = RNG.integers(0, U32.max, N, endpoint=True, dtype=np.uint32)
        result = compare_with_reference(pcg32, [seeds, streams], policy="exact")
        assert no64.find_64bit(result.demoted) == []
        assert result.report.emulated_outputs == [1]  # the state comes back as words
        words, state = pcg32_numpy(seeds, streams)
        assert np.array_equal(result.demoted_values[0], words)
        assert np.array_equal(result.demoted_values[1], state)
        assert result.report.emulated_by_op.get("stablehlo.multiply", 0) >= 2, result.report.emulated_by_op


# ----------------------------------------------------------- sums of squares
def wrap64(v: int) -> int:
    """``v`` as int64 arithmetic leaves it (modulo 2**64, signed)."""
    v %= 2**64
    return v - 2**64 if v >= 2**63 else v


SQUARES = {
    "sum": (lambda v: (v.astype(jnp.int64) ** 2).sum(), lambda sq: [sum(sq)]),
    "cumsum": (lambda v: jnp.cumsum(v.astype(jnp.int64) ** 2), lambda sq: np.cumsum(np.array(sq, object)).tolist()),
    "reversed_cumsum": (lambda v: jnp.cumsum((v.astype(jnp.int64) * v.astype(jnp.int64))[::-1]),
                        lambda sq: np.cumsum(np.array(sq[::-1], object)).tolist()),
}


@pytest.mark.parametrize("name", sorted(SQUARES))
def test_sums_of_squares_are_bit_identical(name: str) -> None:
    fn, expected = SQUARES[name]
    for x in [*int32_sets(), np.full(N, I32.min, np.int32)]:
        result = compare_with_reference(fn, [x], policy="exact")
        assert no64.find_64bit(result.demoted) == []
        assert result.report.emulated_outputs == [0]
        want = [wrap64(v) for v in expected([int(v) ** 2 for v in x.tolist()])]
        assert np.asarray(result.demoted_values[0]).ravel().tolist() == want
    # sixteen times the largest square, 2**62, is 2**66: it wraps to 0
    assert want[-1] == 0


# ----------------------------------------------------- hashed embeddings
TABLE = 512  # rows of the embedding table: a power of two
DIM = 8


def splitmix64(x):
    z = u64(x) + jnp.uint64(0x9E3779B97F4A7C15)
    z = (z ^ shr(z, 30)) * jnp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ shr(z, 27)) * jnp.uint64(0x94D049BB133111EB)
    return z ^ shr(z, 31)


FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211


def fnv1a(tokens):
    """FNV-1a (64-bit) over the four bytes of each int32 token, then over
    the next token's bytes (a bigram hash): one hash per position."""
    nxt = jnp.roll(tokens, -1)
    h = jnp.full(tokens.shape, FNV_OFFSET, jnp.uint64)
    for t in (tokens, nxt):
        for k in range(4):
            byte = (lax.shift_right_logical(t, jnp.full_like(t, 8 * k)) & 0xFF).astype(jnp.uint64)
            h = (h ^ byte) * jnp.uint64(FNV_PRIME)
    return h


def hashed_embedding(tokens, table):
    """Two hashed lookups per token (splitmix64 of the id, FNV-1a of the
    bigram), each bucket the hash masked to the table size."""
    h1 = splitmix64(tokens)
    h2 = fnv1a(tokens)
    b1 = h1 & jnp.uint64(TABLE - 1)
    b2 = shr(h2, 40) & jnp.uint64(TABLE - 1)
    return table[b1] + table[b2], b1, b2, h1 ^ h2


def hashes_numpy(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mask = (1 << 64) - 1
    h1s, h2s = [], []
    ids = [t % 2**32 for t in tokens.tolist()]
    for i, t in enumerate(ids):
        z = ((t | (0xFFFFFFFF00000000 if t >= 2**31 else 0)) + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        h1s.append(z ^ (z >> 31))
        h = FNV_OFFSET
        for word in (t, ids[(i + 1) % len(ids)]):
            for k in range(4):
                h = ((h ^ ((word >> (8 * k)) & 0xFF)) * FNV_PRIME) & mask
        h2s.append(h)
    return np.array(h1s, np.uint64), np.array(h2s, np.uint64)


def test_hashed_embedding_lookup_is_bit_identical() -> None:
    table = RNG.standard_normal((TABLE, DIM)).astype(np.float32)
    for tokens in int32_sets():
        result = compare_with_reference(hashed_embedding, [tokens, table], policy="exact")
        assert no64.find_64bit(result.demoted) == []
        emb, b1, b2, mixed = result.demoted_values
        # the buckets fit in 32 bits: they come back as single values
        assert result.report.emulated_outputs == [3]
        h1, h2 = hashes_numpy(tokens)
        assert np.array_equal(b1, (h1 & np.uint64(TABLE - 1)).astype(np.uint32))
        assert np.array_equal(b2, ((h2 >> np.uint64(40)) & np.uint64(TABLE - 1)).astype(np.uint32))
        assert np.array_equal(mixed, h1 ^ h2)
        assert np.array_equal(emb, table[b1] + table[b2])  # the rows, bit for bit
        assert np.array_equal(result.reference_values[0], emb)


# ------------------------------------------------------------ command line
def cli_cases() -> dict:
    """Programs and their arguments for the command-line round trip."""
    streams = RNG.integers(0, U32.max, N, endpoint=True, dtype=np.uint32)
    table = RNG.standard_normal((TABLE, DIM)).astype(np.float32)
    return {
        "pcg32": (pcg32, lambda x: [x, streams]),
        "hashed_embedding": (hashed_embedding, lambda x: [x, table]),
        # a 64-bit input over the whole int64 range: the converted program takes its words
        "cumsum_of_squares_int64_input": (lambda v: jnp.cumsum(v * v), lambda x: [wide_int64(x)]),
        "seconds_between_timestamps": (lambda t: (t - t[0]) // 10**9, lambda x: [timestamps(x)]),
    }


def wide_int64(x: np.ndarray) -> np.ndarray:
    """int64 values over the whole range from int32 ones: the extremes (INT64_MIN/MAX
    beside INT32_MIN/MAX), then both words from ``x``."""
    w = x.astype(np.int64)
    out = (w << 32) ^ (w & 0xFFFF_FFFF) ^ np.int64(0x5DEE_CE66_D1CE_4E5B)
    out[:6] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, I32.max, I32.min, 1 << 40, -(1 << 40)]
    return out


def timestamps(x: np.ndarray) -> np.ndarray:
    """Nanosecond timestamps around 1.7e18."""
    return np.int64(1_700_000_000_000_000_000) + np.abs(x.astype(np.int64)) * 1_000_003


@pytest.mark.parametrize("name", sorted(cli_cases()))
def test_cli_convert_exact_runs_bit_identical(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fn, make_args = cli_cases()[name]
    original = lower_x64(fn, *make_args(EXTREMES))
    src, dest = tmp_path / f"{name}.mlir", tmp_path / f"{name}.no64.mlir"
    src.write_text(original.operation.get_asm(enable_debug_info=True))
    code = main(["convert", str(src), "-o", str(dest), "--policy", "exact", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    converted = no64.io.load(dest)
    assert no64.find_64bit(converted) == []
    wide = word_pair_outputs(original, converted)
    assert wide and report["emulated_outputs"] == wide and report["values_emulated"] > 0
    wide_in = word_pair_inputs(original, converted)
    assert report["emulated_inputs"] == wide_in
    assert bool(wide_in) == name.endswith(("int64_input", "timestamps"))
    for x in int32_sets():
        args = make_args(x)
        ref = run_module(original, args, strict=False)
        got = run_module(converted, converted_inputs(args, wide_in), strict=True)
        for j in wide:
            got[j] = join_words(got[j])
        compare_outputs(ref, got, what=f"{dest.name} written by no64 convert --policy exact", wide=wide)
        for j in wide:
            assert np.array_equal(ref[j], got[j])
