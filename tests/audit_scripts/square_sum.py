"""The sum of 64-bit squares, traced in an x64 scope: the square and the
sum may leave the 32-bit range, and no op here needs their words."""

import jax
import jax.numpy as jnp

from support import enable_x64


@jax.jit
def total(x):
    wide = x.astype(jnp.int64) * x.astype(jnp.int64)  # SQUARE LINE
    return (jnp.sum(wide) % 1000).astype(jnp.int32)


with enable_x64(True):
    print("sum", int(total(jnp.array([3, 7], dtype=jnp.int32))))
