"""A float64 difference float32 cancels away, beside a sum it gets right.

``difference`` is ``x*x - (x-1)*(x+1)``, 1 for every ``x``: near 10000 the
squares are about 1e8, where float32 spaces values 8 apart, so what is left of
the difference is mostly rounding.  ``scaled`` is computed as well in
float32 as in float64.  ``noisy`` prints from inside (an effect).
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


@jax.jit
def difference(x):
    square = x * x
    product = (x - 1.0) * (x + 1.0)
    return square - product  # CANCELLATION LINE


@jax.jit
def scaled(x):
    return jnp.sum(x * 0.5)  # BENIGN LINE


@jax.jit
def noisy(x):
    jax.debug.print("noisy {}", x[0])
    return x * 2.0


def data(i):
    return 10000.0 + np.linspace(0.0, 1.0, 7) * (0.37 + i)


for i in range(CALLS):
    print("difference", i, np.asarray(difference(data(i))).round(1).tolist())
    print("scaled", i, float(scaled(data(i))))
noisy(data(0))
