"""Child program: when the x64 meaning is traced, and what it keeps alive.

Run under ``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1``; prints one JSON line.
"""

from __future__ import annotations

import gc
import json
import sys
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np

import no64

calls = {"n": 0}


def cumsum_last(a):
    calls["n"] += 1
    return jnp.cumsum(a)[-1]


out: dict[str, object] = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    data = np.full(200, 16_000_000, np.int64)
    ref = weakref.ref(data)
    traced = jax.jit(cumsum_last).trace(data)
    out["calls_after_trace"] = calls["n"]
    lowered = traced.lower()
    out["calls_after_lower"] = calls["n"]
    del data, traced
    gc.collect()
    out["data_alive_before_compile"] = ref() is not None
    try:
        compiled = lowered.compile()
        out["calls_after_compile"] = calls["n"]
        out["value"] = int(compiled(np.full(200, 16_000_000, np.int32)))
    except no64.No64Error as exc:
        out["error"] = type(exc).__name__
        out["calls_after_compile"] = calls["n"]
    # a program whose x64 version holds no 64-bit value is not judged
    jax.jit(lambda a: a * 2)(np.ones(3, np.float32))
out["warnings"] = [w.lineno for w in caught
                   if isinstance(w.message, no64.UnprovenIntegerWarning)]
out["meanings"] = [r.meaning is not None for r in no64.compile_records()]
print(json.dumps(out))
sys.stdout.flush()
