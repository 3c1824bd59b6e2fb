"""What a jit call costs to dispatch under the compile hook.

With x64 requested, no64 keeps a call with a 32-bit integer ``jax.Array``
argument, or one returning an array it notes as 64-bit in the x64 program,
off jaxlib's C++ fast path (``no64.jax.x64_arrays``).  This benchmark times
the same jitted calls -- a step taking a float32 batch and int32 labels, and
a counter step returning its int64 counter -- per call, after warm-up, in
four processes side by side: without no64, under ``NO64_PLATFORMS=cpu``
with x64 off, under ``NO64_PLATFORMS=cpu`` with ``JAX_ENABLE_X64=1``, and
that under ``NO64_POLICY=exact`` (where the counter, not proven to fit, is
checked by value after each run: one scalar copied to the host).

Run ``python benchmarks/bench_dispatch.py --calls 2000``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

SETTINGS = {
    "without no64": {},
    "no64, x64 off": {"NO64_PLATFORMS": "cpu"},
    "no64, x64 requested": {"NO64_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1"},
    # the counter's int64 sum is checked by value after each run
    "no64 exact, x64": {"NO64_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1", "NO64_POLICY": "exact"},
}


def _measure(calls: int) -> dict[str, float]:
    import warnings

    warnings.simplefilter("ignore")
    import jax
    import jax.numpy as jnp
    import numpy as np

    step = jax.jit(lambda w, x, y: (w - 0.1 * (x.T @ (x @ w - y.astype(jnp.float32)[:, None])), y.sum()))
    count = jax.jit(lambda c: c + 1)
    w = jnp.zeros((16, 1), jnp.float32)
    x = jax.device_put(np.ones((64, 16), np.float32))
    y = jax.device_put(np.arange(64, dtype=np.int32) % 2)
    c = jnp.asarray(0, jnp.int32) if not jax.config.jax_enable_x64 else jnp.asarray(0)
    out = {}
    for name, run in (("step(float32, int32)", lambda: step(w, x, y)), ("counter", lambda: count(c))):
        for _ in range(50):
            jax.block_until_ready(run())
        t = time.perf_counter()
        for _ in range(calls):
            r = run()
        jax.block_until_ready(r)
        out[name] = (time.perf_counter() - t) / calls * 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per program (default: 2000)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_measure(args.calls)))
        return 0
    results = {}
    for label, extra in SETTINGS.items():
        env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_") and k != "JAX_ENABLE_X64"}
        env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3", **extra)
        proc = subprocess.run([sys.executable, __file__, "--child", "--calls", str(args.calls)],
                              env=env, capture_output=True, text=True, check=True)
        results[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    base = results["without no64"]
    print(f"{'setting':<22}" + "".join(f"{name:>26}" for name in base))
    for label, got in results.items():
        cells = "".join(f"{got[n]:>14.1f} us ({got[n] / base[n]:4.1f}x)" for n in base)
        print(f"{label:<22}{cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
