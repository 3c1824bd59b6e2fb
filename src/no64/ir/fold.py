"""Integer ops folded as they are built.

The word emulation writes a 64-bit op as a fixed recipe of 32-bit ops
(:mod:`no64.ir.words`), whatever its operands.  Where an operand is a
constant -- a shift by 30, a multiply by a 64-bit constant, a mask, the
sign extension of a constant -- much of the recipe computes constants, or
picks one of two branches by a constant predicate.  A compiler folds some
of that and not the rest: IREE evaluated the constant parts of a shift by
a broadcast constant into tensors as large as the program's input and
read them from memory in the kernel.

:func:`fold` is asked before an op is built (by
:func:`no64.ir.words.make`), with what the op would be.  It answers a
value that computes the same elements, the bits of a splat constant that
does, or ``None`` (build the op):

* an elementwise integer op whose operands are all splat constants is the
  splat constant of its result, computed here with StableHLO's semantics
  (wrap-around, shifts of the bit width or more, the compare's type) --
  but for the two that XLA releases compute differently, left to the
  backend: a compare whose type is not its elements' (undefined in
  StableHLO) and a convert of an integer to ``i1``;
* an op with one splat-constant operand that is an identity for it is its
  other operand (``x + 0``, ``x & ~0``, ``x << 0``, ...) or a constant
  (``x & 0``, ``x * 0``, ``x << 32`` on 32 bits);
* a select by a splat predicate is the operand it picks.

Every answer has the elements the op would have computed, so what the
module computes does not change.  Only integer (and ``i1``) types are
folded, never floats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._mlir import defining_op, enum_word, int_attr, ir

__all__ = ["fold", "splat_int", "splat_attr"]

#: The elementwise integer ops :func:`fold` knows.
_FOLDED = frozenset({
    "add", "subtract", "multiply", "and", "or", "xor", "not", "negate",
    "shift_left", "shift_right_logical", "shift_right_arithmetic",
    "compare", "select", "minimum", "maximum", "convert", "bitcast_convert",
})


def _int_type(t: ir.Type) -> ir.IntegerType | None:
    if not isinstance(t, ir.RankedTensorType):
        return None
    elem = t.element_type
    return elem if isinstance(elem, ir.IntegerType) else None


def splat_int(v: ir.Value) -> int | None:
    """The bits (an unsigned int below ``2**width``) of every element of
    ``v`` where ``v`` is a splat integer constant (through broadcasts,
    reshapes and bitcasts), else ``None``."""
    for _ in range(4):
        op = defining_op(v)
        if op is None:
            return None
        dialect, _, name = op.name.partition(".")
        if dialect != "stablehlo":
            return None
        if name == "constant":
            attr = op.attributes["value"]
            if not isinstance(attr, ir.DenseIntElementsAttr):
                return None
            dense = attr
            if not dense.is_splat:
                return None
            elem = _int_type(v.type)
            if elem is None:
                return None
            return int(ir.IntegerAttr(dense.get_splat_value()).value) & ((1 << elem.width) - 1)
        if name in ("broadcast_in_dim", "reshape", "bitcast_convert"):
            src = op.operands[0]
            a, b = _int_type(src.type), _int_type(v.type)
            if a is None or b is None or a.width != b.width or (a != b and name != "bitcast_convert"):
                return None
            v = src
            continue
        return None
    return None


def _signed(bits: int, t: ir.IntegerType) -> int:
    w = t.width
    return bits - (1 << w) if w > 1 and bits >> (w - 1) else bits


def _reads_signed(t: ir.IntegerType) -> bool:
    return not t.is_unsigned and t.width > 1


def _compute(name: str, args: list[int], types: list[ir.IntegerType], result: ir.IntegerType,
             attrs: Mapping[str, ir.Attribute]) -> int | None:
    """The bits of ``name`` on splat operands ``args`` (bits), or ``None``."""
    t = types[0]
    w, mask = t.width, (1 << t.width) - 1
    if name == "convert":
        if result.width == 1 and w > 1:
            # nonzero is true in StableHLO; older XLA releases keep the low bit
            return None
        v = _signed(args[0], t) if _reads_signed(t) else args[0]
        return v & ((1 << result.width) - 1)
    if name == "bitcast_convert":
        return args[0] if result.width == w else None
    if name == "compare":
        kind = enum_word(attrs["compare_type"]) if "compare_type" in attrs else None
        signed = _reads_signed(t)
        # a type that is not the elements' is not defined (StableHLO's compare,
        # C3), and XLA releases differ on it: left to the backend
        if kind not in (None, "NOTYPE", "SIGNED" if signed else "UNSIGNED"):
            return None
        a, b = ((_signed(x, t) for x in args) if signed else args)
        return int({"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b,
                    "GE": a >= b}[enum_word(attrs["comparison_direction"])])
    if name in ("minimum", "maximum"):
        a, b = ((_signed(x, t) for x in args) if _reads_signed(t) else args)
        return (min(a, b) if name == "minimum" else max(a, b)) & mask
    if name == "not":
        return ~args[0] & mask
    if name == "negate":
        return -args[0] & mask
    a, b = args
    if name == "add":
        return (a + b) & mask
    if name == "subtract":
        return (a - b) & mask
    if name == "multiply":
        return (a * b) & mask
    if name == "and":
        return a & b
    if name == "or":
        return a | b
    if name == "xor":
        return a ^ b
    if name == "shift_left":
        return 0 if b >= w else (a << b) & mask
    if name == "shift_right_logical":
        return 0 if b >= w else a >> b
    if name == "shift_right_arithmetic":
        return (_signed(a, t) >> min(b, w - 1)) & mask
    return None


def _identity(name: str, operands: Sequence[ir.Value], consts: list[int | None], result: ir.Type,
              width: int) -> ir.Value | int | None:
    """The operand, or the constant bits, that ``name`` is for its one
    constant operand; ``None`` where it is not an identity."""
    ones = (1 << width) - 1

    def other(i: int) -> ir.Value | None:
        x = operands[1 - i]
        return x if x.type == result else None

    for i, c in enumerate(consts):
        if c is None:
            continue
        if name in ("add", "or", "xor") and c == 0:
            return other(i)
        if name == "subtract" and i == 1 and c == 0:
            return other(i)
        if name == "multiply" and c == 1:
            return other(i)
        if name in ("multiply", "and") and c == 0:
            return 0
        if name == "and" and c == ones:
            return other(i)
        if name == "or" and c == ones:
            return ones
        if name.startswith("shift_") and i == 1:
            if c == 0:
                return other(i)
            if c >= width and name != "shift_right_arithmetic":
                return 0
    return None


def splat_attr(t: ir.RankedTensorType, bits: int) -> ir.DenseElementsAttr:
    """The splat attribute of integer tensor type ``t`` whose elements have
    the bits ``bits``."""
    elem = ir.IntegerType(t.element_type)
    value = bits if elem.is_unsigned or elem.width == 1 else _signed(bits, elem)
    return ir.DenseElementsAttr.get_splat(t, int_attr(elem, value))


def _constant(result: ir.Type, bits: int) -> int | None:
    return bits if ir.RankedTensorType(result).has_static_shape else None


def fold(name: str, operands: Sequence[ir.Value], result: ir.Type,
         attrs: Mapping[str, ir.Attribute]) -> ir.Value | int | None:
    """What ``stablehlo.<name>`` of ``operands`` folds to: an operand with
    its elements, the bits of the splat constant of type ``result`` it
    computes (:func:`splat_attr`; only for a static shape), or ``None``
    where the op is to be built."""
    if name not in _FOLDED or not operands:
        return None
    res = _int_type(result)
    if res is None:
        return None
    if name == "select":
        p = splat_int(operands[0])
        if p is not None:
            picked = operands[1] if p else operands[2]
            return picked if picked.type == result else None
        return operands[1] if operands[1] == operands[2] and operands[1].type == result else None
    types = [_int_type(x.type) for x in operands]
    if any(t is None for t in types):
        return None
    ints = [t for t in types if t is not None]
    if name in ("convert", "bitcast_convert") and operands[0].type == result:
        return operands[0]
    consts = [splat_int(x) for x in operands]
    if all(c is not None for c in consts):
        bits = _compute(name, [c for c in consts if c is not None], ints, res, attrs)
        return None if bits is None else _constant(result, bits)
    if len(operands) != 2:
        return None
    found = _identity(name, operands, consts, result, ints[0].width)
    return _constant(result, found) if isinstance(found, int) else found
