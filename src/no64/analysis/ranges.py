"""Interval analysis of integer values: is a narrowing to 32 bits exact?

For every integer value the pass narrows, :class:`RangeAnalysis` computes an
interval that contains every value it can take in the *original* (64-bit)
program, and :func:`verdict` compares it with the 32-bit range:

* ``"exact"``: the interval lies within the 32-bit range, so the narrowed
  program computes the same value;
* ``"unproven"``: the interval reaches outside the 32-bit range, so the value
  might not fit;
* ``"overflow"``: the interval lies entirely outside the 32-bit range, so the
  value never fits (if that code runs at all).

The analysis is demand-driven: it looks only at the values a verdict is
asked for and at what they are computed from, memoising every interval, so
float-heavy programs pay for their few integer values only.  It is sound
for what it models and conservative (the full range of the type) for what
it does not.

Modelled: iota (bounds from the shape), constants (sentinels as the 32-bit
extremes they become), add, subtract, multiply, divide, remainder, shifts,
and/or/xor/not, min/max/clamp, select, abs, negate, sign, convert, compare
and other predicates; gather, dynamic_slice and dynamic_update_slice (their
results are elements of their operands), scatter, sort (a permutation),
argmax/argmin-style reductions (init and operands joined), sum reductions
and ``reduce_window`` sums (bounded by the element count), integer
``dot_general``; broadcast, reshape, transpose, slice, reverse, concatenate
and pad (elements preserved); ``func.call`` (through the callee's returns),
``case``/``if`` (joined branches) and ``while`` loops (a fixpoint with
widening, refined by a loop condition that compares a carried value with a
bound).  Function arguments take declared input ranges (main) or the join of
their call sites (private functions).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core._mlir import ir
from .facts import CONSTANT_OPS, constant_elements, defining_op

__all__ = [
    "Interval",
    "RangeAnalysis",
    "entry_function",
    "resolve_input_ranges",
    "verdict",
    "type_range",
    "INT32",
    "UINT32",
]

Interval = tuple[int, int]

INT32: Interval = (-(2**31), 2**31 - 1)
UINT32: Interval = (0, 2**32 - 1)
_INT64: Interval = (-(2**63), 2**63 - 1)
_UINT64: Interval = (0, 2**64 - 1)

_UNSEEN: Any = object()
_MAX_DEPTH = 400
_WIDEN_AFTER = 3
_MAX_COUNTED_TRIPS = 256
_MAX_ITERATIONS = 12

_SAME_ELEMENTS = frozenset(
    {
        "stablehlo.broadcast_in_dim",
        "stablehlo.broadcast",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.slice",
        "stablehlo.reverse",
        "stablehlo.dynamic_slice",
        "stablehlo.real_dynamic_slice",
        "stablehlo.dynamic_broadcast_in_dim",
        "stablehlo.dynamic_reshape",
        "stablehlo.copy",
        "stablehlo.optimization_barrier",
        "sdy.sharding_constraint",
        "sdy.reshard",
        "stablehlo.all_gather",
        "stablehlo.all_to_all",
        "stablehlo.collective_permute",
        "stablehlo.collective_broadcast",
    }
)
_JOIN_OPERANDS = frozenset({"stablehlo.concatenate", "stablehlo.pad", "stablehlo.dynamic_pad"})
_PREDICATES = frozenset({"stablehlo.compare", "stablehlo.is_finite"})


def type_range(t: ir.Type) -> Interval | None:
    """The values an integer element or tensor type can hold; ``None`` if not integer."""
    if isinstance(t, ir.ShapedType) or isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType)):
        t = ir.ShapedType(t).element_type
    if not isinstance(t, ir.IntegerType):
        return None
    w = t.width
    if t.is_unsigned or w == 1:
        return (0, 2**w - 1)
    return (-(2 ** (w - 1)), 2 ** (w - 1) - 1)


def verdict(iv: Interval, unsigned: bool) -> str:
    """``"exact"``, ``"unproven"`` or ``"overflow"`` for narrowing ``iv`` to 32 bits."""
    lo32, hi32 = UINT32 if unsigned else INT32
    lo, hi = iv
    if lo32 <= lo and hi <= hi32:
        return "exact"
    if hi < lo32 or lo > hi32:
        return "overflow"
    return "unproven"


def _join(a: Interval, b: Interval) -> Interval:
    return (min(a[0], b[0]), max(a[1], b[1]))


def _meet(a: Interval, b: Interval) -> Interval | None:
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return (lo, hi) if lo <= hi else None


def _fit(iv: tuple[int, int], full: Interval) -> Interval:
    """``iv`` if the type holds it; else the type's full range (the op wrapped)."""
    return iv if full[0] <= iv[0] and iv[1] <= full[1] else full


