"""Asks for int64 explicitly (x64 on), and echoes its arguments."""

import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402


@jax.jit
def positions(x):
    idx = jnp.arange(x.shape[0], dtype=jnp.int64)  # INT64 LINE
    return x.astype(jnp.float32) * idx.astype(jnp.float32)


print("args", sys.argv[1:])
print("result", positions(jnp.ones(4, dtype=jnp.float32)).tolist())
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
