"""A float64 solve on pairs of f32, refined from the f32 LU, against the float64 LU on pairs (CPU or ``--platform``).

``jnp.linalg.solve(a, b)`` of an ``n x n`` float64 matrix and ``n x 4``
right-hand sides, lowered with x64 on and compiled four ways outside the
timed region:

* **f64**: the x64 program as JAX lowers it (XLA's own float64 solve:
  LAPACK's ``dgetrf`` and ``dtrsm`` on the CPU; XLA:TPU refuses it, and
  its column shows ``-``);
* **refined**: the module after ``no64.demote(module,
  float_policy="pairs")``: the device's f32 LU (LAPACK's ``sgetrf`` on the
  CPU), its solve corrected with float64-pair residuals
  (:func:`no64.rules.linalg.refine_solves`);
* **pair LU**: the same conversion with the refinement off -- the float64
  LU written out as a loop over the columns computed on pairs, what the
  refinement falls back to (and what a float64 solve on pairs was before);
* **f32**: the function traced with x64 off.

The matrices are ``U diag(s) V^T`` with random orthogonal ``U``, ``V`` and
singular values from 1 to ``1/--cond``.  Each result's error is its
largest difference from the exact solution (mpmath, 40 digits, below
``--exact-limit``; else from LAPACK's float64 one on the host) relative to the solution's
largest element.  The programs take turns, one sample each per repeat;
the table shows medians and the ratios refined / f64 and pair LU /
refined.

Run ``python benchmarks/bench_pairs_solve.py`` (``--sizes 256 512``, the
default); ``--json PATH`` also writes the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import no64
from no64.jax.reference import compile_module, lower_x64
from no64.transforms import demote as demote_step

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_pairs import _device, _runner, time_programs  # noqa: E402
from bench_support import enable_x64, report_run  # noqa: E402

#: Right-hand sides per solve.
COLUMNS = 4


@contextlib.contextmanager
def refinement_off() -> Iterator[None]:
    """Float64 solves on pairs by the float64 LU written out (the
    refinement's fallback alone)."""
    saved = demote_step.refine_solves
    demote_step.refine_solves = lambda root: []  # type: ignore[assignment]
    try:
        yield
    finally:
        demote_step.refine_solves = saved  # type: ignore[assignment]


def conditioned(n: int, cond: float, seed: int = 0) -> np.ndarray:
    """``U diag(s) V^T``: random orthogonal ``U``, ``V``, ``s`` from 1 to ``1/cond``."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return u @ np.diag(np.logspace(0, -np.log10(cond), n)) @ v.T


def exact_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import mpmath

    with mpmath.workdps(40):
        am = mpmath.matrix(a.tolist())
        cols = [mpmath.lu_solve(am, mpmath.matrix(b[:, j].tolist())) for j in range(b.shape[1])]
        return np.array([[float(c[i]) for c in cols] for i in range(b.shape[0])])


@dataclass
class Result:
    n: int
    cond: float
    f64_s: float | None
    refined_s: float | None
    pair_lu_s: float | None
    f32_s: float | None
    f64_err: float
    refined_err: float
    pair_lu_err: float
    f32_err: float
    exact: bool


def _pairs_program(a: np.ndarray, b: np.ndarray, device: object) -> tuple[object, list[object]]:
    m = lower_x64(jnp.linalg.solve, a, b)
    report = no64.demote(m, float_policy="pairs", check=True)
    args = [jax.device_put(no64.split_pairs(v), device) if i in report.pair_inputs else jax.device_put(v, device)
            for i, v in enumerate((a, b))]
    return compile_module(m.operation.get_asm(), device), args


def bench(n: int, cond: float, repeats: int, timing: bool = True, platform: str = "cpu",
          exact_limit: int = 128) -> Result:
    a = conditioned(n, cond)
    b = np.random.default_rng(1).standard_normal((n, COLUMNS))
    device = _device(platform)
    try:
        f64_exe = compile_module(lower_x64(jnp.linalg.solve, a, b).operation.get_asm(), device)
    except jax.errors.JaxRuntimeError as exc:  # XLA:TPU: "Only F32 and C64 types are implemented in LuDecomposition"
        print(f"  the device's own float64 solve: {str(exc).splitlines()[0][:120]}", file=sys.stderr)
        f64_exe = None
    refined_exe, pair_args = _pairs_program(a, b, device)
    with refinement_off():
        pair_lu_exe, _ = _pairs_program(a, b, device)
    with enable_x64(False):
        f32_text = jax.jit(jnp.linalg.solve).lower(a.astype(np.float32), b.astype(np.float32)).as_text()
    f32_exe = compile_module(f32_text, device)
    with enable_x64(True):
        args64 = [jax.device_put(v, device) for v in (a, b)]
    args32 = [jax.device_put(v.astype(np.float32), device) for v in (a, b)]
    runs = {"refined": _runner(refined_exe, pair_args),
            "pair LU": _runner(pair_lu_exe, pair_args), "f32": _runner(f32_exe, args32)}
    if f64_exe is not None:
        runs["f64"] = _runner(f64_exe, args64)
    outs = {name: np.asarray(run()[0]) for name, run in runs.items()}
    got = {"refined": no64.join_pairs(outs["refined"]),
           "pair LU": no64.join_pairs(outs["pair LU"]), "f32": outs["f32"].astype(np.float64)}
    if "f64" in outs:
        got["f64"] = outs["f64"]
    exact = n <= exact_limit
    # beyond the mpmath limit: LAPACK's float64 solve on the host
    truth = exact_solve(a, b) if exact else np.linalg.solve(a, b)
    err = {k: float(np.max(np.abs(v - truth)) / np.max(np.abs(truth))) for k, v in got.items()}
    r = Result(n, cond, None, None, None, None, err.get("f64", float("nan")), err["refined"], err["pair LU"],
               err["f32"], exact)
    if timing:
        t = time_programs(runs, repeats)
        r.f64_s, r.refined_s, r.pair_lu_s, r.f32_s = t.get("f64"), t["refined"], t["pair LU"], t["f32"]
    return r


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.2f}"


def _x(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.1f}x"


def print_table(results: list[Result], header: str) -> None:
    print(header)
    print(f"{'n':>5}  {'cond':>6}  {'f64 ms':>8}  {'refined ms':>10}  {'pair LU ms':>10}  {'f32 ms':>8}  "
          f"{'refined/f64':>11}  {'pair LU/refined':>15}  {'err f64':>8}  {'refined':>8}  {'pair LU':>8}  "
          f"{'f32':>8}  {'against':>7}")
    for r in results:
        print(f"{r.n:>5}  {r.cond:>6.0e}  {_ms(r.f64_s):>8}  {_ms(r.refined_s):>10}  {_ms(r.pair_lu_s):>10}  "
              f"{_ms(r.f32_s):>8}  {_x(r.refined_s, r.f64_s):>11}  {_x(r.pair_lu_s, r.refined_s):>15}  "
              f"{r.f64_err:>8.1e}  {r.refined_err:>8.1e}  {r.pair_lu_err:>8.1e}  {r.f32_err:>8.1e}  "
              f"{'exact' if r.exact else 'LAPACK':>7}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[256, 512])
    p.add_argument("--conds", type=float, nargs="*", default=[1e4], help="condition numbers of the matrices")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--exact-limit", type=int, default=128, help="largest n held to the mpmath solution")
    p.add_argument("--platform", default="cpu")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    results = []
    for n in args.sizes:
        for cond in args.conds:
            results.append(bench(n, cond, args.repeats, platform=args.platform, exact_limit=args.exact_limit))
            print(f"  n={n} cond={cond:g}: done", file=sys.stderr, flush=True)
    report_run(results, print_table, f"jnp.linalg.solve, {COLUMNS} right-hand sides, on {args.platform}: float64 "
               f"pairs refined from the f32 LU against the float64 LU on pairs, XLA's f64 and f32;",
               platform=args.platform, repeats=args.repeats, json_path=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
