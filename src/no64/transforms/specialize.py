"""Private functions cloned per call site where a constant argument makes
their emulation cheaper.

JAX lowers ``jnp.floor_divide`` and ``jnp.remainder`` to private functions
that every call of them shares (``x // 1000`` and ``x // 10`` call one
``@floor_divide``), so the divisor inside is the join of the callers' and
the emulation divides by an unknown value, where a known one would be a
multiplication (:func:`no64.ir.words.divmod_unsigned_by`).  Before the
emulation plans anything, :func:`specialize_calls` gives each call site
that passes a constant its own copy of such a function, so that the range analysis, which
reads each function's arguments as the join of its call sites, sees one
point.  Which ops gain is the op table's ``specialize_on``; nothing is
cloned for a function called once, and the copies compute what the
original computes.
"""

from __future__ import annotations

from ..ir._mlir import as_operation, defining_op, ir
from ..ir.types import is_64bit_element
from ..spec.registry import spec_of
from ..spec.walk import all_ops, functions, is_public, symbol_name

__all__ = ["specialize_calls", "specializations"]

#: Functions larger than this are not cloned (a copy per call site).
MAX_OPS = 400


def _gains(fn: ir.Operation) -> bool:
    """Whether ``fn`` holds a 64-bit op whose ``specialize_on`` operand is
    computed from ``fn``'s arguments."""
    for op in all_ops(fn):
        spec = spec_of(op.name)
        if spec.specialize_on is not None and op.results and _wide(op.results[0]) \
                and _from_argument(op.operands[spec.specialize_on]):
            return True
    return False


def _wide(v: ir.Value) -> bool:
    t = v.type
    return isinstance(t, ir.ShapedType) and is_64bit_element(ir.ShapedType(t).element_type)


def _from_argument(v: ir.Value, depth: int = 0) -> bool:
    """Whether ``v`` is computed from a block argument (not from constants alone)."""
    if depth > 32:
        return True
    op = defining_op(v)
    if op is None:
        return True
    return any(_from_argument(x, depth + 1) for x in op.operands)


def _constant_operand(v: ir.Value) -> bool:
    """Whether a call's operand is computed from constants alone."""
    return not _from_argument(v)


def specializations(root: ir.Operation) -> list[tuple[ir.Operation, ir.Operation]]:
    """The calls to give a copy of their callee, each with the callee: calls
    of a private function that gains from a constant argument (see the
    module docstring), other than its first, that pass one."""
    by_name = {symbol_name(f): f for f in functions(root)}
    callers: dict[str, list[ir.Operation]] = {}
    for op in all_ops(root):
        if spec_of(op.name).call:
            callers.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op)
    out: list[tuple[ir.Operation, ir.Operation]] = []
    for name, sites in callers.items():
        fn = by_name.get(name)
        if fn is None or is_public(fn) or len(sites) < 2 or len(all_ops(fn)) > MAX_OPS or not _gains(fn):
            continue
        out.extend((call, fn) for call in sites[1:] if any(_constant_operand(x) for x in call.operands))
    return out


def specialize_calls(root: ir.Operation, calls: list[tuple[ir.Operation, ir.Operation]] | None = None) -> int:
    """Give each call of :func:`specializations` (or of ``calls``) a copy of
    its callee of its own, and the copy its own copies of the private
    functions it calls (``jnp.where``'s, which every ``remainder`` shares);
    the number of functions copied."""
    calls = specializations(root) if calls is None else calls
    by_name = {symbol_name(f): f for f in functions(root)}
    taken = set(by_name)
    made = 0
    for call, fn in calls:
        made += _retarget(call, fn, by_name, taken, set())
    return made


def _retarget(call: ir.Operation, fn: ir.Operation, by_name: dict[str, ir.Operation], taken: set[str],
              path: set[str]) -> int:
    """Point ``call`` at a copy of ``fn`` whose private callees are copies too
    (not along a recursion: ``path``); the number of copies."""
    name = symbol_name(fn)
    copy = _clone(fn, f"{name}__no64", taken)
    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(symbol_name(copy))
    made = 1
    for op in all_ops(copy):
        if spec_of(op.name).call:
            callee = by_name.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
            if callee is not None and not is_public(callee) and symbol_name(callee) not in path | {name}:
                made += _retarget(op, callee, by_name, taken, path | {name})
    return made


def _clone(fn: ir.Operation, name: str, taken: set[str]) -> ir.Operation:
    k = 1
    while f"{name}_{k}" in taken:
        k += 1
    name = f"{name}_{k}"
    taken.add(name)
    copy = fn.clone(ip=ir.InsertionPoint(as_operation(fn.parent).regions[0].blocks[0]))
    copy.attributes["sym_name"] = ir.StringAttr.get(name)
    return copy
