"""int64 and float64 values at one line and at lines of their own.

``mixed`` converts floats to int64 and scales them by a float (an int64 and
float64 values at one line), and takes the cumulative sums of int64 and of
float64 data at lines of their own: jnp.cumsum makes a private function of
each, whose ops have the same names and locations.  ``huge`` multiplies by a
float64 constant beyond float32's range.
"""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def mixed(x, n):
    scaled = x.astype(jnp.int64) * 2.5  # MIXED LINE
    counts = jnp.cumsum(n)  # INTEGER LINE
    sums = jnp.cumsum(x)  # FLOAT LINE
    return scaled, counts, sums


@jax.jit
def huge(x):
    return x * 1e300  # OVERFLOW LINE


print([np.asarray(a).tolist() for a in mixed(np.arange(4.0), np.arange(4) * 100_000)])
print(np.asarray(huge(np.arange(3.0))).tolist())
