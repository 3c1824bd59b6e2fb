"""Programs on which ``policy="exact"`` emulation went wrong (a refusal, a
crash or a wrong number), each compared bit for bit with the 64-bit
program on inputs over the whole 32-bit ranges."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

import no64
from no64.jax.reference import compare_with_reference

I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
I64_MIN = -(2**63)
X = np.array([I32.max, I32.min, 0, -1, 1, 46341, -65536, 12345], np.int32)
Y = np.array([U32.max, 0, 2**31, 1, 65535, 7, 2**31 - 1, 3037000499], np.uint32)


def joined(x, y):
    """One 64-bit value from two 32-bit words (as ``randint`` joins them)."""
    return lax.shift_left(x.astype(jnp.int64), jnp.int64(32)) | y.astype(jnp.int64)


def exact(fn, *args):
    result = compare_with_reference(fn, list(args or (X, Y)), policy="exact")
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    assert result.report.ops_emulated > 0
    return result


def test_a_result_that_fits_keeps_its_range_after_emulation() -> None:
    """``wide & 15`` fits in 32 bits and leaves the emulated region as one
    32-bit value; the range analysis of the rewritten module must still
    know it is in [0, 15] (it saw only the low word, any 32-bit value, and
    refused ``- 8`` as unproven)."""
    exact(lambda x, y: (joined(x, y) & 15) - 8)
    # the same through jnp's index arithmetic: a negative index wraps
    exact(lambda x, y: joined(x, y)[(joined(x, y) & 15) - 8])
    exact(lambda x, y: joined(x, y).at[(joined(x, y) & 15) - 4].add(joined(y, x)))
    exact(lambda x, y: jnp.argsort(joined(x, y) >> 3).astype(jnp.int64) * 2**40)


def test_an_out_of_range_constant_converted_to_a_float_is_emulated() -> None:
    """A 64-bit constant array converted to float32 was refused as an
    out-of-range constant (the refusal meant for constants JAX truncates
    to 32-bit integers when it lowers with x64 off)."""
    big = np.array([2**48 + 7, -(2**40) - 1, 2**63 - 1, -(2**63), 5, 1442695040888963407, 2**32, -1], np.int64)
    result = exact(lambda x, y: (jnp.asarray(big).astype(jnp.float32) * 1e-10).astype(jnp.uint64) + y)
    assert result.report.emulated_by_op.get("stablehlo.convert", 0) >= 1
    exact(lambda x, y: jnp.asarray(big.view(np.uint64)).astype(jnp.float32) + x.astype(jnp.float32))


def test_a_64bit_value_that_fits_bitcast_to_its_words_is_emulated() -> None:
    """``bitcast_convert`` of a 64-bit value to its two 32-bit words has an
    exact emulation, but when the value itself fits in 32 bits (so nothing
    else was emulated) the op was refused as having no 32-bit form."""
    def swap(v):
        return lax.bitcast_convert_type(lax.bitcast_convert_type(v, jnp.uint32)[:, ::-1], v.dtype)

    for policy in ("exact", "default", "strict"):
        result = compare_with_reference(lambda x, y: (lax.bitcast_convert_type(x.astype(jnp.int64), jnp.uint32),
                                                      swap(y.astype(jnp.uint64))), [X, Y], policy=policy)
        assert no64.find_64bit(result.demoted) == []
        assert result.report.emulated_by_op.get("stablehlo.bitcast_convert") == 3, result.report.emulated_by_op
        words = result.demoted_values[0]
        assert words.dtype == np.uint32 and words.shape == (X.size, 2)
        assert np.array_equal(words, X.astype(np.int64).view(np.uint32).reshape(-1, 2))


def test_a_large_out_of_range_constant_enters_with_its_exact_elements() -> None:
    """A non-splat 64-bit constant of more than 2**16 elements read by an
    emulated op was handed to the narrowing pass (constant folding stops at
    2**16 elements), which refused it as out of range."""
    n = 70_000
    rng = np.random.default_rng(3)
    x = rng.integers(I32.min, I32.max, n, dtype=np.int32, endpoint=True)
    y = rng.integers(0, U32.max, n, dtype=np.uint32, endpoint=True)
    big = np.arange(n, dtype=np.int64) * 2**33 - 2**62
    for policy in ("exact", "default"):
        # (under "default", the constant's users are emulated; joined(a, b),
        # unproven, would be narrowed and reported)
        result = compare_with_reference(
            lambda a, b: (jnp.asarray(big) ^ a.astype(jnp.int64), jnp.asarray(big) + a), [x, y], policy=policy)
        assert no64.find_64bit(result.demoted) == []
        assert np.array_equal(result.demoted_values[1], big + x)
    exact(lambda a, b: joined(a, b) ^ jnp.asarray(big), x, y)


def test_cumulative_ops_over_thousands_of_elements_compile() -> None:
    """A cumulative sum of 300 or more emulated elements was rebuilt as a
    two-operand reduce_window (one per word) as long as the axis, which
    XLA's CPU backend runs out of memory compiling (std::bad_alloc, the
    process aborted); it is computed by doubling."""
    n = 3000
    rng = np.random.default_rng(4)
    x = rng.integers(I32.min, I32.max, n, dtype=np.int32, endpoint=True)
    y = rng.integers(0, U32.max, n, dtype=np.uint32, endpoint=True)
    x[:4] = [I32.max, I32.min, I32.max, I32.min]
    result = exact(lambda a, b: (jnp.cumsum(a.astype(jnp.int64) ** 2), lax.cummax(joined(a, b)),
                                 lax.cumsum(joined(b, a), reverse=True), jnp.cumprod(joined(a, b) | 1)), x, y)
    assert result.report.emulated_by_op["stablehlo.reduce_window"] == 4
    total = sum(v * v for v in x.tolist()) % 2**64  # wraps around 64 bits
    assert int(result.demoted_values[0][-1]) % 2**64 == total


def test_windows_with_strides_padding_and_other_initial_values() -> None:
    """Strided, padded, two-dimensional windows, and windows whose initial
    value is not the body's identity."""
    x2, y2 = X.reshape(2, 4), Y.reshape(2, 4)
    exact(lambda a, b: (
        lax.reduce_window(joined(a, b), np.int64(0), lax.add, (2, 3), (1, 2), [(1, 0), (2, 1)]),
        lax.reduce_window(joined(a, b), np.int64(I64_MIN), lax.max, (1, 2), (1, 1), "SAME"),
        lax.reduce_window(joined(a, b), np.int64(5), lax.add, (1, 3), (1, 1), "VALID"),
        lax.reduce_window(joined(a, b).astype(jnp.uint64), np.uint64(2**64 - 1), lax.bitwise_and, (2, 2), (1, 1),
                          "VALID"),
    ), x2, y2)


