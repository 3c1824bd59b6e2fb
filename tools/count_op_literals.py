#!/usr/bin/env python3
"""Count the op-name string literals of the package, per file.

An op-name literal is a string constant in the source (not a docstring) that
is an op name (``"stablehlo.add"``, ``"func.call"``, ``"chlo.top_k"``, ...)
or a dialect prefix (``"stablehlo."``, also as the fixed part of an
f-string).  The op table (``rules/ops.py``) is where ops are meant to be
known; a literal naming op X in the module that implements one of X's rules
(a function the table's entry for X names) is that rule's own business.
Every other literal is counted: the goal is none.

The primitive table (``jax/primitives.py``) is the JAX layer's table: what
no64 knows about each JAX primitive, naming the ops it lowers to (counted
as table literals too).  A string constant of the JAX layer (``no64/jax``)
that is the name of a primitive of that table (``"argmin"``, ``"top_k"``,
``"while"``) is counted in the ``primitives`` column outside it: the goal is
none.  The core knows no JAX primitive (the same words there are
StableHLO's, as names of IR builders): it is not counted.

A last column counts string constants that merely contain op names inside
longer text (MLIR text a module builds), for information.

Run ``.venv/bin/python tools/count_op_literals.py [--all] [--json]``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TABLE = SRC / "no64" / "rules" / "ops.py"
PRIMITIVE_TABLE = SRC / "no64" / "jax" / "primitives.py"
JAX_LAYER = SRC / "no64" / "jax"

DIALECTS = ("stablehlo", "chlo", "mhlo", "func", "sdy")
NAME = re.compile(rf"^({'|'.join(DIALECTS)})\.[a-z0-9_]*$")
#: Names of the same form that are attributes, not ops.
ATTRIBUTES = frozenset({"mhlo.num_replicas", "mhlo.num_partitions", "mhlo.sharding", "mhlo.frontend_attributes",
                        "mhlo.backend_config"})
IN_TEXT = re.compile(rf"\b({'|'.join(DIALECTS)})\.[a-z][a-z0-9_]*\b")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    out.add(id(body[0].value))
        # attribute docstrings: a bare string right after an assignment
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for s in stmts:
                    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                        out.add(id(s.value))
    return out


def _rule_modules() -> dict[str, set[str]]:
    """op name -> the source files (relative to ``src``) of the functions its
    table entry names."""
    if "no64" not in sys.modules:
        sys.path.insert(0, str(SRC))
    import no64  # noqa: F401  (fills the table)
    from no64.spec.registry import REGISTRY

    out: dict[str, set[str]] = defaultdict(set)
    for name, spec in REGISTRY.items():
        fns = [spec.transfer, spec.arguments, spec.fold, spec.refuse, spec.fixup, spec.emulate, spec.pairs,
               getattr(spec, "emulate_applies", None), getattr(spec, "emulate_why_not", None), *spec.rewrites]
        if callable(spec.sentinels):
            fns.append(spec.sentinels)
        for fn in fns:
            module = getattr(fn, "__module__", None)
            if module:
                out[name].add(module.replace(".", "/") + ".py")
    return out


def _primitive_names() -> frozenset[str]:
    """The names of the primitives the primitive table knows."""
    if "no64" not in sys.modules:
        sys.path.insert(0, str(SRC))
    from no64.jax.primitives import PRIMITIVES

    return frozenset(PRIMITIVES)


def count(all_files: bool = False) -> dict[str, dict[str, int]]:
    owners = _rule_modules()
    primitives = _primitive_names()
    per_file: dict[str, dict[str, int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstrings(tree)
        counts: Counter[str] = Counter()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docs:
                continue
            s = node.value
            if path.is_relative_to(JAX_LAYER) and s in primitives:
                counts["table" if path == PRIMITIVE_TABLE else "primitives"] += 1
            elif NAME.match(s) and s not in ATTRIBUTES:
                if path in (TABLE, PRIMITIVE_TABLE):
                    counts["table"] += 1
                elif s.endswith("."):
                    counts["names"] += 1
                elif rel in owners.get(s, ()):
                    counts["own rule"] += 1
                else:
                    counts["names"] += 1
            elif IN_TEXT.search(s) and s not in ATTRIBUTES:
                counts["in text"] += 1
        if counts or all_files:
            per_file[rel] = dict(counts)
    return per_file


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--all", action="store_true", help="list files with no literal too")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    per_file = count(a.all)
    if a.json:
        print(json.dumps(per_file, indent=1, sort_keys=True))
        return 0
    cols = ("names", "own rule", "primitives", "table", "in text")
    print(f"{'file':44} " + " ".join(f"{c:>9}" for c in cols))
    total: Counter[str] = Counter()
    for rel, c in sorted(per_file.items(), key=lambda kv: (-kv[1].get("names", 0), kv[0])):
        total.update(c)
        print(f"{rel:44} " + " ".join(f"{c.get(k, 0):>9}" for k in cols))
    print(f"{'total':44} " + " ".join(f"{total.get(k, 0):>9}" for k in cols))
    print("names: op-name literals outside the op table and the op's own rule module (the goal: 0)")
    print("primitives: JAX primitive names in the JAX layer outside the primitive table (the goal: 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
