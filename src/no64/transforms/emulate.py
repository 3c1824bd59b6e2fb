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

from ..analysis.ranges import constant_elements, defining_op
from ..ir import words as W
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.types import is_int64_tensor as is_wide_int
from ..kinds import OpForm
from ..spec.registry import UNKNOWN, spec_of
from ..spec.walk import functions as _functions, is_public as _is_public
from .carry import Carrier, Leave
from .emulation_plan import (
    EmulationPlan,
    _ops_with_regions_and_calls,
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
class Emulation(EmulationPlan, Carrier[W.Words]):
    """The rewrite of the ops an :class:`~no64.transforms.emulation_plan.EmulationPlan`
    names (the plan, with what the rewrite adds), and what emulation rules see of it."""

    rule_field = "emulate"
    rep_class = W.Words
    no_rule = "no64 cannot compute this op on 64-bit words inside the region"
    done_as = "emulated on words"

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
        self.by_op = {}
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
        #: entry returns -> the words of the checked results they narrow
        #: (the flag that they all fit is returned last)
        self._checking: list[tuple[ir.Operation, list[W.Words]]] = []
        #: the ops rewritten, to erase
        self._erase: list[ir.Operation] = []
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

    # ------------------------------------------------- the step (Carrier)
    def begin(self) -> None:
        """Mark the ops to emulate, keep the ranges of the calls' results
        that stay, and carry the plan's slots packed."""
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
        for members in self.slots.values():
            for v in members:
                self.retype_packed(v, W.packed_type(ir.RankedTensorType(v.type).shape, _unsigned(v.type)))

    def apply(self) -> tuple[int, dict[str, int]]:
        """Rewrite the module; returns the number of ops emulated, and the
        count by op name."""
        self.run()
        return sum(self.by_op.values()), dict(sorted(self.by_op.items()))

    def takes(self, op: ir.Operation) -> list[int] | None:
        """The ops the plan marked, with the operands handed over packed."""
        attrs = op.attributes
        if _MARK not in attrs:
            return None
        fed = list(ir.DenseI64ArrayAttr(attrs[_MARK]))
        del attrs[_MARK]
        return fed

    def applies(self, spec: Any, op: ir.Operation) -> bool:
        return bool(spec.can_emulate(op))

    def pack(self, rep: W.Words, carried: bool) -> ir.Value:
        return W.pack(rep, carried=carried)

    def leaves(self, fn: ir.Operation) -> Leave:
        # only the entry function's results come back narrowed (outputs
        # "narrow"); a private function's result is unpacked by its callers:
        # handed over as a concatenate, as a loop's (which
        # :mod:`~no64.transforms.forward` forwards)
        if not _is_public(fn):
            return Leave.CARRIED
        return Leave.NARROW if self.narrowed and not self.outputs else Leave.PACKED

    def narrow(self, ret: ir.Operation, x: ir.Value, rep: W.Words) -> ir.Value:
        if x in self.checked:
            if not self._checking or self._checking[-1][0] != ret:
                self._checking.append((ret, []))
            self._checking[-1][1].append(rep)
        return W.make("convert", [W.saturated_single(rep)], self.type(x))

    def bind_result(self, r: ir.Value, rep: W.Words, in_place: bool) -> None:
        if not in_place or r in self.wide:
            self._reps[r] = rep
            return
        single = _exit(rep, r.type)
        known = self.analysis.range(r)
        if known is not None:
            self.known_ranges[single] = known
        r.replace_all_uses_with(single)

    def finish(self) -> None:
        """The entry returns the flag (every checked result fits) last (its
        signature refreshed by the driver)."""
        for ret, checked in self._checking:
            with ir.InsertionPoint(ret), ret.location:
                flag = W.all_fit(checked)
                ir.Operation.create(ret.name, results=[], operands=[*ret.operands, flag])
            self._erase.append(ret)
            fn = _as_op(ret.parent)
            if "res_attrs" in fn.attributes:
                kept = list(ir.ArrayAttr(fn.attributes["res_attrs"]))
                fn.attributes["res_attrs"] = ir.ArrayAttr.get([*kept, ir.DictAttr.get({})])

    def swept(self) -> None:
        _sweep(self.root)


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
    return Emulation(**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}, one_input=one_input)
