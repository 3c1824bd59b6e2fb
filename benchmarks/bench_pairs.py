"""What float64 as pairs of f32 costs, side by side with native f32 and f64, on the CPU (or ``--platform``).

Each case is one small float64 program, lowered with x64 on and compiled
three ways outside the timed region:

* **f64**: the x64 program as JAX lowers it;
* **pairs**: the same module after ``no64.demote(module,
  float_policy="pairs")`` -- for the matmuls, the exact-slice form
  (``no64.rules.pair_dot``), f32 ``dot_general``s at HIGHEST precision;
* **f32**: the function traced with x64 off (matmuls at HIGHEST).

Cases: elementwise add, multiply and divide on ``--size`` elements; ``exp``,
``log``, ``sin``, ``tanh`` and ``x**y`` on as many (``x`` in [0.1, 4], ``y``
in [-8, 8]; on pairs from ``+``, ``-``, ``*`` and range reduction,
:mod:`no64.ir.pair_math`); a sum
over rows (``reduce``) and a cumulative sum over rows (``reduce_window``)
of ``--rows x --row-length``; ``n x n`` matmuls (``--dots``, default 256
and 512); a 3 x 3 convolution of 16 channels (``k = 144``, by the
contraction of its patches); and a small float64 program mixing them (a variance over rows of
a rational expression).  Each pairs result is first held to the f64 one
(the largest error relative to the largest magnitude of the f64 result,
which includes the inputs' rounding to 48 bits; refused above ``1e-13``).
Then the three programs take turns, one sample each per repeat, so that a
change of machine load touches them alike; the table shows medians and the
ratios pairs / f64 and pairs / f32.

Run ``python benchmarks/bench_pairs.py`` (``make bench-pairs``); ``--json
PATH`` also writes the figures.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax import lax

import no64
from no64.jax.reference import compile_module, lower_x64

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_support import enable_x64, report_run  # noqa: E402

#: The largest error of a pairs result against float64, relative to the
#: largest magnitude of the float64 result.
TOLERANCE = 1e-13


def _variance_program(x: jax.Array, y: jax.Array) -> jax.Array:
    z = x * y + x / (1.0 + y * y)
    mean = jnp.mean(z, axis=1)
    return jnp.mean(z * z, axis=1) - mean * mean


def _convolution(x: jax.Array, w: jax.Array) -> jax.Array:
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    precision="highest")


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[[jax.Array, jax.Array], jax.Array]
    #: ``"flat"``, ``"flat+"`` (``x`` in [0.1, 4], ``y`` in [-8, 8]), ``"rows"``,
    #: ``"square N"`` or ``"conv"`` (NHWC input, HWIO kernel)
    shape: str
    matmul: bool = False


def cases(dots: Sequence[int]) -> list[Case]:
    out = [
        Case("add", lambda x, y: x + y, "flat"),
        Case("multiply", lambda x, y: x * y, "flat"),
        Case("divide", lambda x, y: x / y, "flat"),
        Case("exp", lambda x, y: jnp.exp(y), "flat+"),
        Case("log", lambda x, y: jnp.log(x), "flat+"),
        Case("sin", lambda x, y: jnp.sin(y), "flat+"),
        Case("tanh", lambda x, y: jnp.tanh(y), "flat+"),
        Case("pow", lambda x, y: x**y, "flat+"),
        Case("row sum (reduce)", lambda x, y: jnp.sum(x, axis=1), "rows"),
        Case("cumulative row sum (reduce_window)", lambda x, y: jnp.cumsum(x, axis=1), "rows"),
    ]
    out += [Case(f"matmul {n} x {n}", lambda x, y: jnp.matmul(x, y, precision="highest"), f"square {n}", True)
            for n in dots]
    out.append(Case("convolution 3x3, 16 -> 16 channels, 8x32x32", _convolution, "conv", True))
    out.append(Case("program: variance over rows of x*y + x/(1+y*y)", _variance_program, "rows"))
    return out


def make_inputs(case: Case, size: int, rows: int, row_length: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if case.shape == "conv":
        return 1.0 + rng.standard_normal((8, 32, 32, 16)), rng.standard_normal((3, 3, 16, 16))
    if case.shape == "flat+":  # x in [0.1, 4], y in [-8, 8]: for the transcendentals
        return rng.uniform(0.1, 4.0, size), rng.uniform(-8.0, 8.0, size)
    if case.shape == "flat":
        shape: tuple[int, ...] = (size,)
    elif case.shape == "rows":
        shape = (rows, row_length)
    else:
        n = int(case.shape.split()[1])
        shape = (n, n)
    return 1.0 + rng.standard_normal(shape), 2.0 + rng.standard_normal(shape)


@dataclass
class Result:
    name: str
    f64_s: float | None
    pairs_s: float | None
    f32_s: float | None
    max_rel_error: float

    def ratio(self, other: float | None) -> float | None:
        return None if self.pairs_s is None or other is None else self.pairs_s / other


def _device(platform: str) -> Any:
    return jax.extend.backend.get_backend(platform).devices()[0]


def _runner(executable: Any, args: list[Any]) -> Callable[[], list[Any]]:
    def run() -> list[Any]:
        outs = executable.execute(args)
        for o in outs:
            o.block_until_ready()
        return outs

    return run


#: A sample runs a program this long at least (several executions of a
#: short one, averaged).
SAMPLE_S = 0.02


def time_programs(programs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median time of one execution of each program, the programs taking
    turns (one sample each per repeat) after a warm-up run each."""
    inner: dict[str, int] = {}
    for name, run in programs.items():
        run()
        start = time.perf_counter()
        run()
        inner[name] = max(1, min(1000, math.ceil(SAMPLE_S / max(time.perf_counter() - start, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(repeats):
        for name, run in programs.items():
            gc.collect()
            start = time.perf_counter()
            for _ in range(inner[name]):
                run()
            samples[name].append((time.perf_counter() - start) / inner[name])
    return {name: statistics.median(s) for name, s in samples.items()}


def run_case(case: Case, size: int, rows: int, row_length: int, repeats: int, timing: bool = True,
             platform: str = "cpu") -> Result:
    x, y = make_inputs(case, size, rows, row_length)
    device = _device(platform)
    native = lower_x64(case.fn, x, y)
    native_exe = compile_module(native.operation.get_asm(), device)
    converted = lower_x64(case.fn, x, y)
    report = no64.demote(converted, float_policy="pairs", check=True)
    text = converted.operation.get_asm()
    if case.matmul and "precision = [HIGHEST, HIGHEST]" not in text:
        raise AssertionError(f"{case.name}: the pairs matmul is not the exact-slice form")
    pairs_exe = compile_module(text, device)
    with enable_x64(False):
        f32_text = jax.jit(case.fn, keep_unused=True).lower(x.astype(np.float32), y.astype(np.float32)).as_text()
    f32_exe = compile_module(f32_text, device)
    with enable_x64(True):
        args64 = [jax.device_put(v, device) for v in (x, y)]
    args_pairs = [jax.device_put(no64.split_pairs(v), device) if i in report.pair_inputs
                  else jax.device_put(v, device) for i, v in enumerate((x, y))]
    args32 = [jax.device_put(v.astype(np.float32), device) for v in (x, y)]
    runs = {"f64": _runner(native_exe, args64), "pairs": _runner(pairs_exe, args_pairs),
            "f32": _runner(f32_exe, args32)}
    ref = np.asarray(runs["f64"]()[0])
    got = no64.join_pairs(np.asarray(runs["pairs"]()[0]))
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    if not err <= TOLERANCE:
        raise AssertionError(f"{case.name}: pairs differ from float64 by {err:.3g} (relative to the largest value)")
    result = Result(case.name, None, None, None, err)
    if timing:
        t = time_programs(runs, repeats)
        result.f64_s, result.pairs_s, result.f32_s = t["f64"], t["pairs"], t["f32"]
    return result


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.2f}"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


def print_table(results: list[Result], header: str) -> None:
    print(header)
    width = max(len(r.name) for r in results)
    print(f"{'case':<{width}}  {'f64 ms':>9}  {'pairs ms':>9}  {'f32 ms':>9}  {'pairs/f64':>9}  "
          f"{'pairs/f32':>9}  {'max rel err':>11}")
    for r in results:
        print(f"{r.name:<{width}}  {_ms(r.f64_s):>9}  {_ms(r.pairs_s):>9}  {_ms(r.f32_s):>9}  "
              f"{_x(r.ratio(r.f64_s)):>9}  {_x(r.ratio(r.f32_s)):>9}  {r.max_rel_error:>11.1e}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1 << 20, help="elements of the elementwise cases")
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--row-length", type=int, default=4096)
    p.add_argument("--dots", type=int, nargs="*", default=[256, 512], help="matmul sizes")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--check-only", action="store_true", help="check every pairs result, time nothing")
    p.add_argument("--platform", default="cpu")
    p.add_argument("--only", nargs="*", metavar="NAME", help="only the cases whose name starts with one of these")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    results = []
    for case in cases(args.dots):
        if args.only and not any(case.name.startswith(n) for n in args.only):
            continue
        results.append(run_case(case, args.size, args.rows, args.row_length, args.repeats,
                                timing=not args.check_only, platform=args.platform))
        print(f"  {case.name}: done", file=sys.stderr, flush=True)
    report_run(results, print_table, f"float64 as pairs of f32 (float_policy=\"pairs\") against native f64 and f32 "
               f"on {args.platform}:", platform=args.platform, repeats=args.repeats, json_path=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
