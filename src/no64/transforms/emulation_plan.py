"""The emulation plan: which 64-bit integer values are carried as 32-bit words.

:func:`plan_words` decides the set of values to emulate and the ops that
compute them (see :mod:`no64.transforms.emulate` for which values and why),
the groups of values that must share one representation (carried packed),
and which operands of carrying ops and terminators are handed packed values;
it returns them as an :class:`EmulationPlan`, and changes nothing; what it
is asked is a :class:`WordsRequest`, and where no plan can be made it says
why (:class:`WordsRefused`) instead of raising, so that the caller can ask
for less and raise only its last refusal.
:mod:`no64.transforms.emulate` rewrites the ops the plan names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from ..analysis.ranges import RangeAnalysis, defining_op, entry_function
from ..errors import No64Error
from ..ir._compat import block_argument
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.locations import SourceLocation, decode_location
from ..ir.types import is_int64_tensor as is_wide_int
from ..kinds import Verdict
from ..spec.intervals import INT32, UINT32
from ..spec.registry import Refusal, spec_of
from ..spec.walk import callee_of as _callee, functions as _functions, is_public as _is_public, symbol_name as _sym

__all__ = ["EmulationPlan", "WordsRequest", "WordsRefused", "plan_words", "exact_input_ranges"]


def _owns_regions(op: ir.Operation) -> bool:
    """Whether ``op``'s regions belong to it: its emulate rule rebuilds them whole."""
    return spec_of(op.name).owns_regions


def _ties(op: ir.Operation) -> bool:
    """Whether ``op``'s operands may flow into carried values (tie slots): a
    loop, a branch, a call, or a terminator (one that hands its operands to
    a loop's or branch's results or to a function's callers; any other's
    operands flow into no slot, and its op is judged by its own rule)."""
    spec = spec_of(op.name)
    return spec.ties or spec.terminator


def _function_return(op: ir.Operation) -> bool:
    """Whether ``op`` returns from a function (to its callers or the host)."""
    return spec_of(op.name).terminator and spec_of(_as_op(op.parent).name).function


def _narrower_int(t: ir.Type) -> bool:
    """Whether ``t`` is a tensor of integers of 32 bits or fewer."""
    if not isinstance(t, ir.RankedTensorType):
        return False
    e = t.element_type
    return isinstance(e, ir.IntegerType) and e.width <= 32


def _unsigned(t: ir.Type) -> bool:
    return ir.IntegerType(ir.RankedTensorType(t).element_type).is_unsigned



def exact_input_ranges(
    root: ir.Operation, declared: Mapping[int | str, tuple[int, int]] | None
) -> dict[int | str, tuple[int, int]]:
    """The declared input ranges, plus the 32-bit range for every other
    64-bit integer argument of the entry function: the ranges of a program
    whose inputs are 32-bit values (narrowed and checked by the host), as
    under ``outputs="narrow"``."""
    fn = entry_function(root)
    if fn is None:
        return dict(declared or {})
    from ..analysis.ranges import resolve_input_ranges

    # by position: the analyses that take these need not look names up again
    out: dict[int | str, tuple[int, int]] = dict(resolve_input_ranges(root, declared).items()) if declared else {}
    block = fn.regions[0].blocks[0]
    for i, arg in enumerate(block.arguments):
        if i in out or not is_wide_int(arg.type):
            continue
        out[i] = UINT32 if _unsigned(arg.type) else INT32
    return out


class _Groups:
    """Union-find over values that must share one representation."""

    def __init__(self) -> None:
        self.parent: dict[ir.Value, ir.Value] = {}

    def find(self, v: ir.Value) -> ir.Value:
        p = self.parent.get(v, v)
        if p == v:
            return v
        root = self.find(p)
        self.parent[v] = root
        return root

    def union(self, a: ir.Value, b: ir.Value) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


@dataclasses.dataclass(frozen=True, eq=False)
class WordsRequest:
    """What :func:`plan_words` is asked to emulate (see there for each field)."""

    everything: bool
    forced_values: tuple[ir.Value, ...] = ()
    forced_ops: tuple[ir.Operation, ...] = ()
    forced_users: Mapping[ir.Value, "WordsRefused"] = dataclasses.field(default_factory=dict)
    words_out: bool = True
    sentinel_readers: tuple[ir.Operation, ...] = ()
    pull_unproven: bool = False
    words_in: bool = False


