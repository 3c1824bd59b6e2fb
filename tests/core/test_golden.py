"""Golden cases for the pass: ``tests/lit/*.mlir``, checked with FileCheck.

A file holds one or more cases separated by ``// -----`` lines.  Each case
is an input module with its own ``// RUN:`` lines and the check lines they
name (LLVM FileCheck's ``CHECK``, ``CHECK-LABEL``, ``CHECK-NEXT``,
``CHECK-SAME``, ``CHECK-NOT``, under any ``--check-prefix``, as the
``filecheck`` package implements them).  Every RUN line is one ``bash -o
pipefail`` command line that must exit 0, with

``%s``
    the case as a file of the same name, every other case of the file
    blanked so that line numbers (and the locations in messages) are the
    file's own;
``%t``
    a path prefix private to the case;

and ``no64`` and ``filecheck`` on the PATH (the installed CLI and the
``filecheck`` package's tool).

A case that converts writes its module to ``%t.mlir`` with ``no64 convert``
and checks the report's ``verdicts:`` line under the prefix ``REPORT`` (or,
for a target with native 64-bit types, its ``kept ... as they are`` line,
those types then allowed in the result); that
line must show no ``unproven`` or ``overflow`` verdict (a converting golden
is exact).  The converted module is then run, as its own step, against the
64-bit original on the CPU backend on adversarial inputs: the extremes of
the ranges the RUN line declares (``--range I=LO:HI``), INT32_MAX,
INT32_MIN, 0 and -1 (those inside the declared range), in every position;
integer outputs must be equal, bit for bit (sentinels mapped as the pass
maps them, word-pair outputs joined).  A case that is refused writes no
``%t.mlir``; its RUN lines check the exit status and the one-line message.

A case converted with ``--float-policy pairs`` checks the report's
``computed ... float64 value(s) as f32 pairs`` line under ``REPORT`` and
states the bound its float64 results are held to, from the pairs' published
bounds (``docs/guides/float-pairs.md``), in a ``BOUND:`` line:
``// BOUND: 3u^2 of the result`` (relative to each element of the 64-bit
program's result) or ``// BOUND: 8u^2 of the magnitudes`` (relative to the
64-bit program run on its inputs' magnitudes: a sum's or a dot's bound).
Its float64 arguments then take values f32 cannot hold, signed zeros, an
infinity and NaN, as packed pairs; each float64 result, joined from its
pair, must be NaN, infinite and a zero of its sign where the 64-bit
program's is, and within the bound elsewhere, and some element must be
one f32's rounding would miss (``runner.compare_pairs``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import no64
import runner
from no64.targets import TARGETS
from runner import (
    adversarial_inputs,
    compare_on_adversarial_inputs,
    compare_pairs,
    compare_pairs_on_adversarial_inputs,
)
from support import ir, make_context

LIT = Path(__file__).resolve().parents[1] / "lit"
FILES = sorted(LIT.glob("*.mlir"))
#: The installed tools (``no64``, ``filecheck``) live beside the interpreter.
BIN = Path(sys.executable).parent

_SPLIT = re.compile(r"^// -----\s*$")
_RUN = re.compile(r"^\s*//\s*RUN:\s*(.*?)\s*$")
_REPORT = re.compile(r"^\s*//\s*REPORT:\s*verdicts:(.*)$")
_KEPT = re.compile(r"^\s*//\s*REPORT:\s*kept .* as they are \(native on target (\S+)\)$")
_PAIRS = re.compile(r"^\s*//\s*REPORT:\s*computed \d+ float64 values? as f32 pairs")
_BOUND = re.compile(r"^\s*//\s*BOUND:\s*(\d+(?:\.\d+)?)u\^2 of the (result|magnitudes)\s*$")


@dataclass
class Case:
    """One case of a golden file."""

    path: Path
    index: int
    #: The file's text with every other case blanked (line numbers kept).
    text: str
    runs: list[str]

    @property
    def name(self) -> str:
        return f"{self.path.stem}:{self.index}"


def read_cases(path: Path) -> list[Case]:
    """The cases of ``path``, split at ``// -----`` lines."""
    lines = path.read_text().splitlines()
    bounds, start = [], 0
    for i, line in enumerate(lines):
        if _SPLIT.match(line):
            bounds.append((start, i))
            start = i + 1
    bounds.append((start, len(lines)))
    cases = []
    for index, (lo, hi) in enumerate(bounds):
        own = ["" if not lo <= i < hi else line for i, line in enumerate(lines)]
        runs = [m.group(1) for line in own if (m := _RUN.match(line))]
        if not runs:
            raise ValueError(f"{path.name}: case {index} has no RUN line")
        cases.append(Case(path, index, "\n".join(own) + "\n", runs))
    return cases


