"""One optax training step of a linear model (run with JAX_ENABLE_X64=1)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax


def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def main() -> None:
    opt = optax.adam(1e-2)
    x = jnp.asarray(np.linspace(0.0, 1.0, 12).reshape(4, 3))
    y = jnp.asarray(np.arange(4.0))
    w = jnp.zeros(3)
    state = opt.init(w)

    @jax.jit
    def step(w, state):
        value, grad = jax.value_and_grad(loss)(w, x, y)
        updates, state = opt.update(grad, state, w)
        return optax.apply_updates(w, updates), state, value

    w, state, value = step(w, state)
    print(f"loss {float(value):.6f} dtype {w.dtype}")


if __name__ == "__main__":
    main()
