"""Train a GPT-like model (model.TinyGPT) a few steps with optax, x64 on, as
`no64 audit --numerics` measures it: its state holds a typed PRNG key (for
dropout) and a raw uint32 PRNGKey (for shuffling), its metrics the host
sentinel INT64_MAX ("no best step yet"), and a learning-rate schedule takes
Python numbers only.  ``--print`` adds a jax.debug.print to the evaluation
(an effect, which measuring would run again); ``--offset`` has the schedule
add and take away 1e4 (float32 keeps about 3 of the learning rate's digits).
Prints the losses as JSON."""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import settings  # noqa: F401  (turns x64 on)
from model import TinyGPT
from settings import SEQ, STEPS

import data

NEVER = np.iinfo(np.int64).max  # SENTINEL LINE
PRINT = "--print" in sys.argv[1:]
OFFSET = 1e4 if "--offset" in sys.argv[1:] else 0.0
model = TinyGPT()
opt = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)


@jax.jit
def schedule(step, base):
    return ((base + OFFSET) - OFFSET) * jnp.minimum(1.0, (step + 1) / 2.0)  # SCHEDULE LINE


@jax.jit
def train_step(state, tokens, mask, lr):
    key, dropout = jax.random.split(state["key"])
    order = jax.random.permutation(state["shuffle"], tokens.shape[0])
    tokens, mask = tokens[order], mask[order]
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def loss_fn(params):
        logits = model.apply(params, inputs, train=True, rngs={"dropout": dropout})
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        return jnp.sum(losses * mask) / jnp.sum(mask)

    loss, grads = jax.value_and_grad(loss_fn)(state["params"])
    state["opt"].hyperparams["learning_rate"] = lr
    updates, opt_state = opt.update(grads, state["opt"], state["params"])
    shuffle = jax.random.fold_in(state["shuffle"], 1)
    return {"params": optax.apply_updates(state["params"], updates), "opt": opt_state, "key": key,
            "shuffle": shuffle}, loss


@jax.jit
def evaluate(params, tokens, metrics, step):
    logits = model.apply(params, tokens[:, :-1])
    loss = jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]))
    if PRINT:
        jax.debug.print("eval loss {}", loss)
    better = loss < metrics["best_loss"]
    return {"best_loss": jnp.where(better, loss, metrics["best_loss"]),
            "best_step": jnp.where(better, step, metrics["best_step"])}  # BEST LINE


params = model.init(jax.random.key(0), np.zeros((1, SEQ), np.int64))
state = {"params": params, "opt": opt.init(params), "key": jax.random.key(1), "shuffle": jax.random.PRNGKey(2)}
metrics = {"best_loss": np.float64(np.inf), "best_step": NEVER}
losses = []
for step, (tokens, mask) in enumerate(data.batches(STEPS)):
    state, loss = train_step(state, tokens, mask, schedule(step, 1e-2))
    metrics = evaluate(state["params"], tokens, metrics, step)
    losses.append(float(loss))
print(json.dumps({"losses": losses, "best_step": int(metrics["best_step"])}))