def _as_op(x: Any) -> ir.Operation:
    return x if isinstance(x, ir.Operation) else x.operation


def entry_function(root: ir.Operation) -> ir.Operation | None:
    """The public ``func.func`` named ``main``, else the first public one."""
    first = None
    for top in root.regions[0].blocks[0].operations:
        top = _as_op(top)
        if top.name != "func.func" or not _is_public(top):
            continue
        if ir.StringAttr(top.attributes["sym_name"]).value == "main":
            return top
        first = first or top
    return first


def _is_public(fn: ir.Operation) -> bool:
    if "sym_visibility" not in fn.attributes:
        return True
    return ir.StringAttr(fn.attributes["sym_visibility"]).value == "public"


def resolve_input_ranges(
    root: ir.Operation, input_ranges: Mapping[int | str, tuple[int, int]]
) -> dict[int, Interval]:
    """Map declared ranges (by argument position or name) to positions of the
    entry function's integer arguments; raise ``ValueError`` naming what does
    not resolve."""
    validate_input_ranges(input_ranges)
    if not input_ranges:
        return {}
    fn = entry_function(root)
    if fn is None:
        raise ValueError("input ranges were declared but the module has no public function")
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    n = len(ftype.inputs)
    names = {_arg_name(fn, i): i for i in range(n)}
    names.pop(None, None)
    out: dict[int, Interval] = {}
    for key, (lo, hi) in input_ranges.items():
        if isinstance(key, int):
            idx = key
        elif key in names:
            idx = names[key]
        else:
            known = ", ".join(sorted(str(k) for k in names)) or "none"
            raise ValueError(f"no argument named {key!r} (named arguments: {known}; or use a position)")
        if not 0 <= idx < n:
            raise ValueError(f"argument #{idx} does not exist: the entry function takes {n}")
        full = type_range(ftype.inputs[idx])
        if full is None:
            raise ValueError(f"argument {key!r} is not an integer ({ftype.inputs[idx]})")
        if int(lo) > int(hi):
            raise ValueError(f"range of argument {key!r} is empty: {lo} > {hi}")
        if idx in out:
            raise ValueError(f"argument #{idx} is given two ranges (by position and by name)")
        out[idx] = (int(lo), int(hi))
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def validate_input_ranges(input_ranges: Any) -> None:
    """Check the shape of declared input ranges: a mapping from an argument
    position (``int``) or name (``str``) to an inclusive ``(lo, hi)`` pair of
    integers.  Raise ``TypeError`` (not a mapping) or ``ValueError`` naming
    the argument."""
    if input_ranges is None:
        return
    if not isinstance(input_ranges, Mapping):
        raise TypeError(
            "input_ranges must be a mapping from argument position or name to (lo, hi), "
            f"e.g. {{'tokens': (0, 50256)}}, not {type(input_ranges).__name__}"
        )
    for key, bounds in input_ranges.items():
        if not (_is_int(key) or isinstance(key, str)):
            raise ValueError(
                f"input_ranges: key {key!r} must be an argument position (int) or name (str), "
                f"not {type(key).__name__}"
            )
        if _is_int(key) and key < 0:
            raise ValueError(f"input_ranges: argument position {key} is negative")
        if (
            isinstance(bounds, (str, bytes))
            or not isinstance(bounds, Sequence)
            or len(bounds) != 2
            or not all(_is_int(b) for b in bounds)
        ):
            raise ValueError(
                f"input_ranges: the range of argument {key!r} must be a pair of integers "
                f"(lo, hi), not {bounds!r}"
            )


