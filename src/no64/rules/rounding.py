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
wrap-around.

An f16 or bf16 operand is rounded the same way at its own width (XLA's
emitter works on the operand's own bits: an f16 subnormal's mantissa is
rounded where it stands, not as the normal f32 it converts to), with the
format's exponent and mantissa widths (5 and 10, 8 and 7), on its 16 bits
held in an ``i32``.  No 16-bit integer and no float conversion is involved
(a device may lack the one, and an f16-to-f32 conversion quiets a
signalling NaN): each element is paired with itself along a new last
dimension (``reshape``, ``concatenate``) and the pair bitcast to one
``i32``, whose low 16 bits are the element's whichever half comes first;
the result's bits are doubled the same way, bitcast back to pairs and one
of each sliced out.  Where the op asks for at least f32's widths (8
exponent and 23 mantissa bits) it rounds nothing, and the operand is its
result, as XLA has it.  Another element type (f64) is left as it is, with
why.
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


@dataclasses.dataclass(frozen=True)
class _Format:
    """A float format's bit layout: ``bits`` wide, ``exponent`` and ``mantissa`` bits."""

    bits: int
    exponent: int
    mantissa: int

    @property
    def sign(self) -> int:
        """The sign bit, as an ``i32`` constant."""
        return _SIGN if self.bits == 32 else 1 << (self.bits - 1)

    @property
    def magnitude(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def exponent_mask(self) -> int:
        return ((1 << self.exponent) - 1) << self.mantissa


_F32 = _Format(32, _EXPONENT_BITS, _MANTISSA_BITS)
_F16 = _Format(16, 5, 10)
_BF16 = _Format(16, 8, 7)


def _round_layout(bits: ir.Value, f: _Format, exponent_bits: int, mantissa_bits: int) -> ir.Value:
    """``reduce_precision`` on the bits of values of format ``f``, held in the
    low ``f.bits`` bits of an ``i32`` tensor (see the module docstring)."""
    shape = _shape(bits)
    i32 = W.i32()

    def k(value: int) -> ir.Value:
        return W.const(shape, value, i32)

    sign = _op("and", bits, k(f.sign))
    magnitude = _op("and", bits, k(f.magnitude))
    nan = _compare(magnitude, k(f.exponent_mask), "GT")
    a = _select(nan, k(0), magnitude)  # (a NaN's result is chosen at the end)
    if mantissa_bits < f.mantissa:
        drop = f.mantissa - mantissa_bits
        last = _op("and", _op("shift_right_logical", a, k(drop)), k(1))
        bias = _op("add", last, k((1 << (drop - 1)) - 1))
        a = _op("and", _op("add", a, bias), k(f.magnitude & ~((1 << drop) - 1)))
    if exponent_bits < f.exponent:
        source_bias = (1 << (f.exponent - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        exponent = _op("and", a, k(f.exponent_mask))
        a = _select(_compare(exponent, k((source_bias + reduced_bias) << f.mantissa), "GT"), k(f.exponent_mask), a)
        a = _select(_compare(exponent, k((source_bias - reduced_bias) << f.mantissa), "LE"), k(0), a)
    out = _op("or", sign, a)
    return _select(nan, bits, out)


def round_bits(x: ir.Value, exponent_bits: int, mantissa_bits: int) -> ir.Value:
    """The f32 tensor ``x`` rounded as ``reduce_precision(x, exponent_bits,
    mantissa_bits)`` rounds it, from its bits (see the module docstring);
    built at the current insertion point."""
    out = _round_layout(W.bitcast(x, W.i32()), _F32, exponent_bits, mantissa_bits)
    return W.bitcast(out, ir.F32Type.get())


def _halves(x: ir.Value) -> ir.Value:
    """The 16-bit floats ``x`` as ``i32`` tensors of their bits, twice: each
    element paired with itself along a new last dimension and the pair
    bitcast to one 32-bit integer -- the same whichever half the bitcast puts
    first, and no 16-bit integer nor float conversion involved."""
    shape = _shape(x)
    elem = ir.RankedTensorType(x.type).element_type
    one = W.make("reshape", [x], ir.RankedTensorType.get([*shape, 1], elem))
    pair = W.make("concatenate", [one, one], ir.RankedTensorType.get([*shape, 2], elem),
                  dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(shape)))
    return W.make("bitcast_convert", [pair], ir.RankedTensorType.get(shape, W.i32()))


def _from_halves(bits: ir.Value, elem: ir.Type) -> ir.Value:
    """The 16-bit floats of type ``elem`` whose bits are the low 16 of
    ``bits``: :func:`_halves` undone (both halves the same bits, one sliced out)."""
    shape = _shape(bits)
    i32 = W.i32()
    low = _op("and", bits, W.const(shape, 0xFFFF, i32))
    both = _op("or", low, _op("shift_left", low, W.const(shape, 16, i32)))
    pair = W.make("bitcast_convert", [both], ir.RankedTensorType.get([*shape, 2], elem))
    one = W.make("slice", [pair], ir.RankedTensorType.get([*shape, 1], elem),
                 start_indices=ir.DenseI64ArrayAttr.get([0] * (len(shape) + 1)),
                 limit_indices=ir.DenseI64ArrayAttr.get([*shape, 1]),
                 strides=ir.DenseI64ArrayAttr.get([1] * (len(shape) + 1)))
    return W.make("reshape", [one], ir.RankedTensorType.get(shape, elem))


def round_narrow_bits(x: ir.Value, exponent_bits: int, mantissa_bits: int) -> ir.Value:
    """The f16 or bf16 tensor ``x`` rounded as ``reduce_precision`` rounds it
    at its own width, on its bits held in ``i32`` (see the module docstring)."""
    elem = ir.RankedTensorType(x.type).element_type
    f = _BF16 if isinstance(elem, ir.BF16Type) else _F16
    bits = _op("and", _halves(x), W.const(_shape(x), 0xFFFF, W.i32()))
    return _from_halves(_round_layout(bits, f, exponent_bits, mantissa_bits), elem)


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
            x = self.op.operands[0]
            if self.exponent_bits >= _EXPONENT_BITS and self.mantissa_bits >= _MANTISSA_BITS:
                new = x  # nothing to round, as XLA has it for f32 and the narrower formats alike
            elif ir.RankedTensorType(x.type).element_type == ir.F32Type.get():
                new = round_bits(x, self.exponent_bits, self.mantissa_bits)
            else:
                new = round_narrow_bits(x, self.exponent_bits, self.mantissa_bits)
        self.op.results[0].replace_all_uses_with(new)
        self.op.erase()


def reduce_precision(op: ir.Operation) -> Legalization | str:
    """A ``reduce_precision`` of f32 elements as integer ops on their bits
    (see the module docstring), or why not."""
    t = op.operands[0].type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return "its shape is not static"
    elem = ir.RankedTensorType(t).element_type
    if not isinstance(elem, (ir.F32Type, ir.F16Type, ir.BF16Type)):
        return f"its elements are {elem}: only f32, f16 and bf16 are rounded on their bits"
    exponent_bits = ir.IntegerAttr(op.attributes["exponent_bits"]).value
    mantissa_bits = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
    if exponent_bits < 1 or mantissa_bits < 0:
        return f"it asks for {exponent_bits} exponent and {mantissa_bits} mantissa bits"
    return _OnBits(op, exponent_bits, mantissa_bits)
