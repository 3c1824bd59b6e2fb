"""Programs that turn x64 on because their integers need 64 bits.

Run as a script, it runs each program under ``jax.jit`` and prints one JSON
document: per program its value (or error class and message) and the
no64 warnings given at its line.  The test runs it with x64 on and without
no64 (the reference), and under ``NO64_PLATFORMS=cpu`` with each policy.
"""

import json
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

BIG = np.full(200, 16_000_000, np.int64)
NEAR = np.array([3, 1 << 30, (1 << 30) + 5, 7], np.int64)
KEYS = np.array([1, 2, 12345, 2**31 - 1], np.int64)
SIGNED = np.array([-1, 5, 2**31 - 1, -2**31, 0, 1], np.int32)
LOW = np.array([3, 1, 2, 0, 2**31 - 1, -2**31], np.int32)


def scan_counter(xs):
    return jax.lax.scan(lambda c, x: (c + x, c), np.int64(0), xs)[0]  # LINE scan_counter


def fori(n):
    return jax.lax.fori_loop(np.int64(0), n, lambda i, c: c + i, np.int64(0))  # LINE fori_int64


PROGRAMS = {
    # name: (function, argument); the line marked with its name is the line no64 names
    "cumsum": (lambda a: jnp.cumsum(a)[-1], BIG),  # LINE cumsum
    "upcast_sum": (lambda a: jnp.sum(a.astype(jnp.int64)), np.full(4, 2**31 - 1, np.int32)),  # LINE upcast_sum
    "square": (lambda a: a * a, np.array([3, 70_000, 100_000], np.int64)),  # LINE square
    "scan_counter": (scan_counter, BIG),
    "fori_int64": (fori, np.int64(100_000)),
    "bincount_weights": (lambda a: jnp.bincount(a % 4, weights=a * 1000, length=4), KEYS),  # LINE bincount_weights
    "arange_across": (lambda i: jnp.arange(2**31 - 5, 2**31 + 5)[i], np.int32(7)),  # LINE arange_across
    "argmax_products": (lambda a: jnp.argmax(a * 3), NEAR),  # LINE argmax_products
    "hash_mod": (lambda a: (a * 2654435761) % 1000003, KEYS),  # LINE hash_mod
    "cumsum_mod": (lambda a: jnp.cumsum(a)[-1] % 1000, BIG),  # LINE cumsum_mod
    # width-dependent ops the pass computes on 32-bit words: the x64 value under every policy
    "composite_keys": (lambda a: jnp.argsort((a.astype(jnp.int64) << 32) + LOW), SIGNED),  # LINE composite_keys
    "popcnt": (lambda a: jax.lax.population_count(a.astype(jnp.int64)), SIGNED),  # LINE popcnt
    "clz": (lambda a: jax.lax.clz(a.astype(jnp.int64)), SIGNED),  # LINE clz
    "shift40_mod": (lambda a: (a.astype(jnp.int64) + (jnp.int64(1) << 40)) % 1000, SIGNED),  # LINE shift40_mod
    "uint64_bits": (lambda s: jax.random.bits(jax.random.PRNGKey(s), (6,), dtype=jnp.uint64) % 997,
                    np.int32(3)),  # LINE uint64_bits
    "int64_seed": (lambda s: jax.random.bits(jax.random.PRNGKey(s), (4,), jnp.uint32), np.int64(-5)),  # LINE int64_seed
    # integers proven to fit: the same value, no warning, under every policy
    "fits_count": (lambda a: jnp.sum(a > 20_000_000), BIG),  # LINE fits_count
    "fits_argmax": (lambda a: jnp.argmax(a), KEYS),  # LINE fits_argmax
    "fits_index": (lambda a: a[jnp.arange(3) + 1], KEYS),  # LINE fits_index
}


def main() -> None:
    out = {}
    for name, (fun, arg) in PROGRAMS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = np.asarray(jax.jit(fun)(arg))
                got = {"value": value.tolist(), "dtype": str(value.dtype)}
            except Exception as exc:  # noqa: BLE001 - the test reads the class and message
                got = {"error": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}
        got["warnings"] = [[w.category.__name__, w.lineno] for w in caught
                           if w.category.__name__ == "UnprovenIntegerWarning"]
        out[name] = got
    if "--records" in sys.argv:
        import no64

        out["records"] = [[r.module, r.exact] for r in no64.compile_records()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
