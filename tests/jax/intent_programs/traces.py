"""Child program: how many times the user's Python runs per jit trace.

Run under ``JAX_ENABLE_X64=1`` (with ``NO64_PLATFORMS=cpu`` and a
``NO64_POLICY``, or without no64 for the reference); prints one JSON line:
each function's traces and value.
"""

from __future__ import annotations

import json
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

counts: dict[str, int] = {}


def counted(name: str):  # noqa: ANN201 - a decorator
    def wrap(f):  # noqa: ANN001, ANN202
        def g(*args):  # noqa: ANN002, ANN202
            counts[name] = counts.get(name, 0) + 1
            return f(*args)
        g.__name__ = name
        return g
    return wrap


OFFSET = np.int64(3_000_000_000)  # a closed-over constant beyond 32 bits
SCALE = np.float64(0.5)


@counted("plain")
def plain(x):  # noqa: ANN001, ANN201 - Equinox's test_num_traces
    return x + 1


@counted("cumsum_mod")
def cumsum_mod(a):  # noqa: ANN001, ANN201
    return jnp.cumsum(a)[-1] % 1000


@counted("closure_mod")
def closure_mod(a):  # noqa: ANN001, ANN201
    return (a + OFFSET) % 1000


@counted("scan_relu")
def scan_relu(x):  # noqa: ANN001, ANN201
    def body(c, y):  # noqa: ANN001, ANN202
        return c + jax.nn.relu(y) * SCALE, c
    total, _ = lax.scan(body, jnp.zeros((), x.dtype), x)
    return total


@counted("nested")
def nested(a):  # noqa: ANN001, ANN201
    inner = jax.jit(lambda b: jnp.where(b > 2, b * 2, jnp.iinfo(jnp.int64).max))
    return jnp.min(inner(a)) % 1000


CASES = {
    "plain": (plain, (np.int32(1),)),
    "cumsum_mod": (cumsum_mod, (np.full(200, 16_000_000, np.int64),)),
    "closure_mod": (closure_mod, (np.arange(4, dtype=np.int64),)),
    "scan_relu": (scan_relu, (np.array([1.5, -2.0, 3.25]),)),
    "nested": (nested, (np.array([1, 5, 7], np.int64),)),
}

out: dict[str, object] = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, (f, args) in CASES.items():
        try:
            value = jax.jit(f)(*args)
            out[name] = {"value": np.asarray(value).tolist(), "traces": counts.get(name, 0)}
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:300], "traces": counts.get(name, 0)}
print(json.dumps(out))
sys.stdout.flush()
