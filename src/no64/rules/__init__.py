"""The op registry and the rules for ops whose meaning depends on bit width.

The generic pass narrows types; it cannot narrow an op that looks at the
bits of a 64-bit value (shifts across the 32-bit boundary, bitcasts, random
bit generators, opaque custom calls).  What no64 knows about every op lives
in one registry (:mod:`no64.spec.registry`), filled by one table
(:mod:`no64.rules.ops`): how the op narrows, its range transfer function and
what the audit says about it.

A *rule* is a function ``rule(op, ctx) -> bool``.  It is called for every op
of its name that has a 64-bit operand or result, before retyping; it returns
``True`` when it rewrote the op (the op may be erased), ``False`` when the
op is not its business.  A rule may leave 64-bit values behind as long as
the generic pass can narrow them exactly; it may raise
:class:`~no64.errors.UnsupportedOpError` through ``ctx.refuse`` where it
finds, part-way, that the op has no exact form.  A *check* (an op's
``refuse``) is ``check(op, ctx) -> Refusal | None``: it says why an op no
rule rewrote cannot be narrowed, and raises nothing -- the pass decides
(computing the op on words where it can, else raising with its location).
Built-in rules are listed in the table; :func:`register` adds one for any op.

Rules run on a module that the pass has backed up: if anything fails later,
the module is restored.

The schema lives below the rules, in :mod:`no64.spec`, so that the range
analysis can look ops up; this package re-exports its public names, and the
package's face (``no64/__init__.py``) loads the table.
"""

from __future__ import annotations

from ..spec.registry import (
    REGISTRY,
    UNKNOWN,
    Check,
    OpSpec,
    Refusal,
    Rule,
    RuleContext,
    check_reachable,
    register,
    spec_of,
)
from ..spec.util import erase_dead, splat

__all__ = [
    "REGISTRY",
    "UNKNOWN",
    "Check",
    "OpSpec",
    "Refusal",
    "Rule",
    "RuleContext",
    "check_reachable",
    "erase_dead",
    "register",
    "spec_of",
    "splat",
]
