"""The op registry: one entry per op, read by the pass and the analysis."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

import no64
from no64.analysis.ranges import RangeAnalysis
from no64.jax.reference import parse_module, run_module
from no64.rules import REGISTRY, UNKNOWN, check_reachable, register, spec_of


def test_core_analysis_and_rules_never_import_jax() -> None:
    code = (
        "import sys, no64, no64.transforms.demote, no64.analysis.ranges, no64.rules, no64.io, no64.cli\n"
        "assert 'jax' not in sys.modules, sorted(m for m in sys.modules if m.startswith('jax'))\n"
        "print('ok')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_every_width_dependent_entry_is_handed_its_rules() -> None:
    check_reachable()
    for name, spec in REGISTRY.items():
        assert spec.name == name
        if spec.rewrites or spec.refuse or spec.fixup:
            assert spec.width_dependent
    assert spec_of("no.such_op") is UNKNOWN and not UNKNOWN.width_dependent
    broken = dataclasses.replace(REGISTRY["stablehlo.add"], name="stablehlo.sub")
    REGISTRY["stablehlo.add"], saved = broken, REGISTRY["stablehlo.add"]
    try:
        with pytest.raises(AssertionError, match="names"):
            check_reachable()
    finally:
        REGISTRY["stablehlo.add"] = saved


@pytest.fixture
def table_restored():  # type: ignore[no-untyped-def]
    """The op table as it was, after the test."""
    saved = dict(REGISTRY)
    yield REGISTRY
    REGISTRY.clear()
    REGISTRY.update(saved)


def test_check_reachable_fails_on_a_rule_the_pass_never_calls(table_restored) -> None:  # type: ignore[no-untyped-def]
    """A rewrite registered for a constant: the pass plans constants itself,
    so the rule would never run -- and indeed it does not."""
    calls: list[str] = []

    def spy(op, ctx) -> bool:  # type: ignore[no-untyped-def]
        calls.append(op.name)
        return False

    register("stablehlo.constant")(spy)
    with pytest.raises(AssertionError, match="stablehlo.constant: its rewrites.*would never run"):
        check_reachable()
    m = parse_module(
        """
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c = stablehlo.constant dense<7> : tensor<4xi64>
  %y = stablehlo.add %x, %c : tensor<4xi64>
  return %y : tensor<4xi64>
}"""
    )
    no64.demote(m)
    assert calls == []


def test_check_reachable_fails_on_an_emulation_rule_of_a_call(table_restored) -> None:  # type: ignore[no-untyped-def]
    REGISTRY["func.call"] = dataclasses.replace(REGISTRY["func.call"], emulate=lambda op, em: [])
    with pytest.raises(AssertionError, match="func.call: its emulation rule"):
        check_reachable()


def test_check_reachable_fails_on_applicability_without_a_rule(table_restored) -> None:  # type: ignore[no-untyped-def]
    REGISTRY["stablehlo.remainder"] = dataclasses.replace(
        REGISTRY["stablehlo.remainder"], emulate=None, emulate_applies=lambda op: True)
    with pytest.raises(AssertionError, match="when its emulation rule applies: it has none"):
        check_reachable()


def test_roles_come_from_the_table() -> None:
    """The pass, the analyses and the emulation steps read structure from the
    table: every function, call, loop, branch and terminator is declared."""
    from no64.spec.registry import names_where

    assert names_where(lambda s: s.function) == {"func.func"}
    assert names_where(lambda s: s.call) == {"func.call"}
    assert names_where(lambda s: s.loop) == {"stablehlo.while"}
    assert names_where(lambda s: s.branches) == {"stablehlo.case", "stablehlo.if"}
    assert names_where(lambda s: s.terminator) == {"stablehlo.return", "func.return", "sdy.return"}
    assert {"stablehlo.reduce", "stablehlo.sort", "stablehlo.scatter"} <= names_where(lambda s: s.owns_regions)
    assert names_where(lambda s: s.constant) == {"stablehlo.constant", "chlo.constant", "mhlo.constant"}
    # rule applicability is a field of the entry, not an attribute of the rule
    dot = REGISTRY["stablehlo.dot_general"]
    assert dot.emulate_applies is not None and not hasattr(dot.emulate, "applies")


def test_a_rule_registered_for_any_op_runs() -> None:
    """xor and convert had no way into the rules before the registry."""
    calls: list[str] = []

    def spy(op, ctx) -> bool:  # type: ignore[no-untyped-def]
        calls.append(op.name)
        return False

    saved = {n: REGISTRY[n] for n in ("stablehlo.xor", "stablehlo.convert")}
    register("stablehlo.xor", "stablehlo.convert")(spy)
    try:
        m = parse_module(
            """
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi32> {
  %y = stablehlo.xor %x, %x : tensor<4xi64>
  %z = stablehlo.convert %y : (tensor<4xi64>) -> tensor<4xi32>
  return %z : tensor<4xi32>
}"""
        )
        no64.demote(m)
    finally:
        REGISTRY.update(saved)
    assert sorted(calls) == ["stablehlo.convert", "stablehlo.xor"]


BARRIER = """
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %i, %x : tensor<4xi64>, tensor<4xi64>
  return %b#0, %b#1 : tensor<4xi64>, tensor<4xi64>
}"""


def test_ranges_are_per_result() -> None:
    m = parse_module(BARRIER)
    ra = RangeAnalysis(m.operation, {0: (-5, 100000)})
    barrier = next(op for op in m.body.operations[0].regions[0].blocks[0].operations
                   if op.operation.name == "stablehlo.optimization_barrier")
    assert ra.interval(barrier.results[0]) == (0, 3)
    assert ra.interval(barrier.results[1]) == (-5, 100000)


def test_an_op_no_entry_gives_a_range_gets_the_full_range() -> None:
    src = """
