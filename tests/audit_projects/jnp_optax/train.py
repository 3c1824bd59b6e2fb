"""Train the classifier for a few steps with optax."""

import settings  # noqa: F401  (turns x64 on)

import jax
import jax.numpy as jnp
import optax

import data
import metrics
import model


def loss_fn(params, x, y, key):
    logits = model.apply(params, x, key)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits


@jax.jit
def step(params, state, x, y, key):
    (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y, key)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss, metrics.correct(logits, y)


opt = optax.sgd(0.1)
params = model.init(jax.random.key(settings.SEED))
state = opt.init(params)
dropout = jax.random.key(1, impl="rbg")
for epoch in range(2):
    x, y = data.shuffled(jax.random.key(10 + epoch))
    dropout, sub = jax.random.split(dropout)
    params, state, loss, hits = step(params, state, x, y, sub)
    wrong = metrics.first_error(y, jnp.argmax(x @ params["w"], axis=1))
    print(f"epoch {epoch} loss {float(loss):.4f} hits {int(hits)} first wrong {int(wrong)}")
