"""x64 on: argmax, arange, keys and the jit call make 64-bit values that no
line asks for; one line does ask for int64."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402


@jax.jit
def pick(x, key):
    best = jnp.argmax(x)  # ARGMAX LINE
    steps = jnp.arange(x.shape[0])  # ARANGE LINE (int64 under x64: not requested)
    noise = jax.random.uniform(key, x.shape)  # DRAW LINE
    wide = jnp.cumsum(steps, dtype=jnp.int64)  # INT64 LINE
    return best + steps + wide, noise


print(pick(jnp.ones(4), jax.random.key(0))[0].tolist())  # CALL LINE
