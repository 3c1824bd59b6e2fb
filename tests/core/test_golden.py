"""Golden cases for the pass: one ``tests/lit/*.mlir`` file per case.

Each file is an input module followed (or preceded) by its expectation in
comment lines, in the spirit of FileCheck:

``// EXPECT-REFUSED: <ErrorClass>: <substring>``
    :func:`no64.demote` raises ``no64.<ErrorClass>`` whose message contains
    ``<substring>``, and the module is left exactly as it was.
``// CHECK: <substring>``
    The printed converted module contains ``<substring>``; several CHECK
    lines must match in order (each after the previous match).
``// CHECK-NOT: <substring>``
    The printed converted module does not contain ``<substring>`` anywhere
    (``i64>`` catches every 64-bit tensor type, not the ``i64`` attributes
    such as ``dimension = 0 : i64``).
``// POLICY: strict``
    The range policy given to ``demote`` (``default`` when absent).
``// RANGE: 0=0:100000, 1=-5:5``
    Declared input ranges, by argument position (several RANGE lines add up).
``// XFAIL: <reason>``
    A known defect: the case is expected to fail (strictly) until it is fixed.

Every case that converts must be proven exact (no ``unproven`` or
``overflow`` verdict) and is then run against its 64-bit original on the CPU
backend, on adversarial inputs: the extremes of the declared ranges,
INT32_MAX, INT32_MIN, 0 and -1 (those inside the declared range), in every
position; integer outputs must be equal (sentinels mapped as demotion maps
them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import no64
from no64.core._mlir import ir, make_context
from runner import adversarial_inputs, compare_on_adversarial_inputs

LIT = Path(__file__).resolve().parents[1] / "lit"
CASES = sorted(LIT.glob("*.mlir"))

_DIRECTIVE = re.compile(r"^\s*//\s*(EXPECT-REFUSED|CHECK-NOT|CHECK|POLICY|RANGE|XFAIL):\s*(.*?)\s*$")


@dataclass
class Golden:
    text: str
    refused: tuple[str, str] | None = None
    checks: list[str] = field(default_factory=list)
    check_nots: list[str] = field(default_factory=list)
    policy: str = "default"
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    xfail: str | None = None


def read_golden(path: Path) -> Golden:
    text = path.read_text()
    g = Golden(text)
    for line in text.splitlines():
        m = _DIRECTIVE.match(line)
        if m is None:
            continue
        kind, arg = m.groups()
        if kind == "EXPECT-REFUSED":
            cls, _, sub = arg.partition(":")
            g.refused = (cls.strip(), sub.strip())
        elif kind == "CHECK":
            g.checks.append(arg)
        elif kind == "CHECK-NOT":
            g.check_nots.append(arg)
        elif kind == "POLICY":
            g.policy = arg
        elif kind == "RANGE":
            for item in arg.split(","):
                idx, _, bounds = item.strip().partition("=")
                lo, hi = re.fullmatch(r"(-?\d+):(-?\d+)", bounds.strip()).groups()
                g.ranges[int(idx)] = (int(lo), int(hi))
        elif kind == "XFAIL":
            g.xfail = arg
    if g.refused is None and not g.checks:
        raise ValueError(f"{path.name}: no EXPECT-REFUSED and no CHECK line")
    if g.refused is not None and (g.checks or g.check_nots):
        raise ValueError(f"{path.name}: EXPECT-REFUSED cannot be combined with CHECK lines")
    return g


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def printed(m: ir.Module) -> str:
    return m.operation.get_asm(enable_debug_info=False)


def check_in_order(out: str, checks: list[str]) -> None:
    pos = 0
    for c in checks:
        at = out.find(c, pos)
        if at < 0:
            before = out.find(c)
            where = "only before the previous match" if before >= 0 else "nowhere"
            raise AssertionError(f"CHECK: {c!r} found {where} in the converted module:\n{out}")
        pos = at + len(c)


# ------------------------------------------------------------------- the test


def _params() -> list:
    params = []
    for path in CASES:
        g = read_golden(path)
        marks = [pytest.mark.xfail(strict=True, reason=g.xfail)] if g.xfail else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 15, [p.name for p in CASES]


@pytest.mark.parametrize("path", _params())
def test_golden(path: Path) -> None:
    g = read_golden(path)
    m = parse(g.text)
    before = printed(m)
    if g.refused is not None:
        cls_name, sub = g.refused
        cls = getattr(no64, cls_name)
        with pytest.raises(cls) as exc:
            no64.demote(m, policy=g.policy, input_ranges=g.ranges)
        assert sub in str(exc.value), f"{cls_name} without {sub!r}: {exc.value}"
        assert printed(m) == before, "a refused module must be left unchanged"
        return

    report = no64.demote(m, policy=g.policy, input_ranges=g.ranges)
    out = printed(m)
    check_in_order(out, g.checks)
    for c in g.check_nots:
        assert c not in out, f"CHECK-NOT: {c!r} found in the converted module:\n{out}"
    lossy = {k: n for k, n in report.verdicts.items() if k in ("unproven", "overflow")}
    assert lossy == {}, f"a converting golden must be exact, got {report.summary()}"
    assert no64.find_64bit(m) == []

    compare_on_adversarial_inputs(parse(g.text), m, g.ranges, path.name)


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


def test_directives_are_read() -> None:
    g = read_golden(LIT / "barrier_shift_amount_emulated.mlir")
    assert g.refused is None and g.checks == ["-> tensor<2xi32>"] and g.check_nots == ["i64>"]
    assert g.ranges == {0: (-1, -1), 1: (0, 33)}
    assert g.xfail is None
    g = read_golden(LIT / "bitcast_convert_refused.mlir")
    assert g.refused == ("UnsupportedOpError", "bitcast_convert reinterprets the bits")
    g = read_golden(LIT / "iota_add_exact.mlir")
    assert g.policy == "strict" and g.ranges == {0: (-1000, 1000)}
    assert g.checks[0].startswith("func.func public @main") and g.check_nots == ["i64>"]
