"""Random numbers without 64-bit types, bit-identical to the unconverted program.

With ``jax_enable_x64`` off, JAX still emits 64-bit values for random
numbers: ``ui64`` counters in ``iota_2x32_shape`` (threefry with partitionable
keys, threefry4x32, philox) and a ``ui64`` state for ``rng_bit_generator``
(``rbg``/``unsafe_rbg`` keys).  Every sampler, for every key implementation,
on several shapes, with keys vmapped and carried through a scan, must give
the same bits after demotion as before, on the same CPU backend.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import parse_module, run_module
from support import enable_x64, ir

IMPLS = ["threefry2x32", "threefry4x32", "philox2x32", "philox4x32", "rbg", "unsafe_rbg"]


def samplers(key: jax.Array, shape: tuple[int, ...]) -> dict[str, jax.Array]:
    """Every sampler once, on ``shape`` (odd sizes make partial words)."""
    k = jax.random.split(key, 13)
    n = int(np.prod(shape)) if shape else 1
    return {
        "bits": jax.random.bits(k[0], shape),
        "bits8": jax.random.bits(k[0], shape, dtype=jnp.uint8),
        "uniform": jax.random.uniform(k[1], shape),
        "normal": jax.random.normal(k[2], shape),
        "randint": jax.random.randint(k[3], shape, -50, 1000),
        "bernoulli": jax.random.bernoulli(k[4], 0.3, shape),
        "categorical": jax.random.categorical(k[5], jnp.log(jnp.arange(1.0, 6.0)), shape=shape),
        "gumbel": jax.random.gumbel(k[6], shape),
        "truncated_normal": jax.random.truncated_normal(k[7], -1.0, 2.0, shape),
        "permutation": jax.random.permutation(k[8], n + 3),
        "choice": jax.random.choice(k[9], 10, (min(n, 10),), replace=False),
        "gamma": jax.random.gamma(k[10], 2.5, shape),
        "split": jax.random.key_data(jax.random.split(k[11], 3)),
        "fold_in": jax.random.key_data(jax.random.fold_in(k[12], 7)),
    }


def basic(key: jax.Array, shape: tuple[int, ...]) -> dict[str, jax.Array]:
    """The samplers whose code depends on the shape's rank."""
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "bits": jax.random.bits(k1, shape),
        "normal": jax.random.normal(k2, shape),
        "randint": jax.random.randint(k3, shape, 0, 77),
    }


def program(impl: str):
    def f(raw, raw_batch):
        key = jax.random.wrap_key_data(raw, impl=impl)
        out = {"all": samplers(key, (3, 5))}
        for shape in [(), (1,), (2, 3, 4)]:
            out[str(shape)] = basic(key, shape)
        # vmapped keys
        keys = jax.random.wrap_key_data(raw_batch, impl=impl)
        out["vmap"] = jax.vmap(lambda kk: basic(kk, (3,)))(keys)

        # keys carried through a scan
        def body(kk, _):
            kk, sub = jax.random.split(kk)
            return kk, (jax.random.normal(sub, (2,)), jax.random.randint(sub, (), 0, 9))

        out["scan"] = jax.lax.scan(body, key, None, length=4)[1]
        return out

    return f


def lower_x32(fn, *args) -> "ir.Module":
    with enable_x64(False):
        return parse_module(jax.jit(fn).lower(*args).as_text(debug_info=True))


@pytest.mark.parametrize("impl", IMPLS)
def test_every_sampler_is_bit_identical(impl: str) -> None:
    with enable_x64(False):
        try:
            first = jax.random.key(1234, impl=impl)
        except ValueError as exc:
            if "unrecognized PRNG implementation" not in str(exc):
                raise
            pytest.skip(f"this JAX has no {impl} keys (threefry4x32 and philox come with jax 0.10)")
        raw = np.asarray(jax.random.key_data(first))
        raw_batch = np.asarray(jax.random.key_data(jax.random.split(jax.random.key(9, impl=impl), 4)))
        m = lower_x32(program(impl), raw, raw_batch)
    assert no64.find_64bit(m), "expected JAX to emit 64-bit values for random numbers"
    ref = run_module(m, [raw, raw_batch], strict=False)
    report = no64.demote(m)
    assert no64.find_64bit(m) == []
    got = run_module(m, [raw, raw_batch])
    assert len(ref) == len(got)
    for i, (r, g) in enumerate(zip(ref, got)):
        assert r.dtype == g.dtype, (i, r.dtype, g.dtype)
        if np.issubdtype(r.dtype, np.floating) and not np.array_equal(r, g):
            # The random bits are compared exactly (the integer outputs).  The
            # float code XLA's CPU backend makes from them depends on what it
            # is fused with, which demotion changes around it (the emulated
            # generator's words enter the sampler's fusion): on jax 0.12 one
            # normal sample is 2 ulps apart, and the same with XLA's
            # optimisations off (--xla_backend_optimization_level=0).
            np.testing.assert_array_max_ulp(r, g, maxulp=4)
            continue
        np.testing.assert_array_equal(r, g, err_msg=f"output {i} differs for {impl}")
    # every rewrite is exact: nothing lossy may be reported
    lossy = [e for e in report.events if e.kind not in ("rewrite", "sentinel")]
    assert not lossy, report.summary()
