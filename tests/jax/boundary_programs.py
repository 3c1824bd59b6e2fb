"""Host data crossing a jit's boundary in a program that turned x64 on.

Run as a script (under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1`` and a policy,
or without no64 for the reference: the x64 program), it prints one JSON
document: per case its value (each float as its ``repr``, so that signed
zeros, infinities and NaN survive), or its error class and message, and the
no64 warnings it gave with their lines and messages; plus how often the
user's function of the ``traces`` case was traced.
"""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
from child_report import no64_warnings, run_case

#: float64 arguments f32 cannot hold (1 + 2**-40), signed zero, the infinities and NaN
ADVERSARIAL = np.array([1 + 2**-40, -0.0, np.inf, -np.inf, np.nan, 3.0])
BIG = np.array([2.0, 2e300])  # a float64 closure beyond f32's range
I64 = np.iinfo(np.int64)
I32 = np.iinfo(np.int32)
TRACES = []


def traced_once(x):
    TRACES.append(1)
    return x - 1


def run_traces():
    f = jax.jit(traced_once)
    f(np.array([1 + 2**-40, 2.0]))
    return f(np.array([1 + 2**-41, 5.0]))


CASES = {
    # each: (function, arguments)
    "enter": (lambda x: x - 1, (ADVERSARIAL,)),
    "signs": (lambda x: x * 2, (np.array([-0.0, 1e-310, 1.5]),)),  # LINE signs
    "scalar": (lambda x: x - 1, (np.float64(1 + 2**-40),)),
    "python_float": (lambda x, s: x * s - x, (np.array([1.0]), 1 + 2**-40)),
    # a Python float stays weakly typed: with a float32 array, f32 in the x64 program too
    "weak_python_float": (lambda x, s: x * s - x, (np.array([3.0], np.float32), 1 + 2**-40)),
    "closure_beyond": (lambda x: x * BIG, (np.array([1.0, 0.5]),)),  # LINE closure_beyond
    "python_float_beyond": (lambda x, s: x * s, (np.array([1.0]), 2e300)),  # LINE python_float_beyond
    # a host sentinel beside a literal equal to its 32-bit image, on one line
    "sentinel_meets": (lambda x: (x == I64.max, x > I32.max, x == I32.max),  # LINE sentinel_meets
                       (np.int64(I64.max),)),
    # host sentinels held by an array made earlier (eagerly, by a jit), read as a number
    "held_full": (lambda v: v % 1000, lambda: (jnp.full(3, I64.max),)),  # LINE held_full
    "held_array": (lambda v: v % 1000, lambda: (jnp.array([I64.max, 5, I64.min]),)),  # LINE held_array
    "held_jit_result": (lambda v: v % 1000,  # LINE held_jit_result
                        lambda: (jax.jit(lambda: jnp.full(2, I64.min))(),)),
    # ... put on the device, then compared with its own 32-bit image
    "held_passed": (lambda v: (v == I64.max, v > I32.max),  # LINE held_passed
                    lambda: (jnp.asarray(np.array([I64.max, 7])),)),
    # 64-bit integers whose small values the host knows: proven, no warning ...
    "small_ints": (lambda x, y: (2 * x + y, x * y - 1), lambda: (jnp.array(3), 4)),
    "small_numpy": (lambda x: x * x + 1, (np.array([30000, -30000, 7]),)),
    # ... and the same function given a value beyond: judged again
    "large_int": (lambda x, y: 2 * x + y, lambda: (jnp.array(3), 2**31 - 10)),  # LINE large_int
    "int64_beyond": (lambda v: (v % 1000).astype(jnp.int32),
                     (np.array([I64.max, 2**40 + 1, int(I32.min) - 1, 7], np.int64),)),  # LINE int64_beyond
}


#: cases computed outside any jit: host sentinels in eager arrays
EAGER = {
    "eager_held_rem": lambda: jnp.full(3, I64.max) % 1000,  # LINE eager_held_rem
}


def _floats(value):
    return [repr(float(v)) for v in np.asarray(value, np.float64).reshape(-1)]


def _call(fun, args):
    if callable(args):
        args = args()  # arrays made under the policy of this run
    return run_traces() if fun is None else jax.jit(fun)(*args)  # LINE call


def _value(value):
    return {"value": _floats(value), "dtype": str(np.asarray(value).dtype)}


def main() -> None:
    out: dict = {}
    cases = {**CASES, "traces": (None, None)}
    for name, (fun, args) in cases.items():
        got, caught = run_case(functools.partial(_call, fun, args), _value)
        got["warnings"] = no64_warnings(caught, messages=True)
        out[name] = got
    for name, eager in EAGER.items():
        got, caught = run_case(eager, _value)
        got["warnings"] = no64_warnings(caught, messages=True)
        out[name] = got
    out["traces"]["count"] = len(TRACES)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
