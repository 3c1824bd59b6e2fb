"""The op registry: everything no64 knows about an op, declared in one place.

Each op no64 knows has one :class:`OpSpec`, declared in :mod:`no64.rules.ops`
(one entry per op).  The pass, the range analysis and the audit read only
this registry:

* how the op narrows: plainly (its types are retyped, the default), or --
  when its meaning depends on bit width -- through the exact ``rewrites``
  tried before retyping, a ``refuse`` check when none applied, and a
  ``fixup`` run after retyping;
* what the range analysis knows: a ``transfer`` function giving one range
  per result, an ``arguments`` function for the arguments of its regions,
  and a ``fold`` function evaluating it on constant elements;
* how it is computed exactly in 32-bit words when one of its 64-bit values
  may not fit in 32 bits (``emulate``, see :mod:`no64.rules.wide`);
* what it does with a 64-bit sentinel in each operand (``sentinels``, a
  :class:`~no64.kinds.SentinelUse`): carries it unchanged (moving,
  selecting, ordering ops), compares it, or reads it as the 64-bit number
  it is (everything else, the default);
* what the audit tells the user about it (``hint``).

An op no entry knows gets :data:`UNKNOWN`: the full range of its types and
plain retyping.  Rules registered with :func:`register` (also after import)
join their op's entry, which makes the pass hand the op to them: a
registered rule is always reachable (:func:`check_reachable`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from ..core._mlir import ir
from ..core.locations import SourceLocation
from ..core.report import DemotionReport
from ..core.types import TypeConverter
from ..kinds import SentinelUse
from .protocols import ArgTransfer, EmulateRule, Fold, RangeQuery, Transfer

__all__ = [
    "RuleContext",
    "Rule",
    "Check",
    "OpSpec",
    "REGISTRY",
    "UNKNOWN",
    "declare",
    "register",
    "emulates",
    "spec_of",
    "check_reachable",
    "SentinelUses",
]


class RuleContext(Protocol):
    """What a rule, check or fix-up may use from the pass."""

    conv: TypeConverter
    report: DemotionReport

    def where(self, op: ir.Operation) -> SourceLocation:
        """The op's location, decoded for people."""
        ...

    def refuse(self, op: ir.Operation, reason: str) -> None:
        """Raise :class:`~no64.errors.UnsupportedOpError` for ``op``."""
        ...

    def ranges(self) -> RangeQuery:
        """A range analysis of the module as it is now."""
        ...

    def input_ranges_32(self) -> RangeQuery:
        """A range analysis of the module as it is now, with the entry
        function's 64-bit integer inputs taken as 32-bit values (as the
        host narrows and checks them); under ``policy="exact"``, whose
        inputs enter whole (as words where they may not fit), the same
        as :meth:`ranges`."""
        ...


#: What an op does with a sentinel in each operand: one use for all operands,
#: one per leading operand (the others ``READS``), or ``f(op, i)``.
SentinelUses = SentinelUse | tuple[SentinelUse, ...] | Callable[[ir.Operation, int], SentinelUse]

#: ``rule(op, ctx) -> bool``: rewrite ``op`` exactly (True) or leave it (False).
Rule = Callable[[ir.Operation, RuleContext], bool]
#: ``check(op, ctx)``: raise (through ``ctx.refuse``) if ``op`` cannot be narrowed.
Check = Callable[[ir.Operation, RuleContext], None]


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """What no64 knows about one op (see the module docstring)."""

    name: str
    transfer: "Transfer | None" = None
    arguments: "ArgTransfer | None" = None
    fold: "Fold | None" = None
    rewrites: tuple[Rule, ...] = ()
    refuse: Check | None = None
    fixup: Rule | None = None
    #: What the op does with a 64-bit sentinel in each operand (see
    #: :class:`~no64.kinds.SentinelUse`): an op not declared otherwise reads
    #: it as the 64-bit number it is.
    sentinels: SentinelUses = SentinelUse.READS
    hint: str | None = None
    #: Its exact meaning on 64-bit integers carried as 32-bit word pairs.
    emulate: "EmulateRule | None" = None
    #: The op never has regions (lets walks skip looking for them).
    region_free: bool = False
    #: Structural roles the pass needs: a constant whose ``value`` attribute
    #: holds its result, a convert, a call.
    constant: bool = False
    convert: bool = False
    call: bool = False

    def sentinel_use(self, op: ir.Operation, i: int) -> SentinelUse:
        """What ``op`` does with a sentinel in its operand ``i``."""
        uses = self.sentinels
        if isinstance(uses, SentinelUse):
            return uses
        if isinstance(uses, tuple):
            return uses[i] if i < len(uses) else SentinelUse.READS
        return uses(op, i)

    @property
    def width_dependent(self) -> bool:
        """The op's meaning depends on bit width: the pass hands it to its
        rewrites, refusal check and fix-up whenever it touches a 64-bit type."""
        return bool(self.rewrites or self.refuse or self.fixup)


#: op name -> its entry.
REGISTRY: dict[str, OpSpec] = {}

#: The entry of an op no entry knows: full ranges, plain retyping.
UNKNOWN = OpSpec(name="")


def spec_of(name: str) -> OpSpec:
    """The entry for op ``name`` (:data:`UNKNOWN` if there is none)."""
    return REGISTRY.get(name, UNKNOWN)


def declare(name: str, **fields: Any) -> OpSpec:
    """Declare op ``name`` with the given :class:`OpSpec` fields (once per op)."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is declared twice")
    spec = REGISTRY[name] = OpSpec(name=name, **fields)
    return spec


def register(*op_names: str) -> Callable[[Rule], Rule]:
    """Register an exact rewrite rule for the given op names.

    The rule is tried (in registration order) for every op of those names
    that has a 64-bit operand or result, before retyping.
    """

    def deco(fn: Rule) -> Rule:
        for name in op_names:
            spec = REGISTRY.get(name) or OpSpec(name=name)
            REGISTRY[name] = dataclasses.replace(spec, rewrites=spec.rewrites + (fn,))
        return fn

    return deco


def emulates(*op_names: str) -> Callable[["EmulateRule"], "EmulateRule"]:
    """Register the emulation rule of the given ops (one per op)."""

    def deco(fn: "EmulateRule") -> "EmulateRule":
        for name in op_names:
            spec = REGISTRY.get(name) or OpSpec(name=name)
            if spec.emulate is not None:
                raise ValueError(f"op {name!r} has two emulation rules")
            REGISTRY[name] = dataclasses.replace(spec, emulate=fn)
        return fn

    return deco


def check_reachable() -> None:
    """Raise ``AssertionError`` if a rule, check or fix-up is registered for
    an op the pass would not hand it to."""
    for name, spec in REGISTRY.items():
        if (spec.rewrites or spec.refuse or spec.fixup) and not spec.width_dependent:
            raise AssertionError(f"rules registered for {name} would never run")
        if spec.name != name:
            raise AssertionError(f"registry entry {name!r} names {spec.name!r}")
