"""``no64.jit(fun, policy="exact")``: the function's x64 program, every integer
that may not fit in 32 bits computed exactly in 32-bit word pairs, run by
no64 on the default device.

Every result is compared bit for bit with the x64 program run by JAX on the
CPU without no64, on inputs over the whole int32/uint32 range.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import main_signature
from no64.transforms.emulate import join_words
from support import enable_x64

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


I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
#: nanosecond timestamps, 64-bit feature ids, 40-bit hash keys, the int64 extremes beside
#: the int32 ones
WIDE = np.array([1_700_000_000_123_456_789, 1_700_000_001_000_000_000, 1_700_000_100_000_000_001,
                 0x7A3F_12C4_9E01_5B66, -0x5DEE_CE66_D1CE_4E5B, (1 << 40) - 1, 1 << 40, 0xFF_FFFF_FFFF,
                 I64.max, I64.min, I64.max - 1, I64.min + 1, I32.max, I32.min, I32.max + 1, I32.min - 1,
                 0, -1, 1], dtype=np.int64)
UWIDE = np.array([U64.max, U64.max - 1, 1 << 63, (1 << 63) - 1, 1 << 40, U32.max, U32.max + 1, 0, 1,
                  0xC2B2_AE3D_27D4_EB4F], dtype=np.uint64)


def elapsed_seconds(t):
    return (t - t[0]) // 10**9


def hashed_features(ids, keys, u):
    """64-bit feature ids hashed into buckets, 40-bit keys compared and reduced, unsigned
    arithmetic and the extremes (a sentinel has its 64-bit meaning here)."""
    h = (ids ^ (ids >> 29)) * np.int64(-0x4B47_5F55_0C8F_8E6B)
    return {
        "bucket": (h & 0xFFFF_FFFF) % 1_000_003,
        "hi": h >> 32,
        "ids_min": jnp.min(ids),
        "argmin": jnp.argmin(ids),
        "argmax": jnp.argmax(ids),
        "keys_big": keys >= (1 << 40),
        "key_sum": jnp.sum(keys & 0xFF_FFFF_FFFF),
        "is_max": ids == I64.max,
        "u_mix": u * np.uint64(3) + (u >> np.uint64(33)),
        "u_lt": u < np.uint64(1 << 63),
        "as_f32": ids.astype(jnp.float32),
        "low32": ids.astype(jnp.int32),
        "neg": -ids,
    }


def test_timestamps_in_nanoseconds_are_exact() -> None:
    """The held-out case: seconds elapsed between nanosecond timestamps."""
    t = np.array([0, 1, 100], dtype=np.int64) * 10**9 + 1_700_000_000_000_000_000
    got = no64.jit(elapsed_seconds, policy="exact", restore_dtypes=True)(t)
    np.testing.assert_array_equal(got, [0, 1, 100])
    assert_same(got, reference(elapsed_seconds, t))
    jitted = no64.jit(elapsed_seconds, policy="exact")
    report = jitted.lower(t).report
    assert report.emulated_inputs == [0] and report.emulated_outputs == [0]
    assert "inputs [0] enter as [..., 2] word pairs" in report.summary()
    # the module takes the words of the timestamps
    in_specs, _ = main_signature(jitted.lower(t).module)
    assert [(s.shape, s.dtype) for s in in_specs] == [((3, 2), np.int32)]


def test_full_64_bit_inputs_are_passed_as_words() -> None:
    """int64/uint64 host arguments over the whole 64-bit range (sentinels, int32 extremes,
    timestamps, 64-bit ids, 40-bit keys) are split on the host, not refused or narrowed:
    every output is the x64 program's, bit for bit."""
    keys = (np.arange(WIDE.size, dtype=np.int64) * 0x1_0000_0001 + (1 << 39)) ^ WIDE
    expected = reference(hashed_features, WIDE, keys, UWIDE)
    got = no64.jit(hashed_features, policy="exact", restore_dtypes=True)(WIDE, keys, UWIDE)
    assert_same(got, expected)
    # numpy scalars, Python ints and 64-bit jax.Arrays are passed whole too
    f = no64.jit(lambda a, b, c: (a + b, a * c, b - c), policy="exact", restore_dtypes=True)
    with enable_x64(True):
        c = jnp.asarray(WIDE)
    for a, b in ((np.int64(I64.max), I64.min), (np.int64(1 << 40), -(1 << 62)), (np.int64(I32.max), 1)):
        assert_same(f(a, b, c), reference(lambda a, b, c: (a + b, a * c, b - c), a, b, np.asarray(c)))


