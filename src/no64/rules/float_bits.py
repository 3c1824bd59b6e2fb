"""The bits of a float64 as a 64-bit integer, and back, by arithmetic.

XLA:TPU keeps float64 as a pair of f32 (f32's exponent range, about 48
bits of significand), so a ``bitcast_convert`` between ``f64`` and
``s64``/``u64`` there gives other bits than the IEEE double's, and JAX's
``nextafter``, which steps a double's bits, does not compile.  The
``unfold`` rule of ``bitcast_convert`` (:func:`bitcast`, applied by
:mod:`no64.transforms.legalize` where the target's profile refuses the op
form :attr:`~no64.kinds.OpForm.BITCAST`) computes them from the value with
float64 and 64-bit integer ops, which such a device computes itself:

* float64 to bits: the sign from the sign bit of the value converted to
  f32 (which keeps it for ``-0.0``, infinities and NaN); the magnitude
  scaled into [1, 2) by powers of two chosen by comparisons (2**512 down
  to 2**1 each way, the exponent counted alongside), each scaling exact;
  the significand the scaled value times 2**52, rounded to the nearest
  integer (a value held beyond a double's 53 bits gives the bits of the
  double nearest it; a carry to 2**53 bumps the exponent); the biased
  exponent shifted into place and added to it (its implicit bit adds one
  to the exponent field, which is why the field is the exponent less
  one); zeros, infinities and NaN (the quiet NaN ``0x7FF8000000000000`` of
  the value's sign) selected at the end;
* bits to float64: the exponent field and fraction taken with integer
  shifts and masks, the significand with its implicit bit converted to
  float64 -- exact, it has 53 bits -- and scaled by ``2**(exponent -
  1075)`` as a product of powers of two (2**512 up to twice, then the
  binary digits below 512), each product exact: every partial product lies
  between the significand and the result, so each is a normal double; an
  exponent field of 2047 gives infinity or NaN, the sign bit the sign.

A float64 ``chlo.next_after`` (JAX's ``nextafter``, which XLA expands on
the double's bits after no64 has seen the module) is written the same way
(:func:`next_after`): its steps on the bits as XLA's expansion takes them,
the bits from and to the values by the arithmetic above.

Exact for every normal double, zero, infinity and NaN and every bit
pattern of one -- NaN payloads aside (a NaN's bits are the quiet NaN's; a
pattern of a NaN with another payload gives the quiet NaN).  Subnormals are
zeros of their sign both ways, as XLA's float arithmetic takes them (its
CPU and TPU backends flush them); on a device whose float64 has a narrower
exponent range the values beyond it are what that device makes of them
(XLA:TPU: zero and infinity beyond f32's range).
"""

from __future__ import annotations

from ..ir import words as W
from ..ir._mlir import ir
from ..spec.protocols import Legalization
from ..spec.util import compare

__all__ = ["bitcast", "from_bits", "next_after", "to_bits"]

