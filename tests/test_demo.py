"""``make demo`` (``examples/demo.py``): it passes, and what it prints names
files as the user opens them: relative to the working directory, no place
it does not know, counts in the singular or the plural."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_demo_passes_and_prints_paths_from_the_working_directory(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "examples/demo.py", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert out.rstrip().endswith("PASS")
    # a verdict names the JAX function and the example's line, relative to the working directory
    assert re.search(r"\] stablehlo\.\w+ at \w+ at examples/classifier\.py:\d+:\d+: ", out), out
    assert str(ROOT) not in out
    assert "at unknown" not in out and "(s)" not in out
