"""Rules for 16-bit integers carried as 32-bit ones (the widening).

On a target without 16-bit integers (:attr:`~no64.targets.Target.widens`:
Neuron) every ``i16``/``ui16`` value is carried as an ``i32``/``ui32``
holding it sign- (``i16``) or zero-extended (``ui16``), by
:class:`no64.transforms.widen.Widening`.  Each op is retyped in place
(:meth:`~no64.spec.protocols.WidenContext.retype`); these rules add what
keeps its 16-bit meaning where a 32-bit op on extended operands could
leave the 16-bit range or read bits the 16-bit op does not:

* :func:`wrapped` (``add``, ``subtract``, ``multiply``, ``negate``,
  ``abs``, ``power``, ``shift_left``, ``divide`` -- ``INT16_MIN / -1``,
  unsigned ``x / 0`` --, dots and convolutions): the result is wrapped
  back (``shift_left`` 16 then ``shift_right_arithmetic`` 16 for ``i16``,
  ``and 0xFFFF`` for ``ui16``); 32-bit arithmetic agrees with 16-bit
  arithmetic modulo 2**16, so the low 16 bits are those the 16-bit op
  gives.  A chain of adds, subtracts, multiplies and negations is wrapped
  once, where its value is read by anything else, and the sums of a
  reduction or scatter whose body only adds (or multiplies) once, after it
  (:func:`reduction`), which keeps its body a plain combiner (the limb split
  of :mod:`no64.rules.limbs` reads it);
* ``shift_right_logical`` and ``popcnt`` of ``i16`` read the 16-bit pattern
  (``and 0xFFFF``), ``count_leading_zeros`` counts from bit 15
  (``clz32 - 16``), ``shift_right_arithmetic`` of ``ui16`` shifts the
  sign-extended pattern, ``not`` of ``ui16`` is wrapped; shift amounts of
  16 or more give what XLA gives on 16 bits (all zeros, or the sign) since
  the 32-bit shift of an extended value does too;
* a ``convert`` (or ``bitcast_convert``) to 16 bits from a wider integer or
  the other signedness is wrapped; one from a float saturates at the 16-bit
  bounds with NaN as 0 (what XLA's CPU gives, measured under jax 0.10 and
  0.12): the float is converted to 32 bits (which saturates there) and
  clamped;
* constants are rewritten as 32-bit constants; every other op the table
  gives :func:`retyped` computes the same values on extended operands (or
  only moves them).

The ``widen_why_not`` checks say why an op's 16-bit values cannot be carried
exactly (a bitcast between a 16-bit integer and ``f16``, a ``custom_call``
or host transfer of 16-bit data, random bits drawn as 16-bit integers).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..ir import words as W
from ..ir._compat import constant_value, insertion_after
from ..ir._mlir import ir
from ..spec.protocols import WidenContext
from ..spec.registry import Computes, spec_of

__all__ = [
    "narrow_kind",
    "retyped",
    "wrapped",
    "reduction",
    "bit_not",
    "shift_right_logical",
    "shift_right_arithmetic",
    "popcnt",
    "count_leading_zeros",
    "convert",
    "constant",
    "constant_why_not",
    "bitcast_why_not",
    "custom_call_why_not",
    "random_bits_why_not",
    "host_transfer_why_not",
]

_NARROW = {(16, True): "i16", (16, False): "u16"}

#: Ops whose 16-bit results modulo 2**16 depend only on their operands modulo
#: 2**16 (a ring's operations).
_RING = frozenset({Computes.ADD, Computes.SUBTRACT, Computes.MULTIPLY, Computes.NEGATE})

#: custom_call targets that only annotate a value's sharding: retyped.
_SHARDING = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})

Out = list["ir.Value | None"]


def narrow_kind(t: ir.Type) -> str | None:
    """``"i16"``/``"u16"`` for a 16-bit integer (element) type, else ``None``."""
    e = t.element_type if isinstance(t, ir.ShapedType) else t
    if isinstance(e, ir.IntegerType):
        return _NARROW.get((e.width, not e.is_unsigned))
    return None


# ------------------------------------------------------ the 16-bit arithmetic
def _splat(like: ir.Value, value: int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    attr = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
    return W.make("constant", [], t, value=attr)


def _make(name: str, operands: list[ir.Value], t: ir.Type | None = None) -> ir.Value:
    return W.make(name, operands, t or operands[0].type)


def wrap(v: ir.Value, signed: bool) -> ir.Value:
    """``v`` (32-bit) reduced to its low 16 bits, sign- or zero-extended."""
    if signed:
        sixteen = _splat(v, 16)
        return _make("shift_right_arithmetic", [_make("shift_left", [v, sixteen]), sixteen])
    return _make("and", [v, _splat(v, 0xFFFF)])


def _low16(v: ir.Value) -> ir.Value:
    """The 16-bit pattern of ``v``, zero-extended."""
    return _make("and", [v, _splat(v, 0xFFFF)])


def _saturate(v: ir.Value, lo: int, hi: int) -> ir.Value:
    return _make("clamp", [_splat(v, lo), v, _splat(v, hi)])


def _after(op: ir.Operation, r: ir.Value, build: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """``build(r)`` for result ``r`` of ``op``, built right after ``op``:
    what stands for ``r`` from then on."""
    with insertion_after(op), op.location:
        return build(r)


def _before(op: ir.Operation, i: int, build: Callable[[ir.Value], ir.Value]) -> None:
    """Operand ``i`` of ``op`` replaced by ``build(operand)``, built right before ``op``."""
    with ir.InsertionPoint(op), op.location:
        op.operands[i] = build(op.operands[i])


# ------------------------------------------------------ where a wrap is spared
def _combiner(block: ir.Block) -> ir.Operation | None:
    """The ``add`` or ``multiply`` of its arguments that a reduction's or
    scatter's body is, alone, if it is one (its combiner)."""
    ops = block.operations
    if len(ops) != 2:
        return None
    op, ret = ops[0].operation, ops[1].operation
    if spec_of(op.name).computes not in (Computes.ADD, Computes.MULTIPLY) or not spec_of(ret.name).terminator:
        return None
    if list(ret.operands) != list(op.results):
        return None
    args = list(block.arguments)
    if not all(any(v == a for a in args) for v in op.operands):
        return None
    return op


