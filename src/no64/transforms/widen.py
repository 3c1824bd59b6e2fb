"""Carrying 16-bit integers as 32-bit ones, for a target without them.

A target whose profile declares :attr:`~no64.targets.Target.widens`
(Neuron: ``i16`` as ``i32``, ``u16`` as ``u32``) computes no 16-bit
integer.  :func:`widen` rewrites, in place, every value of element type
``i16``/``ui16`` inside a module's functions into ``i32``/``ui32`` holding the
16-bit value sign- (``i16``) or zero-extended (``ui16``).

The step is a representation of the carrier's driver
(:class:`Widening`, a :class:`~no64.transforms.carry.Carrier` of one 32-bit
value per 16-bit value): the driver walks each function, hands a loop's,
branch's or call's values over and back, and computes every other op that
touches a 16-bit value by its rule in the op table (the ``widen`` field,
:mod:`no64.rules.widen_rules`), which retypes the op in place and restores
the 16-bit results exactly where a 32-bit op could leave the 16-bit range
(``add``, ``multiply``, ... wrapped back; shifts and bit counts on the
16-bit pattern; converts to 16 bits wrapped or saturated).  Constants are
rewritten as 32-bit constants.

The signature of each public function (the entry) is kept: its 16-bit
arguments are converted to 32 bits right at entry and its 16-bit results
converted back right before return -- the data crossing the boundary is
16-bit, the device computes on 32-bit.  Private functions are retyped whole.

An op that cannot be made exact (a ``bitcast_convert`` between a 16-bit
integer and ``f16``/``bf16``, a ``custom_call`` or host transfer of 16-bit
data, random bits drawn as 16-bit integers, an op no64 does not know) is
refused, before anything changes, by :class:`~no64.errors.UnsupportedOpError`
naming the op, its line, the target and the reason (the op's
``widen_why_not`` in the op table, or the op has no ``widen`` rule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..errors import UnsupportedOpError
from ..ir import words as W
from ..ir._compat import block_argument
from ..ir._mlir import ir
from ..ir.locations import SourceLocation, decode_location
from ..rules.widen_rules import narrow_kind
from ..spec.registry import spec_of
from ..spec.walk import all_ops, functions, is_public as _public
from ..targets import Target
from .carry import Carrier, Leave

__all__ = ["Widened", "Widening", "narrow_kind", "widen", "holds_narrow"]

#: The mark a rule's fix-up leaves on its op (what was done), read back in
#: program order once the walk is over (an op's Python hash changes as it
#: is retyped: it cannot key a table).
_FIXED = "no64.widen_fixed"


def _widened(t: ir.Type, target: Target) -> ir.Type | None:
    """``t`` with its 16-bit integer elements as the target's wider ones."""
    kind = narrow_kind(t)
    if kind is None:
        return None
    wide = target.widened(kind)
    if wide is None:
        return None
    elem = ir.IntegerType.get_unsigned(32) if wide == "u32" else ir.IntegerType.get_signless(32)
    if isinstance(t, ir.RankedTensorType):
        return ir.RankedTensorType.get(t.shape, elem, t.encoding)
    if isinstance(t, ir.ShapedType):
        return ir.UnrankedTensorType.get(elem)
    return elem


def _types_of(op: ir.Operation) -> list[ir.Type]:
    return [v.type for v in (*op.operands, *op.results)]


def _entry_block(block: ir.Block) -> bool:
    owner = block.owner
    return owner is not None and spec_of(owner.operation.name).function and _public(owner.operation)


def _at_boundary(op: ir.Operation, target: Target) -> bool:
    """Whether ``op`` is a convert of the entry's boundary that a previous
    :func:`widen` made: of an argument to 32 bits, or of a result back to 16
    bits right before return."""
    if not spec_of(op.name).convert:
        return False
    src, dst = op.operands[0], op.results[0]
    if narrow_kind(src.type) is not None and _widened(src.type, target) == dst.type:
        arg = block_argument(src)
        return arg is not None and _entry_block(arg.owner)
    if narrow_kind(dst.type) is not None and _widened(dst.type, target) == src.type:
        users = [u.owner.operation for u in dst.uses]
        return bool(users) and all(spec_of(u.name).terminator and _entry_block(u.block) for u in users)
    return False


def _converted_argument(a: ir.Value, target: Target) -> bool:
    """Whether an entry argument is used only by converts to 32 bits."""
    uses = [u.owner.operation for u in a.uses]
    return bool(uses) and all(_at_boundary(u, target) for u in uses)


