"""A float64 ratio of tiny values: 1.0 with float64, 0/0 in f32."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def ratio(x):
    return (x * 1e-300) / 1e-300  # RATIO LINE


@jax.jit
def mean(x):
    return jnp.mean(x)


print("ratio", ratio(np.ones(2)).tolist(), "mean", float(mean(np.ones(4))))
