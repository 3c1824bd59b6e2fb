"""A float64 difference called on a device array: under the hook the array
is float32, and float64 in the x64 program."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def difference(x):
    square = x * x
    product = (x - 1.0) * (x + 1.0)
    return square - product  # CANCELLATION LINE


x = jnp.asarray(10000.0 + np.linspace(0.0, 1.0, 7) * 0.37)
print(x.dtype, np.asarray(difference(x)).round(1).tolist())
