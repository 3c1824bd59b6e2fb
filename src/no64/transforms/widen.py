"""Carrying 16-bit integers as 32-bit ones, for a target without them.

A target whose profile declares :attr:`~no64.targets.Target.widens`
(Neuron: ``i16`` as ``i32``, ``u16`` as ``u32``) computes no 16-bit
integer.  :func:`widen` rewrites, in place, every value of element type
``i16``/``ui16`` inside a module's functions into ``i32``/``ui32`` holding the
16-bit value sign- (``i16``) or zero-extended (``ui16``), each op retyped,
with the 16-bit results restored exactly where a 32-bit op could leave the
16-bit range:

* ``add``, ``subtract``, ``multiply``, ``negate``, ``abs``, ``power``,
  ``shift_left``, ``divide`` (``INT16_MIN / -1``, unsigned ``x / 0``),
  ``dot_general``/``convolution``, ``not`` of unsigned values, a ``convert``
  or ``bitcast_convert`` to 16 bits from a wider integer or the other
  signedness: the result is wrapped back (``shift_left`` 16 then
  ``shift_right_arithmetic`` 16 for ``i16``, ``and 0xFFFF`` for ``ui16``);
  32-bit arithmetic agrees with 16-bit arithmetic modulo 2**16, so the low
  16 bits are those the 16-bit op gives (a chain of adds, subtracts,
  multiplies and negations is wrapped once, where its value is read by
  anything else);
* ``shift_right_logical`` of ``i16`` and ``popcnt`` of ``i16`` read the
  16-bit pattern (``and 0xFFFF``), ``count_leading_zeros`` counts from bit
  15 (``clz32 - 16``), ``shift_right_arithmetic`` of ``ui16`` shifts the
  sign-extended pattern; shift amounts of 16 or more give what XLA gives
  on 16 bits (all zeros, or the sign) since the 32-bit shift of an
  extended value does too;
* a ``convert`` from a float to 16 bits saturates at the 16-bit bounds
  with NaN as 0 (what XLA's CPU gives, measured under jax 0.10 and 0.12):
  the float is converted to 32 bits (which saturates there) and clamped;
* every other op no64 knows (compare, select, min/max, clamp, sort,
  reduce, scatter, gather, slices, iota, control flow, ...) is retyped;
  constants are rewritten as 32-bit constants.

The signature of each public function (the entry) is kept: its 16-bit
arguments are converted to 32 bits right at entry and its 16-bit results
converted back right before return -- the data crossing the boundary is
16-bit, the device computes on 32-bit.  Private functions are retyped whole.

An op that cannot be made exact (a ``bitcast_convert`` between a 16-bit
integer and ``f16``/``bf16``, a ``custom_call`` or host transfer of 16-bit
data, random bits drawn as 16-bit integers, an op no64 does not know) is
refused, before anything changes, by :class:`~no64.errors.UnsupportedOpError`
naming the op, its line, the target and the reason.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from ..errors import UnsupportedOpError
from ..ir import words as W
from ..ir._compat import block_argument, constant_value, insertion_after
from ..ir._mlir import ir
from ..ir.locations import SourceLocation, decode_location
from ..kinds import OpForm
from ..spec.registry import Computes, spec_of
from ..spec.walk import all_ops, is_public as _public
from ..targets import Target

__all__ = ["Widened", "narrow_kind", "widen", "holds_narrow"]

_NARROW = {(16, True): "i16", (16, False): "u16"}

#: Ops whose 16-bit results a 32-bit op on extended operands may leave
#: outside the 16-bit range: wrapped back after the op.
_WRAP = frozenset({"add", "subtract", "multiply", "negate", "abs", "power", "shift_left", "divide",
                   "dot_general", "dot", "convolution"})
#: Ops that compute the same values on extended operands (or only move
#: them): retyped.
_AS_IS = frozenset({
    "and", "or", "xor", "compare", "select", "maximum", "minimum", "clamp", "sign", "remainder",
    "broadcast_in_dim", "broadcast", "reshape", "transpose", "concatenate", "slice", "dynamic_slice",
    "dynamic_update_slice", "pad", "reverse", "gather", "scatter", "sort", "reduce", "reduce_window",
    "select_and_scatter", "while", "case", "if", "iota", "return", "get_tuple_element", "tuple",
    "optimization_barrier", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
    "collective_permute", "collective_broadcast", "map", "dynamic_broadcast_in_dim", "dynamic_reshape",
    "dynamic_iota", "real_dynamic_slice", "dynamic_pad", "dynamic_gather", "top_k", "constant", "convert",
    "bitcast_convert", "not", "popcnt", "count_leading_zeros", "shift_right_logical",
    "shift_right_arithmetic",
})
_SHARDING = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})


def narrow_kind(t: ir.Type) -> str | None:
    """``"i16"``/``"u16"`` for a 16-bit integer (element) type, else ``None``."""
    e = t.element_type if isinstance(t, ir.ShapedType) else t
    if isinstance(e, ir.IntegerType):
        return _NARROW.get((e.width, not e.is_unsigned))
    return None


def _widened(t: ir.Type, target: Target) -> ir.Type | None:
    """``t`` with its 16-bit integer elements as the target's wider ones."""
    kind = narrow_kind(t)
    if kind is None:
        return None
    wide = target.widened(kind)
    if wide is None:
        return None
    elem = ir.IntegerType.get_unsigned(32) if wide == "u32" else ir.IntegerType.get_signless(32)
    if isinstance(t, ir.RankedTensorType):
        return ir.RankedTensorType.get(t.shape, elem, t.encoding)
    if isinstance(t, ir.ShapedType):
        return ir.UnrankedTensorType.get(elem)
    return elem


