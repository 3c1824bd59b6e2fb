"""What measuring float error costs on the float64 GPT-2 training step, and what it finds.

The program is ``tests/audit_scripts/train_gpt2.py``: the training step of
``bench_gpt2.py`` (Adam included) on real float64 arrays, a few steps;
``--size small`` is 2 layers of d_model 64, vocabulary 512 and 32 positions,
``--size default`` the benchmark's sizes with 2 layers.  In one run:

* ``no64.numerics`` of one step, in process, without the pairs run: wall
  time of the first measurement (the float64 and float32 programs
  compiled for the CPU) and of a second one (compiled already), and the
  lines listed and washed out;
* the script three ways, each in a fresh process on the CPU: as it is
  (``python SCRIPT``), under ``no64 audit``, and, with ``--audit-numerics``,
  under ``no64 audit --numerics`` (the first 3 calls of the step measured,
  each also run under ``float_policy="pairs"``), wall time side by side.

Run
``python benchmarks/bench_audit_numerics.py --size default --steps 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "tests/audit_scripts/train_gpt2.py"


def timed(argv: list[str]) -> float:
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="1", PYTHONWARNINGS="ignore")
    env.pop("JAX_ENABLE_X64", None)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{proc.stderr[-4000:]}")
    return elapsed


def in_process(size: str) -> tuple[float, float, int, int, int]:
    """``no64.numerics`` of one step twice: the times, lines, washed-out lines, equations."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    warnings.simplefilter("ignore")
    argv, sys.argv = sys.argv, [SCRIPT, "0", size]
    try:
        script = runpy.run_path(str(ROOT / SCRIPT))  # the model, not run: 0 steps
    finally:
        sys.argv = argv
    import jax
    import numpy as np

    import no64

    bench, cfg = script["bench"], script["CFG"]
    params = jax.tree.map(np.asarray, bench.init_params(jax.random.key(0), cfg))
    opt_state = {"step": np.int64(0), "m": jax.tree.map(np.zeros_like, params),
                 "v": jax.tree.map(np.zeros_like, params)}
    tokens = np.random.default_rng(0).integers(0, cfg.vocab, (cfg.batch, cfg.seq))

    def step(params, opt_state, tokens, targets):
        return bench.train_step(params, opt_state, tokens, targets, cfg)

    times = []
    for _ in range(2):
        start = time.perf_counter()
        report = no64.numerics(step, params, opt_state, tokens, np.roll(tokens, -1, axis=1), pairs=False)
        times.append(time.perf_counter() - start)
    print(report, flush=True)
    return times[0], times[1], len(report.lines), report.washed_out, report.equations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps (default: %(default)s)")
    parser.add_argument("--size", choices=("small", "default"), default="default",
                        help="model size (default: %(default)s)")
    parser.add_argument("--audit-numerics", action="store_true",
                        help="also time no64 audit --numerics (long: it compiles the step under pairs)")
    args = parser.parse_args(argv)
    first, second, listed, washed, equations = in_process(args.size)
    script = [SCRIPT, str(args.steps), args.size]
    py = sys.executable
    plain = timed([py, *script])
    audit = timed([py, "-m", "no64", "audit", *script])
    rows = [("plain run", plain), ("no64 audit", audit)]
    if args.audit_numerics:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.json"
            rows.append(("no64 audit --numerics",
                         timed([py, "-m", "no64", "audit", "--numerics", "--json", "-o", str(out), *script])))
            listed += len(json.loads(out.read_text())["numerics"]["lines"])
    print(f"{SCRIPT} {args.steps} {args.size}: no64.numerics of one step ({equations} equations): "
          f"{first:.1f} s, again {second:.1f} s; {listed} line(s) listed, {washed} washed out")
    for name, seconds in rows:
        print(f"  {name:<24}{seconds:8.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