def declared_ranges(runs: list[str]) -> dict[int, tuple[int, int]]:
    """The ``--range I=LO:HI`` options of the case's ``no64 convert`` line."""
    ranges: dict[int, tuple[int, int]] = {}
    for run in runs:
        words = shlex.split(run)
        for flag, value in zip(words, words[1:]):
            if flag == "--range":
                idx, _, bounds = value.partition("=")
                lo, hi = re.fullmatch(r"(-?\d+):(-?\d+)", bounds).groups()
                ranges[int(idx)] = (int(lo), int(hi))
    return ranges


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def run_lines(case: Case, tmp: Path) -> Path:
    """Run the case's RUN lines in ``tmp``; return where a converted module goes."""
    src = tmp / case.path.name
    src.write_text(case.text)
    prefix = tmp / "out"
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    for run in case.runs:
        cmd = run.replace("%s", shlex.quote(str(src))).replace("%t", shlex.quote(str(prefix)))
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", cmd], cwd=tmp, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise AssertionError(
                f"{case.name}: RUN line exited {done.returncode}: {run}\n"
                f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
            )
    return Path(f"{prefix}.mlir")


def run_case(case: Case, tmp: Path) -> None:
    out = run_lines(case, tmp)
    if not out.exists():
        return
    lines = case.text.splitlines()
    converted = parse(out.read_text())
    if any("--float-policy pairs" in run for run in case.runs):
        # float64 on pairs: held to the case's stated bound against the 64-bit program
        assert any(_PAIRS.match(line) for line in lines), f"{case.name}: a pairs case checks its REPORT pairs line"
        bounds = [m for line in lines if (m := _BOUND.match(line))]
        assert len(bounds) == 1, f"{case.name}: a pairs case states one BOUND: line"
        assert no64.find_64bit(converted) == []
        compare_pairs_on_adversarial_inputs(parse(case.text), converted, declared_ranges(case.runs), case.name,
                                            float(bounds[0].group(1)), bounds[0].group(2) == "magnitudes")
        return
    # A converting case: exact, checked against the 64-bit program.
    verdicts = [m.group(1) for line in lines if (m := _REPORT.match(line))]
    # a target with native 64-bit types may narrow nothing: its report says what it kept
    kept = [m.group(1) for line in lines if (m := _KEPT.match(line))]
    assert verdicts or kept, f"{case.name}: a converting case checks its REPORT: verdicts: (or kept) line"
    for v in verdicts:
        assert "unproven" not in v and "overflow" not in v, f"{case.name}: a converting golden must be exact: {v}"
    keep = frozenset(TARGETS[kept[0]].native) if kept else frozenset()
    assert no64.find_64bit(converted, keep=keep) == []
    compare_on_adversarial_inputs(parse(case.text), converted, declared_ranges(case.runs), case.name, keep=keep)


# ------------------------------------------------------------------- the test

