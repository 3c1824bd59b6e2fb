"""Programs that make 32-bit device arrays of the x64 program's 64-bit values
before the call that takes them (device_put, jnp.asarray, eager creations,
astype, results of earlier jit calls), run under the compile hook with x64 on.

Run as a script (under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1`` and a policy, or
without no64 for the reference), it prints one JSON document: per case its
value, or its error class and message, and the no64 warnings it gave, with
their lines.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
from child_report import no64_warnings, run_case
from jax import lax

H = np.full(3, 100_007, np.int64)  # its square needs 34 bits


def popcnt(a):
    return lax.population_count(a)


def threaded():
    # a jit result that is int64 in the x64 program enters the next jit call
    low = jax.jit(lambda c: c & 0xFFFF)(jnp.int64(5))
    return jax.jit(lambda c: popcnt(~c))(low)  # 62 of 64 bits; 30 of 32


def fast_path_order():
    # the first call (int32 data) must not serve the second (int64 data) from
    # jaxlib's C++ cache, which sees the same 32-bit signature
    f = jax.jit(popcnt)
    first = f(jnp.asarray(np.array([-1], np.int32)))
    second = f(jnp.asarray(np.array([-1], np.int64)))
    return jnp.concatenate([first, second])


#: each case on its own line: no64 says what it says once per line
CASES = {
    "device_put": lambda: jax.jit(lambda a: (a * a) % 1000)(jax.device_put(H)),  # LINE device_put
    "asarray": lambda: jax.jit(lambda a: (a * a) % 1000)(jnp.asarray(H)),  # LINE asarray
    "array": lambda: jax.jit(lambda a: (a * a) % 1000)(jnp.array(H)),  # LINE array
    "arange": lambda: jax.jit(lambda a: (a * a) % 1000)(jnp.arange(100_007, 100_010)),  # LINE arange
    "arange_int64": lambda: jax.jit(lambda a: (a * a) % 1000)(  # LINE arange_int64
        jnp.arange(100_007, 100_010, dtype=jnp.int64)),
    "full_int64": lambda: jax.jit(lambda a: (a * a) % 1000)(jnp.full(3, 100_007, jnp.int64)),  # LINE full_int64
    "list": lambda: jax.jit(lambda a: (a * a) % 1000)(jnp.array([100_007, 100_008])),  # LINE list
    "astype": lambda: jax.jit(popcnt)(jnp.asarray(np.array([-1, 7], np.int32)).astype(jnp.int64)),
    "threaded": threaded,
    "fast_path_order": fast_path_order,
    # eager subtractions of distinct shapes (one compiled program each)
    "zeros_like": lambda: jax.jit(popcnt)(jnp.zeros_like(jnp.arange(2)) - 1),  # LINE zeros_like
    "eager": lambda: popcnt(jnp.arange(3) - 5),  # LINE eager
    "promoted": lambda: popcnt(jnp.arange(4, dtype=jnp.int32) - jnp.int64(5)),  # LINE promoted
    "explicit_int32": lambda: jax.jit(lambda a: a * a)(jnp.arange(100_000, 100_002, dtype=jnp.int32)),
}


def _value(value):
    value = np.asarray(value)
    return {"value": value.tolist(), "dtype": str(value.dtype)}


def main() -> None:
    out: dict = {}
    for name, run in CASES.items():
        got, caught = run_case(run, _value)
        got["warnings"] = no64_warnings(caught)
        out[name] = got
    print(json.dumps(out))


if __name__ == "__main__":
    main()
