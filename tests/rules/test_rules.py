"""Exact rewrite rules, checked against the unconverted program on CPU.

Each test lowers a real JAX program, runs the original (64-bit where x64 is
on) and the demoted program on the same inputs and compares: bit for bit
where the rule is exact, to the documented precision where it is not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import compare_with_reference, lower_x64, parse_module, run_module
from support import enable_x64


def demote_and_run(fn, args, narrowed_args=None, x64=True):
    if x64:
        m = lower_x64(fn, *args)
    else:
        m = parse_module(jax.jit(fn).lower(*args).as_text(debug_info=True))
    ref = run_module(m, args, strict=False)
    report = no64.demote(m)
    assert no64.find_64bit(m) == []
    got = run_module(m, narrowed_args if narrowed_args is not None else args)
    return ref, got, report


@pytest.mark.parametrize("impl", ["threefry2x32", "threefry_partitionable"])
def test_iota_2x32_counters_are_exact_without_x64(impl: str) -> None:
    def f(key):
        return (
            jax.random.bits(key, (3, 5)),
            jax.random.normal(key, (7,)),
            jax.random.randint(key, (2, 3, 4), 0, 1000),
            jax.random.split(key, 5),
        )

    with enable_x64(False):
        with jax.threefry_partitionable(impl == "threefry_partitionable"):
            key = jax.random.key_data(jax.random.key(42))
            ref, got, report = demote_and_run(
                lambda k: f(jax.random.wrap_key_data(k)), [np.asarray(key)], x64=False
            )
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    if impl == "threefry_partitionable":
        assert report.count("rewrite") >= 1
        assert all("high word" in e.detail for e in report.events if e.kind == "rewrite")


def test_int64_seed_split_is_exact() -> None:
    seeds = np.array([0, 7, -1, -123456789, 2**31 - 1, -(2**31)], np.int64)

    def f(s):
        key = jax.random.PRNGKey(s)
        return key, jax.random.randint(key, (4,), 0, 10**6, dtype=jnp.int32)

    ref, got, report = demote_and_run(jax.vmap(f), [seeds], [seeds.astype(np.int32)])
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    details = " ".join(e.detail for e in report.events if e.kind == "rewrite")
    assert "copies of its sign" in details  # the seed's high word
    assert "mask of the low 32 bits" in details  # the seed's low word


def test_float_from_bits_idiom_becomes_the_f32_idiom() -> None:
    def f(key):
        k = jax.random.wrap_key_data(key)
        return jax.random.uniform(k, (1000,), dtype=jnp.float64)

    key = np.asarray(jax.random.key_data(jax.random.key(3)))
    ref, got, report = demote_and_run(f, [key])
    (r,), (g,) = ref, got
    assert g.dtype == np.float32 and r.dtype == np.float64
    # the f32 sample is the f64 sample truncated to f32's 23 mantissa bits
    np.testing.assert_array_equal(g.astype(np.float64), np.floor(r * 2**23) / 2**23)
    assert report.count("precision-reduced") == 1
    assert np.all((g >= 0) & (g < 1))


@pytest.mark.parametrize("float_policy", ["f32", "pairs"])
def test_float_from_bits_idiom_with_no_element(float_policy: str) -> None:
    # a draw of no element broadcasts the idiom's constants to no element;
    # the idiom is still the idiom (it was refused as a 64-bit bitcast)
    def f(key):
        k = jax.random.wrap_key_data(key)
        return (jax.random.uniform(k, (0,), dtype=jnp.float64),
                jax.random.normal(k, (2, 0), dtype=jnp.float64),
                jax.random.uniform(k, (5,), dtype=jnp.float64))

    key = np.asarray(jax.random.key_data(jax.random.key(3)))
    m = lower_x64(f, key)
    ref = run_module(m, [key], strict=False)
    report = no64.demote(m, float_policy=float_policy, check=True)
    assert no64.find_64bit(m) == []
    got = run_module(m, [key])
    assert all(g.dtype == np.float32 for g in got)
    if float_policy == "pairs":  # f64 outputs are (hi, lo) pairs
        got = [no64.join_pairs(g) for g in got]
    assert [r.shape for r in ref] == [(0,), (2, 0), (5,)]
    assert [g.shape for g in got] == [r.shape for r in ref]
    if float_policy == "pairs":  # the pair holds the f64 draw's leading 49 bits
        np.testing.assert_allclose(got[2], ref[2], rtol=0, atol=2.0**-48)
    else:  # the f64 sample truncated to f32's 23 mantissa bits
        np.testing.assert_array_equal(got[2].astype(np.float64), np.floor(ref[2] * 2**23) / 2**23)
    assert report.count("precision-reduced") >= 3


def test_normal_f64_sampler_is_converted() -> None:
    def f(key):
        return jax.random.normal(jax.random.wrap_key_data(key), (500,), dtype=jnp.float64)

    key = np.asarray(jax.random.key_data(jax.random.key(5)))
    ref, got, _ = demote_and_run(f, [key])
    # same stream, fewer bits: close, not equal
    np.testing.assert_allclose(got[0], ref[0], rtol=0, atol=2e-5 * np.abs(ref[0]).max() + 1e-5)


def test_lapack_custom_calls_map_to_32bit_routines() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    c = a + 1j * rng.standard_normal((4, 4))

    def f(a, b, c):
        spd = a @ a.T + np.eye(4)
        return (
            jnp.linalg.solve(a, b),
            jnp.linalg.eigh(spd)[0],
            jnp.linalg.svd(a, compute_uv=False),
            jnp.linalg.cholesky(spd),
            jnp.linalg.inv(c),
            jnp.abs(jnp.linalg.qr(a)[1]),
        )

    result = compare_with_reference(f, [a, b, c])
    assert result.report.count("rewrite") >= 6
    targets = {e.detail for e in result.report.events if e.kind == "rewrite"}
    assert any("lapack_dgetrf" in t and "lapack_sgetrf" in t for t in targets)
    assert any("lapack_zgetrf" in t and "lapack_cgetrf" in t for t in targets)


def test_reduce_precision_is_clamped_to_f32() -> None:
    def f(x):
        return jax.lax.reduce_precision(x, exponent_bits=11, mantissa_bits=40), jax.lax.reduce_precision(
            x, exponent_bits=5, mantissa_bits=10
        )

    x = np.linspace(-70000, 70000, 101)
    ref, got, report = demote_and_run(f, [x], [x.astype(np.float32)])
    np.testing.assert_array_equal(got[0], x.astype(np.float32))
    np.testing.assert_array_equal(got[1], ref[1].astype(np.float32))
    assert report.count("rewrite") == 1


@pytest.mark.parametrize("policy", ["default", "strict", "exact"])
def test_arithmetic_shift_of_unsigned_64bit_values_is_exact(policy: str) -> None:
    """An arithmetic right shift of a ``ui64`` value in [2**31, 2**32) fills
    with zeros (bit 63); narrowed to a ``ui32`` shift it filled with bit 31
    (``UINT32_MAX >> 1`` came back as ``UINT32_MAX``): it is a logical shift."""
    from jax import lax

    y = np.array([2**32 - 1, 2**31, 2**31 - 1, 0, 1, 3037000499], np.uint32)
    cases = [(1, lambda v: lax.shift_right_arithmetic(v.astype(jnp.uint64), jnp.uint64(1)), [y])]
    if policy != "strict":  # (strict refuses a 64-bit input with no declared range)
        cases.append((7, lambda v: lax.shift_right_arithmetic(v, jnp.full(v.shape, 7, jnp.uint64)),
                      [y.astype(np.uint64)]))
    for k, fn, args in cases:
        result = compare_with_reference(fn, args, policy=policy)
        assert np.array_equal(result.demoted_values[0], y >> np.uint32(k))
        if policy == "exact" and args[0].dtype == np.uint64:
            # the input enters whole, as words: it may reach 2**63, where the shift is
            # emulated instead (compared with the 64-bit program on the whole range)
            assert result.report.emulated_inputs == [0]
            assert "stablehlo.shift_right_arithmetic" in result.report.emulated_by_op
            wide = np.array([2**64 - 1, 2**63, 2**63 - 1, 2**40 + 5, 0, 1], np.uint64)
            assert compare_with_reference(fn, [wide], policy=policy).report.emulated_inputs == [0]
            continue
        assert any("is a logical shift" in e.detail for e in result.report.events if e.kind == "rewrite")
