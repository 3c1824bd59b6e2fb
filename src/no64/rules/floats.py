"""Float rules: JAX's 64-bit float-from-bits idiom and reduce_precision.

**Float from bits.**  With x64 on, ``jax.random.uniform`` (and every sampler
built on it) makes an f64 in [1, 2) from 64 random bits::

    bits = (convert(hi) << 32) | convert(lo)          # ui64 from two ui32
    f = bitcast_convert((bits >> 12) | 0x3FF0000000000000) : ui64 -> f64

The 32-bit idiom keeps the top 23 bits of the same stream::

    f = bitcast_convert((hi >> 9) | 0x3F800000) : ui32 -> f32

Both are uniform on [1, 2); the f32 one has the 23 leading mantissa bits
of the f64 one (it is the f64 value truncated to f32 precision).  The
rewrite is recorded in the report as a precision reduction.

**reduce_precision.**  Exponent and mantissa widths beyond f32's (8 and 23)
keep nothing more on f32 values, so they are clamped to f32's.

**Narrowed dots.**  A float64 ``dot_general`` or ``convolution`` computes
float64 products whatever its ``precision_config`` says (no backend has a
lower-precision float64 pass).  Narrowed to f32 at ``DEFAULT`` precision it
would run on the device's fast pass -- one bfloat16 pass on a TPU (about
three decimal digits), TF32 on a recent GPU -- far below f32; so the
narrowed op asks for ``HIGHEST`` (f32 products), the nearest the f32
policy has to the x64 program's meaning.  An explicit ``algorithm`` is
left as the program gave it.
"""

from __future__ import annotations

from typing import Any

from ..analysis.ranges import RangeAnalysis, defining_op
from ..ir._mlir import ir, stablehlo
from ..kinds import EventKind, Verdict
from ..spec.registry import Computes, Refusal, RuleContext, spec_of
from ..spec.util import erase_dead

_F64_ONE_BITS = 0x3FF0000000000000
_F32_ONE_BITS = 0x3F800000


def _match(v: ir.Value, computes: Computes | None) -> ir.Operation | None:
    """The op defining ``v`` if it computes ``computes`` (``None``: a convert)."""
    op = defining_op(v)
    if op is None:
        return None
    spec = spec_of(op.name)
    hit = spec.convert if computes is None else spec.computes is computes
    return op if hit else None


def _split(op: ir.Operation, name: str, pred: Any) -> tuple[ir.Value, ir.Value] | None:
    """For a commutative ``op``, (the operand satisfying ``pred``, the other)."""
    a, b = op.operands[0], op.operands[1]
    if pred(a):
        return a, b
    if pred(b):
        return b, a
    return None


def _is_const(value: int, bits: int = 64) -> Any:
    """Whether a value is a constant whose every element is ``value``: true
    of a constant with no element (a draw of shape ``(0,)`` broadcasts the
    idiom's constants to no element, and the rewrite computes its nothing as
    the idiom does)."""

    def pred(v: ir.Value) -> bool:
        c = RangeAnalysis().fold(v, sentinels=True)
        return c is not None and all(int(x) % 2**bits == value for x in c.ravel())

    return pred


def _high_word(bits64: ir.Value) -> ir.Value | None:
    """``hi`` for ``bits64 = (convert(hi : ui32) << 32) | convert(lo : ui32)``."""
    words = _words(bits64)
    return None if words is None else words[0]


