"""Exact 64-bit integers in 32-bit words, where 64 bits are load-bearing.

The narrowing pass keeps a 64-bit integer value exact only if it fits in 32
bits.  This step runs before it and takes the values that may not fit out of
its hands: each becomes a pair of ``ui32`` words (:mod:`no64.ir.words`),
computed by the op's ``emulate`` rule in the op registry, so that the
converted program computes what the 64-bit program computes, bit for bit.

Which values are emulated (the set *E*):

* under ``policy="exact"``, every 64-bit integer value the range analysis
  cannot prove inside the 32-bit range -- the entry function's 64-bit
  integer inputs included, unless a declared range proves them to fit
  (with ``words_in=False`` they are taken as 32-bit values instead);
* under every policy, values whose op has no 32-bit form: a 64-bit shift by
  32 or more, an out-of-range constant that is not a sentinel (under the
  ``"error"`` integer policy), ... -- the ops the pass would otherwise refuse;
* under every policy, the ops that read a value that may hold a sentinel
  (``INT64_MAX``, ...) as the 64-bit number it is (the op table's
  ``SentinelUse.READS``: ``INT64_MAX % 1000``, ``clz``, ``>> 33``, a convert
  to float, ...), where they have a rule (the pass judges the others);
* then, to keep them exact: every 64-bit result computed from an emulated
  value that is not proven to fit, and every value that may hold a sentinel
  and meets an emulated one (its 32-bit image would not keep its meaning
  there: it enters with its 64-bit value).

Values that must share one representation -- a loop's carried value, its
body and condition arguments and its result; the results of a ``case``; a
function's argument or result and what its callers pass or receive -- are
emulated together, and carried *packed* as one ``S x 2`` tensor.  An op
that reads an emulated value is emulated too; where its result fits in 32
bits, it leaves the words as the single 32-bit value the narrowing pass
expects (the low word).  A value that enters an emulated op from the
narrowed program is sign- or zero-extended; a constant enters with its
exact 64-bit elements.  An op that touches an emulated value and has no
``emulate`` rule is refused with its location.

The entry function's 64-bit inputs and results that are emulated cross the
boundary packed: shape ``S x 2``, ``[..., 0]`` the low and ``[..., 1]`` the
high word (``ui32`` for unsigned values, ``i32`` bit patterns for signed
ones); :func:`split_words` and :func:`join_words` convert on the host.
"""


from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..analysis.ranges import RangeAnalysis, constant_elements, defining_op
from ..ir import words as W
from ..ir._compat import block_argument
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.types import is_int64_tensor as is_wide_int
from ..kinds import OpForm
from ..spec.registry import UNKNOWN, spec_of
from ..spec.walk import functions as _functions, is_public as _is_public, symbol_name as _sym
from .carry import Carrier, refresh_signature
from .emulation_plan import (
    EmulationPlan,
    _function_return,
    _Groups,
    _ops_with_regions_and_calls,
    _owns_regions,
    _ties,
    _unsigned,
    exact_input_ranges,
)

__all__ = ["Emulation", "emulation_for", "exact_input_ranges", "is_wide_int", "join_words", "split_words"]

T = TypeVar("T")


def join_words(packed: Any) -> np.ndarray:
    """The 64-bit integers of an emulated output: ``packed`` has shape
    ``S x 2`` (``[..., 0]`` the low, ``[..., 1]`` the high 32 bits);
    ``uint32`` words give ``uint64``, ``int32`` words give ``int64``."""
    a = np.asarray(packed)
    if a.ndim == 0 or a.shape[-1] != 2 or a.dtype not in (np.dtype(np.int32), np.dtype(np.uint32)):
        raise ValueError(f"not a packed pair of 32-bit words: {a.dtype}{list(a.shape)}")
    bits = a.view(np.uint32).astype(np.uint64)
    joined = np.asarray(bits[..., 0] | (bits[..., 1] << np.uint64(32)))
    return joined if a.dtype == np.uint32 else joined.view(np.int64)


def split_words(values: Any) -> np.ndarray:
    """The packed words of 64-bit integers, for an input that enters a
    converted module as words: shape ``S x 2``, ``[..., 0]`` the low and
    ``[..., 1]`` the high 32 bits; ``uint64`` values give ``uint32`` words,
    ``int64`` values ``int32`` bit patterns (the inverse of :func:`join_words`)."""
    a = np.asarray(values)
    if a.dtype not in (np.dtype(np.int64), np.dtype(np.uint64)):
        raise ValueError(f"not 64-bit integers: {a.dtype}{list(a.shape)}")
    bits = a.view(np.uint64) if a.ndim else a.reshape(1).view(np.uint64).reshape(())
    words = np.stack([bits & np.uint64(0xFFFFFFFF), bits >> np.uint64(32)], axis=-1).astype(np.uint32)
    return words if a.dtype == np.uint64 else words.view(np.int32)

