"""Emulated 64-bit division and remainder, and bit counts of emulated values.

Each program is JAX's own x64 program, converted under ``policy="exact"``
and compared bit for bit with the 64-bit program on the CPU backend
(:func:`no64.jax.reference.compare_with_reference`): dividends that need 64
bits divided by constants, by 32-bit values and by emulated values, of
either sign and zero; ``INT64_MIN`` made in the program and divided by -1;
JAX's floor division and modulo built on them; 64-bit dividends and
divisors given word by word over the whole 64-bit range; and the real
programs that need division -- ``jax.random.randint``/``choice`` with x64 on
and feature hashing modulo a prime.  XLA's own results are the reference
for the corner cases (``x / 0``, ``x % 0``, ``INT64_MIN / -1``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.analysis.ranges import RangeAnalysis
from no64.jax.reference import compare_with_reference, run_module
from support import ir, make_context

I32 = np.iinfo(np.int32)
I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
X = np.array(
    [0, 1, -1, 2, -2, 7, -7, I32.max, I32.min, I32.max - 1, I32.min + 1, 12345, -99999, 65535, 65536, 46341,
     3, 1_000_000_007],
    dtype=np.int32,
)
# divisors: zero, +-1, the 32-bit extremes, small and large
Y = np.array(
    [3, 0, -1, 1, I32.min, I32.max, -2, 0, 65536, -65535, 7, 1_000_000_007, -3, 2, 0, -1, I32.min + 1, 46341],
    dtype=np.int32,
)
HASH = int(np.uint64(0x9E3779B97F4A7C15).view(np.int64))  # the multiplier as an int64


def wide(x):
    return x.astype(jnp.int64)


def uwide(x):
    return x.astype(jnp.uint64)


def big(x):
    """A dividend that needs 64 bits (zero where x is)."""
    return wide(x) * 3_000_000_007


def ubig(x):
    return uwide(x) * jnp.uint64(0x9E3779B97F4A7C15)


def int64_min_where(x):
    """INT64_MIN where x is 0, computed in the program."""
    return (wide(x) - 2**62) * 2 + wide(x) * 2**40


def div_rem(a, b):
    return lax.div(a, b), lax.rem(a, b)


PROGRAMS = {
    # by constants
    "by_constant": lambda x, y: div_rem(big(x), jnp.int64(1_000_000_007)),
    "by_negative_constant": lambda x, y: div_rem(big(x), jnp.int64(-7)),
    "by_large_constant": lambda x, y: div_rem(big(x), jnp.int64(-(2**40) - 12345)),
    "by_one_and_minus_one": lambda x, y: div_rem(big(x), jnp.int64(1)) + div_rem(big(x), jnp.int64(-1)),
    "by_power_of_two": lambda x, y: div_rem(big(x), jnp.int64(2**32)),
    "unsigned_by_constant": lambda x, y: div_rem(ubig(x), jnp.uint64(1_000_000_007)),
    "unsigned_by_large_constant": lambda x, y: div_rem(ubig(x), jnp.uint64(0xFFFFFFFF00000001)),
    "by_small_constants": lambda x, y: tuple(
        r for c in (2, 3, 7, 10, 128, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1)
        for r in div_rem(big(x) * 3 + x, jnp.int64(c))),
    "by_negative_power_of_two": lambda x, y: div_rem(big(x), jnp.int64(-(2**62))),
    "unsigned_by_small_constants": lambda x, y: tuple(
        r for c in (1, 2, 3, 7, 10, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1, 2**64 - 1)
        for r in div_rem(ubig(x), jnp.uint64(c))),
    # by 32-bit values (sign- or zero-extended; zeros among them)
    "by_int32": lambda x, y: div_rem(big(x), wide(y)),
    "unsigned_by_uint32": lambda x, y: div_rem(ubig(x), uwide(y.astype(jnp.uint32))),
    "int32_by_int32": lambda x, y: div_rem(wide(x), wide(y)),  # INT32_MIN / -1 needs 33 bits
    # by emulated values
    "by_emulated": lambda x, y: div_rem(big(x), wide(y) * 5_000_000_011 + x),
    "by_emulated_zero": lambda x, y: div_rem(big(x), wide(y) * 2**33),
    "by_emulated_below_2_32": lambda x, y: div_rem(big(x), lax.rem(big(y), jnp.int64(3_000_000_000))),
    "unsigned_by_emulated": lambda x, y: div_rem(ubig(x), uwide(y) * jnp.uint64(2**33 + 1)),
    "small_by_emulated": lambda x, y: div_rem(wide(x), wide(y) * 2**35 - 1),
    # INT64_MIN made in the program
    "int64_min_by_minus_one": lambda x, y: div_rem(int64_min_where(x), jnp.where(y > 0, -1, y).astype(jnp.int64)),
    "int64_min_by_emulated_minus_one": lambda x, y: div_rem(int64_min_where(x), wide(y) * 2**33 - 1),
    # JAX's floor division and modulo (remainder, compare and select)
    "floor_divide": lambda x, y: big(x) // wide(y),
    "floor_divide_emulated": lambda x, y: big(x) // (wide(y) * 7_000_000_001),
    "mod_operator": lambda x, y: big(x) % (wide(y) * 7_000_000_001),
    "mod_int32": lambda x, y: big(x) % wide(y),
    "jnp_mod_prime": lambda x, y: jnp.mod(big(x), 1_000_000_007),
    "jnp_floor_divide_unsigned": lambda x, y: jnp.floor_divide(ubig(x), uwide(y.astype(jnp.uint32))),
    "divmod": lambda x, y: jnp.divmod(big(x), wide(y) - 2**33),
    # scalars and other shapes
    "scalar": lambda x, y: div_rem(wide(x[0]) * 2**40 + x[7], wide(y[2]) * 2**35 + 3),
    "scalar_by_zero": lambda x, y: div_rem(big(x[7]), wide(y[1])),
    "matrix": lambda x, y: div_rem(big(x).reshape(3, 6), wide(y).reshape(3, 6) * 2**31),
    "broadcast_divisor": lambda x, y: (big(x).reshape(3, 6) // (wide(y[:6]) * 2**33 + 1),
                                       big(x).reshape(3, 6) % (wide(y[:6]) * 2**33 + 1)),
    # bit counts of emulated values
    "clz": lambda x, y: (lax.clz(big(x)), lax.clz(wide(x) * 2**33), lax.clz(wide(y) * 2**33 - 1)),
    "clz_unsigned": lambda x, y: lax.clz(ubig(x)),
    "popcnt": lambda x, y: (lax.population_count(big(x)), lax.population_count(ubig(y))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_division_matches_the_64bit_program(name: str) -> None:
    result = compare_with_reference(PROGRAMS[name], [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    by_op = result.report.emulated_by_op
    expected = {"clz": "count_leading_zeros", "clz_unsigned": "count_leading_zeros", "popcnt": "popcnt"}
    wanted = expected.get(name)
    if wanted is None:
        assert by_op.get("stablehlo.divide", 0) + by_op.get("stablehlo.remainder", 0) > 0, by_op
    else:
        assert by_op.get("stablehlo." + wanted, 0) > 0, by_op


# ------------------------------------------------ any 64-bit dividend and divisor

#: 32-bit words at the edges of the division's cases and of its f32
#: estimates (values that round up or down to a power of two in f32, at the
#: last of f32's 24 bits and just past it)
EDGE_WORDS = [0, 1, 2, 3, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x10001, 0x7FFFFFFF, 0x80000000, 0x80000001,
              0xFFFFFFFE, 0xFFFFFFFF, 0xFFFF0000, 1_000_000_007, 0xFFFFFF80, 0xFFFFFF7F, 0x00FFFFFF, 0x01000001]


def _operands(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Dividends and divisors (as uint64): every pair of edge words in each
    of the four words; random values of random bit lengths; dividends one
    off a multiple of the divisor (where the quotient digit estimates need
    their corrections)."""
    e = np.array(EDGE_WORDS, np.uint64)
    g = np.stack(np.meshgrid(e, e, e, e, indexing="ij"), -1).reshape(-1, 4)
    n_grid = (g[:, 0] << np.uint64(32)) | g[:, 1]
    d_grid = (g[:, 2] << np.uint64(32)) | g[:, 3]
    k = 20000
    bits = rng.integers(0, 2**64, (2, k), dtype=np.uint64) >> rng.integers(0, 64, (2, k)).astype(np.uint64)
    n_rand, d_rand = bits
    q = rng.integers(0, 2**64, k, dtype=np.uint64) >> rng.integers(0, 64, k).astype(np.uint64)
    with np.errstate(over="ignore"):
        near = q * d_rand + rng.integers(-2, 3, k).astype(np.int64).view(np.uint64)
    # the largest quotients: dividends at the top of the range by divisors
    # just past 2**32 and just below it, where the estimates are largest
    top = np.uint64(2**64 - 1) - rng.integers(0, 2**40, k, dtype=np.uint64)
    d_edge = (np.uint64(2**32) + rng.integers(-(2**20), 2**20, k).astype(np.int64)).astype(np.uint64)
    # full-range values, and their near-multiples of full-range divisors
    n_full, d_full = rng.integers(0, 2**64 - 1, (2, k), dtype=np.uint64, endpoint=True)
    with np.errstate(over="ignore"):
        q_full = n_full // np.maximum(d_full, np.uint64(1))
        near_full = q_full * d_full + rng.integers(-1, 2, k).astype(np.int64).view(np.uint64)
    return (np.concatenate([n_grid, n_rand, near, top, n_full, near_full]),
            np.concatenate([d_grid, d_rand, d_rand, d_edge, d_full, d_full]))


