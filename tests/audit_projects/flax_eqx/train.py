"""Initialise and apply three models; a linen training step with dropout; metrics
on a batch shuffled with an rbg key."""

import config  # noqa: F401  (turns x64 on)

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import metrics
import models

x = jnp.asarray(np.linspace(-1.0, 1.0, 24).reshape(6, 4), dtype=jnp.float32)
labels = jnp.asarray(np.arange(6) % 2, dtype=jnp.int64)  # LABELS LINE

linen = models.Linen()
params = jax.jit(lambda k: linen.init(k, x, train=False))(jax.random.key(0))  # LINEN INIT LINE


@jax.jit
def step(params, key):
    def loss(p):
        logits = linen.apply(p, x, train=True, rngs={"dropout": key})  # LINEN DROPOUT LINE
        picked = jnp.take_along_axis(logits, labels[:, None], axis=1)
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked[:, 0])

    value, grads = jax.value_and_grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), value


params, value = step(params, jax.random.key(1))
order = jax.random.permutation(jax.random.key(4, impl="rbg"), x.shape[0])  # RBG SHUFFLE LINE
count = metrics.hits(linen.apply(params, x[order], train=False), labels[order])
masked = metrics.masked_labels(labels, order % 2 == 0)
nnx_model = models.Nnx(nnx.Rngs(2))
eqx_model = eqx.filter_jit(models.equinox_mlp)(jax.random.key(3))  # EQX CALL LINE
print(f"linen {float(value):.4f} hits {int(count)} masked {masked.tolist()} nnx {nnx_model(x).shape} "
      f"eqx {jax.vmap(eqx_model)(x).shape}")
