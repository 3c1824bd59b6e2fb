"""Float64 accuracy per op, in float64 ulps, of the device's own float64 and of no64's pairs on it.

As JAX publishes the accuracy of its functions: for each op, the median,
99th percentile and largest error in units in the last place of the float64
reference, ``|got - ref| / spacing(ref)``, over random operands.  Measured
on ``jax.devices()[0]`` (``--platform`` to pick another):

* **device f64**: the op compiled by JAX with x64 on for the device,
  without no64 (native on a CPU; emulated by XLA on a TPU);
* **pairs**: ``no64.jit(op, float_policy="pairs", restore_dtypes=True)``
  (which first runs no64's probe of IEEE f32 arithmetic on the device, and
  refuses where it fails);
* **pairs, module**: the same converted module compiled for the device as
  it is, without the probe (``no64.demote(..., float_policy="pairs")`` of
  the x64 program, run on its inputs' pairs): what the pair algorithms give
  on that device's f32 arithmetic.

References, computed on the host CPU: numpy's float64 for the elementwise
ops (IEEE, correctly rounded, for add, sub, mul, div and sqrt; the C
library's, within about 1 ulp, for exp, log, sin, tanh and pow);
``math.fsum`` (correctly rounded) for sum and matmul, whose operands are
rounded to float32 so that every product is exact in float64.

Operands (``--n`` of each, seed 0): add, sub, mul, div: two magnitudes
``2**U(-20, 20) * U[1, 2)`` (positive for add and mul; random signs for sub
and div); sqrt, log: ``2**U(-20, 20) * U[1, 2)``; exp: ``U(-20, 20)``; sin:
``U(-100, 100)``; tanh: ``U(-5, 5)``; pow: base ``2**U(-4, 4)``, exponent
``U(-8, 8)``; sum: rows of 1024 standard normal values; matmul: ``n x n``
standard normal (``--matmul``, default 256).

Run ``python benchmarks/accuracy.py [--n N] [--out DIR]``: prints a markdown
table and writes ``accuracy.json`` and ``accuracy.md`` into ``DIR``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import site
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if os.environ.get("NO64_SITE"):  # no64 installed with pip --target (the device lane)
    site.addsitedir(os.environ["NO64_SITE"])

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import no64  # noqa: E402
from no64.jax.reference import compile_module, main_signature  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_support import enable_x64  # noqa: E402

COLUMNS = ("device f64", "pairs", "pairs, module")


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    fn: Callable[..., Any]
    operands: Callable[[np.random.Generator, int], tuple[np.ndarray, ...]]
    reference: Callable[..., np.ndarray]
    distribution: str


def _mag(rng: np.random.Generator, n: int, signed: bool = False) -> np.ndarray:
    x = np.exp2(rng.uniform(-20, 20, n)) * rng.uniform(1, 2, n)
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _fsum_rows(x: np.ndarray) -> np.ndarray:
    return np.array([math.fsum(r) for r in x])


def _fsum_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # products of float32 values are exact in float64; fsum rounds their sum once
    return np.array([[math.fsum(a[i] * b[:, j]) for j in range(b.shape[1])] for i in range(a.shape[0])])


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).astype(np.float64)


def ops(matmul_n: int = 256) -> list[Op]:
    return [
        Op("add", jnp.add, lambda r, n: (_mag(r, n), _mag(r, n)), np.add, "2**U(-20,20)·U[1,2), both > 0"),
        Op("sub", jnp.subtract, lambda r, n: (_mag(r, n, True), _mag(r, n, True)), np.subtract,
           "2**U(-20,20)·U[1,2), random signs"),
        Op("mul", jnp.multiply, lambda r, n: (_mag(r, n), _mag(r, n)), np.multiply, "2**U(-20,20)·U[1,2), both > 0"),
        Op("div", jnp.divide, lambda r, n: (_mag(r, n, True), _mag(r, n, True)), np.divide,
           "2**U(-20,20)·U[1,2), random signs"),
        Op("sqrt", jnp.sqrt, lambda r, n: (_mag(r, n),), np.sqrt, "2**U(-20,20)·U[1,2)"),
        Op("exp", jnp.exp, lambda r, n: (r.uniform(-20, 20, n),), np.exp, "U(-20,20)"),
        Op("log", jnp.log, lambda r, n: (_mag(r, n),), np.log, "2**U(-20,20)·U[1,2)"),
        Op("sin", jnp.sin, lambda r, n: (r.uniform(-100, 100, n),), np.sin, "U(-100,100)"),
        Op("tanh", jnp.tanh, lambda r, n: (r.uniform(-5, 5, n),), np.tanh, "U(-5,5)"),
        Op("pow", jnp.power, lambda r, n: (np.exp2(r.uniform(-4, 4, n)), r.uniform(-8, 8, n)), np.power,
           "base 2**U(-4,4), exponent U(-8,8)"),
        Op("sum", lambda x: jnp.sum(x, axis=1), lambda r, n: (_f32(r.standard_normal((max(n // 1024, 1), 1024))),),
           _fsum_rows, "rows of 1024 N(0,1), float32 values"),
        Op("matmul", jnp.matmul,
           lambda r, n: (_f32(r.standard_normal((matmul_n, matmul_n))), _f32(r.standard_normal((matmul_n, matmul_n)))),
           _fsum_matmul, f"{matmul_n}×{matmul_n} N(0,1), float32 values"),
    ]


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``|got - ref|`` in ulps of the float64 ``ref``; a non-finite result
    that is not ``ref``'s counts as infinitely many."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - ref) / np.spacing(np.abs(ref))
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    return np.where(same, 0.0, np.where(np.isfinite(err), err, np.inf)).reshape(-1)


@dataclasses.dataclass
class Stat:
    median: float | None = None
    p99: float | None = None
    max: float | None = None
    refused: str = ""

    @staticmethod
    def of(u: np.ndarray) -> "Stat":
        return Stat(float(np.median(u)), float(np.percentile(u, 99)), float(u.max()))

    def cell(self) -> str:
        if self.refused:
            return f"refused ({self.refused.split(':')[0]})"
        return f"{_fmt(self.median)} / {_fmt(self.p99)} / {_fmt(self.max)}"


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    if not math.isfinite(x):
        return "inf"
    return f"{x:.0f}" if x >= 10 or x == int(x) else f"{x:.2g}"


def _device_f64(op: Op, args: Sequence[np.ndarray], device: Any) -> np.ndarray:
    with enable_x64(True):
        dev = [jax.device_put(a, device) for a in args]
        return np.asarray(jax.jit(op.fn)(*dev))


def _pairs_jit(op: Op, args: Sequence[np.ndarray], device: Any) -> np.ndarray:
    with jax.default_device(device):
        return np.asarray(no64.jit(op.fn, float_policy="pairs", restore_dtypes=True)(*args))


def _pairs_module(op: Op, args: Sequence[np.ndarray], device: Any) -> np.ndarray:
    with enable_x64(True):
        module = jax.jit(op.fn).lower(*args).compiler_ir("stablehlo")
    no64.demote(module, float_policy="pairs", check=True)
    assert all(tuple(s.shape) == a.shape + (2,) for s, a in zip(main_signature(module)[0], args))
    exe = compile_module(module, device)
    (out,) = exe.execute([jax.device_put(no64.split_pairs(a), device) for a in args])
    return no64.join_pairs(np.asarray(out))


RUNNERS = {"device f64": _device_f64, "pairs": _pairs_jit, "pairs, module": _pairs_module}


def measure(n: int, matmul_n: int, device: Any, names: Sequence[str] | None = None,
            log: Callable[[str], None] = lambda s: None) -> dict[str, dict[str, Stat]]:
    table: dict[str, dict[str, Stat]] = {}
    for op in ops(matmul_n):
        if names and op.name not in names:
            continue
        args = op.operands(np.random.default_rng(0), n)
        ref = op.reference(*args)
        row: dict[str, Stat] = {}
        for col in COLUMNS:
            try:
                row[col] = Stat.of(ulps(RUNNERS[col](op, args, device), ref))
            except Exception as exc:  # noqa: BLE001 - a refusal is a cell of the table
                first = (str(exc).strip().splitlines() or [""])[0]
                row[col] = Stat(refused=f"{type(exc).__name__}: {first}"[:300])
        table[op.name] = row
        log(f"{op.name}: " + "; ".join(f"{c} {s.cell()}" for c, s in row.items()))
    return table


def markdown(table: dict[str, dict[str, Stat]], header: str, matmul_n: int) -> str:
    dist = {op.name: op.distribution for op in ops(matmul_n)}
    lines = [header, "", "| op | operands | " + " | ".join(f"{c}: median / p99 / max ulp" for c in COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS)]
    for name, row in table.items():
        lines.append(f"| {name} | {dist[name]} | " + " | ".join(row[c].cell() for c in COLUMNS) + " |")
    refusals = sorted({s.refused for row in table.values() for s in row.values() if s.refused})
    lines += [""] + [f"- refused: {r}" for r in refusals] if refusals else []
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 16, help="operands per elementwise op (default 65536)")
    p.add_argument("--matmul", type=int, default=256, help="the matmul's n (default 256)")
    p.add_argument("--platform", help="the JAX platform to measure on (default: that of jax.devices()[0])")
    p.add_argument("--op", action="append", help="measure only this op (repeatable)")
    p.add_argument("--out", help="folder for accuracy.json and accuracy.md")
    args = p.parse_args(argv)
    device = jax.devices(args.platform)[0] if args.platform else jax.devices()[0]
    table = measure(args.n, args.matmul, device, args.op, log=lambda s: print(s, file=sys.stderr, flush=True))
    from importlib.metadata import version

    header = (f"Float64 accuracy on {device.device_kind} ({device.platform}), jax {jax.__version__}, "
              f"jaxlib {version('jaxlib')}; {args.n} operands per elementwise op")
    text = markdown(table, header, args.matmul)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "accuracy.md").write_text(text)
        (out / "accuracy.json").write_text(json.dumps(
            {"device": device.device_kind, "platform": device.platform, "jax": jax.__version__, "n": args.n,
             "matmul": args.matmul,
             "ops": {k: {c: dataclasses.asdict(s) for c, s in row.items()} for k, row in table.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
