"""What every emulated representation shares: values carried as parts.

An emulation step (integer words, :mod:`no64.transforms.emulate`; float64
pairs, :mod:`no64.transforms.pairs`; 16-bit integers on a device without
them, :mod:`no64.transforms.widen`) replaces each value of a type it takes
over by a *representation* -- two 32-bit parts, a :class:`~no64.ir.words.Words`
or a :class:`~no64.ir.pairs.Pair`, or one 32-bit value -- and each op that
reads or computes one by its rule in the op table.  What does not depend on the representation is
here, written once:

* the substitution of values (``value``/``bind``) and of representations
  (``rep``/``bind_rep``) while a region is rebuilt;
* values carried *packed* across a region or function boundary (one
  ``S x 2`` tensor), retyped in place and unpacked once, right where they
  are defined (:meth:`Carrier.retype_packed`, :meth:`Carrier.unpacked`);
* the copy of a region's block into a rebuilt op, each carried value of its
  terminator returned as its parts (:meth:`Carrier.copy_block`), and the
  rebuilding of an op with a body (``reduce``, ``reduce_window``,
  ``scatter``, ``sort``) with each carried slot as its parts
  (:meth:`Carrier.rebuild`, :meth:`Carrier.rebuild_sort`);
* a refusal naming the op and its location;
* a function's type made to say what its rebuilt body takes and returns
  (:func:`refresh_signature`).

* the driver of the step (:meth:`Carrier.run`), as MLIR's dialect
  conversion drives a type converter and its patterns: the walk of every
  function (:meth:`Carrier.visit`), the hand-off of carried values packed
  to a loop, a branch or a call and back from a region or a function
  (:meth:`Carrier.tie`, :meth:`Carrier.hand_back`), the application of an
  op's rule from the op table (the representation's field of its
  :class:`~no64.spec.registry.OpSpec`) with its results bound
  (:meth:`Carrier.apply_rule`), the count by op name, and the erasure of the
  ops replaced.

A representation is a subclass.  It says which types it carries, what its
parts are and how it packs and unpacks (:meth:`Carrier.carries`,
:meth:`Carrier.parts`, :meth:`Carrier.part_types`, :meth:`Carrier.from_parts`,
:meth:`Carrier.pack`, :meth:`Carrier.unpack`), what stands for an operand
(:meth:`Carrier.rep`), which ops it takes (:meth:`Carrier.takes`: the words
the plan marked, the pairs every op touching a float64 value), which field of
the op table holds its rules (``rule_field``), how an entry's results leave
(:meth:`Carrier.leaves`, :meth:`Carrier.narrow`), and what it does before
and after the walk (:meth:`Carrier.begin`, :meth:`Carrier.finish`).

A representation of one part per value (the 16-bit widening) may compute an
op by changing it in place rather than by building its replacement, as
MLIR's ``modifyOpInPlace`` does (``retypes_in_place``): the driver then
keeps the op and walks into its regions, whose values are still the
program's.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, NoReturn, TypeVar

from ..errors import UnsupportedOpError
from ..ir._compat import attribute_dict, block_argument
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.locations import decode_location
from ..spec.registry import spec_of
from ..spec.util import after
from ..spec.walk import functions

__all__ = ["Carrier", "Leave", "refresh_signature"]

R = TypeVar("R")


class Leave(enum.Enum):
    """How a function's carried results leave it (:meth:`Carrier.leaves`)."""

    #: Packed for a caller that unpacks them again (a ``concatenate``, as a
    #: loop's state: see :func:`no64.ir.words.interleave`).
    CARRIED = "carried"
    #: Packed for the host (the select over ``2 x S`` transposed).
    PACKED = "packed"
    #: As the 64-bit program's types, which the narrowing pass makes 32-bit
    #: (:meth:`Carrier.narrow`): the entry of a caller that fixes its types.
    NARROW = "narrow"