def _words(bits64: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """``(hi, lo)`` for ``bits64 = (convert(hi : ui32) << 32) | convert(lo : ui32)``."""
    or_op = _match(bits64, Computes.OR)
    if or_op is None:
        return None

    def is_shifted(v: ir.Value) -> bool:
        sh = _match(v, Computes.SHIFT_LEFT)
        return sh is not None and _is_const(32)(sh.operands[1])

    parts = _split(or_op, "or", is_shifted)
    if parts is None:
        return None
    shifted, low = parts
    sh = _match(shifted, Computes.SHIFT_LEFT)
    assert sh is not None
    conv = _match(sh.operands[0], None)
    low_conv = _match(low, None)
    if conv is None or low_conv is None:
        return None
    hi = conv.operands[0]
    for v in (hi, low_conv.operands[0]):
        e = ir.ShapedType(v.type).element_type
        if not (isinstance(e, ir.IntegerType) and e.width == 32):
            return None
    return hi, low_conv.operands[0]


def float_from_bits(op: ir.Operation, ctx: RuleContext) -> bool:
    """Rewrite JAX's f64-from-random-bits idiom to the f32 one."""
    loc = op.location
    name = op.name
    out_t = op.results[0].type
    src_t = op.operands[0].type
    if not (
        isinstance(ir.ShapedType(out_t).element_type, ir.F64Type)
        and ir.ShapedType(src_t).shape == ir.ShapedType(out_t).shape
    ):
        return False
    or_op = _match(op.operands[0], Computes.OR)
    if or_op is None:
        return False
    parts = _split(or_op, "or", _is_const(_F64_ONE_BITS))
    if parts is None:
        return False
    _, mant = parts
    shr = _match(mant, Computes.SHIFT_RIGHT_LOGICAL)
    if shr is None or not _is_const(12)(shr.operands[1]):
        return False
    words = _words(shr.operands[0])
    if words is None:
        return False
    hi, lo = words
    hi_t = ir.RankedTensorType(hi.type)
    if not hi_t.has_static_shape or ir.RankedTensorType(lo.type).element_type != hi_t.element_type:
        return False
    u32 = hi_t.element_type
    f32_t = ir.RankedTensorType.get(hi_t.shape, ir.F32Type.get())
    pairs = bool(getattr(ctx.settings, "float_pairs", False))

    def const_u32(value: int) -> ir.Value:
        return stablehlo.ConstantOp(ir.DenseElementsAttr.get_splat(hi_t, ir.IntegerAttr.get(u32, value))).result

    def const_f32(value: float) -> ir.Value:
        attr = ir.DenseElementsAttr.get_splat(f32_t, ir.FloatAttr.get(ir.F32Type.get(), value))
        return stablehlo.ConstantOp(attr).result

    with ir.InsertionPoint(op), op.location:
        m = stablehlo.ShiftRightLogicalOp(hi, const_u32(9))
        o = stablehlo.OrOp(m.result, const_u32(_F32_ONE_BITS))
        f = stablehlo.BitcastConvertOp(f32_t, o.result)
        result = f.result
        if pairs:
            # float64 as pairs: the 52 bits as 1 + (hi >> 9) 2**-23 (exact in
            # f32) plus the 29 bits below, (hi & 511) 2**-32 + (lo >> 12) 2**-52
            # (each exact in f32, their sum rounded once); the f64 sum of the
            # two is what the pair pass computes on (a pair of f32, 2**-49 of
            # the f64 value; uniform on [1, 2) as JAX's f64 draw is)
            f64_t = ir.RankedTensorType(out_t)
            mid = stablehlo.ConvertOp(f32_t, stablehlo.AndOp(hi, const_u32(511)).result)
            low = stablehlo.ConvertOp(f32_t, stablehlo.ShiftRightLogicalOp(lo, const_u32(12)).result)
            rest = stablehlo.AddOp(stablehlo.MulOp(mid.result, const_f32(2.0**-32)).result,
                                   stablehlo.MulOp(low.result, const_f32(2.0**-52)).result)
            result = stablehlo.AddOp(stablehlo.ConvertOp(f64_t, f.result).result,
                                     stablehlo.ConvertOp(f64_t, rest.result).result).result
    # The f64 users are narrowed to f32 (or computed on pairs) by the pass that follows.
    op.results[0].replace_all_uses_with(result)
    producer = defining_op(op.operands[0])
    op.erase()
    erase_dead(producer)
    detail = (
        "f64 random floats from 52 bits computed as a float64 pair from the same bits (the "
        "pair's 49 bits, uniform on [1, 2))" if pairs else
        "f64 random floats from 52 bits rewritten to JAX's f32 idiom (23 bits, same "
        "distribution on [1, 2))"
    )
    ctx.report.add(EventKind.PRECISION_REDUCED, name, loc, detail)
    ctx.report.add_narrowing(name, "result", 0, loc, Verdict.PRECISION_REDUCED, None, detail)
    return True


def clamp_reduce_precision(op: ir.Operation, ctx: RuleContext) -> bool:
    """Clamp exponent/mantissa widths of an f64 reduce_precision to f32's."""
    eb = ir.IntegerAttr(op.attributes["exponent_bits"]).value
    mb = ir.IntegerAttr(op.attributes["mantissa_bits"]).value
    if eb <= 8 and mb <= 23:
        return False  # means the same on f32
    i32 = ir.IntegerType.get_signless(32)
    op.attributes["exponent_bits"] = ir.IntegerAttr.get(i32, min(eb, 8))
    op.attributes["mantissa_bits"] = ir.IntegerAttr.get(i32, min(mb, 23))
    ctx.report.add(
        EventKind.REWRITE,
        op.name,
        op.location,
        f"reduce_precision e{eb}m{mb} clamped to f32's e{min(eb, 8)}m{min(mb, 23)}",
    )
    return True


def narrowed_dot_precision(op: ir.Operation, ctx: RuleContext) -> bool:
    """After retyping, a float64 dot or convolution narrowed to f32 (or
    complex128 to complex64) asks for ``HIGHEST`` precision (see the module
    docstring); returns whether it changed the op."""
    elem = ir.ShapedType(op.results[0].type).element_type
    if isinstance(elem, ir.ComplexType):
        elem = ir.ComplexType(elem).element_type
    if not isinstance(elem, ir.F32Type) or "algorithm" in op.attributes:
        return False
    op.attributes["precision_config"] = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
    return True


def bitcast_is_width_dependent(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    return Refusal(
        "bitcast_convert reinterprets the bits of a 64-bit value; narrowing its type "
        "would change every value, so it is never narrowed",
    )


def bitcast_same_width(op: ir.Operation) -> bool:
    """Whether a ``bitcast_convert`` keeps its element width (and so its
    shape): then it reinterprets each element alone."""
    src = ir.ShapedType(op.operands[0].type).element_type
    dst = ir.ShapedType(op.results[0].type).element_type
    return _width(src) == _width(dst)


def _width(t: ir.Type) -> int | None:
    if isinstance(t, ir.IntegerType):
        return int(t.width)
    for cls, bits in ((ir.F32Type, 32), (ir.F64Type, 64), (ir.F16Type, 16), (ir.BF16Type, 16)):
        if isinstance(t, cls):
            return bits
    return None

