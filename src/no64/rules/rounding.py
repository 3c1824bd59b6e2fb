"""``reduce_precision`` on the bits of its operand, for a device that refuses it.

Neuron does not compile ``stablehlo.reduce_precision`` ("jax.lax.reduce_precision
is not supported"), which JAX writes for ``jax.lax.reduce_precision`` and
which mixed-precision code uses to round f32 values to bf16 or f16 while
keeping them f32.  The op table's ``unfold`` rule for it here
(:func:`reduce_precision`) computes it from the f32 operand's bits with
integer ops only -- ``bitcast_convert`` to ``i32`` and back, ``and``,
``or``, ``add``, ``shift_right_logical``, ``compare`` and ``select`` --
bit for bit as XLA defines the op (its elemental emitter,
``EmitReducePrecisionIR``):

* the mantissa is rounded to ``mantissa_bits`` bits to nearest, ties to
  even: ``(1 << (23 - m - 1)) - 1`` plus the last kept bit is added to the
  magnitude's bits and the dropped bits are masked off; a carry out of the
  mantissa increments the exponent (the largest finite values round to
  infinity where they round up);
* then, if ``exponent_bits`` is below 8, a (rounded) value whose exponent
  is above the narrower type's largest becomes infinity of its sign, and
  one whose exponent is at or below the narrower type's smallest normal
  exponent less one becomes zero of its sign (the narrower type's
  subnormals are flushed, not rounded);
* a NaN is the operand as it was, its payload and sign kept -- also with
  ``mantissa_bits`` 0, as XLA's MLIR lowering of the op gives it (the CPU
  backend of jax 0.10); its older LLVM emitter (jax 0.7) gave positive
  infinity there;
* the sign bit is kept.

Every intermediate value is a non-negative ``i32`` below 2**31 (a NaN's
magnitude is set aside before the rounding add), so nothing relies on
wrap-around.  An operand of another element type than f32 (f16, bf16) is
left as it is, with why; its bits would have to be rounded at its own
width.
"""

from __future__ import annotations

import dataclasses

from ..ir import words as W
from ..ir._mlir import ir
from ..spec.protocols import Legalization

__all__ = ["reduce_precision"]

_SIGN = -(1 << 31)  # 0x80000000 as an i32
_MAGNITUDE = (1 << 31) - 1
_EXPONENT = 0xFF << 23
_MANTISSA_BITS = 23
_EXPONENT_BITS = 8


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _compare(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
    """``a <direction> b`` on ``i32`` values (both non-negative: signed compares
    order them as unsigned ones would)."""
    i1 = ir.RankedTensorType.get(_shape(a), ir.IntegerType.get_signless(1))
    return W.make("compare", [a, b], i1,
                  comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
                  compare_type=ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"))


def _select(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return W.make("select", [p, a, b], a.type)


def _op(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return W.make(name, [a, b], a.type)


def round_bits(x: ir.Value, exponent_bits: int, mantissa_bits: int) -> ir.Value:
    """The f32 tensor ``x`` rounded as ``reduce_precision(x, exponent_bits,
    mantissa_bits)`` rounds it, from its bits (see the module docstring);
    built at the current insertion point."""
    shape = _shape(x)
    i32 = W.i32()

    def k(value: int) -> ir.Value:
        return W.const(shape, value, i32)

    bits = W.bitcast(x, i32)
    sign = _op("and", bits, k(_SIGN))
    magnitude = _op("and", bits, k(_MAGNITUDE))
    nan = _compare(magnitude, k(_EXPONENT), "GT")
    a = _select(nan, k(0), magnitude)  # (a NaN's result is chosen at the end)
    if mantissa_bits < _MANTISSA_BITS:
        drop = _MANTISSA_BITS - mantissa_bits
        last = _op("and", _op("shift_right_logical", a, k(drop)), k(1))
        bias = _op("add", last, k((1 << (drop - 1)) - 1))
        a = _op("and", _op("add", a, bias), k(_MAGNITUDE & ~((1 << drop) - 1)))
    if exponent_bits < _EXPONENT_BITS:
        f32_bias = (1 << (_EXPONENT_BITS - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = _op("and", a, k(_EXPONENT))
        a = _select(_compare(exponent, k((f32_bias + reduced_bias) << _MANTISSA_BITS), "GT"), k(_EXPONENT), a)
        a = _select(_compare(exponent, k((f32_bias - reduced_bias) << _MANTISSA_BITS), "LE"), k(0), a)
    out = _op("or", sign, a)
    out = _select(nan, bits, out)
    return W.bitcast(out, ir.F32Type.get())


@dataclasses.dataclass
class _OnBits:
    """A planned rewrite of a ``reduce_precision`` as integer ops on its bits."""

    op: ir.Operation
    exponent_bits: int
    mantissa_bits: int

    @property
    def summary(self) -> str:
        return (f"rounded on its bits with integer ops (e{self.exponent_bits}m{self.mantissa_bits}, "
                f"bit for bit XLA's)")

    @property
    def ops(self) -> int:
        return 0

    def apply(self) -> None:
        with ir.InsertionPoint(self.op), self.op.location:
            new = round_bits(self.op.operands[0], self.exponent_bits, self.mantissa_bits)
        self.op.results[0].replace_all_uses_with(new)
        self.op.erase()


def reduce_precision(op: ir.Operation) -> Legalization | str:
    """A ``reduce_precision`` of f32 elements as integer ops on their bits
    (see the module docstring), or why not."""
    t = op.operands[0].type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return "its shape is not static"
    elem = ir.RankedTensorType(t).element_type
    if elem != ir.F32Type.get():
        return f"its elements are {elem}: only f32 is rounded on its bits"
    exponent_bits = ir.IntegerAttr(op.attributes["exponent_bits"]).value
    mantissa_bits = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
    if exponent_bits < 1 or mantissa_bits < 0:
        return f"it asks for {exponent_bits} exponent and {mantissa_bits} mantissa bits"
    return _OnBits(op, exponent_bits, mantissa_bits)
