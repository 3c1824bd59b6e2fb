"""The op registry: everything no64 knows about an op, declared in one place.

Each op no64 knows has one :class:`OpSpec`, declared in :mod:`no64.rules.ops`
(one entry per op).  The pass, the range analysis and the audit read only
this registry:

* how the op narrows: plainly (its types are retyped, the default), or --
  when its meaning depends on bit width -- through the exact ``rewrites``
  tried before retyping, a ``refuse`` check when none applied (it returns a
  :class:`~no64.spec.protocols.Refusal`, or ``None``, and raises nothing:
  the pass computes a refused op on words where its ``emulate`` rule can,
  and raises the refusal with the op's location otherwise), and a
  ``fixup`` run after retyping;
* what the range analysis knows: a ``transfer`` function giving one range
  per result, an ``arguments`` function for the arguments of its regions,
  and a ``fold`` function evaluating it on constant elements;
* how it is computed exactly in 32-bit words when one of its 64-bit values
  may not fit in 32 bits (``emulate``, see :mod:`no64.rules.wide`);
* how it computes on 16-bit integers carried in 32 bits, on a device
  without 16-bit integers (``widen``, and why it cannot where it cannot,
  ``widen_why_not``: see :mod:`no64.rules.widen_rules`);
* how it is computed exactly on a device whose datapath for its integer
  form is narrower, or that refuses that form (``legalize``, see
  :mod:`no64.rules.limbs`);
* what it does with a 64-bit sentinel in each operand (``sentinels``, a
  :class:`~no64.kinds.SentinelUse`): carries it unchanged (moving,
  selecting, ordering ops), compares it, or reads it as the 64-bit number
  it is (everything else, the default);
* what the audit tells the user about it (``hint``);
* its structural roles, which the pass, the analyses and the emulation
  steps read instead of op names: a function, a call, a terminator, a loop,
  branches, an op that owns its regions (a reduction's body), a constant, a
  convert, a pure op, an op whose results move operand 0's elements;
  ``computes`` names the computation analyses recognise (an addition, a
  compare, ...) and ``reduction`` how a reduction-like op's operands
  divide.

An op no entry knows gets :data:`UNKNOWN`: the full range of its types and
plain retyping.  Rules registered with :func:`register` (also after import)
join their op's entry, which makes the pass hand the op to them;
:func:`check_reachable` fails on a rule the pass would never hand its op
to (a rewrite of a constant, an emulation rule of a call, ...).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from ..ir._mlir import ir
from ..ir.locations import SourceLocation
from ..ir.types import TypeConverter
from ..kinds import OpForm, SentinelUse
from ..report import DemotionReport
from .protocols import (
    ArgTransfer,
    EmulateRule,
    Fold,
    LegalizeRule,
    PairRule,
    RangeQuery,
    Refusal,
    Transfer,
    UnfoldRule,
    WidenRule,
    WidenWhyNot,
)

__all__ = [
    "RuleContext",
    "Rule",
    "Check",
    "Refusal",
    "Computes",
    "Reduction",
    "OpSpec",
    "REGISTRY",
    "UNKNOWN",
    "declare",
    "register",
    "spec_of",
    "form_of",
    "names_where",
    "check_reachable",
    "unreachable",
    "SentinelUses",
]


class RuleContext(Protocol):
    """What a rule, check or fix-up may use from the pass."""

    conv: TypeConverter
    report: DemotionReport
    settings: Any  # no64.transforms.plan.Settings (float_pairs, the policies)

    def where(self, op: ir.Operation) -> SourceLocation:
        """The op's location, decoded for people."""
        ...

    def refuse(self, op: ir.Operation, reason: str) -> NoReturn:
        """Raise :class:`~no64.errors.UnsupportedOpError` for ``op``: for a
        rewrite rule that finds, part-way, that the op has no exact form (a
        refusal check returns a :class:`Refusal` instead)."""
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
#: ``check(op, ctx) -> Refusal | None``: why ``op`` cannot be narrowed
#: (``None``: it can); it raises nothing (see :class:`Refusal`).
Check = Callable[[ir.Operation, RuleContext], "Refusal | None"]


class Computes(enum.Enum):
    """What an op computes, for the analyses that recognise a computation
    (a loop counter's step, a sum's body, a float difference, a reduction's
    identity): elementwise on its operands unless said otherwise."""

    ADD = "add"
    SUBTRACT = "subtract"
    MULTIPLY = "multiply"
    DIVIDE = "divide"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    NEGATE = "negate"
    ABS = "abs"
    SQRT = "sqrt"
    AND = "and"
    OR = "or"
    XOR = "xor"
    #: Operand 0 shifted by operand 1's bits.
    SHIFT_LEFT = "shift_left"
    SHIFT_RIGHT_LOGICAL = "shift_right_logical"
    SHIFT_RIGHT_ARITHMETIC = "shift_right_arithmetic"
    #: ``comparison_direction`` between operands 0 and 1.
    COMPARE = "compare"
    #: Operand 0 (a predicate) picks operand 1's or operand 2's element.
    SELECT = "select"
    #: Its operands' elements, one after another along a dimension.
    CONCATENATE = "concatenate"
    #: Operand 0's elements with operand 1 (the padding value) around them.
    PAD = "pad"
    #: The indices along ``iota_dimension``.
    IOTA = "iota"
    #: Slices of operand 0 at the start indices operand 1 holds.
    GATHER = "gather"
    #: Operand 0's elements, in their row-major order, in another shape.
    RESHAPE = "reshape"
    #: Operand 0 with its dimensions in the order ``permutation`` gives.
    TRANSPOSE = "transpose"