def test_sorts_and_reductions_carrying_floats_beside_emulated_values() -> None:
    """A sort, reduce or reduce_window with a float operand beside an
    emulated one crashed (``ValueError: Cannot cast type to IntegerType``)
    while asking whether each result was unsigned."""
    def sums(p, q):
        return p[0] + q[0], p[1] + q[1]

    result = exact(lambda x, y: (
        lax.sort((x.astype(jnp.float32), joined(x, y)), num_keys=1),  # int64 ids by float scores
        lax.sort((joined(x, y), y.astype(jnp.float32)), num_keys=1),
        lax.reduce((x.astype(jnp.float32), joined(x, y)), (np.float32(0), np.int64(0)), sums, (0,)),
        lax.reduce_window((x.astype(jnp.float32), joined(y, x)), (np.float32(0), np.int64(0)), sums, (3,), (1,),
                          "SAME"),
    ))
    assert result.report.emulated_outputs == [1, 2, 5, 7]


def test_an_optimization_barrier_passes_emulated_values() -> None:
    """``optimization_barrier`` (``jax.lax.optimization_barrier``, and what
    rematerialisation writes) had no emulation: an emulated value through
    it was refused."""
    result = exact(lambda x, y: lax.optimization_barrier((joined(x, y), x, x.astype(jnp.int64) * 3,
                                                          y.astype(jnp.float32)))[0] + 1)
    assert result.report.emulated_by_op.get("stablehlo.optimization_barrier") == 1
