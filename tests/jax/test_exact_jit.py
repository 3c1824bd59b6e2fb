"""``no64.jit(fun, policy="exact")``: the function's x64 program, every integer
that may not fit in 32 bits computed exactly in 32-bit word pairs, run by
no64 on the default device.

Every result is compared bit for bit with the x64 program run by JAX on the
CPU without no64, on inputs over the whole int32/uint32 range.
"""

from __future__ import annotations

import jax
from no64.jax._compat import enable_x64
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.core.emulate import join_words

I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
X = np.array([0, 1, -1, 2, -2, 7, 46341, 65536, -65536, I32.max, I32.min, I32.max - 1, I32.min + 1],
             dtype=np.int64)
U = np.array([0, 1, 2, 65535, 65536, 2**31, U32.max, U32.max - 1], dtype=np.uint64)


def reference(fn, *args, jit_kwargs=None, **kwargs):
    """The x64 program, run by JAX without no64."""
    with enable_x64(True):
        out = jax.jit(fn, **(jit_kwargs or {}))(*args, **kwargs)
    return jax.tree_util.tree_map(np.asarray, out)


def mixed(x, u, k):
    wide = x * 3_000_000_007 + k  # needs 64 bits
    h = (u * np.uint64(0x9E3779B97F4A7C15)) ^ (u >> np.uint64(7))  # a uint64 hash
    return {
        "wide": wide,
        "hash": h,
        "sum": (x * x).sum(),
        "fits": (x & 0xFF).astype(jnp.int64),  # proven inside 32 bits
        "low": (wide >> 20).astype(jnp.int32),  # a 32-bit result of an emulated value
    }


def assert_same(got, expected):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    exp_leaves, exp_tree = jax.tree_util.tree_flatten(expected)
    assert got_tree == exp_tree
    for g, e in zip(got_leaves, exp_leaves):
        g = np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_array_equal(g, e)


def test_restore_dtypes_joins_word_pairs() -> None:
    expected = reference(mixed, X, U, 5)
    got = no64.jit(mixed, policy="exact", restore_dtypes=True)(X, U, 5)
    assert_same(got, expected)
    assert isinstance(got["wide"], np.ndarray) and got["wide"].dtype == np.int64
    assert got["hash"].dtype == np.uint64


def test_word_pairs_without_restore() -> None:
    """Without restore_dtypes an emulated output is its shape plus a trailing 2 (low, high):
    int32 bit patterns for a signed result, uint32 for an unsigned one; outputs proven to
    fit come back as 32-bit arrays."""
    expected = reference(mixed, X, U, 5)
    jitted = no64.jit(mixed, policy="exact")
    got = jitted(X, U, 5)
    assert got["wide"].shape == X.shape + (2,) and got["wide"].dtype == np.int32
    assert got["hash"].shape == U.shape + (2,) and got["hash"].dtype == np.uint32
    assert got["sum"].shape == (2,)
    for name in ("wide", "hash", "sum"):
        np.testing.assert_array_equal(join_words(got[name]), expected[name])
    assert got["fits"].dtype == np.int32 and got["low"].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got["fits"]), expected["fits"])
    np.testing.assert_array_equal(np.asarray(got["low"]), expected["low"])
    report = jitted.lower(X, U, 5).report
    assert report.values_emulated > 0 and report.emulated_outputs
    assert "come back as [..., 2] word pairs" in report.summary()
    no64.check(jitted.lower(X, U, 5).module)


def test_inputs_of_every_kind() -> None:
    """32-bit numpy inputs, Python numbers, jax.Arrays, keyword and static arguments."""

    def f(a, b, *, scale, shift):
        return (a.astype(jnp.int64) * scale + b) << shift

    a32 = X.astype(np.int32)
    b = jnp.asarray(np.arange(X.size, dtype=np.int32))
    expected = reference(f, a32, np.asarray(b), scale=2_000_000_011, shift=3,
                         jit_kwargs={"static_argnames": "shift"})
    jitted = no64.jit(f, policy="exact", restore_dtypes=True, static_argnames="shift")
    got = jitted(a32, b, scale=2_000_000_011, shift=3)
    assert_same(got, expected)
    # another static value compiles anew; the same signature reuses the executable
    assert_same(jitted(a32, b, scale=-(2**31), shift=40),
                reference(f, a32, np.asarray(b), scale=-(2**31), shift=40,
                          jit_kwargs={"static_argnames": "shift"}))
    before = len(jitted._exact._cache)
    jitted(a32, b, scale=2_000_000_011, shift=3)
    assert len(jitted._exact._cache) == before == 2


def test_inputs_must_be_32_bit_values() -> None:
    """The inputs are 32-bit values: a 64-bit value beyond that range is refused, and so is
    a sentinel (its 32-bit image would be an ordinary value in the exact program)."""
    jitted = no64.jit(lambda x: x * 3, policy="exact")
    for bad in (np.array([1, 2**40]), np.array([np.iinfo(np.int64).max]), np.int64(I32.min - 1)):
        with pytest.raises(no64.ArgumentRangeError, match="policy='exact'"):
            jitted(bad)
    with pytest.raises(no64.ArgumentRangeError, match="policy='exact'"):
        jitted(2**40)
    # the default policy maps the sentinel
    assert int(no64.jit(lambda x: x)(np.int64(np.iinfo(np.int64).max))) == I32.max


def test_shardings_are_refused() -> None:
    with pytest.raises(ValueError, match="one device"):
        no64.jit(lambda x: x, policy="exact",
                 in_shardings=jax.sharding.SingleDeviceSharding(jax.devices()[0]))
