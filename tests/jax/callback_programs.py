"""Host callbacks in a program that turned x64 on.

Run as a script (under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1`` and a policy,
or without no64 for the reference: the x64 program), it prints one JSON
document: per case the text ``jax.debug.print`` printed, the values each
callback received (integers as they are, floats as their ``repr``), the
program's results (likewise), or its error class and message, and the no64
warnings it gave with their lines; plus how often the user's function of the
``traces`` case was traced.
"""

import contextlib
import functools
import io
import json

import jax
import jax.numpy as jnp
import numpy as np
from child_report import no64_warnings, run_case
from jax.experimental import io_callback

I64 = np.iinfo(np.int64)
RECEIVED: list = []
TRACES = []


def _plain(value):
    a = np.asarray(value)
    if a.dtype.kind == "f":
        return [repr(float(v)) for v in a.reshape(-1)]
    return [int(v) for v in a.reshape(-1)]


def record(tag):
    def callback(*values):
        RECEIVED.append([tag, [str(np.asarray(v).dtype) for v in values], [_plain(v) for v in values]])
    return callback


def print_fits(x):
    v = x % 1000
    jax.debug.print("sum {s} values {v}", s=jnp.sum(v), v=v)
    return jnp.sum(v) % 7


def print_past(x):
    s = jnp.sum(x)  # LINE print_past
    jax.debug.print("sum {s}", s=s)
    return s % 1000


def callback_big(x):
    # int64 values beyond 32 bits made inside the program, and INT64_MIN
    big = x * np.int64(2**40 + 1)
    low = jnp.full(x.shape, I64.min, jnp.int64) + x % 2
    jax.debug.callback(record("big"), big, low)
    return big % 1000


def pure_back(x):
    # a result beyond 32 bits coming back from the host
    y = jax.pure_callback(lambda v: np.asarray(v) * 3 + (2**40 + 1),  # LINE pure_back
                          jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y % 1000, (y >> 33).astype(jnp.int32)


def pure_fits(x):
    y = jax.pure_callback(lambda v: np.asarray(v) * 3 - 1, jax.ShapeDtypeStruct(x.shape, x.dtype), x % 1000)
    return y % 100


def pure_min(x):
    # INT64_MIN from the host, read as a number: never its 32-bit image silently
    y = jax.pure_callback(lambda v: np.full(v.shape, I64.min), jax.ShapeDtypeStruct(x.shape, x.dtype),  # LINE pure_min
                          x)
    return y % 1000


def io_ordered(x):
    a = io_callback(lambda v: np.asarray(v) + 1, jax.ShapeDtypeStruct(x.shape, x.dtype), x % 100, ordered=True)
    io_callback(record("first"), None, a, ordered=True)
    io_callback(record("second"), None, a * 2, ordered=True)
    return a % 10


def float_pairs(x):
    jax.debug.callback(record("minus_one"), x - 1)
    y = jax.pure_callback(lambda v: np.asarray(v) * (1 + 2**-30), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y - x


def in_loop(x):
    def body(i, c):
        jax.debug.callback(record("loop"), c)
        return c * 2**20
    return lax_fori(body, x) % 1000


def lax_fori(body, x):
    return jax.lax.fori_loop(0, 3, body, x)


def traced(x):
    TRACES.append(1)
    jax.debug.print("traced {x}", x=x)
    return jax.pure_callback(lambda v: np.asarray(v) + 1, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def run_traces():
    f = jax.jit(traced)
    f(np.array([1, 2], np.int64))
    return f(np.array([3, 4], np.int64))


SMALL = np.array([3, -5, 1000007], np.int64)
CASES = {
    "print_fits": (print_fits, (SMALL,)),
    "print_past": (print_past, (np.array([2**30, 2**30, 5], np.int64),)),
    "callback_big": (callback_big, (np.array([1, 2, -3], np.int64),)),
    "pure_back": (pure_back, (np.array([1, 2, -3], np.int64),)),
    "pure_fits": (pure_fits, (SMALL,)),
    "pure_min": (pure_min, (np.array([1, 2], np.int64),)),
    "io_ordered": (io_ordered, (SMALL,)),
    "float_pairs": (float_pairs, (np.array([1 + 2**-40, -0.0, 3.0]),)),
    "in_loop": (in_loop, (np.array([1, -2], np.int64),)),
    "traces": (None, None),
}


def _call(fun, args):
    value = run_traces() if fun is None else jax.jit(fun)(*args)  # LINE call
    jax.block_until_ready(value)
    jax.effects_barrier()
    return value


def _leaves(value):
    return {"value": [_plain(v) for v in jax.tree_util.tree_leaves(value)]}


def main() -> None:
    out: dict = {}
    for name, (fun, args) in CASES.items():
        RECEIVED.clear()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            got, caught = run_case(functools.partial(_call, fun, args), _leaves)
        got["printed"] = printed.getvalue().splitlines()
        got["received"] = list(RECEIVED)
        got["warnings"] = no64_warnings(caught, messages=True, x64=False)
        out[name] = got
    out["traces"]["count"] = len(TRACES)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
