"""``no64 convert``'s text report: alike lines once, with ``(xN)``; ``--json`` keeps every entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from no64.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _repeated(tmp_path: Path, n: int) -> Path:
    """``n`` out-of-range constants added up, all at one source line."""
    body = []
    prev = "%arg0"
    for i in range(n):
        body.append(f"    %c{i} = stablehlo.constant dense<5000000000> : tensor<i64> loc(#loc1)")
        body.append(f"    %a{i} = stablehlo.add {prev}, %c{i} : tensor<i64> loc(#loc1)")
        prev = f"%a{i}"
    src = tmp_path / "repeated.mlir"
    src.write_text(
        "module {\n  func.func @main(%arg0: tensor<i64>) -> tensor<i64> {\n" + "\n".join(body)
        + f"\n    return {prev} : tensor<i64>\n  }}\n}}\n"
        '#loc1 = loc("jit(f)/add"("model.py":7:5))\n'
    )
    return src


def test_convert_groups_identical_report_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = _repeated(tmp_path, 20)
    code, out, err = run(capsys, "convert", str(src), "-o", str(tmp_path / "a.mlir"),
                         "--integer-policy", "saturate")
    assert code == 0, err
    saturated = [line for line in out.splitlines() if line.startswith("  [saturated]")]
    assert saturated == [
        "  [saturated] stablehlo.constant at add at model.py:7:5: out-of-range integer constant "
        "5000000000 narrowed by policy 'saturate' (x20)"
    ]
    assert "events: saturated 20, unproven 21" in out
    unproven = [line for line in out.splitlines() if line.startswith("  [unproven]")]
    assert len(unproven) == 2 and unproven[1].endswith("may not fit in 32 bits (x20)")
    # --json keeps every event
    code, out, _ = run(capsys, "convert", str(src), "-o", str(tmp_path / "b.mlir"),
                       "--integer-policy", "saturate", "--json")
    events = json.loads(out)["events"]
    assert sum(e["kind"] == "saturated" for e in events) == 20
    assert all(e["count"] == 1 for e in events)
