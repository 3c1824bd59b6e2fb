"""A small training script that turns x64 on, for the commands the README and
the Neuron guide run on ``train.py``: float64 parameters and int64 labels."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def step(w, x, labels):
    logits = x @ w
    loss = jnp.mean((logits - labels) ** 2)
    grad = x.T @ (logits - labels) / labels.shape[0]
    return w - 0.1 * grad, loss


w = np.zeros(3)
x = np.linspace(0.0, 1.0, 12).reshape(4, 3)
labels = np.arange(4, dtype=np.int64)
for _ in range(2):
    w, loss = step(w, x, labels)
print("loss", round(float(loss), 4))
