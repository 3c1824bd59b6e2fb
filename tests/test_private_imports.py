"""The tests reach no64's private modules through one file.

A private module (``no64.<package>._name``: the MLIR bindings, the
compatibility seams) is imported by ``tests/support.py`` alone, which
re-exports what the tests need and says why; every other test, helper and
program the tests run (also one written out as a string for a child
process) imports from there or from the package's public faces.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
SUPPORT = TESTS / "support.py"


def _is_private_module(name: str) -> bool:
    """Whether ``name`` is a module path of no64 with a private part."""
    parts = name.split(".")
    return parts[0] == "no64" and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def private_imports(source: str) -> Iterator[str]:
    """The private no64 modules ``source`` imports, also in the Python
    programs it holds as string literals."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if _is_private_module(a.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _is_private_module(node.module):
                yield node.module
            for a in node.names:
                name = f"{node.module}.{a.name}"
                if _is_private_module(name) and _is_module(name):
                    yield name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            yield from private_imports(node.value)


def test_only_the_support_module_imports_private_modules() -> None:
    found = [
        f"{path.relative_to(TESTS)}: {name}"
        for path in sorted(TESTS.rglob("*.py"))
        if path not in (SUPPORT, Path(__file__).resolve())  # this file: the check's own example
        for name in private_imports(path.read_text())
    ]
    assert not found, "import these through tests/support.py:\n  " + "\n  ".join(found)


def test_the_support_module_does() -> None:
    assert set(private_imports(SUPPORT.read_text())) >= {"no64.ir._mlir", "no64.jax._compat"}


def test_the_check_can_fail() -> None:
    program = (
        "import no64.ir._mlir\n"
        "from no64.jax import _compat\n"
        "from no64.jax.hook import _check_boundary\n"  # a private name of a public module
        "CHILD = '''\nfrom no64.ir._mlir import ir\n'''\n"
    )
    assert sorted(private_imports(program)) == ["no64.ir._mlir", "no64.ir._mlir", "no64.jax._compat"]


BENCHMARKS = TESTS.parent / "benchmarks"
BENCH_SUPPORT = BENCHMARKS / "bench_support.py"


def test_the_benchmarks_import_private_modules_through_one_file() -> None:
    # benchmarks/bench_support.py is their one door to no64's private modules
    found = [
        f"{path.relative_to(BENCHMARKS)}: {name}"
        for path in sorted(BENCHMARKS.glob("*.py"))
        if path != BENCH_SUPPORT
        for name in private_imports(path.read_text())
    ]
    assert not found, "import these through benchmarks/bench_support.py:\n  " + "\n  ".join(found)
    assert set(private_imports(BENCH_SUPPORT.read_text())) == {"no64.ir._mlir", "no64.jax._compat"}