class Reduction(enum.Enum):
    """How a reduction-like op's operands divide (its region is the
    combining body, its results the combined values)."""

    #: ``n`` inputs, then ``n`` initial values (reduce, reduce_window).
    INPUTS_INITS = "inputs, inits"
    #: ``n`` inputs (also the initial values), the indices, ``n`` updates
    #: combined into them (scatter).
    SCATTER = "inputs, indices, updates"
    #: One operand per result, combined across replicas (all_reduce, ...).
    REPLICAS = "across replicas"


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
    #: Whether ``fixup`` inserts ops (the pass then backs the module up
    #: first, since its undo log takes back retyping only); one that only
    #: sets an attribute does not.
    fixup_inserts: bool = True
    #: What the op does with a 64-bit sentinel in each operand (see
    #: :class:`~no64.kinds.SentinelUse`): an op not declared otherwise reads
    #: it as the 64-bit number it is.
    sentinels: SentinelUses = SentinelUse.READS
    hint: str | None = None
    #: Its exact meaning on 64-bit integers carried as 32-bit word pairs.
    emulate: "EmulateRule | None" = None
    #: Whether ``emulate`` computes this op (``applies(op)``; none: every
    #: op of this name), and why not where it does not (``why_not(op)``).
    emulate_applies: "Callable[[ir.Operation], bool] | None" = None
    emulate_why_not: "Callable[[ir.Operation], str] | None" = None
    #: Its meaning on 64-bit floats carried as pairs of f32
    #: (``float_policy="pairs"``, see :mod:`no64.rules.pair_rules`).
    pairs: "PairRule | None" = None
    #: Its meaning on 16-bit integers carried as 32-bit ones, on a device
    #: without 16-bit integers (see :mod:`no64.rules.widen_rules`): the op
    #: retyped in place, with what keeps its 16-bit wrap-around.
    widen: "WidenRule | None" = None
    #: Why the widening cannot carry this op's 16-bit integers in 32 bits
    #: (``why_not(op, wd)``, ``None`` where ``widen`` computes it); an op
    #: with neither is refused as one no64 does not know.
    widen_why_not: "WidenWhyNot | None" = None
    #: The op never has regions (lets walks skip looking for them).
    region_free: bool = False
    # Structural roles the pass, the analyses and the emulation steps need.
    #: A constant whose ``value`` attribute holds its result.
    constant: bool = False
    #: An elementwise conversion of its operand to the result's element type.
    convert: bool = False
    #: A call of the function its ``callee`` attribute names: its operands
    #: are the callee's arguments, its results what the callee returns.
    call: bool = False
    #: Calls a routine outside the module by its ``call_target_name`` (a
    #: library function the pass cannot look into).
    external: bool = False
    #: A function: a symbol (``sym_name``) with a signature
    #: (``function_type``) and a body (region 0).
    function: bool = False
    #: Ends a block: hands its operands to the op whose region it ends (the
    #: results of a loop, a branch, a reduction's body) or, in a function,
    #: to its callers.
    terminator: bool = False
    #: A loop: region 0 the condition, region 1 the body; its results, both
    #: regions' arguments and the body's returned values are one carried
    #: state, started by its operands.
    loop: bool = False
    #: Branches: each region is one branch whose returned values are the
    #: results.
    branches: bool = False
    #: Its regions are bodies it applies (a combiner, a comparator), which
    #: its rules rebuild whole; the values in them are not the program's.
    owns_regions: bool = False
    #: No side effect: it may be erased once nothing reads its results (the
    #: emulation step erases such ops it left unread; an op not declared
    #: pure is kept).
    pure: bool = False
    #: Its result's elements are operand 0's (rearranged, repeated or dropped).
    moves: bool = False
    #: What it computes, for the analyses that recognise it (see :class:`Computes`).
    computes: Computes | None = None
    #: How a reduction-like op's operands divide (see :class:`Reduction`).
    reduction: Reduction | None = None
    #: Its form, for the devices that refuse it or compute it on a narrower
    #: datapath (:class:`~no64.kinds.OpForm`, :mod:`no64.targets`); a
    #: function of the op where ops of one name have several (a
    #: ``custom_call`` is the routine it calls: see :func:`form_of`).
    form: "OpForm | Callable[[ir.Operation], OpForm | None] | None" = None
    #: Its exact form on a device that computes its integer form on a
    #: narrower datapath or refuses it (an integer ``dot_general`` split
    #: into limb dots: :mod:`no64.transforms.legalize`).
    legalize: "LegalizeRule | None" = None
    #: Its form without its several inputs, on a device that refuses it for
    #: them (a variadic ``reduce`` as its body on halves; a ``reduce_window``
    #: of several operands as its body over the window's slices), or without
    #: the comparisons a device refuses in its comparator (a ``sort``'s
    #: ``EQ``/``NE`` as ``LE`` and ``GE``): :mod:`no64.rules.unfold`; or its
    #: results from other ops where a device refuses the op itself
    #: (``reduce_precision`` on its bits: :mod:`no64.rules.rounding`); applied
    #: by :mod:`no64.transforms.legalize`.
    unfold: "UnfoldRule | None" = None
    #: Applies to each element of its operands alone, whatever their shape
    #: (its attributes do not depend on it): a body made of such ops can run
    #: on whole tensors (:mod:`no64.rules.unfold`); a predicate where only
    #: some of its ops do (see :func:`elementwise`).
    elementwise: "bool | Callable[[ir.Operation], bool]" = False
    #: An identity that may carry a range the program declares
    #: (:func:`no64.assume`'s name scope, see :mod:`no64.ir.locations`):
    #: the pass reads it and erases the op.
    declares_range: bool = False
    #: On floats: gives the same result in f32 and float64 where an operand
    #: is ``finfo(float64).max`` mapped to f32's (``exp(-max)`` is 0 in both).
    saturates: bool = False
    #: On floats: can give a result beyond f32's exponent range from
    #: operands well within it otherwise than as a product or quotient of
    #: two values (``exp``, ``power``, ``cosh``, a dot): under
    #: ``float_policy="pairs"`` it is named where its operands are not known
    #: to be small (:mod:`no64.analysis.pair_range`).
    amplifies: bool = False

    def sentinel_use(self, op: ir.Operation, i: int) -> SentinelUse:
        """What ``op`` does with a sentinel in its operand ``i``."""
        uses = self.sentinels
        if isinstance(uses, SentinelUse):
            return uses
        if isinstance(uses, tuple):
            return uses[i] if i < len(uses) else SentinelUse.READS
        return uses(op, i)

    def can_emulate(self, op: ir.Operation) -> bool:
        """Whether the emulation rule computes ``op`` on words."""
        return self.emulate is not None and (self.emulate_applies is None or self.emulate_applies(op))

    @property
    def ties(self) -> bool:
        """It joins carried values: a loop's state, a branch's results, a
        callee's arguments and results (the emulation steps carry them packed)."""
        return self.call or self.loop or self.branches

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