def test_sentinels_keep_their_64_bit_meaning() -> None:
    """An int64 array holding INT64_MIN next to INT32_MIN: the words keep them apart."""
    x = np.array([I64.min, I32.min, 5, I64.max, I32.max], dtype=np.int64)

    def f(x):
        return jnp.argmin(x), jnp.argmax(x), x == I64.max, jnp.sort(x), x - 1

    assert_same(no64.jit(f, policy="exact", restore_dtypes=True)(x), reference(f, x))


def test_python_int_beyond_int64_is_refused() -> None:
    jitted = no64.jit(lambda x: x * 3, policy="exact")
    with pytest.raises(no64.ArgumentRangeError, match="outside int64's range"):
        jitted(2**64)
    # the default policy still refuses what is no sentinel and does not fit in 32 bits
    with pytest.raises(no64.ArgumentRangeError):
        no64.jit(lambda x: x)(np.array([1, 2**40]))


def test_shardings_are_refused() -> None:
    with pytest.raises(ValueError, match="one device"):
        no64.jit(lambda x: x, policy="exact",
                 in_shardings=jax.sharding.SingleDeviceSharding(jax.devices()[0]))


def empty_reductions(e, u):
    """Reductions over zero-sized dimensions: each result is the init, beyond 32 bits
    where it is given so; a 2-D operand's words taken from an empty tensor."""
    return {
        "sum": jnp.sum(e, axis=1),
        "sum_init": jnp.sum(e, axis=1, initial=2**40 + 3),
        "sum_axis0": jnp.sum(e, axis=0),
        "max": jnp.max(e, axis=1, initial=-(2**40)),
        "min": jnp.min(e, axis=1, initial=I32.max + 1),
        "prod": jnp.prod(e, axis=1) * 3_000_000_007,
        "umax": jnp.max(u, axis=0, initial=np.uint64(2**63 + 5)),
        "all": jnp.sum(e) + jnp.sum(u.astype(jnp.int64)),
        "cumsum": jnp.cumsum(e, axis=1),
        "same": e * 3_000_000_007,
    }


@pytest.mark.parametrize("target", [None, "neuron"])
def test_reductions_over_empty_dimensions(target) -> None:
    """A sum, max, min or prod over a zero-sized dimension (and an empty result) is
    the x64 program's, bit for bit, on the generic target and on Neuron."""
    e, u = np.zeros((3, 0), np.int64), np.zeros((0, 4), np.uint64)
    expected = reference(empty_reductions, e, u)
    got = no64.jit(empty_reductions, policy="exact", restore_dtypes=True, target=target)(e, u)
    assert_same(got, expected)
    assert int(expected["sum_init"][0]) == 2**40 + 3 and int(expected["umax"][0]) == 2**63 + 5


@pytest.mark.parametrize("kw", [{"policy": "exact"}, {"float_policy": "pairs"}], ids=["exact", "pairs"])
@pytest.mark.parametrize("donate", [{"donate_argnums": 0}, {"donate_argnames": "state"}], ids=["nums", "names"])
def test_donated_arguments_are_deleted_as_jax_deletes_them(kw: dict, donate: dict) -> None:
    """A training loop donates its state: the donated arrays are deleted after
    the call (using one again raises, as under JAX), the others are kept,
    and the results are the x64 program's."""
    def step(state, lr):
        v = state["v"].astype(jnp.float64)
        return {"w": state["w"].astype(jnp.int64) * 3_000_000_007 + 1, "v": v - lr * v}, lr

    w = np.array([1, -2, I32.max, I32.min], np.int32)
    v = np.array([1.5, -2.25, 1e30, 0.0], np.float32)
    want = reference(step, {"w": w, "v": v}, np.float32(0.125))
    state = {"w": jnp.asarray(w), "v": jnp.asarray(v)}
    lr = jnp.float32(0.125)
    f = no64.jit(step, restore_dtypes=True, **kw, **donate)
    got, _ = f(state, lr)
    assert state["w"].is_deleted() and state["v"].is_deleted() and not lr.is_deleted()
    np.testing.assert_array_equal(got["w"], want[0]["w"])
    np.testing.assert_allclose(got["v"], want[0]["v"], rtol=2.0**-23)
    with pytest.raises(RuntimeError, match="deleted"):
        f(state, lr)
