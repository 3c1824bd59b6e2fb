"""The demotion pass's plan: what it decided for a module, before anything changes.

:class:`Planner` walks every op of every function and region once and fills
a :class:`Plan` -- the values to retype, the constants to narrow (with their
narrowed attributes, the sentinel rules and the integer policy applied), the
``func.func`` signatures to change, the ops that need an exact rewrite or a
fix-up -- and then judges the plan: every narrowed value gets a verdict from
the range analysis, and the values a policy refuses are refused, before the
module is touched.  It also plans the emulation step (which values are
computed as 32-bit word pairs, :mod:`no64.transforms.emulate`).

The planner is what rules, checks and fix-ups see of the pass
(:class:`~no64.spec.registry.RuleContext`).  A refusal check and the
planning of a constant return a :class:`~no64.spec.registry.Refusal`
instead of raising; the planner alone decides what becomes of it -- the op
computed on words, the constant's use rewritten by a rule, or the refusal
raised with the op's location.  :mod:`no64.transforms.rewrite` applies a
plan, and :mod:`no64.transforms.demote` drives both.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NoReturn

from ..analysis.ranges import RangeAnalysis, entry_function, resolve_input_ranges
from ..analysis.sentinels import sentinel_names, sentinel_readings
from ..errors import NarrowingError
from ..ir._compat import block_argument, op_result
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.locations import SourceLocation, decode_location
from ..ir.types import TypeConverter
from ..kinds import (
    ElementKind,
    EventKind,
    FloatPolicy,
    IntegerPolicy,
    OpForm,
    Outputs,
    RangePolicy,
    SentinelUse,
    Verdict,
)
from ..options import Options
from ..report import DemotionReport, Narrowing
from ..spec.intervals import Range, collides, sentinel_collision
from ..spec.registry import REGISTRY, Computes, OpSpec, Refusal, spec_of
from .constant_plan import ConstantNarrowing
from .emulate import emulation_for, exact_input_ranges
from .emulation_plan import WordsRefused, WordsRequest, plan_words
from .scan import all_ops

__all__ = ["Settings", "Plan", "Planner"]

#: Event kinds that are also the verdict of the constant they narrowed.
_CONSTANT_VERDICTS = frozenset({EventKind.SENTINEL, EventKind.SATURATED, EventKind.WRAPPED})

_MISS = object()

# What the plan's walk needs to know of an op, as bits (read once per op).
_CONSTANT, _CONVERT, _CALL, _INSPECT, _REGION_FREE, _FUNCTION, _DECLARES = 1, 2, 4, 8, 16, 32, 64


def _roles() -> dict[str, int]:
    """The registry's entries as role bits (made per pass: rules may be
    registered at any time)."""
    out = {}
    for name, spec in REGISTRY.items():
        out[name] = (
            (_CONSTANT if spec.constant else 0)
            | (_CONVERT if spec.convert else 0)
            | (_CALL if spec.call else 0)
            | (_INSPECT if spec.width_dependent else 0)
            | (_REGION_FREE if spec.region_free else 0)
            | (_FUNCTION if spec.function else 0)
            | (_DECLARES if spec.declares_range else 0)
        )
    return out


@dataclass(frozen=True)
class Settings:
    """What the caller of the pass asked for, as the planner uses it."""

    integer_policy: IntegerPolicy
    range_policy: RangePolicy = RangePolicy.DEFAULT
    #: Declared ranges of the entry function's integer inputs.
    input_ranges: Mapping[int | str, tuple[int, int]] | None = None
    #: The entry function's 64-bit integer inputs not proven to fit enter
    #: as words (policy "exact", outputs "words").
    words_in: bool = False
    #: Positions of entry inputs taken as 32-bit values without a declared
    #: range (policy "exact", outputs "narrow"): unproven.
    assumed_inputs: frozenset[int] = frozenset()
    #: float64 is computed as pairs of f32 (``float_policy="pairs"``): the
    #: rules keep float64 values float64, for the pair pass that follows.
    float_pairs: bool = False
    #: 64-bit element types the device has natively (a target's profile):
    #: kept as they are (:class:`~no64.ir.types.TypeConverter`).
    keep: frozenset[str] = frozenset()
    #: Op forms the device refuses with several inputs (a target's
    #: profile): the word emulation writes sums there as sums of one input.
    one_input: frozenset[OpForm] = frozenset()

    @classmethod
    def of(cls, options: Options, root: ir.Operation) -> "Settings":
        """The planner's view of ``options`` for the module ``root``.

        Under ``policy="exact"`` with ``outputs="words"`` the 64-bit integer
        inputs not proven to fit enter as words; with other ``outputs`` they
        are 32-bit values (the runtime fixes the types): the analysis takes
        them so, and each without a declared range is unproven
        (:meth:`Planner.judge_assumed_inputs`).  Declared ranges are looked
        up by position there, once."""
        exact = options.policy is RangePolicy.EXACT
        words_in = exact and options.outputs is Outputs.WORDS
        declared = options.declared_ranges
        ranges: Mapping[int | str, tuple[int, int]] | None = declared
        assumed: frozenset[int] = frozenset()
        if exact and not words_in:
            ranges = exact_input_ranges(root, declared)
            given = resolve_input_ranges(root, declared) if declared else {}
            # (by position: exact_input_ranges resolved the names)
            assumed = frozenset(i for i in ranges if isinstance(i, int) and i not in given)
        elif words_in and declared:
            ranges = dict(resolve_input_ranges(root, declared).items())
        return cls(options.integer_policy, options.policy, ranges, words_in=words_in, assumed_inputs=assumed,
                   float_pairs=options.float_policy is FloatPolicy.PAIRS, keep=options.native,
                   one_input=_one_input(options))


def _one_input(options: Options) -> frozenset[OpForm]:
    t = options.target
    if t is None:
        return frozenset()
    return frozenset(f for f in (OpForm.REDUCE, OpForm.REDUCE_WINDOW) if t.refuses_several_inputs(f))


@dataclass(eq=False)
class Plan:
    """What the pass decided for the module as it is now.

    ``values``, ``funcs`` and ``consts`` are what the rewrite changes, each
    with what it was (the undo log): (value, old type, new type), (func, old
    type, new type), (constant, old attribute, new attribute).
    """

    root: ir.Operation
    #: The converted type of every type the walk met (``None``: kept);
    #: converted types are cached objects, one per distinct type.
    converted: Mapping[ir.Type, ir.Type | None]
    #: The 64-bit element types kept as they are (:attr:`Settings.keep`).
    keep: frozenset[str] = frozenset()
    values: list[tuple[ir.Value, ir.Type, ir.Type]] = field(default_factory=list)
    funcs: list[tuple[ir.Operation, ir.Type, ir.Type]] = field(default_factory=list)
    consts: list[tuple[ir.Operation, ir.Attribute | None, ir.Attribute]] = field(default_factory=list)
    #: Set when the rewrite will do something the undo log cannot take back.
    needs_backup: bool = False
    converts: list[ir.Operation] = field(default_factory=list)
    #: Identity ops that may carry a range the program declares (no64.assume).
    declaring: list[ir.Operation] = field(default_factory=list)
    calls: list[ir.Operation] = field(default_factory=list)
    #: Width-dependent ops fixed up after retyping.
    fixups: list[tuple[ir.Operation, OpSpec]] = field(default_factory=list)
    # For the strict check: ops with a result the plan keeps as it is,
    # block arguments it keeps as they are, and functions.
    kept_ops: list[ir.Operation] = field(default_factory=list)
    kept_args: list[ir.BlockArgument] = field(default_factory=list)
    func_ops: list[ir.Operation] = field(default_factory=list)
    #: Width-dependent ops for their exact rewrite rules.
    candidates: list[ir.Operation] = field(default_factory=list)
    #: Out-of-range constants, refused once rules and emulation have had their say.
    deferred: list[tuple[ir.Operation, Refusal]] = field(default_factory=list)
    #: Width-dependent ops no rule rewrote, checked once rules have run.
    pending: list[ir.Operation] = field(default_factory=list)
    #: Constants narrowed as sentinels (or saturated, wrapped), with that verdict.
    sentinel_values: dict[ir.Value, Verdict] = field(default_factory=dict)
    float_exact: int = 0
    float_overflow: int = 0
    #: Values per converted type (by identity), counted by the judgement.
    tally: collections.Counter[int] = field(default_factory=collections.Counter)



def collision_only(r: Range, t: ir.Type) -> bool:
    """Whether a value of type ``t`` and range ``r`` is unproven only because
    a sentinel it may hold meets ordinary values that fit 32 bits
    (:attr:`no64.report.Narrowing.collision`)."""
    e = t.element_type if isinstance(t, ir.ShapedType) else t
    return isinstance(e, ir.IntegerType) and sentinel_collision(r, e.is_unsigned)


def _in_reduction(op: ir.Operation) -> bool:
    """Whether ``op`` lies in the body of a reduction (its ``select`` picks an
    accumulator, as an ``argmin``'s does)."""
    parent = op.parent
    while parent is not None:
        spec = spec_of(parent.name)
        if spec.reduction is not None:
            return True
        if spec.function:
            return False
        parent = parent.parent
    return False

class Planner:
    """Plans the pass over ``root`` (see :meth:`walk`, :meth:`judge`,
    :meth:`emulation`); what rules, checks and fix-ups use of the pass."""

    def __init__(
        self,
        root: ir.Operation,
        settings: Settings,
        *,
        report: DemotionReport | None = None,
        known_ranges: Mapping[ir.Value, Any] | None = None,
        rules_enabled: bool = True,
    ) -> None:
        self.root = root
        self.settings = settings
        self.conv = TypeConverter(settings.keep)
        self.report = report if report is not None else DemotionReport(integer_policy=settings.integer_policy)
        self.plan = Plan(root, self.conv._cache, keep=settings.keep)
        #: Ranges established before the module was rewritten (the values
        #: that stand for emulated results proven to fit).
        self.known_ranges: Mapping[ir.Value, Any] = known_ranges if known_ranges is not None else {}
        self.rules_enabled = rules_enabled
        self._ranges: RangeAnalysis | None = None
        #: The constants' narrowing (each distinct attribute once).
        self.constants = ConstantNarrowing(root, settings.integer_policy, self.refuse)

    def replan(self, settle: bool = True) -> "Planner":
        """A fresh plan of the rewritten module; rules are not run again."""
        p = Planner(self.root, self.settings, report=self.report, known_ranges=self.known_ranges,
                    rules_enabled=False)
        p.walk(settle=settle)
        return p

    def emulation(self, everything: bool, words_out: bool = True) -> Any:
        """Plan the emulation step (:mod:`no64.transforms.emulate`): the ops the
        pass would refuse for want of a 32-bit form (when they have an
        emulation rule) and their values, the users of out-of-range constants, and --
        if ``everything`` -- every value not proven to fit."""
        forced: list[ir.Value] = []
        forced_ops: list[ir.Operation] = []
        for op in self.plan.pending:
            spec = REGISTRY[op.name]
            refusal = self._check(op, spec)
            if refusal is None:
                continue
            if refusal.out_of_range or not spec.can_emulate(op):
                self.raise_refusal(op, refusal)
            forced.extend(r for r in op.results)
            forced_ops.append(op)
        constants = {op.results[0]: WordsRefused(op.name, self.where(op), refusal)
                     for op, refusal in self.plan.deferred}
        # ops that read a sentinel as the 64-bit number it is
        readers = self._sentinel_readers()
        if not (forced or forced_ops or constants or readers) and (not everything or self._all_integers_fit()):
            return None
        # An emulated op reads no value that may be wrong in 32 bits: a value
        # not proven to fit is emulated too (under "exact" it is anyway).
        # Where some value computed from a sentinel, or not proven to fit,
        # reaches an op with no rule on words, less is emulated: those values
        # are left to the narrowed program, and the readers judged unproven
        # (see _sentinel_meetings).
        # Each attempt asks for less; an attempt refused says why, and only
        # the last refusal (or one that asking for less cannot help) is raised.
        base = WordsRequest(everything=everything, forced_values=tuple(forced), forced_ops=tuple(forced_ops),
                            forced_users=constants, words_out=words_out, words_in=self.settings.words_in)
        attempts = [dataclasses.replace(base, sentinel_readers=tuple(readers), pull_unproven=not everything)]
        if not everything:
            attempts += [dataclasses.replace(base, sentinel_readers=tuple(readers))] if readers else []
            attempts.append(base)
        for request in attempts[:-1]:
            result = plan_words(self.root, self.ranges(), request)
            if not isinstance(result, WordsRefused):
                return emulation_for(result, self.settings.one_input)
            if result.final:
                raise result.error
        last = plan_words(self.root, self.ranges(), attempts[-1])
        if isinstance(last, WordsRefused):
            raise last.error
        return emulation_for(last, self.settings.one_input)

    def _all_integers_fit(self) -> bool:
        """Whether every 64-bit integer value the plan retypes (the entry
        function's arguments aside where they are 32-bit values, as under
        ``outputs="narrow"``) is proven to fit: then policy "exact" has
        nothing to emulate."""
        ranges = self.ranges()
        entry = entry_function(self.root)
        entry_block = entry.regions[0].blocks[0] if entry is not None and not self.settings.words_in else None
        # converted types are cached objects: the integer ones, by identity
        ints = {id(new) for new in self.plan.converted.values()
                if new is not None and _kind_of(new).integer}
        for value, _, new in self.plan.values:
            if id(new) not in ints:
                continue
            arg = block_argument(value)
            if entry_block is not None and arg is not None and arg.owner == entry_block:
                continue
            if ranges.verdict(value)[0] is not Verdict.EXACT:
                return False
        return True

    def settle(self) -> None:
        """Raise what planning put off: the first refusal of a width-dependent
        op no rule rewrote, else of an out-of-range constant; plan the
        fix-ups of the others."""
        for op in self.plan.pending:
            spec = REGISTRY[op.name]
            refusal = self._check(op, spec)
            if refusal is not None:
                self.raise_refusal(op, refusal)
            if spec.fixup is not None:
                self.plan.fixups.append((op, spec))
                if spec.fixup_inserts:
                    self.plan.needs_backup = True
        if self.plan.deferred:
            self.raise_refusal(*self.plan.deferred[0])


    # ------------------------------------------------------------------ plan
    def walk(self, settle: bool = True) -> None:
        # The hot loop of the pass: every op of the module goes through it,
        # so it reads each op's name and result types once and touches
        # nothing else unless a type or the op name calls for it.
        convert = self.conv.convert
        cache = self.plan.converted
        miss = _MISS
        values = self.plan.values
        append = values.append
        roles = _roles()
        context = self.root.context
        registered: dict[str, bool] = {}
        kept = self.plan.kept_ops.append
        kept_arg = self.plan.kept_args.append

        def retyped(v: ir.Value) -> bool:
            """Whether ``v``'s type holds a 64-bit element: then planned
            (value, old type, new type)."""
            t = v.type
            new = cache.get(t, miss)
            if new is miss:
                new = convert(t)
            if new is None:
                return False
            append((v, t, new))
            return True

        for op in all_ops(self.root):
            name = op.name
            any64 = False
            results = op.results
            if len(results) == 1:
                if retyped(results[0]):
                    any64 = True
                else:
                    kept(op)
            elif results:
                for r in results:
                    if retyped(r):
                        any64 = True
                kept(op)  # (re-read whole by the strict check)
            role = roles.get(name, 0)
            if role & _CONSTANT:
                if any64:
                    _, t, new = values[-1]  # (a constant has one result)
                    refusal = self._plan_constant(op, t, new)
                    if refusal is not None:
                        # A rule may still remove the constant's use (e.g. a
                        # low-word mask), or emulation take it; decide once
                        # they have run.
                        if settle and not self.rules_enabled:
                            self.raise_refusal(op, refusal)
                        self.plan.deferred.append((op, refusal))
                continue
            if role & _CONVERT:
                self.plan.converts.append(op)
            elif role & _CALL:
                self.plan.calls.append(op)
            if role & _INSPECT:
                reads64 = any64
                if not reads64:
                    for v in op.operands:
                        vt = v.type
                        c = cache.get(vt, miss)
                        if c is miss:
                            c = convert(vt)
                        if c is not None:
                            reads64 = True
                            break
                if reads64:
                    spec = REGISTRY[name]
                    if spec.width_dependent:
                        self._sensitive(op, spec)
            if role & _DECLARES:
                self.plan.declaring.append(op)
            if role & _REGION_FREE:
                continue
            if role & _FUNCTION:
                self.plan.func_ops.append(op)
                ft = ir.TypeAttr(op.attributes["function_type"]).value
                new = convert(ft)
                if new is not None:
                    self.plan.funcs.append((op, ft, new))
            known: bool | None = True
            if not role:
                known = registered.get(name)
                if known is None:
                    known = registered[name] = context.is_registered_operation(name)
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.arguments:
                        if retyped(arg):
                            any64 = True
                        else:
                            kept_arg(arg)
            if not known and (any64 or any(convert(v.type) is not None for v in op.operands)):
                # An op of a dialect the context does not know (parsed with
                # allow_unregistered_dialects): no rule can say what its
                # 64-bit types mean.  load() refuses such ops at parse time.
                self.refuse(
                    op,
                    "no64 does not know this op (its dialect is not registered), so it cannot "
                    "tell whether narrowing its 64-bit types keeps its meaning",
                )
        if settle and not self.plan.candidates:
            # Nothing will change the module: settle what was put off.
            self.settle()

    def _sensitive(self, op: ir.Operation, spec: OpSpec) -> None:
        """A width-dependent op with 64-bit types: a candidate for its rules,
        or checked by :meth:`settle` (or handed to the emulation step) --
        after the rules have run, since a rule may remove it as part of an
        idiom."""
        if self.rules_enabled and spec.rewrites:
            self.plan.candidates.append(op)
        else:
            self.plan.pending.append(op)

    def where(self, op: ir.Operation) -> SourceLocation:
        return decode_location(op.location)

    def refuse(self, op: ir.Operation, reason: str) -> NoReturn:
        self.raise_refusal(op, Refusal(reason))

    def raise_refusal(self, op: ir.Operation, refusal: Refusal) -> NoReturn:
        """Refuse ``op``: raise ``refusal`` with the op's name and location."""
        raise refusal.error(op.name, self.where(op))

    def _check(self, op: ir.Operation, spec: OpSpec) -> Refusal | None:
        """Why the width-dependent ``op`` no rule rewrote cannot be narrowed
        (its op table entry's ``refuse`` check), or ``None``."""
        return spec.refuse(op, self) if spec.refuse is not None else None

    def ranges(self) -> RangeAnalysis:
        """A range analysis of the module as it is now: a fresh one while
        rules may still change the module, one shared analysis after."""
        if self.plan.candidates:
            return RangeAnalysis(self.root, self.settings.input_ranges, known=self.known_ranges)
        if self._ranges is None:
            self._ranges = RangeAnalysis(self.root, self.settings.input_ranges, calls=self.plan.calls,
                                         known=self.known_ranges)
        return self._ranges

    def input_ranges_32(self) -> RangeAnalysis:
        if self.settings.words_in:
            # the inputs enter whole (as words where they may not fit)
            return self.ranges()
        return RangeAnalysis(self.root, exact_input_ranges(self.root, self.settings.input_ranges),
                             known=self.known_ranges)

    def _plan_constant(self, op: ir.Operation, rtype: ir.Type, new_type: ir.Type) -> Refusal | None:
        """Plan narrowing the constant ``op`` (:class:`ConstantNarrowing`);
        the refusal of an integer element that does not fit (and is no
        sentinel) under the integer policy "error", left to the caller to
        decide."""
        narrowed = self.constants.narrow(op, rtype, new_type)
        if isinstance(narrowed, Refusal):
            return narrowed
        old_attr, new_attr, events, fclass = narrowed
        if old_attr is None:
            self.plan.needs_backup = True  # (the undo log cannot hold it)
        if events:
            loc = op.location
            add = self.report.add
            for kind, detail, count in events:
                add(kind, op.name, loc, detail, count)
                if kind in _CONSTANT_VERDICTS:
                    # the constant's verdict is how it was narrowed
                    self.plan.sentinel_values[op.results[0]] = Verdict(kind)
        if fclass is Verdict.EXACT:
            self.plan.float_exact += 1
        elif fclass is Verdict.OVERFLOW:
            self.plan.float_overflow += 1
        self.plan.consts.append((op, old_attr, new_attr))
        return None

    # --------------------------------------------------------------- verdicts
    def judge(self) -> None:
        """Give every narrowed value a verdict; refuse those the range policy
        refuses (before anything else changes)."""
        counts: dict[Verdict, int] = {}
        refused = self.settings.range_policy.refuses
        # Kinds of the (few, cached) converted types, by object identity.
        kinds = {id(new): _kind_of(new) for new in self.plan.converted.values() if new is not None}
        # Converted types are cached objects: count the values of each by identity.
        self.plan.tally = tally = collections.Counter(map(id, map(itemgetter(2), self.plan.values)))
        floats = {k for k, kind in kinds.items() if kind is ElementKind.FLOAT}
        n_float = sum(n for k, n in tally.items() if k in floats)  # judged in bulk below
        others = [(v, id(new)) for v, _, new in self.plan.values if id(new) not in floats]
        confused = self._sentinel_meetings(refused) if self._int_sentinels() else set()
        analysis: RangeAnalysis | None = None
        assumed = set(self._assumed_args())
        for value, key in others:
            kind = kinds[key]
            if value in assumed:
                v = Verdict.UNPROVEN  # recorded by judge_assumed_inputs
            elif kind is ElementKind.OTHER:
                v = Verdict.PRECISION_REDUCED  # tuples and other aggregates
                self.record(value, v, None, "aggregate narrowed element by element")
            elif value in confused:
                v = Verdict.UNPROVEN  # recorded where the sentinel meets the value
            elif value in self.plan.sentinel_values:
                v = self.plan.sentinel_values[value]
                self.record(value, v, None, f"constant narrowed ({v})")
            else:
                if analysis is None:
                    analysis = self.ranges()
                v, r = analysis.verdict(value)
                if v not in (Verdict.EXACT, Verdict.SENTINEL):
                    self.record_range(value, v, r.interval, refused, collision=collision_only(r, value.type))
            counts[v] = counts.get(v, 0) + 1
        # Floats: constants f32 holds exactly are exact, constants beyond its
        # range overflow (both known from constant planning); every other
        # float value is computed in f32 and so precision-reduced.
        for v, n in (
            (Verdict.EXACT, self.plan.float_exact),
            (Verdict.OVERFLOW, self.plan.float_overflow),
            (Verdict.PRECISION_REDUCED, n_float - self.plan.float_exact - self.plan.float_overflow),
        ):
            if n:
                counts[v] = counts.get(v, 0) + n
        self.report.verdicts = counts

    def _int_sentinels(self) -> bool:
        """Whether a 64-bit integer constant of the module holds a sentinel."""
        return any(
            v is Verdict.SENTINEL and isinstance(ir.ShapedType(c.type).element_type, ir.IntegerType)
            for c, v in self.plan.sentinel_values.items()
        )

    def _int_values(self) -> list[ir.Value]:
        """The 64-bit integer values the plan retypes."""
        ints = {id(new) for new in self.plan.converted.values() if new is not None and _kind_of(new).integer}
        return [v for v, _, new in self.plan.values if id(new) in ints]

    def _sentinel_readers(self) -> list[ir.Operation]:
        """The ops that read a value that may hold a sentinel as the 64-bit
        number it is (arithmetic, bits, converts, indices: the op table's
        ``READS``): the emulation step computes them on words."""
        if not self._int_sentinels():
            return []
        seen: dict[ir.Operation, None] = {}
        for reading in sentinel_readings(self.ranges(), self._int_values()):
            if reading.use is SentinelUse.READS:
                seen.setdefault(reading.op, None)
        return list(seen)

    def _assumed_args(self) -> list[ir.Value]:
        entry = entry_function(self.root) if self.settings.assumed_inputs else None
        if entry is None:
            return []
        args = entry.regions[0].blocks[0].arguments
        return [args[i] for i in sorted(self.settings.assumed_inputs) if i < len(args)]

    def judge_assumed_inputs(self) -> None:
        """The entry inputs taken as 32-bit values without a declared range
        are narrowed without proof: ``unproven`` (recorded, or refused as
        the range policy says), before anything else is planned."""
        refused = self.settings.range_policy.refuses
        for value in self._assumed_args():
            self.record_range(value, Verdict.UNPROVEN, _full_range(value.type), refused,
                               "is taken as a 32-bit value without a declared range")

    def _sentinel_meetings(self, refused: frozenset[str]) -> set[ir.Value]:
        """Where a value that may hold a sentinel meets another value in a
        compare, the narrowed program keeps the 64-bit outcome only if no
        ordinary value reaches the 32-bit extreme the sentinel becomes; where
        an op reads it as a number (and emulation could not compute the op on
        words), the narrowed program computes with the 32-bit extreme instead.
        Returns the sentinel-carrying values for which either holds (each
        recorded as unproven at the op)."""
        analysis = self.ranges()
        confused: set[ir.Value] = set()
        for reading in sentinel_readings(analysis, self._int_values()):
            op, x = reading.op, reading.value
            names = sentinel_names(reading.sentinels)
            if reading.use is SentinelUse.READS or len(op.operands) == 1:
                if reading.use is SentinelUse.READS:
                    why = (
                        f"reads a value that may be a 64-bit sentinel ({names}) as a number: the 64-bit "
                        "program computes with the sentinel, the 32-bit one with its 32-bit extreme, and "
                        "no64 cannot compute this op on 32-bit words here"
                    )
                else:
                    why = (
                        f"converts a value that may be a 64-bit sentinel ({names}) to "
                        f"{ir.ShapedType(op.results[0].type).element_type}: the 64-bit program converts "
                        "the sentinel itself, the 32-bit one its 32-bit extreme"
                    )
                x_range = analysis.range(x)
                assert x_range is not None  # (a sentinel reading's value has a range)
                self._record_meeting(op, x, x_range.interval, why, refused)
                confused.add(x)
                continue
            for j, y in enumerate(op.operands):
                other = analysis.range(y) if j != reading.operand else None
                if other is None or not collides(other, reading.sentinels):
                    continue
                why = (
                    f"compares a 64-bit sentinel ({names}) with a value "
                    f"in [{other.lo}, {other.hi}], which may equal the sentinel's 32-bit extreme: "
                    "the narrowed comparison could change its outcome"
                )
                # a value that is the 32-bit extreme itself (x > INT32_MAX): the
                # narrowed comparison is certain to confuse them where the
                # sentinel comes -- no question of the sentinel rules
                certain = other.lo == other.hi and not other.sentinels
                self._record_meeting(op, x, other.interval, why, refused, collision=not certain)
                confused.add(x)
                break
        return confused

    def record_range(
        self, value: ir.Value, v: Verdict, iv: tuple[int, int], refused: frozenset[Verdict],
        why: str | None = None, collision: bool = False,
    ) -> None:
        arg = block_argument(value)
        if arg is not None:
            op = _as_op(arg.owner.owner)
            what = f"argument #{arg.arg_number}"
            # a function argument has its own name location; a region
            # argument is best found through the op that owns the region
            loc = arg.location if spec_of(op.name).function else op.location
        else:
            op = _as_op(value.owner)
            what = "result"
            loc = op.location
            if collision and spec_of(op.name).computes is Computes.SELECT and not _in_reduction(op):
                # a select outside a reduction's body: its sentinel operand is
                # its result, beside values that may be the same 32-bit extreme
                # (a masked fill the narrowed program can no longer tell apart)
                collision = False
        detail = f"{what} in [{iv[0]}, {iv[1]}] " + (
            why or ("is certain to leave the 32-bit range" if v is Verdict.OVERFLOW else "may not fit in 32 bits")
        )
        if v in refused:
            raise NarrowingError(
                op.name, decode_location(loc), v, iv, self.settings.range_policy,
                narrowing=self.record(value, v, iv, detail, keep=False, collision=collision),
                reason=detail if why else None,
            )
        self.report.add(v, op.name, loc, detail)
        self.record(value, v, iv, detail, collision=collision)

    def record(
        self, value: ir.Value, v: Verdict, iv: tuple[int, int] | None, detail: str, keep: bool = True,
        collision: bool = False, at: ir.Operation | None = None,
    ) -> Narrowing:
        """The report's record of narrowing ``value`` (added to the report if
        ``keep``), named by the op ``at`` where that op, not the value's
        own, is where it goes wrong."""
        arg = block_argument(value)
        if at is not None:
            op, role, index, loc = at, "result", 0, at.location
        elif arg is not None:
            op, role, index, loc = _as_op(arg.owner.owner), "argument", arg.arg_number, arg.location
        else:
            op = _as_op(value.owner)
            role, index, loc = "result", op_result(value).result_number, op.location  # type: ignore[union-attr]
        record = Narrowing(op.name, role, index, loc, v, iv, detail, collision)
        if keep:
            self.report.narrowings.append(record)
        return record

    def _record_meeting(
        self, op: ir.Operation, value: ir.Value, iv: tuple[int, int], why: str, refused: frozenset[str],
        collision: bool = True,
    ) -> None:
        at = None if collision else op
        if Verdict.UNPROVEN in refused:
            raise NarrowingError(
                op.name, decode_location(op.location), Verdict.UNPROVEN, iv, self.settings.range_policy,
                narrowing=self.record(value, Verdict.UNPROVEN, iv, why, keep=False, collision=collision, at=at),
                reason=why,
            )
        self.report.add(EventKind.UNPROVEN, op.name, op.location, why)
        self.record(value, Verdict.UNPROVEN, iv, why, collision=collision, at=at)



def _full_range(t: ir.Type) -> tuple[int, int]:
    """The range of a 64-bit integer tensor type's elements."""
    if ir.IntegerType(ir.ShapedType(t).element_type).is_unsigned:
        return (0, 2**64 - 1)
    return (-(2**63), 2**63 - 1)




def _kind_of(t: ir.Type) -> ElementKind:
    """What the elements of ``t`` are (``FLOAT``: float or complex)."""
    if not isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType)):
        return ElementKind.OTHER
    e = t.element_type
    if isinstance(e, ir.IntegerType):
        return ElementKind.UINT if e.is_unsigned else ElementKind.INT
    if isinstance(e, (ir.F32Type, ir.ComplexType, ir.F64Type)):
        return ElementKind.FLOAT
    return ElementKind.OTHER


def elem_name(t: ir.Type) -> str:
    return str(t.element_type) if isinstance(t, ir.ShapedType) else str(t)
