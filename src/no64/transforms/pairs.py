"""Float64 values carried as normalized pairs of f32 (``float_policy="pairs"``).

This step runs before the narrowing pass and leaves it no float64 value to
narrow: every float64 value of the program becomes a pair (hi, lo) of f32
(:mod:`no64.ir.pairs`), about 48 bits of significand with f32's exponent
range, and every op that reads or computes one is rebuilt by its rule in the
op table (:mod:`no64.rules.pair_rules`).  An op that touches a float64 value
and has no rule is refused with its location.

Every float64 value is carried, so there is nothing to plan: the step walks
each function in order and rewrites as it goes.  As for the integer word
pairs (:mod:`no64.transforms.emulate`), values that cross a region or function
boundary -- a loop's carried values, a ``case``'s results, a function's
arguments and results -- are carried *packed*, one ``S x 2 x f32`` tensor
(``[..., 0]`` hi, ``[..., 1]`` lo), and unpacked where they are defined.

The entry function's float64 arguments and results are packed pairs too
(``boundary=Outputs.WORDS``, as for ``demote(outputs="words")``), or -- for
callers whose runtime fixes the types, such as JAX's compile hook -- float64
values that the narrowing pass makes f32: taken as exact pairs on the way in
and rounded once on the way out (``boundary=Outputs.NARROW``).

LAPACK's LU factorization and triangular solve are written out as StableHLO
before this step (:mod:`no64.transforms.linalg`), and so computed on pairs.
Transcendental ops and other LAPACK calls are computed in f32 from the pair
rounded once (recorded per op as ``precision-reduced``); their results
enter as exact pairs.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from ..errors import UnsupportedOpError
from ..ir import pairs as P
from ..ir._compat import attribute_dict, block_argument
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.locations import decode_location
from ..ir.words import make
from ..kinds import Outputs
from ..rules.pair_rules import is_f64
from ..spec.registry import spec_of
from ..spec.walk import entry_function
from .emulate import _functions, _refresh_signature

__all__ = ["PairEmulation", "emulate_pairs", "split_pairs", "join_pairs"]


def split_pairs(values: Any) -> np.ndarray:
    """Float64 ``values`` as the packed pairs a converted program takes:
    shape ``S x 2`` float32, ``[..., 0]`` the value rounded to f32 and
    ``[..., 1]`` the rest."""
    v = np.asarray(values, dtype=np.float64)
    hi, lo = P.split_f64(v.reshape(-1))
    return np.stack([hi.reshape(v.shape), lo.reshape(v.shape)], axis=-1)


def join_pairs(packed: Any) -> np.ndarray:
    """The float64 values of packed pairs (shape ``S x 2`` float32)."""
    a = np.asarray(packed)
    if a.ndim == 0 or a.shape[-1] != 2 or a.dtype != np.float32:
        raise ValueError(f"not packed float32 pairs: {a.dtype}{list(a.shape)}")
    hi = a[..., 0].astype(np.float64)
    lo = a[..., 1].astype(np.float64)
    return np.where(lo == 0, hi, hi + lo)


def _is_c128(t: ir.Type) -> bool:
    if not isinstance(t, ir.RankedTensorType):
        return False
    e = t.element_type
    return isinstance(e, ir.ComplexType) and isinstance(ir.ComplexType(e).element_type, ir.F64Type)


def _packed_type(t: ir.Type) -> ir.Type:
    return P.packed_type(list(ir.RankedTensorType(t).shape))


class PairEmulation:
    """The rewrite, and what rules may ask of it (see :mod:`no64.rules.pair_rules`)."""

    def __init__(self, root: ir.Operation, boundary: Outputs = Outputs.WORDS) -> None:
        self.root = root
        self.boundary = Outputs.parse(boundary, "boundary")
        self._pairs: dict[ir.Value, P.Pair] = {}
        self._subst: dict[ir.Value, ir.Value] = {}
        self._types: dict[ir.Value, ir.Type] = {}
        self._packed: set[ir.Value] = set()
        self._narrow_args: set[ir.Value] = set()
        self._in_place = True
        self._erase: list[ir.Operation] = []
        #: ops computed in f32: (op name, location, detail)
        self.reduced_ops: list[tuple[str, Any, str]] = []
        #: (kind, op name, location, detail, count)
        self.events: list[tuple[str, str, Any, str, int]] = []
        self.by_op: dict[str, int] = {}
        self.values = 0
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    # ------------------------------------------------------------ for rules
    def type(self, v: ir.Value) -> ir.Type:
        """``v``'s type in the 64-bit program."""
        return self._types.get(v) or v.type

    def is_pair(self, v: ir.Value) -> bool:
        return is_f64(self.type(v))

    def value(self, v: ir.Value) -> ir.Value:
        """The value standing for non-float64 ``v``."""
        return self._subst.get(v, v)

    def pair(self, v: ir.Value) -> P.Pair:
        """The pair of float64 ``v`` (unpacked where it is defined, if carried)."""
        p = self._pairs.get(v)
        if p is not None:
            return p
        if v in self._packed or v in self._narrow_args:
            arg = block_argument(v)
            if arg is not None:
                block = arg.owner
                ops = list(block.operations)
                ip = ir.InsertionPoint(ops[0]) if ops else ir.InsertionPoint(block)
                loc = _as_op(block.owner).location
            else:
                from ..spec.util import after

                op = _as_op(v.owner)
                ip, loc = after(op), op.location
            with ip, loc:
                if v in self._packed:
                    p = P.unpack(v)
                else:
                    shape = list(ir.RankedTensorType(v.type).shape)
                    p = P.from_f32(make("convert", [v], P.pair_type(shape)))
            self._pairs[v] = p
            return p
        raise AssertionError(f"float64 value without a pair: {v.type} (a no64 bug)")

    def refuse(self, op: ir.Operation, reason: str) -> NoReturn:
        raise UnsupportedOpError(op.name, decode_location(op.location), reason)

    def reduced(self, op: ir.Operation, detail: str) -> None:
        """Record that ``op`` is computed with less precision than float64."""
        self.reduced_ops.append((op.name, op.location, detail))

    def event(self, op: ir.Operation, kind: str, detail: str, count: int = 1) -> None:
        self.events.append((kind, op.name, op.location, detail, count))

    def constant_elements(self, op: ir.Operation) -> np.ndarray:
        """The float64 elements of a constant op (flat)."""
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr):
            if attr.is_splat:
                return np.array([ir.FloatAttr(attr.get_splat_value()).value], dtype=np.float64)
            return np.asarray(attr, dtype=np.float64).reshape(-1)
        self.refuse(op, "no64 cannot read this float64 constant (a resource blob) for pairs")
        raise AssertionError

    def constant_value(self, v: ir.Value) -> np.ndarray | None:
        """The elements of ``v`` if a constant op defines it (through
        broadcasts and reshapes of it, which keep its distinct elements)."""
        owner = v.owner
        if isinstance(owner, ir.Block):
            return None
        op = _as_op(owner)
        spec = spec_of(op.name)
        if spec.moves and spec.fold is not None:  # (a broadcast or reshape)
            return self.constant_value(op.operands[0])
        if not spec.constant:
            return None
        return self.constant_elements(op)

    # ------------------------------------------------------------- regions
    def copy_block(self, old: ir.Block, new: ir.Block) -> None:
        """Copy ``old``'s ops to the end of ``new`` (its arguments bound by
        the caller), every float64 value as a pair; the terminator returns
        each pair as its two words."""
        saved = self._in_place
        self._in_place = False
        try:
            with ir.InsertionPoint(new):
                for op in old.operations:
                    op = _as_op(op)
                    if spec_of(op.name).terminator:
                        values: list[ir.Value] = []
                        for x in op.operands:
                            values += list(self.pair(x)) if self.is_pair(x) else [self.value(x)]
                        ir.Operation.create(op.name, results=[], operands=values, loc=op.location)
                        continue
                    if self._touches(op):
                        self._apply_rule(op)
                        continue
                    if len(op.regions):
                        self.refuse(op, "no64 cannot copy an op with regions inside this region")
                    attrs = attribute_dict(op)
                    c = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                            operands=[self.value(x) for x in op.operands], attributes=attrs,
                                            loc=op.location)
                    for r, nr in zip(op.results, c.results):
                        self._subst[r] = nr
        finally:
            self._in_place = saved

    def _expanded(self, values: list[ir.Value]) -> list[ir.Value]:
        out: list[ir.Value] = []
        for x in values:
            out += list(self.pair(x)) if self.is_pair(x) else [self.value(x)]
        return out

    def _expanded_types(self, types: list[ir.Type]) -> list[ir.Type]:
        out: list[ir.Type] = []
        for t in types:
            if is_f64(t):
                f = P.pair_type(list(ir.RankedTensorType(t).shape))
                out += [f, f]
            else:
                out.append(t)
        return out

    def _results(self, op: ir.Operation, new: ir.Operation) -> list[Any]:
        outs: list[Any] = []
        k = 0
        for r in op.results:
            if is_f64(r.type):
                outs.append(P.Pair(new.results[k], new.results[k + 1]))
                k += 2
            else:
                outs.append(new.results[k])
                k += 1
        return outs

    def _bind_args(self, old_args: list[ir.Value], new_args: list[ir.Value]) -> None:
        k = 0
        for a in old_args:
            if is_f64(a.type):
                self._pairs[a] = P.Pair(new_args[k], new_args[k + 1])
                k += 2
            else:
                self._subst[a] = new_args[k]
                k += 1

    def rebuild_with_body(self, op: ir.Operation, slots: int) -> list[Any]:
        """``op`` (a ``reduce``, ``reduce_window``, ...) with each float64
        operand, result and body argument as its two words, the body
        computed on pairs."""
        attrs = attribute_dict(op)
        new = ir.Operation.create(op.name, results=self._expanded_types([r.type for r in op.results]),
                                  operands=self._expanded(list(op.operands)), attributes=attrs, regions=1)
        old_block = op.regions[0].blocks[0]
        old_args = list(old_block.arguments)
        block = new.regions[0].blocks.append(*self._expanded_types([a.type for a in old_args]))
        self._bind_args(old_args, list(block.arguments))
        self.copy_block(old_block, block)
        return self._results(op, new)

    def rebuild_sort(self, op: ir.Operation) -> list[Any]:
        """``sort``: a float64 operand as two; the comparator's (lhs, rhs)
        of it as (lhs_hi, rhs_hi, lhs_lo, rhs_lo)."""
        attrs = attribute_dict(op)
        new = ir.Operation.create(op.name, results=self._expanded_types([r.type for r in op.results]),
                                  operands=self._expanded(list(op.operands)), attributes=attrs, regions=1)
        old_block = op.regions[0].blocks[0]
        old = list(old_block.arguments)
        types: list[ir.Type] = []
        for i, x in enumerate(op.operands):
            if self.is_pair(x):
                s = P.pair_type([])
                types += [s] * 4
            else:
                types += [old[2 * i].type, old[2 * i + 1].type]
        block = new.regions[0].blocks.append(*types)
        a = list(block.arguments)
        k = 0
        for i, x in enumerate(op.operands):
            if self.is_pair(x):
                self._pairs[old[2 * i]] = P.Pair(a[k], a[k + 2])
                self._pairs[old[2 * i + 1]] = P.Pair(a[k + 1], a[k + 3])
                k += 4
            else:
                self._subst[old[2 * i]] = a[k]
                self._subst[old[2 * i + 1]] = a[k + 1]
                k += 2
        self.copy_block(old_block, block)
        return self._results(op, new)

    def rebuild_scatter(self, op: ir.Operation) -> list[Any]:
        """``scatter`` whose body returns the update (``.at[].set``): the
        hi and lo words scattered alike, each by its own scatter."""
        block = op.regions[0].blocks[0]
        ret = _as_op(list(block.operations)[-1])
        n = len(op.results)
        args = list(block.arguments)
        if n != 1 or len(list(block.operations)) != 1 or ret.operands[0] != args[1]:
            self.refuse(op, "no64 computes a float64 scatter on pairs only when it stores the update "
                        "(.at[].set)")
        x, idx, upd = op.operands
        xp, up = self.pair(x), self.pair(upd)
        attrs = attribute_dict(op)
        words = []
        for k in (0, 1):
            new = ir.Operation.create(op.name, results=[xp[k].type], operands=[xp[k], self.value(idx), up[k]],
                                      attributes=attrs, regions=1)
            s = P.pair_type([])
            b = new.regions[0].blocks.append(s, s)
            with ir.InsertionPoint(b):
                ir.Operation.create(ret.name, results=[], operands=[b.arguments[1]])
            words.append(new.results[0])
        return [P.Pair(words[0], words[1])]

    # ------------------------------------------------------------- the walk
    def run(self) -> None:
        funcs = _functions(self.root)
        entry = entry_function(self.root)
        for fn in funcs:
            for i, a in enumerate(fn.regions[0].blocks[0].arguments):
                if not is_f64(a.type):
                    continue
                self.values += 1
                if fn == entry and self.boundary is Outputs.NARROW:
                    self._narrow_args.add(a)
                    continue
                self._retype(a)
                if fn == entry:
                    self.inputs.append(i)
        for fn in funcs:
            self._walk(fn, entry)
        for op in reversed(self._erase):
            for r in op.results:
                if any(True for _ in r.uses):
                    raise AssertionError(f"{op.name} computed on pairs still has users (a no64 bug)")
            op.erase()
        for fn in funcs:
            _refresh_signature(fn)

    def _retype(self, v: ir.Value) -> None:
        self._types[v] = v.type
        v.set_type(_packed_type(v.type))
        self._packed.add(v)

    def _touches(self, op: ir.Operation) -> bool:
        types = [self.type(x) for x in op.operands] + [r.type for r in op.results]
        if any(_is_c128(t) for t in types):
            self.refuse(op, "complex128 is not computed on float64 pairs (float_policy='pairs'); "
                        "no64 refuses it rather than compute it in complex64")
        f64 = [t for t in types if is_f64(t)]
        if any(not ir.RankedTensorType(t).has_static_shape for t in f64):
            self.refuse(op, "no64 computes float64 pairs only in statically shaped tensors")
        return bool(f64)

    def _walk(self, fn: ir.Operation, entry: ir.Operation | None) -> None:
        stack: list[ir.Operation] = [fn]
        while stack:
            cur = stack.pop()
            for region in cur.regions:
                for block in region.blocks:
                    for op in list(block.operations):
                        op = _as_op(op)
                        spec = spec_of(op.name)
                        if spec.ties:
                            self._tie(op)
                            if len(op.regions):
                                self._walk_nested(op, entry)
                        elif spec.terminator:
                            self._terminator(op, entry)
                        elif self._touches(op):
                            self._apply_rule(op)
                        elif len(op.regions):
                            self._walk_nested(op, entry)

    def _walk_nested(self, op: ir.Operation, entry: ir.Operation | None) -> None:
        self._walk(op, entry)

    def _apply_rule(self, op: ir.Operation) -> None:
        spec = spec_of(op.name)
        if spec.pairs is None:
            self.refuse(op, "this op reads or computes a float64 value, and no64 cannot compute it on "
                        "float64 pairs (float_policy='pairs')")
        if self._in_place:
            with ir.InsertionPoint(op), op.location:
                outs = spec.pairs(op, self)
        else:  # copying a region body: at the end of the new block
            with op.location:
                outs = spec.pairs(op, self)
        for r, out in zip(op.results, outs):
            if isinstance(out, P.Pair):
                self._pairs[r] = out
                self.values += 1
            elif out is not None:
                self._subst[r] = out
                if self._in_place:
                    r.replace_all_uses_with(out)
        self.by_op[op.name] = self.by_op.get(op.name, 0) + 1
        if self._in_place:
            self._erase.append(op)

    def _pack(self, op: ir.Operation, i: int) -> None:
        x = op.operands[i]
        with ir.InsertionPoint(op), op.location:
            op.operands[i] = P.pack(self.pair(x))

    def _tie(self, op: ir.Operation) -> None:
        """A loop, branch or call: its float64 operands handed over packed,
        its float64 results (and a loop's region arguments) retyped packed."""
        for i, x in enumerate(op.operands):
            if self.is_pair(x):
                self._pack(op, i)
        for i, r in enumerate(op.results):
            if not is_f64(r.type):
                continue
            self.values += 1
            self._retype(r)
            if spec_of(op.name).loop:
                for region in op.regions:
                    self._retype(region.blocks[0].arguments[i])
        if any(v in self._packed for v in op.results):
            self.by_op[op.name] = self.by_op.get(op.name, 0) + 1

    def _terminator(self, op: ir.Operation, entry: ir.Operation | None) -> None:
        parent = _as_op(op.parent)
        if parent == entry:
            for i, x in enumerate(op.operands):
                if not self.is_pair(x):
                    continue
                if self.boundary is Outputs.NARROW:
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = make("convert", [P.to_f32(self.pair(x))], self.type(x))
                else:
                    self._pack(op, i)
                    self.outputs.append(i)
            return
        for i, x in enumerate(op.operands):
            if self.is_pair(x):
                self._pack(op, i)


def emulate_pairs(root: ir.Operation, boundary: Outputs = Outputs.WORDS) -> PairEmulation:
    """Rewrite every float64 value of ``root`` as a pair (see the module
    docstring); returns what was done.  Raises
    :class:`~no64.errors.UnsupportedOpError` for an op no rule computes on
    pairs (the module is then partly rewritten: the caller restores it)."""
    em = PairEmulation(root, boundary)
    em.run()
    return em
