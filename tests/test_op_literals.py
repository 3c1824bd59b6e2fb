"""The op table is the only place an op is known: no op name is written in
the package outside ``rules/ops.py`` and the module implementing a rule of
that op; the primitive table the only place a JAX primitive is known: no
name of one of its primitives is written in the JAX layer outside
``jax/primitives.py`` (``tools/count_op_literals.py`` counts both)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "count_op_literals.py"


def _counts() -> dict[str, dict[str, int]]:
    spec = importlib.util.spec_from_file_location("count_op_literals", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    counts: dict[str, dict[str, int]] = tool.count()
    return counts


def test_no_op_name_is_written_outside_the_op_table() -> None:
    names = {f: c["names"] for f, c in _counts().items() if c.get("names")}
    # the one builder that spells the dialect of what the rules build
    assert names == {"no64/ir/words.py": 1}


def test_no_primitive_name_is_written_outside_the_primitive_table() -> None:
    names = {f: c["primitives"] for f, c in _counts().items() if c.get("primitives")}
    assert names == {
        # "split", the short name of jax.random.split in the audit's sites
        # (the word, not the primitive)
        "no64/jax/audit/sites.py": 2,
        # convert_element_type and copy: the float measurement's own list of
        # the primitives that leave a float pair's parts alone
        "no64/jax/numerics/walk.py": 2,
    }