func.func public @main(%n: tensor<1xi64>) -> tensor<?xi64> {
  %0 = stablehlo.dynamic_iota %n, dim = 0 : (tensor<1xi64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}"""
    # (its entry holds only its rule on 16-bit integers carried in 32 bits)
    spec = REGISTRY["stablehlo.dynamic_iota"]
    assert spec.transfer is None and spec.fold is None and spec.arguments is None
    m = parse_module(src)
    ra = RangeAnalysis(m.operation)
    iota = next(op for op in m.body.operations[0].regions[0].blocks[0].operations
                if op.operation.name == "stablehlo.dynamic_iota")
    assert ra.interval(iota.results[0]) == (-(2**63), 2**63 - 1)
    with pytest.raises(no64.NarrowingError, match="dynamic_iota"):
        no64.demote(parse_module(src), policy="strict", input_ranges={0: (0, 10)})


def test_counted_accumulator_through_a_call_matches_the_64bit_program() -> None:
    """JAX's fori_loop calls its body: acc + x bounded by init + trips * x."""
    import jax
    import jax.numpy as jnp

    from no64.jax.reference import lower_x64

    def f(x):  # type: ignore[no-untyped-def]
        return jax.lax.fori_loop(0, 1000, lambda i, acc: acc + x, jnp.int64(0))

    want = [int(np.asarray(f(jnp.int64(v)))) for v in (0, 1000)]
    m = lower_x64(f, jnp.int64(0))
    report = no64.demote(m, policy="strict", input_ranges={0: (0, 1000)})
    assert set(report.verdicts) == {"exact"}
    got = [int(run_module(m, [np.int32(v)])[0]) for v in (0, 1000)]
    assert got == want == [0, 1000000]


def test_check_reachable_fails_on_a_legalization_of_an_op_without_a_form(table_restored) -> None:  # type: ignore[no-untyped-def]
    """A target's legalization finds ops by their form: one without a form is never handed it."""
    REGISTRY["stablehlo.add"] = dataclasses.replace(REGISTRY["stablehlo.add"], legalize=lambda op, q, b, f: "no")
    with pytest.raises(AssertionError, match="stablehlo.add: its legalization for a target"):
        check_reachable()
