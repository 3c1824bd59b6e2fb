"""Transfer functions of the range analysis, one per op kind, per result.

A transfer function ``f(q, op)`` returns one :class:`~no64.spec.intervals.Range`
(or ``None`` for a non-integer result) for **each result** of ``op``, as
MLIR's ``inferResultRanges`` does: a multi-result op can never hand one
result's range to another.  A block-argument function ``g(q, arg)`` returns
the range of one argument of a region of the op.  ``q`` is the
:class:`~no64.analysis.ranges.RangeAnalysis` asking; ``q.of(v)`` is the
range of an operand, ``q.full(v)`` its type's range.

Which op uses which function is declared in the op registry
(:mod:`no64.rules.ops`); an op without one gets the full range of its
result types, which is always sound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir._mlir import enum_word, ir, stablehlo
from ..ir.locations import assumed_range
from ..spec.intervals import Interval, Range, fit, join

if TYPE_CHECKING:
    from .ranges import RangeAnalysis

Results = list["Range | None"]
Transfer = Callable[["RangeAnalysis", ir.Operation], Results]
ArgTransfer = Callable[["RangeAnalysis", ir.BlockArgument, ir.Operation], "Range | None"]

# --------------------------------------------------------------- helpers


def _products(a: Range, b: Range) -> Interval:
    c = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return (min(c), max(c))


def _nonempty(r: Range) -> Range:
    return Range(0, 0) if r.lo > r.hi else r


def elementwise(fn: Callable[..., Range]) -> Transfer:
    """An elementwise op of one integer result: ``fn(full, *operand_ranges)``,
    operands as plain ranges (sentinels as the 64-bit numbers they are)."""

    def transfer(q: RangeAnalysis, op: ir.Operation) -> Results:
        full = q.full(op.results[0])
        if full is None:
            return [None]
        args = []
        for x in op.operands:
            r = q.of(x)
            if r is None:
                return [Range(*full)]
            args.append(_nonempty(r.plain()))
        return [fn(full, *args)]

    transfer.__name__ = fn.__name__
    return transfer


def barrier(q: RangeAnalysis, op: ir.Operation) -> Results:
    """An identity (``optimization_barrier``); one that :func:`no64.assume`
    put in declares its operand's range: the operand's range within it."""
    out = same_as_operands(q, op)
    declared = assumed_range(op.location) if len(op.operands) == 1 else None
    if declared is None or out[0] is None:
        return out
    lo, hi = declared
    full = q.full(op.results[0])
    if full is not None:
        lo, hi = max(lo, full[0]), min(hi, full[1])
    r = out[0]
    if not r.sentinels and r.lo <= r.hi and max(lo, r.lo) <= min(hi, r.hi):
        return [Range(max(lo, r.lo), min(hi, r.hi))]
    return [Range(lo, hi)]


def same_as_operands(q: RangeAnalysis, op: ir.Operation) -> Results:
    """Result *i* holds elements of operand *i* (barrier, collectives, copies):
    sentinels carried along."""
    ops = op.operands
    out: Results = []
    for i, r in enumerate(op.results):
        full = q.full(r)
        out.append(q.moved(r, [ops[i]]) if i < len(ops) else None if full is None else Range(*full))
    return out


def same_as_first(q: RangeAnalysis, op: ir.Operation) -> Results:
    """One result holding elements of operand 0 (broadcast, reshape, slice,
    gather, dynamic_slice, ...): sentinels carried along."""
    return [_moved(q, op, op.results[0], [op.operands[0]])]


def _same_signedness(a: ir.Value, b: ir.Value) -> bool:
    ea = ir.ShapedType(a.type).element_type
    eb = ir.ShapedType(b.type).element_type
    return ea == eb


def _moved(q: RangeAnalysis, op: ir.Operation, result: ir.Value, sources: Sequence[ir.Value]) -> Range | None:
    """A result whose elements are elements of ``sources`` (joined)."""
    return q.moved(result, sources)


def join_operands(q: RangeAnalysis, op: ir.Operation) -> Results:
    """One result holding elements of every integer operand (concatenate, pad)."""
    res = op.results[0]
    return [_moved(q, op, res, [x for x in op.operands if _same_signedness(x, res)])]


def select(q: RangeAnalysis, op: ir.Operation) -> Results:
    """Each branch's range where the predicate takes it (where the predicate
    compares a value with a constant: :meth:`RangeAnalysis.branch_range`)."""
    p, a, b = op.operands
    res = op.results[0]
    full = q.full(res)
    if full is None:
        return [None]
    element = ir.ShapedType(res.type).element_type
    parts = []
    for x, truth in ((a, True), (b, False)):
        r = q.branch_range(x, p, truth)
        if r is None or ir.ShapedType(x.type).element_type != element:
            return [Range(*full)]
        parts.append(r)
    return [join(parts)]


def dynamic_update_slice(q: RangeAnalysis, op: ir.Operation) -> Results:
    return [_moved(q, op, op.results[0], [op.operands[0], op.operands[1]])]


def predicate(q: RangeAnalysis, op: ir.Operation) -> Results:
    return [Range(0, 1) if q.full(r) is not None else None for r in op.results]


def iota(q: RangeAnalysis, op: ir.Operation) -> Results:
    full = q.full(op.results[0])
    if full is None:
        return [None]
    t = ir.RankedTensorType(op.results[0].type)
    if not t.has_static_shape:
        return [Range(*full)]
    dim = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    return [fit(0, max(t.shape[dim] - 1, 0), full)]


def constant(q: RangeAnalysis, op: ir.Operation) -> Results:
    return [q.constant_range(op)]


def convert(q: RangeAnalysis, op: ir.Operation) -> Results:
    full = q.full(op.results[0])
    if full is None:
        return [None]
    src = q.of(op.operands[0])
    if src is None:
        return [Range(*full)]  # from float or complex: unbounded in general
    if src.sentinels and q.carries(op, 0):
        return [src]  # a no-op convert
    p = _nonempty(src.plain())
    return [fit(p.lo, p.hi, full)]


def _pick(which: str, a: Range, b: Range) -> Range:
    """The range of ``max(a, b)`` or ``min(a, b)``: sentinels carried along.

    Every result lies between the picks of the operands' bounds (sentinels
    counted at their 64-bit values); it is an ordinary value of an operand
    or one of their sentinels, and a sentinel outside those bounds cannot
    be picked (``max(x, INT64_MIN)`` is ``x``)."""
    pa, pb = a.plain(), b.plain()
    if pa.empty or pb.empty:
        return join([a, b])  # no value on one side (unreachable code)
    pick = max if which == "max" else min
    lo, hi = pick(pa.lo, pb.lo), pick(pa.hi, pb.hi)
    ordinary = join([Range(a.lo, a.hi), Range(b.lo, b.hi)])
    sentinels = frozenset(s for s in a.sentinels | b.sentinels if lo <= s <= hi)
    if ordinary.empty:
        return Range(1, 0, sentinels)
    return Range(max(lo, ordinary.lo), min(hi, ordinary.hi), sentinels)


def clamp(q: RangeAnalysis, op: ir.Operation) -> Results:
    """clamp(lo, x, hi) = min(max(x, lo), hi), whatever the order of lo and
    hi: it picks one of its operands, so sentinels are carried along."""
    full = q.full(op.results[0])
    if full is None:
        return [None]
    rs = [q.of(x) for x in op.operands]
    if any(r is None for r in rs):
        return [Range(*full)]
    lo, x, hi = rs
    return [_pick("min", _pick("max", x, lo), hi)]  # type: ignore[arg-type]


def minmax(which: str) -> Transfer:
    """min/max pick one of their operands: sentinels are carried along (see :func:`_pick`)."""

    def transfer(q: RangeAnalysis, op: ir.Operation) -> Results:
        full = q.full(op.results[0])
        if full is None:
            return [None]
        a, b = q.of(op.operands[0]), q.of(op.operands[1])
        if a is None or b is None:
            return [Range(*full)]
        return [_pick(which, a, b)]

    transfer.__name__ = which
    return transfer


# ---------------------------------------------------------- arithmetic


@elementwise
def add(full: Interval, a: Range, b: Range) -> Range:
    return fit(a.lo + b.lo, a.hi + b.hi, full)


@elementwise
def subtract(full: Interval, a: Range, b: Range) -> Range:
    return fit(a.lo - b.hi, a.hi - b.lo, full)


@elementwise
def multiply(full: Interval, a: Range, b: Range) -> Range:
    return fit(*_products(a, b), full)


def _tdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


@elementwise
def divide(full: Interval, a: Range, b: Range) -> Range:
    """Truncating division; XLA defines x / 0 as -1 (signed) or all ones."""
    vals: list[int] = []
    for lo, hi in ((b.lo, min(b.hi, -1)), (max(b.lo, 1), b.hi)):
        if lo <= hi:
            vals += [_tdiv(x, y) for x in (a.lo, a.hi) for y in (lo, hi)]
    if b.lo <= 0 <= b.hi:
        vals.append(-1 if full[0] < 0 else full[1])
    return fit(min(vals), max(vals), full)


@elementwise
def remainder(full: Interval, a: Range, b: Range) -> Range:
    """Remainder takes the dividend's sign; XLA defines x % 0 as x."""
    m = max(abs(b.lo), abs(b.hi))
    if m == 0:
        return a
    lo = 0 if a.lo >= 0 else max(a.lo, -(m - 1))
    hi = 0 if a.hi <= 0 else min(a.hi, m - 1)
    if b.lo <= 0 <= b.hi:
        return Range(min(lo, a.lo), max(hi, a.hi))
    return Range(lo, hi)


