"""Evaluation metrics: an explicit int64 count and a host sentinel."""

import jax
import jax.numpy as jnp
import numpy as np

NO_LABEL = np.iinfo(np.int64).min


def hits(logits, labels):
    return jnp.sum(jnp.argmax(logits, axis=-1) == labels, dtype=jnp.int64)  # INT64 LINE


@jax.jit
def _masked(labels, keep, fill):
    return jnp.where(keep, labels, fill)


def masked_labels(labels, keep):
    return _masked(labels, keep, NO_LABEL)  # SENTINEL LINE
