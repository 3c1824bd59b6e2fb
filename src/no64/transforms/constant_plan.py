"""Narrowing the 64-bit constants of a module: each distinct attribute once.

The planner (:mod:`no64.transforms.plan`) asks, for each constant op with a
64-bit type, for its narrowed attribute (:meth:`ConstantNarrowing.narrow`);
this module reads the elements -- from the attribute, from the printed
form where the bindings cannot hand them out (complex elements), or from
the module's ``dense_resource`` blobs -- and narrows them
(:mod:`no64.transforms.constants`), with the events to report.  MLIR
uniques attributes, so equal constants share one and are narrowed once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from ..ir._compat import as_attribute, constant_literal, resource_blobs, resource_key
from ..ir._mlir import ir
from ..kinds import EventKind, IntegerPolicy, Verdict
from ..report import counted
from ..spec.registry import Refusal
from . import constants as C

__all__ = ["ConstantNarrowing", "Events", "Narrowed"]

#: What a constant's narrowing reports: (event kind, detail, element count).
Events = list[tuple[str, str, int]]
#: The old attribute (``None`` where it cannot be kept for the undo log: a
#: complex constant, read from the printed form), the new one, the events,
#: and the verdict of a float constant (``None`` for integers).
Narrowed = tuple["ir.Attribute | None", ir.Attribute, Events, "Verdict | None"]


class ConstantNarrowing:
    """The constants of one module, narrowed as ``integer_policy`` says;
    ``refuse(op, reason)`` raises for a constant that cannot be read."""

    def __init__(self, root: ir.Operation, integer_policy: IntegerPolicy,
                 refuse: Callable[[ir.Operation, str], NoReturn]) -> None:
        self.root = root
        self.integer_policy = integer_policy
        self.refuse = refuse
        self._resources: dict[str, bytes] | None = None
        self._attr_cache: dict[ir.Attribute, tuple[ir.Attribute, Events, Verdict | None] | Refusal] = {}
        self._const_types: dict[int, tuple[ir.ShapedType, ir.Type, bool]] = {}

    def narrow(self, op: ir.Operation, rtype: ir.Type, new_type: ir.Type) -> Narrowed | Refusal:
        """The constant ``op`` (of type ``rtype``) narrowed to ``new_type``;
        or, for an integer element that does not fit (and is no sentinel)
        under the integer policy "error", why not."""
        # Converted types are cached objects, one per distinct type: key by identity.
        info = self._const_types.get(id(new_type))
        if info is None:
            shaped = ir.ShapedType(rtype)
            elem = shaped.element_type
            info = self._const_types[id(new_type)] = (shaped, elem, isinstance(elem, ir.ComplexType))
        shaped, elem, is_complex = info
        if is_complex:
            # jaxlib's bindings cannot materialise complex dense attributes
            # (touching one through ``.attr`` aborts the process), so the
            # printed form is parsed instead -- and the old attribute cannot
            # be kept for the undo log.
            values = self._read_text_constant(op, shaped, np.complex128)
            narrowed = self._narrow(op, values, new_type, elem, splat=False)
            assert not isinstance(narrowed, Refusal)  # (complex elements always narrow)
            new_attr, events = narrowed
            return None, new_attr, events, _float_class(events)
        old_attr = op.attributes["value"]
        # Attributes are uniqued by MLIR: equal constants share one, so
        # each distinct value is narrowed (and classified) once.
        hit = self._attr_cache.get(old_attr)
        if hit is None:
            hit = self._attr_cache[old_attr] = self._narrow_attr(op, old_attr, shaped, elem, new_type)
        if isinstance(hit, Refusal):
            return hit
        return old_attr, *hit

    def _narrow_attr(
        self, op: ir.Operation, attr: ir.Attribute, shaped: ir.ShapedType, elem: ir.Type, new_type: ir.Type
    ) -> tuple[ir.Attribute, list[tuple[str, str, int]], Verdict | None] | Refusal:
        """The narrowed attribute, the events and (for floats) its verdict;
        or why the attribute cannot be narrowed."""
        dense = as_attribute(attr, ir.DenseElementsAttr)
        if dense is None:
            # dense_resource blobs (the bindings return a plain Attribute)
            values = self._read_resource(attr, tuple(shaped.shape), _numpy_dtype(elem), op)
            narrowed = self._narrow(op, values, new_type, elem, splat=False)
        elif dense.is_splat:
            sv = dense.get_splat_value()
            if isinstance(elem, ir.IntegerType):
                scalar: Any = _int_of(sv, elem.is_unsigned)
            else:
                scalar = ir.FloatAttr(sv).value
            narrowed = self._narrow(op, np.array([scalar]), new_type, elem, splat=True)
        else:
            narrowed = self._narrow(op, np.asarray(dense), new_type, elem, splat=False)
        if isinstance(narrowed, Refusal):
            return narrowed
        new_attr, events = narrowed
        fclass = None if isinstance(elem, ir.IntegerType) else _float_class(events)
        return new_attr, events, fclass

    def _narrow(
        self, op: ir.Operation, v: np.ndarray, new_type: ir.Type, elem: ir.Type, splat: bool
    ) -> tuple[ir.Attribute, list[tuple[str, str, int]]] | Refusal:
        """The narrowed attribute for elements ``v`` and the events to report;
        or, for integers that do not fit under the integer policy "error",
        why not."""
        events: list[tuple[str, str, int]] = []
        new_elem = ir.ShapedType(new_type).element_type
        if isinstance(elem, ir.IntegerType):
            unsigned = elem.is_unsigned
            res = C.narrow_integers(v, unsigned, self.integer_policy)
            if res.sentinels:
                what = "UINT64_MAX" if unsigned else "INT64_MAX/INT64_MIN"
                events.append((EventKind.SENTINEL, f"{what} mapped to the 32-bit extreme", res.sentinels))
            if res.out_of_range:
                if res.values is None:
                    return Refusal(
                        f"{'ui64' if unsigned else 'i64'} constant {res.first_bad} "
                        f"({counted(res.out_of_range, 'element')} in all) does not fit in 32 bits "
                        "and is not a sentinel",
                        out_of_range=True,
                    )
                verdict = self.integer_policy.verdict
                assert verdict is not None  # (under "error" no values come back)
                kind = EventKind(verdict)
                events.append(
                    (
                        kind,
                        f"out-of-range integer constant {res.first_bad} narrowed by "
                        f"policy {self.integer_policy.value!r}",
                        res.out_of_range,
                    )
                )
            out = res.values
            assert out is not None
            if splat:
                scalar_attr = ir.IntegerAttr.get(new_elem, int(out[0]))
                return ir.DenseElementsAttr.get_splat(new_type, scalar_attr), events
            return ir.DenseElementsAttr.get(np.ascontiguousarray(out), type=new_type), events
        fres = C.narrow_floats(v)
        if fres.sentinels:
            events.append(
                (EventKind.SENTINEL, "float64 max/lowest mapped to float32 max/lowest", fres.sentinels)
            )
        if fres.inexact:
            events.append((EventKind.FLOAT_INEXACT, "f64 constant rounded to nearest f32", fres.inexact))
        if fres.overflow:
            events.append(
                (EventKind.FLOAT_OVERFLOW, f"finite f64 constant {_first_overflow(v)!r} beyond f32 range "
                 "became inf", fres.overflow)
            )
        if splat and not isinstance(elem, ir.ComplexType):
            scalar_attr = ir.FloatAttr.get(new_elem, float(fres.values[0]))
            return ir.DenseElementsAttr.get_splat(new_type, scalar_attr), events
        return ir.DenseElementsAttr.get(np.ascontiguousarray(fres.values), type=new_type), events

    def _read_text_constant(self, op: ir.Operation, shaped: ir.ShapedType, dtype: Any) -> np.ndarray:
        # jaxlib's bindings cannot materialise complex dense attributes (reading
        # one even aborts the process), so the printed form is read instead.
        kind, text = constant_literal(op)
        if kind == "resource":
            return self._resource_values(text, tuple(shaped.shape), np.dtype(dtype), op)
        if kind != "dense":
            self.refuse(op, "cannot read this complex constant")
        return C.parse_dense_literal(text, tuple(shaped.shape), np.dtype(dtype))

    def _read_resource(self, attr: Any, shape: tuple[int, ...], dtype: np.dtype, op: ir.Operation) -> np.ndarray:
        key = resource_key(str(attr))
        if key is None:
            self.refuse(op, f"constant attribute of an unknown kind: {str(attr)[:80]}")
        return self._resource_values(key, shape, dtype, op)

    def _resource_values(self, key: str, shape: tuple[int, ...], dtype: np.dtype, op: ir.Operation) -> np.ndarray:
        if self._resources is None:
            self._resources = resource_blobs(self.root)
        data = self._resources.get(key)
        if data is None:
            self.refuse(op, f"dense_resource blob {key!r} has no data in the module")
        return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _float_class(events: Events) -> Verdict:
    """The verdict of a float constant, from the events of its narrowing:
    ``OVERFLOW`` (beyond f32's range), ``PRECISION_REDUCED`` (rounded) or
    ``EXACT``."""
    kinds = {k for k, _, _ in events}
    if EventKind.FLOAT_OVERFLOW in kinds:
        return Verdict.OVERFLOW
    if EventKind.FLOAT_INEXACT in kinds:
        return Verdict.PRECISION_REDUCED
    return Verdict.EXACT


def _numpy_dtype(elem: ir.Type) -> np.dtype:
    if isinstance(elem, ir.F64Type):
        return np.dtype(np.float64)
    if isinstance(elem, ir.IntegerType):
        return np.dtype(np.uint64 if elem.is_unsigned else np.int64)
    if isinstance(elem, ir.ComplexType):
        return np.dtype(np.complex128)
    raise TypeError(f"not a 64-bit element type: {elem}")


def _int_of(attr: ir.Attribute, unsigned: bool) -> int:
    ia = ir.IntegerAttr(attr)
    v = int(ia.value)
    if unsigned and v < 0:
        v += 2**64
    return v


def _first_overflow(values: np.ndarray) -> float:
    """The first finite element (or part, of complex data) of float64
    ``values`` that rounds to an infinite float32 (float64's largest value
    and its negation, sentinels, excepted)."""
    flat = np.asarray(values).reshape(-1)
    parts = np.concatenate([flat.real, flat.imag]) if np.iscomplexobj(flat) else flat
    with np.errstate(over="ignore", invalid="ignore"):
        big = (np.isfinite(parts) & ~np.isfinite(parts.astype(np.float32))
               & (np.abs(parts) != np.finfo(np.float64).max))
    return float(parts[int(np.argmax(big))]) if big.any() else float("nan")
