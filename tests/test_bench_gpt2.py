"""The GPT-2 benchmark's step under ``policy="exact"``, on a small model and without
timing: with the input ranges its user knows (token ids below the vocabulary, a step
counter below 2**31 - 1) every 64-bit input is proven to fit, so the exact policy
converts it exactly as the default policy does -- nothing emulated, no input as words,
the same module; without them the token ids and the step counter enter as words."""

from __future__ import annotations

import importlib.util
import sys
from functools import partial
from pathlib import Path

import jax

import no64
from no64.jax.hook import clone_module

BENCH_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpt2.py"


def _load_benchmark():
    spec = importlib.util.spec_from_file_location("bench_gpt2", BENCH_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load_benchmark()


def test_declared_ranges_leave_nothing_to_emulate() -> None:
    cfg = bench.GPTConfig(layers=1, d_model=32, heads=2, seq=8, batch=2)
    args = bench.abstract_args(cfg)
    module = jax.jit(partial(bench.train_step, cfg=cfg)).trace(*args).lower().compiler_ir("stablehlo")
    ranges = bench.declared_ranges(cfg)
    default, exact, undeclared = clone_module(module), clone_module(module), clone_module(module)
    r_default = no64.demote(default, input_ranges=ranges, verify=False, check=True)
    r_exact = no64.demote(exact, policy="exact", input_ranges=ranges, verify=False, check=True)
    assert r_exact.values_emulated == r_exact.ops_emulated == 0
    assert r_exact.emulated_inputs == r_exact.emulated_outputs == []
    assert str(exact) == str(default)
    for r in (r_default, r_exact):
        assert not r.verdicts.get("unproven") and not r.verdicts.get("overflow") and not r.narrowings
    # without the ranges: the step counter and the token ids enter as words
    r_undeclared = no64.demote(undeclared, policy="exact", verify=False, check=True)
    leaves = jax.tree_util.tree_leaves_with_path(args)
    words = {jax.tree_util.keystr(path) for i, (path, _) in enumerate(leaves) if i in r_undeclared.emulated_inputs}
    assert words == {"[1]['step']", "[2]", "[3]"}, words
    assert r_undeclared.values_emulated > 3
    assert not r_undeclared.verdicts.get("unproven") and not r_undeclared.verdicts.get("overflow")
