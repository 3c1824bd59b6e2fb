"""Griffe extension for the API reference (mkdocs.yml names it).

Two things the documentation's loader cannot see in the sources by itself:

* the names ``no64`` loads on first use (its ``_LAZY_EXPORTS``: ``no64.jit``,
  ``no64.install``, ...) become members of ``no64``, so that the reference
  documents ``no64.jit`` under the name users call it by;
* every docstring's Sphinx roles become cross-references
  (``tools/docs_roles.py``: a link where the reference documents the target).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import griffe

_spec = importlib.util.spec_from_file_location("docs_roles", Path(__file__).with_name("docs_roles.py"))
assert _spec is not None and _spec.loader is not None
docs_roles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_roles)


def _lazy_exports(pkg: griffe.Module) -> dict[str, str]:
    member = pkg.members.get("_LAZY_EXPORTS")
    if member is None or member.is_alias or getattr(member, "value", None) is None:
        return {}
    return dict(ast.literal_eval(str(member.value)))


def _resolver(obj: griffe.Object, collection: Any) -> Any:
    def lookup(path: str) -> str | None:
        try:
            found = collection[path]
        except Exception:  # noqa: BLE001  (griffe raises KeyError, AliasResolutionError, ...)
            return None
        return str(found.path)

    def resolve(target: str) -> str | None:
        # as Sphinx searches: the object itself (a class's members), the class
        # it belongs to, its module, then the name as a full path
        scopes: list[Any] = [obj]
        if obj.parent is not None and obj.parent.is_class:
            scopes.append(obj.parent)
        scopes.append(obj.module)
        for scope in scopes:
            path = lookup(f"{scope.path}.{target}")
            if path is not None:
                return path
        return lookup(target)

    return resolve


def _objects(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found += _objects(member)
    return found


class No64Reference(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name != "no64":
            return
        for name, module in _lazy_exports(pkg).items():
            pkg.set_member(name, griffe.Alias(name, f"no64.{module}.{name}", parent=pkg))
        for obj in _objects(pkg):
            if obj.docstring is not None:
                resolve = _resolver(obj, loader.modules_collection)
                obj.docstring.value = docs_roles.convert_roles(obj.docstring.value, resolve)