@dataclasses.dataclass(frozen=True)
class WordsRefused:
    """Why :func:`plan_words` can make no plan: the op refused, where, and
    why -- raised (:attr:`error`) if the caller has nothing less to ask."""

    op: str
    location: SourceLocation
    refusal: Refusal

    @classmethod
    def at(cls, op: ir.Operation, reason: str) -> "WordsRefused":
        """``op`` refused for want of a rule on words."""
        return cls(op.name, decode_location(op.location), Refusal(reason))

    @property
    def final(self) -> bool:
        """Whether asking for less cannot help: what is refused is not an op
        for want of a rule on words but a value out of range (an
        out-of-range constant's, converted straight to a narrower integer)."""
        return self.refusal.out_of_range

    @property
    def error(self) -> No64Error:
        """The error that refuses the op."""
        return self.refusal.error(self.op, self.location)


@dataclasses.dataclass(eq=False)
class EmulationPlan:
    """What the emulation step decided: the values, the ops, the boundary."""

    root: ir.Operation
    analysis: RangeAnalysis
    wide: set[ir.Value]
    ops: list[ir.Operation]
    #: indices of entry-function results that come back packed
    outputs: list[int]
    slots: dict[ir.Value, list[ir.Value]]  # group root -> members
    groups: _Groups
    #: each op to emulate, with the operands (of a carrying op or
    #: terminator) that must be handed packed values
    marks: list[tuple[ir.Operation, list[int]]]
    #: Entry-function results narrowed to their low word instead
    #: (``outputs="narrow"``): the 64-bit values returned there.
    narrowed: list[ir.Value] = dataclasses.field(default_factory=list)
    #: indices of entry-function arguments that enter packed
    inputs: list[int] = dataclasses.field(default_factory=list)


def _slots_fed(op: ir.Operation) -> list[Any]:
    """For each operand of ``op``: the carried value it flows into (a
    member of the slot's group), ``"output"`` for the entry function's
    results, or ``None``."""
    spec = spec_of(op.name)
    n = len(op.operands)
    if spec.loop:
        return list(op.results)
    if spec.call:
        callee = _callee(op)
        if callee is None:
            return [None] * n
        return list(callee.regions[0].blocks[0].arguments)
    if spec.branches:
        return [None] * n
    if spec.terminator:
        parent = _as_op(op.parent)
        owner = spec_of(parent.name)
        if owner.loop:
            # the condition returns i1; the body returns the carried values
            if op.block == parent.regions[1].blocks[0]:
                return list(parent.results)
            return [None] * n
        if owner.branches:
            return list(parent.results)
        if owner.function:
            if _is_public(parent):
                return ["output"] * n
            return [("ret", _sym(parent), j) for j in range(n)]
        return [None] * n
    return [None] * n


def plan_words(root: ir.Operation, analysis: RangeAnalysis, request: WordsRequest
               ) -> EmulationPlan | WordsRefused | None:
    """Decide which values to emulate; ``None`` if none.  The fields of ``request``:

    ``everything``: seed every 64-bit integer value the analysis cannot prove
    to fit (``policy="exact"``); else only the forced ones (``forced_ops``:
    ops to emulate whose results are not 64-bit, such as a bitcast of a
    64-bit integer to its two words).  ``forced_users``
    maps values (out-of-range constants) whose every user must be emulated
    to the refusal to return if one cannot be.  ``words_out``: emulated results
    of the entry function come back as packed words; else as their low word
    (listed in ``narrowed``, for the caller to judge).  ``sentinel_readers``:
    ops that read a possible sentinel as a number, emulated (an op inside a
    region its op owns, such as a reduction's body, through that op) where
    a rule can compute them on words.  ``pull_unproven``: a value not
    proven to fit that an emulated op reads is emulated too (not only one
    that may hold a sentinel), so that no emulated op computes from a
    narrowed value that may be wrong.  ``words_in``: the
    entry function's 64-bit integer arguments that are not proven to fit
    (with ``everything``), or that an emulated value must flow back into,
    enter as packed words (listed in ``inputs``); else an argument is a
    32-bit value, and one that would have to carry more is refused.  Any
    other op that would have to be emulated and has no rule is refused: the
    result is then a :class:`WordsRefused` that says which op and why (or,
    for a constant's user, the constant's refusal).
    """
    planner = _WordsPlanner(root, analysis, request)
    refused = planner.seed() or planner.spread()
    if refused is not None:
        return refused
    if not planner.wide and not planner.ops:
        return None
    return planner.refusal() or planner.plan()