@elementwise
def shift_left(full: Interval, a: Range, b: Range) -> Range:
    if b.lo < 0 or b.hi >= 64:
        return Range(*full)
    return fit(*_products(a, Range(2**b.lo, 2**b.hi)), full)


@elementwise
def shift_right_arithmetic(full: Interval, a: Range, b: Range) -> Range:
    if b.lo < 0:
        return Range(*full)
    lo_s, hi_s = b.lo, min(b.hi, 63)
    return Range(min(a.lo >> lo_s, a.lo >> hi_s), max(a.hi >> lo_s, a.hi >> hi_s))


@elementwise
def shift_right_logical(full: Interval, a: Range, b: Range) -> Range:
    if a.lo < 0 or b.lo < 0:
        return Range(*full) if a.lo < 0 else Range(0, a.hi)
    return Range(a.lo >> min(b.hi, 64), a.hi >> b.lo)


@elementwise
def bit_and(full: Interval, a: Range, b: Range) -> Range:
    if a.lo >= 0 and b.lo >= 0:
        return Range(0, min(a.hi, b.hi))
    if a.lo >= 0:
        return Range(0, a.hi)
    if b.lo >= 0:
        return Range(0, b.hi)
    return Range(*full)


@elementwise
def bit_or_xor(full: Interval, a: Range, b: Range) -> Range:
    if a.lo >= 0 and b.lo >= 0:
        return Range(0, (1 << max(a.hi, b.hi).bit_length()) - 1)
    return Range(*full)


