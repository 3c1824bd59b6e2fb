"""Programs run under the compile hook with x64 on: what runs is the x64 program.

Run as a script (under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1`` and a policy, or
without no64 for the reference), it prints one JSON document: per case its
value, or its error class and message, and the no64 warnings it gave, with
their lines; plus the float policy each compile record ran under.
"""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from child_report import no64_warnings, print_results, run_case
from jax import lax


def cancel(k, c):
    # float64 arithmetic f32 cannot hold: c + k/1024, minus c, for c = 1e8 (an argument:
    # XLA folds (x + C) - C of a constant C)
    big = c + k.astype(jnp.float64) / 1024
    return (big - c) * 1024


def effects(a):
    jax.debug.print("a = {}", a)
    return jnp.cumsum(a.astype(jnp.int64))[-1]  # LINE effects


def compile_time_eval(x):
    # evaluated eagerly while tracing (Diffrax does this): with x64 on it is a 64-bit
    # computation, which the no64 platform refuses, so the x64 meaning cannot be had
    with jax.ensure_compile_time_eval():
        c = jnp.cumsum(jnp.full(200, 16_000_000, jnp.int64))[-1] % 1000
    return x + c


CASES = {
    "cancel": (cancel, (np.arange(5, dtype=np.int32), np.float64(1e8)), {}),
    "effects": (effects, (np.full(4, 2**30, np.int32),), {}),
    "huge_float": (lambda x: x * 2, (np.array([1.0, 1e300]),), {}),
}


def cache_order():
    # one jitted function called with 32-bit data, then with 64-bit host data of the
    # same shape: the second call's x64 program squares in 64 bits
    square_mod = jax.jit(lambda a: (a * a) % 1000)  # LINE cache_order
    square_mod(np.arange(3, dtype=np.int32))
    return square_mod(np.full(3, 100_000, np.int64))


def square_mod(a):
    return (a * a) % 1000  # LINE square_mod


def popcnt(a):
    return lax.population_count(a.astype(jnp.int64))


MASK = (np.arange(4 * 64).reshape(4, 64) % 3 == 0).astype(np.int32)


def mask_sum_assumed(m):
    # a 0/1 mask passed as int32: its int64 sum is bounded by the element
    # count only where the program says the mask is 0/1
    import no64

    return jnp.sum(no64.assume(m, 0, 1).astype(jnp.int64))


TABLE = np.arange(512 * 2, dtype=np.int32).reshape(512, 2)
TOKENS = np.array([[0, 511, 7], [3, 0, 510]], np.int64)


def flax_embed():
    # Flax's Embed looks token ids up with jnp.take, whose index normalisation
    # where(i < 0, i + n, i) is proven inside 32 bits (strict accepts it)
    import flax.linen as nn

    embed = nn.Embed(512, 4, embedding_init=lambda *_: jnp.asarray(TABLE[:, :1] * jnp.ones(4, jnp.int32)))
    params = embed.init(jax.random.PRNGKey(0), TOKENS)
    return jax.jit(embed.apply)(params, TOKENS)


def donated():
    # x, donated, is float32 and the x64 program's result float64 (its constant is): the
    # result is still the buffer of x, as in JAX's 32-bit program; y, donated and
    # unusable, is warned of once
    step = jax.jit(lambda x, y: x + np.float64(1) + jnp.sum(y), donate_argnums=(0, 1))
    x, y = jnp.zeros(4, jnp.float32), jnp.ones(3, jnp.float32)
    before = x.unsafe_buffer_pointer()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = step(x, y)
    said = [w for w in caught if "donated buffers were not usable" in str(w.message)]
    return [float(out.unsafe_buffer_pointer() == before), float(len(said)), *np.asarray(out).tolist()]


#: entries other than a top-level jit of the case's function
RUNNERS = {
    "compile_time_eval": lambda: jax.jit(compile_time_eval)(np.int32(0)),  # LINE cte
    "eager_popcnt": lambda: lax.population_count(np.array([-1, 5], np.int64)),  # LINE eager
    "cache_order": cache_order,
    "vmap_of_jit": lambda: jax.vmap(jax.jit(popcnt))(np.array([-1, 3], np.int32)),
    "jit_of_vmap": lambda: jax.jit(jax.vmap(popcnt))(np.array([-1, 3], np.int32)),
    "vmap_host_data": lambda: jax.vmap(square_mod)(np.full(3, 100_000, np.int64)),
    "donated": donated,
    "take": lambda: jax.jit(lambda t, i: jnp.take(t, i, axis=0))(TABLE, TOKENS),
    "flax_embed": lambda: flax_embed(),
    "mask_sum_assumed": lambda: jax.jit(mask_sum_assumed)(MASK),
    "mask_sum": lambda: jax.jit(lambda m: jnp.sum(m.astype(jnp.int64)))(MASK),  # LINE mask_sum
    "eager_mixed": lambda: lax.add(jnp.arange(2), np.array([2**31 - 1, 1], np.int64)),  # LINE mixed
    "grad_f64_scalar": lambda: jax.grad(lambda x: (x * np.float64(2.0)).sum())(jnp.ones(3)),
    # JAX's samplers called eagerly fix their dtype (float64, 64 bits) before their own jit
    "eager_normal": lambda: jax.random.normal(jax.random.PRNGKey(np.int64(-5)), (3,)),
    "eager_uniform": lambda: jax.random.uniform(jax.random.PRNGKey(7), [2, 2], minval=np.float64(1.0),
                                                maxval=3.0),
    "eager_randint": lambda: jax.random.randint(jax.random.PRNGKey(3), (4,), 0, 1000),
    "eager_bits": lambda: jax.random.bits(jax.random.PRNGKey(1), (2,)),  # LINE eager_bits
    # a host INT64_MAX compared with INT32_MAX: the sentinel's image is INT32_MAX itself
    "sentinel_meets": lambda: jax.jit(lambda s: s > 2**31 - 1)(np.int64(2**63 - 1)),  # LINE sentinel
    # ... and with itself (the x64 module holds the constant INT64_MAX exactly)
    "sentinel_equal": lambda: jax.jit(lambda s: s == np.iinfo(np.int64).max)(np.int64(2**63 - 1)),
    # INT64_MIN beside ordinary values, compared with INT32_MIN
    "sentinel_min": lambda: jax.jit(lambda s: s < -2**31)(np.array([-2**63, -5, 2**31 - 1], np.int64)),
    # a host sentinel constant read as a number: the x64 module holds it exactly
    "sentinel_constant_rem": lambda: jax.jit(lambda: jnp.full(3, np.iinfo(np.int64).max) % 1000)(),
}


def _call(fun, args, kwargs):
    return fun() if args is None else jax.jit(fun, **kwargs)(*args)


def _value(value):
    value = np.asarray(value)
    return {"value": value.tolist(), "dtype": str(value.dtype)}


def main() -> None:
    out: dict = {}
    cases = {**CASES, **{name: (run, None, None) for name, run in RUNNERS.items()}}
    for name, (fun, args, kwargs) in cases.items():
        got, caught = run_case(functools.partial(_call, fun, args, kwargs), _value)
        got["warnings"] = no64_warnings(caught)
        out.setdefault("x64_warnings", []).extend(
            str(w.message) for w in caught if w.category.__name__ == "X64DisabledWarning")
        out[name] = got
    print_results(out)


if __name__ == "__main__":
    main()
