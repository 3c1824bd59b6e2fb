"""The demotion pass's rewrite: apply a :class:`~no64.transforms.plan.Plan`.

The exact rewrite rules run on the plan's candidates (:func:`run_rules`);
then :func:`apply` retypes the plan's values (results and block arguments of
every region) and function signatures with ``set_type``, gives constants
their narrowed attributes and runs the fix-ups; :func:`check` is the strict
check of the result, :func:`finish` erases the converts that became no-ops,
and :func:`undo` takes plain retyping back from the plan's undo log.
"""

from __future__ import annotations

from ..ir._mlir import ir
from ..ir.locations import assumed_range
from ..ir.types import TypeConverter
from ..spec.registry import REGISTRY, RuleContext
from .plan import Plan, elem_name
from .scan import check as scan_check

__all__ = ["run_rules", "apply", "check", "finish", "undo"]


def run_rules(plan: Plan, ctx: RuleContext) -> int:
    """Let the registered rules rewrite the plan's candidate ops (see
    :mod:`no64.rules`); returns how many they rewrote."""
    rewrites = 0
    for op in plan.candidates:
        for rule in REGISTRY[op.name].rewrites:
            if rule(op, ctx):
                rewrites += 1
                break
    return rewrites


def apply(plan: Plan, ctx: RuleContext) -> None:
    """Retype, narrow the constants and run the fix-ups (``ctx``: what they
    use of the pass); counted in ``ctx.report``."""
    rep = ctx.report
    for value, _, new in plan.values:
        value.set_type(new)
    tally = dict(plan.tally)
    by_type: dict[str, int] = {}
    for old, new in plan.converted.items():
        n = tally.pop(id(new), 0) if new is not None else 0
        if n:
            name = elem_name(old)
            by_type[name] = by_type.get(name, 0) + n
    rep.values_retyped = len(plan.values)
    rep.retyped_by_type = by_type
    for op, _, new in plan.funcs:
        op.attributes["function_type"] = ir.TypeAttr.get(new)
    rep.functions_retyped = len(plan.funcs)
    for op, _, attr in plan.consts:
        op.attributes["value"] = attr
    rep.constants_narrowed = len(plan.consts)
    for op, spec in plan.fixups:
        assert spec.fixup is not None
        spec.fixup(op, ctx)


def check(plan: Plan) -> None:
    """The strict check of the rewritten module: raise
    :class:`~no64.errors.Remaining64BitError` if any value still holds a
    64-bit type.

    Every type is read again from the module -- op results, block
    arguments of every region and function signatures -- for every value
    of the walk the plan made (ops the pass inserts itself send it to
    :func:`~no64.transforms.scan.check`'s own walk instead).  A retyped value is
    compared with the type it was given, each distinct one of which is
    classified afresh; every other type is classified afresh.  No
    decision of the plan is trusted.
    """
    if any(spec.fixup_inserts for _, spec in plan.fixups):
        scan_check(plan.root, plan.keep)
        return
    # A fresh classifier: nothing the plan cached is used.
    holds = TypeConverter(plan.keep).holds_64bit
    # the distinct types the values were given (converted types are cached objects)
    given = [new for new in plan.converted.values() if new is not None and id(new) in plan.tally]
    if any(holds(new) for new in given):
        scan_check(plan.root, plan.keep)
    for value, _, new in plan.values:
        if value.type != new and holds(value.type):
            scan_check(plan.root, plan.keep)
    for op in plan.kept_ops:
        for t in op.results.types:
            if holds(t):
                scan_check(plan.root, plan.keep)
    for arg in plan.kept_args:
        if holds(arg.type):
            scan_check(plan.root, plan.keep)
    for op in plan.func_ops:
        if holds(ir.TypeAttr(op.attributes["function_type"]).value):
            scan_check(plan.root, plan.keep)


def finish(plan: Plan) -> int:
    """Erase the converts that became no-ops (after verification, so that
    a failed verification can still be undone); returns how many."""
    removed = 0
    for op in plan.converts:
        src = op.operands[0]
        res = op.results[0]
        if src.type == res.type:
            res.replace_all_uses_with(src)
            op.erase()
            removed += 1
    return removed


def drop_assumptions(plan: Plan) -> int:
    """Erase the identity ops that carry a range the program declared
    (:func:`no64.assume`), once the pass has read them; returns how many."""
    found = [op for op in plan.declaring if assumed_range(op.location) is not None]
    for op in found:
        for res, src in zip(op.results, op.operands):
            res.replace_all_uses_with(src)
        op.erase()
    return len(found)


def undo(plan: Plan) -> None:
    """Put back every type and attribute :func:`apply` changed (the module
    must not have been changed in any other way)."""
    for value, old, _ in plan.values:
        value.set_type(old)
    for op, old, _ in plan.funcs:
        op.attributes["function_type"] = ir.TypeAttr.get(old)
    for op, old_attr, _ in plan.consts:
        assert old_attr is not None, "a complex constant is restored from a backup"
        op.attributes["value"] = old_attr
