"""A small, real JAX program written with 64-bit types enabled.

One training step of a softmax classifier, as it is commonly written when
``jax_enable_x64`` is on: float64 parameters, int64 labels and step counter,
an argmax accuracy, a running count made with ``cumsum``, a masked minimum
that uses ``INT64_MAX`` as its "no value" sentinel and a masked maximum that
uses ``-finfo(float64).max``, and a few inner gradient steps in a
``fori_loop`` whose counter is an int64.

The lowered program therefore holds f64, i64 (and i1) values in plain ops,
in a while loop, in reductions (argmax is a two-operand reduce), in a gather
(``take_along_axis``) and in the constants of the sentinels.

:func:`make_inputs` builds deterministic inputs and :func:`lower_train_step`
returns the StableHLO text of the step with source locations.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

#: Problem size: samples per batch, features, classes.
BATCH, FEATURES, CLASSES = 16, 8, 4
#: Inner gradient steps taken per call of :func:`train_step`.
INNER_STEPS = 3
LEARNING_RATE = 0.1
#: Labels below zero mark padding samples that take no part in the metrics.
PAD_LABEL = -1

Params = dict[str, jax.Array]


def loss_fn(params: Params, x: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean cross-entropy over the non-padding samples, and the logits."""
    logits = x @ params["w"] + params["b"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    valid = labels >= 0
    safe_labels = jnp.where(valid, labels, 0)
    nll = -jnp.take_along_axis(logp, safe_labels[:, None], axis=1)[:, 0]
    loss = jnp.sum(jnp.where(valid, nll, 0.0)) / jnp.maximum(jnp.sum(valid), 1)
    return loss, logits


def train_step(
    params: Params, step: jax.Array, x: jax.Array, labels: jax.Array
) -> tuple[Params, jax.Array, dict[str, jax.Array]]:
    """Take ``INNER_STEPS`` gradient steps and report metrics of the first one."""
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), _ = grad_fn(params, x, labels)

    def inner(i: jax.Array, p: Params) -> Params:
        (_, _), g = grad_fn(p, x, labels)
        # A learning rate that decays with the global step (int64 arithmetic).
        lr = LEARNING_RATE / (1.0 + 0.01 * (step * INNER_STEPS + i))
        return jax.tree.map(lambda a, b: a - lr * b, p, g)

    new_params = jax.lax.fori_loop(0, INNER_STEPS, inner, params)

    valid = labels >= 0
    preds = jnp.argmax(logits, axis=-1)  # int64 under x64
    correct = jnp.logical_and(preds == labels, valid)
    accuracy = jnp.sum(correct) / jnp.maximum(jnp.sum(valid), 1)
    running_correct = jnp.cumsum(correct.astype(jnp.int64))

    # Sentinel idioms: INT64_MAX / -finfo(float64).max stand for "no value".
    smallest_label = jnp.min(jnp.where(valid, labels, jnp.iinfo(jnp.int64).max))
    best_margin = jnp.max(
        jnp.where(valid, jnp.max(logits, axis=-1) - jnp.min(logits, axis=-1),
                  -jnp.finfo(jnp.float64).max)
    )
    metrics = {
        "loss": loss,
        "accuracy": accuracy,
        "predictions": preds,
        "running_correct": running_correct,
        "smallest_label": smallest_label,
        "best_margin": best_margin,
    }
    return new_params, step + 1, metrics


#: What the caller guarantees about the integer inputs; no64's range analysis
#: uses it to prove the int64 -> int32 narrowing of everything computed from
#: them exact.
INPUT_RANGES = {
    # The step counter: a training run takes fewer than 10**8 steps (the
    # learning-rate schedule computes step * INNER_STEPS + i in int64).
    "step": (0, 10**8),
    "labels": (min(PAD_LABEL, 0), CLASSES - 1),
}


def make_inputs(seed: int = 0) -> tuple[Params, np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic float64/int64 inputs; the last two samples are padding."""
    rng = np.random.default_rng(seed)
    params = {
        "w": rng.normal(scale=0.5, size=(FEATURES, CLASSES)).astype(np.float64),
        "b": np.zeros((CLASSES,), np.float64),
    }
    step = np.asarray(7, np.int64)
    x = rng.normal(size=(BATCH, FEATURES)).astype(np.float64)
    labels = rng.integers(0, CLASSES, size=(BATCH,)).astype(np.int64)
    labels[-2:] = PAD_LABEL
    return params, step, x, labels


def lower_train_step() -> str:
    """StableHLO text of :func:`train_step`, with source locations."""
    args: Any = make_inputs()
    return jax.jit(train_step).lower(*args).as_text(debug_info=True)
