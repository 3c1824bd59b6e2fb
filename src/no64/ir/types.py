"""The type converter: which types hold 64 bits, and their 32-bit forms.

Mirrors the role of MLIR's ``TypeConverter``: one place decides how every
type maps, and every rewrite asks it.  The mapping is

==================  ==================
64-bit element      32-bit element
==================  ==================
``f64``             ``f32``
``i64`` / ``si64``  ``i32`` / ``si32``
``ui64``            ``ui32``
``complex<f64>``    ``complex<f32>``
==================  ==================

applied inside ranked and unranked tensors (shape and encoding kept), tuples
and function types.  Results are cached per context, since a module holds few
distinct types but many values.

The same mapping as numpy sees it (:data:`NARROWED_DTYPES`, by dtype name
:data:`NARROWED_DTYPE_NAMES`) and the limits of the types on either side are
here too, for the host side and the file formats.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._mlir import ir

__all__ = [
    "TypeConverter",
    "is_64bit_element",
    "is_int64_tensor",
    "wide_kind",
    "WIDE_KINDS",
    "NARROWED_DTYPE_NAMES",
    "NARROWED_DTYPES",
    "DTYPE_KINDS",
    "I32",
    "U32",
    "I64",
    "U64",
    "F32_MAX",
    "F64_MAX",
]

#: The converter's element mapping by numpy dtype name: 64-bit -> 32-bit.
NARROWED_DTYPE_NAMES: Mapping[str, str] = {
    "int64": "int32",
    "uint64": "uint32",
    "float64": "float32",
    "complex128": "complex64",
}
#: The same mapping as numpy dtypes.
NARROWED_DTYPES: Mapping[np.dtype, np.dtype] = {
    np.dtype(wide): np.dtype(narrow) for wide, narrow in NARROWED_DTYPE_NAMES.items()
}

#: The 64-bit numpy dtypes by the short names of their element types
#: (:data:`WIDE_KINDS`, as :func:`wide_kind` names MLIR types).
DTYPE_KINDS: Mapping[np.dtype, str] = {
    np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64", np.dtype(np.float64): "f64",
    np.dtype(np.complex128): "c128",
}

#: The limits of the integer types on either side of the mapping.
I32 = np.iinfo(np.int32)
U32 = np.iinfo(np.uint32)
I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)
#: The largest finite float32 and float64 values.
F32_MAX = float(np.finfo(np.float32).max)
F64_MAX = float(np.finfo(np.float64).max)


def is_int64_tensor(t: ir.Type) -> bool:
    """Whether ``t`` is a ranked tensor of 64-bit integers (any signedness)."""
    if not isinstance(t, ir.RankedTensorType):
        return False
    e = t.element_type
    return isinstance(e, ir.IntegerType) and e.width == 64


def is_64bit_element(t: ir.Type) -> bool:
    """True for ``f64``, 64-bit integers of any signedness and ``complex<f64>``."""
    if isinstance(t, ir.F64Type):
        return True
    if isinstance(t, ir.IntegerType):
        return t.width == 64
    if isinstance(t, ir.ComplexType):
        return isinstance(t.element_type, ir.F64Type)
    return False


def wide_kind(t: ir.Type) -> str | None:
    """The short name of a 64-bit element type: ``"f64"``, ``"i64"`` (signless
    or signed), ``"u64"`` or ``"c128"``; ``None`` for any other type."""
    if isinstance(t, ir.F64Type):
        return "f64"
    if isinstance(t, ir.IntegerType):
        if t.width != 64:
            return None
        return "u64" if t.is_unsigned else "i64"
    if isinstance(t, ir.ComplexType):
        return "c128" if isinstance(t.element_type, ir.F64Type) else None
    return None


#: The short names of the 64-bit element types (:func:`wide_kind`).
WIDE_KINDS = ("f64", "i64", "u64", "c128")


def _holds_64bit(t: ir.Type, keep: frozenset[str] = frozenset()) -> bool:
    if isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType)):
        t = t.element_type
    elif isinstance(t, ir.TupleType):
        return any(_holds_64bit(t.get_type(i), keep) for i in range(t.num_types))
    elif isinstance(t, ir.FunctionType):
        return any(_holds_64bit(x, keep) for x in (*t.inputs, *t.results))
    if not keep:
        return is_64bit_element(t)
    kind = wide_kind(t)
    return kind is not None and kind not in keep


class TypeConverter:
    """Maps types to their 64-bit-free form; ``None`` means "already free".

    ``keep``: 64-bit element types (short names of :data:`WIDE_KINDS`) the
    device has natively: they are kept as they are, and a type that holds
    only those counts as free (a target's profile, :mod:`no64.targets`).
    """

    def __init__(self, keep: frozenset[str] = frozenset()) -> None:
        unknown = set(keep) - set(WIDE_KINDS)
        if unknown:
            raise ValueError(f"unknown 64-bit element type(s) {sorted(unknown)}; known: {', '.join(WIDE_KINDS)}")
        self.keep = frozenset(keep)
        self._cache: dict[ir.Type, ir.Type | None] = {}
        self._holds: dict[ir.Type, bool] = {}

    def convert(self, t: ir.Type) -> ir.Type | None:
        """The narrowed type, or ``None`` when ``t`` holds no 64-bit element."""
        try:
            return self._cache[t]
        except KeyError:
            pass
        out = self._convert(t)
        self._cache[t] = out
        return out

    def holds_64bit(self, t: ir.Type) -> bool:
        """True if ``t`` holds a 64-bit element (decided from ``t`` alone,
        without building its converted form)."""
        try:
            return self._holds[t]
        except KeyError:
            pass
        out = _holds_64bit(t, self.keep)
        self._holds[t] = out
        return out

    def convert_or_same(self, t: ir.Type) -> ir.Type:
        out = self.convert(t)
        return t if out is None else out

    def _element(self, t: ir.Type) -> ir.Type | None:
        if self.keep and wide_kind(t) in self.keep:
            return None
        if isinstance(t, ir.F64Type):
            return ir.F32Type.get()
        if isinstance(t, ir.IntegerType):
            if t.width != 64:
                return None
            if t.is_signed:
                return ir.IntegerType.get_signed(32)
            if t.is_unsigned:
                return ir.IntegerType.get_unsigned(32)
            return ir.IntegerType.get_signless(32)
        if isinstance(t, ir.ComplexType):
            if isinstance(t.element_type, ir.F64Type):
                return ir.ComplexType.get(ir.F32Type.get())
            return None
        return None

    def _convert(self, t: ir.Type) -> ir.Type | None:
        if isinstance(t, ir.RankedTensorType):
            elem = self._element(t.element_type)
            if elem is None:
                return None
            return ir.RankedTensorType.get(t.shape, elem, t.encoding, loc=ir.Location.unknown())
        if isinstance(t, ir.UnrankedTensorType):
            elem = self._element(t.element_type)
            if elem is None:
                return None
            return ir.UnrankedTensorType.get(elem)
        if isinstance(t, ir.TupleType):
            parts = [t.get_type(i) for i in range(t.num_types)]
            new = [self.convert(p) for p in parts]
            if all(n is None for n in new):
                return None
            return ir.TupleType.get_tuple(
                [p if n is None else n for p, n in zip(parts, new)]
            )
        if isinstance(t, ir.FunctionType):
            ins = list(t.inputs)
            outs = list(t.results)
            new_in = [self.convert(x) for x in ins]
            new_out = [self.convert(x) for x in outs]
            if all(n is None for n in new_in + new_out):
                return None
            return ir.FunctionType.get(
                [a if n is None else n for a, n in zip(ins, new_in)],
                [a if n is None else n for a, n in zip(outs, new_out)],
            )
        return self._element(t)