class _WordsPlanner:
    """One run of :func:`plan_words`: the values tied together (loop
    carries, branch and call results, function arguments) in groups, the
    uses feeding each group, then the values and ops to emulate, spread
    from the seeds along uses and definitions."""

    def __init__(self, root: ir.Operation, analysis: RangeAnalysis, request: WordsRequest) -> None:
        self.root, self.analysis, self.request = root, analysis, request
        self.groups = _Groups()
        self.all_values: list[ir.Value] = []
        calls: list[ir.Operation] = []
        self.funcs = _functions(root)
        self.entry = entry_function(root)
        for fn in self.funcs:
            _collect(fn, self.all_values, calls)
        #: (callee, result index) -> the call results it returns into
        self.ret_slots: dict[tuple[str, int], list[ir.Value]] = {}
        #: group root -> the carried values it ties together
        self.group_members: dict[ir.Value, list[ir.Value]] = {}
        self.entry_args: list[ir.Value] = (list(self.entry.regions[0].blocks[0].arguments)
                                           if self.entry is not None else [])
        self._tie()
        #: group root (or ``"output"``) -> the uses feeding it
        self.feeders: dict[Any, list[tuple[ir.Operation, int]]] = {}
        for fn in self.funcs:
            for op in _tie_users(fn):
                for i in range(len(op.operands)):
                    s = self.slot_of(op, i)
                    if s is not None:
                        self.feeders.setdefault(s, []).append((op, i))
        self.wide: set[ir.Value] = set()
        self.ops: dict[ir.Operation, None] = {}
        self.outputs: set[int] = set()
        self.narrowed: dict[int, ir.Value] = {}
        self.emulated_groups: set[ir.Value] = set()
        self.work: list[ir.Value] = []

    def _tie(self) -> None:
        """Carried values: those tied together share one group."""
        groups, entry = self.groups, self.entry
        tied: list[ir.Value] = []
        for fn in self.funcs:
            if fn != entry:
                tied.extend(fn.regions[0].blocks[0].arguments)
            for op in _ops_with_regions_and_calls(fn):
                spec = spec_of(op.name)
                if spec.loop:
                    for i, r in enumerate(op.results):
                        tied.append(r)
                        for region in op.regions:
                            a = region.blocks[0].arguments[i]
                            tied.append(a)
                            groups.union(a, r)
                elif spec.branches:
                    tied.extend(op.results)
                elif spec.call:
                    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                    for j, r in enumerate(op.results):
                        tied.append(r)
                        self.ret_slots.setdefault((callee, j), []).append(r)
        for members in self.ret_slots.values():
            for m in members[1:]:
                groups.union(m, members[0])
        for v in tied:
            self.group_members.setdefault(groups.find(v), []).append(v)
        if self.request.words_in:
            # an input that enters as words is a carried value of its own (packed
            # in the signature, unpacked at the top of the entry block)
            for a in self.entry_args:
                if is_wide_int(a.type):
                    self.group_members[a] = [a]

    def slot_of(self, op: ir.Operation, i: int) -> Any:
        """The group root (or ``"output"``) operand ``i`` of ``op`` flows into."""
        s = _slots_fed(op)[i]
        if isinstance(s, tuple):
            members = self.ret_slots.get((s[1], s[2]))
            return self.groups.find(members[0]) if members else None
        if s is None or s == "output":
            return s
        return self.groups.find(s)

    def needs(self, v: ir.Value) -> bool:
        """Whether ``v`` is not proven to fit in 32 bits."""
        verdict, _ = self.analysis.verdict(v)
        return verdict is not Verdict.EXACT

    def _entry_arg(self, v: ir.Value) -> bool:
        """Whether ``v`` is an argument of the entry function."""
        arg = block_argument(v)
        return arg is not None and _as_op(arg.owner.owner) == self.entry

    def inexact(self, x: ir.Value) -> bool:
        """Whether ``x`` must not enter the words from the narrowed program:
        it may hold a sentinel, or (``pull_unproven``) it is not proven to
        fit -- its 32-bit value may differ from the 64-bit one, and the
        emulated op would compute exactly from a wrong number (a loop
        counter that overflows in 32 bits, compared with an emulated bound,
        would never stop).  The entry function's inputs enter as the 32-bit
        values the host passes; constants with their exact elements."""
        if _carries_sentinel(x, self.analysis):
            return True
        if not self.request.pull_unproven or not is_wide_int(x.type):
            return False
        if self._entry_arg(x):
            return False
        d = defining_op(x)
        if d is not None and spec_of(d.name).constant:
            return False
        return self.needs(x) and self.analysis.fold(x, sentinels=True) is None

    def mark_op(self, op: ir.Operation) -> None:
        """Emulate ``op``: its results not proven to fit, and the operands it
        must not read narrowed, too."""
        if op in self.ops:
            return
        self.ops[op] = None
        for r in op.results:
            if is_wide_int(r.type) and self.needs(r):
                self.work.append(r)
        for x in op.operands:
            if self.inexact(x):
                self.work.append(x)

    def mark_user(self, user: ir.Operation, v: ir.Value) -> None:
        """``user`` reads the emulated ``v``: emulated, or, where it ties
        ``v`` to a group (or to an output of the entry), that group."""
        if not _ties(user):
            self.mark_op(user)
            return
        for i, x in enumerate(user.operands):
            if x != v:
                continue
            s = self.slot_of(user, i)
            if s == "output":
                self.outputs.add(i)
                self.narrowed[i] = v
                self.ops[user] = None
            elif s is not None:
                self.ops[user] = None
                self.work.extend(self.group_members[s][:1])

    def seed(self) -> WordsRefused | None:
        """The values and ops the request asks for (a constant's refusal, if
        a user of it must be refused)."""
        request = self.request
        if request.everything:
            if request.words_in:
                self.work.extend(a for a in self.entry_args if is_wide_int(a.type) and self.needs(a))
            for v in self.all_values:
                if not is_wide_int(v.type) or self._entry_arg(v) or not self.needs(v):
                    continue
                d = defining_op(v)
                if d is not None and spec_of(d.name).constant:
                    for user in _users(v):
                        self.mark_user(user, v)
                else:
                    self.work.append(v)
        self.work.extend(request.forced_values)
        for op in request.forced_ops:
            self.mark_op(op)
        for op in request.sentinel_readers:
            owner = _region_owner(op)
            if spec_of(owner.name).can_emulate(owner) and _static_words(owner):
                self.mark_op(owner)
        for c, refused in request.forced_users.items():
            for user in _users(c):
                if spec_of(user.name).convert and _narrower_int(user.results[0].type):
                    # An out-of-range constant converted straight to a 32-bit or
                    # narrower integer: JAX writes this when it lowers a 64-bit
                    # array with x64 off (the truncation is not the user's);
                    # refuse as before.  (A convert to a float is the user's.)
                    return refused
                self.mark_user(user, c)
        return None

    def spread(self) -> WordsRefused | None:
        """From the seeds along definitions, uses and groups, until every
        value that must be emulated is (an entry argument that would have to
        carry more than 32 bits without ``words_in`` refused)."""
        work = self.work
        while work:
            v = work.pop()
            if v in self.wide or not is_wide_int(v.type):
                continue
            arg = block_argument(v)
            if not self.request.words_in and self._entry_arg(v):
                assert arg is not None
                return WordsRefused(
                    _as_op(arg.owner.owner).name, decode_location(arg.location),
                    Refusal(f"argument #{arg.arg_number} of the entry function would have to carry a 64-bit "
                            "value beyond the 32-bit range, but the program's inputs are 32-bit values"),
                )
            self.wide.add(v)
            g = self.groups.find(v)
            if g in self.group_members:
                if g not in self.emulated_groups:
                    self.emulated_groups.add(g)
                    work.extend(self.group_members[g])
                    for op, i in self.feeders.get(g, []):
                        self.ops[op] = None
                        x = op.operands[i]
                        if self.inexact(x):
                            work.append(x)
            else:
                d = defining_op(v)
                if d is not None and not spec_of(d.name).constant:
                    self.mark_op(d)
            for user in _users(v):
                self.mark_user(user, v)
        return None

    def refusal(self) -> WordsRefused | None:
        """The first op to emulate that no rule computes on words, or whose
        64-bit integers are not statically shaped."""
        forced_users = self.request.forced_users
        for op in self.ops:
            if _ties(op):
                continue
            spec = spec_of(op.name)
            if not spec.can_emulate(op):
                for x in op.operands:
                    if x in forced_users:
                        return forced_users[x]
                why = spec.emulate_why_not if spec.emulate is not None else None
                return WordsRefused.at(
                    op,
                    "this op reads or computes a 64-bit integer that may not fit in 32 bits, and no64 "
                    "cannot compute it exactly in 32-bit words "
                    f"({why(op) if why is not None else 'no emulation for this op'})",
                )
            if not _static_words(op):
                return WordsRefused.at(
                    op,
                    "this op reads or computes a 64-bit integer that may not fit in 32 bits, and no64 "
                    "computes such integers in 32-bit words only in statically shaped tensors",
                )
        return None

    def plan(self) -> EmulationPlan:
        """The plan: the values and ops to emulate, each op marked with the
        operands it receives packed."""
        slots = {g: self.group_members[g] for g in self.emulated_groups}
        fed: dict[ir.Operation, list[int]] = {}
        for g in self.emulated_groups:
            for op, i in self.feeders.get(g, []):
                fed.setdefault(op, []).append(i)
        marks: list[tuple[ir.Operation, list[int]]] = []
        for op in self.ops:
            if _function_return(op) and _as_op(op.parent) == self.entry:
                marks.append((op, sorted(self.outputs)))
            else:
                marks.append((op, sorted(fed.get(op, []))))
        plan = EmulationPlan(self.root, self.analysis, self.wide, [op for op, _ in marks], sorted(self.outputs),
                             slots, self.groups, marks)
        plan.inputs = sorted(i for i, a in enumerate(self.entry_args) if a in self.wide)
        if not self.request.words_out:
            plan.narrowed = [self.narrowed[i] for i in sorted(self.narrowed)]
            plan.outputs = []
        return plan


