"""A 64-bit shift by 40, traced in an x64 scope: no 32-bit form, so the hook
computes it exactly in 32-bit word pairs."""

import jax
import jax.numpy as jnp

import no64
from support import enable_x64


@jax.jit
def round_trip(x):
    wide = x.astype(jnp.int64) << 40  # SHIFT LINE
    back = wide >> 40  # BACK LINE
    return back.astype(jnp.int32)


# The scope is around the call, not inside the function: JAX 0.7 lowers a
# shift inside a jitted function's own x64 scope to an invalid module.
with enable_x64(True):
    print("result", round_trip(jnp.array([-3, 0, 7], dtype=jnp.int32)).tolist())
print("emulated", sorted(r.module for r in no64.compile_records() if r.report and r.report.values_emulated))
