"""Calls of private functions whose signature carries a 64-bit value,
replaced by the callee's body before anything is planned.

The word and pair steps carry a 64-bit value as parts and pack them into
one tensor (``S x 2``) where a function's signature carries it.  XLA does
not see through a packing at a call: a word-emulated ``jnp.floor_divide``
(a private function JAX shares among its call sites) ran 8 to 30 times
slower called than inlined, which is what XLA then runs natively.  And the
range analysis reads a private function's arguments as the join of its
call sites, so ``x // 1000`` and ``x // 10`` sharing one ``@floor_divide``
divide by neither constant, where each inlined body divides by its own
(a multiply: :func:`no64.ir.words.divmod_unsigned_by`).

:func:`inline_calls` inlines, repeatedly, every call of a private,
single-block function whose arguments or results hold an element type the
caller names (those the pass will carry as parts), and erases the private
functions left without a caller.  The body's ops get MLIR's inliner's
locations, their own at the call's, so every report still names the
user's line.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir._compat import block_argument, inlined_at
from ..ir._mlir import as_operation, defining_op, ir
from ..spec.registry import spec_of
from ..spec.walk import all_ops, functions, is_public, symbol_name

__all__ = ["crosses_calls", "inline_calls"]

#: Calls inlined at most (a bound on the module's growth and on recursion).
MAX_INLINED = 10_000


def _signature_types(fn: ir.Operation) -> list[ir.Type]:
    t = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    return [*t.inputs, *t.results]


def inline_calls(root: ir.Operation, carried: Callable[[ir.Type], bool],
                 before: Callable[[], None] = lambda: None) -> int:
    """Inline every call of a private function whose signature holds a type
    ``carried`` says is carried as parts (``before()`` first, once there is
    one); the number of calls inlined."""
    by_name = {symbol_name(f): f for f in functions(root)}
    wide = {name for name, f in by_name.items()
            if not is_public(f) and len(f.regions[0].blocks) == 1 and any(map(carried, _signature_types(f)))}
    if not wide:
        return 0
    done = 0
    pending = [op for op in all_ops(root) if spec_of(op.name).call and _callee(op) in wide]
    if pending:
        before()
    while pending and done < MAX_INLINED:
        call = pending.pop()
        pending.extend(_inline(call, by_name[_callee(call)], wide))
        done += 1
    used = {_callee(op) for op in all_ops(root) if spec_of(op.name).call}
    for name in wide - used:
        by_name[name].erase()
    return done


def _callee(call: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def _inline(call: ir.Operation, fn: ir.Operation, wide: set[str]) -> list[ir.Operation]:
    """Replace ``call`` by a copy of ``fn``'s body; the calls of ``wide``
    functions the copy holds."""
    block = fn.regions[0].blocks[0]
    mapping: dict[ir.Value, ir.Value] = dict(zip(block.arguments, call.operands))
    ip = ir.InsertionPoint(call)
    nested_calls: list[ir.Operation] = []
    for body_op in block.operations:
        body_op = as_operation(body_op)
        if spec_of(body_op.name).terminator:
            for res, v in zip(call.results, body_op.operands):
                res.replace_all_uses_with(mapping.get(v, v))
            break
        copy = body_op.clone(ip=ip)
        for op in (copy, *all_ops(copy)):
            inlined_at(op, call.location)
            for i, x in enumerate(op.operands):
                new = mapping.get(x)
                if new is not None:
                    op.operands[i] = new
            if spec_of(op.name).call and _callee(op) in wide:
                nested_calls.append(op)
        mapping.update(zip(body_op.results, copy.results))
    call.erase()
    return nested_calls


def crosses_calls(wide: set[ir.Value]) -> bool:
    """Whether a value to be carried as words crosses a call: a call's
    operand or result, or a private function's argument or returned value."""
    for v in wide:
        op = defining_op(v)
        if op is None:
            arg = block_argument(v)
            owner = as_operation(arg.owner.owner) if arg is not None else None
            if owner is not None and spec_of(owner.name).function and not is_public(owner):
                return True
        elif spec_of(op.name).call:
            return True
        for use in v.uses:
            user = as_operation(use.owner)
            if spec_of(user.name).call:
                return True
            if spec_of(user.name).terminator and user.parent is not None:
                fn = as_operation(user.parent)
                if spec_of(fn.name).function and not is_public(fn):
                    return True
    return False