def _static_words(op: ir.Operation) -> bool:
    """Whether every 64-bit integer operand and result of ``op`` has a static shape."""
    for v in list(op.operands) + list(op.results):
        if is_wide_int(v.type) and not ir.RankedTensorType(v.type).has_static_shape:
            return False
    return True


def _region_owner(op: ir.Operation) -> ir.Operation:
    """``op``, or the outermost op that owns a region holding it (its rule
    rebuilds the region whole: a reduction's body, a sort's comparator)."""
    owner = op
    cur = op
    while True:
        parent = cur.parent
        if parent is None:
            return owner
        parent = _as_op(parent)
        if parent.parent is None or spec_of(parent.name).function:
            return owner  # (the module, or a function)
        if _owns_regions(parent):
            owner = parent
        cur = parent


def _unowned_blocks(fn: ir.Operation) -> Iterator[ir.Block]:
    """Every block of ``fn`` outside the regions of ops that own them (their
    emulate rules rebuild those whole), outer blocks first."""
    stack = [fn]
    while stack:
        cur = stack.pop()
        for region in cur.regions:
            for block in region.blocks:
                yield block
                for op in block.operations:
                    op = _as_op(op)
                    if len(op.regions) and not _owns_regions(op):
                        stack.append(op)


def _tie_users(fn: ir.Operation) -> list[ir.Operation]:
    return [op for block in _unowned_blocks(fn) for op in map(_as_op, block.operations) if _ties(op)]


def _carries_sentinel(x: ir.Value, analysis: RangeAnalysis) -> bool:
    if not is_wide_int(x.type):
        return False
    d = defining_op(x)
    if d is not None and analysis.fold(x, sentinels=True) is not None:
        return False  # constants enter with their exact elements
    r = analysis.range(x)
    return bool(r is not None and r.sentinels)


def _users(v: ir.Value) -> list[ir.Operation]:
    out = []
    seen = set()
    for use in v.uses:
        op = _as_op(use.owner)
        if op not in seen:
            seen.add(op)
            out.append(op)
    return out


def _collect(fn: ir.Operation, values: list[ir.Value], calls: list[ir.Operation]) -> None:
    """Every value defined in ``fn`` outside the regions of ops that own them."""
    for block in _unowned_blocks(fn):
        values.extend(block.arguments)
        for op in block.operations:
            op = _as_op(op)
            values.extend(op.results)
            if spec_of(op.name).call:
                calls.append(op)


def _ops_with_regions_and_calls(fn: ir.Operation) -> list[ir.Operation]:
    return [op for block in _unowned_blocks(fn) for op in map(_as_op, block.operations)
            if spec_of(op.name).ties]