#: The mark the plan leaves on each op to emulate: the operands (of a
#: carrying op or terminator) that must be handed packed values.
_MARK = "no64.emulate"


@dataclasses.dataclass
class Emulation(Carrier[W.Words]):
    """The rewrite of the ops an :class:`~no64.transforms.emulation_plan.EmulationPlan`
    names (its fields are the plan's), and what emulation rules see of it."""

    root: ir.Operation
    analysis: RangeAnalysis
    wide: set[ir.Value]
    ops: list[ir.Operation]
    #: indices of entry-function results that come back packed
    outputs: list[int]
    slots: dict[ir.Value, list[ir.Value]]  # group root -> members
    groups: _Groups
    #: Entry-function results narrowed to their low word instead
    #: (``outputs="narrow"``): the 64-bit values returned there.
    narrowed: list[ir.Value] = dataclasses.field(default_factory=list)
    #: indices of entry-function arguments that enter packed
    inputs: list[int] = dataclasses.field(default_factory=list)
    #: Of ``narrowed``, those checked by value when the module runs
    #: (``outputs="checked"``): the entry function returns one more result,
    #: a scalar ``i1``, true when they all fit in 32 bits.
    checked: set[ir.Value] = dataclasses.field(default_factory=set)
    #: Op forms the device refuses with several inputs (a target's profile).
    one_input: frozenset[OpForm] = frozenset()
    _reps: dict[ir.Value, W.Words] = dataclasses.field(default_factory=dict)
    _consts: dict[Any, W.Words] = dataclasses.field(default_factory=dict)

    # ------------------------------------------------------------ for rules
    def __post_init__(self) -> None:
        self.by_op: dict[str, int] = {}
        self.marks: list[tuple[ir.Operation, list[int]]] = []
        self._types: dict[ir.Value, ir.Type] = {}
        self._subst: dict[ir.Value, ir.Value] = {}
        self._packed = {m for members in self.slots.values() for m in members}
        #: Ranges the analysis of the 64-bit program established, for a
        #: later analysis of the rewritten module: the values that stand for
        #: 64-bit results proven to fit (built from their low words, where
        #: a fresh analysis would see only a 32-bit convert), and the 64-bit
        #: results of calls that stay as they are (bounded per call site,
        #: where a fresh analysis would join what the callee's rewritten
        #: body returns to every caller).
        self.known_ranges: dict[ir.Value, Any] = {}
        #: entry returns -> the flag (every checked result fits) to return last
        self._flags: list[tuple[ir.Operation, ir.Value]] = []
        #: the ops rewritten, to erase; the functions whose signature changes
        self._erase: list[ir.Operation] = []
        self._funcs: dict[str, ir.Operation] = {}
        #: what :meth:`once` made in the block being written, in order
        self._once_block: ir.Block | None = None
        self._once: dict[Hashable, Any] = {}

    def is_wide(self, v: ir.Value) -> bool:
        return v in self.wide

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        block = ir.InsertionPoint.current.block
        if self._once_block is None or self._once_block != block:
            # another block: what was made elsewhere may not dominate here
            self._once_block, self._once = block, {}
        if key not in self._once:
            self._once[key] = make()
        return self._once[key]

    def words(self, v: ir.Value, unsigned: bool | None = None) -> W.Words:
        """The words of operand ``v`` at the current insertion point."""
        w = self._reps.get(v)
        if w is None:
            w = self.unpacked(v) if v in self._packed else self._entry(v)
        if unsigned is not None and w.unsigned != unsigned:
            w = w.retag(unsigned)
        return w

    # ------------------------------------------- the representation (Carrier)
    def carries(self, t: ir.Type) -> bool:
        return is_wide_int(t)

    def parts(self, rep: W.Words) -> list[ir.Value]:
        return [rep.lo, rep.hi]

    def part_types(self, t: ir.Type) -> list[ir.Type]:
        u = ir.RankedTensorType.get(list(ir.RankedTensorType(t).shape), W.u32())
        return [u, u]

    def from_parts(self, parts: Sequence[ir.Value], t: ir.Type) -> W.Words:
        e = ir.RankedTensorType(t).element_type
        return W.Words(parts[0], parts[1], isinstance(e, ir.IntegerType) and e.is_unsigned)

    def unpack(self, packed: ir.Value) -> W.Words:
        return W.unpack(packed)

    def rep(self, v: ir.Value) -> W.Words:
        return self.words(v)

    def compute_copied(self, op: ir.Operation) -> None:
        spec = spec_of(op.name)
        if not spec.can_emulate(op):
            self.refuse(op, "no64 cannot compute this op on 64-bit words inside the region")
        assert spec.emulate is not None  # (can_emulate says so)
        with op.location:
            outs = spec.emulate(op, self)
        for r, out in zip(op.results, outs):
            if isinstance(out, W.Words):
                self._reps[r] = out
            elif out is not None:
                self._subst[r] = out
        self.by_op[op.name] = self.by_op.get(op.name, 0) + 1

    def _entry(self, v: ir.Value) -> W.Words:
        t = v.type
        if not is_wide_int(t):
            if isinstance(t, ir.RankedTensorType) and isinstance(t.element_type, ir.IntegerType):
                return W.from_single(v, t.element_type.is_unsigned)
            raise TypeError(f"no words for a value of type {t}")
        unsigned = _unsigned(t)
        shape = list(ir.RankedTensorType(t).shape)
        op = defining_op(v)
        spec = spec_of(op.name) if op is not None else UNKNOWN
        if op is not None and spec.constant:
            # its exact elements, however many (an out-of-range constant
            # must not reach the narrowing pass)
            elements = constant_elements(op)
            if elements is not None:
                return W.from_ints(shape, elements, unsigned)
        if op is not None and spec.fold is not None and (spec.moves or spec.convert):
            # a constant broadcast, reshaped or converted: its exact elements
            folded = self.analysis.fold(v, sentinels=True)
            if folded is not None and folded.size and folded.size <= (1 << 16):
                return W.from_ints(shape, folded, unsigned)
        # a value of the narrowed program: the pass makes ``v`` 32-bit, and
        # this convert a no-op
        single = W.convert(v, W.u32() if unsigned else W.i32())
        return W.from_single(single, unsigned)

    # ------------------------------------------------------------ apply
    def apply(self) -> tuple[int, dict[str, int]]:
        """Rewrite the module; returns the number of ops emulated, and the
        count by op name."""
        # (Ops are found again by the mark the plan left on them: an op's
        # Python hash changes with its operands.)
        # Mark the ops to emulate (the plan changed nothing in the module).
        for op, indices in self.marks:
            op.attributes[_MARK] = ir.DenseI64ArrayAttr.get(indices)
        for fn in _functions(self.root):
            for op in _ops_with_regions_and_calls(fn):
                if not spec_of(op.name).call:
                    continue
                for r in op.results:
                    if is_wide_int(r.type) and r not in self.wide:
                        known = self.analysis.range(r)
                        if known is not None:
                            self.known_ranges[r] = known
        self._erase = []
        funcs = self._funcs = {}
        # retype the carried values (packed)
        for members in self.slots.values():
            for v in members:
                self.retype_packed(v, W.packed_type(ir.RankedTensorType(v.type).shape, _unsigned(v.type)))
                arg = block_argument(v)
                if arg is not None:
                    owner = _as_op(arg.owner.owner)
                    if spec_of(owner.name).function:
                        funcs[_sym(owner)] = owner
        for fn in _functions(self.root):
            self.walk(fn)
        erase = self._erase
        for ret, flag in self._flags:
            # the entry returns the flag last (its signature refreshed below)
            with ir.InsertionPoint(ret), ret.location:
                ir.Operation.create(ret.name, results=[], operands=[*ret.operands, flag])
            erase.append(ret)
            fn = _as_op(ret.parent)
            if "res_attrs" in fn.attributes:
                kept = list(ir.ArrayAttr(fn.attributes["res_attrs"]))
                fn.attributes["res_attrs"] = ir.ArrayAttr.get([*kept, ir.DictAttr.get({})])
        self.erase_replaced(erase, "emulated on words")
        _sweep(self.root)
        for fn in funcs.values():
            refresh_signature(fn)
        return sum(self.by_op.values()), dict(sorted(self.by_op.items()))

    def visit(self, op: ir.Operation) -> bool:
        """The ops the plan marked: carried values handed over packed (a
        loop, branch, call or terminator), or computed on words."""
        attrs = op.attributes
        if _MARK not in attrs:
            return not _owns_regions(op)
        fed = list(ir.DenseI64ArrayAttr(attrs[_MARK]))
        del attrs[_MARK]
        if _ties(op):
            self._tie_uses(op, fed, self._funcs)
            return True
        self._emulate(op)
        self._erase.append(op)
        self.by_op[op.name] = self.by_op.get(op.name, 0) + 1
        return not _owns_regions(op)

    def _tie_uses(self, op: ir.Operation, fed: list[int], funcs: dict[str, ir.Operation]) -> None:
        """Hand packed values to the carried values (or outputs) ``op`` feeds."""
        returns = _function_return(op)
        if returns and fed:
            fn = _as_op(op.parent)
            funcs[_sym(fn)] = fn
        # only the entry function's results come back narrowed (outputs
        # "narrow"); a private function hands its callers packed words
        narrow = returns and bool(self.narrowed) and not self.outputs and _is_public(_as_op(op.parent))
        checked: list[W.Words] = []
        for i in fed:
            x = op.operands[i]
            with ir.InsertionPoint(op), op.location:
                w = self._operand_words(x)
                if narrow:
                    if x in self.checked:
                        checked.append(w)
                    single = W.saturated_single(w)
                    op.operands[i] = W.make("convert", [single], self.type(x))
                else:
                    # a private function's result is unpacked by its
                    # callers: handed over as a concatenate, as a loop's
                    # (which :mod:`~no64.transforms.forward` forwards)
                    op.operands[i] = W.pack(w, carried=not (returns and _is_public(_as_op(op.parent))))
        if checked:
            with ir.InsertionPoint(op), op.location:
                self._flags.append((op, W.all_fit(checked)))

    def _operand_words(self, x: ir.Value) -> W.Words:
        if x in self.wide and self._is_packed(x):
            return self.unpacked(x)
        return self.words(x)

    def _is_packed(self, v: ir.Value) -> bool:
        return v in self._packed

    def _emulate(self, op: ir.Operation) -> None:
        spec = spec_of(op.name)
        assert spec.emulate is not None
        with ir.InsertionPoint(op), op.location:
            outs = spec.emulate(op, self)
            for r, out in zip(op.results, outs):
                if out is None:
                    continue
                if isinstance(out, W.Words):
                    if r in self.wide:
                        self._reps[r] = out
                    else:
                        single = _exit(out, r.type)
                        known = self.analysis.range(r)
                        if known is not None:
                            self.known_ranges[single] = known
                        r.replace_all_uses_with(single)
                else:
                    r.replace_all_uses_with(out)


