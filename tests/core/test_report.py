"""The report's per-value records, and errors that carry a SourceLocation."""

from __future__ import annotations

import json

import pytest

import no64
from no64.kinds import Verdict
from no64.report import DemotionReport, Narrowing
from support import ir, make_context


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


# %x has an unknown range: the add is unproven; %big always overflows.
UNPROVEN_SRC = """
func.func public @main(%x: tensor<i64> loc("x"("in.py":1:1))) -> (tensor<i64>, tensor<i64>) {
  %c = stablehlo.constant dense<1000000> : tensor<i64> loc("jit(f)/c"("p.py":2:1))
  %y = stablehlo.add %x, %c : tensor<i64> loc("jit(f)/add"("p.py":4:7))
  %big = stablehlo.multiply %c, %c : tensor<i64> loc("jit(f)/mul"("p.py":3:1))
  return %y, %big : tensor<i64>, tensor<i64>
}"""


def test_narrowing_records_name_op_index_and_interval() -> None:
    report = no64.demote(parse(UNPROVEN_SRC), policy="permissive", input_ranges={0: (0, 2**40)})
    by_op = {(n.op, n.role, n.index): n for n in report.narrowings}
    assert set(by_op) == {
        ("func.func", "argument", 0), ("stablehlo.add", "result", 0), ("stablehlo.multiply", "result", 0)
    }
    add = by_op["stablehlo.add", "result", 0]
    assert add.verdict is Verdict.UNPROVEN
    assert add.interval == (1000000, 2**40 + 1000000)
    assert (add.location.file, add.location.line, add.location.column) == ("p.py", 4, 7)
    mul = by_op["stablehlo.multiply", "result", 0]
    assert mul.verdict is Verdict.OVERFLOW and mul.interval == (10**12, 10**12)
    arg = by_op["func.func", "argument", 0]
    assert arg.verdict is Verdict.UNPROVEN and arg.interval == (0, 2**40)
    assert arg.location.file == "in.py"
    # exact values (the constant %c) get no record
    assert not any(n.op == "stablehlo.constant" for n in report.narrowings)
    data = json.loads(json.dumps(report.to_dict()))
    row = next(r for r in data["narrowings"] if r["op"] == "stablehlo.add")
    assert row == {
        "op": "stablehlo.add", "role": "result", "index": 0, "verdict": "unproven",
        "interval": [1000000, 2**40 + 1000000],
        "location": {"primitive": "add", "scope": "jit(f)/add", "file": "p.py", "line": 4, "column": 7,
                     "raw": row["location"]["raw"], "text": "add at p.py:4:7"},
        "detail": "result in [1000000, 1099512627776] may not fit in 32 bits",
        "collision": False,
    }
    # the events are kept as before
    assert sorted(e.kind for e in report.events) == ["overflow", "unproven", "unproven"]


# A min whose identity is INT64_MAX over 32-bit values, and a masked fill with it.
SENTINEL_SRC = """
func.func public @main(%x: tensor<4xi64>) -> (tensor<i64>, tensor<4xi64>) {
  %max = stablehlo.constant dense<9223372036854775807> : tensor<i64>
  %m = stablehlo.reduce(%x init: %max) applies stablehlo.minimum across dimensions = [0]
      : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %zero = stablehlo.constant dense<0> : tensor<4xi64>
  %fill = stablehlo.constant dense<9223372036854775807> : tensor<4xi64>
  %p = stablehlo.compare GT, %x, %zero : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %s = stablehlo.select %p, %x, %fill : tensor<4xi1>, tensor<4xi64>
  return %m, %s : tensor<i64>, tensor<4xi64>
}"""


def test_collision_marks_values_unproven_only_by_a_sentinel() -> None:
    """A value unproven only because a sentinel meets ordinary 32-bit values is marked
    ``collision`` -- a reduction's identity, not a select's masked fill (whose result is
    the sentinel beside values that may be INT32_MAX) -- and a plainly unproven one is not."""
    i32 = (-(2**31), 2**31 - 1)
    report = no64.demote(parse(SENTINEL_SRC), policy="permissive", input_ranges={0: i32})
    by_op = {(n.op, n.role, n.index): n for n in report.narrowings if n.verdict is Verdict.UNPROVEN}
    assert by_op["stablehlo.reduce", "result", 0].collision
    select = by_op["stablehlo.select", "result", 0]
    assert select.interval == (-(2**31), 2**63 - 1) and not select.collision
    wide = no64.demote(parse(SENTINEL_SRC), policy="permissive", input_ranges={0: (0, 2**40)})
    assert not any(n.collision for n in wide.narrowings)


