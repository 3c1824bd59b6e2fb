"""Reductions of several values, and sorts whose comparators test equality,
in forms a device that refuses them compiles.

Neuron refuses a ``reduce`` of more than one input ("variadic reductions
are not supported") and a ``reduce_window`` of other than two operands
(EVRF019).  Both are common: JAX writes ``argmax``/``argmin`` as a reduce of
(value, index), and no64 writes a float64 sum on pairs as a reduce of (hi,
lo) and a cumulative sum on pairs as a ``reduce_window`` of (hi, lo).  The
op table's ``unfold`` rules here (:func:`reduce`, :func:`reduce_window`)
rewrite such an op into its body applied to whole tensors, which every
device compiles:

* a ``reduce``: each reduced dimension in turn is padded in front with the
  init values up to a power of two and halved, the body combining each
  even element with the odd one after it, elementwise, until one element
  is left; the init values are combined in front once more at the end.
  Each combination takes the earlier elements on the left, as a sequential
  reduction starting from the init values does, so a body that is
  associative but not commutative (JAX's ``argmax`` keeps the first NaN
  and the first of equal maxima) gives what it gives in order; the
  grouping is another -- which XLA's reduce leaves unspecified, and which
  is why JAX's reducers (and no64's pair sums) take init values that are
  identities of their bodies;
* a ``reduce_window`` whose base is not dilated: its operands are padded as
  the op says (with the init values), and for each position in the window
  the strided slice of the operands at that position is combined with the
  others by the body, elementwise, starting from the init values -- the
  window's elements in window order (a cumulative pair sum of JAX's
  doubling scan is two positions per step).

The body must be made of ops that apply to each element alone (the op
table's ``elementwise``), constants, and calls of functions made of such
ops (``jnp.where`` in a body is one); the shapes must be static.  Where
that does not hold, or a window has more than :data:`MAX_POSITIONS`
positions, the rule says why and the op is left as it is (and reported by
the target check).

Neuron's sort also takes only comparators made of LT, LE, GT and GE
comparisons, and JAX's own comparators test equality: a float sort
canonicalises ``-0.0`` (``x == 0``) and NaN (``x != x``) before its total
order compare, a sort on several keys ties on the earlier ones (``a == b``),
and so do no64's sorts of 64-bit words (the high words).  The ``unfold``
rule of ``sort`` (:func:`sort`) rewrites each ``EQ`` comparison in its
comparator as ``LE and GE`` and each ``NE`` as ``not (LE and GE)``, of the
same compare type -- the same truth value on every input: on integers; on
floats compared ``FLOAT`` (partially: a NaN is neither ``<=`` nor ``>=``
anything, so ``EQ`` is false and ``NE`` true, and ``-0.0 == 0.0`` holds both
ways); and compared ``TOTALORDER`` (a total order: ``a <= b and a >= b``
exactly when ``a`` is ``b``).  The sort itself, its operands, dimension and
stability are kept, so its results are what they were, bit for bit.

Neuron also refuses an arithmetic right shift of other than 32-bit values
(EVRF022), which a device keeping ``int64`` meets in every ``x >> k`` of the
x64 program.  The ``unfold`` rule of ``shift_right_arithmetic``
(:func:`shift_right_arithmetic`) writes it as a logical shift of the value
flipped by its sign: ``x >> k`` is ``((x ^ s) >>> k) ^ s``, ``s`` being -1
where ``x`` is negative and 0 elsewhere -- for every amount, as StableHLO
defines both shifts (an amount of the width or more gives ``s``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from ..ir import words as W
from ..ir._compat import as_attribute, attribute_dict
from ..ir._mlir import ir, stablehlo
from ..report import counted
from ..spec.protocols import Legalization
from ..spec.registry import Computes, elementwise, spec_of

__all__ = ["MAX_POSITIONS", "reduce", "reduce_window", "shift_right_arithmetic", "sort"]

#: A window with more positions than this (a large pooling window) is left
#: as it is: unfolded, it would be that many slices and bodies.
MAX_POSITIONS = 64

#: The body applied elementwise to tensors of one shape: (lhs, rhs) -> results.
Body = Callable[[Sequence[ir.Value], Sequence[ir.Value]], list[ir.Value]]


def _tensor(shape: Sequence[int], elem: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), elem)


def _elem(v: ir.Value) -> ir.Type:
    return ir.RankedTensorType(v.type).element_type


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


_make = W.make


def _i64s(values: Sequence[int]) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _ints(attr: ir.Attribute | None, default: Sequence[int]) -> list[int]:
    """An integer list attribute, as an array (newer StableHLO) or dense elements."""
    if attr is None:
        return list(default)
    array = as_attribute(attr, ir.DenseI64ArrayAttr)
    if array is not None:
        return list(array)
    dense = ir.DenseIntElementsAttr(attr)
    if dense.is_splat:
        n = math.prod(ir.ShapedType(dense.type).shape)
        return [int(ir.IntegerAttr(dense.get_splat_value()).value)] * n
    return [int(x) for x in dense]


def _slice(v: ir.Value, start: Sequence[int], limit: Sequence[int], strides: Sequence[int]) -> ir.Value:
    shape = [max(0, -(-(hi - lo) // s)) for lo, hi, s in zip(start, limit, strides)]
    return _make("slice", [v], _tensor(shape, _elem(v)), start_indices=_i64s(start),
                 limit_indices=_i64s(limit), strides=_i64s(strides))


def _pad(v: ir.Value, value: ir.Value, low: Sequence[int], high: Sequence[int]) -> ir.Value:
    if not any(low) and not any(high):
        return v
    shape = [n + lo + hi for n, lo, hi in zip(_shape(v), low, high)]
    return _make("pad", [v, value], _tensor(shape, _elem(v)), edge_padding_low=_i64s(low),
                 edge_padding_high=_i64s(high), interior_padding=_i64s([0] * len(shape)))


def _broadcast(scalar: ir.Value, shape: Sequence[int]) -> ir.Value:
    return _make("broadcast_in_dim", [scalar], _tensor(shape, _elem(scalar)), broadcast_dimensions=_i64s([]))


def _module_of(op: ir.Operation) -> ir.Operation | None:
    """The outermost op holding ``op`` (its module)."""
    top = op.parent
    while top is not None and top.parent is not None:
        top = top.parent
    return top


def _callee(call: ir.Operation) -> ir.Operation | None:
    """The function a call in a body calls, found in the enclosing module."""
    module = _module_of(call)
    if module is None:
        return None
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    for f in module.regions[0].blocks[0].operations:
        f = f.operation  # (an OpView's name may be its symbol's)
        if spec_of(f.name).function and ir.StringAttr(f.attributes["sym_name"]).value == name:
            return f
    return None


def _scalar_block(block: ir.Block, seen: frozenset[str] = frozenset()) -> str | None:
    """Why ``block`` cannot run on whole tensors, or ``None``: it must hold
    only scalar ops that apply to each element alone, constants, and calls
    of functions that are such blocks."""
    for inner in block.operations:
        inner = inner.operation
        spec = spec_of(inner.name)
        if spec.terminator:
            continue
        for v in (*inner.operands, *inner.results):
            if _shape(v):
                return f"its body holds {inner.name} on a value that is not a scalar"
        if spec.call:
            callee = _callee(inner)
            if callee is None or not len(callee.regions[0].blocks):
                return f"its body calls a function no64 cannot find ({inner.name})"
            name = ir.StringAttr(callee.attributes["sym_name"]).value
            if name in seen:
                return f"its body calls {name} recursively"
            why = _scalar_block(callee.regions[0].blocks[0], seen | {name})
            if why is not None:
                return why
            continue
        if len(inner.regions) or not (spec.constant or elementwise(inner)):
            return f"its body holds {inner.name}, which does not apply to each element alone"
    return None


def _on_tensors(block: ir.Block, operands: Sequence[ir.Value]) -> list[ir.Value]:
    """``block`` (see :func:`_scalar_block`) applied to ``operands``, tensors
    of one shape: its ops built before the insertion point on that shape."""
    shape = _shape(operands[0])
    values: dict[ir.Value, ir.Value] = dict(zip(block.arguments, operands))
    for inner in block.operations:
        inner = inner.operation
        spec = spec_of(inner.name)
        args = [values[o] for o in inner.operands]
        if spec.terminator:
            return args
        if spec.call:
            callee = _callee(inner)
            assert callee is not None
            results = _on_tensors(callee.regions[0].blocks[0], args)
        else:
            types = [_tensor(shape, _elem(r)) for r in inner.results]
            attrs = attribute_dict(inner)
            if spec.constant:
                scalar = ir.DenseElementsAttr(attrs["value"])
                attrs["value"] = ir.DenseElementsAttr.get_splat(types[0], scalar.get_splat_value())
            results = list(ir.Operation.create(inner.name, results=types, operands=args, attributes=attrs).results)
        for old, new in zip(inner.results, results):
            values[old] = new
    raise AssertionError("a body without its terminator")


def _body(op: ir.Operation) -> Body | str:
    """``op``'s body (region 0) as a function on tensors of any one shape, or
    why it cannot be one."""
    block = op.regions[0].blocks[0]
    why = _scalar_block(block)
    if why is not None:
        return why
    return lambda lhs, rhs: _on_tensors(block, [*lhs, *rhs])


def _static(op: ir.Operation) -> str | None:
    for v in (*op.operands, *op.results):
        t = ir.RankedTensorType(v.type)
        if any(ir.ShapedType.is_dynamic_size(n) for n in t.shape):
            return "its shapes are not static"
    return None


@dataclasses.dataclass
class _Unfolded:
    """A planned unfolding of ``op`` by ``build`` (which returns its results)."""

    op: ir.Operation
    build: Callable[[], list[ir.Value]]
    summary: str
    ops: int

    def apply(self) -> None:
        with ir.InsertionPoint(self.op), self.op.location:
            results = self.build()
        for old, new in zip(self.op.results, results):
            old.replace_all_uses_with(new)
        self.op.erase()


def reduce(op: ir.Operation) -> Legalization | str:
    """A ``reduce`` of several inputs as halvings of its operands combined by
    its body (see the module docstring)."""
    n = len(op.results)
    why = _static(op)
    if why is None and n < 2:
        why = "it reduces one input"
    body = _body(op) if why is None else why
    if isinstance(body, str):
        return body
    inputs, inits = list(op.operands[:n]), list(op.operands[n:])
    dims = sorted(_ints(attribute_dict(op).get("dimensions"), []), reverse=True)
    steps = sum(math.ceil(math.log2(_shape(inputs[0])[d])) if _shape(inputs[0])[d] > 1 else 0 for d in dims) + 1

    def build() -> list[ir.Value]:
        vals = inputs
        for d in dims:  # the highest first: the lower ones keep their numbers
            shape = _shape(vals[0])
            size = shape[d]
            if size == 0:
                rest = shape[:d] + shape[d + 1:]
                vals = [_broadcast(i, rest) for i in inits]
                continue
            full = 1 << (size - 1).bit_length()
            low = [0] * len(shape)
            low[d] = full - size
            vals = [_pad(v, i, low, [0] * len(shape)) for v, i in zip(vals, inits)]
            while full > 1:
                shape = _shape(vals[0])
                start, step = [0] * len(shape), [1] * len(shape)
                step[d] = 2
                even = [_slice(v, start, shape, step) for v in vals]
                start[d] = 1
                odd = [_slice(v, start, shape, step) for v in vals]
                vals = body(even, odd)
                full //= 2
            rest = shape[:d] + shape[d + 1:]
            vals = [_make("reshape", [v], _tensor(rest, _elem(v))) for v in vals]
        return body([_broadcast(i, _shape(vals[0])) for i in inits], vals)

    return _Unfolded(op, build, f"{counted(steps, 'elementwise step')} of its body on halves", steps)


def reduce_window(op: ir.Operation) -> Legalization | str:
    """A ``reduce_window`` of several operands as its body over the strided
    slices of its padded operands, one per window position (see the module
    docstring)."""
    n = len(op.results)
    why = _static(op)
    attrs = attribute_dict(op)
    rank = len(_shape(op.operands[0]))
    window = _ints(attrs.get("window_dimensions"), [1] * rank)
    strides = _ints(attrs.get("window_strides"), [1] * rank)
    base = _ints(attrs.get("base_dilations"), [1] * rank)
    dilations = _ints(attrs.get("window_dilations"), [1] * rank)
    flat_padding = _ints(attrs.get("padding"), [0] * (2 * rank))
    low, high = flat_padding[0::2], flat_padding[1::2]
    positions = math.prod(window)
    if why is None and any(b != 1 for b in base):
        why = "its base is dilated"
    if why is None and positions > MAX_POSITIONS:
        why = f"its window has {positions} positions (more than {MAX_POSITIONS})"
    body = _body(op) if why is None else why
    if isinstance(body, str):
        return body
    inputs, inits = list(op.operands[:n]), list(op.operands[n:])
    out_shape = _shape(op.results[0])

    def build() -> list[ir.Value]:
        padded = [_pad(v, i, low, high) for v, i in zip(inputs, inits)]
        vals = [_broadcast(i, out_shape) for i in inits]
        for flat in range(positions):
            offsets = []
            for w in reversed(window):
                offsets.append(flat % w)
                flat //= w
            offsets.reverse()
            start = [j * d for j, d in zip(offsets, dilations)]
            limit = [s + (m - 1) * st + 1 if m else s for s, m, st in zip(start, out_shape, strides)]
            vals = body(vals, [_slice(v, start, limit, strides) for v in padded])
        return vals

    return _Unfolded(op, build, f"its body over {counted(positions, 'window position')}", positions)


#: The comparisons a comparator may hold on a device that refuses the others.
ORDERED = frozenset({"LT", "LE", "GT", "GE"})


def _direction(op: ir.Operation) -> str:
    return str(stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value)


def _equalities(op: ir.Operation) -> list[ir.Operation]:
    """The ``EQ`` and ``NE`` comparisons in ``op``'s regions, at any depth."""
    found = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                if spec_of(inner.name).computes is Computes.COMPARE and _direction(inner) not in ORDERED:
                    found.append(inner)
                found += _equalities(inner)
    return found


