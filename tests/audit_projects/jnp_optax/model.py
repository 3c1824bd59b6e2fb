"""A linear classifier: normal init (threefry), dropout (rbg key)."""

import jax
import jax.numpy as jnp


def init(key):
    return {"w": jax.random.normal(key, (4, 2)) * 0.1}  # INIT LINE


def apply(params, x, key):
    keep = jax.random.bernoulli(key, 0.9, x.shape)  # DROPOUT LINE
    return jnp.where(keep, x / 0.9, 0.0) @ params["w"]
