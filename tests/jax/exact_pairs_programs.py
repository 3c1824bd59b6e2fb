"""Programs with float64 results, run under the compile hook with x64 on,
NO64_POLICY=exact and NO64_FLOAT_POLICY=pairs: JAX's 32-bit signature keeps
float32 where the x64 program has float64, so each float64 result computed on
pairs is returned rounded once (and each int64 result not proven to fit is
checked by value beside them).  Prints one JSON document: per case its
values with their dtypes (a pytree flattened), or its error class and message."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from child_report import print_results

warnings.simplefilter("ignore")

X = np.array([1.0, 2.0, 4.0, -0.5])
K = np.arange(5, dtype=np.float64)


def mixed(v, n):
    return v * 2.0, jnp.sum(v), n + 1, (v > 1.0).sum(), jnp.cumsum(n)


CASES = {
    "vector": lambda: jax.jit(lambda v: v * 3.0)(np.array([1.0, 2.0])),
    "scalar": lambda: jax.jit(jnp.sum)(X),
    "matrix": lambda: jax.jit(lambda m: m @ m.T)(X.reshape(2, 2)),
    "var_ddof_n": lambda: jnp.var(X, ddof=4),
    "std_ddof_n": lambda: jnp.std(X, ddof=4),
    "var_ddof_1": lambda: jnp.var(X, ddof=1),
    # pairs, not f32: 1e8 + k/1024 - 1e8 is k/1024 as with x64
    "cancel": lambda: jax.jit(lambda k: (1e8 + k / 1024) - 1e8)(K),
    "mixed": lambda: jax.jit(mixed)(X, np.array([5, 2**40, -3], np.int64) // 2**20),
    "mixed_overflow": lambda: jax.jit(mixed)(X, np.array([2**31 - 1, 1, 0], np.int64)),
    "pytree": lambda: jax.jit(lambda v: {"a": v.sum(), "b": (v * 2).astype(jnp.int64),
                                         "c": [v.mean(), v[:2]]})(X),
    "float_in_int_out": lambda: jax.jit(lambda v: jnp.argmax(v))(X),
    "grad": lambda: jax.jit(jax.grad(lambda v: jnp.sum(v ** 3) / 3 - jnp.mean(v) * v[0]))(X),
}


def main() -> None:
    out = {}
    for name, run in CASES.items():
        try:
            leaves = [np.asarray(g) for g in jax.tree_util.tree_leaves(run())]
            out[name] = {"value": [g.tolist() for g in leaves], "dtype": [str(g.dtype) for g in leaves]}
        except Exception as exc:  # noqa: BLE001 - the test reads the class and message
            out[name] = {"error": type(exc).__name__, "message": str(exc)}
    print_results(out)


if __name__ == "__main__":
    main()