@dataclasses.dataclass
class _Ordered:
    """A planned rewrite of a comparator's equality tests as ordered comparisons."""

    compares: list[ir.Operation]

    @property
    def summary(self) -> str:
        return f"{counted(len(self.compares), 'EQ/NE comparison')} of its comparator as LE and GE"

    @property
    def ops(self) -> int:
        return 1

    def apply(self) -> None:
        for cmp in self.compares:
            with ir.InsertionPoint(cmp), cmp.location:
                le, ge = (_compared(cmp, d) for d in ("LE", "GE"))
                result = cmp.results[0].type
                equal = _make("and", [le, ge], result)
                new = equal if _direction(cmp) == "EQ" else _make("not", [equal], result)
            cmp.results[0].replace_all_uses_with(new)
            cmp.erase()


def _compared(cmp: ir.Operation, direction: str) -> ir.Value:
    """``cmp``'s operands compared in ``direction``, of its compare type."""
    attrs = {**attribute_dict(cmp), "comparison_direction": stablehlo.ComparisonDirectionAttr.get(direction)}
    return ir.Operation.create(cmp.name, results=[cmp.results[0].type], operands=list(cmp.operands),
                               attributes=attrs).results[0]


def sort(op: ir.Operation) -> Legalization | str:
    """A ``sort`` whose comparator tests equality (``EQ``, ``NE``), with each
    such test as ordered comparisons of the same compare type (see the module
    docstring)."""
    compares = _equalities(op)
    if not compares:
        return "its comparator holds no EQ or NE comparison"
    unknown = sorted({d for c in compares if (d := _direction(c)) not in ("EQ", "NE")})
    if unknown:
        return f"its comparator compares {', '.join(unknown)}"
    return _Ordered(compares)


def shift_right_arithmetic(op: ir.Operation) -> Legalization | str:
    """An arithmetic right shift of signed integers as a logical one of the
    value flipped by its sign (see the module docstring): the same bits for
    every value and amount."""
    elem = _elem(op.results[0])
    if not isinstance(elem, ir.IntegerType) or elem.is_unsigned:
        return f"its elements ({elem}) are not signed integers"

    def build() -> list[ir.Value]:
        x, amount = op.operands
        zero, ones = W.splat(x, 0), W.splat(x, -1)
        negative = _make("compare", [x, zero], _tensor(_shape(x), ir.IntegerType.get_signless(1)),
                         comparison_direction=stablehlo.ComparisonDirectionAttr.get("LT"),
                         compare_type=stablehlo.ComparisonTypeAttr.get("SIGNED"))
        sign = _make("select", [negative, ones, zero], x.type)
        flipped = _make("xor", [x, sign], x.type)
        return [_make("xor", [_make("shift_right_logical", [flipped, amount], x.type), sign], x.type)]

    return _Unfolded(op, build, "a logical shift of the value flipped by its sign", 1)
