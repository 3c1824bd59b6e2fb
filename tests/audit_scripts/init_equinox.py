"""An Equinox MLP initialised from a key and applied (x64 off, as on a device)."""

import equinox as eqx
import jax
import jax.numpy as jnp


@jax.jit
def init_and_apply(key, x):
    model = eqx.nn.MLP(in_size=3, out_size=2, width_size=8, depth=2, key=key)
    return jax.vmap(model)(x)


def main() -> None:
    out = init_and_apply(jax.random.key(0), jnp.ones((5, 3)))
    print(f"out {out.shape} {out.dtype}")


if __name__ == "__main__":
    main()
