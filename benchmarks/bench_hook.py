"""What the x64 meaning costs under the compile hook.

A program that asks for x64 (``JAX_ENABLE_X64=1``) while ``NO64_PLATFORMS``
names the default backend has each top-level ``jit`` traced once with x64 on
(its x64 program; JAX's 32-bit trace is a replay of it, ``no64.jax.replay``)
and lowered a second time with x64 on, to judge the 32-bit program by its x64
meaning (``no64.jax.intent``).  This benchmark compiles the same programs, in
one process, with and without the x64 meaning
(without it = the hook as it was before the x64 meaning: the same 32-bit
module, the same pass, the same XLA compile), alternating the two so that a
change in machine load affects both sides alike:

* the GPT-2-like training step of ``bench_gpt2.py`` (float64 parameters and
  Adam state, int64 tokens and step counter), given as ``ShapeDtypeStruct``
  arguments, timed phase by phase: trace, lower, compile (the hook's work
  happens in the compile phase: the x64 lowering, judging it, the pass over
  JAX's module, then XLA);
* a test-suite-like batch of small jitted functions (elementwise math,
  reductions, cumulative sums, sorting, indexing, loops, matrix products on
  int64 and float64 data), each traced, lowered, compiled and run once.

Caches are cleared before every measurement.  Prints medians and the ratio
with/without.  Run ``python benchmarks/bench_hook.py --layers 2 --repeats 5``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from typing import Any, Callable

if os.environ.get("NO64_PLATFORMS") != "cpu" or os.environ.get("JAX_ENABLE_X64") != "1":
    # no64's start-up file reads the environment when Python starts
    env = dict(os.environ, NO64_PLATFORMS="cpu", JAX_ENABLE_X64="1", TF_CPP_MIN_LOG_LEVEL="3")
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

import warnings  # noqa: E402

warnings.simplefilter("ignore")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_gpt2  # noqa: E402

from no64.jax import intent  # noqa: E402


def _meaning(on: bool) -> None:
    """Turn the second (x64) trace on or off for the next compiles."""
    intent.set_x64_meaning(on)


def _small_programs() -> list[tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Small jitted programs like those of a library's test suite."""
    rng = np.random.default_rng(0)
    i64 = rng.integers(-1000, 1000, size=(256,), dtype=np.int64)
    f64 = rng.standard_normal((256,))
    m64 = rng.standard_normal((32, 32))
    progs: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (lambda x: x + 1, (i64,)),
        (lambda x: x * 3 - 7, (i64,)),
        (lambda x: jnp.sum(x), (i64,)),
        (lambda x: jnp.cumsum(x), (i64,)),
        (lambda x: jnp.max(x), (i64,)),
        (lambda x: jnp.argmax(x), (f64,)),
        (lambda x: jnp.sort(x), (i64,)),
        (lambda x: jnp.argsort(x), (f64,)),
        (lambda x: x[::2] + x[1::2], (i64,)),
        (lambda x: jnp.where(x > 0, x, -x), (i64,)),
        (lambda x: jnp.bincount(jnp.abs(x) % 17, length=17), (i64,)),
        (lambda x: jnp.arange(256) * x, (i64,)),
        (lambda x: jnp.take(x, jnp.argsort(x)), (i64,)),
        (lambda x: jax.lax.fori_loop(0, 10, lambda i, c: c + i, x), (i64,)),
        (lambda x: jnp.exp(x) / jnp.sum(jnp.exp(x)), (f64,)),
        (lambda x: jnp.log1p(jnp.abs(x)), (f64,)),
        (lambda x: jnp.tanh(x) * jnp.sin(x), (f64,)),
        (lambda x: jnp.mean(x), (f64,)),
        (lambda x: jnp.var(x), (f64,)),
        (lambda x: jnp.linalg.norm(x), (f64,)),
        (lambda m: m @ m.T, (m64,)),
        (lambda m: jnp.trace(m), (m64,)),
        (lambda m: jnp.sum(m, axis=0), (m64,)),
        (lambda m: jnp.cumsum(m, axis=1), (m64,)),
        (lambda m: jnp.transpose(m) + 1.0, (m64,)),
        (lambda x: x.astype(jnp.float64) / 3, (i64,)),
        (lambda x: x % 97, (i64,)),
        (lambda x: jnp.clip(x, -10, 10), (i64,)),
        (lambda x: jnp.round(x * 100) / 100, (f64,)),
        (lambda x: jnp.diff(x), (i64,)),
    ]
    return progs


def _run_small(progs: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> float:
    jax.clear_caches()
    start = time.perf_counter()
    for fn, args in progs:
        jax.block_until_ready(jax.jit(fn)(*args))
    return time.perf_counter() - start


def _gpt2_phases(layers: int) -> dict[str, float]:
    cfg = bench_gpt2.GPTConfig(layers=layers)
    args = bench_gpt2.abstract_args(cfg)
    step = partial(bench_gpt2.train_step, cfg=cfg)
    jax.clear_caches()
    t0 = time.perf_counter()
    traced = jax.jit(step).trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    lowered.compile()
    t3 = time.perf_counter()
    return {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, "total": t3 - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2, help="GPT-2 depth (default: 2)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per side (default: 5)")
    opts = parser.parse_args(argv)

    progs = _small_programs()
    for on in (True, False):  # warm-up: imports, first-use costs
        _meaning(on)
        _run_small(progs[:3])
    gpt: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    small: dict[bool, list[float]] = {True: [], False: []}
    for i in range(opts.repeats):
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            _meaning(on)
            gpt[on].append(_gpt2_phases(opts.layers))
            small[on].append(_run_small(progs))
        print(f"repeat {i + 1}/{opts.repeats}: GPT-2 total {gpt[True][-1]['total']:.2f} s with the "
              f"x64 meaning, {gpt[False][-1]['total']:.2f} s without; {len(progs)} small programs "
              f"{small[True][-1]:.2f} s / {small[False][-1]:.2f} s", flush=True)
    _meaning(True)

    def med(on: bool, phase: str) -> float:
        return statistics.median(r[phase] for r in gpt[on])

    print(f"\nx64-asking programs under NO64_PLATFORMS=cpu, jax {jax.__version__}, median of "
          f"{opts.repeats} (with / without the x64 meaning, ratio):")
    for phase in ("trace", "lower", "compile", "total"):
        w, wo = med(True, phase), med(False, phase)
        print(f"  GPT-2 step ({opts.layers} layers) {phase:8s} {w:7.3f} s / {wo:7.3f} s  {w / wo:5.2f}x")
    w, wo = statistics.median(small[True]), statistics.median(small[False])
    print(f"  {len(progs)} small programs     {w:7.3f} s / {wo:7.3f} s  {w / wo:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