def _combined(op: ir.Operation) -> bool:
    """Whether ``op`` is the combiner of the reduction or scatter whose body
    it is: its sums are wrapped once, after that op (32-bit sums agree with
    16-bit ones modulo 2**16)."""
    if spec_of(op.name).computes not in (Computes.ADD, Computes.MULTIPLY):
        return False
    parent = op.block.owner
    if parent is None or spec_of(parent.operation.name).reduction is None:
        return False
    found = _combiner(op.block)
    return found is not None and found == op


def _only_ring_users(op: ir.Operation, wd: WidenContext) -> bool:
    """Whether ``op`` (a ring operation) is read only by ring operations of
    16-bit results that are wrapped themselves: its own wrap is not needed,
    since each of them is wrapped and agrees modulo 2**16."""
    if spec_of(op.name).computes not in _RING:
        return False
    users = [u.owner.operation for u in op.results[0].uses]
    return bool(users) and all(
        spec_of(u.name).computes in _RING and wd.kind(u.results[0]) is not None and not _combined(u)
        for u in users)


# ------------------------------------------------------------------ the rules
def retyped(op: ir.Operation, wd: WidenContext) -> Out:
    """An op that computes the same values on extended operands, or only
    moves them: retyped."""
    wd.retype(op)
    return []


def wrapped(op: ir.Operation, wd: WidenContext) -> Out:
    """Arithmetic whose 32-bit result may leave the 16-bit range: wrapped
    back after it (but where a ring operation is only read by wrapped ring
    operations, or is a reduction's combiner)."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind is None or _combined(op) or _only_ring_users(op, wd):
        return []
    wd.fixed(op, "wrapped to 16 bits")
    return [_after(op, op.results[0], functools.partial(wrap, signed=kind == "i16"))]


def reduction(op: ir.Operation, wd: WidenContext) -> Out:
    """A reduction or scatter: retyped; where its body only adds (or
    multiplies) 16-bit values, its 16-bit results wrapped once, after it."""
    kinds = [wd.kind(r) for r in op.results]
    body = _combiner(op.regions[0].blocks[0])
    wd.retype(op)
    if body is None or wd.kind(body.results[0]) is None:
        return []
    out: Out = [_after(op, r, functools.partial(wrap, signed=kind == "i16")) if kind is not None else None
                for r, kind in zip(op.results, kinds, strict=True)]
    wd.fixed(op, "its sums wrapped to 16 bits")
    return out


def bit_not(op: ir.Operation, wd: WidenContext) -> Out:
    """``not``: of ``ui16``, wrapped (the 32-bit ``not`` sets the high bits)."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind != "u16":
        return []
    wd.fixed(op, "wrapped to 16 bits")
    return [_after(op, op.results[0], functools.partial(wrap, signed=False))]


def shift_right_logical(op: ir.Operation, wd: WidenContext) -> Out:
    """Of ``i16``: shifts the 16-bit pattern, the result sign-extended."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind != "i16":
        return []
    _before(op, 0, _low16)
    wd.fixed(op, "shifts the 16-bit pattern")
    return [_after(op, op.results[0], functools.partial(wrap, signed=True))]


def shift_right_arithmetic(op: ir.Operation, wd: WidenContext) -> Out:
    """Of ``ui16``: shifts the sign-extended 16-bit pattern, the result
    zero-extended."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind != "u16":
        return []
    _before(op, 0, functools.partial(wrap, signed=True))
    wd.fixed(op, "shifts the sign-extended 16-bit pattern")
    return [_after(op, op.results[0], functools.partial(wrap, signed=False))]


