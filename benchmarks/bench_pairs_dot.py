"""A float64 matmul on pairs of f32, by exact slices and elementwise, on the CPU (or ``--platform``).

For each size ``n`` (``--sizes``, default 256 and 512) two ``n x n``
float64 matrices (normal entries) are multiplied by four programs compiled
on the CPU backend, outside the timed region:

* **f64**: the x64 program as JAX lowers it;
* **pairs, elementwise**: ``no64.demote(module, float_policy="pairs")``
  with every contraction computed as pair products and a blocked sum (the
  form contractions shorter than ``DOT_SPLIT_MIN`` keep);
* **pairs, split**: the same with the exact-slice rule (f32
  ``dot_general``s at HIGHEST precision, ``no64.rules.pair_dot``);
* **f32**: the float32 program (x64 off).

Each program runs once to warm up, then ``--repeats`` times; the table
shows the median time of one execution, each program's ratio to f64, and
the largest error against the f64 result relative to ``(|A| |B|)_ij``.

Run ``python benchmarks/bench_pairs_dot.py --repeats 3``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np

import no64
import no64.rules.pair_rules as pair_rules
from no64.jax.reference import compile_module, lower_x64

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_support import enable_x64  # noqa: E402


def _timed(fn: Callable[[], np.ndarray], repeats: int) -> tuple[float, np.ndarray]:
    out = fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _pairs_program(a: np.ndarray, b: np.ndarray, split: bool, platform: str = "cpu") -> Callable[[], np.ndarray]:
    saved = pair_rules.DOT_SPLIT_MIN
    pair_rules.DOT_SPLIT_MIN = 1 if split else 2**62
    try:
        m = lower_x64(lambda x, y: x @ y, a, b)
        no64.demote(m, float_policy="pairs", check=True)
    finally:
        pair_rules.DOT_SPLIT_MIN = saved
    backend = jax.extend.backend.get_backend(platform)
    device = backend.devices()[0]
    exe = compile_module(str(m), device)
    ins = [jax.device_put(no64.split_pairs(x), device) for x in (a, b)]

    def run() -> np.ndarray:
        (out,) = exe.execute(ins)
        return no64.join_pairs(np.asarray(out.block_until_ready()))

    return run


def bench(n: int, repeats: int, seed: int = 0, platform: str = "cpu") -> dict[str, float]:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    cpu = jax.devices(platform)[0]
    with enable_x64(True):
        f64 = jax.jit(lambda x, y: x @ y)
        da, db = jax.device_put(a, cpu), jax.device_put(b, cpu)
        t64, ref = _timed(lambda: np.asarray(f64(da, db).block_until_ready()), repeats)
    f32 = jax.jit(lambda x, y: jnp.matmul(x, y, precision="highest"))
    fa, fb = jax.device_put(a.astype(np.float32), cpu), jax.device_put(b.astype(np.float32), cpu)
    t32, r32 = _timed(lambda: np.asarray(f32(fa, fb).block_until_ready()), repeats)
    tel, rel = _timed(_pairs_program(a, b, split=False, platform=platform), repeats)
    tsp, rsp = _timed(_pairs_program(a, b, split=True, platform=platform), repeats)
    scale = np.abs(a) @ np.abs(b)

    def err(x: np.ndarray) -> float:
        return float(np.max(np.abs(x.astype(np.float64) - ref) / scale))

    return {"n": n, "f64_s": t64, "elementwise_s": tel, "split_s": tsp, "f32_s": t32,
            "elementwise_err": err(rel), "split_err": err(rsp), "f32_err": err(r32)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--platform", default="cpu",
                   help="the JAX backend to run on (default: cpu; f64 there is whatever that backend makes of it)")
    args = p.parse_args(argv)
    print(f"{'n':>5} {'f64':>9} {'pairs elementwise':>22} {'pairs split':>18} {'f32':>16}   "
          "max error / (|A||B|): elementwise, split, f32")
    for n in args.sizes:
        r = bench(n, args.repeats, platform=args.platform)
        t = r["f64_s"]
        print(f"{n:>5} {t * 1e3:7.1f}ms {r['elementwise_s'] * 1e3:9.1f}ms ({r['elementwise_s'] / t:6.1f}x) "
              f"{r['split_s'] * 1e3:7.1f}ms ({r['split_s'] / t:5.1f}x) {r['f32_s'] * 1e3:6.1f}ms "
              f"({r['f32_s'] / t:4.2f}x)   {r['elementwise_err']:.1e}, {r['split_err']:.1e}, {r['f32_err']:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
