"""Draws random numbers with rbg keys, x64 off."""

import jax

key = jax.random.key(0, impl="rbg")
sample = jax.jit(lambda k: jax.random.uniform(k, (3,)))(key)  # RBG LINE
print("dtype", sample.dtype, "shape", sample.shape)