def popcnt(op: ir.Operation, wd: WidenContext) -> Out:
    """Of ``i16``: counts the 16-bit pattern."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind == "i16":
        _before(op, 0, _low16)
        wd.fixed(op, "counts the 16-bit pattern")
    return []


def count_leading_zeros(op: ir.Operation, wd: WidenContext) -> Out:
    """Counts from bit 15 (of ``i16``: of the 16-bit pattern)."""
    kind = wd.kind(op.results[0])
    wd.retype(op)
    if kind is None:
        return []
    if kind == "i16":
        _before(op, 0, _low16)
    wd.fixed(op, "counts from bit 15")
    return [_after(op, op.results[0], lambda v: _make("subtract", [v, _splat(v, 16)]))]


def convert(op: ir.Operation, wd: WidenContext) -> Out:
    """A ``convert`` (or ``bitcast_convert``) to 16 bits: from a wider integer
    or the other signedness, wrapped; from a float, saturated at the 16-bit
    bounds."""
    kind = wd.kind(op.results[0])
    src_type = wd.type(op.operands[0])
    src = src_type.element_type if isinstance(src_type, ir.ShapedType) else src_type
    wd.retype(op)
    if kind is None:
        return []
    r = op.results[0]
    if isinstance(src, ir.IntegerType):
        if src.width > 16 or (src.width == 16 and narrow_kind(src) != kind):
            wd.fixed(op, "wrapped to 16 bits")
            return [_after(op, r, functools.partial(wrap, signed=kind == "i16"))]
        return []
    if isinstance(src, ir.ComplexType):
        return []
    lo, hi = (-(2**15), 2**15 - 1) if kind == "i16" else (0, 2**16 - 1)
    wd.fixed(op, "saturates at the 16-bit bounds")
    return [_after(op, r, functools.partial(_saturate, lo=lo, hi=hi))]


def constant(op: ir.Operation, wd: WidenContext) -> Out:
    """A 16-bit constant as the 32-bit constant of its extended elements."""
    wd.retype(op)
    attr = ir.DenseIntElementsAttr(constant_value(op))
    t = ir.RankedTensorType(op.results[0].type)
    unsigned = t.element_type.is_unsigned
    if attr.is_splat:
        value = int(ir.IntegerAttr(attr.get_splat_value()).value)
        if unsigned:
            value &= 0xFFFF
        op.attributes["value"] = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
        return []
    arr = np.array(attr)
    arr = arr.astype(np.uint16 if unsigned else np.int16).astype(np.uint32 if unsigned else np.int32)
    op.attributes["value"] = ir.DenseElementsAttr.get(np.ascontiguousarray(arr.reshape(t.shape)), type=t)
    return []


# ------------------------------------------------------------- the refusals
def constant_why_not(op: ir.Operation, wd: WidenContext) -> str | None:
    try:
        ir.DenseIntElementsAttr(constant_value(op))
    except (TypeError, ValueError):
        return "a 16-bit integer constant whose elements the bindings do not hand out"
    return None


def bitcast_why_not(op: ir.Operation, wd: WidenContext) -> str | None:
    """A bitcast reads the 16-bit pattern: computed only between 16-bit
    integers of one shape (the other signedness)."""
    src, dst = wd.kind(op.operands[0]), wd.kind(op.results[0])
    same_shape = ir.ShapedType(op.operands[0].type).shape == ir.ShapedType(op.results[0].type).shape
    if src is not None and dst is not None and same_shape:
        return None
    other = op.results[0].type if src is not None else op.operands[0].type
    return (f"a bitcast between a 16-bit integer and {ir.ShapedType(other).element_type} reads the 16-bit "
            f"pattern, which {wd.target_name} carries in 32 bits")


def custom_call_why_not(op: ir.Operation, wd: WidenContext) -> str | None:
    callee = ir.StringAttr(op.attributes["call_target_name"]).value
    if callee in _SHARDING:
        return None
    return f"custom_call @{callee} receives or returns 16-bit integers, which {wd.target_name} carries in 32 bits"


def random_bits_why_not(op: ir.Operation, wd: WidenContext) -> str | None:
    return f"random bits drawn as 16-bit integers differ from those drawn as 32-bit ({wd.target_name})"


def host_transfer_why_not(op: ir.Operation, wd: WidenContext) -> str | None:
    return f"a host transfer of 16-bit integers, which {wd.target_name} carries in 32 bits"