class Carrier(Generic[R]):
    """The state, the shared steps and the driver of an emulation whose
    values are carried as representations ``R``.  A subclass sets ``root``,
    ``by_op``, ``_erase``, ``_types``, ``_subst``, ``_reps`` and ``_packed``
    (the root op, empty dicts, lists and a set), the class attributes below,
    and implements the representation hooks."""

    #: The field of :class:`~no64.spec.registry.OpSpec` that holds this
    #: representation's rule for an op.
    rule_field: ClassVar[str]
    #: The class of a representation (what a rule returns for a carried result).
    rep_class: ClassVar[type[Any]]
    #: Why an op without a rule (or one whose rule does not apply) is refused.
    no_rule: ClassVar[str]
    #: What the ops replaced were computed as (the message of a leftover use).
    done_as: ClassVar[str]
    #: Its rules change the op they compute in place (each value retyped one
    #: for one, its operands set to their representations) rather than
    #: build its replacement: the driver keeps the op, erases nothing, and
    #: walks into its regions.
    retypes_in_place: ClassVar[bool] = False

    root: ir.Operation
    #: the ops computed by a rule (or handing carried values to a loop, as
    #: the representation counts them), by name
    by_op: dict[str, int]
    _erase: list[ir.Operation]
    _types: dict[ir.Value, ir.Type]
    _subst: dict[ir.Value, ir.Value]
    _reps: dict[ir.Value, Any]
    _packed: set[ir.Value]

    # ------------------------------------------------ representation hooks
    def carries(self, t: ir.Type) -> bool:
        """Whether a value of type ``t`` (of the 64-bit program) is carried
        in a region this step copies."""
        raise NotImplementedError

    def parts(self, rep: R) -> list[ir.Value]:
        """``rep`` as the values a terminator returns or an op takes, in order."""
        raise NotImplementedError

    def part_types(self, t: ir.Type) -> list[ir.Type]:
        """The types of the parts of a carried value of type ``t``."""
        raise NotImplementedError

    def from_parts(self, parts: Sequence[ir.Value], t: ir.Type) -> R:
        """The representation made of ``parts`` of a value of type ``t``."""
        raise NotImplementedError

    def rep(self, v: ir.Value) -> R:
        """The representation of carried operand ``v`` at the insertion point."""
        raise NotImplementedError

    def unpack(self, packed: ir.Value) -> R:
        """The representation of a packed ``S x 2`` value (at the insertion point)."""
        raise NotImplementedError

    def pack(self, rep: R, carried: bool) -> ir.Value:
        """``rep`` packed as one ``S x 2`` value at the insertion point: a
        ``concatenate`` where ``carried`` (a loop's state, a branch's or a
        call's values), else for the host."""
        raise NotImplementedError

    # ------------------------------------------------------ step hooks
    def takes(self, op: ir.Operation) -> list[int] | None:
        """Whether the step rewrites ``op`` (met by the walk): ``None`` if
        not, else the operands it hands over packed, where ``op`` is a loop,
        a branch, a call or a terminator."""
        raise NotImplementedError

    def begin(self) -> None:
        """Before the walk: carry packed the values that cross a region or
        function boundary (:meth:`retype_packed`)."""

    def tied(self, op: ir.Operation) -> None:
        """After the carried operands of loop, branch or call ``op`` were
        handed over packed: what the representation does with its results."""

    def leaves(self, fn: ir.Operation) -> Leave:
        """How function ``fn``'s carried results leave it."""
        raise NotImplementedError

    def narrow(self, ret: ir.Operation, x: ir.Value, rep: R) -> ir.Value:
        """Carried result ``x`` of return ``ret`` (``rep``) as the 64-bit
        program's type, made 32-bit by the narrowing pass (``Leave.NARROW``),
        at the insertion point."""
        raise NotImplementedError

    def bind_result(self, r: ir.Value, rep: R, in_place: bool) -> None:
        """Result ``r`` of an op computed by its rule is represented by ``rep``."""
        self._reps[r] = rep

    def finish(self) -> None:
        """After the walk, before the ops replaced are erased."""

    # ------------------------------------------------------------ shared
    def type(self, v: ir.Value) -> ir.Type:
        """The type ``v`` has in the 64-bit program (carried values are
        retyped to their packed form)."""
        return self._types.get(v) or v.type

    def value(self, v: ir.Value) -> ir.Value:
        """The value that stands for ``v`` (a value of a region being
        rebuilt maps to its copy; any other value is itself)."""
        return self._subst.get(v, v)

    def bind(self, old: ir.Value, new: ir.Value) -> None:
        """``new`` stands for ``old`` (in a region being rebuilt)."""
        self._subst[old] = new

    def bind_rep(self, old: ir.Value, rep: R) -> None:
        """``rep`` represents carried ``old`` (in a region being rebuilt)."""
        self._reps[old] = rep

    def refuse(self, op: ir.Operation, reason: str) -> NoReturn:
        """Raise :class:`~no64.errors.UnsupportedOpError` for ``op``."""
        raise UnsupportedOpError(op.name, decode_location(op.location), reason)

    def retype_packed(self, v: ir.Value, packed: ir.Type) -> None:
        """Carry ``v`` packed: its type becomes ``packed``, its 64-bit type
        is remembered (:meth:`type`)."""
        self._types[v] = v.type
        v.set_type(packed)
        self._packed.add(v)

    def unpacked(self, v: ir.Value) -> R:
        """The representation of packed ``v``, unpacked once, right where it
        is defined (first in its block for a block argument)."""
        rep = self._reps.get(v)
        if rep is not None:
            return rep
        arg = block_argument(v)
        if arg is not None:
            block = arg.owner
            ip = ir.InsertionPoint.at_block_begin(block)
            loc = _as_op(block.owner).location
        else:
            op = _as_op(v.owner)
            ip, loc = after(op), op.location
        with ip, loc:
            rep = self._reps[v] = self.unpack(v)
        return rep

    def copy_block(self, block: ir.Block, returned: Callable[[R], R] | None = None) -> None:
        """Copy ``block``'s ops to the insertion point (its arguments bound
        by the caller): ops that touch a carried value computed by
        :meth:`compute_copied`, the others copied; the terminator returns
        each carried value as its parts (first passed through ``returned``,
        if given)."""
        for op in block.operations:
            op = _as_op(op)
            spec = spec_of(op.name)
            if spec.terminator:
                values: list[ir.Value] = []
                for x in op.operands:
                    if self.carries(self.type(x)):
                        rep = self.rep(x)
                        values += self.parts(returned(rep) if returned is not None else rep)
                    else:
                        values.append(self.value(x))
                ir.Operation.create(op.name, results=[], operands=values, loc=op.location)
                continue
            if self._touches(op):
                self.compute_copied(op)
                continue
            if len(op.regions):
                self.refuse(op, "no64 cannot copy an op with regions inside this region")
            new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                      operands=[self.value(x) for x in op.operands],
                                      attributes=attribute_dict(op), loc=op.location)
            for r, nr in zip(op.results, new.results):
                self._subst[r] = nr

    # -------------------------------------------------------------- the driver
    def run(self) -> None:
        """Rewrite every function of the module (see the module docstring)."""
        self.begin()
        funcs = functions(self.root)
        for fn in funcs:
            self.walk(fn)
        self.finish()
        self.erase_replaced(self._erase, self.done_as)
        self.swept()
        for fn in funcs:
            refresh_signature(fn)

    def swept(self) -> None:
        """After the ops replaced were erased: what else the step erases."""

    def visit(self, op: ir.Operation) -> bool:
        """Rewrite ``op`` (met by :meth:`walk`) if this step takes it
        (:meth:`takes`): a loop, branch or call hands its carried values
        over packed, a terminator hands them back, any other op is computed
        by its rule; whether the walk goes on into its regions (an op
        whose rule rebuilt its body, not: see ``retypes_in_place``)."""
        fed = self.takes(op)
        if fed is None:
            return True
        spec = spec_of(op.name)
        if spec.ties:
            self.tie(op, fed)
            return True
        if spec.terminator:
            self.hand_back(op, fed)
            return False
        self.apply_rule(op, in_place=True)
        return self.retypes_in_place or not spec.owns_regions

    def tie(self, op: ir.Operation, fed: Sequence[int]) -> None:
        """Loop, branch or call ``op``: its operands ``fed`` handed over packed."""
        for i in fed:
            with ir.InsertionPoint(op), op.location:
                op.operands[i] = self.pack(self.rep(op.operands[i]), True)
        self.tied(op)

    def hand_back(self, op: ir.Operation, fed: Sequence[int]) -> None:
        """Terminator ``op``: its operands ``fed`` handed back packed to the
        loop or branch whose region it ends, or leaving the function as
        :meth:`leaves` says."""
        parent = _as_op(op.parent)
        leave = self.leaves(parent) if spec_of(parent.name).function else Leave.CARRIED
        for i in fed:
            x = op.operands[i]
            with ir.InsertionPoint(op), op.location:
                rep = self.rep(x)
                if leave is Leave.NARROW:
                    op.operands[i] = self.narrow(op, x, rep)
                else:
                    op.operands[i] = self.pack(rep, leave is Leave.CARRIED)

    def apply_rule(self, op: ir.Operation, in_place: bool) -> None:
        """Compute ``op`` by its rule, bind its results and count it: in
        place (before ``op``, whose uses then read the new values, erased
        at the end; or ``op`` itself changed, where the representation
        ``retypes_in_place``), or at the insertion point of a block being
        copied."""
        spec = spec_of(op.name)
        rule = getattr(spec, self.rule_field)
        if rule is None or not self.applies(spec, op):
            self.refuse(op, self.no_rule)
        with ir.InsertionPoint(op) if in_place else contextlib.nullcontext(), op.location:
            outs = rule(op, self)
            for r, out in zip(op.results, outs):
                if isinstance(out, self.rep_class):
                    self.bind_result(r, out, in_place)
                elif out is not None:
                    self._subst[r] = out
                    if in_place:
                        r.replace_all_uses_with(out)
        self.by_op[op.name] = self.by_op.get(op.name, 0) + 1
        if in_place and not self.retypes_in_place:
            self._erase.append(op)

    def applies(self, spec: Any, op: ir.Operation) -> bool:
        """Whether the rule of ``spec`` computes ``op`` (it has one)."""
        return True

    def compute_copied(self, op: ir.Operation) -> None:
        """Compute ``op``, met in a copied block, at the insertion point by
        its rule, and bind its results."""
        self.apply_rule(op, in_place=False)

    def walk(self, fn: ir.Operation) -> None:
        """Visit every op of function ``fn``, in order, each block's ops
        before those of the regions inside it."""
        stack = [fn]
        while stack:
            cur = stack.pop()
            for region in cur.regions:
                for block in region.blocks:
                    for op in list(block.operations):
                        op = _as_op(op)
                        if self.visit(op) and len(op.regions):
                            stack.append(op)

    @staticmethod
    def erase_replaced(ops: list[ir.Operation], what: str) -> None:
        """Erase the ops the rewrite replaced, last first; one whose results
        are still read is a bug in a rule."""
        for op in reversed(ops):
            for r in op.results:
                if any(True for _ in r.uses):
                    raise AssertionError(f"{op.name} {what} still has users (a no64 bug)")
            op.erase()

    def _touches(self, op: ir.Operation) -> bool:
        """Whether ``op`` reads or computes a carried value."""
        return any(self.carries(self.type(x)) for x in op.operands) or any(
            self.carries(r.type) for r in op.results)

    # ------------------------------------------------- ops rebuilt with parts
    def split(self, values: Sequence[ir.Value], carried: Sequence[bool]) -> list[ir.Value]:
        """``values`` as the operands of a rebuilt op: each carried one as its parts."""
        out: list[ir.Value] = []
        for v, c in zip(values, carried):
            out += self.parts(self.rep(v)) if c else [self.value(v)]
        return out

    def split_types(self, types: Sequence[ir.Type], carried: Sequence[bool]) -> list[ir.Type]:
        """``types`` as a rebuilt op's: each carried one as its parts' types."""
        out: list[ir.Type] = []
        for t, c in zip(types, carried):
            out += self.part_types(t) if c else [t]
        return out

    def joined(self, values: Sequence[ir.Value], types: Sequence[ir.Type],
               carried: Sequence[bool]) -> list[Any]:
        """A rebuilt op's ``values`` (results, block arguments) per slot of
        ``types``: a representation of its parts where carried, else the value."""
        out: list[Any] = []
        k = 0
        for t, c in zip(types, carried):
            n = len(self.part_types(t)) if c else 1
            out.append(self.from_parts(values[k:k + n], t) if c else values[k])
            k += n
        return out

    def rebuild(self, op: ir.Operation, operands: Sequence[ir.Value], result_types: Sequence[ir.Type],
                args_carried: Sequence[bool], *, attributes: dict[str, ir.Attribute] | None = None,
                enter: Callable[[R], R] | None = None, returned: Callable[[R], R] | None = None,
                arg_types: Sequence[ir.Type] | None = None) -> ir.Operation:
        """A copy of ``op`` (its attributes, or ``attributes``) with new
        operands and result types, whose one-block region computes the old
        body on the representation: each old block argument carried or not
        by ``args_carried``.  ``enter`` and ``returned`` transform what the
        body sees of a carried argument and what it returns (``arg_types``:
        the new block's argument types, where they are not the parts')."""
        attrs = attributes if attributes is not None else attribute_dict(op)
        new = ir.Operation.create(op.name, results=list(result_types), operands=list(operands),
                                  attributes=attrs, regions=1)
        old_block = op.regions[0].blocks[0]
        old_args = list(old_block.arguments)
        types = [a.type for a in old_args]
        block = new.regions[0].blocks.append(
            *(arg_types if arg_types is not None else self.split_types(types, args_carried)))
        with ir.InsertionPoint(block):
            for arg, c, v in zip(old_args, args_carried, self.joined(list(block.arguments), types, args_carried)):
                if c:
                    self.bind_rep(arg, enter(v) if enter is not None else v)
                else:
                    self.bind(arg, v)
            self.copy_block(old_block, returned)
        return new

    def rebuild_carried(self, op: ir.Operation) -> list[Any]:
        """``op`` (with one body) rebuilt with every operand, result and body
        argument of a carried type as its parts (:meth:`rebuild`); its
        results per slot."""
        operands = list(op.operands)
        rtypes = [r.type for r in op.results]
        rc = [self.carries(t) for t in rtypes]
        args = list(op.regions[0].blocks[0].arguments)
        new = self.rebuild(op, self.split(operands, [self.carries(self.type(x)) for x in operands]),
                           self.split_types(rtypes, rc), [self.carries(a.type) for a in args])
        return self.joined(list(new.results), rtypes, rc)

    def rebuild_sort(self, op: ir.Operation, carried: Sequence[bool],
                     through: Callable[[ir.Value], ir.Value] | None = None) -> list[Any]:
        """``sort`` with each carried operand as its parts; the comparator
        takes, for a carried operand, each part of both sides in turn
        (``lhs_0, rhs_0, lhs_1, rhs_1``), its body computed on the
        representation.  Its results per slot.

        ``through``: an involution (``f(f(x)) == x``) each carried part
        goes through on its way into the sort, undone in the comparator and
        on the results, so that every sorted part is computed by an op
        rather than read as it is (a compiler may then not fuse the slice
        that unpacks it into the sort)."""
        operands = list(op.operands)
        rtypes = [r.type for r in op.results]
        parts = self.split(operands, carried)
        if through is not None:
            parts = [through(v) if c else v for v, c in zip(parts, self._part_flags(rtypes, carried))]
        new = ir.Operation.create(op.name, results=self.split_types(rtypes, carried),
                                  operands=parts, attributes=attribute_dict(op),
                                  regions=1)
        old_block = op.regions[0].blocks[0]
        old = list(old_block.arguments)
        arg_types: list[ir.Type] = []
        for i, c in enumerate(carried):
            if c:
                for t in self.part_types(old[2 * i].type):
                    arg_types += [t, t]
            else:
                arg_types += [old[2 * i].type, old[2 * i + 1].type]
        block = new.regions[0].blocks.append(*arg_types)
        a = list(block.arguments)
        k = 0
        for i, c in enumerate(carried):
            lhs, rhs = old[2 * i], old[2 * i + 1]
            if c:
                n = len(self.part_types(lhs.type))
                args = a[k:k + 2 * n]
                if through is not None:
                    with ir.InsertionPoint(block):
                        args = [through(x) for x in args]
                self.bind_rep(lhs, self.from_parts(args[0::2], lhs.type))
                self.bind_rep(rhs, self.from_parts(args[1::2], rhs.type))
                k += 2 * n
            else:
                self.bind(lhs, a[k])
                self.bind(rhs, a[k + 1])
                k += 2
        with ir.InsertionPoint(block):
            self.copy_block(old_block)
        results = list(new.results)
        if through is not None:
            results = [through(v) if c else v for v, c in zip(results, self._part_flags(rtypes, carried))]
        return self.joined(results, rtypes, carried)

    def _part_flags(self, types: Sequence[ir.Type], carried: Sequence[bool]) -> list[bool]:
        """Per value of :meth:`split_types`, whether it is a carried part."""
        out: list[bool] = []
        for t, c in zip(types, carried):
            out += [True] * len(self.part_types(t)) if c else [False]
        return out


def refresh_signature(fn: ir.Operation) -> None:
    """Make a function's ``function_type`` say what its body now takes and
    returns: its block's argument types, and the operand types of its
    terminator (the results it had where the body has no terminator yet).
    A step that retyped a function's arguments or results calls it once it
    has rebuilt the body."""
    block = fn.regions[0].blocks[0]
    inputs = [a.type for a in block.arguments]
    results: list[ir.Type] | None = None
    for op in block.operations:
        op = _as_op(op)
        if spec_of(op.name).terminator:
            results = [v.type for v in op.operands]
    if results is None:
        results = list(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
