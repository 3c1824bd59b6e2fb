"""Compiles one function, then crashes on purpose."""

import jax
import jax.numpy as jnp

print("before the crash")
jax.jit(lambda x: x + 1)(jnp.ones(2))


def fail():
    raise ValueError("crashed on purpose")  # CRASH LINE


fail()
