"""Jitted functions that close over 32-bit device arrays of the x64 program's
64-bit values (made outside any jit: jax.device_put and jnp.array of int64
data or Python ints, jnp.array of Python floats and a sampler's default dtype
under NO64_FLOAT_POLICY=pairs), run under the compile hook with x64 on and
JAX's strict dtype promotion, as Equinox and Diffrax run.

Run as a script (under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1`` and a policy, or
without no64 for the reference), it prints one JSON document: per case its
value and dtype, or its error class and message, the no64 warnings it gave
with their lines, and how often its Python function was traced.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from child_report import print_results
from jax import lax

jax.config.update("jax_numpy_dtype_promotion", "strict")

TRACES: dict[str, int] = {}


def counted(name, fun):
    def traced(*args):
        TRACES[name] = TRACES.get(name, 0) + 1
        return fun(*args)

    return traced


C = jax.device_put(np.full(3, 100_007, np.int64))  # its square needs 34 bits
D = jnp.array([-5, -4, -3])  # Python ints: int64 in the x64 program
A = jnp.array([[1.0, 2.0**-30], [3.0, -1.0]])  # Python floats: float64 in the x64 program
Y = jnp.ones(2)
F = jnp.array([1.0, 2.0**-30], dtype=jnp.float32)  # asked float32 for: float32 there too
K = jax.random.normal(jax.random.key(0), (2,))  # the default dtype: float64 in the x64 program

inner = jax.jit(lambda v: A @ v - v)  # a jitted function closing over A, called in another


#: each case on its own line: no64 says what it says once per line
CASES = {
    # a jnp function (a jit inside the trace) given the closed-over array
    "int_jnp": lambda: jax.jit(counted("int_jnp", lambda: (C * C) % 1000))(),  # LINE int_jnp
    # a lax primitive bound on it directly; popcnt counts 64 bits of an int64
    "int_lax": lambda: jax.jit(counted("int_lax", lambda: lax.population_count(D)))(),
    # 1 + 2**-30 - 1: 2**-30 with float64, 0 with float32
    "matvec": lambda: jax.jit(counted("matvec", lambda y: A @ y - y[0]))(Y),
    # twice v -> A @ v - v from ones, plus 2: [2 + 2**-30, 3 * 2**-30] with float64, [2, 0] with float32
    "loop": lambda: jax.jit(counted("loop", lambda y: lax.fori_loop(0, 2, lambda i, v: inner(v), y) + 2.0))(Y),
    "explicit_f32": lambda: jax.jit(counted("explicit_f32", lambda: (F[0] + F[1]) - F[0]))(),
    "sampled": lambda: jax.jit(counted("sampled", lambda y: K @ y))(Y),
}


def main() -> None:
    out: dict = {}
    for name, run in CASES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = np.asarray(run())
                got = {"value": value.tolist(), "dtype": str(value.dtype)}
            except Exception as exc:  # noqa: BLE001 - the test reads the class and message
                got = {"error": type(exc).__name__, "message": str(exc)}
        got["warnings"] = [[w.category.__name__, w.lineno] for w in caught
                           if w.category.__module__.startswith("no64")]
        got["traces"] = TRACES.get(name, 0)
        out[name] = got
    out["K"] = np.asarray(K).tolist()
    print_results(out)


if __name__ == "__main__":
    main()
