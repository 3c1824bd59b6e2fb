"""The rule for a module's entry function (:func:`no64.spec.walk.entry_function`):
the public function named ``main``, else the first public function; a
private ``main`` is not the entry.  Every part of no64 that needs the entry
(the pass, the compile hook's boundary check, the audit, the reference
runner) asks this one rule."""

from __future__ import annotations

import pytest

from no64.jax.audit.sites import CallGraph
from no64.jax.reference import main_signature
from no64.spec.walk import entry_function, entry_name, symbol_name
from support import ir, make_context


def _fn(name: str, visibility: str = "public") -> str:
    return (f"func.func {visibility} @{name}(%a: tensor<2xi32>) -> tensor<2xi32> {{\n"
            "  return %a : tensor<2xi32>\n}\n")


def _module(*fns: str) -> ir.Module:
    return ir.Module.parse("".join(fns), make_context())


def _entry(m: ir.Module, strict: bool = False) -> str | None:
    fn = entry_function(m.operation, strict=strict)
    return symbol_name(fn) if fn is not None else None


def test_public_main_is_the_entry_wherever_it_stands() -> None:
    m = _module(_fn("first"), _fn("helper", "private"), _fn("main"))
    assert _entry(m) == "main"
    assert _entry(m, strict=True) == "main"
    assert entry_name(m.operation) == "main"


def test_the_only_public_function_is_the_entry_under_any_name() -> None:
    m = _module(_fn("helper", "private"), _fn("forward"))
    assert _entry(m) == "forward"
    assert _entry(m, strict=True) == "forward"
    assert main_signature(m)[0][0].shape == (2,)


def test_a_private_main_is_not_the_entry() -> None:
    assert _entry(_module(_fn("main", "private"), _fn("forward"))) == "forward"
    only_private = _module(_fn("main", "private"))
    assert _entry(only_private) is None
    assert entry_name(only_private.operation) is None
    with pytest.raises(ValueError, match="no @main function and no public function"):
        main_signature(only_private)


def test_several_public_functions_without_main_the_first_unless_strict() -> None:
    m = _module(_fn("a"), _fn("b"))
    assert _entry(m) == "a"
    assert _entry(m, strict=True) is None
    with pytest.raises(ValueError, match="no @main function and more than one public function"):
        main_signature(m)


def test_the_audit_call_graph_asks_the_same_rule() -> None:
    graph = CallGraph(_module(_fn("helper", "private"), _fn("forward")))
    assert graph.is_entry("forward")
    assert not graph.is_entry("helper")
    assert not graph.is_entry("main")
    assert not graph.is_entry(None)
