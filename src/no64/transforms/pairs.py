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
and rounded once on the way out (``boundary=Outputs.NARROW`` or
``Outputs.CHECKED``: both keep the signature's types, and a float64 value
has nothing to check by value).

LAPACK's LU factorization and triangular solve are written out as StableHLO
before this step (:mod:`no64.rules.linalg`), and so computed on pairs.
Transcendental ops and other LAPACK calls are computed in f32 from the pair
rounded once (recorded per op as ``precision-reduced``); their results
enter as exact pairs.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis.float_hints import first_user
from ..errors import PairRangeError, PairRangeWarning
from ..ir import pairs as P
from ..ir._compat import attribute_dict
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.locations import SourceLocation, decode_location
from ..ir.words import make, splat
from ..kinds import Outputs
from ..rules.pair_rules import is_f64
from ..spec.registry import spec_of
from ..spec.walk import entry_function, functions
from ..targets import F32_MATMUL, IEEE_ARITHMETIC, Arithmetic, Matmul
from .carry import Carrier, Leave

__all__ = ["PairEmulation", "emulate_pairs", "split_pairs", "join_pairs"]


def split_pairs(values: Any, *, strict: bool = False) -> np.ndarray:
    """Float64 ``values`` as the packed pairs a converted program takes:
    shape ``S x 2`` float32, ``[..., 0]`` the value rounded to f32 and
    ``[..., 1]`` the rest.

    Values outside the pairs' range (:func:`no64.ir.pairs.range_check`:
    finite beyond 3.4e38, or nonzero and too small for their pair to keep
    48 bits once f32 subnormals flush) give a
    :class:`~no64.PairRangeWarning` at the caller's line, or with
    ``strict`` raise :class:`~no64.PairRangeError`."""
    v = np.asarray(values, dtype=np.float64)
    check = P.range_check(v)
    first = check.first()
    if first >= 0:
        frame = sys._getframe(1)
        loc = SourceLocation(None, None, frame.f_code.co_filename, frame.f_lineno, None,
                             f"{frame.f_code.co_filename}:{frame.f_lineno}")
        n = int(check.bad.sum())
        index = tuple(int(i) for i in np.unravel_index(first, v.shape)) if v.shape else ()
        value = float(v.reshape(-1)[first])
        message = (f"no64.split_pairs at {loc.source}: " + (f"at index {index}, " if index else "")
                   + check.describe(value) + (f" ({n} such elements)" if n > 1 else ""))
        if strict:
            raise PairRangeError(message, op="split_pairs", location=loc, value=value, index=index, count=n)
        warnings.warn(message, PairRangeWarning, stacklevel=2)
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


#: XORed into the lo words' bit patterns in a combining scatter (see
#: :meth:`PairEmulation.rebuild_scatter`).
_SCATTER_KEY = 0x5BD1E995


def _i32_type(shape: list[int]) -> ir.Type:
    return ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(32))


def _lo_keyed(p: P.Pair) -> P.Pair:
    """``p`` with its lo word as its bit pattern XORed with the key (an
    ``i32`` value in the lo slot)."""
    bits = make("bitcast_convert", [p.lo], _i32_type(list(ir.RankedTensorType(p.lo.type).shape)))
    return P.Pair(p.hi, _xor_key(bits))


def _lo_unkeyed(p: P.Pair) -> P.Pair:
    """The pair :func:`_lo_keyed` made."""
    shape = list(ir.RankedTensorType(p.lo.type).shape)
    return P.Pair(p.hi, make("bitcast_convert", [_xor_key(p.lo)], P.pair_type(shape)))


def _xor_key(v: ir.Value) -> ir.Value:
    return make("xor", [v, splat(v, _SCATTER_KEY)], v.type)


