"""A program that asks for x64, run under the compile hook for a device with
native 64-bit integers (NO64_TARGET=mtl; the CPU stands in for it)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import no64

jax.config.update("jax_enable_x64", True)


def bucket(ids):
    h = ids.astype(jnp.uint64) * np.uint64(0x9E3779B97F4A7C15)   # a 64-bit multiplicative hash
    return (h >> np.uint64(54)).astype(jnp.int32), lax.population_count(ids.astype(jnp.int64) << 32)


print(*jax.jit(bucket)(np.array([1, -1, 2**31 - 1], np.int32)))
report = no64.compile_records()[-1].report
print(report.summary().splitlines()[1])
print("ops on 32-bit words:", report.ops_emulated)
