"""The entry boundary of a module whose device keeps 64-bit integers while its
caller hands and expects 32-bit arrays.

A target with native ``int64``/``uint64`` (:mod:`no64.targets`: ``mtl``,
``neuron-trn2``) computes the x64 program's integers as they are; no word
is emulated and nothing is narrowed inside.  A caller whose runtime fixes a
32-bit signature -- JAX's compile hook, which compiles the x64 program of a
program that asked for x64 behind the signature JAX lowered with x64 off
(``outputs="narrow"`` or ``"checked"``) -- hands ``int32``/``uint32``
buffers and expects them back.  So at the entry function, and only there:

* each kept 64-bit integer argument takes the 32-bit type and is widened at
  once (``stablehlo.convert``: sign extension for ``i32``, zero extension
  for ``ui32``), so the program reads the 64-bit value the 32-bit one
  stands for;
* each kept 64-bit integer result is narrowed on the way out, clipped to
  the 32-bit range (a value that fits is kept; beyond, the 32-bit extreme
  on its side, as the narrowing pass maps the sentinels), after the pass
  judged it as it judges any narrowed output (:func:`no64.demote`): proven,
  reported or refused by the range policy, or checked by value when the
  module runs (``outputs="checked"``: the entry returns one more result, a
  scalar ``i1``, true when every checked result fits).

A caller that passes 64-bit integers as word pairs (``no64.jit`` under
``policy="exact"`` or float pairs) gives each kept argument and result its
packed pair instead, bitcast to and from the 64-bit value at the edge
(:meth:`NativeBoundary.as_words`): nothing is narrowed.  An offline
conversion (``outputs="words"``) keeps them 64-bit: the device has them.

Kept ``float64``/``complex128`` values (XLA:TPU's own float64 under the f32
float policy) cross either caller's boundary as ``float32``/``complex64``,
the 32-bit JAX's types: each argument widened where the body starts (exact),
each result rounded once on the way out, the f32 policy's meaning of a
float64 result; in between the device's float64 computes.
"""

from __future__ import annotations

import dataclasses

from ..ir import words as W
from ..ir._mlir import as_operation as _as_op, ir
from ..ir.types import TypeConverter, wide_kind
from ..spec.registry import spec_of
from ..spec.walk import entry_function
from .carry import refresh_signature

__all__ = ["NativeBoundary", "native_boundary"]

#: The integer kinds a boundary narrows (of :data:`no64.ir.types.WIDE_KINDS`).
INTEGER_KINDS = frozenset({"i64", "u64"})
#: The float kinds it carries as their 32-bit siblings.
FLOAT_KINDS = frozenset({"f64", "c128"})


def _kept(t: ir.Type, keep: frozenset[str]) -> bool:
    return isinstance(t, ir.RankedTensorType) and wide_kind(t.element_type) in keep


