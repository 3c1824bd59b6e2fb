"""A float64 matmul on pairs of f32 by exact slices on each matrix engine datapath, beside float64 and float32.

For each size ``n`` (``--sizes``) and each kind of data (``--data``:
``normal`` entries, or ``wide``: normal entries times ``2**e``, ``e``
uniform in ``[-20, 20]`` per element), two ``n x n`` float64 matrices are
multiplied on the device JAX sees first (``jax.devices()[0]``, or
``--platform``), every input resident on it, by:

* **f64**: the x64 program as JAX lowers it (on a TPU, XLA's own
  emulation of float64);
* **pairs int8-crt**: ``no64.demote(module, float_policy="pairs")`` for a
  profile whose matrix engine is a TPU's (``no64.targets.TPU_MATMUL``,
  ``int8 x int8 -> int32`` dots) with products by residues allowed
  (``Matmul.residues``): by residues (Ozaki scheme II, one int8 product
  per modulus) where the data are within their span, by levels of int8
  digits where not;
* **pairs int8-levels**: the TPU's own profile, whose residues are off
  (measured slower there): the levels of int8 digits alone;
* **pairs bf16**: the same for Neuron's (``NEURON_MATMUL``: bf16 digits,
  one-pass dots into f32, every slice always);
* **pairs f32**: the same for f32 products at HIGHEST (``F32_MATMUL``,
  the CPU's and an unknown device's);
* **f32**: the float32 program (HIGHEST).

The inputs are rounded to what a pair holds first (48 bits), so that every
program multiplies the same numbers.  Each program is compiled outside the
timed region, runs once to warm up, then ``--repeats`` samples of at least
20 ms each, the programs taking turns; the table shows the median time of
one execution, each program's ratio to f64, and the largest error over
``--samples`` output elements against the exact product (each computed as
an exactly rounded sum of exact products), relative to ``(|A| |B|)_ij``.

Each size's line is followed by the products of ``n**3`` each scheme
computes always on the int8 datapath (``no64.rules.pair_dot.products``),
the ``int8 x int8`` ``dot_general`` ops each emitted module holds, and the
time of the residues' module relative to the levels' alone.

Run ``python benchmarks/bench_pairs_dot.py --sizes 1024 2048 4096``
(``--paths int8-crt int8-levels`` for those two and float64 alone).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import no64
import no64.rules.pair_dot as pair_dot
from no64.jax.reference import compile_module, lower_x64
from no64.targets import F32_MATMUL, NEURON_MATMUL, TPU_MATMUL, Matmul, target

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support, bench_pairs beside it
from bench_pairs import time_programs  # noqa: E402
from bench_support import enable_x64  # noqa: E402

#: The pairs' datapaths, by name, and whether the residues may compute on it.
PATHS: dict[str, tuple[Matmul, bool]] = {"int8-crt": (dataclasses.replace(TPU_MATMUL, residues=True), True),
                                         "int8-levels": (TPU_MATMUL, False),
                                         "bf16": (NEURON_MATMUL, False), "f32": (F32_MATMUL, False)}

#: The ``int8 x int8`` dots of a module's text.
_I8_DOT = re.compile(r"stablehlo\.dot_general .*: \(tensor<[0-9x]*xi8>, tensor<[0-9x]*xi8>\)")


def make_inputs(n: int, data: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two ``n x n`` float64 matrices of the kind ``data``, rounded to pairs."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    if data == "wide":
        a *= 2.0 ** rng.integers(-20, 21, a.shape)
        b *= 2.0 ** rng.integers(-20, 21, b.shape)
    return (no64.join_pairs(no64.split_pairs(a, strict=True)), no64.join_pairs(no64.split_pairs(b, strict=True)))


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = x * 134217729.0  # 2**27 + 1: Dekker's split
    hi = c - (c - x)
    return hi, x - hi


def exact_rows(a: np.ndarray, b: np.ndarray, cells: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(AB)_ij`` (exactly rounded) and ``(|A| |B|)_ij`` at ``cells``: each
    product exact as two doubles (Dekker), the terms summed by ``math.fsum``."""
    exact, magnitude = [], []
    for i, j in cells:
        x, y = a[i], b[:, j]
        p = x * y
        xh, xl = _split(x)
        yh, yl = _split(y)
        e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
        exact.append(math.fsum(np.concatenate([p, e])))
        magnitude.append(math.fsum(np.abs(p)) * (1 + 2.0**-50))
    return np.array(exact), np.array(magnitude)


def _converted(a: np.ndarray, b: np.ndarray, path: Matmul, residues: bool) -> str:
    """The matmul's module converted to pairs for a profile whose matrix
    engine is ``path`` (the residues allowed or not)."""
    m = lower_x64(lambda x, y: x @ y, a, b)
    profile = dataclasses.replace(target("generic"), name=f"bench-{path.operands}", matmul=path)
    before = pair_dot.RESIDUES
    pair_dot.RESIDUES = residues
    try:
        no64.demote(m, float_policy="pairs", check=True, target=profile)
    finally:
        pair_dot.RESIDUES = before
    return str(m)


def count_dots(n: int, paths: Sequence[str]) -> dict[str, int]:
    """The ``int8 x int8`` dots of each path's module for ``n x n`` operands
    (converted only: nothing runs)."""
    a = np.zeros((n, n))
    return {name: len(_I8_DOT.findall(_converted(a, a, *PATHS[name]))) for name in paths}


