"""Train the model a few steps with optax; print per step the loss, the count of
target tokens and their id sum, the step counter and the argmax hits, as JSON."""

import json

import jax
import jax.numpy as jnp
import optax
import settings  # noqa: F401  (turns x64 on)
from model import TinyLM
from settings import STEPS, VOCAB

import data
import no64

model = TinyLM()
opt = optax.adam(1e-2)


@jax.jit
def step(params, opt_state, counter, tokens, mask):
    inputs, targets = tokens[:, :-1], no64.assume(tokens[:, 1:], 0, VOCAB - 1)
    mask = no64.assume(mask, 0, 1)

    def loss_fn(p):
        logits = model.apply(p, inputs)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        return jnp.sum(losses * mask) / jnp.sum(mask), logits

    (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = opt.update(grads, opt_state, params)
    counted = jnp.sum(mask.astype(jnp.int64))  # at most the batch's element count
    id_sum = jnp.sum(targets * mask)  # an int64 sum of ids below VOCAB
    hits = jnp.sum((jnp.argmax(logits, axis=-1) == targets) * mask)
    counter = no64.assume(counter, 0, 1 << 30) + 1
    return optax.apply_updates(params, updates), opt_state, counter, loss, counted, id_sum, hits


params = jax.jit(model.init)(jax.random.key(0), jnp.zeros((1, 8), jnp.int64))
opt_state = opt.init(params)
counter = jnp.int64(0)
out = []
for tokens, mask in data.batches(STEPS):
    tokens, mask = jax.device_put(tokens), jax.device_put(mask)
    params, opt_state, counter, loss, counted, id_sum, hits = step(params, opt_state, counter, tokens, mask)
    out.append({"loss": float(loss), "counted": int(counted), "id_sum": int(id_sum), "hits": int(hits),
                "counter": int(counter), "counter_dtype": str(counter.dtype)})
print(json.dumps(out))
