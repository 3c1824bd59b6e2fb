"""Programs whose 64-bit host values JAX would narrow: sentinels in every
spelling, big integers, and a Flax/Optax training step.

Used in-process (``no64.jit``) and as a script run in child processes:
``python host_cases.py OUT.json`` runs every case eagerly and under
``jax.jit`` and writes the results (or the error each raised); with no64
active it also reruns the big-integer cases under the ``"saturate"``
integer policy and writes ``no64.host_records()``.  The reference is the
same script run with ``JAX_ENABLE_X64=1`` and without no64.

Each case is ``f(x)`` with ``x = np.arange(3)`` (int64); a case defined on
one line is refused (when it is) at that line.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from support import enable_x64

I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
F64_MAX = float(np.finfo(np.float64).max)

S_MAX = np.int64(I64.max)  # closed-over scalars and vectors
S_UMAX = np.uint64(U64.max)
V_INT = np.array([I64.max, 5, I64.min])
V_FLOAT = np.array([F64_MAX, -F64_MAX, 1.5])
BIG = np.array([2**40, 1])


def f64(x: Any) -> Any:
    return x.astype(jnp.float64)


def u64(x: Any) -> Any:
    return x.astype(jnp.uint64)


#: name -> f(x): the value each sentinel spelling gives (masks select nothing where
#: the sentinel itself should come out).
SENTINELS: dict[str, Callable[[Any], Any]] = {
    # signed
    "np_scalar": lambda x: jnp.min(jnp.where(x > 0, x, np.int64(I64.max))),
    "np_scalar_all_masked": lambda x: jnp.max(jnp.where(x < 0, x, np.int64(I64.min))),
    "closed_scalar": lambda x: jnp.minimum(x, S_MAX),
    "closed_vector": lambda x: jnp.where(x > 0, x, V_INT),
    "jnp_full": lambda x: jnp.full(x.shape, I64.max, jnp.int64),
    "jnp_full_min": lambda x: jnp.full(x.shape, I64.min, jnp.int64),
    "full_like": lambda x: jnp.full_like(x, I64.min),
    "jnp_iinfo": lambda x: jnp.min(jnp.where(x > 5, x, jnp.iinfo(jnp.int64).max)),
    "initial": lambda x: jnp.min(x, where=x > 5, initial=np.iinfo(np.int64).max),
    "initial_np_min": lambda x: jnp.max(x, where=x > 5, initial=np.int64(I64.min)),
    "lax_reduce": lambda x: lax.reduce(x[:0], np.int64(I64.max), lax.min, (0,)),
    "asarray": lambda x: jnp.asarray(np.array([I64.max, 0, I64.min])),
    "array_list": lambda x: jnp.array([I64.max, 1, I64.min]),
    "jnp_int64": lambda x: jnp.int64(I64.max) + 0 * x,
    "fill_value": lambda x: jnp.zeros(3, jnp.int64).at[5].get(mode="fill", fill_value=I64.max),
    "device_put": lambda x: jax.device_put(np.array([I64.min, 3])),
    # unsigned
    "u_np_scalar": lambda x: jnp.min(jnp.where(u64(x) > 5, u64(x), np.uint64(U64.max))),
    "u_closed_scalar": lambda x: jnp.maximum(u64(x), S_UMAX),
    "u_full": lambda x: jnp.full(x.shape, U64.max, jnp.uint64),
    "u_iinfo": lambda x: jnp.min(jnp.where(u64(x) > 5, u64(x), jnp.iinfo(jnp.uint64).max)),
    "u_initial": lambda x: jnp.min(u64(x), where=x > 5, initial=np.uint64(U64.max)),
    # float
    "f_np_scalar": lambda x: jnp.min(jnp.where(f64(x) > 5, f64(x), np.float64(F64_MAX))),
    "f_closed_vector": lambda x: jnp.where(f64(x) > 0, f64(x), V_FLOAT),
    "f_full": lambda x: jnp.full(x.shape, -F64_MAX, jnp.float64),
    "f_finfo": lambda x: jnp.max(jnp.where(f64(x) > 5, f64(x), -jnp.finfo(jnp.float64).max)),
    "f_initial": lambda x: jnp.max(f64(x), where=x > 5, initial=-F64_MAX),
    "f_lax_reduce": lambda x: lax.reduce(f64(x)[:0], np.float64(F64_MAX), lax.min, (0,)),
    "f_fill_value": lambda x: jnp.zeros(3).at[5].get(mode="fill", fill_value=F64_MAX),
}

I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
F_0D = np.array(-F64_MAX)  # a closed-over 0-d float64 array
S_MIN = np.int64(I64.min)

#: More spellings whose result must be the x64 result narrowed: Python ints
#: reaching JAX through lax.asarray (unique's fill value), a 0-d constant.
SENTINELS.update({
    "unique_fill": lambda x: jnp.unique(x, size=7, fill_value=I64.max),
    "f_closed_0d": lambda x: jnp.where(f64(x) > 0, f64(x), F_0D),
    "f_closed_0d_max": lambda x: jnp.max(f64(x), where=x > 5, initial=F_0D),
    "eq_sentinel": lambda x: jnp.where(x > 5, x, I64.max) == I64.max,
    "argmin_masked": lambda x: jnp.argmin(jnp.where(x > 0, x, S_MIN)),
    # more ways a Python int reaches JAX
    "nonzero_fill": lambda x: jnp.nonzero(x, size=5, fill_value=I64.max)[0],
    "argwhere_fill": lambda x: jnp.argwhere(x, size=5, fill_value=I64.min)[:, 0],
    "pad_constant": lambda x: jnp.pad(x, 2, constant_values=I64.max),
    "lax_pad": lambda x: lax.pad(x, I64.min, [(1, 1, 0)]),
    "put": lambda x: jnp.put(x, jnp.array([0]), I64.max, inplace=False),
    "append": lambda x: jnp.append(x, I64.min),
    "clip": lambda x: jnp.clip(x, I64.min, I64.max),
    "searchsorted": lambda x: jnp.searchsorted(x, I64.max),
    "isin": lambda x: jnp.isin(x, jnp.array([I64.max, 2])),
    "lax_clamp": lambda x: lax.clamp(I64.min, x, I64.max),
    "dynamic_update": lambda x: lax.dynamic_update_slice(x, jnp.array([I64.max]), (1,)),
})

#: name -> f(x) whose host constant holds a sentinel and, as an ordinary value,
#: the 32-bit extreme it maps to: refused at the case's line, naming both values.
COLLISIONS: dict[str, Callable[[Any], Any]] = {
    "collide_min": lambda x: jnp.argmin(jnp.concatenate([x, np.array([I32.min, I64.min])])),
    "collide_max": lambda x: jnp.argmax(jnp.concatenate([x, np.array([I64.max, I32.max])])),
    "collide_eq": lambda x: jnp.where(x > 0, np.array([I32.max, 1, I64.max]), 0) == I64.max,
    "collide_unique": lambda x: jnp.unique(jnp.array([I64.min, I32.min, 3]), size=3),
    "collide_u": lambda x: jnp.argmax(np.array([U64.max, U32.max], np.uint64)),
}

#: name -> f(x) that reads a host sentinel as a number (arithmetic, division,
#: bit counts, a conversion): the 32-bit program computes with the 32-bit
#: extreme, so no64 reports it ("unproven" at the case's line) or, under the
#: strict and exact policies, refuses it there.
READS: dict[str, Callable[[Any], Any]] = {
    "read_literal": lambda x: I64.max - x,
    "read_closed": lambda x: S_MAX - x,
    "read_floordiv": lambda x: jnp.full(x.shape, I64.min, jnp.int64) // 2,
    "read_rem": lambda x: jnp.where(x > 5, jnp.arange(3), I64.max) % 1000,
    "read_divisor": lambda x: lax.rem(x + 7, jnp.where(x > 5, jnp.arange(3), I64.max)),
    "read_clz": lambda x: lax.clz(jnp.where(x > 5, jnp.arange(3), I64.max)),
    "read_to_float": lambda x: jnp.where(x > 5, jnp.arange(3), I64.max).astype(jnp.float32) > 1e10,
    "read_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: c + 1, jnp.full(3, I64.min)),
    "read_u": lambda x: jnp.where(x > 5, u64(jnp.arange(3)), S_UMAX) % 1000,
}

#: name -> f(x) where a host sentinel meets (is selected among, ordered or
#: compared with) values that may be its 32-bit image: x may hold INT32_MAX,
#: so no64 reports it ("unproven") or, under strict and exact, refuses it.
MEETS: dict[str, Callable[[Any], Any]] = {
    "meet_argmin": lambda x: jnp.argmin(jnp.where(x > 0, x, S_MIN)),
    "meet_eq": lambda x: x == I64.max,
    "meet_min": lambda x: jnp.min(jnp.where(x > 5, x, I64.max)),
    "meet_unique": lambda x: jnp.unique(x, size=7, fill_value=I64.max),
    "meet_pad": lambda x: jnp.pad(x, 1, constant_values=I64.max),
    "meet_append": lambda x: jnp.append(x, I64.max),
    "meet_scatter": lambda x: x.at[0].set(I64.max),
    "meet_clip": lambda x: jnp.clip(x, I64.min, 5),
    "meet_loop": lambda x: jnp.min(lax.fori_loop(0, 3, lambda i, c: x, jnp.full(3, S_MAX))),
    "meet_cond": lambda x: jnp.min(lax.cond(x[0] > 0, lambda: x, lambda: jnp.full(3, S_MAX))),
}

#: name -> f(x) where a host sentinel meets only values proven never to be its
#: 32-bit image (an iota, a narrow type, constants): the x64 result, under
#: every policy.
PROVEN: dict[str, Callable[[Any], Any]] = {
    "proven_min": lambda x: jnp.min(jnp.where(x > 5, jnp.arange(3), I64.max)),
    "proven_argmax": lambda x: jnp.argmax(jnp.where(x > 0, x.astype(jnp.int16).astype(jnp.int64), S_MIN)),
    "proven_eq": lambda x: jnp.where(x > 1, jnp.arange(3), I64.max) == I64.max,
    "proven_closed": lambda x: jnp.sort(jnp.where(x > 0, jnp.arange(3), V_INT)),
    "proven_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.where(x > i, c, jnp.arange(3)),
                                           jnp.full(3, S_MAX)),
    "proven_argsort": lambda x: jnp.argsort(jnp.where(x > 0, jnp.arange(3), S_MAX)) + 1,
}


def collide_argument(a: Any) -> Any:
    return jnp.argmin(a)


def read_argument(a: Any) -> Any:
    return a - 1


#: name -> (function, argument): a jit argument holding a sentinel next to its
#: 32-bit image (refused), or read as a number (reported / refused).
ARGUMENT_CASES: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "collide_argument": (collide_argument, np.array([I32.min, I64.min, 3])),
    "collide_argument_u": (collide_argument, np.array([U32.max, U64.max], np.uint64)),
    "read_argument": (read_argument, np.array([I64.max, 2, 3])),
    "read_argument_int": (read_argument, int(I64.min)),
    "move_argument": (collide_argument, np.array([I64.max, 2, I64.min])),
}

#: name -> f(x) holding an integer outside the 32-bit range that is no sentinel.
#: Under the "wrap" policy each gives the x64 result's low 32 bits (wrapping
#: commutes with + and *); the value cases also give the saturated x64 result
#: under "saturate".
BIG_CONSTANTS: dict[str, Callable[[Any], Any]] = {
    "big_closed": lambda x: jnp.where(x[:2] > 5, x[:2], BIG),
    "big_python_int": lambda x: jnp.zeros_like(x) + 2**40,
    "big_full": lambda x: jnp.full(x.shape, 3_000_000_000, jnp.int64),
    "big_jnp_int64": lambda x: jnp.int64(-(2**35)) + 0 * x,
    "big_arange": lambda x: jnp.arange(2**40, 2**40 + 3) + x,
    "big_array_list": lambda x: jnp.array([1, 2**40, 3]) + x,
    "big_np_scalar": lambda x: x + np.int64(-(2**35)),
    "big_arithmetic": lambda x: x * 2**33 + 1,
}
#: The cases above whose result is the constant itself.
BIG_VALUES = ("big_closed", "big_python_int", "big_full", "big_jnp_int64")


def plus_one(a: Any) -> Any:
    return a + 1


#: name -> argument of plus_one: big integers as jit arguments.
BIG_ARGUMENTS: dict[str, Any] = {
    "arg_int64_array": np.array([1, 3_000_000_000]),
    "arg_int64_scalar": np.int64(-(2**40)),
    "arg_python_int": 3_000_000_000,
}


def lines_of(cases: dict[str, Callable[[Any], Any]]) -> dict[str, int]:
    """Source line of each case (the line no64 names when it refuses one)."""
    return {name: f.__code__.co_firstlineno for name, f in cases.items()}


# ---------------------------------------------------------------------------
# A Flax/Optax training step whose metrics use an INT64_MAX sentinel
# ---------------------------------------------------------------------------


def make_training() -> tuple[Callable[..., Any], Any, Any, Any, Any]:
    """(step, params, opt_state, batch x, labels); step returns new state and metrics."""
    import flax.linen as nn
    import optax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            return nn.Dense(4)(nn.relu(nn.Dense(8)(x)))

    model = MLP()
    tx = optax.adam(1e-2)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 5))  # float64
    labels = rng.integers(0, 4, size=16)  # int64
    params = model.init(jax.random.key(0), jnp.asarray(x, jnp.float32))
    opt_state = tx.init(params)

    def step(params: Any, opt_state: Any, x: Any, labels: Any) -> Any:
        def loss_fn(p: Any) -> Any:
            logits = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        idx = jnp.arange(labels.shape[0], dtype=jnp.int64)
        wrong = jnp.argmax(logits, -1) != labels
        metrics = {
            "loss": loss,
            # INT64_MAX: "no such example" (never a negative label).
            "first_negative_label": jnp.min(jnp.where(labels < 0, idx, np.iinfo(np.int64).max)),
            "first_wrong": jnp.min(jnp.where(wrong, idx, jnp.iinfo(jnp.int64).max)),
            "n_wrong": jnp.sum(wrong.astype(jnp.int64)),
        }
        return params, opt_state, metrics

    return step, params, opt_state, x, labels


def run_training(jit: Callable[..., Any], steps: int = 2) -> dict[str, Any]:
    step, params, opt_state, x, labels = make_training()
    fn = jit(step)
    out: dict[str, Any] = {}
    for i in range(steps):
        params, opt_state, metrics = fn(params, opt_state, x, labels)
        for k, v in metrics.items():
            out[f"{k}{i}"] = v
    return out


# ---------------------------------------------------------------------------
# The script
# ---------------------------------------------------------------------------


def encode(thunk: Callable[[], Any]) -> dict[str, Any]:
    try:
        v = np.asarray(thunk())
    except Exception as exc:  # noqa: BLE001 - reported to the test
        tb = traceback.extract_tb(exc.__traceback__)
        return {"error": type(exc).__name__, "message": str(exc),
                "mro": [c.__name__ for c in type(exc).__mro__],
                "where": f"{tb[-1].filename}:{tb[-1].lineno}"}
    return {"dtype": str(v.dtype), "shape": list(v.shape), "value": v.reshape(-1).tolist()}


def run_all(prefix: str = "", cases: dict[str, Callable[[Any], Any]] | None = None
            ) -> dict[str, Any]:
    x = np.arange(3)
    xj = jnp.asarray(x)  # eager cases compute with JAX, not numpy
    out: dict[str, Any] = {}
    for name, f in (cases or {**SENTINELS, **BIG_CONSTANTS}).items():
        out[f"{prefix}eager/{name}"] = encode(lambda f=f: f(xj))
        out[f"{prefix}jit/{name}"] = encode(lambda f=f: jax.jit(f)(x))
    jitted = jax.jit(plus_one)
    for name, arg in BIG_ARGUMENTS.items():
        small = np.zeros_like(arg) if not isinstance(arg, int) else 0
        jitted(small)  # a C++ fast path exists
        out[f"{prefix}arg/{name}"] = encode(lambda arg=arg: jitted(arg))  # ARGUMENT LINE
        compiled = jax.jit(plus_one).lower(small).compile()
        compiled(small)
        out[f"{prefix}aot/{name}"] = encode(lambda compiled=compiled, arg=arg: compiled(arg))  # AOT LINE
        # a C++ fast path made by 32-bit numpy data of the same shape
        narrow = jax.jit(plus_one)
        small32 = np.asarray(small, np.int32) if not isinstance(arg, int) else 0
        narrow(small32)
        narrow(small32)
        out[f"{prefix}arg32/{name}"] = encode(lambda narrow=narrow, arg=arg: narrow(arg))  # ARGUMENT32 LINE
    return out


def run_sentinel_cases() -> dict[str, Any]:
    """COLLISIONS, READS (eagerly and under jax.jit) and ARGUMENT_CASES (under jax.jit)."""
    x = np.arange(3)
    out: dict[str, Any] = {}
    for name, f in {**COLLISIONS, **READS, **MEETS, **PROVEN}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out[f"jit/{name}"] = encode(lambda f=f: jax.jit(f)(x))
        # the lines no64 warned at (UnprovenIntegerWarning: the x64 module's verdict)
        out[f"jit/{name}"]["warned"] = sorted({w.lineno for w in caught
                                               if w.category.__name__ == "UnprovenIntegerWarning"})
    for name, (f, arg) in ARGUMENT_CASES.items():
        out[f"arg/{name}"] = encode(lambda f=f, arg=arg: jax.jit(f)(arg))  # SENTINEL ARGUMENT LINE
    with enable_x64(True):
        wide = jax.device_put(np.array([I64.max, 5, 6]))  # a 64-bit jax.Array, closed over
    # beside values the host does not know to be small (which could be INT32_MAX)
    big = x + 2**20
    out["jit/jax_array_where"] = encode(
        lambda: jax.jit(lambda a: jnp.where(a > 0, a, wide))(big))  # JAX ARRAY LINE
    # beside values the host knows to be small: certainly not INT32_MAX, no collision
    out["jit/jax_array_where_small"] = encode(lambda: jax.jit(lambda a: jnp.where(a > 0, a, wide))(x))
    return out


def main(path: str, which: str = "all") -> None:
    if which == "sentinels":
        results = run_sentinel_cases()
        if "no64" in sys.modules:
            import no64

            if no64.active_config() is not None:
                results["records"] = [e.to_dict() for e in no64.host_records()]
        with open(path, "w") as f:
            json.dump(results, f)
        return
    results = run_all()
    training = run_training(jax.jit)
    for k, v in training.items():
        results[f"train/{k}"] = encode(lambda v=v: v)
    if "no64" in sys.modules or "no64.jax.hook" in sys.modules:
        import no64

        if no64.active_config() is not None:
            results["records"] = [e.to_dict() for e in no64.host_records()]
            no64.install("cpu", integer_policy="wrap")
            results.update(run_all("wrap/", BIG_CONSTANTS))
    with open(path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
