"""The shared vocabularies: each word is its string, in JSON and in comparisons."""

from __future__ import annotations

import json

import pytest

import no64
from no64.analysis.ranges import RangeAnalysis
from no64.kinds import (
    EXACT_VERDICTS,
    LOSSY_EVENTS,
    ElementKind,
    EventKind,
    FailOn,
    FloatPolicy,
    Handling,
    IntegerPolicy,
    Mode,
    Outputs,
    RangePolicy,
    Verdict,
    View,
)
from support import ir, make_context

VOCABULARIES = [Verdict, EventKind, RangePolicy, IntegerPolicy, FloatPolicy, Outputs, ElementKind, Mode,
                View, Handling, FailOn]


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_every_word_round_trips_through_json(vocabulary: type) -> None:
    for member in vocabulary:
        text = json.dumps({member: [member]})
        assert text == json.dumps({member.value: [member.value]})
        (key, (value,)), = json.loads(text).items()
        assert vocabulary(key) is member and vocabulary(value) is member
        assert f"{member}" == str(member) == member.value


def test_spellings() -> None:
    assert Verdict.values() == (
        "exact", "sentinel", "emulated", "saturated", "wrapped", "precision-reduced", "unproven",
        "overflow",
    )
    assert EventKind.values() == (
        "sentinel", "saturated", "wrapped", "float-inexact", "float-overflow", "pair-range", "rewrite",
        "emulated", "precision-reduced", "unproven", "overflow",
    )
    assert RangePolicy.values() == ("default", "strict", "permissive", "exact")
    assert IntegerPolicy.values() == ("error", "saturate", "wrap")
    assert Mode.values() == ("fix", "check", "off")
    assert FloatPolicy.values() == ("f32", "pairs")
    assert Outputs.values() == ("words", "narrow", "checked")
    assert ElementKind.values() == ("int", "uint", "float", "other")
    assert [k for k in ElementKind if k.integer] == [ElementKind.INT, ElementKind.UINT]
    assert View.values() == ("hook", "as-is")
    assert FailOn.values() == ("any", "lossy", "unproven", "refused", "numerics")


def test_derived_sets() -> None:
    assert EXACT_VERDICTS == {"exact", "sentinel", "emulated"}
    # "overflow" is lossy as an event kind as well as a verdict
    assert LOSSY_EVENTS == {
        "float-inexact", "float-overflow", "pair-range", "saturated", "wrapped", "precision-reduced",
        "unproven", "overflow",
    }
    for kind in EventKind:
        if kind.value in Verdict.values():
            assert kind.lossy == Verdict(kind.value).lossy, kind
    assert RangePolicy.DEFAULT.refuses == {"overflow"}
    assert RangePolicy.STRICT.refuses == {"overflow", "unproven"}
    assert RangePolicy.PERMISSIVE.refuses == frozenset()
    assert RangePolicy.EXACT.refuses == {"overflow", "unproven"}
    assert IntegerPolicy.SATURATE.verdict is Verdict.SATURATED
    assert IntegerPolicy.WRAP.verdict is Verdict.WRAPPED
    assert IntegerPolicy.ERROR.verdict is None


def test_handlings_order_levels_and_fail_on() -> None:
    assert [h.rank for h in Handling] == list(range(11))
    assert Handling.OVERFLOW.rank > Handling.UNPROVEN.rank > Handling.EXACT.rank
    assert {h for h in Handling if h.sarif_level == "error"} == {"overflow", "refused", "blocked"}
    assert {h for h in Handling if h.sarif_level == "warning"} == {"precision-reduced", "unproven"}
    assert FailOn.LOSSY.handlings == {"precision-reduced", "unproven", "overflow", "refused", "blocked"}
    assert FailOn.UNPROVEN.handlings == {"unproven", "overflow", "refused", "blocked"}
    assert FailOn.REFUSED.handlings == {"refused", "blocked"}
    assert FailOn.ANY.handlings == set(Handling)
    assert {h for h in Handling if not h.removable} == {"refused", "blocked", "unproven", "overflow"}
    assert Handling.of_verdict(Verdict.WRAPPED) is Handling.OVERFLOW
    assert Handling.of_event(EventKind.FLOAT_INEXACT) is Handling.ROUNDED
    for kind in EventKind:
        Handling.of_event(kind)  # every kind has a handling
    for verdict in Verdict:
        Handling.of_verdict(verdict)