class PairEmulation(Carrier[P.Pair]):
    """The rewrite, and what rules may ask of it (see :mod:`no64.rules.pair_rules`)."""

    rule_field = "pairs"
    rep_class = P.Pair
    no_rule = ("this op reads or computes a float64 value, and no64 cannot compute it on "
               "float64 pairs (float_policy='pairs')")
    done_as = "computed on pairs"

    def __init__(self, root: ir.Operation, boundary: Outputs = Outputs.WORDS,
                 refuse_range: bool = False, arithmetic: Arithmetic = IEEE_ARITHMETIC,
                 matmul: Matmul = F32_MATMUL) -> None:
        self.root = root
        #: the device's f32 division and root, in ulps (the pair division
        #: and root refine their f32 quotients where these exceed 0.5)
        self.divide_ulp = arithmetic.divide_ulp
        self.sqrt_ulp = arithmetic.sqrt_ulp
        #: the matrix engine's datapath float64 dots compute on
        self.matmul = matmul
        #: refuse a constant outside the pairs' range (``PairRangeError``)
        #: rather than record it
        self.refuse_range = refuse_range
        self.boundary = Outputs.parse(boundary, "boundary")
        #: the caller fixes the entry's types (``narrow`` or ``checked``):
        #: its float64 arguments and results stay float64, narrowed to f32
        #: by the pass, rather than become packed pairs
        self.fixed_signature = self.boundary is not Outputs.WORDS
        self._reps: dict[ir.Value, P.Pair] = {}
        self._subst: dict[ir.Value, ir.Value] = {}
        self._types: dict[ir.Value, ir.Type] = {}
        self._packed: set[ir.Value] = set()
        self._narrow_args: set[ir.Value] = set()
        self._entry_fn: ir.Operation | None = None
        self._erase: list[ir.Operation] = []
        #: ops computed in f32: (op name, location, detail)
        self.reduced_ops: list[tuple[str, Any, str]] = []
        #: (kind, op name, location, detail, count)
        self.events: list[tuple[str, str, Any, str, int]] = []
        self.by_op = {}
        self.values = 0
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    # ------------------------------------------------------------ for rules
    def is_pair(self, v: ir.Value) -> bool:
        return is_f64(self.type(v))

    def pair(self, v: ir.Value) -> P.Pair:
        """The pair of float64 ``v`` (unpacked where it is defined, if carried)."""
        p = self._reps.get(v)
        if p is not None:
            return p
        if v in self._packed or v in self._narrow_args:
            return self.unpacked(v)
        raise AssertionError(f"float64 value without a pair: {v.type} (a no64 bug)")

    # ------------------------------------------- the representation (Carrier)
    def carries(self, t: ir.Type) -> bool:
        return is_f64(t)

    def parts(self, rep: P.Pair) -> list[ir.Value]:
        return [rep.hi, rep.lo]

    def unpack(self, packed: ir.Value) -> P.Pair:
        if packed in self._narrow_args:  # an entry argument the caller passes as f32
            shape = list(ir.RankedTensorType(packed.type).shape)
            return P.from_f32(make("convert", [packed], P.pair_type(shape)))
        return P.unpack(packed)

    def part_types(self, t: ir.Type) -> list[ir.Type]:
        f = P.pair_type(list(ir.RankedTensorType(t).shape))
        return [f, f]

    def from_parts(self, parts: Sequence[ir.Value], t: ir.Type) -> P.Pair:
        return P.Pair(parts[0], parts[1])

    def rep(self, v: ir.Value) -> P.Pair:
        return self.pair(v)

    def pack(self, rep: P.Pair, carried: bool) -> ir.Value:
        return P.pack(rep, carried)

    def reduced(self, op: ir.Operation, detail: str) -> None:
        """Record that ``op`` is computed with less precision than float64."""
        self.reduced_ops.append((op.name, op.location, detail))

    def event(self, op: ir.Operation, kind: str, detail: str, count: int = 1) -> None:
        self.events.append((kind, op.name, op.location, detail, count))

    def out_of_range(self, op: ir.Operation, values: np.ndarray) -> None:
        """Refuse (``refuse_range``) or record the elements of a float64
        constant that f32 pairs cannot hold (:func:`no64.ir.pairs.range_check`),
        at the line of the op that first computes with it."""
        check = P.range_check(values)
        first = check.first()
        if first < 0:
            return
        user = first_user(op)
        if self.refuse_range:
            n = int(check.bad.sum())
            more = f" (and {n - 1} more)" if n > 1 else ""
            loc = decode_location(user.location)
            raise PairRangeError(
                f"{user.name} at {loc}: the float64 constant {check.describe(float(values[first]))}{more}; "
                "refused under this policy (the default policy records it as pair-range)",
                op=user.name, location=loc, value=float(values[first]), index=(first,), count=n)
        if check.over.any():
            v = float(values[int(np.argmax(check.over))])
            self.event(user, "float-overflow", f"finite f64 constant {v!r} beyond f32's range became inf",
                       int(check.over.sum()))
        if check.under.any():
            v = float(values[int(np.argmax(check.under))])
            self.event(user, "pair-range", f"the float64 constant {check.describe(v)}",
                       int(check.under.sum()))

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
    def rebuild_scatter(self, op: ir.Operation) -> list[Any]:
        """``scatter``: one whose body returns the update (``.at[].set``)
        as two scatters, of the hi and of the lo words; any other (``.at[].add``,
        an embedding's gradient) as one scatter of (hi, lo) slots whose body
        combines pairs.

        XLA's CPU backend updates a variadic scatter's inputs in place and
        gets it wrong when two inputs share one buffer, which its common
        subexpression elimination makes of equal words (a zero accumulator
        has equal hi and lo words): the lo words are scattered as their
        ``i32`` bit patterns XORed with a key, which the body takes off and
        puts back."""
        block = op.regions[0].blocks[0]
        ret = _as_op(list(block.operations)[-1])
        n = len(op.results)
        args = list(block.arguments)
        if n == 1 and len(list(block.operations)) == 1 and ret.operands[0] == args[1]:
            return self._scatter_set(op, ret)
        inputs, idx, updates = list(op.operands[:n]), op.operands[n], list(op.operands[n + 1:])
        carried = [self.is_pair(x) for x in inputs]
        if carried != [self.is_pair(u) for u in updates]:
            self.refuse(op, "no64 computes a float64 scatter on pairs only with float64 updates")

        def keyed(values: list[ir.Value]) -> list[ir.Value]:
            out: list[ir.Value] = []
            for v, c in zip(values, carried):
                out += list(_lo_keyed(self.pair(v))) if c else [self.value(v)]
            return out

        def types(ts: list[ir.Type], scalar: bool) -> list[ir.Type]:
            out: list[ir.Type] = []
            for t, c in zip(ts, carried):
                shape = [] if scalar else list(ir.RankedTensorType(t).shape)
                out += [P.pair_type(shape), _i32_type(shape)] if c else [t]
            return out

        result_types = [r.type for r in op.results]
        old_types = [a.type for a in args]
        new = self.rebuild(op, keyed(inputs) + [self.value(idx)] + keyed(updates), types(result_types, False),
                           [carried[i % n] for i in range(len(args))],
                           arg_types=types(old_types[:n], True) + types(old_types[n:], True),
                           enter=_lo_unkeyed, returned=_lo_keyed)
        return [_lo_unkeyed(o) if isinstance(o, P.Pair) else o
                for o in self.joined(list(new.results), result_types, carried)]

    def _scatter_set(self, op: ir.Operation, ret: ir.Operation) -> list[Any]:
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

    # ------------------------------------------------------------- the step
    def begin(self) -> None:
        """Every function's float64 arguments carried packed, but for the
        entry's where the caller fixes its types (taken as exact pairs of
        the f32 values it passes)."""
        funcs = functions(self.root)
        entry = entry_function(self.root)
        for fn in funcs:
            for i, a in enumerate(fn.regions[0].blocks[0].arguments):
                if not is_f64(a.type):
                    continue
                self.values += 1
                if fn == entry and self.fixed_signature:
                    self._narrow_args.add(a)
                    continue
                self._retype(a)
                if fn == entry:
                    self.inputs.append(i)
        self._entry_fn = entry
        if entry is not None and not self.fixed_signature:
            results = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value).results
            self.outputs = [i for i, t in enumerate(results) if is_f64(t)]

    def _retype(self, v: ir.Value) -> None:
        self.retype_packed(v, _packed_type(v.type))

    def _touches(self, op: ir.Operation) -> bool:
        types = [self.type(x) for x in op.operands] + [r.type for r in op.results]
        if any(_is_c128(t) for t in types):
            self.refuse(op, "complex128 is not computed on float64 pairs (float_policy='pairs'); "
                        "no64 refuses it rather than compute it in complex64")
        f64 = [t for t in types if is_f64(t)]
        if any(not ir.RankedTensorType(t).has_static_shape for t in f64):
            self.refuse(op, "no64 computes float64 pairs only in statically shaped tensors")
        return bool(f64)

    def takes(self, op: ir.Operation) -> list[int] | None:
        """Every op that touches a float64 value: a loop, branch, call or
        terminator with its float64 operands, any other op computed on pairs
        by its rule."""
        spec = spec_of(op.name)
        if spec.ties or spec.terminator:
            return [i for i, x in enumerate(op.operands) if self.is_pair(x)]
        return [] if self._touches(op) else None

    def tied(self, op: ir.Operation) -> None:
        """Its float64 results (and a loop's region arguments) retyped packed."""
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

    def leaves(self, fn: ir.Operation) -> Leave:
        return Leave.NARROW if fn == self._entry_fn and self.fixed_signature else Leave.PACKED

    def narrow(self, ret: ir.Operation, x: ir.Value, rep: P.Pair) -> ir.Value:
        return make("convert", [P.to_f32(rep)], self.type(x))

    def bind_result(self, r: ir.Value, rep: P.Pair, in_place: bool) -> None:
        self._reps[r] = rep
        self.values += 1


def emulate_pairs(root: ir.Operation, boundary: Outputs = Outputs.WORDS,
                  refuse_range: bool = False, arithmetic: Arithmetic = IEEE_ARITHMETIC,
                  matmul: Matmul = F32_MATMUL) -> PairEmulation:
    """Rewrite every float64 value of ``root`` as a pair (see the module
    docstring), for a device whose f32 computes as ``arithmetic`` says
    (its division and square root within so many ulps), float64 dots on the
    matrix engine's datapath ``matmul`` (:class:`no64.targets.Matmul`);
    returns what was done.  Raises
    :class:`~no64.errors.UnsupportedOpError` for an op no rule computes on
    pairs, and with ``refuse_range`` :class:`~no64.errors.PairRangeError`
    for a constant outside the pairs' range (the module is then partly
    rewritten: the caller restores it)."""
    em = PairEmulation(root, boundary, refuse_range, arithmetic, matmul)
    em.run()
    return em