def holds_narrow(root: ir.Operation, target: Target) -> bool:
    """Whether any op or block argument under ``root`` has a 16-bit integer
    type ``target`` widens (but for the entry's boundary that :func:`widen`
    leaves)."""
    with root.context, ir.Location.unknown():
        return _holds_narrow(root, target)


def _holds_narrow(root: ir.Operation, target: Target) -> bool:
    for op in all_ops(root):
        if _at_boundary(op, target):
            continue
        if any(narrow_kind(t) is not None and target.widened(narrow_kind(t) or "") for t in _types_of(op)):
            return True
        for region in op.regions:
            for block in region.blocks:
                if any(narrow_kind(a.type) is not None and target.widened(narrow_kind(a.type) or "")
                       and not (_entry_block(block) and _converted_argument(a, target))
                       for a in block.arguments):
                    return True
    return False


@dataclasses.dataclass
class Widened:
    """What :func:`widen` did: how many values it retyped, and per op given a
    fix-up its name, line and what was done."""

    retyped: int = 0
    fixed: list[tuple[str, SourceLocation, str]] = dataclasses.field(default_factory=list)


class Widening(Carrier[ir.Value]):
    """The widening as a representation of the carrier's driver, and what its
    rules see of it (:class:`~no64.spec.protocols.WidenContext`).

    A 16-bit value is carried as one 32-bit value: the value itself, retyped
    in place (its 16-bit type remembered, :meth:`type`), or what a rule made
    to stand for it (a wrapped result, an entry argument converted at
    entry).  Packing and unpacking are the identity; the rules change the op
    they compute in place (``retypes_in_place``)."""

    rule_field = "widen"
    rep_class = ir.Value
    no_rule = "no64 cannot compute this op on 16-bit integers carried in 32 bits"
    done_as = "carried in 32 bits"
    retypes_in_place = True

    def __init__(self, root: ir.Operation, target: Target) -> None:
        self.root = root
        self.target = target
        self.by_op = {}
        self._erase: list[ir.Operation] = []
        self._types: dict[ir.Value, ir.Type] = {}
        self._subst: dict[ir.Value, ir.Value] = {}
        self._reps: dict[ir.Value, ir.Value] = {}
        self._packed: set[ir.Value] = set()
        #: the 32-bit type of each 16-bit type the target widens (None: not widened)
        self._wide: dict[ir.Type, ir.Type | None] = {}
        #: the entry's boundary (the converts of its arguments and results):
        #: left as it is
        self._kept: set[ir.Value] = set()
        #: values retyped, and per op given a fix-up its name, line and
        #: detail, in program order
        self.retyped = 0
        self.fixes: list[tuple[str, SourceLocation, str]] = []
        self._marked = 0

    # ------------------------------------------------------------ for rules
    @property
    def target_name(self) -> str:
        return self.target.name

    def wide_type(self, t: ir.Type) -> ir.Type | None:
        """The 32-bit type carrying a value of type ``t`` (``None``: not carried)."""
        try:
            return self._wide[t]
        except KeyError:
            w = self._wide[t] = _widened(t, self.target)
            return w

    def carried(self, v: ir.Value) -> bool:
        """Whether ``v`` is a 16-bit integer of the program carried in 32 bits."""
        return v not in self._kept and self.wide_type(self.type(v)) is not None

    def kind(self, v: ir.Value) -> str | None:
        return narrow_kind(self.type(v)) if self.carried(v) else None

    def retype(self, op: ir.Operation) -> None:
        for i, x in enumerate(op.operands):
            rep = self._reps.get(x)
            if rep is not None:
                op.operands[i] = rep
        self._retype_values(op)

    def fixed(self, op: ir.Operation, detail: str) -> None:
        op.attributes[_FIXED] = ir.StringAttr.get(detail)
        self._marked += 1

    def _retype_values(self, op: ir.Operation) -> None:
        """``op``'s carried results and the carried arguments of its regions,
        retyped to 32 bits."""
        for r in op.results:
            self._retype(r)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    self._retype(a)

    def _retype(self, v: ir.Value) -> None:
        if v in self._types:
            return
        wide = self.wide_type(v.type)
        if wide is not None:
            self.retype_packed(v, wide)
            self.retyped += 1

    # ------------------------------------------- the representation (Carrier)
    def carries(self, t: ir.Type) -> bool:
        return self.wide_type(t) is not None

    def parts(self, rep: ir.Value) -> list[ir.Value]:
        return [rep]

    def part_types(self, t: ir.Type) -> list[ir.Type]:
        wide = self.wide_type(t)
        assert wide is not None
        return [wide]

    def from_parts(self, parts: Sequence[ir.Value], t: ir.Type) -> ir.Value:
        return parts[0]

    def rep(self, v: ir.Value) -> ir.Value:
        return self._reps.get(v, v)

    def unpack(self, packed: ir.Value) -> ir.Value:
        return packed

    def pack(self, rep: ir.Value, carried: bool) -> ir.Value:
        return rep

    # ------------------------------------------------- the step (Carrier)
    def begin(self) -> None:
        """Refuse, before anything changes, an op whose 16-bit values cannot
        be carried exactly; then convert each public function's 16-bit
        arguments to 32 bits at entry, and retype a private function's."""
        ops = all_ops(self.root)
        for op in ops:
            if spec_of(op.name).convert and _at_boundary(op, self.target):
                self._kept.add(op.results[0])
                arg = block_argument(op.operands[0])
                if arg is not None and _converted_argument(arg, self.target):
                    self._kept.add(op.operands[0])
        for op in ops:
            self._check(op)
        for fn in functions(self.root):
            if not len(fn.regions[0].blocks):
                continue
            block = fn.regions[0].blocks[0]
            if not _public(fn):
                for a in block.arguments:
                    self._retype(a)
                continue
            first = block.operations[0] if len(block.operations) else None
            for a in block.arguments:
                if not self.carried(a):
                    continue
                wide = self.wide_type(a.type)
                with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), a.location:
                    c = self._reps[a] = W.make("convert", [a], wide)
                self._kept.add(c)

    def _check(self, op: ir.Operation) -> None:
        """Refuse ``op`` if it touches a carried value and its rule cannot compute it."""
        spec = spec_of(op.name)
        if spec.ties or spec.terminator or spec.function:
            return
        if not any(self.carried(v) for v in (*op.operands, *op.results)):
            return
        why = spec.widen_why_not(op, self) if spec.widen_why_not is not None else None
        if why is None and spec.widen is None:
            why = f"no64 does not know how {op.name} computes on 16-bit integers carried in 32 bits"
        if why is not None:
            raise UnsupportedOpError(op.name, decode_location(op.location),
                                     f"target {self.target.name} has no 16-bit integers; {why}")

    def takes(self, op: ir.Operation) -> list[int] | None:
        """Every op that touches a carried value: a loop, branch, call or
        terminator with its carried operands, any other op by its rule."""
        spec = spec_of(op.name)
        if spec.convert and op.results[0] in self._kept:
            return None  # the entry's boundary
        fed = [i for i, x in enumerate(op.operands) if self.carried(x)]
        if not fed and not any(self.carried(r) for r in op.results):
            return None
        return fed if spec.ties or spec.terminator else []

    def tied(self, op: ir.Operation) -> None:
        """Its carried results (and a loop's region arguments) retyped."""
        self._retype_values(op)

    def leaves(self, fn: ir.Operation) -> Leave:
        """A public function's results leave as 16-bit values (its signature
        kept); a private function's as they are carried."""
        return Leave.NARROW if _public(fn) else Leave.CARRIED

    def narrow(self, ret: ir.Operation, x: ir.Value, rep: ir.Value) -> ir.Value:
        return W.make("convert", [rep], self.type(x))

    def finish(self) -> None:
        """The ops given a fix-up, in program order (the driver walks a
        block's ops before the regions inside it), their marks taken off."""
        if not self._marked:
            return
        for op in all_ops(self.root):
            attrs = op.attributes
            if _FIXED in attrs:
                self.fixes.append((op.name, decode_location(op.location), ir.StringAttr(attrs[_FIXED]).value))
                del attrs[_FIXED]


def widen(module: ir.Module | ir.Operation, target: Target) -> Widened:
    """Carry, in place, the 16-bit integers of ``module`` that ``target``
    widens as 32-bit ones (see the module docstring); returns, per op given a
    fix-up, its name, line and what was done.  Raises
    :class:`~no64.errors.UnsupportedOpError` (the module unchanged) for an
    op that cannot be made exact.  The entry's boundary that a previous
    call made is left as it is: widening a widened module changes nothing."""
    root = module.operation if isinstance(module, ir.Module) else module
    out = Widened()
    with root.context, ir.Location.unknown():
        if not target.widens or not _holds_narrow(root, target):
            return out
        step = Widening(root, target)
        step.run()
    out.retyped = step.retyped
    out.fixed = step.fixes
    return out
