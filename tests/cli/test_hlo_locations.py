"""``no64 check`` of HLO text: a finding names the source line of its instruction's metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from no64.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


HLO_WITH_METADATA = """\
HloModule m, entry_computation_layout={(s64[3]{0})->s64[3]{0}}

ENTRY %main (x: s64[3]) -> s64[3] {
  %x = s64[3]{0} parameter(0), metadata={op_name="x"}
  %c = s64[] constant(2)
  %b = s64[3]{0} broadcast(%c), dimensions={}
  ROOT %mul = s64[3]{0} multiply(%x, %b), metadata={op_name="jit(f)/mul" source_file="x.py" source_line=12}
}
"""


def test_hlo_findings_name_the_source_line_of_their_metadata(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "x.hlo.txt"
    src.write_text(HLO_WITH_METADATA)
    code, out, _ = run(capsys, "check", str(src))
    assert code == 1
    rows = [line for line in out.splitlines() if line.startswith("  ")]
    (mul,) = [line for line in rows if "stablehlo.multiply" in line]
    assert mul.endswith("  mul at x.py:12")
    (const,) = [line for line in rows if "stablehlo.constant" in line]
    assert "x.py" not in const  # no metadata, no source line
    code, out, _ = run(capsys, "check", "--json", str(src))
    (finding,) = [f for f in json.loads(out)[0]["findings"] if f["op"] == "stablehlo.multiply"]
    assert (finding["location"]["file"], finding["location"]["line"]) == ("x.py", 12)
    assert finding["location"]["text"] == "mul at x.py:12"