@dataclasses.dataclass
class NativeBoundary:
    """The entry function's kept 64-bit integer arguments and results (see
    the module docstring): :meth:`widen_inputs`, then, once the pass has
    judged :meth:`outputs`, :meth:`narrow_outputs`; and its kept float64
    ones, which either way cross as their 32-bit siblings."""

    entry: ir.Operation
    #: the entry's terminators (``func.return``)
    returns: list[ir.Operation]
    #: positions of the kept integer arguments
    inputs: list[int]
    #: positions of the kept integer results
    outputs: list[int]
    #: positions of the kept float arguments
    float_inputs: list[int] = dataclasses.field(default_factory=list)
    #: positions of the kept float results
    float_outputs: list[int] = dataclasses.field(default_factory=list)

    def widen_inputs(self) -> None:
        """Each kept argument as its 32-bit type, widened where the body starts."""
        self._widen(self.inputs + self.float_inputs)
        refresh_signature(self.entry)

    def _widen(self, positions: list[int]) -> None:
        block = self.entry.regions[0].blocks[0]
        narrow = TypeConverter()
        first = _as_op(block.operations[0]) if len(block.operations) else None
        for i in positions:
            arg = block.arguments[i]
            wide = arg.type
            arg.set_type(narrow.convert_or_same(wide))
            point = ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block)
            with point, arg.location:
                widened = W.make("convert", [arg], wide)
            arg.replace_all_uses_except(widened, _as_op(widened.owner))

    def _round_floats(self) -> None:
        """Each kept float result rounded to its 32-bit sibling."""
        narrow = TypeConverter()
        for ret in self.returns:
            with ir.InsertionPoint(ret), ret.location:
                for i in self.float_outputs:
                    v = ret.operands[i]
                    ret.operands[i] = W.make("convert", [v], narrow.convert_or_same(v.type))

    def as_words(self) -> None:
        """Each kept argument and result as its packed word pair (``S x 2``
        32-bit words, low first), bitcast to and from the 64-bit value right
        at the edge: the boundary of ``outputs="words"``, where the caller
        splits 64-bit inputs into words and joins the outputs (``no64.jit``
        under ``policy="exact"``), as it does for emulated values.  (No
        sharding attribute of the entry is adapted: ``no64.jit`` refuses
        shardings there.)"""
        self._widen(self.float_inputs)
        self._round_floats()
        block = self.entry.regions[0].blocks[0]
        first = _as_op(block.operations[0]) if len(block.operations) else None
        for i in self.inputs:
            arg = block.arguments[i]
            wide = arg.type
            arg.set_type(_packed(wide))
            point = ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block)
            with point, arg.location:
                joined = W.make("bitcast_convert", [arg], wide)
            arg.replace_all_uses_except(joined, _as_op(joined.owner))
        for ret in self.returns:
            with ir.InsertionPoint(ret), ret.location:
                for i in self.outputs:
                    v = ret.operands[i]
                    ret.operands[i] = W.make("bitcast_convert", [v], _packed(v.type))
        refresh_signature(self.entry)

    def values(self) -> list[ir.Value]:
        """The 64-bit integers the entry returns at the kept positions (each
        terminator's, in order)."""
        return [ret.operands[i] for ret in self.returns for i in self.outputs]

    def narrow_outputs(self, checked: set[ir.Value]) -> bool:
        """Return each kept result clipped to 32 bits; the values of
        ``checked`` also tell a flag, returned last, true when all of them
        fit.  Returns whether a flag was added.  The kept float results are
        rounded to their 32-bit siblings."""
        self._round_floats()
        flagged = False
        for k, ret in enumerate(self.returns):
            fits: list[ir.Value] = []
            with ir.InsertionPoint(ret), ret.location:
                for i in self.outputs:
                    v = ret.operands[i]
                    clipped = _clip(v)
                    if v in checked:
                        fits.append(W.make("compare", [v, clipped], _i1_like(v),
                                           comparison_direction=_attr("comparison_direction", "EQ"),
                                           compare_type=_attr("comparison_type", _compare_type(v))))
                    ret.operands[i] = W.convert(clipped, TypeConverter().convert_or_same(v.type).element_type)
                if fits:
                    flag = W.all_true(fits)
                    new = ir.Operation.create(ret.name, results=[], operands=[*ret.operands, flag])
            if fits:
                ret.erase()
                self.returns[k] = new
                flagged = True
        if flagged and "res_attrs" in self.entry.attributes:
            kept = list(ir.ArrayAttr(self.entry.attributes["res_attrs"]))
            self.entry.attributes["res_attrs"] = ir.ArrayAttr.get([*kept, ir.DictAttr.get({})])
        refresh_signature(self.entry)
        return flagged


def native_boundary(root: ir.Operation, keep: frozenset[str]) -> NativeBoundary | None:
    """The kept 64-bit arguments and results of ``root``'s entry function
    (``keep``: the 64-bit element types the device has); ``None`` when it
    has none."""
    ints, floats = keep & INTEGER_KINDS, keep & FLOAT_KINDS
    entry = entry_function(root) if ints or floats else None
    if entry is None or not len(entry.regions[0].blocks):
        return None
    ftype = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
    inputs = [i for i, t in enumerate(ftype.inputs) if _kept(t, ints)]
    outputs = [i for i, t in enumerate(ftype.results) if _kept(t, ints)]
    float_inputs = [i for i, t in enumerate(ftype.inputs) if _kept(t, floats)]
    float_outputs = [i for i, t in enumerate(ftype.results) if _kept(t, floats)]
    if not (inputs or outputs or float_inputs or float_outputs):
        return None
    returns = [_as_op(block.operations[len(block.operations) - 1]) for block in entry.regions[0].blocks
               if len(block.operations)]
    returns = [op for op in returns if spec_of(op.name).terminator]
    return NativeBoundary(entry, returns, inputs, outputs, float_inputs, float_outputs)


def _packed(t: ir.Type) -> ir.RankedTensorType:
    rt = ir.RankedTensorType(t)
    return W.packed_type(list(rt.shape), ir.IntegerType(rt.element_type).is_unsigned)


def _clip(v: ir.Value) -> ir.Value:
    """``v`` (64-bit integers) clipped to the 32-bit range of its signedness."""
    t = ir.RankedTensorType(v.type)
    unsigned = ir.IntegerType(t.element_type).is_unsigned
    lo, hi = (0, 2**32 - 1) if unsigned else (-(2**31), 2**31 - 1)
    scalar = ir.RankedTensorType.get([], t.element_type)
    bounds = [W.make("constant", [], scalar, value=ir.DenseElementsAttr.get_splat(
        scalar, ir.IntegerAttr.get(t.element_type, b))) for b in (lo, hi)]
    return W.make("clamp", [bounds[0], v, bounds[1]], t)


def _i1_like(v: ir.Value) -> ir.Type:
    return ir.RankedTensorType.get(list(ir.RankedTensorType(v.type).shape), ir.IntegerType.get_signless(1))


def _compare_type(v: ir.Value) -> str:
    return "UNSIGNED" if ir.IntegerType(ir.RankedTensorType(v.type).element_type).is_unsigned else "SIGNED"


def _attr(kind: str, value: str) -> ir.Attribute:
    return ir.Attribute.parse(f"#stablehlo<{kind} {value}>")