def _types_of(op: ir.Operation) -> list[ir.Type]:
    return [v.type for v in (*op.operands, *op.results)]


def _entry_block(block: ir.Block) -> bool:
    owner = block.owner
    return owner is not None and spec_of(owner.operation.name).function and _public(owner.operation)


def _at_boundary(op: ir.Operation, target: Target) -> bool:
    """Whether ``op`` is a convert of the entry's boundary that a previous
    :func:`widen` made: of an argument to 32 bits, or of a result back to 16
    bits right before return."""
    if not spec_of(op.name).convert:
        return False
    src, dst = op.operands[0], op.results[0]
    if narrow_kind(src.type) is not None and _widened(src.type, target) == dst.type:
        arg = block_argument(src)
        return arg is not None and _entry_block(arg.owner)
    if narrow_kind(dst.type) is not None and _widened(dst.type, target) == src.type:
        users = [u.owner.operation for u in dst.uses]
        return bool(users) and all(spec_of(u.name).terminator and _entry_block(u.block) for u in users)
    return False


def _converted_argument(a: ir.Value, target: Target) -> bool:
    """Whether an entry argument is used only by converts to 32 bits."""
    uses = [u.owner.operation for u in a.uses]
    return bool(uses) and all(_at_boundary(u, target) for u in uses)


def holds_narrow(root: ir.Operation, target: Target) -> bool:
    """Whether any op or block argument under ``root`` has a 16-bit integer
    type ``target`` widens (but for the entry's boundary that :func:`widen`
    leaves)."""
    with root.context, ir.Location.unknown():
        return _holds_narrow(root, target)


def _holds_narrow(root: ir.Operation, target: Target) -> bool:
    for op in all_ops(root):
        if _at_boundary(op, target):
            continue
        if any(narrow_kind(t) is not None and target.widened(narrow_kind(t) or "") for t in _types_of(op)):
            return True
        for region in op.regions:
            for block in region.blocks:
                if any(narrow_kind(a.type) is not None and target.widened(narrow_kind(a.type) or "")
                       and not (_entry_block(block) and _converted_argument(a, target))
                       for a in block.arguments):
                    return True
    return False


def _short_name(op: ir.Operation) -> str:
    name = op.name
    return name.rsplit(".", 1)[-1]


def _elem(v: ir.Value) -> ir.Type:
    t = v.type
    return t.element_type if isinstance(t, ir.ShapedType) else t


