"""The same small MLP in Flax linen, Flax nnx and Equinox."""

import equinox as eqx
import flax.linen as nn
import jax
from flax import nnx


class Linen(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        x = nn.relu(nn.Dense(8)(x))
        x = nn.Dropout(0.1, deterministic=not train)(x)
        return nn.Dense(2)(x)


class Nnx(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear(4, 8, rngs=rngs)  # NNX INIT LINE
        self.out = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.out(jax.nn.relu(self.hidden(x)))


def equinox_mlp(key):
    return eqx.nn.MLP(in_size=4, out_size=2, width_size=8, depth=1, key=key)  # EQX INIT LINE