def _words(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The high and low words of uint64 ``v`` as int32 bit patterns."""
    hi = (v >> np.uint64(32)).astype(np.uint32).view(np.int32)
    lo = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    return hi, lo


def _joined(hi, lo, dtype):
    return (hi.astype(dtype) << 32) | lo.astype(jnp.uint32).astype(dtype)


@pytest.mark.parametrize("dtype", [jnp.int64, jnp.uint64], ids=["signed", "unsigned"])
def test_divide_and_remainder_of_any_64bit_values(dtype, rng: np.random.Generator) -> None:
    n, d = _operands(rng)
    args = [*_words(n), *_words(d)]

    def fn(nh, nl, dh, dl):
        return div_rem(_joined(nh, nl, dtype), _joined(dh, dl, dtype))

    result = compare_with_reference(fn, args, policy="exact")
    assert all(o.ok for o in result.outputs)
    assert result.report.emulated_outputs == [0, 1]
    # the corner cases are among the inputs
    a, b = n.view(np.int64), d.view(np.int64)  # (the same bits either way)
    assert (b == 0).any() and ((a == I64.min) & (b == -1)).any() and ((b >> 32) != 0).any()


def test_xla_corner_cases_are_what_the_emulation_gives() -> None:
    """The results the emulation reproduces, as XLA gives them: ``x / 0`` is
    -1 (all ones unsigned), ``x % 0`` is ``x``, ``INT64_MIN / -1`` is
    ``INT64_MIN`` and ``INT64_MIN % -1`` is 0."""
    n = np.array([I64.min, I64.min, 5, -5, I64.max], np.int64)
    d = np.array([-1, 0, 0, 0, 0], np.int64)
    hi_n, lo_n = _words(n.view(np.uint64))
    hi_d, lo_d = _words(d.view(np.uint64))
    result = compare_with_reference(
        lambda nh, nl, dh, dl: div_rem(_joined(nh, nl, jnp.int64), _joined(dh, dl, jnp.int64)),
        [hi_n, lo_n, hi_d, lo_d], policy="exact",
    )
    q, r = result.demoted_values
    assert q.tolist() == [I64.min, -1, -1, -1, -1]
    assert r.tolist() == [0, I64.min, 5, -5, I64.max]
    u = compare_with_reference(
        lambda nh, nl: div_rem(_joined(nh, nl, jnp.uint64), jnp.zeros(5, jnp.uint64)),
        [hi_n, lo_n], policy="exact",
    )
    uq, ur = u.demoted_values
    assert uq.tolist() == [int(U64.max)] * 5
    assert ur.tolist() == n.view(np.uint64).tolist()


# ---------------------------------------------------- constant divisors

SIGNED_CONSTANTS = [1, 2, 3, 7, 10, 128, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1,
                   -1, -2, -7, -1000, -(2**32) - 1, I64.min, 0]
UNSIGNED_CONSTANTS = [1, 2, 3, 7, 10, 128, 1000, 2**31 + 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1,
                     2**63, 2**63 + 1, 2**64 - 1, 0]


def _dividends(divisors: list[int], rng: np.random.Generator) -> np.ndarray:
    """uint64 dividends over the whole 64-bit range: the extremes, the
    multiples of each divisor nearest them and nearest random values, one
    off each side, and uniform values."""
    out = [0, 1, 2, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1]
    for m in [abs(int(d)) for d in divisors if d]:
        for n in [2**63, 2**64 - 1, *rng.integers(0, 2**64 - 1, 40, dtype=np.uint64, endpoint=True)]:
            base = int(n) // m * m
            out += [(base + e) % 2**64 for e in (-1, 0, 1)]
            out += [(2**64 - base + e) % 2**64 for e in (-1, 0, 1)]  # the negatives, for signed
    out += rng.integers(0, 2**64 - 1, 4000, dtype=np.uint64, endpoint=True).tolist()
    return np.array(out, np.uint64)


@pytest.mark.parametrize("dtype", [jnp.int64, jnp.uint64], ids=["signed", "unsigned"])
def test_division_by_constants_of_any_64bit_dividend(dtype, rng: np.random.Generator) -> None:
    """A divisor that is a constant divides by a multiply (no f32 estimate,
    no compare of the divisor's words): exact for every dividend, with
    XLA's ``x / 0``, ``x % 0``, ``INT64_MIN / -1`` and ``INT64_MIN % -1``."""
    divisors = SIGNED_CONSTANTS if dtype == jnp.int64 else UNSIGNED_CONSTANTS
    n = _dividends(divisors, rng)

    def fn(nh, nl):
        a = _joined(nh, nl, dtype)
        return tuple(r for d in divisors for r in div_rem(a, jnp.asarray(d, dtype)))

    result = compare_with_reference(fn, list(_words(n)), policy="exact")
    assert all(o.ok for o in result.outputs)
    by_op = result.report.emulated_by_op
    assert by_op["stablehlo.divide"] == by_op["stablehlo.remainder"] == len(divisors), by_op
    assert "f32" not in str(result.demoted)
    assert (n == np.uint64(2**63)).any() and (n == np.uint64(2**64 - 1)).any()


CONSTANT_PROGRAMS = {
    "floor_divide_128": lambda i: i // 128,
    "floor_divide_negative": lambda i: jnp.floor_divide(i, -(2**33) - 3),
    "rem_1000": lambda i: lax.rem(i, jnp.int64(1000)),
    "computed_divisor": lambda i: lax.rem(i, jnp.full_like(i, 5) * 200 + 1),
}


@pytest.mark.parametrize("name", sorted(CONSTANT_PROGRAMS))
def test_division_by_a_broadcast_or_computed_constant(name: str) -> None:
    """``i // 128`` as JAX writes it (the divisor a broadcast scalar, passed
    to JAX's own jit of ``floor_divide``), ``lax.rem`` by a constant, and a
    divisor computed from constants: each divides by a multiply."""
    result = compare_with_reference(lambda x, y: CONSTANT_PROGRAMS[name](big(x) + y), [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert "f32" not in str(result.demoted)


def test_jnp_mod_by_a_constant_is_exact() -> None:
    """``i % 1000``: JAX's ``remainder`` guards its divisor with
    ``where(d == 0, 1, d)``, a select whose first branch is never taken for
    a constant ``d``: the divisor is one point and divides by a multiply."""
    result = compare_with_reference(lambda x, y: (big(x) + y) % 1000, [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert "f32" not in str(result.demoted)


def test_one_jit_of_floor_divide_shared_by_two_constants() -> None:
    """JAX traces ``i // 128``, ``i // -7`` and ``i % 1000`` into private
    functions called more than once; their calls are inlined, so each
    divides by its own constant with a multiply, and no packed word pair
    crosses a call."""
    result = compare_with_reference(
        lambda x, y: ((big(x) + y) // 128, (big(x) + y) // -7, (big(x) - y) // 1_000_000_007,
                      (big(x) + y) % 1000, big(y) % -3), [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    text = str(result.demoted)
    assert "f32" not in text and "call @" not in text and "func.func private" not in text, text[:2000]


def test_a_division_by_a_traced_divisor_beside_a_constant_one() -> None:
    """Inlined, the call passing a traced divisor takes the general division
    (the f32 reciprocal estimate) and the one passing a constant the
    multiply; both exact."""
    result = compare_with_reference(lambda x, y: ((big(x) + y) // wide(y), (big(x) + y) // 1000,
                                                  (big(x) - 1) // wide(x)), [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    text = str(result.demoted)
    assert "call @" not in text and text.count("stablehlo.divide") == 2 and "f32" in text, text[:2000]


def test_calls_without_64bit_values_are_kept() -> None:
    """Only calls whose signature carries a 64-bit integer are inlined: a
    32-bit helper JAX shares keeps its function."""
    result = compare_with_reference(lambda x, y: (jnp.where(x > y, x, y), big(x) // 1000), [X, Y], policy="exact")
    assert all(o.ok for o in result.outputs)
    text = str(result.demoted)
    assert text.count("call @_where") == 1 and "func.func private @_where" in text, text[:3000]


# ------------------------------------------------------------ real programs

RANDOM_PROGRAMS = {
    "randint_span_2_41": lambda x: jax.random.randint(jax.random.key(0), (1000,), -(2**40), 2**40, dtype=jnp.int64),
    "randint_prngkey": lambda x: jax.random.randint(jax.random.PRNGKey(0), (1000,), -(2**40), 2**40, dtype=jnp.int64),
    "randint_full_int64": lambda x: jax.random.randint(jax.random.key(1), (257,), I64.min, I64.max, dtype=jnp.int64),
    "randint_span_2_32": lambda x: jax.random.randint(jax.random.key(1), (5, 7), 0, 2**32, dtype=jnp.int64),
    "randint_span_2_32_plus_1": lambda x: jax.random.randint(jax.random.key(1), (5, 7), -1, 2**32, dtype=jnp.int64),
    "randint_int32_range": lambda x: jax.random.randint(jax.random.key(2), (64,), I32.min, I32.max, dtype=jnp.int64),
    "randint_small": lambda x: jax.random.randint(jax.random.key(0), (1000,), 0, 10, dtype=jnp.int64),
    "randint_uint64": lambda x: jax.random.randint(jax.random.key(2), (64,), 0, 2**50, dtype=jnp.uint64),
    "randint_traced_bounds": lambda x: jax.random.randint(
        jax.random.key(3), (64,), wide(x[0]) - 2**40, wide(x[2]) * 2**40),
    "randint_traced_key": lambda x: jax.random.randint(jax.random.key(x[0]), (64,), -(2**40), 2**40, dtype=jnp.int64),
    "randint_prngkey_of_input": lambda x: jax.random.randint(
        jax.random.PRNGKey(x[1]), (100,), -(2**40), 2**40, dtype=jnp.int64),
    "randint_scalar": lambda x: jax.random.randint(jax.random.PRNGKey(x[2]), (), -(2**40), 2**40, dtype=jnp.int64),
    "choice": lambda x: jax.random.choice(jax.random.key(0), 5000, (100,)),
    "choice_prngkey_span_2_40": lambda x: jax.random.choice(jax.random.PRNGKey(0), 2**40, (100,)),
    "choice_from_array": lambda x: jax.random.choice(
        jax.random.key(0), jnp.arange(10, dtype=jnp.int64) * 2**40, (6, 2)),
}
#: programs whose every 64-bit value the analysis bounds inside 32 bits
#: once the randint word join is emulated: they return 32-bit values
NARROW_OUTPUTS = {"randint_small", "randint_int32_range", "choice"}


@pytest.mark.parametrize("name", sorted(RANDOM_PROGRAMS))
def test_random_integers_with_x64_match_the_64bit_program(name: str) -> None:
    x = np.array([3, 0, 7], np.int32)
    result = compare_with_reference(RANDOM_PROGRAMS[name], [x], policy="exact")
    _check_random(name, result)


@pytest.mark.parametrize("name", ["randint_span_2_41", "randint_prngkey", "randint_full_int64", "choice"])
def test_random_integers_with_x64_are_exact_under_the_default_policy(name: str) -> None:
    """The randint word join (a shift by 32) has no 32-bit form: it is emulated under
    every policy, and so is everything computed from it that may not fit."""
    x = np.array([3, 0, 7], np.int32)
    result = compare_with_reference(RANDOM_PROGRAMS[name], [x], policy="default")
    assert result.report.exact, result.report.summary()
    _check_random(name, result)


def _check_random(name: str, result) -> None:
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    by_op = result.report.emulated_by_op
    assert by_op.get("stablehlo.remainder", 0) > 0, by_op
    if name in NARROW_OUTPUTS:
        assert result.report.emulated_outputs == [], result.report.summary()
    else:
        assert result.report.emulated_outputs == [0]
    values = result.demoted_values[0]
    assert np.unique(values).size > min(values.size // 2, 4)  # a stream, not a constant


def _feature_hash(ids, table):
    h = ubig(ids)
    h = h ^ (h >> 29)
    idx = h % jnp.uint64(1_000_000_007)
    return table[idx % table.shape[0]], idx


def _feature_hash_signed(ids, table):
    s = wide(ids)
    h = (s * HASH ^ (s << 17)) % 1_000_000_007
    return table[h % table.shape[0]], table[h], h


@pytest.mark.parametrize("fn", [_feature_hash, _feature_hash_signed], ids=["unsigned", "signed"])
def test_feature_hashing_modulo_a_prime_then_an_embedding_lookup(fn) -> None:
    ids = np.array([0, 1, -1, 2, I32.max, I32.min, 12345, 987654321, -5, 42], np.int32)
    table = np.arange(1000 * 4, dtype=np.float32).reshape(1000, 4)
    result = compare_with_reference(fn, [ids, table], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    assert result.report.emulated_by_op.get("stablehlo.remainder") == 1
    # the index is below the prime: it comes back as a 32-bit value
    assert result.report.emulated_outputs == []


# ------------------------------------------------- values leaving the emulation

@pytest.mark.parametrize(
    "fn",
    [
        lambda x: jnp.mod(big(x), 1_000_000_007) - 1_000_000_007,
        lambda x: lax.rem(big(x), jnp.int64(-1_000_000_007)) + (2**31 - 1_000_000_007),
        lambda x: lax.clz(big(x)) + (2**31 - 65),
        lambda x: lax.population_count(ubig(x)) + jnp.uint64(2**32 - 65),
    ],
    ids=["mod", "rem", "clz", "popcnt"],
)
def test_a_result_that_fits_keeps_its_range_after_emulation(fn) -> None:
    """The remainder or bit count of an emulated value fits in 32 bits and
    leaves the emulation as its low word; what is computed from it after is
    judged with the range of the 64-bit result (so it is exact, not
    refused as if it could be any 32-bit value)."""
    result = compare_with_reference(fn, [X], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert result.report.emulated_outputs == []
    assert result.report.verdicts.get("unproven", 0) == 0


# -------------------------------------------------------- the range analysis

SIGNED_RANGES = [
    (I64.min, I64.min), (I64.min, -1), (I64.min, I64.max), (-10, 10), (0, 100), (I32.min, I32.max),
]
SIGNED_DIVISORS = [
    (-1, -1), (0, 0), (-1, 1), (I64.min, -1), (1, 10), (-5, 3), (I32.min, I32.max), (0, I64.max),
]
UNSIGNED_RANGES = [(0, U64.max), (2**63, U64.max), (0, 100)]
UNSIGNED_DIVISORS = [(0, 0), (0, 5), (1, U64.max), (U64.max, U64.max)]


def _points(lo: int, hi: int, rng: np.random.Generator, n: int) -> list[int]:
    picks = [lo, hi, 0, 1, -1, 2, -2, lo + 1, hi - 1, I32.min, I32.max]
    out = [p for p in picks if lo <= p <= hi]
    out += [int(v) for v in rng.integers(lo, hi, n - len(out), dtype=np.uint64 if lo >= 0 else np.int64,
                                         endpoint=True)]
    return out[:n]


@pytest.mark.parametrize("unsigned", [False, True], ids=["signed", "unsigned"])
def test_divide_and_remainder_ranges_hold_what_xla_computes(unsigned: bool, rng: np.random.Generator) -> None:
    """The analysis bounds of ``a / b`` and ``a % b`` (with ``a`` and ``b``
    declared in ranges holding INT64_MIN, -1, 0, UINT64_MAX, ...) hold
    every result XLA computes for operands inside them."""
    pairs = [(a, b) for a in (UNSIGNED_RANGES if unsigned else SIGNED_RANGES)
             for b in (UNSIGNED_DIVISORS if unsigned else SIGNED_DIVISORS)]
    n = 64
    ty = f"tensor<{n}x{'ui64' if unsigned else 'i64'}>"
    args = ", ".join(f"%a{i}: {ty}, %b{i}: {ty}" for i in range(len(pairs)))
    body = "\n".join(
        f"  %q{i} = stablehlo.divide %a{i}, %b{i} : {ty}\n  %r{i} = stablehlo.remainder %a{i}, %b{i} : {ty}"
        for i in range(len(pairs))
    )
    rets = ", ".join(f"%q{i}, %r{i}" for i in range(len(pairs)))
    text = (f"func.func public @main({args}) -> ({', '.join([ty] * 2 * len(pairs))}) {{\n{body}\n"
            f"  return {rets} : {', '.join([ty] * 2 * len(pairs))}\n}}")
    m = ir.Module.parse(text, make_context())
    declared: dict[int | str, tuple[int, int]] = {}
    for i, (a, b) in enumerate(pairs):
        declared[2 * i], declared[2 * i + 1] = a, b
    with m.context:
        analysis = RangeAnalysis(m.operation, declared)
        ops = list(m.body.operations[0].regions[0].blocks[0].operations)[:-1]
        bounds = [analysis.range(op.results[0]).interval for op in ops]
    dtype = np.uint64 if unsigned else np.int64
    inputs = []
    for a, b in pairs:
        inputs.append(np.array(_points(*a, rng, n), dtype=dtype))
        d = _points(*b, rng, n)
        inputs.append(np.array(d[n // 2:] + d[: n // 2], dtype=dtype))  # every dividend meets the edges
    outputs = run_module(m, inputs, strict=False)
    for (lo, hi), out, op in zip(bounds, outputs, ops):
        values = [int(v) for v in out]
        assert lo <= min(values) and max(values) <= hi, (op.name, (lo, hi), min(values), max(values))


# ------------------------------------------------------------ dynamic shapes

@pytest.mark.parametrize(
    ("op", "policy", "reason"),
    [
        ("divide", "exact", "only in statically shaped tensors"),
        ("count_leading_zeros", "default", "dynamically shaped tensor is not supported"),
        ("popcnt", "exact", "dynamically shaped tensor is not supported"),
    ],
)
def test_dynamically_shaped_64bit_values_are_refused(op: str, policy: str, reason: str) -> None:
    """Words are built on static shapes: a dynamically shaped 64-bit value
    that would need them (the quotient of two 32-bit inputs needs 33 bits:
    INT32_MIN / -1) is refused with the op, and the module is left as it
    was."""
    operands = "%x, %y" if op in ("divide", "remainder") else "%x"
    text = (f"func.func public @main(%x: tensor<?xi64>, %y: tensor<?xi64>) -> tensor<?xi64> {{\n"
            f"  %r = stablehlo.{op} {operands} : tensor<?xi64>\n  return %r : tensor<?xi64>\n}}")
    m = ir.Module.parse(text, make_context())
    before = str(m)
    with pytest.raises(no64.UnsupportedOpError, match=reason) as info:
        no64.demote(m, policy=policy)
    assert info.value.op == "stablehlo." + op
    assert str(m) == before
