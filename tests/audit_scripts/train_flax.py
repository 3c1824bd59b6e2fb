"""A Flax linen classifier: init and one training step (run with JAX_ENABLE_X64=1)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(16)(x))
        return nn.Dense(4)(x)


def main() -> None:
    model = MLP()
    x = jnp.asarray(np.linspace(-1.0, 1.0, 24).reshape(6, 4))
    labels = jnp.asarray(np.arange(6) % 4)  # int64 labels under x64
    params = jax.jit(model.init)(jax.random.key(0), x)

    @jax.jit
    def step(params):
        def loss_fn(p):
            logits = model.apply(p, x)
            picked = jnp.take_along_axis(logits, labels[:, None], axis=1)
            return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked[:, 0]), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        accuracy = jnp.mean(jnp.argmax(logits, axis=1) == labels)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss, accuracy

    params, loss, accuracy = step(params)
    print(f"loss {float(loss):.6f} accuracy {float(accuracy):.3f}")


if __name__ == "__main__":
    main()