def _exit(w: W.Words, t: ir.Type) -> ir.Value:
    """A 64-bit typed value holding the low word: the narrowing pass makes it
    the 32-bit value (the convert becomes a no-op)."""
    rt = ir.RankedTensorType(t)
    src = w.lo if _unsigned(t) else W.bitcast(w.lo, W.i32())
    return W.make("convert", [src], rt)


def _sweep(root: ir.Operation) -> None:
    """Erase the pure ops with a 64-bit integer result that nothing reads any
    more (what fed the emulated ops: constants, broadcasts, converts)."""
    stack = [root]
    while stack:
        cur = stack.pop()
        for region in cur.regions:
            for block in region.blocks:
                for op in reversed(list(block.operations)):
                    op = _as_op(op)
                    if len(op.regions):
                        stack.append(op)
                        continue
                    if len(op.results) != 1 or not spec_of(op.name).pure:
                        continue
                    r = op.results[0]
                    if is_wide_int(r.type) and not any(True for _ in r.uses):
                        op.erase()


# ---------------------------------------------------------------- planning


def emulation_for(plan: EmulationPlan | None, one_input: frozenset[OpForm] = frozenset()) -> Emulation | None:
    """The emulation step for the values a plan of
    :func:`~no64.transforms.emulation_plan.plan_words` emulates (for a
    device that refuses the ``one_input`` forms with several inputs);
    ``None`` if it emulates none."""
    if plan is None:
        return None
    em = Emulation(plan.root, plan.analysis, plan.wide, plan.ops, plan.outputs, plan.slots, plan.groups)
    em.one_input = one_input
    em.marks = plan.marks
    em.inputs = plan.inputs
    em.narrowed = plan.narrowed
    return em
