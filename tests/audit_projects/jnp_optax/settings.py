"""Project settings: this project wants 64-bit JAX."""

import jax

jax.config.update("jax_enable_x64", True)  # X64 LINE
SEED = 0