def _refusal(op: ir.Operation, target: Target) -> str | None:
    """Why the 16-bit values of ``op`` cannot be carried exactly as 32-bit
    ones (``None``: they can)."""
    name = _short_name(op)
    if name == "bitcast_convert":
        src, dst = narrow_kind(op.operands[0].type), narrow_kind(op.results[0].type)
        same_shape = ir.ShapedType(op.operands[0].type).shape == ir.ShapedType(op.results[0].type).shape
        if src is not None and dst is not None and same_shape:
            return None
        other = op.results[0].type if src is not None else op.operands[0].type
        return (f"a bitcast between a 16-bit integer and {ir.ShapedType(other).element_type} reads the 16-bit "
                f"pattern, which {target.name} carries in 32 bits")
    if name == "custom_call":
        callee = ir.StringAttr(op.attributes["call_target_name"]).value
        if callee in _SHARDING:
            return None
        return f"custom_call @{callee} receives or returns 16-bit integers, which {target.name} carries in 32 bits"
    if name in ("rng_bit_generator", "rng"):
        return f"random bits drawn as 16-bit integers differ from those drawn as 32-bit ({target.name})"
    if name in ("send", "recv", "infeed", "outfeed"):
        return f"a host transfer of 16-bit integers, which {target.name} carries in 32 bits"
    if name == "constant":
        try:
            ir.DenseIntElementsAttr(constant_value(op))
        except (TypeError, ValueError):
            return "a 16-bit integer constant whose elements the bindings do not hand out"
        return None
    spec = spec_of(op.name)
    if name in _WRAP or name in _AS_IS or spec.terminator or spec.call or spec.function \
            or spec.form is OpForm.TOP_K:
        return None
    return f"no64 does not know how {op.name} computes on 16-bit integers carried in 32 bits"


