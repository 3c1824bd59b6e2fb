"""Small static facts about values, used to prove narrowings exact.

* :func:`constant_elements`: the elements of a value that is a constant,
  possibly broadcast, reshaped or converted.
* :func:`upper_bound`: an upper bound for an integer value proven
  non-negative, from iota shapes, constants and the arithmetic between them.

Both look only backwards through a value's defining ops, with a depth limit,
so they cost nothing on values they cannot decide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core._mlir import ir

__all__ = ["constant_elements", "upper_bound", "defining_op"]

#: Ops whose ``value`` attribute holds their result.
CONSTANT_OPS = frozenset({"stablehlo.constant", "chlo.constant", "mhlo.constant"})

_MAX_DEPTH = 24

# Ops a value passes through with its elements unchanged (possibly
# rearranged, repeated or dropped): bounds and constant sets carry over.
_SAME_ELEMENTS = frozenset(
    {
        "stablehlo.broadcast_in_dim",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.slice",
        "stablehlo.reverse",
        "sdy.sharding_constraint",
        "stablehlo.optimization_barrier",
    }
)


def defining_op(v: ir.Value) -> ir.Operation | None:
    """The op that defines ``v``, or ``None`` for a block argument."""
    owner: Any = v.owner
    if isinstance(owner, ir.Operation):
        return owner
    op = getattr(owner, "operation", None)
    return op if isinstance(op, ir.Operation) else None


def _int_attr_value(attr: ir.Attribute, unsigned: bool) -> int:
    v = int(ir.IntegerAttr(attr).value)
    if unsigned and v < 0:
        v += 2**64
    return v


def constant_elements(v: ir.Value) -> np.ndarray | None:
    """The integer elements of ``v`` if it is a constant (possibly broadcast,
    reshaped or converted), as a flat array of Python ints; else ``None``."""
    for _ in range(_MAX_DEPTH):
        op = defining_op(v)
        if op is None:
            return None
        name = op.name
        if name in CONSTANT_OPS:
            attr = op.attributes["value"]
            if not isinstance(attr, ir.DenseIntElementsAttr):
                return None
            elem = ir.ShapedType(attr.type).element_type
            unsigned = isinstance(elem, ir.IntegerType) and elem.is_unsigned
            if attr.is_splat:
                return np.array([_int_attr_value(attr.get_splat_value(), unsigned)], dtype=object)
            return np.asarray(attr).astype(object).ravel()
        if name in _SAME_ELEMENTS or name == "stablehlo.convert":
            v = op.operands[0]
            continue
        return None
    return None


def upper_bound(v: ir.Value, _depth: int = 0) -> int | None:
    """An upper bound on ``v``'s elements if they are proven non-negative
    integers, else ``None``."""
    if _depth > _MAX_DEPTH:
        return None
    op = defining_op(v)
    if op is None:
        return None
    name = op.name
    if name == "stablehlo.iota":
        t = ir.RankedTensorType(op.results[0].type)
        if not isinstance(t.element_type, ir.IntegerType) or not t.has_static_shape:
            return None
        dim = ir.IntegerAttr(op.attributes["iota_dimension"]).value
        return max(t.shape[dim] - 1, 0)
    if name in CONSTANT_OPS:
        vals = constant_elements(v)
        if vals is None or len(vals) == 0:
            return None if vals is None else 0
        lo, hi = min(vals), max(vals)
        return int(hi) if lo >= 0 else None
    if name in _SAME_ELEMENTS:
        return upper_bound(op.operands[0], _depth + 1)
    if name == "stablehlo.convert":
        src = ir.ShapedType(op.operands[0].type).element_type
        dst = ir.ShapedType(op.results[0].type).element_type
        if not (isinstance(src, ir.IntegerType) and isinstance(dst, ir.IntegerType)):
            return None
        b = upper_bound(op.operands[0], _depth + 1)
        if b is None and src.is_unsigned:
            b = 2**src.width - 1
        if b is None:
            return None
        limit = 2**dst.width - 1 if dst.is_unsigned else 2 ** (dst.width - 1) - 1
        return b if b <= limit else None
    operands = list(op.operands)
    if name in ("stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
                "stablehlo.and", "stablehlo.or", "stablehlo.xor"):
        bounds = [upper_bound(x, _depth + 1) for x in operands]
        if name == "stablehlo.and" and any(b is not None for b in bounds):
            # and with a non-negative value is bounded by it, if the other is non-negative too
            if all(b is not None for b in bounds):
                return min(b for b in bounds if b is not None)
            return None
        if any(b is None for b in bounds):
            return None
        a, b = bounds[0], bounds[1]
        assert a is not None and b is not None
        if name == "stablehlo.add":
            return a + b
        if name == "stablehlo.multiply":
            return a * b
        if name == "stablehlo.maximum":
            return max(a, b)
        if name == "stablehlo.minimum":
            return min(a, b)
        return (1 << max(a, b).bit_length()) - 1  # or / xor
    if name == "stablehlo.select":
        a = upper_bound(operands[1], _depth + 1)
        b = upper_bound(operands[2], _depth + 1)
        return None if a is None or b is None else max(a, b)
    if name == "stablehlo.shift_right_logical":
        a = upper_bound(operands[0], _depth + 1)
        amounts = constant_elements(operands[1])
        if a is None or amounts is None or len(amounts) == 0 or min(amounts) < 0:
            return None
        return a >> int(min(amounts))
    if name == "stablehlo.remainder":
        a = upper_bound(operands[0], _depth + 1)
        d = constant_elements(operands[1])
        if a is None or d is None or len(d) == 0 or min(d) <= 0:
            return None
        return min(a, int(max(d)) - 1)
    return None
