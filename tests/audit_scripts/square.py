"""The high word of a 64-bit square, in an x64 scope of a jitted function:
exact only if the square is computed in 64 bits (NO64_POLICY=exact)."""

import jax
from no64.jax._compat import enable_x64
import jax.numpy as jnp


@jax.jit
def square_high(x):
    with enable_x64(True):
        wide = x.astype(jnp.int64) * x.astype(jnp.int64)  # SQUARE LINE
        high = wide >> 32
    return high.astype(jnp.int32)


print("high", square_high(jnp.array([3, 70000, -2**31], dtype=jnp.int32)).tolist())
