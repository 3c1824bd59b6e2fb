"""Exact rewrite rules for ops whose meaning depends on bit width.

The generic pass narrows types; it cannot narrow an op that looks at the
bits of a 64-bit value (shifts across the 32-bit boundary, bitcasts, random
bit generators, opaque custom calls).  A *rule* recognises one such op (or
the idiom around it) and replaces it with 32-bit operations that compute the
same values, before the generic pass runs.  Ops no rule handles are refused
by the pass with an error naming the op and its location.

A rule is a function ``rule(op, ctx) -> bool`` registered for one or more op
names with :func:`register`.  It is called for every op of that name that
has a 64-bit operand or result; it returns ``True`` when it rewrote the op
(the op may be erased), ``False`` when the op is not its business.  A rule
may leave 64-bit values behind as long as the generic pass can narrow them
exactly (plain arithmetic on values that fit in 32 bits); it may raise
:class:`~no64.errors.UnsupportedOpError` through ``ctx.refuse``.

Rules run on a module that the pass has backed up: if anything fails later,
the module is restored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..core._mlir import ir, stablehlo
from ..analysis.facts import defining_op
from ..core.locations import SourceLocation
from ..core.report import DemotionReport
from ..core.types import TypeConverter

__all__ = ["RuleContext", "Rule", "RULES", "register", "erase_dead", "splat"]


class RuleContext(Protocol):
    """What a rule may use from the pass."""

    conv: TypeConverter
    report: DemotionReport

    def where(self, op: ir.Operation) -> SourceLocation:
        """The op's location, decoded for people."""
        ...

    def refuse(self, op: ir.Operation, reason: str) -> None:
        """Raise :class:`~no64.errors.UnsupportedOpError` for ``op``."""
        ...


Rule = Callable[[ir.Operation, RuleContext], bool]

#: op name -> rules tried in registration order.
RULES: dict[str, list[Rule]] = {}


def register(*op_names: str) -> Callable[[Rule], Rule]:
    """Register a rule for the given op names."""

    def deco(fn: Rule) -> Rule:
        for name in op_names:
            RULES.setdefault(name, []).append(fn)
        return fn

    return deco


def splat(t: ir.RankedTensorType, value: int) -> ir.Value:
    """A constant of integer tensor type ``t`` with every element ``value``
    (built at the current insertion point)."""
    return stablehlo.ConstantOp(
        ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
    ).result


def erase_dead(op: ir.Operation | None) -> None:
    """Erase ``op`` if none of its results is used, then, transitively, the
    producers of its operands that became unused.  Ops with regions and
    ``func`` ops are left alone."""
    work = [op]
    while work:
        cur = work.pop()
        if cur is None or cur.name.startswith("func.") or len(cur.regions):
            continue
        if any(True for r in cur.results for _ in r.uses):
            continue
        producers = [defining_op(v) for v in cur.operands]
        cur.erase()
        work.extend(producers)


def _load_builtin_rules() -> None:
    from . import bits
    from . import custom_call
    from . import floats  # noqa: F401  (they register on import)
    from . import rng_bit_generator  # noqa: F401


_load_builtin_rules()
