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
