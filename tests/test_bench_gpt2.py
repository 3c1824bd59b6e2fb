"""The GPT-2 benchmark's step under ``policy="exact"``, on a small model and without
timing: with the input ranges its user knows (token ids below the vocabulary, a step
counter below 2**31 - 1) every 64-bit input is proven to fit, so the exact policy
converts it exactly as the default policy does -- nothing emulated, no input as words,
the same module; without them the token ids and the step counter enter as words."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import jax

import no64
from no64.jax.hook import clone_module
from support import load_benchmark

bench = load_benchmark("bench_gpt2")


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


def _result(**changes: float) -> object:
    """A 12-layer result whose ratios are ``changes`` times the stated ones."""
    stated = bench.STATED_RATIOS
    pass_s = 0.05
    return bench.Result(
        layers=bench.STATED_LAYERS, ops=8436, findings=0, jax_s=pass_s / (stated["pass/JAX"] * changes.get("jax", 1)),
        find_s=0.0, pass_s=pass_s, verified_s=0.0, exact_s=0.0, exact_values_emulated=0, exact_emulated_by_op={},
        undeclared_emulated_by_op={}, floor_s=pass_s / (stated["pass/floor"] * changes.get("floor", 1)),
        jax32_s=1.0, clean_check_s=0.0, clone_s=0.0, hints_s=0.0,
        iree_s=pass_s / (stated["pass/IREE"] * changes.get("iree", 1)))


def test_a_ratio_more_than_a_fifth_worse_than_stated_is_said_loudly(capsys) -> None:
    assert bench.regressions(_result(floor=1.1, jax=0.5, iree=1.19)) == []
    said = bench.regressions(_result(floor=1.25, iree=1.5))
    assert [line.split()[1] for line in said] == ["pass/floor", "pass/IREE"]
    assert said[0].startswith("REGRESSION: pass/floor is") and "25% worse" in said[0]
    assert capsys.readouterr().err.count("REGRESSION") == 2


def test_the_stated_ratios_are_the_documented_ones() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    sentence = page.split("(`STATED_RATIOS` in the benchmark: ", 1)[1].split(")", 1)[0]
    documented = [float(w.strip(",")) for w in sentence.replace(" and ", " ").split()]
    stated = bench.STATED_RATIOS
    assert documented == [stated["pass/floor"], stated["pass/JAX"], stated["pass/IREE"]]
