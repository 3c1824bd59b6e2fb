"""Programs whose x64 results are not proven to fit the 32-bit arrays JAX returns,
run under the compile hook with x64 on and NO64_POLICY=exact: each result is
checked by value when the program runs.  Prints one JSON document: per case its
value, or its error class and message."""

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

warnings.simplefilter("ignore")

scan_sum = jax.jit(lambda a: lax.scan(lambda c, x: (c + x, None), jnp.int64(0), a)[0])
cumsum_last = jax.jit(lambda a: jnp.cumsum(a)[-1])  # LINE cumsum
unsigned = jax.jit(lambda a: a * np.uint64(3))
aot = jax.jit(lambda a: a * 3).lower(np.int64(5)).compile()


def steps():
    c = jnp.int64(0)
    for _ in range(3):
        c = c + 1  # an eager add of an int64 counter, checked by value at each step
    return c


CASES = {
    "scan_sum": lambda: scan_sum(np.arange(10, dtype=np.int64)),
    "cumsum_fits": lambda: cumsum_last(np.full(4, 16_000_000, np.int64)),
    "cumsum_overflow": lambda: cumsum_last(np.full(200, 16_000_000, np.int64)),  # LINE overflow
    "cumsum_fits_again": lambda: cumsum_last(np.full(4, 5, np.int64)),
    "unsigned_fits": lambda: unsigned(np.array([2**30], np.uint64)),
    "unsigned_overflow": lambda: unsigned(np.array([2**31], np.uint64)),
    "aot_fits": lambda: aot(np.int64(5)),
    "aot_overflow": lambda: aot(np.int64(2**30)),
    "eager_counter": steps,
    "eager_overflow": lambda: jnp.asarray(np.int64(2**31 - 1)) + 1,
    "several": lambda: jax.jit(lambda a: (a + 1, a * 2, jnp.int32(3), a % 7))(np.int64(5)),
}


def main() -> None:
    out = {}
    for name, run in CASES.items():
        try:
            got = run()
            out[name] = {"value": [np.asarray(g).tolist() for g in got] if isinstance(got, tuple)
                         else np.asarray(got).tolist()}
        except Exception as exc:  # noqa: BLE001 - the test reads the class and message
            out[name] = {"error": type(exc).__name__, "message": str(exc)}
    if "no64.jax.hook" in __import__("sys").modules:
        import no64

        out["checked"] = sorted({r.module for r in no64.compile_records()
                                 if r.report is not None and r.report.checked_outputs})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