def _splat(like: ir.Value, value: int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    attr = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
    return W.make("constant", [], t, value=attr)


def _make(name: str, operands: list[ir.Value], t: ir.Type | None = None) -> ir.Value:
    return W.make(name, operands, t or operands[0].type)


def _wrap(v: ir.Value, signed: bool) -> ir.Value:
    """``v`` (32-bit) reduced to its low 16 bits, sign- or zero-extended."""
    if signed:
        sixteen = _splat(v, 16)
        return _make("shift_right_arithmetic", [_make("shift_left", [v, sixteen]), sixteen])
    return _make("and", [v, _splat(v, 0xFFFF)])




def _combiner_of(op: ir.Operation) -> ir.Operation | None:
    """The reduction or scatter whose body is ``op`` alone, an ``add`` or
    ``multiply`` of the body's arguments (its combiner), if any: its sums are
    wrapped once, after it (32-bit sums agree with 16-bit ones modulo 2**16),
    which keeps the combiner a plain one (the limb split of
    :mod:`no64.rules.limbs` reads it)."""
    if spec_of(op.name).computes not in (Computes.ADD, Computes.MULTIPLY):
        return None
    block = op.block
    body = [o.operation for o in block.operations]
    parent = block.owner
    if parent is None or spec_of(parent.operation.name).reduction is None or len(body) != 2:
        return None
    if not spec_of(body[1].name).terminator or list(body[1].operands) != list(op.results):
        return None
    args = list(block.arguments)
    if not all(any(v == a for a in args) for v in op.operands):
        return None
    return parent.operation


#: Ops whose 16-bit results modulo 2**16 depend only on their operands modulo
#: 2**16 (a ring's operations).
_RING = frozenset({Computes.ADD, Computes.SUBTRACT, Computes.MULTIPLY, Computes.NEGATE})


def _only_ring_users(op: ir.Operation) -> bool:
    """Whether ``op`` (a ring operation) is read only by ring operations of
    16-bit results that are wrapped themselves: its own wrap is not needed,
    since each of them is wrapped and agrees modulo 2**16."""
    if spec_of(op.name).computes not in _RING:
        return False
    users = [u.owner.operation for u in op.results[0].uses]
    return bool(users) and all(
        spec_of(u.name).computes in _RING and narrow_kind(u.results[0].type) is not None and _combiner_of(u) is None
        for u in users)


def _saturate(v: ir.Value, lo: int, hi: int) -> ir.Value:
    return _make("clamp", [_splat(v, lo), v, _splat(v, hi)])


def _low16(v: ir.Value) -> ir.Value:
    """The 16-bit pattern of ``v``, zero-extended."""
    return _make("and", [v, _splat(v, 0xFFFF)])


def _after(op: ir.Operation, r: ir.Value, build: Callable[[ir.Value], ir.Value]) -> None:
    """Replace the uses of result ``r`` of ``op`` by ``build(r)``, built right
    after ``op``."""
    with insertion_after(op), op.location:
        out = build(r)
    # every op ``build`` created lies between ``op`` and ``out``'s owner
    r.replace_all_uses_except(out, _built_between(op, out.owner.operation))


def _built_between(op: ir.Operation, last: ir.Operation) -> list[ir.Operation]:
    """The ops of ``op``'s block after ``op`` up to ``last``."""
    out = []
    seen = False
    for o in op.block.operations:
        o = o.operation
        if o == op:
            seen = True
            continue
        if seen:
            out.append(o)
            if o == last:
                break
    return out


def _before(op: ir.Operation, i: int, build: Callable[[ir.Value], ir.Value]) -> None:
    """Replace operand ``i`` of ``op`` by ``build(operand)``, built right before ``op``."""
    with ir.InsertionPoint(op), op.location:
        op.operands[i] = build(op.operands[i])


def _convert(v: ir.Value, t: ir.Type) -> ir.Value:
    return W.make("convert", [v], t)


def _constant(op: ir.Operation, new: ir.Type) -> None:
    attr = ir.DenseIntElementsAttr(constant_value(op))
    t = ir.RankedTensorType(new)
    unsigned = t.element_type.is_unsigned
    if attr.is_splat:
        value = int(ir.IntegerAttr(attr.get_splat_value()).value)
        if unsigned:
            value &= 0xFFFF
        op.attributes["value"] = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
        return
    arr = np.array(attr)
    arr = arr.astype(np.uint16 if unsigned else np.int16).astype(np.uint32 if unsigned else np.int32)
    op.attributes["value"] = ir.DenseElementsAttr.get(np.ascontiguousarray(arr.reshape(t.shape)), type=t)


@dataclasses.dataclass
class Widened:
    """What :func:`widen` did: how many values it retyped, and per op given a
    fix-up its name, line and what was done."""

    retyped: int = 0
    fixed: list[tuple[str, SourceLocation, str]] = dataclasses.field(default_factory=list)


def widen(module: ir.Module | ir.Operation, target: Target) -> Widened:
    """Carry, in place, the 16-bit integers of ``module`` that ``target``
    widens as 32-bit ones (see the module docstring); returns, per op given a
    fix-up, its name, line and what was done.  Raises
    :class:`~no64.errors.UnsupportedOpError` (the module unchanged) for an
    op that cannot be made exact.  The entry's boundary that a previous
    call made is left as it is: widening a widened module changes nothing."""
    root = module.operation if isinstance(module, ir.Module) else module
    out = Widened()
    done = out.fixed
    with root.context, ir.Location.unknown():
        if not target.widens or not _holds_narrow(root, target):
            return out
        ops = all_ops(root)
        touched = []
        ops = [op for op in ops if not _at_boundary(op, target)]
        for op in ops:
            narrow = [t for t in _types_of(op) if _widened(t, target) is not None]
            if not narrow and not any(_widened(a.type, target) is not None
                                      for region in op.regions for block in region.blocks
                                      for a in block.arguments):
                continue
            why = _refusal(op, target) if narrow else None
            if why is not None:
                raise UnsupportedOpError(op.name, decode_location(op.location),
                                         f"target {target.name} has no 16-bit integers; {why}")
            touched.append(op)
        # what each op needs, read from its 16-bit types before any changes
        plans: list[tuple[ir.Operation, str, bool]] = []
        for op in touched:
            name = _short_name(op)
            rk = narrow_kind(op.results[0].type) if len(op.results) else None
            signed = rk == "i16"
            if rk is None:
                continue
            if name in _WRAP:
                combining = _combiner_of(op)
                if combining is None and _only_ring_users(op):
                    continue  # wrapped once, by the add/subtract/multiply/negate that reads it
                if combining is None:
                    plans.append((op, "wrap", signed))
                elif not any(p[0] == combining for p in plans):
                    plans.append((combining, "wrap-results", signed))
            elif name == "not" and not signed:
                plans.append((op, "wrap", signed))
            elif name == "shift_right_logical" and signed:
                plans.append((op, "srl", signed))
            elif name == "shift_right_arithmetic" and not signed:
                plans.append((op, "sra", signed))
            elif name == "popcnt" and signed:
                plans.append((op, "popcnt", signed))
            elif name == "count_leading_zeros":
                plans.append((op, "clz", signed))
            elif name in ("convert", "bitcast_convert"):
                src = _elem(op.operands[0])
                if isinstance(src, ir.IntegerType):
                    if src.width > 16 or (src.width == 16 and narrow_kind(src) != rk):
                        plans.append((op, "wrap", signed))
                elif not isinstance(src, ir.ComplexType):
                    plans.append((op, "clamp", signed))
        kinds = {id(op): [narrow_kind(r.type) for r in op.results] for op, how, _ in plans if how == "wrap-results"}
        entries = [op for op in ops if spec_of(op.name).function and _public(op)]
        boundary = _boundary(entries, target)
        # retype
        entry_blocks = [f.regions[0].blocks[0] for f in entries if len(f.regions[0].blocks)]
        for op in ops:
            for r in op.results:
                new = _widened(r.type, target)
                if new is not None:
                    r.set_type(new)
                    out.retyped += 1
                    if _short_name(op) == "constant":
                        _constant(op, new)
            for region in op.regions:
                for block in region.blocks:
                    if any(block == b for b in entry_blocks):
                        continue
                    for a in block.arguments:
                        new = _widened(a.type, target)
                        if new is not None:
                            a.set_type(new)
                            out.retyped += 1
            if spec_of(op.name).function and not _public(op):
                ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                ins = [_widened(t, target) or t for t in ft.inputs]
                outs = [_widened(t, target) or t for t in ft.results]
                op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ins, outs))
        for block, args, results in boundary:
            _entry(block, args, results, target)
        for op, how, signed in plans:
            r = op.results[0]
            where = decode_location(op.location)
            if how == "wrap":
                _after(op, r, functools.partial(_wrap, signed=signed))
                done.append((op.name, where, "wrapped to 16 bits"))
            elif how == "wrap-results":
                for res, kind in zip(op.results, kinds[id(op)], strict=True):
                    if kind is not None:
                        _after(op, res, functools.partial(_wrap, signed=kind == "i16"))
                done.append((op.name, where, "its sums wrapped to 16 bits"))
            elif how == "srl":
                _before(op, 0, _low16)
                _after(op, r, lambda v: _wrap(v, True))
                done.append((op.name, where, "shifts the 16-bit pattern"))
            elif how == "sra":
                _before(op, 0, lambda v: _wrap(v, True))
                _after(op, r, lambda v: _wrap(v, False))
                done.append((op.name, where, "shifts the sign-extended 16-bit pattern"))
            elif how == "popcnt":
                _before(op, 0, _low16)
                done.append((op.name, where, "counts the 16-bit pattern"))
            elif how == "clz":
                if signed:
                    _before(op, 0, _low16)
                _after(op, r, lambda v: _make("subtract", [v, _splat(v, 16)]))
                done.append((op.name, where, "counts from bit 15"))
            elif how == "clamp":
                lo, hi = (-(2**15), 2**15 - 1) if signed else (0, 2**16 - 1)
                _after(op, r, functools.partial(_saturate, lo=lo, hi=hi))
                done.append((op.name, where, "saturates at the 16-bit bounds"))
    return out


