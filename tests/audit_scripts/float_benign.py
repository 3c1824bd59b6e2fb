"""A float64 program float32 computes within a thousandth."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def scaled(x):
    return jnp.sum(x * 0.5)  # BENIGN LINE


for i in range(3):
    print("scaled", i, float(scaled(np.linspace(0.0, 3.0, 7) + i)))
