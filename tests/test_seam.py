"""no64 reaches JAX's and jaxlib's internals through its seams alone.

What differs between JAX releases, or may, is JAX's private code: the
``jax._src`` package, ``jax.interpreters`` and ``jax.lib`` (kept for old
callers), jaxlib's modules, and private attributes of JAX's objects.  One
module of the JAX layer reaches them (:mod:`no64.jax._compat`), and two of
the core reach jaxlib's MLIR and XLA bindings (:mod:`no64.ir._mlir`,
:mod:`no64.ir._compat`); every other module of ``src`` uses what those offer
or JAX's public API, and so does every benchmark.  A module breaks the rule by

* importing an internal module (``import jax._src.core``, ``from jax._src
  import config``, ``from jax import _src``, ``import jaxlib.mlir.ir``, any
  module of ``jax`` with a private part), at module level or in a function;
* naming one through ``jax`` (``jax._src.core.Tracer``,
  ``jax.interpreters.pxla``, ``jax.core._private``), also through an alias
  (``import jax as j``);
* importing one by name (``importlib.import_module("jax._src.dtypes")``,
  ``__import__``, ``sys.modules["jax._src.config"]``);
* using a private attribute of a JAX object that a seam uses
  (``state._update_global_hook``): the names are read from the seams, so
  that one moved into a seam stays there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: The seams: the only modules that may reach JAX's and jaxlib's internals
#: (a folder: the modules of a package).
SEAM_PLACES = (
    SRC / "no64" / "jax" / "_compat",  # JAX's internals, a module per job
    SRC / "no64" / "ir" / "_compat.py",  # what differs between jaxlib's bindings
    SRC / "no64" / "ir" / "_mlir.py",  # jaxlib's MLIR bindings and dialects
)
SEAMS = tuple(p for place in SEAM_PLACES for p in (sorted(place.glob("*.py")) if place.is_dir() else [place]))

#: Modules (and their submodules) that are JAX's or jaxlib's internals.
INTERNAL = ("jax._src", "jax.interpreters", "jax.lib", "jaxlib")

#: Functions that import a module named by a string.
IMPORTERS = {"import_module", "__import__", "optional_module", "find_spec"}


def is_internal(module: str) -> bool:
    """Whether ``module`` is one of JAX's or jaxlib's internal modules."""
    parts = module.split(".")
    if parts[0] not in ("jax", "jaxlib"):
        return False
    if any(module == p or module.startswith(p + ".") for p in INTERNAL):
        return True
    return any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` of an attribute chain on a name, or ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _callee(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _attribute_named(node: ast.Call) -> str | None:
    """The private attribute ``getattr(x, "_name", ...)`` (or ``hasattr``,
    ``setattr``) names, if it is one."""
    if _callee(node) in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _is_private(name.value):
            return name.value
    return None


def seam_private_attributes() -> frozenset[str]:
    """The private attribute names the seams use on objects they do not
    define (JAX's), less the names the seams give things themselves."""
    used: set[str] = set()
    own: set[str] = set()
    for path in SEAMS:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    used.add(node.attr)
            elif isinstance(node, ast.Call) and _attribute_named(node) is not None:
                used.add(_attribute_named(node))  # type: ignore[arg-type]
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) or (
                    isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
                own.add(node.name if not isinstance(node, ast.Name) else node.id)
    return frozenset(n for n in used - own if not n.startswith("_no64"))


def internal_reaches(source: str, private_attributes: frozenset[str] = frozenset()) -> Iterator[str]:
    """What ``source`` reaches of JAX's and jaxlib's internals, each as
    ``line: what``."""
    tree = ast.parse(source)
    roots = {"jax": "jax", "jaxlib": "jaxlib"}  # names bound to the packages (aliases too)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ("jax", "jaxlib") and a.asname:
                    roots[a.asname] = a.name
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for a in node.names:
                if is_internal(a.name):
                    yield f"{line}: import {a.name}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if is_internal(node.module):
                yield f"{line}: from {node.module} import ..."
            else:
                for a in node.names:
                    if is_internal(f"{node.module}.{a.name}"):
                        yield f"{line}: from {node.module} import {a.name}"
        elif isinstance(node, ast.Attribute):
            parts = _dotted(node)
            if parts and parts[0] in roots:
                name = ".".join([roots[parts[0]], *parts[1:]])
                if is_internal(name) and not is_internal(".".join(name.split(".")[:-1]) or "x"):
                    yield f"{line}: {name}"  # (reported once, at its first internal part)
            if node.attr in private_attributes:
                yield f"{line}: .{node.attr}"
        elif isinstance(node, ast.Call) and _attribute_named(node) in private_attributes:
            yield f"{line}: .{_attribute_named(node)}"
        elif isinstance(node, ast.Call) and _callee(node) in IMPORTERS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and is_internal(first.value):
                yield f"{line}: {_callee(node)}({first.value!r})"
        elif isinstance(node, ast.Subscript) and _dotted(node.value) == ["sys", "modules"]:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and is_internal(key.value):
                yield f"{line}: sys.modules[{key.value!r}]"


def test_only_the_seams_reach_jax_internals() -> None:
    private = seam_private_attributes()
    found = [
        f"{path.relative_to(SRC)}:{reach}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in SEAMS
        for reach in internal_reaches(path.read_text(), private)
    ]
    assert not found, ("reach these through no64.jax._compat (or no64.ir._compat for jaxlib's "
                       "bindings):\n  " + "\n  ".join(found))


def test_the_benchmarks_reach_no_jax_internals() -> None:
    benchmarks = SRC.parent / "benchmarks"
    private = seam_private_attributes()
    found = [
        f"{path.name}:{reach}"
        for path in sorted(benchmarks.glob("*.py"))
        for reach in internal_reaches(path.read_text(), private)
    ]
    assert not found, "use no64's public API (or benchmarks/bench_support.py):\n  " + "\n  ".join(found)


def test_the_seams_are_where_the_internals_are() -> None:
    # Each listed seam exists and reaches internals (a package: in most of its
    # modules): the list does not outlive them.
    for place in SEAM_PLACES:
        paths = sorted(place.glob("*.py")) if place.is_dir() else [place]
        reaching = [p for p in paths if list(internal_reaches(p.read_text()))]
        assert len(reaching) * 2 > len(paths), place
    private = seam_private_attributes()
    assert {"_update_global_hook", "_platform_aliases", "_exclude_paths", "_source_info_context"} <= private
    assert not private & {"_guard", "_factory", "_enable_x64"}  # the seam's own names


def test_the_check_can_fail() -> None:
    program = (
        "import jax\n"
        "import jax as j\n"
        "import jaxlib.mlir.ir\n"  # 3
        "from jax._src import config\n"  # 4
        "from jax import _src\n"  # 5
        "from jax.interpreters import pxla\n"  # 6
        "from jax.extend import backend\n"  # public
        "import jax.numpy as jnp\n"  # public
        "def f(state, importlib, sys):\n"
        "    from jax._src.lib import xla_client\n"  # 10
        "    jax._src.core.Tracer\n"  # 11
        "    j.lib.xla_bridge\n"  # 12
        "    jax.core.Tracer\n"  # public
        "    importlib.import_module('jax._src.dtypes')\n"  # 14
        "    sys.modules['jaxlib.xla_client']\n"  # 15
        "    getattr(state, '_update_global_hook', None)\n"  # 16
    )
    found = list(internal_reaches(program, frozenset({"_update_global_hook"})))
    assert sorted(found, key=lambda s: int(s.split(":")[0])) == [
        "3: import jaxlib.mlir.ir",
        "4: from jax._src import ...",
        "5: from jax import _src",
        "6: from jax.interpreters import ...",
        "10: from jax._src.lib import ...",
        "11: jax._src",
        "12: jax.lib",
        "14: import_module('jax._src.dtypes')",
        "15: sys.modules['jaxlib.xla_client']",
        "16: ._update_global_hook",
    ]
    found = list(internal_reaches("state._update_global_hook = None\n", frozenset({"_update_global_hook"})))
    assert found == ["1: ._update_global_hook"]
