"""A tiny data set, shuffled with a threefry key."""

import jax
import jax.numpy as jnp
import numpy as np

X = np.linspace(-1.0, 1.0, 32).reshape(8, 4)
Y = (np.arange(8) % 2).astype(np.int64)


def shuffled(key):
    order = jax.random.permutation(key, X.shape[0])  # SHUFFLE LINE
    return jnp.asarray(X)[order], jnp.asarray(Y)[order]