_POWERS = (512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
_INF_BITS = 0x7FF0000000000000
_NAN_BITS = 0x7FF8000000000000
_SIGN_BIT = -(1 << 63)
_FRACTION = (1 << 52) - 1


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _fconst(like: ir.Value, value: float) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    return W.build("constant", [], [t], value=ir.DenseElementsAttr.get_splat(
        t, ir.FloatAttr.get(t.element_type, value))).results[0]


def _typed(like: ir.Value, elem: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(_shape(like), elem)


def _select(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return W.make("select", [p, a, b], a.type)


def _float_kind(v: ir.Value) -> bool:
    return isinstance(ir.RankedTensorType(v.type).element_type, ir.F64Type)


def to_bits(x: ir.Value) -> ir.Value:
    """The IEEE bits of float64 ``x``, as ``i64`` (see the module docstring)."""
    i64, i32, f32 = ir.IntegerType.get_signless(64), ir.IntegerType.get_signless(32), ir.F32Type.get()
    f32_bits = W.bitcast(W.convert(x, f32), i32)
    negative = compare(f32_bits, W.splat(f32_bits, 0), "LT", "SIGNED")
    magnitude = W.make("abs", [x], x.type)
    t = _typed(x, i64)
    e = W.build("constant", [], [t], value=ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(i64, 0))).results[0]

    def scale(p: ir.Value, y: ir.Value, e: ir.Value, k: int) -> tuple[ir.Value, ir.Value]:
        y = _select(p, W.make("multiply", [y, _fconst(y, 2.0 ** k)], y.type), y)
        return y, _select(p, W.make("subtract", [e, W.splat(e, k)], e.type), e)

    y = magnitude
    for k in _POWERS:  # down below 2
        y, e = scale(compare(y, _fconst(y, 2.0 ** k), "GE", "FLOAT"), y, e, -k)
    for k in _POWERS:  # up to 1 or more
        y, e = scale(compare(y, _fconst(y, 2.0 ** (1 - k)), "LT", "FLOAT"), y, e, k)
    m = W.convert(W.make("round_nearest_even", [W.make("multiply", [y, _fconst(y, 2.0 ** 52)], y.type)],
                         y.type), i64)
    carry = compare(m, W.splat(m, 1 << 53), "GE", "SIGNED")
    m = _select(carry, W.splat(m, 1 << 52), m)
    biased = W.make("add", [e, W.make("select", [carry, W.splat(e, 1024), W.splat(e, 1023)], t)], t)
    bits = W.make("add", [W.make("shift_left", [W.make("subtract", [biased, W.splat(biased, 1)], t),
                                                W.splat(biased, 52)], t), m], t)
    bits = _select(compare(magnitude, _fconst(x, 2.0 ** -1022), "LT", "FLOAT"), W.splat(bits, 0), bits)
    bits = _select(compare(magnitude, _fconst(x, float("inf")), "EQ", "FLOAT"), W.splat(bits, _INF_BITS), bits)
    bits = _select(compare(x, x, "NE", "FLOAT"), W.splat(bits, _NAN_BITS), bits)
    return _select(negative, W.make("or", [bits, W.splat(bits, _SIGN_BIT)], t), bits)


def from_bits(b: ir.Value) -> ir.Value:
    """The float64 whose IEEE bits are ``i64`` ``b`` (see the module docstring)."""
    f64 = ir.F64Type.get()
    t, ft = ir.RankedTensorType(b.type), _typed(b, f64)
    biased = W.make("and", [W.make("shift_right_logical", [b, W.splat(b, 52)], t), W.splat(b, 0x7FF)], t)
    fraction = W.make("and", [b, W.splat(b, _FRACTION)], t)
    significand = W.make("or", [fraction, W.splat(fraction, 1 << 52)], t)
    exponent = W.make("subtract", [biased, W.splat(biased, 1075)], t)
    negative_exponent = compare(exponent, W.splat(exponent, 0), "LT", "SIGNED")
    digits = W.make("abs", [exponent], t)
    value = W.convert(significand, f64)
    # |exponent| < 1536: 512 up to twice, then its binary digits below 512
    for k in (512, *_POWERS):
        has = compare(digits, W.splat(digits, k), "GE", "SIGNED")
        factor = _select(negative_exponent, _fconst(value, 2.0 ** -k), _fconst(value, 2.0 ** k))
        value = _select(has, W.make("multiply", [value, factor], ft), value)
        digits = _select(has, W.make("subtract", [digits, W.splat(digits, k)], t), digits)
    value = _select(compare(biased, W.splat(biased, 0), "EQ", "SIGNED"), _fconst(value, 0.0), value)
    special = compare(biased, W.splat(biased, 0x7FF), "EQ", "SIGNED")
    nan = compare(fraction, W.splat(fraction, 0), "NE", "SIGNED")
    value = _select(special, _select(nan, _fconst(value, float("nan")), _fconst(value, float("inf"))), value)
    negative = compare(b, W.splat(b, 0), "LT", "SIGNED")
    return _select(negative, W.make("negate", [value], ft), value)


class _Arithmetic:
    """A ``bitcast_convert`` replaced by its arithmetic (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation) -> None:
        self.op = op

    @property
    def summary(self) -> str:
        if _float_kind(self.op.operands[0]):
            return "the double's bits computed from its value with float64 and int64 ops"
        return "the double computed from the bits with int64 and float64 ops"

    @property
    def ops(self) -> int:
        return 0

    def apply(self) -> None:
        op = self.op
        x, result = op.operands[0], op.results[0]
        with ir.InsertionPoint(op), op.location:
            i64 = ir.IntegerType.get_signless(64)
            if _float_kind(x):
                out = W.bitcast(to_bits(x), ir.RankedTensorType(result.type).element_type)
            else:
                out = from_bits(W.bitcast(x, i64))
        result.replace_all_uses_with(out)
        op.erase()


def bitcast(op: ir.Operation) -> Legalization | str:
    """``op``, a ``bitcast_convert`` between ``f64`` and ``s64``/``u64`` of
    static shape, as arithmetic on the value (see the module docstring), or
    why not."""
    x, r = op.operands[0].type, op.results[0].type
    if not (isinstance(x, ir.RankedTensorType) and isinstance(r, ir.RankedTensorType)
            and ir.RankedTensorType(x).has_static_shape and list(ir.RankedTensorType(x).shape) == list(
                ir.RankedTensorType(r).shape)):
        return "a bitcast_convert of another shape or of a dynamic one"
    kinds = [ir.RankedTensorType(v).element_type for v in (x, r)]
    floats = [isinstance(k, ir.F64Type) for k in kinds]
    ints = [isinstance(k, ir.IntegerType) and ir.IntegerType(k).width == 64 for k in kinds]
    if not (floats[0] and ints[1] or ints[0] and floats[1]):
        return "not a bitcast_convert between float64 and a 64-bit integer"
    return _Arithmetic(op)


class _NextAfter:
    """A float64 ``next_after`` as steps on bits computed by arithmetic (a
    :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation) -> None:
        self.op = op

    summary = "its step on the double's bits, the bits computed from the values with float64 and int64 ops"
    ops = 0

    def apply(self) -> None:
        op = self.op
        x, y = op.operands
        with ir.InsertionPoint(op), op.location:
            xb, yb = to_bits(x), to_bits(y)
            t = ir.RankedTensorType(xb.type)
            magnitude = W.splat(xb, (1 << 63) - 1)
            x_abs, y_abs = (W.make("and", [b, magnitude], t) for b in (xb, yb))
            x_sign, y_sign = (W.make("and", [b, W.splat(b, _SIGN_BIT)], t) for b in (xb, yb))
            away = W.make("or", [compare(x_abs, y_abs, "GT", "SIGNED"), compare(x_sign, y_sign, "NE", "SIGNED")],
                          _typed(xb, ir.IntegerType.get_signless(1)))
            stepped = W.make("add", [xb, _select(away, W.splat(xb, -1), W.splat(xb, 1))], t)
            from_zero = _select(compare(y_abs, W.splat(y_abs, 0), "EQ", "SIGNED"), yb,
                                W.make("or", [y_sign, W.splat(y_sign, 1)], t))
            bits = _select(compare(x_abs, W.splat(x_abs, 0), "EQ", "SIGNED"), from_zero, stepped)
            bits = _select(compare(x, y, "EQ", "FLOAT"), yb, bits)
            nan = W.make("or", [compare(x, x, "NE", "FLOAT"), compare(y, y, "NE", "FLOAT")],
                         _typed(xb, ir.IntegerType.get_signless(1)))
            out = _select(nan, _fconst(x, float("nan")), from_bits(bits))
        op.results[0].replace_all_uses_with(out)
        op.erase()


def next_after(op: ir.Operation) -> Legalization | str:
    """``op``, a ``next_after`` of float64 values of static shape, as steps on
    their bits computed by arithmetic (see the module docstring), or why not."""
    t = op.operands[0].type
    if not (isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape
            and isinstance(ir.RankedTensorType(t).element_type, ir.F64Type)):
        return "a next_after of other than float64 values of static shape"
    return _NextAfter(op)
