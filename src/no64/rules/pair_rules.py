"""Float-pair rules: each op's meaning on float64 values carried as pairs of f32.

Under ``float_policy="pairs"`` every float64 value is a normalized pair
(:class:`~no64.ir.pairs.Pair`) and every op that reads or computes one
is rebuilt by its rule here.  A rule is ``rule(op, em) -> list`` with one
entry per result of ``op``: a :class:`~no64.ir.pairs.Pair` for a float64
result, a value of the result's own type for any other (an ``i1`` compare,
a converted integer), built at the current insertion point.  ``em``
(:class:`no64.transforms.pairs.PairEmulation`) gives the pair of a float64
operand (``em.pair``), the value standing for any other operand
(``em.value``), the op's types in the 64-bit program (``em.type``), copies
region bodies (``em.copy_block``), records an op computed with less
precision (``em.reduced``) and refuses (``em.refuse``).  The op table
(:mod:`no64.rules.ops`) names each op's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Union

import numpy as np

from ..ir import pair_math as PM, pairs as P
from ..ir._compat import attribute_dict, block_argument, op_result
from ..ir._mlir import as_operation as _as_op, enum_word, ir, stablehlo
from ..ir.words import build, make
from ..spec.protocols import PairContext, PairRule
from ..spec.registry import Computes, elementwise, spec_of
from ..spec.util import cumulative_window, doubling_windows, int_array, padding, single_element_windows
from ..targets import Matmul
from .pair_dot import split_dot

__all__ = ["PairRule", "is_f64", "SUM_BLOCK", "SUM_FOLDS"]

Out = Union[P.Pair, ir.Value, None]

#: Sums are taken in blocks of this many terms (a tree of variadic reduces).
SUM_BLOCK = 16

#: Before the blocked reduces, a sum of values held in memory is folded
#: this many times: its second half added to its first by elementwise pair
#: additions (vectorized, where a reduce with a pair body runs one element
#: at a time on the CPU backend; the compiler fuses the folds into one loop
#: of ``2**SUM_FOLDS`` terms per element, so more would grow its compile
#: time).  A sum of values computed elementwise is folded only where each
#: value computed on the way is read once (:func:`_read_once`): the
#: compiler fuses their computation into the folds, once per reader, where
#: the reduces read them computed once.
SUM_FOLDS = 4

#: Ops that move elements without computing (followed by :func:`_in_memory`).
_MOVES = frozenset({"reshape", "transpose", "slice", "broadcast_in_dim", "bitcast_convert"})


def _in_memory(v: ir.Value) -> bool:
    """Whether ``v`` is (moved from) an argument or the result of an op that
    does not apply to each element alone -- a value the compiler holds in
    memory rather than computing where it is read."""
    for _ in range(32):
        if block_argument(v) is not None:
            return True
        res = op_result(v)
        if res is None:
            return True
        op = _as_op(res.owner)
        if op.name.rsplit(".", 1)[-1] not in _MOVES:
            return not elementwise(op)
        v = op.operands[0]
    return False


def is_f64(t: ir.Type) -> bool:
    """Whether ``t`` is a tensor of float64."""
    return isinstance(t, ir.RankedTensorType) and isinstance(t.element_type, ir.F64Type)


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _f32_type(t: ir.Type) -> ir.Type:
    return ir.RankedTensorType.get(list(ir.RankedTensorType(t).shape), P.f32())


# ------------------------------------------------------------- elementwise
def _binary(fn: Callable[[P.Pair, P.Pair], P.Pair]) -> PairRule:
    def rule(op: ir.Operation, em: PairContext) -> list[Out]:
        a, b = (em.pair(x) for x in op.operands)
        return [fn(a, b)]

    return rule


def _unary(fn: Callable[[P.Pair], P.Pair]) -> PairRule:
    def rule(op: ir.Operation, em: PairContext) -> list[Out]:
        return [fn(em.pair(op.operands[0]))]

    return rule


add = _binary(P.add)
subtract = _binary(P.subtract)
multiply = _binary(P.multiply)
maximum = _binary(lambda a, b: P.minmax("max", a, b))
minimum = _binary(lambda a, b: P.minmax("min", a, b))
negate = _unary(P.negate)
square = _unary(lambda x: P.multiply(x, x))
absolute = _unary(P.absolute)
sign = _unary(P.sign)
floor = _unary(P.floor)
ceil = _unary(P.ceil)
round_nearest_even = _unary(P.round_even)
round_nearest_afz = _unary(P.round_afz)
next_after = _binary(P.next_after)


def divide(op: ir.Operation, em: PairContext) -> list[Out]:
    """The pair quotient, refined for the device's f32 division
    (``em.divide_ulp``: :func:`no64.ir.pairs.divide`)."""
    a, b = (em.pair(x) for x in op.operands)
    return [P.divide(a, b, em.divide_ulp)]


def remainder(op: ir.Operation, em: PairContext) -> list[Out]:
    a, b = (em.pair(x) for x in op.operands)
    return [P.remainder(a, b, em.divide_ulp)]


def sqrt(op: ir.Operation, em: PairContext) -> list[Out]:
    """The pair root, refined for the device's f32 root and division
    (``em.sqrt_ulp``, ``em.divide_ulp``: :func:`no64.ir.pairs.sqrt`)."""
    return [P.sqrt(em.pair(op.operands[0]), em.sqrt_ulp, em.divide_ulp)]


def rsqrt(op: ir.Operation, em: PairContext) -> list[Out]:
    x = em.pair(op.operands[0])
    one = P.constant(x.shape, 1.0)
    return [P.divide(one, P.sqrt(x, em.sqrt_ulp, em.divide_ulp), em.divide_ulp)]


# --------------------------------------------------------- transcendentals
# from +, -, * and range reduction (:mod:`no64.ir.pair_math`), never the
# device's own f32 transcendentals
exponential = _unary(PM.exp)
exponential_minus_one = _unary(PM.expm1)
sine = _unary(PM.sin)
cosine = _unary(PM.cos)


def log(op: ir.Operation, em: PairContext) -> list[Out]:
    return [PM.log(em.pair(op.operands[0]), em.divide_ulp)]


def log_plus_one(op: ir.Operation, em: PairContext) -> list[Out]:
    return [PM.log1p(em.pair(op.operands[0]), em.divide_ulp)]


def tanh(op: ir.Operation, em: PairContext) -> list[Out]:
    return [PM.tanh(em.pair(op.operands[0]), em.divide_ulp)]


def logistic(op: ir.Operation, em: PairContext) -> list[Out]:
    return [PM.logistic(em.pair(op.operands[0]), em.divide_ulp)]


def power(op: ir.Operation, em: PairContext) -> list[Out]:
    """``x**y`` on float64 pairs (:func:`no64.ir.pair_math.power`); an
    integer exponent beside a float64 base is taken exactly as a pair."""
    x, y = op.operands
    b = em.pair(y) if em.is_pair(y) else P.from_int(em.value(y))
    return [PM.power(em.pair(x), b, em.divide_ulp)]


def clamp(op: ir.Operation, em: PairContext) -> list[Out]:
    shape = _shape(op.results[0])
    lo, x, hi = (_broadcast(em.pair(v), shape) for v in op.operands)
    return [P.minmax("min", P.minmax("max", x, lo), hi)]


def compare(op: ir.Operation, em: PairContext) -> list[Out]:
    a, b = (em.pair(x) for x in op.operands)
    kind = enum_word(op.attributes["compare_type"]) if "compare_type" in op.attributes else "FLOAT"
    return [P.compare(enum_word(op.attributes["comparison_direction"]), a, b, kind)]


def select(op: ir.Operation, em: PairContext) -> list[Out]:
    p, x, y = op.operands
    pv = em.value(p)
    shape = _shape(op.results[0])
    if _shape(pv) != shape:  # a scalar predicate
        pv = make("broadcast_in_dim", [pv], ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1)),
                  broadcast_dimensions=ir.DenseI64ArrayAttr.get([]))
    return [P.select(pv, em.pair(x), em.pair(y))]


def is_finite(op: ir.Operation, em: PairContext) -> list[Out]:
    x = em.pair(op.operands[0])
    return [make("is_finite", [x.hi], op.results[0].type)]


def _broadcast(x: P.Pair, shape: Sequence[int]) -> P.Pair:
    if x.shape == list(shape):
        return x
    t = P.pair_type(shape)
    dims = ir.DenseI64ArrayAttr.get([])
    return P.Pair(make("broadcast_in_dim", [x.hi], t, broadcast_dimensions=dims),
                  make("broadcast_in_dim", [x.lo], t, broadcast_dimensions=dims))


# --------------------------------------------------------------- constants
def constant(op: ir.Operation, em: PairContext) -> list[Out]:
    """Each element split exactly into its pair (``finfo(float64).max`` and
    ``finfo(float64).tiny``, either sign, the float sentinels, become f32's;
    other values beyond
    f32's range become infinities, and values too small for their pair to
    keep 48 bits lose them -- each recorded, or refused where the policy
    says so: see :meth:`~no64.transforms.pairs.PairEmulation.out_of_range`)."""
    shape = _shape(op.results[0])
    values, mapped = P.float_sentinels_mapped(em.constant_elements(op))
    if mapped:
        em.event(op, "sentinel", "float64 max/lowest/tiny mapped to float32 max/lowest/tiny", mapped)
    em.out_of_range(op, values)
    return [P.constant(shape, values)]


def iota(op: ir.Operation, em: PairContext) -> list[Out]:
    shape = _shape(op.results[0])
    i32 = ir.IntegerType.get_signless(32)
    attrs = attribute_dict(op)
    ints = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(shape, i32)], attributes=attrs).results[0]
    # (through a barrier: pair arithmetic folded at compile time loses its error terms)
    return [P.from_int(P.barrier(ints)[0])]


# ---------------------------------------------------------------- converts
def convert(op: ir.Operation, em: PairContext) -> list[Out]:
    x = op.operands[0]
    xt = em.type(x)
    rt = op.results[0].type
    re = ir.RankedTensorType(rt).element_type
    if is_f64(xt):
        p = em.pair(x)
        if isinstance(re, ir.F64Type):
            return [p]
        if isinstance(re, ir.IntegerType):
            return [P.to_int(p, re)]
        if isinstance(re, (ir.F32Type, ir.F16Type, ir.BF16Type)):
            return [P.to_float(p, re)]
        em.refuse(op, f"no64 cannot convert a float64 pair to {re}")
    xe = ir.RankedTensorType(xt).element_type
    v = em.value(x)
    if isinstance(xe, ir.IntegerType):
        return [P.from_int(v)]
    if isinstance(xe, (ir.F32Type, ir.F16Type, ir.BF16Type)):
        return [P.from_float(v)]
    em.refuse(op, f"no64 cannot convert {xe} to a float64 pair")
    return [None]


# ------------------------------------------------------- ops moving elements
def componentwise(op: ir.Operation, em: PairContext) -> list[Out]:
    """An op that moves elements (and whose other operands are indices):
    applied to the hi words and to the lo words alike."""
    outs = []
    for k in (0, 1):
        operands = [em.pair(x)[k] if is_f64(em.type(x)) else em.value(x) for x in op.operands]
        rtypes = [_f32_type(r.type) if is_f64(r.type) else r.type for r in op.results]
        attrs = attribute_dict(op)
        outs.append(ir.Operation.create(op.name, results=rtypes, operands=operands, attributes=attrs))
    return [P.Pair(outs[0].results[i], outs[1].results[i]) if is_f64(r.type) else outs[0].results[i]
            for i, r in enumerate(op.results)]



def per_operand(op: ir.Operation, em: PairContext) -> list[Out]:
    """An op whose result *i* is operand *i*: each pair as its two words."""
    operands: list[ir.Value] = []
    for x in op.operands:
        operands += list(em.pair(x)) if is_f64(em.type(x)) else [em.value(x)]
    new = ir.Operation.create(op.name, results=[v.type for v in operands], operands=operands)
    outs: list[Out] = []
    k = 0
    for x in op.operands:
        if is_f64(em.type(x)):
            outs.append(P.Pair(new.results[k], new.results[k + 1]))
            k += 2
        else:
            outs.append(new.results[k])
            k += 1
    return outs


# ----------------------------------------------- computed in f32, recorded
def in_f32(op: ir.Operation, em: PairContext) -> list[Out]:
    """Computed in f32 from the operands rounded once; the results enter as
    exact pairs of those f32 values (recorded as precision-reduced)."""
    em.reduced(op, "computed in f32 from the float64 pair rounded to f32")
    operands = [P.to_f32(em.pair(x)) if is_f64(em.type(x)) else em.value(x) for x in op.operands]
    rtypes = [_f32_type(r.type) if is_f64(r.type) else r.type for r in op.results]
    attrs = attribute_dict(op)
    new = ir.Operation.create(op.name, results=rtypes, operands=operands, attributes=attrs)
    return [P.from_f32(n) if is_f64(r.type) else n for r, n in zip(op.results, new.results)]



def custom_call(op: ir.Operation, em: PairContext) -> list[Out]:
    """A LAPACK float64 call: handed its operands rounded to f32 (typed
    float64 again, for the pass to narrow the call to its f32 sibling) and
    its results taken as exact pairs of f32 values (recorded as
    precision-reduced)."""
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    if not target.startswith("lapack_"):
        em.refuse(op, f"no64 cannot compute custom call {target!r} on float64 pairs")
    em.reduced(op, f"{target} computed in f32 (its f32 sibling) from the float64 pairs rounded to f32")
    operands = []
    for x in op.operands:
        if is_f64(em.type(x)):
            operands.append(make("convert", [P.to_f32(em.pair(x))], em.type(x)))
        else:
            operands.append(em.value(x))
    attrs = attribute_dict(op)
    new = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=operands,
                              attributes=attrs)
    return [P.from_f32(make("convert", [n], _f32_type(n.type))) if is_f64(r.type) else n
            for r, n in zip(op.results, new.results)]


# ------------------------------------------------------------- reductions
def _body_combiner(op: ir.Operation) -> Computes | None:
    """What the one op a single-slot reduction's body applies to its two
    arguments computes (:attr:`Computes.ADD`, ...), if that is all it does."""
    block = op.regions[0].blocks[0]
    ops = [_as_op(o) for o in block.operations]
    if len(ops) != 2 or len(block.arguments) != 2:
        return None
    combine, ret = ops
    if ret.operands[0] != combine.results[0]:
        return None
    if set(combine.operands) != set(block.arguments):
        return None
    return spec_of(combine.name).computes



def _pair_reduce(x: P.Pair, init: P.Pair, dims: Sequence[int], body: Callable[[P.Pair, P.Pair], P.Pair]) -> P.Pair:
    """One variadic ``reduce`` of ``x`` over ``dims`` with a pair body."""
    shape = x.shape
    rshape = [n for i, n in enumerate(shape) if i not in dims]
    t = P.pair_type(rshape)
    new = build("reduce", [x.hi, x.lo, init.hi, init.lo], [t, t], regions=1,
                dimensions=ir.DenseI64ArrayAttr.get(list(dims)))
    st = P.pair_type([])
    block = new.regions[0].blocks.append(st, st, st, st)
    with ir.InsertionPoint(block):
        a = block.arguments
        z = body(P.Pair(a[0], a[1]), P.Pair(a[2], a[3]))
        build("return", [z.hi, z.lo], [])
    return P.Pair(new.results[0], new.results[1])


def _read_once(v: ir.Value, budget: int = 64) -> bool:
    """Whether ``v`` (of the 64-bit program) and every value computed
    elementwise on the way to it from values held in memory (arguments,
    results of other ops) is read by one op alone."""
    seen = 0
    todo = [v]
    while todo:
        w = todo.pop()
        if block_argument(w) is not None:
            continue
        res = op_result(w)
        if res is None:
            continue
        op = _as_op(res.owner)
        if op.name.rsplit(".", 1)[-1] not in _MOVES and not elementwise(op):
            continue
        uses = getattr(w, "uses", None)
        seen += 1
        if uses is None or seen > budget or sum(1 for _ in uses) != 1:
            return False
        todo.extend(op.operands)
    return True


def blocked_sum(x: P.Pair, dims: Sequence[int], folds: int = SUM_FOLDS, read_once: bool = False,
                start: float = -0.0) -> P.Pair:
    """The pair sum of ``x`` over ``dims``: the reduced elements laid out
    last, folded in halves ``folds`` (:data:`SUM_FOLDS`) times (elementwise
    pair additions; where ``x`` is held in memory, :func:`_in_memory`, or
    computed from such values by values each read once, ``read_once``),
    then summed :data:`SUM_BLOCK` at a time by variadic ``reduce``s (a
    tree of depth ``log_B (n / 2**folds)``: error about ``(folds + depth *
    B) * 3u^2`` of the sum of magnitudes, where one long accumulation would
    give ``n * 3u^2``).

    The reduces accumulate from ``start``, a zero: ``-0.0``, the identity
    of IEEE addition, gives the elements' own sum (``-0`` where every one
    is ``-0``); ``+0.0`` gives ``+0`` there, as a sum that starts from
    ``+0`` does (XLA's dot).  Padding is ``-0.0``, which changes no sum.
    Over one element the sum is that element, as XLA computes a reduce or
    a dot over one element."""
    shape = x.shape
    keep = [i for i in range(len(shape)) if i not in dims]
    perm = keep + list(dims)
    rshape = [shape[i] for i in keep]
    n = int(np.prod([shape[i] for i in dims], dtype=np.int64)) if dims else 1
    if perm != list(range(len(shape))):
        t = P.pair_type([shape[i] for i in perm])
        attr = ir.DenseI64ArrayAttr.get(perm)
        x = P.Pair(make("transpose", [x.hi], t, permutation=attr), make("transpose", [x.lo], t, permutation=attr))
    t = P.pair_type(rshape + [n])
    x = P.Pair(make("reshape", [x.hi], t), make("reshape", [x.lo], t))
    for _ in range(folds if read_once or _in_memory(x.hi) else 0):
        if n <= SUM_BLOCK:
            break
        if n % 2:
            x = _pad_last(x, 1)
            n += 1
        n //= 2
        x = P.add(_words(x, partial(_chunk, start=0, size=n)), _words(x, partial(_chunk, start=n, size=n)))
    if n == 1:
        t = P.pair_type(rshape)
        return P.Pair(make("reshape", [x.hi], t), make("reshape", [x.lo], t))
    zero = P.constant([], start)
    while n > SUM_BLOCK:
        m = -(-n // SUM_BLOCK)
        if m * SUM_BLOCK != n:
            x = _pad_last(x, m * SUM_BLOCK - n)
        t = P.pair_type(rshape + [m, SUM_BLOCK])
        x = P.Pair(make("reshape", [x.hi], t), make("reshape", [x.lo], t))
        x = _pair_reduce(x, zero, [len(rshape) + 1], P.add)
        n = m
    return _pair_reduce(x, zero, [len(rshape)], P.add)


def _pad_last(x: P.Pair, extra: int) -> P.Pair:
    """``x`` padded by ``extra`` elements of ``-0.0`` (the identity of
    addition) along its last dimension."""
    shape = x.shape
    rank = len(shape)
    t = P.pair_type(shape[:-1] + [shape[-1] + extra])
    zero = P.constant([], -0.0)
    attrs = dict(edge_padding_low=ir.DenseI64ArrayAttr.get([0] * rank),
                 edge_padding_high=ir.DenseI64ArrayAttr.get([0] * (rank - 1) + [extra]),
                 interior_padding=ir.DenseI64ArrayAttr.get([0] * rank))
    return P.Pair(make("pad", [x.hi, zero.hi], t, **attrs), make("pad", [x.lo, zero.lo], t, **attrs))


def reduce(op: ir.Operation, em: PairContext) -> list[Out]:
    """A sum in blocks (:func:`blocked_sum`, plus the init), a minimum or
    maximum, or any other body computed on pairs (``argmax``'s, ...).  A
    reduce over one element is that element, its init not applied: what
    XLA computes (it takes a reduce whose result has its operand's elements
    for a reshape), which keeps a ``-0`` that ``+0 + -0`` would not."""
    dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    if len(op.results) == 1 and is_f64(op.results[0].type):
        combine = _body_combiner(op)
        x, init = em.pair(op.operands[0]), em.pair(op.operands[1])
        if int(np.prod([x.shape[d] for d in dims], dtype=np.int64)) == 1:
            t = P.pair_type(_shape(op.results[0]))
            return [P.Pair(make("reshape", [x.hi], t), make("reshape", [x.lo], t))]
        if combine is Computes.ADD:
            s = blocked_sum(x, dims, read_once=_read_once(op.operands[0]))
            return [P.add(s, _broadcast(init, s.shape))]
        if combine in (Computes.MAXIMUM, Computes.MINIMUM):
            kind = "max" if combine is Computes.MAXIMUM else "min"
            return [_pair_reduce(x, init, dims, lambda a, b: P.minmax(kind, a, b))]
    return em.rebuild_carried(op)


def reduce_window(op: ir.Operation, em: PairContext) -> list[Out]:
    """A cumulative sum by doubling (``ceil(log2 n)`` two-element windows,
    each a variadic ``reduce_window`` on the pair); any other window sum as
    the sum of its window's elements (:func:`_window_sum`); any other window
    computed with its body on pairs."""
    if len(op.results) == 1 and is_f64(op.results[0].type) and _body_combiner(op) is Computes.ADD:
        init = em.constant_value(op.operands[1])
        if init is None or init.size != 1 or float(init.reshape(-1)[0]) != 0.0:
            init = None
        if init is not None and single_element_windows(op, _shape(op.results[0])):
            # each window one element: XLA computes the window sum as that
            # element (a zero init is its identity), keeping a -0
            return [em.pair(op.operands[0])]
        prefix = cumulative_window(op, _shape(op.results[0])) if init is not None else None
        if prefix is not None:
            assert init is not None
            return [_cumsum(em.pair(op.operands[0]), *prefix, zero=float(init.reshape(-1)[0]))]
        positions = int(np.prod(int_array(op, "window_dimensions", len(_shape(op.results[0])), 1), dtype=np.int64))
        if positions > WINDOW_SUM_MAX:
            em.refuse(op, f"no64 computes a float64 window sum on pairs for windows of up to {WINDOW_SUM_MAX} "
                      f"positions or a cumulative sum; this window has {positions}")
        return [_window_sum(op, em.pair(op.operands[0]), em.pair(op.operands[1]), _shape(op.results[0]))]
    return em.rebuild_carried(op)


#: The most positions of a window whose sum the pairs compute (the sum is
#: built of one slice and one pair addition per position: XLA's CPU
#: compiler takes about 7 s for 256).
WINDOW_SUM_MAX = 256


def _window_sum(op: ir.Operation, x: P.Pair, init: P.Pair, out_shape: list[int]) -> P.Pair:
    """A window sum (``reduce_window`` adding, a pooling's sum) as the sum
    of its window positions' slices -- for each position a strided slice of
    each word of the operand, padded and dilated as the op says (exact
    moves) with ``-0``, which changes no sum -- added in a balanced tree of
    elementwise pair additions, then the init added once: XLA starts each
    window's reduction from the init and skips the padded positions (a
    window of padding alone is the init, whatever it is), so that is the
    op's value.  Within ``(ceil(log2 k) + 1) * 3u^2`` of the magnitudes of
    the window's elements and the init, for ``k`` window positions (at most
    :data:`WINDOW_SUM_MAX`)."""
    if 0 in out_shape:
        return P.constant(out_shape, 0.0)
    rank = len(x.shape)
    window = int_array(op, "window_dimensions", rank, 1)
    strides = int_array(op, "window_strides", rank, 1)
    base = int_array(op, "base_dilations", rank, 1)
    dilation = int_array(op, "window_dilations", rank, 1)
    pads = padding(op, rank)

    def padded(w: ir.Value, fill: ir.Value) -> ir.Value:
        low = [p[0] for p in pads]
        high = [p[1] for p in pads]
        inner = [b - 1 for b in base]
        if not any(low) and not any(high) and not any(inner):
            return w
        shape = [max(n - 1, 0) * b + min(n, 1) + lo + hi for n, b, lo, hi in zip(x.shape, base, low, high)]
        return make("pad", [w, fill], P.pair_type(shape), edge_padding_low=ir.DenseI64ArrayAttr.get(low),
                    edge_padding_high=ir.DenseI64ArrayAttr.get(high), interior_padding=ir.DenseI64ArrayAttr.get(inner))

    def slices(w: ir.Value, fill: ir.Value) -> list[ir.Value]:
        w = padded(w, fill)
        pieces = []
        for pos in np.ndindex(*window):
            start = [pos[d] * dilation[d] for d in range(rank)]
            limit = [start[d] + (out_shape[d] - 1) * strides[d] + 1 for d in range(rank)]
            pieces.append(make("slice", [w], P.pair_type(out_shape), start_indices=ir.DenseI64ArrayAttr.get(start),
                               limit_indices=ir.DenseI64ArrayAttr.get(limit),
                               strides=ir.DenseI64ArrayAttr.get(strides)))
        return pieces

    fill = P.constant([], -0.0)
    terms = [P.Pair(h, l) for h, l in zip(slices(x.hi, fill.hi), slices(x.lo, fill.lo))]
    while len(terms) > 1:
        terms = [P.add(terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return P.add(terms[0], _broadcast(init, out_shape))


def _cumsum(x: P.Pair, axis: int, length: int, reverse: bool, zero: float = 0.0) -> P.Pair:
    """The running sum of ``x`` along ``axis`` by doubling, each window's
    sum started from (and padded by) ``zero``, the op's init: ``+0`` turns
    a running sum of ``-0``s into ``+0`` as the op does, ``-0`` keeps it."""
    init = P.constant([], zero)
    t = P.pair_type(x.shape)
    st = P.pair_type([])
    for attrs in doubling_windows(len(x.shape), axis, length, reverse):
        new = build("reduce_window", [x.hi, x.lo, init.hi, init.lo], [t, t], regions=1, **attrs)
        block = new.regions[0].blocks.append(st, st, st, st)
        with ir.InsertionPoint(block):
            a = block.arguments
            z = P.add(P.Pair(a[0], a[1]), P.Pair(a[2], a[3]))
            build("return", [z.hi, z.lo], [])
        x = P.Pair(new.results[0], new.results[1])
    return x


def sort(op: ir.Operation, em: PairContext) -> list[Out]:
    """``sort``: each float64 operand as two (hi, lo) operands; the
    comparator compares pairs."""
    return em.rebuild_sort(op, [em.is_pair(x) for x in op.operands])


def top_k(op: ir.Operation, em: PairContext) -> list[Out]:
    """``chlo.top_k``: a stable sort of (hi, lo, index) along the last
    dimension, greatest first in IEEE's total order on the hi words (NaN
    first, +0 before -0), then by the lo words -- ties in index order, as
    XLA's -- and its first ``k``: the values as pairs, the indices as they
    are."""
    if "largest" in op.attributes and not ir.BoolAttr(op.attributes["largest"]).value:
        em.refuse(op, "no64 computes top_k on float64 pairs only for the largest elements")
    x = em.pair(op.operands[0])
    shape = x.shape
    rank = len(shape)
    k = ir.IntegerAttr(op.attributes["k"]).value
    itype = ir.RankedTensorType(op.results[1].type).element_type
    i64 = ir.IntegerType.get_signless(64)
    index = make("iota", [], ir.RankedTensorType.get(shape, itype), iota_dimension=ir.IntegerAttr.get(i64, rank - 1))
    t = P.pair_type(shape)
    new = build("sort", [x.hi, x.lo, index], [t, t, index.type], regions=1,
                dimension=ir.IntegerAttr.get(i64, rank - 1), is_stable=ir.BoolAttr.get(True))
    st, it = P.pair_type([]), ir.RankedTensorType.get([], itype)
    block = new.regions[0].blocks.append(st, st, st, st, it, it)
    with ir.InsertionPoint(block):
        a = block.arguments
        build("return", [P.compare("GT", P.Pair(a[0], a[2]), P.Pair(a[1], a[3]), "TOTALORDER")], [])
    attrs = dict(start_indices=ir.DenseI64ArrayAttr.get([0] * rank),
                 limit_indices=ir.DenseI64ArrayAttr.get(shape[:-1] + [k]),
                 strides=ir.DenseI64ArrayAttr.get([1] * rank))
    first = [ir.RankedTensorType.get(shape[:-1] + [k], ir.RankedTensorType(r.type).element_type) for r in new.results]
    hi, lo, idx = (make("slice", [r], t, **attrs) for r, t in zip(new.results, first))
    return [P.Pair(hi, lo), idx]


def scatter(op: ir.Operation, em: PairContext) -> list[Out]:
    """``scatter`` whose body stores the update (``.at[].set``): the hi
    and lo words scattered alike; a body that combines (``.at[].add``) is
    computed on pairs."""
    return em.rebuild_scatter(op)


# ------------------------------------------------------------- dot_general
#: A contraction of at least this many elements is computed by exact
#: slices into dots on the matrix engine (:mod:`no64.rules.pair_dot`); a shorter
#: one by pair products and a blocked sum, cheaper there (and within
#: ``3u^2``-ish of ``(|A| |B|)_ij`` elementwise).
DOT_SPLIT_MIN = 32

#: The elementwise form sums its contraction this many elements at a time.
DOT_CHUNK = 64


def dot_general(op: ir.Operation, em: PairContext) -> list[Out]:
    """Both operands laid out ``batch x free x contracting``; a contraction
    of at least :data:`DOT_SPLIT_MIN` elements as exact dots of integer
    slices of the rows and columns on the device's matrix engine
    (``em.matmul``; :func:`no64.rules.pair_dot.split_dot`, the Ozaki
    scheme: error about ``2**-45.2`` of ``(|A| |B|)_ij``, the slice count
    chosen at run time from the data, see that module), a
    shorter one as pair products on ``batch x lhs-free x rhs-free x chunk``
    summed in blocks (:data:`DOT_CHUNK` contraction elements at a time).
    A float64 operand beside an f32 (f16, bf16) one takes the latter
    exactly as a pair."""
    lhs, rhs = op.operands
    if not is_f64(op.results[0].type):
        em.refuse(op, "no64 computes dot_general on float64 pairs only with a float64 result")
    a = em.pair(lhs) if is_f64(em.type(lhs)) else P.from_float(em.value(lhs))
    b = em.pair(rhs) if is_f64(em.type(rhs)) else P.from_float(em.value(rhs))
    dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    lb, rb = list(dn.lhs_batching_dimensions), list(dn.rhs_batching_dimensions)
    lc, rc = list(dn.lhs_contracting_dimensions), list(dn.rhs_contracting_dimensions)
    ls, rs = a.shape, b.shape
    lf = [i for i in range(len(ls)) if i not in lb and i not in lc]
    rf = [i for i in range(len(rs)) if i not in rb and i not in rc]
    batch = [ls[i] for i in lb]
    lfree = [ls[i] for i in lf]
    rfree = [rs[i] for i in rf]
    nbt = int(np.prod(batch, dtype=np.int64))
    m = int(np.prod(lfree, dtype=np.int64))
    k = int(np.prod([ls[i] for i in lc], dtype=np.int64))
    # the lhs as batch x free x contracting
    a3 = _words(a, lambda w: make("reshape", [_transposed(w, lb + lf + lc)], P.pair_type([nbt, m, k])))
    acc = _contract(a3, b, rb, rc, rf, em.matmul)
    return [_words(acc, lambda w: make("reshape", [w], P.pair_type(batch + lfree + rfree)))]


def _contract(a3: P.Pair, b: P.Pair, rb: list[int], rc: list[int], rf: list[int], path: Matmul) -> P.Pair:
    """``a3`` (``batch x m x k``) contracted with ``b`` (its batch, contracting
    and free dimensions ``rb``, ``rc``, ``rf``) as a ``batch x m x n`` pair:
    from :data:`DOT_SPLIT_MIN` contracting elements on by exact slices on
    the matrix engine's datapath ``path``, the rhs laid out batch x
    contracting x free (the layout its dots take); a shorter contraction
    elementwise, the rhs batch x free x contracting."""
    nbt, m, k = a3.shape
    n = int(np.prod([b.shape[i] for i in rf], dtype=np.int64))
    if k >= DOT_SPLIT_MIN:
        return split_dot(a3, _words(b, lambda w: make("reshape", [_transposed(w, rb + rc + rf)],
                                                       P.pair_type([nbt, k, n]))), path)
    b3 = _words(b, lambda w: make("reshape", [_transposed(w, rb + rf + rc)], P.pair_type([nbt, n, k])))
    return _elementwise_dot(a3, b3)



def convolution(op: ir.Operation, em: PairContext) -> list[Out]:
    """A ``convolution`` as the contraction of its patches with its kernel,
    which :func:`dot_general`
    computes (exact f32 slices from :data:`DOT_SPLIT_MIN` elements on):
    each word of the input, padded and dilated as the op says (``pad``,
    exact moves), gives for each position of the window a strided slice,
    the slices stacked into rows of ``window x input features``; the kernel
    (reversed where the op reverses the window) is laid out the same way.
    An inf or a NaN in a row is what it is in the op (the rows are moves of
    the input, no product by 0 is taken), and such rows are computed as the
    f32 dot of the hi words, as :func:`dot_general` does.

    ``G`` groups (``feature_group_count`` or ``batch_group_count`` ``G``) are
    ``G`` such contractions, as the StableHLO spec defines them: the input's
    features (or its batch) and the kernel's output features split in ``G``
    equal slices, one contraction per pair of slices, their results
    concatenated along the output's features."""
    lhs, rhs = op.operands
    if not is_f64(op.results[0].type):
        em.refuse(op, "no64 computes convolution on float64 pairs only with a float64 result")
    fg, bg = (ir.IntegerAttr(op.attributes[name]).value if name in op.attributes else 1
              for name in ("feature_group_count", "batch_group_count"))
    a = em.pair(lhs) if is_f64(em.type(lhs)) else P.from_float(em.value(lhs))
    b = em.pair(rhs) if is_f64(em.type(rhs)) else P.from_float(em.value(rhs))
    dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    sp_in, sp_k, sp_out = (list(dn.input_spatial_dimensions), list(dn.kernel_spatial_dimensions),
                           list(dn.output_spatial_dimensions))
    r = len(sp_in)
    out_t = ir.RankedTensorType(em.type(op.results[0]))
    out_shape = list(out_t.shape)
    # the input as [N, spatial..., C], the kernel as [spatial..., I, O]
    x = _words(a, lambda w: _transposed(w, [dn.input_batch_dimension, *sp_in, dn.input_feature_dimension]))
    kern = _words(b, lambda w: _transposed(w, [*sp_k, dn.kernel_input_feature_dimension,
                                              dn.kernel_output_feature_dimension]))
    reverse = [bool(v) for v in ir.DenseBoolArrayAttr(op.attributes["window_reversal"])] \
        if "window_reversal" in op.attributes else [False] * r
    if any(reverse):
        dims = ir.DenseI64ArrayAttr.get([i for i in range(r) if reverse[i]])
        kern = _words(kern, lambda w: make("reverse", [w], w.type, dimensions=dims))
    strides = int_array(op, "window_strides", r, 1)
    lhs_dil = int_array(op, "lhs_dilation", r, 1)
    rhs_dil = int_array(op, "rhs_dilation", r, 1)
    pads = padding(op, r)
    groups = fg * bg  # the op's verifier allows at most one of them above 1
    nb, c = x.shape[0] // bg, x.shape[-1] // fg  # one group's batch and features
    window = kern.shape[:r]
    o = kern.shape[-1] // groups
    outs = [out_shape[d] for d in sp_out]
    zero = make("constant", [], P.pair_type([]), value=ir.DenseElementsAttr.get_splat(
        P.pair_type([]), ir.FloatAttr.get(P.f32(), 0.0)))

    def padded(w: ir.Value) -> ir.Value:
        shape = _shape(w)
        low, high, inner = [0] * (r + 2), [0] * (r + 2), [0] * (r + 2)
        for i in range(r):
            low[i + 1], high[i + 1], inner[i + 1] = pads[i][0], pads[i][1], lhs_dil[i] - 1
            shape[i + 1] = (shape[i + 1] - 1) * lhs_dil[i] + 1 + pads[i][0] + pads[i][1]
        if not any(low) and not any(high) and not any(inner):
            return w
        return make("pad", [w, zero], P.pair_type(shape), edge_padding_low=ir.DenseI64ArrayAttr.get(low),
                    edge_padding_high=ir.DenseI64ArrayAttr.get(high), interior_padding=ir.DenseI64ArrayAttr.get(inner))

    def patches(w: ir.Value) -> ir.Value:
        w = padded(w)
        pieces = []
        for pos in np.ndindex(*window):
            start = [0] + [pos[i] * rhs_dil[i] for i in range(r)] + [0]
            limit = [nb] + [start[i + 1] + (outs[i] - 1) * strides[i] + 1 for i in range(r)] + [c]
            piece = make("slice", [w], P.pair_type([nb, *outs, c]), start_indices=ir.DenseI64ArrayAttr.get(start),
                         limit_indices=ir.DenseI64ArrayAttr.get(limit),
                         strides=ir.DenseI64ArrayAttr.get([1, *strides, 1]))
            pieces.append(make("reshape", [piece], P.pair_type([nb, *outs, 1, c])))
        stacked = pieces[0] if len(pieces) == 1 else make(
            "concatenate", pieces, P.pair_type([nb, *outs, len(pieces), c]),
            dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), r + 1))
        m = nb * int(np.prod(outs, dtype=np.int64))
        return make("reshape", [stacked], P.pair_type([1, m, len(pieces) * c]))  # one batch of rows

    k = int(np.prod(window, dtype=np.int64)) * c
    # one group's input slice: along the batch (batch groups) or the features
    in_dim, in_size = (0, nb) if bg > 1 else (r + 1, c)
    accs = []
    for g in range(groups):
        xg = P.Pair(*(_slab(w, in_dim, g * in_size, in_size) for w in (x.hi, x.lo)))
        kg = P.Pair(*(_slab(w, r + 1, g * o, o) for w in (kern.hi, kern.lo)))
        rows = _words(xg, patches)
        cols = _words(kg, lambda w: make("reshape", [w], P.pair_type([k, o])))
        accs.append(_contract(rows, cols, [], [0], [1], em.matmul))
    m = nb * int(np.prod(outs, dtype=np.int64))
    acc = accs[0] if groups == 1 else P.Pair(*(make(
        "concatenate", [getattr(a, word) for a in accs], P.pair_type([1, m, o * groups]),
        dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)) for word in ("hi", "lo")))
    # [N, out spatial..., O] back to the op's layout
    canonical = [dn.output_batch_dimension, *sp_out, dn.output_feature_dimension]
    inverse = [canonical.index(d) for d in range(r + 2)]
    return [_words(acc, lambda w: _transposed(make("reshape", [w], P.pair_type([nb, *outs, o * groups])),
                                              inverse))]