def test_narrowing_error_carries_location_and_its_one_record() -> None:
    # x in [0, 10**4]: only the product (up to 10**10) may not fit
    src = UNPROVEN_SRC.replace("%c, %c", "%c, %x")
    with pytest.raises(no64.NarrowingError) as info:
        no64.demote(parse(src), policy="strict", input_ranges={0: (0, 10**4)})
    exc = info.value
    assert exc.op == "stablehlo.multiply"
    assert isinstance(exc.location, no64.SourceLocation)
    assert (exc.location.file, exc.location.line, exc.location.column) == ("p.py", 3, 1)
    assert str(exc).startswith("stablehlo.multiply at mul at p.py:3:1: a 64-bit integer in [0, 10000000000]")
    assert exc.verdict is Verdict.UNPROVEN and exc.interval == (0, 10**10)
    record = exc.narrowing
    assert isinstance(record, Narrowing)
    assert (record.op, record.role, record.index, record.interval) == (
        "stablehlo.multiply", "result", 0, (0, 10**10)
    )
    # the same value, under a policy that only reports it: exactly one record
    report = no64.demote(parse(src), input_ranges={0: (0, 10**4)})
    assert report.narrowings == [record]


def test_multi_result_records_carry_the_result_index() -> None:
    src = """
func.func public @main(%x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %c = stablehlo.constant dense<0> : tensor<i64>
  %r:2 = stablehlo.while(%i = %c, %k = %x) : tensor<i64>, tensor<i64>
   cond {
    %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    stablehlo.return %i, %k : tensor<i64>, tensor<i64>
  } loc("jit(f)/while"("w.py":9:2))
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}"""
    report = no64.demote(parse(src), policy="permissive", input_ranges={0: (0, 2**33)})
    results = sorted((n.index, n.interval) for n in report.narrowings
                     if n.op == "stablehlo.while" and n.role == "result")
    assert results == [(1, (0, 2**33))]
    args = sorted(n.index for n in report.narrowings if n.op == "stablehlo.while" and n.role == "argument")
    assert args == [1, 1]  # %k in the cond and in the body region


def test_unsupported_op_error_carries_a_source_location() -> None:
    src = """
func.func public @main(%x: tensor<i64>) -> tensor<i64> {
  %y = stablehlo.custom_call @my_kernel(%x) : (tensor<i64>) -> tensor<i64> loc("jit(f)/my_kernel"("s.py":7:3))
  return %y : tensor<i64>
}"""
    with pytest.raises(no64.UnsupportedOpError) as info:
        no64.demote(parse(src))
    exc = info.value
    assert isinstance(exc.location, no64.SourceLocation)
    assert (exc.location.file, exc.location.line, exc.location.column) == ("s.py", 7, 3)
    assert str(exc).startswith("stablehlo.custom_call at my_kernel at s.py:7:3: ")


def test_constant_range_error_carries_a_source_location(without_word_rule) -> None:
    without_word_rule("stablehlo.power")
    src = """
func.func public @main(%x: tensor<2xi64>) -> tensor<2xi64> {
  %c = stablehlo.constant dense<5000000000> : tensor<2xi64> loc("k.py":5:9)
  %y = stablehlo.power %x, %c : tensor<2xi64>
  return %y : tensor<2xi64>
}"""
    with pytest.raises(no64.ConstantRangeError) as info:
        no64.demote(parse(src))
    exc = info.value
    assert (exc.location.file, exc.location.line, exc.location.column) == ("k.py", 5, 9)
    assert str(exc).startswith("stablehlo.constant at k.py:5:9: i64 constant 5000000000 ")


def test_saturated_constants_get_records() -> None:
    src = """
func.func public @main() -> tensor<2xi64> {
  %c = stablehlo.constant dense<[5000000000, 1]> : tensor<2xi64> loc("k.py":5:9)
  return %c : tensor<2xi64>
}"""
    report = no64.demote(parse(src), integer_policy="saturate")
    assert [(n.op, n.role, n.index, n.verdict, n.interval) for n in report.narrowings] == [
        ("stablehlo.constant", "result", 0, Verdict.SATURATED, None)
    ]
    assert report.verdicts == {"saturated": 1}


