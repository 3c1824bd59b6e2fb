"""Where narrowing float64 to f32 demonstrably changes a result.

Under the default float policy (``"f32"``) every ``f64`` value is computed in
``f32``.  Most programs lose only digits nobody reads; this module finds, on
the 64-bit module before it is narrowed, the places where the loss is
certain to show, each with the op and its location:

* ``tolerance`` -- an ordering compare (``<``, ``<=``, ``>``, ``>=``) of a
  difference (``p - q`` or ``|p - q|``) with a positive constant ``c`` that
  f32 cannot resolve: when the magnitudes of ``p`` and ``q`` are known (see
  the magnitude analysis below), ``c`` is below one f32 ulp of the smaller
  of their magnitudes -- f32 values that close differ by 0 or by at least
  that ulp, so the test passes only on equality; when they are not known,
  ``c`` is below f32's epsilon (2**-23): f32 then resolves the difference
  only for values below ``c / 2**-23`` in magnitude (8.4e-6 for ``1e-12``),
  a Newton tolerance for values near 1 never.  A difference compared with
  ``c * y`` (a relative tolerance, ``|x*x - a| > 1e-12 * a``) is named when
  ``0 < c < 2**-23``: f32 meets it only where the difference is exactly 0.
* ``cancellation`` -- a subtraction ``p - q`` of values whose magnitudes
  are known and whose f32 rounding error (one f32 ulp of the smaller
  magnitude) is at least 2**-12 of the largest difference they can have: the
  difference keeps at most 12 significant bits in f32, where float64 keeps
  41 more (``t[1:] - t[:-1]`` of times near 1.7e9 s, whose f32 spacing is
  128 s); and ``(a + C) - C`` with the same constant ``|C| >= 2**23``, where
  f32 keeps no fraction of ``a``.  Values of unknown magnitude (inputs,
  loop-carried values) are never flagged.
* ``overflow`` / ``underflow`` -- an f64 constant, or an op result whose
  known magnitude range, is beyond f32's largest finite value (it becomes
  ``inf``) or, nonzero, below f32's smallest normal value 2**-126 (it
  becomes zero or subnormal, and loses more than a relative 1e-7 wherever it
  is compared or used).  Each is flagged where it first arises, not at the
  ops downstream of it.
* ``long-sum`` -- a ``reduce`` that adds more than 2**24 float64 elements:
  in f32, adding 1 to 2**24 gives 2**24.
* ``sentinel-arithmetic`` -- ``finfo(float64).max`` or its negation (which
  the pass maps to f32's) read as a number by arithmetic, not only moved or
  compared (the op table's :class:`~no64.kinds.SentinelUse`): ``-max / 1e30``
  is -3.4e8 in f32, -1.8e278 in float64.  ``add``, ``subtract`` and
  ``negate`` carry it (``x - max`` with an ordinary ``x`` is still the
  extreme, as a masked softmax computes it), and ``exp``/``expm1``/
  ``logistic``/``tanh`` of it give the same result in both types.

The magnitude analysis is a forward interval analysis over float values:
constants, ``iota``, the ops that move elements, ``add``, ``subtract``,
``multiply``, ``divide``, ``negate``, ``abs``, ``sqrt``, ``maximum``,
``minimum``, ``select``, ``concatenate`` and sums by ``reduce``; every other
value (inputs, block arguments, transcendentals) is unknown.  Each hint
says whether ``float_policy="pairs"`` fixes it: it does for tolerances,
cancellation and long sums (48 bits of significand), not for the exponent
range (overflow, underflow, sentinels).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..ir._compat import as_attribute, constant_value
from ..ir._mlir import as_operation, enum_word, ir
from ..ir.locations import SourceLocation, decode_location
from ..kinds import HintKind, SentinelUse
from ..spec.registry import Computes, OpSpec, Reduction, spec_of
from ..spec.walk import all_ops, defining_op, functions, is_public, symbol_name

__all__ = ["FloatHint", "HINT_KINDS", "float_hints"]

#: The kinds of hint, each with whether ``float_policy="pairs"`` fixes it.
HINT_KINDS: dict[HintKind, bool] = {
    HintKind.TOLERANCE: True,
    HintKind.CANCELLATION: True,
    HintKind.LONG_SUM: True,
    HintKind.OVERFLOW: False,
    HintKind.UNDERFLOW: False,
    HintKind.SENTINEL_ARITHMETIC: False,
}

_F32_MAX = float(np.finfo(np.float32).max)
_F32_TINY = float(np.finfo(np.float32).tiny)  # 2**-126
_F32_EPS = float(np.finfo(np.float32).eps)  # 2**-23
_F64_MAX = float(np.finfo(np.float64).max)
_CANCEL = 2.0**-12
_LONG_SUM = 2**24

#: Computations whose result is still the extreme where an operand is
#: (``x - max`` with an ordinary ``x``, as a masked softmax computes): they
#: carry it.  (Ops that give the same result of the extreme in f32 and
#: float64, ``exp(-max)`` is 0 in both, are the op table's ``saturates``.)
_SHIFTS_SENTINEL = frozenset({Computes.ADD, Computes.SUBTRACT, Computes.NEGATE})
#: The binary arithmetic the interval walk evaluates.
_BINARY = frozenset({Computes.ADD, Computes.SUBTRACT, Computes.MULTIPLY, Computes.MAXIMUM, Computes.MINIMUM,
                     Computes.DIVIDE})
#: Ops whose result is a join of operands' elements.
_JOINS = frozenset({Computes.SELECT, Computes.CONCATENATE, Computes.PAD})


def _moves(spec: OpSpec) -> bool:
    """Whether the op's result holds operand 0's values (moved, or converted)."""
    return spec.moves or spec.convert

Interval = tuple[float, float]


@dataclasses.dataclass(frozen=True)
class FloatHint:
    """One place where computing float64 in f32 changes a result.

    Attributes:
      kind: One of :data:`HINT_KINDS`.
      op: The op's name.
      detail: What f32 loses there, for people, and whether
        ``float_policy="pairs"`` fixes it.
      pairs_fixes: Whether ``float_policy="pairs"`` fixes it.
      location: The op's :class:`~no64.SourceLocation`.
    """

    kind: HintKind
    op: str
    detail: str
    pairs_fixes: bool
    location: SourceLocation

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "op": self.op, "detail": self.detail,
                "pairs_fixes": self.pairs_fixes, "location": self.location.to_dict()}

    def __str__(self) -> str:
        return f"[{self.kind}] {self.op} at {self.location}: {self.detail}"


def _ulp32(x: float) -> float:
    """One f32 ulp at magnitude ``x`` (normal range)."""
    x = max(abs(x), _F32_TINY)
    return 2.0 ** (math.frexp(x)[1] - 24)


def _elem(t: ir.Type) -> ir.Type | None:
    return t.element_type if isinstance(t, ir.ShapedType) else None


def _is_f64(t: ir.Type) -> bool:
    e = _elem(t)
    return isinstance(e, ir.F64Type)


def _is_float(t: ir.Type) -> bool:
    e = _elem(t)
    return isinstance(e, (ir.F64Type, ir.F32Type, ir.F16Type, ir.BF16Type))


def _constant_floats(op: ir.Operation) -> np.ndarray | None:
    attr = constant_value(op)
    if attr is None:
        return None
    if isinstance(attr, ir.DenseIntElementsAttr):
        if attr.is_splat:
            return np.array([float(ir.IntegerAttr(attr.get_splat_value()).value)])
        return None
    if not isinstance(attr, ir.DenseFPElementsAttr):
        return None
    if attr.is_splat:
        return np.array([ir.FloatAttr(attr.get_splat_value()).value], dtype=np.float64)
    try:
        return np.asarray(attr, dtype=np.float64).ravel()
    except (ValueError, TypeError):
        return None


def _mag_lo(iv: Interval) -> float:
    """The smallest magnitude in ``iv``."""
    lo, hi = iv
    return 0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))


def _mag_hi(iv: Interval) -> float:
    return max(abs(iv[0]), abs(iv[1]))


def _ok(lo: float, hi: float) -> Interval | None:
    if math.isnan(lo) or math.isnan(hi) or math.isinf(lo) or math.isinf(hi):
        return None
    return (lo, hi)


def _mul(a: Interval, b: Interval) -> Interval | None:
    with np.errstate(all="ignore"):
        ps = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return _ok(min(ps), max(ps))


def _reduced_count(op: ir.Operation) -> int | None:
    dims = as_attribute(op.attributes["dimensions"], ir.DenseI64ArrayAttr) if "dimensions" in op.attributes else None
    t = op.operands[0].type if len(op.operands) else None
    if dims is None or not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
        return None
    return int(math.prod(t.shape[d] for d in dims))


def _body_is_add(op: ir.Operation) -> bool:
    if not len(op.regions) or not len(op.regions[0].blocks):
        return False
    names = [o.name for o in op.regions[0].blocks[0].operations]
    return bool(names) and spec_of(names[0]).computes is Computes.ADD


def _is_sum(spec: OpSpec, op: ir.Operation) -> bool:
    """Whether ``op`` is a reduce (over its ``dimensions``) whose body adds."""
    return spec.reduction is Reduction.INPUTS_INITS and "dimensions" in op.attributes and _body_is_add(op)


def _direction(op: ir.Operation) -> str:
    if "comparison_direction" not in op.attributes:
        return ""
    return enum_word(op.attributes["comparison_direction"])


class _Hints:
    #: Whether the interval and range steps look at ops none of whose operands
    #: has a known magnitude (an analysis that gives unknown values a nominal
    #: one does: :mod:`no64.analysis.pair_range`).
    every_op = False

    def __init__(self) -> None:
        self.iv: dict[ir.Value, Interval] = {}
        self.sentinel: set[ir.Value] = set()
        self.hints: list[FloatHint] = []
        self.flagged: set[ir.Operation] = set()
        self.seen: set[tuple[str, SourceLocation]] = set()
        # a called function's arguments at its first call (None: unknown)
        self.args: dict[tuple[str, int], Interval | None] = {}
        self.sentinel_args: set[tuple[str, int]] = set()
        self.returns: dict[str, list[Interval | None]] = {}
        self.sentinel_returns: dict[str, set[int]] = {}
        self.call_sites: dict[str, SourceLocation] = {}
        self.fn_name = ""
        self.walked: set[str] = set()
        self.bodies: dict[str, ir.Operation] = {}
        self.ops_of: dict[str, list[ir.Operation]] = {}
        # whether a type is float64: types are uniqued, so one query each
        self._f64_types: dict[ir.Type, bool] = {}

    def f64(self, t: ir.Type) -> bool:
        """Whether ``t`` is a float64 tensor (cached per type)."""
        known = self._f64_types.get(t)
        if known is None:
            known = self._f64_types[t] = _is_f64(t)
        return known

    def add(self, kind: HintKind, op: ir.Operation, detail: str, where: ir.Operation | None = None) -> None:
        if op in self.flagged:
            return
        self.flagged.add(op)
        loc = self.where(where or op)
        if (kind, loc) in self.seen:
            return
        self.seen.add((kind, loc))
        fixes = HINT_KINDS[kind]
        tail = ('; float_policy="pairs" computes it with 48 bits of significand' if fixes
                else '; float_policy="pairs" does not help (its exponent range is f32\'s)')
        self.hints.append(FloatHint(kind, op.name, detail + tail, fixes, loc))

    def where(self, op: ir.Operation) -> SourceLocation:
        """The op's location; inside a called function whose ops carry no
        source line (JAX's ``diff``, ``where``), its first call site's."""
        loc = decode_location(op.location)
        if loc.file is None and self.fn_name in self.call_sites:
            return self.call_sites[self.fn_name]
        return loc

    def get(self, v: ir.Value) -> Interval | None:
        return self.iv.get(v)

    def run(self, root: ir.Operation) -> list[FloatHint]:
        """One walk: each function is walked at its first call (a function
        called once with its arguments' ranges, else with unknown ones), so
        that its results are known where they are used."""
        self.bodies = {symbol_name(fn): fn for fn in functions(root)}
        self.ops_of = {sym: all_ops(fn) for sym, fn in self.bodies.items()}
        self.ncalls: dict[str, int] = {}
        for ops in self.ops_of.values():
            for op in ops:
                if spec_of(op.name).call:
                    sym = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                    self.ncalls[sym] = self.ncalls.get(sym, 0) + 1
        order = sorted(self.bodies, key=lambda sym: not is_public(self.bodies[sym]))
        for sym in order:
            if sym not in self.walked:
                self._walk_function(sym)
        return self.hints

    def _walk_function(self, sym: str) -> None:
        self.walked.add(sym)
        outer = self.fn_name
        self.fn_name = sym
        fn = self.bodies[sym]
        if not is_public(fn) and self.ncalls.get(sym) == 1:
            for i, a in enumerate(fn.regions[0].blocks[0].arguments):
                iv = self.args.get((sym, i))
                if iv is not None:
                    self.iv[a] = iv
                if (sym, i) in self.sentinel_args:
                    self.sentinel.add(a)
        self.walk(self.ops_of[sym])
        self.fn_name = outer

    def _call(self, op: ir.Operation, operands: list[ir.Value], results: list[ir.Value]) -> None:
        sym = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if sym not in self.call_sites:
            self.call_sites[sym] = self.where(op)
        if sym not in self.walked and sym in self.bodies:
            for i, v in enumerate(operands):
                self.args[(sym, i)] = self.get(v)
                if v in self.sentinel:
                    self.sentinel_args.add((sym, i))
            self._walk_function(sym)
        for r, iv in zip(results, self.returns.get(sym, [])):
            if iv is not None:
                self.iv[r] = iv
        for i in self.sentinel_returns.get(sym, ()):
            self.sentinel.add(results[i])

    def walk(self, ops: list[ir.Operation]) -> None:
        for op in ops:
            spec = spec_of(op.name)
            if spec.call:
                self._call(op, list(op.operands), list(op.results))
                continue
            if spec.terminator:
                parent = as_operation(op.parent)
                if spec_of(parent.name).function:
                    self.returns[self.fn_name] = [self.get(v) for v in op.operands]
                    self.sentinel_returns[self.fn_name] = {
                        i for i, v in enumerate(op.operands) if v in self.sentinel}
                continue
            results = list(op.results)
            computes = spec.computes
            if not results and computes is not Computes.COMPARE:
                continue
            operands = list(op.operands)
            # sentinels: carried by ops that move them, flagged where read
            held = [i for i, v in enumerate(operands) if v in self.sentinel] if self.sentinel else []
            if held:
                uses = {spec.sentinel_use(op, i) for i in held}
                if computes in _SHIFTS_SENTINEL:
                    self.sentinel.update(r for r in results if _is_float(r.type))
                elif spec.saturates:
                    pass
                elif SentinelUse.READS in uses and not _moves(spec):
                    self.add(HintKind.SENTINEL_ARITHMETIC, op,
                             "finfo(float64).max is mapped to f32's largest value (3.4e38) and then "
                             "computed with, where float64 computes with 1.8e308")
                elif SentinelUse.CARRIES in uses or _moves(spec):
                    self.sentinel.update(r for r in results if _is_float(r.type))
            if spec.constant:
                self._constant(op)
                continue
            if computes is Computes.IOTA:
                self._interval(op, spec, operands, results)  # of any type: converts carry it
                continue
            f64 = self.f64
            if not any(f64(v.type) for v in results) and not any(f64(v.type) for v in operands):
                continue
            # An op none of whose operands has a known magnitude computes
            # none (constants and iota were taken above): the interval and
            # range steps have nothing to do, only the patterns below.
            iv = self.iv
            known = self.every_op or any(v in iv for v in operands)
            if known:
                self._interval(op, spec, operands, results)
            if computes is Computes.COMPARE:
                self._compare(op, operands)
            elif computes is Computes.SUBTRACT:
                self._subtract(op, operands)
            elif spec.reduction is Reduction.INPUTS_INITS and any(f64(v.type) for v in operands):
                n = _reduced_count(op)  # (the cheap test first: most reduces are short)
                if n is not None and n > _LONG_SUM and _is_sum(spec, op):
                    self.add(HintKind.LONG_SUM, op,
                             f"a sum of {n} float64 elements, more than 2**24: in f32 every term below "
                             "2**-24 of the running sum is lost")
            if known:
                self._range(op, spec, operands, results)

    def _constant(self, op: ir.Operation) -> None:
        r = op.results[0]
        attr = constant_value(op)
        if attr is None:  # complex data the bindings cannot cast
            return
        if isinstance(attr, (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr)) and attr.is_splat:
            # the common case, without numpy
            v = (ir.FloatAttr(attr.get_splat_value()).value if isinstance(attr, ir.DenseFPElementsAttr)
                 else float(ir.IntegerAttr(attr.get_splat_value()).value))
            if math.isnan(v) or math.isinf(v):
                return
            if isinstance(attr, ir.DenseFPElementsAttr) and _is_f64(r.type):
                if abs(v) == _F64_MAX:
                    self.sentinel.add(r)
                    return
                if abs(v) > _F32_MAX:
                    self.add(HintKind.OVERFLOW, op, f"the float64 constant {v:.6g} is beyond f32's range "
                             "(3.4e38) and becomes inf", first_user(op))
                elif v != 0 and abs(v) < _F32_TINY:
                    self.add(HintKind.UNDERFLOW, op, f"the float64 constant {v:.6g} is below f32's smallest "
                             "normal value (1.2e-38) and becomes zero or subnormal", first_user(op))
            self.iv[r] = (v, v)
            return
        vals = _constant_floats(op)
        if vals is None or vals.size == 0 or np.isnan(vals).any():
            return
        f64 = _is_f64(r.type)
        if f64 and (np.abs(vals) == _F64_MAX).any():
            self.sentinel.add(r)
            return
        finite = vals[np.isfinite(vals)]
        if finite.size != vals.size:
            return
        if f64:
            big = finite[np.abs(finite) > _F32_MAX]
            tiny = finite[(finite != 0) & (np.abs(finite) < _F32_TINY)]
            if big.size:
                self.add(HintKind.OVERFLOW, op, f"the float64 constant {big[0]:.6g} is beyond f32's range "
                         "(3.4e38) and becomes inf", first_user(op))
            elif tiny.size:
                self.add(HintKind.UNDERFLOW, op, f"the float64 constant {tiny[0]:.6g} is below f32's smallest "
                         "normal value (1.2e-38) and becomes zero or subnormal", first_user(op))
        self.iv[r] = (float(finite.min()), float(finite.max()))

    def _interval(self, op: ir.Operation, spec: OpSpec, operands: list[ir.Value], results: list[ir.Value]) -> None:
        get = self.get
        out: Interval | None = None
        computes = spec.computes
        if computes is Computes.IOTA:
            t = ir.RankedTensorType(results[0].type)
            d = ir.IntegerAttr(op.attributes["iota_dimension"]).value
            out = (0.0, float(max(t.shape[d] - 1, 0))) if t.has_static_shape else None
        elif _moves(spec) and operands:
            out = get(operands[0])
        elif computes in _BINARY:
            a, b = get(operands[0]), get(operands[1])
            if a is not None and b is not None:
                if computes is Computes.ADD:
                    out = _ok(a[0] + b[0], a[1] + b[1])
                elif computes is Computes.SUBTRACT:
                    out = _ok(a[0] - b[1], a[1] - b[0])
                elif computes is Computes.MULTIPLY:
                    out = _mul(a, b)
                elif computes is Computes.MAXIMUM:
                    out = (max(a[0], b[0]), max(a[1], b[1]))
                elif computes is Computes.MINIMUM:
                    out = (min(a[0], b[0]), min(a[1], b[1]))
                elif b[0] > 0 or b[1] < 0:
                    out = _mul(a, (1.0 / b[1], 1.0 / b[0]))
        elif computes is Computes.NEGATE:
            a = get(operands[0])
            out = (-a[1], -a[0]) if a is not None else None
        elif computes is Computes.ABS:
            a = get(operands[0])
            out = (_mag_lo(a), _mag_hi(a)) if a is not None else None
        elif computes is Computes.SQRT:
            a = get(operands[0])
            out = (math.sqrt(a[0]), math.sqrt(a[1])) if a is not None and a[0] >= 0 else None
        elif computes in _JOINS:
            parts = operands[1:] if computes is Computes.SELECT else operands
            ivs = [get(v) for v in parts]
            if ivs and all(iv is not None for iv in ivs):
                out = (min(iv[0] for iv in ivs), max(iv[1] for iv in ivs))  # type: ignore[index]
        elif len(operands) == 2 and _is_sum(spec, op):
            a, init = get(operands[0]), get(operands[1])
            n = _reduced_count(op)
            if a is not None and init is not None and n is not None:
                out = _ok(init[0] + n * a[0], init[1] + n * a[1])
        if out is not None and results:
            self.iv[results[0]] = out

    def _range(self, op: ir.Operation, spec: OpSpec, operands: list[ir.Value], results: list[ir.Value]) -> None:
        """Overflow / underflow of a result, where it first arises."""
        if not results or not self.f64(results[0].type) or _moves(spec):
            return
        iv = self.get(results[0])
        if iv is None:
            return
        ins = [self.get(v) for v in operands]
        if any(i is not None and (_mag_hi(i) > _F32_MAX or 0 < _mag_hi(i) < _F32_TINY) for i in ins):
            return
        if _mag_hi(iv) > _F32_MAX:
            self.add(HintKind.OVERFLOW, op, f"float64 values up to {_mag_hi(iv):.3g} are computed here, beyond "
                     "f32's range (3.4e38): f32 gives inf")
        elif 0 < _mag_hi(iv) < _F32_TINY:
            self.add(HintKind.UNDERFLOW, op, f"float64 values of magnitude {_mag_hi(iv):.3g} are computed here, "
                     "below f32's smallest normal value (1.2e-38): f32 gives zero or a subnormal")

    def _compare(self, op: ir.Operation, operands: list[ir.Value]) -> None:
        d = _direction(op)
        if d not in ("LT", "LE", "GT", "GE") or not all(self.f64(v.type) for v in operands):
            return
        for side, other in ((1, 0), (0, 1)):
            c = self.get(operands[side])
            if c is None or c[0] != c[1] or not c[0] > 0:
                rel = self._relative(operands[side])
                if rel is not None and rel < _F32_EPS and _difference(operands[other]) is not None:
                    self.add(HintKind.TOLERANCE, op,
                             f"a difference is compared with {rel:.3g} times a value, a relative "
                             "tolerance below f32's epsilon (1.2e-7): in f32 the test holds only where "
                             "the difference is exactly zero")
                    return
                continue
            tol = c[0]
            diff = _difference(operands[other])
            if diff is None:
                continue
            p, q = (self.get(v) for v in diff)
            if p is not None and q is not None:
                m = max(_mag_lo(p), _mag_lo(q))
                if m > 0 and tol < _ulp32(m):
                    self.add(HintKind.TOLERANCE, op,
                             f"a difference is compared with {tol:.3g}, below f32's spacing "
                             f"({_ulp32(m):.3g}) at the compared values' magnitude ({m:.3g}): in f32 the "
                             "test holds only when they are equal")
                    return
            elif tol < _F32_EPS:
                self.add(HintKind.TOLERANCE, op,
                         f"a difference is compared with {tol:.3g}, below f32's epsilon (1.2e-7): f32 "
                         f"resolves it only for values below {tol / _F32_EPS:.2g} in magnitude (near 1, "
                         "its spacing is 1.2e-7)")
                return

    def _relative(self, v: ir.Value) -> float | None:
        """``c`` when ``v`` is ``c * y`` (through moves) with a positive constant ``c``."""
        for _ in range(4):
            d = defining_op(v)
            if d is None:
                return None
            spec = spec_of(d.name)
            if _moves(spec):
                v = d.operands[0]
                continue
            if spec.computes is not Computes.MULTIPLY:
                return None
            for w in d.operands:
                c = self.get(w)
                if c is not None and c[0] == c[1] and c[0] > 0:
                    return c[0]
            return None
        return None

    def _subtract(self, op: ir.Operation, operands: list[ir.Value]) -> None:
        p, q = (self.get(v) for v in operands)
        if p is not None and q is not None:
            m = min(_mag_lo(p), _mag_lo(q))
            width = max(abs(p[0] - q[1]), abs(p[1] - q[0]))
            if m > 0 and width > 0 and _ulp32(m) >= _CANCEL * width:
                self.add(HintKind.CANCELLATION, op,
                         f"a difference of float64 values of magnitude {m:.3g} that differ by at most "
                         f"{width:.3g}: f32 spaces values there {_ulp32(m):.3g} apart, so the difference "
                         "keeps at most 12 significant bits (or none)")
            return
        # (a + C) - C with the same large constant
        if q is not None and q[0] == q[1] and abs(q[0]) >= 2.0**23:
            d = defining_op(operands[0])
            if d is not None and spec_of(d.name).computes is Computes.ADD:
                for v in d.operands:
                    c = self.get(v)
                    if c is not None and c[0] == c[1] == q[0]:
                        self.add(HintKind.CANCELLATION, op,
                                 f"(a + C) - C with C = {q[0]:.6g}: f32 spaces values there "
                                 f"{_ulp32(q[0]):.3g} apart and keeps no fraction of a")
                        return


def first_user(op: ir.Operation) -> ir.Operation:
    """The first op that computes with ``op``'s result (through moves): a
    constant's own location is where the program was lowered, its user's
    is the user's line."""
    v = op.results[0]
    for _ in range(8):
        users = [as_operation(u.owner) for u in v.uses]
        if not users:
            return op
        u = users[0]
        if not _moves(spec_of(u.name)) or not u.results:
            return u
        v = u.results[0]
    return op


def _difference(v: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """``(p, q)`` when ``v`` is ``p - q`` or ``|p - q|`` (through moves)."""
    for _ in range(4):
        d = defining_op(v)
        if d is None:
            return None
        spec = spec_of(d.name)
        if spec.computes is Computes.SUBTRACT:
            return d.operands[0], d.operands[1]
        if spec.computes is Computes.ABS or _moves(spec):
            v = d.operands[0]
            continue
        return None
    return None


def float_hints(module: ir.Module | ir.Operation) -> list[FloatHint]:
    """The hints of a 64-bit module (see the module docstring), in program
    order, at most one per op."""
    root = module.operation if isinstance(module, ir.Module) else as_operation(module)
    return _Hints().run(root)
