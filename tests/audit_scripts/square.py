"""The high word of a 64-bit square, traced in an x64 scope: exact only if
the square is computed in 64 bits (NO64_POLICY=exact)."""

import jax
import jax.numpy as jnp

from support import enable_x64


@jax.jit
def square_high(x):
    wide = x.astype(jnp.int64) * x.astype(jnp.int64)  # SQUARE LINE
    high = wide >> 32
    return high.astype(jnp.int32)


# The scope is around the call, not inside the function: JAX 0.7 lowers a
# shift inside a jitted function's own x64 scope to an invalid module.
with enable_x64(True):
    print("high", square_high(jnp.array([3, 70000, -2**31], dtype=jnp.int32)).tolist())