def test_parse_names_the_choices() -> None:
    assert RangePolicy.parse("strict", "policy") is RangePolicy.STRICT
    with pytest.raises(ValueError,
                       match=r"^policy must be one of \('default', 'strict', 'permissive', 'exact'\), not 'lax'$"):
        RangePolicy.parse("lax", "policy")


def test_demote_rejects_unknown_policies_with_the_old_messages() -> None:
    m = ir.Module.parse("func.func public @main(%x: tensor<i64>) -> tensor<i64> { return %x : tensor<i64> }",
                        make_context())
    with pytest.raises(ValueError,
                       match=r"policy must be one of \('default', 'strict', 'permissive', 'exact'\), not 'x'"):
        no64.demote(m, policy="x")
    with pytest.raises(ValueError, match=r"integer_policy must be one of \('error', 'saturate', 'wrap'\), not 'y'"):
        no64.demote(m, integer_policy="y")
    with pytest.raises(ValueError, match=r"^float_policy must be one of \('f32', 'pairs'\), not 'f16'$"):
        no64.demote(m, float_policy="f16")
    with pytest.raises(ValueError, match=r"^outputs must be one of \('words', 'narrow', 'checked'\), not 'pairs'$"):
        no64.demote(m, outputs="pairs")
    assert "i64" in str(m)  # refused before anything changed


def test_demote_takes_the_words_and_the_members() -> None:
    text = "func.func public @main(%x: tensor<i64>) -> tensor<i64> { return %x : tensor<i64> }"
    for outputs in ("narrow", Outputs.NARROW):
        m = ir.Module.parse(text, make_context())
        no64.demote(m, policy=RangePolicy.PERMISSIVE, outputs=outputs, float_policy=FloatPolicy.F32)
        assert "i64" not in str(m)


def test_event_details_name_the_policy_by_its_word() -> None:
    m = ir.Module.parse(
        "func.func public @main() -> tensor<i64> {\n"
        "  %c = stablehlo.constant dense<5000000000> : tensor<i64>\n"
        "  return %c : tensor<i64>\n}",
        make_context(),
    )
    report = no64.demote(m, integer_policy="wrap")
    assert [e.detail for e in report.events] == [
        "out-of-range integer constant 5000000000 narrowed by policy 'wrap'"
    ]


def test_range_verdicts_are_typed_on_every_path() -> None:
    """By the ranges, by folding constants (exact and overflow), and for a sentinel."""
    m = ir.Module.parse(
        "func.func public @main(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, "
        "tensor<2xi64>, tensor<2xi64>) {\n"
        "  %c = stablehlo.constant dense<1000> : tensor<2xi64>\n"
        "  %e = stablehlo.remainder %x, %c : tensor<2xi64>\n"
        "  %u = stablehlo.add %x, %c : tensor<2xi64>\n"
        "  %b = stablehlo.constant dense<[0, 4294967296]> : tensor<2xi64>\n"
        "  %f = stablehlo.subtract %b, %b : tensor<2xi64>\n"
        "  %o = stablehlo.add %b, %b : tensor<2xi64>\n"
        "  %s = stablehlo.constant dense<9223372036854775807> : tensor<2xi64>\n"
        "  return %e, %u, %f, %o, %s : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, "
        "tensor<2xi64>\n}",
        make_context(),
    )
    ranges = RangeAnalysis(m.operation)
    ret = list(m.body.operations[0].regions[0].blocks[0].operations)[-1]
    got = [ranges.verdict(v)[0] for v in ret.operands]
    assert got == [Verdict.EXACT, Verdict.UNPROVEN, Verdict.EXACT, Verdict.OVERFLOW, Verdict.SENTINEL]
    assert all(type(v) is Verdict for v in got)


def test_report_verdicts_are_typed_and_json_unchanged() -> None:
    m = ir.Module.parse(
        "func.func public @main(%x: tensor<i64>) -> tensor<i64> {\n"
        "  %c = stablehlo.constant dense<9223372036854775807> : tensor<i64>\n"
        "  %y = stablehlo.minimum %x, %c : tensor<i64>\n"
        "  return %y : tensor<i64>\n}",
        make_context(),
    )
    report = no64.demote(m, policy="permissive")
    assert report.verdicts == {"sentinel": 1, "unproven": 2}
    assert all(type(k) is Verdict for k in report.verdicts)
    assert all(type(e.kind) is EventKind for e in report.events)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["verdicts"] == {"sentinel": 1, "unproven": 2}
    assert data["integer_policy"] == "error"
    assert sorted(data["counts"]) == ["sentinel", "unproven"]
    assert not report.exact