class RangeAnalysis:
    """Demand-driven interval analysis over one module.

    Args:
      root: The module operation.
      input_ranges: Declared ranges of the public entry function's arguments,
        by position or by argument name (the name in the argument's location,
        as JAX writes it, e.g. ``"tokens"``); each an inclusive ``(lo, hi)``.
      sentinels: Map from a 64-bit sentinel value to the 32-bit value it is
        narrowed to; constants holding it count as that value.
      calls: Every ``func.call`` of the module, when the caller has already
        walked it (saves a walk).
    """

    def __init__(
        self,
        root: ir.Operation,
        input_ranges: Mapping[int | str, tuple[int, int]] | None = None,
        sentinels: Mapping[int, int] | None = None,
        calls: Sequence[ir.Operation] | None = None,
    ) -> None:
        self.root = root
        self.input_ranges = resolve_input_ranges(root, input_ranges or {})
        entry = entry_function(root)
        self._entry = entry
        self.sentinels = dict(sentinels or {})
        # Memo layers: a loop being solved pushes one per iteration, so that
        # intervals computed from a provisional loop state are dropped.
        self._layers: list[dict[Any, Any]] = [{}]
        self._depth = 0
        self._funcs: dict[str, ir.Operation] | None = None
        self._callers: dict[str, list[ir.Operation]] | None = None
        self._calls = calls  # every func.call, if the caller already has them
        self._type_ranges: dict[ir.Type, Interval | None] = {}
        self._returns: dict[str, list[Interval]] = {}
        self._in_progress: set[str] = set()
        self._in_calls: set[str] = set()

    # ------------------------------------------------------------ public
    def interval(self, v: ir.Value) -> Interval | None:
        """The interval of integer value ``v`` (``None`` for non-integers)."""
        t = v.type
        full = self._type_ranges.get(t, _UNSEEN)
        if full is _UNSEEN:
            full = self._type_ranges[t] = type_range(t)
        if full is None:
            return None
        hit = self._lookup(v)
        if hit is not None:
            return hit
        if self._depth > _MAX_DEPTH:
            return full
        self._depth += 1
        try:
            iv = self._compute(v, full)
        finally:
            self._depth -= 1
        iv = _meet(iv, full) or full
        self._layers[-1][v] = iv
        return iv

    # ----------------------------------------------------------- helpers
    def _lookup(self, key: Any) -> Any:
        for layer in reversed(self._layers):
            hit = layer.get(key)
            if hit is not None:
                return hit
        return None

    def _iv(self, v: ir.Value, fallback: Interval) -> Interval:
        iv = self.interval(v)
        return fallback if iv is None else iv

    def _compute(self, v: ir.Value, full: Interval) -> Interval:
        if isinstance(v, ir.BlockArgument):
            return self._block_argument(v, full)
        op = defining_op(v)
        if op is None:
            return full
        name = op.name
        ops = op.operands
        if name in CONSTANT_OPS:
            return self._constant(op, full)
        if name == "stablehlo.iota":
            t = ir.RankedTensorType(op.results[0].type)
            if not t.has_static_shape:
                return full
            dim = ir.IntegerAttr(op.attributes["iota_dimension"]).value
            return _fit((0, max(t.shape[dim] - 1, 0)), full)
        if name in _SAME_ELEMENTS:
            return self._iv(ops[0], full)
        if name in _JOIN_OPERANDS:
            return self._join_all([x for x in ops if type_range(x.type) is not None], full)
        if name in _PREDICATES:
            return (0, 1)
        if name == "stablehlo.convert":
            return self._convert(op, full)
        if name == "stablehlo.select":
            return self._join_all([ops[1], ops[2]], full)
        if name == "stablehlo.dynamic_update_slice":
            return self._join_all([ops[0], ops[1]], full)
        if name == "stablehlo.gather":
            return self._iv(ops[0], full)
        if name == "stablehlo.clamp":
            lo, x, hi = (self._iv(o, full) for o in ops)
            return (min(max(x[0], lo[0]), hi[1]), max(min(x[1], hi[1]), lo[0]))
        if name in _BINARY:
            a = self._iv(ops[0], full)
            b = self._iv(ops[1], full)
            return _BINARY[name](a, b, full, self, op)
        if name in _UNARY:
            return _UNARY[name](self._iv(ops[0], full), full)
        if name == "func.call":
            return self._call_result(op, v, full)
        if name in ("stablehlo.case", "stablehlo.if"):
            return self._branches(op, v, full)
        if name == "stablehlo.while":
            return self._while(op, full)[_result_index(op, v)]
        if name == "stablehlo.sort":
            return self._iv(ops[_result_index(op, v)], full)
        if name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.all_reduce",
                    "stablehlo.reduce_scatter", "stablehlo.scatter"):
            return self._reduction(op, v, full)
        if name == "stablehlo.dot_general":
            return self._dot(op, full)
        if name == "chlo.top_k":
            if _result_index(op, v) == 1:
                shape = ir.RankedTensorType(ops[0].type).shape
                return (0, max(shape[-1] - 1, 0))
            return self._iv(ops[0], full)
        return full

    def _join_all(self, values: Sequence[ir.Value], full: Interval) -> Interval:
        out: Interval | None = None
        for x in values:
            iv = self._iv(x, full)
            out = iv if out is None else _join(out, iv)
        return out if out is not None else full

    def _constant(self, op: ir.Operation, full: Interval) -> Interval:
        attr = op.attributes["value"]
        if not isinstance(attr, ir.DenseIntElementsAttr):
            return full
        elem = ir.IntegerType(ir.ShapedType(attr.type).element_type)
        unsigned = elem.is_unsigned
        if attr.is_splat:
            vals = [int(ir.IntegerAttr(attr.get_splat_value()).value)]
        else:
            arr = np.asarray(attr)
            if arr.size == 0:
                return (0, 0)
            vals = [int(arr.min()), int(arr.max())]
        if unsigned:
            vals = [x + 2**elem.width if x < 0 else x for x in vals]
        elif elem.width == 1:
            vals = [x & 1 for x in vals]
        vals = [self.sentinels.get(x, x) for x in vals]
        return (min(vals), max(vals))

    def _convert(self, op: ir.Operation, full: Interval) -> Interval:
        src = op.operands[0]
        src_full = type_range(src.type)
        if src_full is None:
            return full  # from float or complex: unbounded in general
        iv = self._iv(src, src_full)
        return _fit(iv, full)

    # ------------------------------------------------------ block arguments
    def _block_argument(self, arg: ir.BlockArgument, full: Interval) -> Interval:
        block = arg.owner
        parent = _as_op(block.owner)
        name = parent.name
        i = arg.arg_number
        if name == "func.func":
            return self._function_argument(parent, i, full)
        if name == "stablehlo.while":
            state = self._while(parent, full)
            return state[i] if i < len(state) else full
        if name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.all_reduce",
                    "stablehlo.reduce_scatter", "stablehlo.scatter", "stablehlo.select_and_scatter"):
            # accumulator and element arguments range over the op's inputs and results
            vals = [x for x in parent.operands if type_range(x.type) is not None]
            out = self._join_all(vals, full)
            for r in parent.results:
                if type_range(r.type) is not None:
                    out = _join(out, self._iv(r, full))
            return _fit(out, full)
        if name == "stablehlo.sort":
            ops = parent.operands
            return self._iv(ops[i // 2], full) if i // 2 < len(ops) else full
        if name == "sdy.manual_computation":
            ops = parent.operands
            return self._iv(ops[i], full) if i < len(ops) else full
        return full

    def _symbols(self) -> tuple[dict[str, ir.Operation], dict[str, list[ir.Operation]]]:
        if self._funcs is None or self._callers is None:
            funcs: dict[str, ir.Operation] = {}
            callers: dict[str, list[ir.Operation]] = {}
            for top in self.root.regions[0].blocks[0].operations:
                top = _as_op(top)
                if top.name == "func.func":
                    funcs[ir.StringAttr(top.attributes["sym_name"]).value] = top
            calls = self._calls
            if calls is None:
                found: list[ir.Operation] = []
                advance = ir.WalkResult.ADVANCE

                def visit(op: ir.Operation) -> ir.WalkResult:
                    if op.name == "func.call":
                        found.append(op)
                    return advance

                self.root.walk(visit)
                calls = found
            for op in calls:
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                callers.setdefault(callee, []).append(op)
            self._funcs, self._callers = funcs, callers
        return self._funcs, self._callers

    def _function_argument(self, fn: ir.Operation, i: int, full: Interval) -> Interval:
        sym = ir.StringAttr(fn.attributes["sym_name"]).value
        if _is_public(fn):
            declared = self.input_ranges.get(i) if fn == self._entry else None
            if declared is not None:
                return _meet(declared, full) or full
            return full
        if sym in self._in_progress:
            return full  # a recursive call: its arguments are not bounded here
        _, callers = self._symbols()
        sites = callers.get(sym, [])
        if not sites:
            return full
        self._in_progress.add(sym)
        try:
            return self._join_all([site.operands[i] for site in sites], full)
        finally:
            self._in_progress.discard(sym)

    def _call_result(self, op: ir.Operation, v: ir.Value, full: Interval) -> Interval:
        """A call's result, from the callee's returns evaluated with its
        arguments bound to this call's operands (a context of its own, so a
        callee shared by many call sites or called in a loop stays precise)."""
        funcs, _ = self._symbols()
        callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is None or not len(callee.regions[0].blocks):
            return full
        sym = ir.StringAttr(callee.attributes["sym_name"]).value
        if sym in self._in_calls:
            return full  # recursion
        k = _result_index(op, v)
        context: dict[Any, Any] = {}
        for a, x in zip(callee.regions[0].blocks[0].arguments, op.operands):
            a_full = type_range(a.type)
            if a_full is not None:
                context[a] = self._iv(x, a_full)
        self._layers.append(context)
        self._in_calls.add(sym)
        try:
            out: Interval | None = None
            for block in callee.regions[0].blocks:
                for inner in block.operations:
                    inner = _as_op(inner)
                    if inner.name == "func.return" and k < len(inner.operands):
                        iv = self._iv(inner.operands[k], full)
                        out = iv if out is None else _join(out, iv)
        finally:
            self._in_calls.discard(sym)
            self._layers.pop()
        return out if out is not None else full

    def _branches(self, op: ir.Operation, v: ir.Value, full: Interval) -> Interval:
        k = _result_index(op, v)
        out: Interval | None = None
        for region in op.regions:
            for block in region.blocks:
                ops = list(block.operations)
                if ops and k < len(ops[-1].operands):
                    iv = self._iv(ops[-1].operands[k], full)
                    out = iv if out is None else _join(out, iv)
        return out if out is not None else full

    # ---------------------------------------------------------------- loops
    def _while(self, op: ir.Operation, _full: Interval) -> list[Interval]:
        """Intervals of a while loop's carried values: a fixpoint from the
        initial values, joined with each iteration's yields, widened to the
        type's range after a few rounds, refined inside the body by the
        loop condition."""
        key = ("while", op)
        cached = self._lookup(key)
        if cached is not None:
            return cached
        inits = list(op.operands)
        fulls = [type_range(x.type) or (0, 0) for x in inits]
        state = [self._iv(x, f) if type_range(x.type) else f for x, f in zip(inits, fulls)]
        cond_block = op.regions[0].blocks[0]
        body_block = op.regions[1].blocks[0]
        cond_args = list(cond_block.arguments)
        body_args = list(body_block.arguments)
        body_ret = list(body_block.operations)[-1]
        trips = self._trip_count(cond_block, cond_args, body_args, body_ret, state)
        # With a proven, small trip count T, T + 1 rounds without widening
        # cover every iteration the loop can run: exact and sound.
        rounds = _MAX_ITERATIONS if trips is None else trips + 2

        def one_round(state: list[Interval]) -> tuple[list[Interval], dict[Any, Any]]:
            self._layers.append({key: state})  # provisional answer; breaks cycles
            try:
                for a, st in zip(cond_args, state):
                    self._layers[-1][a] = st
                refined = self._refine(cond_block, cond_args, state)
                for a, st in zip(body_args, refined):
                    self._layers[-1][a] = st
                yields = [
                    self._iv(x, f) if type_range(x.type) else f
                    for x, f in zip(body_ret.operands, fulls)
                ]
            finally:
                layer = self._layers.pop()
            return yields, layer

        for it in range(rounds):
            yields, layer = one_round(state)
            new = [_join(st, y) for st, y in zip(state, yields)]
            if trips is None and it >= _WIDEN_AFTER:
                new = [
                    (f[0] if n[0] < st[0] else n[0], f[1] if n[1] > st[1] else n[1])
                    for n, st, f in zip(new, state, fulls)
                ]
            if new == state:
                break
            state = new
        else:
            if trips is None:
                self._layers[-1][key] = fulls
                return fulls
            # ``rounds`` > trips: the state covers every iteration the loop
            # can run; evaluate the body once more from it to keep its values.
            _, layer = one_round(state)
        # keep what was computed inside the loop from the final state
        self._layers[-1].update(layer)
        self._layers[-1][key] = state
        return state

    def _trip_count(
        self,
        cond_block: ir.Block,
        cond_args: list[ir.BlockArgument],
        body_args: list[ir.BlockArgument],
        body_ret: ir.Operation,
        state: list[Interval],
    ) -> int | None:
        """An upper bound on the iterations of a counted loop, if small.

        Recognises a carried counter ``k`` that the condition compares
        (``k < bound`` or ``k <= bound``, the bound a constant or a carried
        value the body passes through unchanged) and that the body increments
        by a constant step of at least 1 (``k + c``), JAX's ``fori_loop`` and
        ``scan`` form.
        """
        cmp = _loop_compare(cond_block)
        if cmp is None:
            return None
        d, a, b = cmp
        if d in ("GT", "GE"):
            a, b, d = b, a, _FLIP[d]
        if d not in ("LT", "LE") or not isinstance(a, ir.BlockArgument):
            return None
        if a not in cond_args:
            return None
        k = a.arg_number
        # the bound: a constant, or a carried value passed through unchanged
        if isinstance(b, ir.BlockArgument) and b in cond_args:
            j = b.arg_number
            if body_ret.operands[j] != body_args[j]:
                return None
            bound = state[j]
        else:
            bc = constant_elements_of(b)
            if bc is None:
                return None
            bound = (min(bc), max(bc))
        step_op = defining_op(body_ret.operands[k])
        if step_op is None or step_op.name != "stablehlo.add":
            return None
        x, y = step_op.operands[0], step_op.operands[1]
        if x != body_args[k]:
            x, y = y, x
        if x != body_args[k]:
            return None
        steps = constant_elements_of(y)
        if steps is None or min(steps) < 1:
            return None
        span = bound[1] - state[k][0] + (1 if d == "LE" else 0)
        trips = max(0, -(-span // min(steps)))
        return trips if trips <= _MAX_COUNTED_TRIPS else None

    def _refine(self, cond_block: ir.Block, args: list[ir.BlockArgument], state: list[Interval]) -> list[Interval]:
        """Intersect the carried values' intervals with the loop condition
        (``compare LT/LE/GT/GE/NE arg, bound`` returned by the cond region)."""
        cmp = _loop_compare(cond_block)
        if cmp is None:
            return state
        direction, a, b = cmp
        out = list(state)
        for idx, arg in enumerate(args):
            if a == arg:
                other, d = b, direction
            elif b == arg:
                other, d = a, _FLIP.get(direction, "")
            else:
                continue
            full = type_range(arg.type)
            if full is None:
                continue
            bound = self._iv(other, full)
            lo, hi = out[idx]
            if d == "LT":
                hi = min(hi, bound[1] - 1)
            elif d == "LE":
                hi = min(hi, bound[1])
            elif d == "GT":
                lo = max(lo, bound[0] + 1)
            elif d == "GE":
                lo = max(lo, bound[0])
            if lo <= hi:
                out[idx] = (lo, hi)
        return out

    # ------------------------------------------------------------ reductions
    def _reduction(self, op: ir.Operation, v: ir.Value, full: Interval) -> Interval:
        name = op.name
        body = _single_body_op(op)
        k = _result_index(op, v)
        operands = list(op.operands)
        if name == "stablehlo.scatter":
            n = len(operands) // 2  # inputs..., indices, updates...
            inputs, inits = operands[n + 1 :], operands[:n]
            count = None
        elif name in ("stablehlo.all_reduce", "stablehlo.reduce_scatter"):
            inputs, inits = operands, []
            count = _replica_count(op)
        else:
            n = len(operands) // 2
            inputs, inits = operands[:n], operands[n:]
            count = _reduced_count(op)
        vals = [x for x in inputs + inits if type_range(x.type) is not None]
        if body in ("stablehlo.maximum", "stablehlo.minimum", "select"):
            return self._join_all(vals, full)
        if body in ("stablehlo.and", "stablehlo.or", "stablehlo.xor"):
            j = self._join_all(vals, full)
            if j[0] >= 0:
                if body == "stablehlo.and":
                    return j
                return (0, (1 << j[1].bit_length()) - 1)
            return full
        if body == "stablehlo.add" and count is not None and k < len(inputs):
            x = self._iv(inputs[k], full)
            init = self._iv(inits[k], full) if k < len(inits) else (0, 0)
            return _fit((count * x[0] + init[0], count * x[1] + init[1]), full)
        return full

    def _dot(self, op: ir.Operation, full: Interval) -> Interval:
        a = self._iv(op.operands[0], full)
        b = self._iv(op.operands[1], full)
        dims = op.attributes["dot_dimension_numbers"]
        contract = _contracting_size(op, str(dims))
        if contract is None:
            return full
        p = _products(a, b)
        return _fit((min(0, p[0] * contract), max(0, p[1] * contract)), full)


# ---------------------------------------------------------------- transfer


def _products(a: Interval, b: Interval) -> Interval:
    c = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return (min(c), max(c))


def _tdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


def _div(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
    """Truncating division; XLA defines x / 0 as -1 (signed) or all ones."""
    vals: list[int] = []
    for lo, hi in ((b[0], min(b[1], -1)), (max(b[0], 1), b[1])):
        if lo <= hi:
            vals += [_tdiv(x, y) for x in a for y in (lo, hi)]
    if b[0] <= 0 <= b[1]:
        vals.append(-1 if full[0] < 0 else full[1])
    return _fit((min(vals), max(vals)), full)


def _rem(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
    """Remainder takes the dividend's sign; XLA defines x % 0 as x."""
    m = max(abs(b[0]), abs(b[1]))
    if m == 0:
        return a
    lo = 0 if a[0] >= 0 else max(a[0], -(m - 1))
    hi = 0 if a[1] <= 0 else min(a[1], m - 1)
    return _join((lo, hi), a) if b[0] <= 0 <= b[1] else (lo, hi)


def _shift_left(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
    if b[0] < 0 or b[1] >= 64:
        return full
    return _fit(_products(a, (2 ** b[0], 2 ** b[1])), full)


def _shift_right_arithmetic(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
    if b[0] < 0:
        return full
    lo_s, hi_s = b[0], min(b[1], 63)
    return (min(a[0] >> lo_s, a[0] >> hi_s), max(a[1] >> lo_s, a[1] >> hi_s))


def _shift_right_logical(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
    if a[0] < 0 or b[0] < 0:
        return full if a[0] < 0 else (0, a[1])
    return (a[0] >> min(b[1], 64), a[1] >> b[0])


def _bitwise(kind: str) -> Any:
    def f(a: Interval, b: Interval, full: Interval, *_: Any) -> Interval:
        if kind == "and":
            if a[0] >= 0 and b[0] >= 0:
                return (0, min(a[1], b[1]))
            if a[0] >= 0:
                return (0, a[1])
            if b[0] >= 0:
                return (0, b[1])
            return full
        if a[0] >= 0 and b[0] >= 0:
            return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
        return full

    return f


_BINARY: dict[str, Any] = {
    "stablehlo.add": lambda a, b, full, *_: _fit((a[0] + b[0], a[1] + b[1]), full),
    "stablehlo.subtract": lambda a, b, full, *_: _fit((a[0] - b[1], a[1] - b[0]), full),
    "stablehlo.multiply": lambda a, b, full, *_: _fit(_products(a, b), full),
    "stablehlo.divide": _div,
    "stablehlo.remainder": _rem,
    "stablehlo.maximum": lambda a, b, full, *_: (max(a[0], b[0]), max(a[1], b[1])),
    "stablehlo.minimum": lambda a, b, full, *_: (min(a[0], b[0]), min(a[1], b[1])),
    "stablehlo.shift_left": _shift_left,
    "stablehlo.shift_right_arithmetic": _shift_right_arithmetic,
    "stablehlo.shift_right_logical": _shift_right_logical,
    "stablehlo.and": _bitwise("and"),
    "stablehlo.or": _bitwise("or"),
    "stablehlo.xor": _bitwise("xor"),
}

_UNARY: dict[str, Any] = {
    "stablehlo.negate": lambda a, full: _fit((-a[1], -a[0]), full),
    "stablehlo.abs": lambda a, full: _fit(
        (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])), max(abs(a[0]), abs(a[1]))), full
    ),
    "stablehlo.not": lambda a, full: (
        (full[1] - a[1], full[1] - a[0]) if full[0] == 0 else (-a[1] - 1, -a[0] - 1)
    ),
    "stablehlo.sign": lambda a, full: (-1 if a[0] < 0 else (0 if a[0] == 0 else 1), 1 if a[1] > 0 else (0 if a[1] == 0 else -1)),
    "stablehlo.popcnt": lambda a, full: (0, 64),
    "stablehlo.count_leading_zeros": lambda a, full: (0, 64),
}

_FLIP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _direction_name(text: str) -> str:
    for d in ("LT", "LE", "GT", "GE", "EQ", "NE"):
        if d in text:
            return d
    return text


def constant_elements_of(v: ir.Value) -> list[int] | None:
    """The integer elements of a constant (possibly broadcast or reshaped)."""
    c = constant_elements(v)
    return None if c is None or len(c) == 0 else [int(x) for x in c]


def _loop_compare(cond_block: ir.Block) -> tuple[str, ir.Value, ir.Value] | None:
    """``(direction, lhs, rhs)`` of the compare a while loop's condition
    region returns (direction as ``"LT"``, ``"LE"``, ...), if it returns one."""
    ops = list(cond_block.operations)
    if not ops or not len(ops[-1].operands):
        return None
    pred = defining_op(ops[-1].operands[0])
    if pred is None or pred.name != "stablehlo.compare":
        return None
    direction = _direction_name(str(pred.attributes["comparison_direction"]))
    return direction, pred.operands[0], pred.operands[1]


def _result_index(op: ir.Operation, v: ir.Value) -> int:
    for i, r in enumerate(op.results):
        if r == v:
            return i
    return 0


def _single_body_op(op: ir.Operation) -> str | None:
    """The combining op of a reduction body: an elementwise op name, or
    ``"select"`` for an argmax/argmin-style body built from compares and
    selects; ``None`` otherwise."""
    if not len(op.regions) or not len(op.regions[0].blocks):
        return None
    names = [_as_op(o).name for o in op.regions[0].blocks[0].operations]
    body = [n for n in names if n not in ("stablehlo.return",)]
    if not body:
        return "select"  # returns one of its arguments (scatter "set")
    if len(body) == 1:
        return body[0]
    allowed = {"stablehlo.compare", "stablehlo.select", "stablehlo.and", "stablehlo.or",
               "stablehlo.constant", "stablehlo.not"}
    if body and set(body) <= allowed and "stablehlo.select" in body:
        return "select"
    return None


def _reduced_count(op: ir.Operation) -> int | None:
    """How many elements one output element of a reduce/reduce_window sums."""
    if op.name == "stablehlo.reduce":
        t = ir.RankedTensorType(op.operands[0].type)
        if not t.has_static_shape:
            return None
        dims = ir.DenseI64ArrayAttr(op.attributes["dimensions"])
        return int(math.prod(t.shape[d] for d in dims))
    if op.name == "stablehlo.reduce_window":
        dims = ir.DenseI64ArrayAttr(op.attributes["window_dimensions"])
        return int(math.prod(dims))
    return None


def _replica_count(op: ir.Operation) -> int | None:
    try:
        groups = np.asarray(op.attributes["replica_groups"])
        return int(groups.shape[-1]) if groups.ndim == 2 and groups.size else None
    except (KeyError, ValueError, TypeError):
        return None


def _contracting_size(op: ir.Operation, dims_text: str) -> int | None:
    """The product of the lhs contracting dimensions of a dot_general."""
    m = re.search(r"lhs_contracting_dimensions = \[([0-9, ]*)\]", dims_text)
    if m is None:
        return None
    t = ir.RankedTensorType(op.operands[0].type)
    if not t.has_static_shape:
        return None
    idx = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
    return int(math.prod(t.shape[i] for i in idx))


def _arg_name(fn: ir.Operation, i: int) -> str | None:
    """The argument's name from its location (JAX writes ``loc("tokens")``)."""
    blocks = fn.regions[0].blocks
    if not len(blocks) or i >= len(blocks[0].arguments):
        return None
    loc = blocks[0].arguments[i].location
    if isinstance(loc, ir.NameLoc):
        return loc.name_str
    text = str(loc)
    if text.startswith('loc("') and text.endswith('")'):
        return text[5:-2]
    return None
