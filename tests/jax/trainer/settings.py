"""The trainer's settings: 64-bit JAX, as the trainer was written for."""

import jax

jax.config.update("jax_enable_x64", True)

VOCAB = 64
SEQ = 8
BATCH = 4
STEPS = 3