@elementwise
def negate(full: Interval, a: Range) -> Range:
    return fit(-a.hi, -a.lo, full)


@elementwise
def square(full: Interval, a: Range) -> Range:
    lo = 0 if a.lo <= 0 <= a.hi else min(a.lo * a.lo, a.hi * a.hi)
    return fit(lo, max(a.lo * a.lo, a.hi * a.hi), full)


@elementwise
def absolute(full: Interval, a: Range) -> Range:
    lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
    return fit(lo, max(abs(a.lo), abs(a.hi)), full)


@elementwise
def bit_not(full: Interval, a: Range) -> Range:
    if full[0] == 0:
        return Range(full[1] - a.hi, full[1] - a.lo)
    return Range(-a.hi - 1, -a.lo - 1)


@elementwise
def sign(full: Interval, a: Range) -> Range:
    lo = -1 if a.lo < 0 else (0 if a.lo == 0 else 1)
    hi = 1 if a.hi > 0 else (0 if a.hi == 0 else -1)
    return Range(lo, hi)


def bit_count(q: RangeAnalysis, op: ir.Operation) -> Results:
    full = q.full(op.results[0])
    if full is None:
        return [None]
    width = ir.IntegerType(ir.ShapedType(op.results[0].type).element_type).width
    return [fit(0, width, full)]


def dot_general(q: RangeAnalysis, op: ir.Operation) -> Results:
    full = q.full(op.results[0])
    if full is None:
        return [None]
    a, b = q.of(op.operands[0]), q.of(op.operands[1])
    t = ir.RankedTensorType(op.operands[0].type)
    if a is None or b is None or not t.has_static_shape:
        return [Range(*full)]
    dims = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    n = int(math.prod(t.shape[i] for i in dims.lhs_contracting_dimensions))
    lo, hi = _products(_nonempty(a.plain()), _nonempty(b.plain()))
    return [fit(min(0, lo * n), max(0, hi * n), full)]


def top_k(q: RangeAnalysis, op: ir.Operation) -> Results:
    values = _moved(q, op, op.results[0], [op.operands[0]])
    shape = ir.RankedTensorType(op.operands[0].type).shape
    idx_full = q.full(op.results[1])
    idx = fit(0, max(shape[-1] - 1, 0), idx_full) if idx_full is not None else None
    return [values, idx]


def sort(q: RangeAnalysis, op: ir.Operation) -> Results:
    """Result *i* is a permutation of operand *i*."""
    return same_as_operands(q, op)


# ----------------------------------------------------------- structure


def call(q: RangeAnalysis, op: ir.Operation) -> Results:
    return q.call_results(op)


def branches(q: RangeAnalysis, op: ir.Operation) -> Results:
    """case/if: result *k* is the join of every branch's *k*-th returned value."""
    out: Results = []
    rets = []
    for region in op.regions:
        for block in region.blocks:
            ops = list(block.operations)
            if ops:
                rets.append(ops[-1])
    for k, r in enumerate(op.results):
        if q.full(r) is None:
            out.append(None)
            continue
        parts = []
        for ret in rets:
            if k < len(ret.operands):
                x = q.of(ret.operands[k])
                parts.append(x if x is not None else Range(*q.full(r)))  # type: ignore[misc]
        out.append(join(parts) if parts else Range(*q.full(r)))  # type: ignore[misc]
    return out


