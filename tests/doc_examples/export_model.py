"""Writes model.jaxexport, the jax.export artifact of a small step with x64
on (float64 weights, an int64 counter), into the working folder."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

jax.config.update("jax_enable_x64", True)


def step(w, count):
    return jnp.tanh(w) * 2.0, count + 1


exported = export.export(jax.jit(step))(np.ones(4), np.int64(0))
with open("model.jaxexport", "wb") as f:
    f.write(exported.serialize())
