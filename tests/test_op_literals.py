"""The op table is the only place an op is known: no op name is written in
the package outside ``rules/ops.py`` and the module implementing a rule of
that op (``tools/count_op_literals.py`` counts them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "count_op_literals.py"


def test_no_op_name_is_written_outside_the_op_table() -> None:
    spec = importlib.util.spec_from_file_location("count_op_literals", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    names = {f: c["names"] for f, c in tool.count().items() if c.get("names")}
    # the one builder that spells the dialect of what the rules build
    assert names == {"no64/ir/words.py": 1}