def test_narrowing_is_frozen_and_validates() -> None:
    loc = no64.SourceLocation(None, None, "a.py", 1, 2, '"a.py":1:2')
    n = Narrowing("stablehlo.add", "result", 0, loc, "unproven", (0, 2**40), "d")
    assert n.verdict is Verdict.UNPROVEN
    with pytest.raises(AttributeError):
        n.index = 1  # type: ignore[misc]
    with pytest.raises(ValueError):
        Narrowing("stablehlo.add", "operand", 0, loc, "unproven")
    with pytest.raises(ValueError):
        Narrowing("stablehlo.add", "result", 0, loc, "maybe")
    r = DemotionReport()
    assert r.add_narrowing("stablehlo.add", "result", 0, loc, Verdict.OVERFLOW) in r.narrowings
    assert not r.exact


# A shift by 40 has no 32-bit form: both shifts are emulated under every policy.
EMULATED_SRC = """
func.func public @main(%x: tensor<3xi32> loc("x"("in.py":1:1))) -> tensor<3xi32> {
  %w = stablehlo.convert %x : (tensor<3xi32>) -> tensor<3xi64> loc("jit(f)/convert"("p.py":5:1))
  %c = stablehlo.constant dense<40> : tensor<3xi64> loc("jit(f)/c"("p.py":6:1))
  %l = stablehlo.shift_left %w, %c : tensor<3xi64> loc("jit(f)/shift_left"("p.py":6:9))
  %r = stablehlo.shift_right_arithmetic %l, %c : tensor<3xi64> loc("jit(f)/shift_right"("p.py":7:9))
  %n = stablehlo.convert %r : (tensor<3xi64>) -> tensor<3xi32> loc("jit(f)/convert"("p.py":8:1))
  return %n : tensor<3xi32>
}"""


@pytest.mark.parametrize("policy", ["default", "exact"])
def test_emulated_values_have_records(policy: str) -> None:
    report = no64.demote(parse(EMULATED_SRC), policy=policy)
    assert report.values_emulated > 0
    emulated = [n for n in report.narrowings if n.verdict is Verdict.EMULATED]
    # one record per emulated value, each with its op's location
    assert len(emulated) == report.values_emulated == report.verdicts[Verdict.EMULATED]
    assert len({(n.op, n.role, n.index, str(n.location)) for n in emulated}) == len(emulated)
    lines = {(n.op, n.location.line) for n in emulated}
    assert {("stablehlo.shift_left", 6), ("stablehlo.shift_right_arithmetic", 7)} <= lines
    assert report.exact  # emulated values keep every value


def test_the_summary_names_files_from_the_working_directory_and_no_unknown_place(
        tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a constant JAX emits without a location, and one at a file below the
    # working directory: the summary omits the first's place ("at unknown"
    # says nothing) and names the second's file as the user opens it
    inside = tmp_path / "pkg" / "model.py"
    src = f"""
func.func public @main() -> (tensor<f64>, tensor<f64>) {{
  %a = stablehlo.constant dense<0.1> : tensor<f64> loc(unknown)
  %b = stablehlo.constant dense<0.3> : tensor<f64> loc("jit(f)/mul"("{inside}":7:3))
  return %a, %b : tensor<f64>, tensor<f64>
}}"""
    monkeypatch.chdir(tmp_path)
    summary = no64.demote(parse(src)).summary()
    assert "[float-inexact] stablehlo.constant: f64 constant rounded to nearest f32\n" in summary
    assert "[float-inexact] stablehlo.constant at mul at pkg/model.py:7:3: f64 constant rounded" in summary
    assert "unknown" not in summary and str(tmp_path) not in summary
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # a file outside the working directory keeps its path
    assert f"at mul at {inside}:7:3:" in no64.demote(parse(src)).summary()


def test_the_summary_counts_in_the_singular_and_the_plural() -> None:
    one = no64.demote(parse("""
func.func public @main(%x: tensor<i64>) -> tensor<i64> {
  return %x : tensor<i64>
}""")).summary()
    assert one.startswith("retyped 1 value in 1 function signature and their bodies; narrowed 0 constants; "
                          "removed 0 no-op converts\n")
    two = no64.demote(parse("""
func.func public @main(%x: tensor<i64>, %y: tensor<i64>) -> tensor<i64> {
  %c = stablehlo.constant dense<1> : tensor<i64>
  %s = stablehlo.add %x, %y : tensor<i64>
  %t = stablehlo.add %s, %c : tensor<i64>
  return %t : tensor<i64>
}"""), policy="permissive").summary()
    assert two.startswith("retyped 5 values in 1 function signature and their bodies; narrowed 1 constant; ")
    assert "(s)" not in one + two