CASES = [case for path in FILES for case in read_cases(path)]


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 24, [c.name for c in CASES]
    refused = [c for c in CASES if not any("--check-prefix=REPORT" in r for r in c.runs)]
    assert len(refused) >= 5, [c.name for c in refused]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_golden(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


_WRONG = """\
// RUN: no64 convert %s -o %t.mlir --range 0=0:7 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 3
// CHECK-LABEL: func.func public @main
// CHECK-NEXT: stablehlo.multiply
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c = stablehlo.constant dense<3> : tensor<4xi64>
  %z = stablehlo.add %x, %c : tensor<4xi64>
  return %z : tensor<4xi64>
}
"""


def test_a_check_that_does_not_match_fails(tmp_path: Path) -> None:
    """The harness itself: a CHECK-NEXT naming an op the module does not
    have there fails the case, and so does a case whose RUN line fails."""
    path = tmp_path / "wrong.mlir"
    path.write_text(_WRONG)
    (case,) = read_cases(path)
    (tmp_path / "wrong").mkdir()
    with pytest.raises(AssertionError, match="RUN line exited 1: filecheck"):
        run_case(case, tmp_path / "wrong")
    right = _WRONG.replace("CHECK-NEXT: stablehlo.multiply", "CHECK-NEXT: stablehlo.constant")
    path.write_text(right)
    (case,) = read_cases(path)
    (tmp_path / "right").mkdir()
    run_case(case, tmp_path / "right")


def test_the_comparison_catches_a_wrong_conversion() -> None:
    """The harness itself: a conversion that overflows (accepted only by the
    permissive policy) must fail the comparison at the declared extreme."""
    src = """
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %k = stablehlo.constant dense<100000> : tensor<4xi64>
  %z = stablehlo.multiply %x, %k : tensor<4xi64>
  return %z : tensor<4xi64>
}"""
    ranges = {0: (0, 100000)}
    m = parse(src)
    report = no64.demote(m, policy="permissive", input_ranges=ranges)
    assert report.verdicts.get("unproven", 0) > 0
    with pytest.raises(AssertionError, match="differs from the 64-bit reference"):
        compare_on_adversarial_inputs(parse(src), m, ranges, "overflowing product")
    # and every special value of the range is among the inputs
    seen = {int(v) for args in adversarial_inputs(parse(src), ranges) for v in args[0].ravel()}
    assert {0, 100000, 1, 50000} <= seen


def test_cases_are_split_with_their_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "two.mlir"
    path.write_text("// RUN: a --range 0=-5:7\nx\n// -----\n// RUN: b --range 1=0:1\ny\n")
    first, second = read_cases(path)
    assert first.runs == ["a --range 0=-5:7"] and second.runs == ["b --range 1=0:1"]
    assert first.text.splitlines() == ["// RUN: a --range 0=-5:7", "x", "", "", ""]
    assert second.text.splitlines() == ["", "", "", "// RUN: b --range 1=0:1", "y"]
    assert declared_ranges(first.runs) == {0: (-5, 7)} and declared_ranges(second.runs) == {1: (0, 1)}


_ADD = """
func.func public @main(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %z = stablehlo.add %x, %y : tensor<4xf64>
  return %z : tensor<4xf64>
}"""


def test_the_pairs_comparison_catches_a_wrong_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness itself: an addition on pairs passes within its bound; read without
    its lo words (f32's precision) it fails, and so does its f32 conversion (a float64
    result that does not come back as a pair)."""
    m = parse(_ADD)
    no64.demote(m, float_policy="pairs")
    compare_pairs_on_adversarial_inputs(parse(_ADD), m, {}, "add on pairs", 5)
    with monkeypatch.context() as patch:
        patch.setattr(runner, "join_pairs", lambda p: np.asarray(p)[..., 0].astype(np.float64))
        with pytest.raises(AssertionError, match=r"beyond 5u\^2 of the scale"):
            compare_pairs_on_adversarial_inputs(parse(_ADD), m, {}, "add without its lo words", 5)
    f32 = parse(_ADD)
    no64.demote(f32)
    with pytest.raises(AssertionError, match=r"float64 results \[0\], of which \[\] come back as pairs"):
        compare_pairs_on_adversarial_inputs(parse(_ADD), f32, {}, "add in f32", 5)


def test_the_pairs_comparison_holds_nonfinite_values_and_signed_zeros() -> None:
    """The harness itself: NaN only at NaN, the same infinities, a zero of its sign,
    and a finite element within its bound of the scale; the elements f32 would miss
    are counted."""
    ref = np.array([1 / 3, -0.0, np.inf, np.nan])
    assert compare_pairs(ref, ref.copy(), ref, 1, "same") == 1
    for got, why in (([1 / 3, 0.0, np.inf, np.nan], "a zero's sign differs"),
                     ([1 / 3, -0.0, -np.inf, np.nan], "non-finite elements differ"),
                     ([1 / 3, -0.0, np.inf, 1.0], "non-finite elements differ"),
                     ([1 / 3 + 2.0**-45, -0.0, np.inf, np.nan], "1 element.s. beyond 1u\\^2")):
        with pytest.raises(AssertionError, match=why):
            compare_pairs(ref, np.array(got), ref, 1, "wrong")