def _boundary(entries: list[ir.Operation], target: Target) -> list[tuple[ir.Block, list[int], list[int]]]:
    out = []
    for f in entries:
        if not len(f.regions[0].blocks):
            continue
        ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        block = f.regions[0].blocks[0]
        args = [i for i, t in enumerate(ft.inputs) if _widened(t, target) is not None
                and not _converted_argument(block.arguments[i], target)]
        results = [i for i, t in enumerate(ft.results) if _widened(t, target) is not None]
        if args or results:
            out.append((f.regions[0].blocks[0], args, results))
    return out


def _entry(block: ir.Block, args: list[int], results: list[int], target: Target) -> None:
    """Convert the entry's 16-bit arguments to 32 bits at entry and its 16-bit
    results back before each return."""
    first = list(block.operations)[0].operation if len(list(block.operations)) else None
    for i in args:
        a = block.arguments[i]
        wide = _widened(a.type, target)
        assert wide is not None
        with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block), a.location:
            c = _convert(a, wide)
        a.replace_all_uses_except(c, c.owner.operation)
    if not results:
        return
    f = block.owner
    ft = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    for o in list(block.operations):
        o = o.operation
        if not spec_of(o.name).terminator:
            continue
        for i in results:
            if narrow_kind(o.operands[i].type) is not None:
                continue  # converted back already
            with ir.InsertionPoint(o), o.location:
                o.operands[i] = _convert(o.operands[i], ft.results[i])