def while_results(q: RangeAnalysis, op: ir.Operation) -> Results:
    return list(q.loop_state(op))


def while_arguments(q: RangeAnalysis, arg: ir.BlockArgument, op: ir.Operation) -> Range | None:
    state = q.loop_state(op)
    i = arg.arg_number
    return state[i] if i < len(state) else None


def reduction_results(q: RangeAnalysis, op: ir.Operation) -> Results:
    return list(q.reduction_state(op)[1])


def reduction_arguments(q: RangeAnalysis, arg: ir.BlockArgument, op: ir.Operation) -> Range | None:
    args = q.reduction_state(op)[0]
    i = arg.arg_number
    return args[i] if i < len(args) else None


def sort_arguments(q: RangeAnalysis, arg: ir.BlockArgument, op: ir.Operation) -> Range | None:
    i = arg.arg_number // 2
    ops = op.operands
    return q.of(ops[i]) if i < len(ops) else None


def forwarded_arguments(q: RangeAnalysis, arg: ir.BlockArgument, op: ir.Operation) -> Range | None:
    """Region argument *i* takes operand *i* (sdy.manual_computation, named computations)."""
    ops = op.operands
    i = arg.arg_number
    return q.of(ops[i]) if i < len(ops) else None


def function_arguments(q: RangeAnalysis, arg: ir.BlockArgument, op: ir.Operation) -> Range | None:
    return q.function_argument(op, arg.arg_number)


# ----------------------------------------------------------- folding
#
# Input-free sub-graphs (constants, iotas and the arithmetic between them)
# are evaluated element by element, with the 64-bit program's wrap-around,
# so that a certain overflow is told from a possible one.

Fold = Callable[[ir.Operation, list[np.ndarray], ir.Type], "np.ndarray | None"]


def _wrap(x: Any, t: ir.Type) -> np.ndarray:
    x = np.asarray(x, dtype=object)
    e = ir.IntegerType(ir.ShapedType(t).element_type)
    w = e.width
    if e.is_unsigned or w == 1:
        return np.vectorize(lambda v: v % (1 << w), otypes=[object])(x) if x.size else x
    half = 1 << (w - 1)
    return np.vectorize(lambda v: (v + half) % (1 << w) - half, otypes=[object])(x) if x.size else x


def _fold_binary(fn: Callable[[Any, Any], Any]) -> Fold:
    def f(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
        return _wrap(fn(args[0], args[1]), t)

    return f


def _fold_broadcast(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    shape = ir.RankedTensorType(t).shape
    dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
    # operand dimension i becomes result dimension dims[i]: put the operand's
    # dimensions in the order of the result's first (they may be permuted)
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(args[0], order)
    expanded = [1] * len(shape)
    for i in order:
        expanded[dims[i]] = args[0].shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


def _fold_reshape(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    return args[0].reshape(ir.RankedTensorType(t).shape)


def _fold_convert(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    if ir.IntegerType(ir.ShapedType(t).element_type).width == 1:
        # to a boolean: true where nonzero (not the low bit)
        return np.asarray(args[0] != 0, dtype=object).astype(int).astype(object)
    return _wrap(args[0], t)


_DIRECTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
    "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b,
}


def fold_compare(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    """An integer comparison (each operand's elements are its own signedness's
    numbers already: the comparison type needs no reading)."""
    direction = enum_word(op.attributes["comparison_direction"])
    fn = _DIRECTIONS.get(direction)
    if fn is None:
        return None
    return np.asarray(fn(args[0], args[1]), dtype=object).astype(int).astype(object)


def fold_select(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    pred, a, b = args
    shape = ir.RankedTensorType(t).shape
    return np.where(np.broadcast_to(pred, shape) != 0, a, b).astype(object)


fold_add = _fold_binary(lambda a, b: a + b)
fold_subtract = _fold_binary(lambda a, b: a - b)
fold_multiply = _fold_binary(lambda a, b: a * b)
fold_broadcast = _fold_broadcast
fold_reshape = _fold_reshape
fold_convert = _fold_convert


def fold_square(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    return _wrap(args[0] * args[0], t)


def fold_negate(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    return _wrap(-args[0], t)


def fold_iota(op: ir.Operation, args: list[np.ndarray], t: ir.Type) -> np.ndarray | None:
    shape = list(ir.RankedTensorType(t).shape)
    dim = ir.IntegerAttr(op.attributes["iota_dimension"]).value
    ar = np.arange(shape[dim], dtype=object)
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return np.broadcast_to(ar.reshape(view), shape)
