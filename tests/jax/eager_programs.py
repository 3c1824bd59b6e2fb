"""Eager calls (outside any jit) of a program that turns x64 on, under the compile hook.

Run as a script (under ``NO64_PLATFORMS=cpu`` and a policy, or without no64 for
the reference: the x64 program), it prints one JSON document: per case its
value, or its error class and message, and the no64 warnings it gave, with
their lines.  Each case is a call JAX makes a choice for by dtype in Python
before its own jit runs (a sampler's random bits, a requested int64, a
scatter's update computation).
"""

import jax
import jax.numpy as jnp
import numpy as np
from child_report import no64_warnings, print_results, run_case

jax.config.update("jax_enable_x64", True)  # the program asks for x64


def dropout():
    # Flax's Dropout draws its mask with jax.random.bernoulli(rng, p=keep_prob): a Python
    # float, float64 (64 random bits per element) in the x64 program
    import flax.linen as nn

    x = jnp.ones((4, 16), jnp.float32)
    y = nn.Dropout(0.4).apply({}, x, deterministic=False, rngs={"dropout": jax.random.PRNGKey(42)})
    return np.asarray(y) != 0


KEY = jax.random.key(0)

CASES = {
    "bernoulli": lambda: jax.random.bernoulli(KEY, 0.3, (32,)),
    "bernoulli_jit": lambda: jax.jit(lambda k: jax.random.bernoulli(k, 0.3, (32,)))(KEY),
    "categorical": lambda: jax.random.categorical(KEY, np.log([0.1, 0.2, 0.7]), shape=(32,)),
    "choice": lambda: jax.random.choice(KEY, 5, (16,), p=np.array([0.1, 0.2, 0.3, 0.2, 0.2])),
    "dropout": dropout,
    "astype_huge": lambda: jnp.array([1e10, -3e9, 2.5]).astype(jnp.int64),  # LINE astype_huge
    "astype_fits": lambda: jnp.array([2.5, -3.0, 7e5]).astype(int),
    "scatter_int64": lambda: jnp.arange(4, dtype=jnp.int64).at[jnp.array([0, 0, 3])].add(7),
    "histogram": lambda: jnp.histogram(jnp.linspace(0, 1, 11), bins=3),
    "randint_wide": lambda: jax.random.randint(KEY, (6,), 0, 2**40),  # LINE randint_wide
    # vmap called outside any jit: its function's jnp calls are jits traced inside the vmap
    # float64 host data f32 cannot hold (pairs hold it): 2**40 times what x64 gives 2**-40 for
    "vmap_host_float": lambda: jax.vmap(lambda v: (v - 1) * 2.0**40)(np.array([1 + 2**-40, 1 - 2**-41, 3.0])),
    # an array made by jnp, float64 in the x64 program (noted under pairs)
    "vmap_array_float": lambda: jax.vmap(lambda v: ((v + 2.0**-40) - v) * 2.0**40)(jnp.array([1.0, -2.0])),
    # an int64 array whose square needs 64 bits
    "vmap_int64": lambda: jax.vmap(lambda a: (a * a) % 1000)(jnp.full(3, 100_000, jnp.int64)),  # LINE vmap_int64
    # Python control flow on an unmapped array: no jit can trace it
    "vmap_concrete": lambda: jax.vmap(lambda v, n: v * 2 if n > 0 else v,  # LINE vmap_concrete
                                      in_axes=(0, None))(np.array([1 + 2**-40]), jnp.float32(1.0)),
}


def _leaves(value):
    return {"value": [np.asarray(v).tolist() for v in jax.tree.leaves(value)]}


def main() -> None:
    out: dict = {}
    for name, run in CASES.items():
        got, caught = run_case(run, _leaves)
        got["warnings"] = no64_warnings(caught, x64=False)
        out[name] = got
    print_results(out)


if __name__ == "__main__":
    main()
