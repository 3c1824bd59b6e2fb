"""Metrics with an explicit int64 counter and a host sentinel."""

import jax
import jax.numpy as jnp
import numpy as np


def correct(logits, labels):
    hits = jnp.argmax(logits, axis=1) == labels
    return jnp.sum(hits, dtype=jnp.int64)  # INT64 LINE


@jax.jit
def first_wrong(labels, predicted, none):
    index = jnp.arange(labels.shape[0])
    return jnp.min(jnp.where(labels != predicted, index, none))


def first_error(labels, predicted):
    return first_wrong(labels, predicted, np.iinfo(np.int64).max)  # SENTINEL LINE