def _pairs_program(a: np.ndarray, b: np.ndarray, path: Matmul, residues: bool,
                   device: Any) -> tuple[Callable[[], Any], str]:
    """The converted matmul, compiled for ``device`` (its run and its text)."""
    text = _converted(a, b, path, residues)
    exe = compile_module(text, device)
    ins = [jax.device_put(no64.split_pairs(x), device) for x in (a, b)]

    def run() -> Any:
        (out,) = exe.execute(ins)
        return out.block_until_ready()

    return run, text


def bench(n: int, data: str = "normal", repeats: int = 3, samples: int = 64, device: Any = None,
          paths: Sequence[str] = tuple(PATHS)) -> dict[str, Any]:
    """Time and check every program on one size and kind of data: seconds
    per execution (``<program>_s``) and largest relative error
    (``<program>_err``)."""
    device = device or jax.devices()[0]
    a, b = make_inputs(n, data)
    programs: dict[str, Callable[[], Any]] = {}
    dots: dict[str, int] = {}
    with enable_x64(True):
        f64 = jax.jit(lambda x, y: x @ y)
        da, db = jax.device_put(a, device), jax.device_put(b, device)
        programs["f64"] = lambda: f64(da, db).block_until_ready()
        programs["f64"]()  # compiled with x64 on
    for name in paths:
        programs[f"pairs {name}"], text = _pairs_program(a, b, *PATHS[name], device)
        dots[name] = len(_I8_DOT.findall(text))
    f32 = jax.jit(lambda x, y: jnp.matmul(x, y, precision="highest"))
    fa, fb = jax.device_put(a.astype(np.float32), device), jax.device_put(b.astype(np.float32), device)
    programs["f32"] = lambda: f32(fa, fb).block_until_ready()
    with enable_x64(True):
        times = time_programs(programs, repeats)
        results = {name: run() for name, run in programs.items()}
    rng = np.random.default_rng(1)
    cells = [(int(i), int(j)) for i, j in rng.integers(0, n, (samples, 2))]
    exact, magnitude = exact_rows(a, b, cells)
    out: dict[str, Any] = {"n": n, "data": data, "device": str(device), "int8_dots": dots,
                           "int8_products": pair_dot.products(n, TPU_MATMUL)}
    for name, got in results.items():
        arr = np.asarray(got)
        values = no64.join_pairs(arr) if name.startswith("pairs") else arr.astype(np.float64)
        picked = np.array([values[i, j] for i, j in cells])
        out[f"{name}_s"] = times[name]
        out[f"{name}_err"] = float(np.max(np.abs(picked - exact) / magnitude))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    p.add_argument("--data", nargs="+", default=["normal", "wide"], choices=["normal", "wide"])
    p.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--samples", type=int, default=64, help="output elements checked against the exact product")
    p.add_argument("--platform", default=None, help="the JAX backend to run on (default: the first device's)")
    p.add_argument("--counts-only", action="store_true",
                   help="print each size's int8 products and dots without running anything")
    args = p.parse_args(argv)
    if args.counts_only:
        for n in args.sizes:
            counts = pair_dot.products(n, TPU_MATMUL)
            dots = count_dots(n, [q for q in args.paths if q.startswith("int8")])
            print(f"k = {n}: int8 products of n^3 always computed: levels {counts['levels']}, residues "
                  f"{counts.get('residues', '-')}; int8 dot_general ops emitted (the residues' one dot batched over "
                  "the moduli, beside the levels' fallback): "
                  + ", ".join(f"{q} {c}" for q, c in dots.items()), flush=True)
        return 0
    device = jax.devices(args.platform)[0] if args.platform else jax.devices()[0]
    names = ["f64", *(f"pairs {q}" for q in args.paths), "f32"]
    print(f"device: {device.device_kind} ({device.platform}); times: median ms of one execution (x f64); "
          "error: max |C - AB| / (|A||B|)_ij")
    print(f"{'n':>5} {'data':>6} " + " ".join(f"{name:>22}" for name in names))
    for n in args.sizes:
        for data in args.data:
            r = bench(n, data, args.repeats, args.samples, device, args.paths)
            t = r["f64_s"]
            cells = [f"{r[f'{name}_s'] * 1e3:8.2f} ({r[f'{name}_s'] / t:5.2f}x) {r[f'{name}_err']:.1e}"
                     for name in names]
            print(f"{n:>5} {data:>6} " + " ".join(f"{c:>22}" for c in cells), flush=True)
            if "int8-crt" in args.paths and "int8-levels" in args.paths:
                ratio = r["pairs int8-crt_s"] / r["pairs int8-levels_s"]
                print(f"{'':>12} int8-crt / int8-levels: {ratio:.2f}x", flush=True)
        counts = pair_dot.products(n, TPU_MATMUL)
        dots = ", ".join(f"{q} {c}" for q, c in r["int8_dots"].items())
        print(f"{'':>12} k = {n}: int8 products of n^3 always computed: levels {counts['levels']}, residues "
              f"{counts.get('residues', '-')}; int8 dot_general ops emitted (the residues' one batched over the "
              f"moduli): {dots or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