def _elementwise_dot(a3: P.Pair, b3: P.Pair) -> P.Pair:
    """Pair products laid out ``batch x m x n x chunk``, summed in blocks,
    chunk by chunk of the contraction (:data:`DOT_CHUNK` elements): the
    products are never all in memory at once."""
    nbt, m, k = a3.shape
    n = b3.shape[1]
    chunks = max(1, -(-k // DOT_CHUNK))
    c = -(-k // chunks)
    if chunks * c != k:
        a3, b3 = _pad_last(a3, chunks * c - k), _pad_last(b3, chunks * c - k)
    t4 = P.pair_type([nbt, m, n, c])
    acc: P.Pair | None = None
    la = ir.DenseI64ArrayAttr.get([0, 1, 3])
    ra = ir.DenseI64ArrayAttr.get([0, 2, 3])
    for j in range(chunks):
        aj = _words(a3, partial(_chunk, start=j * c, size=c))
        bj = _words(b3, partial(_chunk, start=j * c, size=c))
        prod = P.multiply(_words(aj, lambda w: make("broadcast_in_dim", [w], t4, broadcast_dimensions=la)),
                          _words(bj, lambda w: make("broadcast_in_dim", [w], t4, broadcast_dimensions=ra)))
        # (not folded: the products are computed where the reduce reads them;
        # summed from +0, as XLA's dot is, but for a single product)
        part = blocked_sum(prod, [3], folds=0, start=0.0)
        acc = part if acc is None else P.add(acc, part)
    assert acc is not None
    return acc


def _words(x: P.Pair, fn: Callable[[ir.Value], ir.Value]) -> P.Pair:
    return P.Pair(fn(x.hi), fn(x.lo))


def _transposed(w: ir.Value, perm: list[int]) -> ir.Value:
    if perm == list(range(len(perm))):
        return w
    shape = _shape(w)
    return make("transpose", [w], P.pair_type([shape[i] for i in perm]),
                permutation=ir.DenseI64ArrayAttr.get(perm))


def _slab(w: ir.Value, dim: int, start: int, size: int) -> ir.Value:
    """``size`` entries of ``w`` from ``start`` on along ``dim`` (``w`` itself
    when that is all of it)."""
    shape = _shape(w)
    if start == 0 and size == shape[dim]:
        return w
    limit = list(shape)
    limit[dim] = start + size
    begin = [0] * len(shape)
    begin[dim] = start
    return make("slice", [w], P.pair_type(limit[:dim] + [size] + limit[dim + 1:]),
                start_indices=ir.DenseI64ArrayAttr.get(begin), limit_indices=ir.DenseI64ArrayAttr.get(limit),
                strides=ir.DenseI64ArrayAttr.get([1] * len(shape)))


def _chunk(w: ir.Value, start: int, size: int) -> ir.Value:
    shape = _shape(w)
    if start == 0 and size == shape[-1]:
        return w
    rank = len(shape)
    return make("slice", [w], P.pair_type(shape[:-1] + [size]),
                start_indices=ir.DenseI64ArrayAttr.get([0] * (rank - 1) + [start]),
                limit_indices=ir.DenseI64ArrayAttr.get(shape[:-1] + [start + size]),
                strides=ir.DenseI64ArrayAttr.get([1] * rank))
