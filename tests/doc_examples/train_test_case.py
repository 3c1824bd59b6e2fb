"""A test of the training step in train.py, for ``pytest --no64`` and
``pytest --no64-numerics`` (copied beside it as test_train.py)."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def mean_square(x):
    return jnp.mean(x * x)


def test_mean_square():
    assert float(mean_square(np.arange(4.0, dtype=np.float32))) == 3.5
