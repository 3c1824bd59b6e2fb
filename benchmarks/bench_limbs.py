"""Compile and run time of an int32 matmul split into limb dots, on the CPU.

On a device that computes an integer ``dot_general`` in f32 (Neuron,
EVRF035), no64 splits one whose sums may pass 2**24 into limb dots, each
exact in f32 (:func:`no64.transforms.legalize.legalize`).  This benchmark
shows what the split costs on the CPU backend, for one full-range int32
matmul of ``--m x --k`` by ``--k x --n`` (default 256 x 512 @ 512 x 256):

* **int32 dot**: the module as JAX lowered it;
* **limb dots (i32)**: legalized for ``neuron`` (integer limb dots, which the
  target check proves exact);
* **limb dots (f32)**: legalized with ``in_f32=True`` (f32 limb dots on
  integers converted to f32, the form ``neuron-trn2`` gets).

Each program is compiled once (timed: ``compile_and_load``); the legalized
ones are checked bit-identical to the int32 dot on full-range random
inputs, then the programs are run alternately, ``--repeats`` times each, a
sample timing enough executions to last about 20 ms; the table gives the
median time of one execution, and the number of dots of each program.

Run ``python benchmarks/bench_limbs.py [--m 256 --k 512 --n 256] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402
import jax.extend.backend  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_support import enable_x64, ir, make_context  # noqa: E402

from no64.jax.reference import compile_module  # noqa: E402
from no64.targets import target  # noqa: E402
from no64.transforms.legalize import legalize  # noqa: E402

#: A timed sample lasts about this long.
SAMPLE_S = 0.02


def _compile(module: ir.Module) -> tuple[Any, float]:
    text = module.operation.get_asm(enable_debug_info=False)
    start = time.perf_counter()
    exe = compile_module(text)  # the first CPU device
    return exe, time.perf_counter() - start


def _runner(exe: Any, args: list[np.ndarray]) -> Callable[[], np.ndarray]:
    device = jax.extend.backend.get_backend("cpu").devices()[0]
    inputs = jax.device_put(args, device)

    def run() -> np.ndarray:
        out = exe.execute_sharded(inputs).disassemble_into_single_device_arrays()
        return np.asarray(out[0][0])

    return run


def _median_time(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    start = time.perf_counter()
    fn()
    inner = max(1, min(1000, int(SAMPLE_S / max(time.perf_counter() - start, 1e-9))))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def _dots(module: ir.Module) -> int:
    n = [0]

    def visit(op: ir.Operation) -> ir.WalkResult:
        n[0] += op.name.endswith(".dot_general")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return n[0]


def run(m: int = 256, k: int = 512, n: int = 256, repeats: int = 5, seed: int = 0) -> list[dict[str, Any]]:
    """One row per program: its name, dots, compile seconds, run seconds."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2**31), 2**31, (m, k), dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, (k, n), dtype=np.int64).astype(np.int32)
    with enable_x64(False):
        text = jax.jit(lambda a, b: a @ b).lower(a, b).as_text()
    modules = {}
    for name, in_f32 in (("int32 dot", None), ("limb dots (i32)", False), ("limb dots (f32)", True)):
        mod = ir.Module.parse(text, make_context())
        if in_f32 is not None:
            legalize(mod, target("neuron"), in_f32=in_f32)
        modules[name] = mod
    rows: list[dict[str, Any]] = []
    runs: dict[str, Callable[[], np.ndarray]] = {}
    for name, mod in modules.items():
        exe, seconds = _compile(mod)
        runs[name] = _runner(exe, [a, b])
        rows.append({"program": name, "dots": _dots(mod), "compile_s": seconds})
    want = runs["int32 dot"]()
    for name, fn in runs.items():
        if not np.array_equal(fn(), want):
            raise SystemExit(f"{name}: differs from the int32 dot")
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):  # alternately
        for name, fn in runs.items():
            times[name].append(_median_time(fn, 1))
    for row in rows:
        row["run_s"] = statistics.median(times[row["program"]])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--k", type=int, default=512)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = run(args.m, args.k, args.n, args.repeats)
    print(f"int32 matmul {args.m}x{args.k} @ {args.k}x{args.n}, CPU, median of {args.repeats}")
    print(f"{'program':<18}{'dots':>6}{'compile ms':>12}{'run ms':>10}{'vs int32':>10}")
    base = rows[0]["run_s"]
    for r in rows:
        print(f"{r['program']:<18}{r['dots']:>6}{r['compile_s'] * 1e3:>12.1f}{r['run_s'] * 1e3:>10.3f}"
              f"{r['run_s'] / base:>9.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