def names_where(has: Callable[[OpSpec], bool]) -> frozenset[str]:
    """The names of the ops whose entry ``has`` (read when called: rules
    may join the table at any time)."""
    return frozenset(name for name, spec in REGISTRY.items() if has(spec))


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


def form_of(op: ir.Operation) -> OpForm | None:
    """The form of ``op`` (its op table entry's ``form``)."""
    f = spec_of(op.name).form
    return f(op) if callable(f) else f


def elementwise(op: ir.Operation) -> bool:
    """Whether ``op`` applies to each element of its operands alone (its
    op table entry's ``elementwise``)."""
    e = spec_of(op.name).elementwise
    return e(op) if callable(e) else e


def unreachable(spec: OpSpec) -> list[str]:
    """The functions of ``spec`` that no step would ever call, each with why."""
    out = []
    if spec.constant and (spec.rewrites or spec.refuse or spec.fixup):
        out.append("its rewrites, refusal check or fix-up: the pass plans a constant itself and hands it "
                   "to no rule")
    carried = spec.ties or spec.terminator or spec.function
    if carried and spec.emulate is not None:
        out.append("its emulation rule: the emulation step hands an op that carries values across a "
                   "region or call boundary packed words, and calls no rule for it")
    if carried and spec.pairs is not None:
        out.append("its float-pair rule: the pair step hands an op that carries values across a "
                   "region or call boundary packed pairs, and calls no rule for it")
    if carried and spec.widen is not None:
        out.append("its widening rule: the widening hands an op that carries values across a region or "
                   "call boundary its 32-bit values, and calls no rule for it")
    if spec.emulate is None and (spec.emulate_applies is not None or spec.emulate_why_not is not None):
        out.append("when its emulation rule applies: it has none")
    if spec.legalize is not None and spec.form is None:
        out.append("its legalization for a target: it has no form a target names")
    if spec.unfold is not None and spec.form is None:
        out.append("its unfolding for a target: it has no form a target names")
    if spec.region_free and spec.arguments is not None:
        out.append("its region arguments' ranges: it has no regions")
    return out


def check_reachable() -> None:
    """Raise ``AssertionError`` if an entry names another op, or holds a
    rule, check or fix-up no step would ever call (see :func:`unreachable`)."""
    for name, spec in REGISTRY.items():
        if spec.name != name:
            raise AssertionError(f"registry entry {name!r} names {spec.name!r}")
        never = unreachable(spec)
        if never:
            raise AssertionError(f"{name}: " + "; ".join(never) + " would never run")
