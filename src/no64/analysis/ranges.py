"""Interval analysis of integer values: is a narrowing to 32 bits exact?

For every integer value the pass narrows, :class:`RangeAnalysis` computes a
:class:`~no64.spec.intervals.Range` that contains every value it can take
in the *original* (64-bit) program, and
:func:`~no64.spec.intervals.verdict_of` compares it with the 32-bit range.

The analysis is demand-driven: it looks only at the values a verdict is
asked for and at what they are computed from, memoising every range, so
float-heavy programs pay for their few integer values only.  What it knows
about each op comes from the op registry (:mod:`no64.rules`): a transfer
function per op giving **one range per result**, and a function for the
arguments of the op's regions.  An op without one gets the full range of
its types, which is always sound.

Structure is analysed through results and carried values: calls through
the callee's returns evaluated per call site; ``case``/``if`` through every
branch; ``while`` loops to a fixpoint (exact for counted loops of up to
256 trips, widened otherwise, with counted accumulators bounded by
``init + trips * step``); reductions through their body, per output.
Input-free sub-graphs are folded to their exact elements (:meth:`fold`), so
a certain overflow is told from a possible one.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir._compat import as_attribute, block_argument, location_kind, replica_group_size
from ..ir._mlir import as_operation as _as_op, ir
from ..kinds import SentinelUse, Verdict
from ..spec.intervals import INT32, UINT32, Interval, Range, join, verdict, verdict_of
from ..spec.registry import Computes, Reduction, spec_of
from ..spec.walk import callee_of, defining_op, entry_function, is_public as _is_public

__all__ = [
    "Interval",
    "Range",
    "RangeAnalysis",
    "entry_function",
    "resolve_input_ranges",
    "verdict",
    "verdict_of",
    "type_range",
    "defining_op",
    "constant_ints",
    "constant_elements",
    "INT32",
    "UINT32",
]

_UNSEEN: Any = object()
_MAX_DEPTH = 400
_WIDEN_AFTER = 3
_MAX_COUNTED_TRIPS = 256
_MAX_ITERATIONS = 12
_MAX_FOLD_ELEMENTS = 1 << 16
_FLIP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def type_range(t: ir.Type) -> Interval | None:
    """The values an integer element or tensor type can hold; ``None`` if not integer."""
    if isinstance(t, (ir.RankedTensorType, ir.UnrankedTensorType)):
        t = ir.ShapedType(t).element_type
    if not isinstance(t, ir.IntegerType):
        return None
    w = t.width
    if t.is_unsigned or w == 1:
        return (0, 2**w - 1)
    return (-(2 ** (w - 1)), 2 ** (w - 1) - 1)


def constant_ints(v: ir.Value) -> list[int] | None:
    """The elements of ``v`` if it is computed from constants alone (a
    constant, possibly broadcast, reshaped or converted), flat; else ``None``."""
    return RangeAnalysis().constant(v)



def _direction(op: ir.Operation) -> str:
    from ..ir._mlir import stablehlo

    return str(stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value)


def resolve_input_ranges(
    root: ir.Operation, input_ranges: Mapping[int | str, tuple[int, int]]
) -> dict[int, Interval]:
    """Map declared ranges (by argument position or name) to positions of the
    entry function's integer arguments; raise ``ValueError`` naming what does
    not resolve."""
    validate_input_ranges(input_ranges)
    if not input_ranges:
        return {}
    fn = entry_function(root)
    if fn is None:
        raise ValueError("input ranges were declared but the module has no public function")
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    n = len(ftype.inputs)
    names: dict[str | None, int] = {}
    if any(isinstance(key, str) for key in input_ranges):
        names = {_arg_name(fn, i): i for i in range(n)}
        names.pop(None, None)
    out: dict[int, Interval] = {}
    for key, (lo, hi) in input_ranges.items():
        if isinstance(key, int):
            idx = key
        elif key in names:
            idx = names[key]
        else:
            known = ", ".join(sorted(str(k) for k in names)) or "none"
            raise ValueError(f"no argument named {key!r} (named arguments: {known}; or use a position)")
        if not 0 <= idx < n:
            raise ValueError(f"argument #{idx} does not exist: the entry function takes {n}")
        full = type_range(ftype.inputs[idx])
        if full is None:
            raise ValueError(f"argument {key!r} is not an integer ({ftype.inputs[idx]})")
        if int(lo) > int(hi):
            raise ValueError(f"range of argument {key!r} is empty: {lo} > {hi}")
        if idx in out:
            raise ValueError(f"argument #{idx} is given two ranges (by position and by name)")
        out[idx] = (int(lo), int(hi))
    return out


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def validate_input_ranges(input_ranges: Any) -> None:
    """Check the shape of declared input ranges: a mapping from an argument
    position (``int``) or name (``str``) to an inclusive ``(lo, hi)`` pair of
    integers.  Raise ``TypeError`` (not a mapping) or ``ValueError`` naming
    the argument."""
    if input_ranges is None:
        return
    if not isinstance(input_ranges, Mapping):
        raise TypeError(
            "input_ranges must be a mapping from argument position or name to (lo, hi), "
            f"e.g. {{'tokens': (0, 50256)}}, not {type(input_ranges).__name__}"
        )
    for key, bounds in input_ranges.items():
        if not (_is_int(key) or isinstance(key, str)):
            raise ValueError(
                f"input_ranges: key {key!r} must be an argument position (int) or name (str), "
                f"not {type(key).__name__}"
            )
        if _is_int(key) and key < 0:
            raise ValueError(f"input_ranges: argument position {key} is negative")
        if (
            isinstance(bounds, (str, bytes))
            or not isinstance(bounds, Sequence)
            or len(bounds) != 2
            or not all(_is_int(b) for b in bounds)
        ):
            raise ValueError(
                f"input_ranges: the range of argument {key!r} must be a pair of integers "
                f"(lo, hi), not {bounds!r}"
            )


class RangeAnalysis:
    """Demand-driven range analysis over one module.

    Args:
      root: The module operation (``None`` for queries that need no
        function arguments or calls, such as folding a constant).
      input_ranges: Declared ranges of the public entry function's arguments,
        by position or by argument name (the name in the argument's location,
        as JAX writes it, e.g. ``"tokens"``); each an inclusive ``(lo, hi)``.
      calls: Every ``func.call`` of the module, when the caller has already
        walked it (saves a walk).
      known: Ranges already established for some values (sound for every
        execution), taken as they are.
    """

    def __init__(
        self,
        root: ir.Operation | None = None,
        input_ranges: Mapping[int | str, tuple[int, int]] | None = None,
        calls: Sequence[ir.Operation] | None = None,
        known: Mapping[ir.Value, Range] | None = None,
    ) -> None:
        self._spec_of = spec_of
        self.root = root
        self.input_ranges = resolve_input_ranges(root, input_ranges) if root is not None and input_ranges else {}
        self._entry = entry_function(root) if root is not None else None
        # Memo layers: a loop, call or reduction being solved pushes one, so
        # that ranges computed from a provisional state are dropped.
        self._layers: list[dict[Any, Any]] = [dict(known or {})]
        self._depth = 0
        self._funcs: dict[str, ir.Operation] | None = None
        self._callers: dict[str, list[ir.Operation]] | None = None
        self._calls = calls
        self._type_ranges: dict[ir.Type, Interval | None] = {}
        self._in_progress: set[str] = set()
        self._in_calls: set[str] = set()
        # per call being evaluated: its callee's arguments -> the call's operands
        self._bindings: list[dict[ir.Value, ir.Value]] = []
        self._folds: dict[Any, Any] = {}

    # ------------------------------------------------------------ queries
    def full(self, v: ir.Value) -> Interval | None:
        """The range of ``v``'s type (``None`` if not an integer type)."""
        t = v.type
        full = self._type_ranges.get(t, _UNSEEN)
        if full is _UNSEEN:
            full = self._type_ranges[t] = type_range(t)
        return full

    def range(self, v: ir.Value) -> Range | None:
        """The :class:`Range` of integer value ``v`` (``None`` for non-integers)."""
        full = self.full(v)
        if full is None:
            return None
        hit = self._lookup(v)
        if hit is not None:
            return hit
        if self._depth > _MAX_DEPTH:
            return Range(*full)
        self._depth += 1
        try:
            r = self._compute(v, full)
        finally:
            self._depth -= 1
        if r is None:
            r = Range(*full)
        elif r.lo <= r.hi and (r.lo < full[0] or r.hi > full[1]):
            r = Range(max(r.lo, full[0]), min(r.hi, full[1]), r.sentinels)
        self._layers[-1][v] = r
        return r

    of = range

    def carries(self, op: ir.Operation, i: int) -> bool:
        """Whether ``op`` hands a sentinel in its operand ``i`` on unchanged
        (as the op table declares: :class:`~no64.kinds.SentinelUse`)."""
        return self._spec_of(op.name).sentinel_use(op, i) is SentinelUse.CARRIES

    def interval(self, v: ir.Value) -> Interval | None:
        """Every value ``v`` can take in the 64-bit program, as ``(lo, hi)``."""
        r = self.range(v)
        return None if r is None else r.interval

    def verdict(self, v: ir.Value) -> tuple[Verdict, Range]:
        """The verdict for narrowing integer value ``v`` to 32 bits, and its range.

        A value whose range says ``unproven`` but that is computed from
        constants alone is folded: ``exact`` if every element fits,
        ``overflow`` if one is certain not to.
        """
        r = self.range(v)
        assert r is not None, "not an integer value"
        unsigned = self.full(v)[0] == 0  # type: ignore[index]
        v_ = verdict_of(r, unsigned)
        if v_ in (Verdict.UNPROVEN, Verdict.OVERFLOW) and not r.sentinels:
            folded = self.fold(v)
            if folded is not None and folded.size:
                lo32, hi32 = UINT32 if unsigned else INT32
                lo, hi = int(folded.min()), int(folded.max())
                return (Verdict.EXACT if lo32 <= lo and hi <= hi32 else Verdict.OVERFLOW), Range(lo, hi)
            # only selected where it fits: the other elements never reach a result
            g = self.guarded(v)
            if g is not None and verdict_of(g, unsigned) is Verdict.EXACT:
                return Verdict.EXACT, g
        return v_, r

    def constant(self, v: ir.Value) -> list[int] | None:
        """The elements of ``v`` if it is computed from constants alone
        (sentinels as the 64-bit numbers they are), flat; else ``None``."""
        f = self.fold(v, sentinels=True)
        return None if f is None or f.size == 0 else [int(x) for x in f.ravel()]

    def fold(self, v: ir.Value, sentinels: bool = False) -> np.ndarray | None:
        """The exact elements of integer value ``v`` in the 64-bit program if it
        is computed from constants and iotas alone (and small), else ``None``.

        Without ``sentinels``, a sub-graph that holds a sentinel constant is
        not folded (its verdict follows the sentinel rules instead).
        """
        key = (v, sentinels)
        if key in self._folds:
            return self._folds[key]
        self._folds[key] = None  # cycles
        out = self._fold(v, sentinels, 0)
        self._folds[key] = out
        return out

    def _fold(self, v: ir.Value, sentinels: bool, depth: int) -> np.ndarray | None:
        if depth > 64 or self.full(v) is None:
            return None
        t = v.type
        if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
            return None
        if math.prod(t.shape) > _MAX_FOLD_ELEMENTS:
            return None
        op = defining_op(v)
        if op is None:
            return None
        spec = self._spec_of(op.name)
        if spec.constant:
            vals = constant_elements(op)
            if vals is None:
                return None
            if not sentinels and _has_sentinel(vals, op):
                return None
            vals = vals.astype(object)
            if vals.size == 1:
                return np.broadcast_to(vals.reshape([1] * len(t.shape)), t.shape)
            return vals.reshape(t.shape)
        fold = spec.fold
        if fold is None or len(op.results) != 1:
            return None
        args = []
        for x in op.operands:
            a = self.fold(x, sentinels) if self.full(x) is not None else None
            if a is None:
                return None
            args.append(a)
        return fold(op, args, t)

    # ----------------------------------------------------------- helpers
    def _lookup(self, key: Any) -> Any:
        for layer in reversed(self._layers):
            hit = layer.get(key)
            if hit is not None:
                return hit
        return None

    def _compute(self, v: ir.Value, full: Interval) -> Range | None:
        arg = block_argument(v)
        if arg is not None:
            parent = _as_op(arg.owner.owner)
            fn = self._spec_of(parent.name).arguments
            return None if fn is None else fn(self, arg, parent)
        op = defining_op(v)
        if op is None:
            return None
        spec = self._spec_of(op.name)
        transfer = spec.transfer
        if transfer is None:
            return None
        results = transfer(self, op)
        n = len(op.operands)
        if n and any(r is not None and r.sentinels for r in results) and not any(
            spec.sentinel_use(op, i) is SentinelUse.CARRIES for i in range(n)
        ):
            # only an op the op table declares to carry sentinels hands one
            # on (constants make them); any other computes with the 64-bit
            # numbers they are
            results = [r.plain() if r is not None else None for r in results]
        layer = self._layers[-1]
        mine = None
        for res, r in zip(op.results, results):
            if res == v:
                mine = r
            elif r is not None:
                layer[res] = r
        return mine

    def constant_range(self, op: ir.Operation) -> Range | None:
        """The range of a constant op: sentinels of a 64-bit constant kept apart."""
        res = op.results[0]
        full = self.full(res)
        if full is None:
            return None
        vals = constant_elements(op)
        if vals is None:
            return Range(*full)
        if vals.size == 0:
            return Range(0, 0)
        elem = ir.IntegerType(ir.ShapedType(res.type).element_type)
        sent: set[int] = set()
        if elem.width == 64:
            own = (2**64 - 1,) if elem.is_unsigned else (2**63 - 1, -(2**63))
            keep = None
            for s in own:
                hit = vals == np.array(s, dtype=vals.dtype)
                if hit.any():
                    sent.add(s)
                    keep = ~hit if keep is None else keep & ~hit
            if keep is not None:
                vals = vals[keep]
        if vals.size == 0:
            return Range(1, 0, frozenset(sent))
        return Range(int(vals.min()), int(vals.max()), frozenset(sent))

    # ----------------------------------------------------- functions/calls
    def _symbols(self) -> tuple[dict[str, ir.Operation], dict[str, list[ir.Operation]]]:
        if self._funcs is None or self._callers is None:
            funcs: dict[str, ir.Operation] = {}
            callers: dict[str, list[ir.Operation]] = {}
            if self.root is not None:
                for top in self.root.regions[0].blocks[0].operations:
                    top = _as_op(top)
                    if spec_of(top.name).function:
                        funcs[ir.StringAttr(top.attributes["sym_name"]).value] = top
                calls = self._calls
                if calls is None:
                    found: list[ir.Operation] = []
                    advance = ir.WalkResult.ADVANCE

                    def visit(op: ir.Operation) -> ir.WalkResult:
                        if spec_of(op.name).call:
                            found.append(op)
                        return advance

                    self.root.walk(visit)
                    calls = found
                for op in calls:
                    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                    callers.setdefault(callee, []).append(op)
            self._funcs, self._callers = funcs, callers
        return self._funcs, self._callers

    def function_argument(self, fn: ir.Operation, i: int) -> Range | None:
        """A function argument: its declared range (entry function), or the
        join of what its call sites pass (private functions)."""
        if not spec_of(fn.name).function:
            return None
        sym = ir.StringAttr(fn.attributes["sym_name"]).value
        if _is_public(fn):
            declared = self.input_ranges.get(i) if fn == self._entry else None
            return Range(*declared) if declared is not None else None
        if sym in self._in_progress:
            return None  # a recursive call: its arguments are not bounded here
        _, callers = self._symbols()
        sites = callers.get(sym, [])
        if not sites:
            return None
        self._in_progress.add(sym)
        try:
            parts = []
            for site in sites:
                if i >= len(site.operands):
                    return None
                r = self.range(site.operands[i])
                if r is None:
                    return None
                parts.append(r)
            return join(parts)
        finally:
            self._in_progress.discard(sym)

    def call_results(self, op: ir.Operation) -> list[Range | None]:
        """A call's results, from the callee's returns evaluated with its
        arguments bound to this call's operands (a context of its own, so a
        callee shared by many call sites or called in a loop stays precise)."""
        fulls = [self.full(r) for r in op.results]
        default = [Range(*f) if f is not None else None for f in fulls]
        funcs, _ = self._symbols()
        callee = funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is None or not len(callee.regions[0].blocks):
            return default
        sym = ir.StringAttr(callee.attributes["sym_name"]).value
        if sym in self._in_calls:
            return default  # recursion
        context: dict[Any, Any] = {}
        binding: dict[ir.Value, ir.Value] = {}
        for a, x in zip(callee.regions[0].blocks[0].arguments, op.operands):
            binding[a] = x
            r = self.range(x) if self.full(a) is not None else None
            if r is not None:
                context[a] = r
        self._layers.append(context)
        self._bindings.append(binding)
        self._in_calls.add(sym)
        try:
            parts: list[list[Range]] = [[] for _ in fulls]
            for block in callee.regions[0].blocks:
                for inner in block.operations:
                    inner = _as_op(inner)
                    if spec_of(inner.name).terminator:
                        for k, x in enumerate(inner.operands):
                            if k < len(fulls) and fulls[k] is not None:
                                r = self.range(x)
                                parts[k].append(r if r is not None else default[k])  # type: ignore[arg-type]
        finally:
            self._in_calls.discard(sym)
            self._bindings.pop()
            self._layers.pop()
        return [join(p) if p and d is not None else d for p, d in zip(parts, default)]

    def _caller_value(self, v: ir.Value) -> ir.Value:
        """``v``, or the operand of the calls being evaluated it is bound to
        (a callee's argument, followed outwards)."""
        for binding in reversed(self._bindings):
            v = binding.get(v, v)
        return v

    # ---------------------------------------------------------------- loops
    def loop_state(self, op: ir.Operation) -> list[Range | None]:
        """Ranges of a while loop's carried values: a fixpoint from the
        initial values, joined with each iteration's yields, widened to the
        type's range after a few rounds, refined inside the body by the loop
        condition; counted loops run to their trip count, and a carried
        accumulator that grows by a bounded step is bounded by
        ``init + trips * step``."""
        key = ("while", op)
        cached = self._lookup(key)
        if cached is not None:
            return cached
        inits = list(op.operands)
        fulls = [self.full(x) for x in inits]
        state: list[Range | None] = [self.range(x) if f is not None else None for x, f in zip(inits, fulls)]
        cond_block = op.regions[0].blocks[0]
        body_block = op.regions[1].blocks[0]
        cond_args = list(cond_block.arguments)
        body_args = list(body_block.arguments)
        body_ret = list(body_block.operations)[-1]
        trips = self._trip_count(cond_block, cond_args, body_args, body_ret, state)
        small = trips is not None and trips <= _MAX_COUNTED_TRIPS
        # With a proven, small trip count T, T + 1 rounds without widening
        # cover every iteration the loop can run: exact and sound.
        rounds = trips + 2 if small else _MAX_ITERATIONS  # type: ignore[operator]

        def one_round(state: list[Range | None]) -> tuple[list[Range | None], dict[Any, Any]]:
            self._layers.append({key: state})  # provisional answer; breaks cycles
            try:
                for a, st in zip(cond_args, state):
                    if st is not None:
                        self._layers[-1][a] = st
                refined = self._refine(cond_block, cond_args, state)
                for a, st in zip(body_args, refined):
                    if st is not None:
                        self._layers[-1][a] = st
                yields = [self.range(x) if f is not None else None for x, f in zip(body_ret.operands, fulls)]
            finally:
                layer = self._layers.pop()
            return yields, layer

        converged = False
        for it in range(rounds):
            yields, layer = one_round(state)
            new = [None if st is None else join([st, y if y is not None else Range(*f)])  # type: ignore[misc]
                   for st, y, f in zip(state, yields, fulls)]
            if not small and it >= _WIDEN_AFTER:
                new = [_widen(n, st, f) for n, st, f in zip(new, state, fulls)]
            if new == state:
                converged = True
                break
            state = new
        if not converged and not small:
            state = [Range(*f) if f is not None else None for f in fulls]
        if trips is not None and not small:
            state = self._bound_accumulators(state, inits, body_args, body_ret, trips, one_round)
        # keep what was computed inside the loop from the final state
        _, layer = one_round(state)
        self._layers[-1].update(layer)
        self._layers[-1][key] = state
        return state

    def _bound_accumulators(self, state, inits, body_args, body_ret, trips, one_round):
        """A carried ``acc`` whose next value is ``acc + step``, with ``step``
        not depending on ``acc`` (possibly through calls, as JAX's
        ``fori_loop`` writes its body): ``acc`` stays within
        ``init + k * step`` for ``k <= trips``.  ``step`` is bounded by
        evaluating the body with ``acc = 0`` from ``state``, which holds
        every iteration."""
        out = list(state)
        for k, y in enumerate(body_ret.operands):
            if state[k] is None or not _adds_to(y, body_args[k]):
                continue
            init = self.range(inits[k])
            full = self.full(inits[k])
            if init is None or full is None or init.sentinels:
                continue
            probe = list(state)
            probe[k] = Range(0, 0)
            yields, _ = one_round(probe)
            step = yields[k]
            if step is None or step.sentinels or step.lo > step.hi:
                continue
            lo = init.lo + min(0, trips * step.lo)
            hi = init.hi + max(0, trips * step.hi)
            if full[0] <= lo and hi <= full[1]:
                out[k] = Range(lo, hi)
        return out

    def _trip_count(
        self,
        cond_block: ir.Block,
        cond_args: list[ir.BlockArgument],
        body_args: list[ir.BlockArgument],
        body_ret: ir.Operation,
        state: list[Range | None],
    ) -> int | None:
        """An upper bound on the iterations of a counted loop.

        Recognises a carried counter ``k`` that the condition compares
        (``k < bound`` or ``k <= bound``, the bound a constant or a carried
        value the body passes through unchanged) and that the body increments
        by a constant step of at least 1 (``k + c``), JAX's ``fori_loop`` and
        ``scan`` form.
        """
        cmp = _loop_compare(cond_block)
        if cmp is None:
            return None
        d, a, b = cmp
        if d in ("GT", "GE"):
            a, b, d = b, a, _FLIP[d]
        a, b_arg = block_argument(a), block_argument(b)
        if d not in ("LT", "LE") or a is None or a not in cond_args:
            return None
        k = a.arg_number
        if state[k] is None:
            return None
        if b_arg is not None and b_arg in cond_args:
            j = b_arg.arg_number
            if body_ret.operands[j] != body_args[j] or state[j] is None:
                return None
            bound = state[j].plain()
        else:
            bc = self.constant(b)
            if bc is None:
                return None
            bound = Range(min(bc), max(bc))
        step_op = defining_op(body_ret.operands[k])
        if step_op is None or spec_of(step_op.name).computes is not Computes.ADD:
            return None
        x, y = step_op.operands[0], step_op.operands[1]
        if x != body_args[k]:
            x, y = y, x
        if x != body_args[k]:
            return None
        steps = self.constant(y)
        if steps is None or min(steps) < 1:
            return None
        start = state[k].plain().lo
        span = bound.hi - start + (1 if d == "LE" else 0)
        return max(0, -(-span // min(steps)))

    def _refine(
        self, cond_block: ir.Block, args: list[ir.BlockArgument], state: list[Range | None]
    ) -> list[Range | None]:
        """Intersect the carried values' ranges with the loop condition
        (``compare LT/LE/GT/GE arg, bound`` returned by the cond region)."""
        cmp = _loop_compare(cond_block)
        if cmp is None:
            return state
        direction, a, b = cmp
        out = list(state)
        for idx, arg in enumerate(args):
            if a == arg:
                other, d = b, direction
            elif b == arg:
                other, d = a, _FLIP.get(direction, "")
            else:
                continue
            cur = out[idx]
            if cur is None or cur.sentinels:
                continue
            bound = self.range(other)
            if bound is None:
                continue
            bound = bound.plain()
            lo, hi = cur.lo, cur.hi
            if d == "LT":
                hi = min(hi, bound.hi - 1)
            elif d == "LE":
                hi = min(hi, bound.hi)
            elif d == "GT":
                lo = max(lo, bound.lo + 1)
            elif d == "GE":
                lo = max(lo, bound.lo)
            if lo <= hi:
                out[idx] = Range(lo, hi)
        return out

    # ------------------------------------------------------------ reductions
    def reduction_state(self, op: ir.Operation) -> tuple[list[Range | None], list[Range | None]]:
        """(ranges of the body's arguments, ranges of the results) of a
        reduction-like op: reduce, reduce_window, scatter, all_reduce,
        reduce_scatter.

        Every accumulator is an initial value, an input element or a body
        result: the body is evaluated from the join of inputs and initial
        values until its results stay inside (widened otherwise), per output.
        A body that adds its two arguments of one output is bounded by the
        number of elements it can combine.
        """
        key = ("reduce", op)
        cached = self._lookup(key)
        if cached is not None:
            return cached
        kind = spec_of(op.name).reduction
        operands = list(op.operands)
        results = list(op.results)
        n = len(results)
        count: int | None
        if kind is Reduction.SCATTER:
            inputs, updates = operands[:n], operands[n + 1 :]
            seeds = [self.moved(results[i], [inputs[i], updates[i]]) for i in range(n)]
            init_of = inputs
            elems = updates
            count = _static_size(updates[0]) if updates else None
        elif kind is Reduction.REPLICAS:
            seeds = [self.moved(r, [x]) for x, r in zip(operands, results)]
            init_of = None
            elems = operands
            count = _replica_count(op)
        else:
            inputs, inits = operands[:n], operands[n:]
            seeds = [self.moved(results[i], [inputs[i], inits[i]]) for i in range(n)]
            init_of = inits
            elems = inputs
            count = _reduced_count(op)
        fulls = [self.full(r) for r in results]
        block = op.regions[0].blocks[0] if len(op.regions) and len(op.regions[0].blocks) else None
        if block is None:
            out = [Range(*f) if f is not None else None for f in fulls]
            self._layers[-1][key] = ([], out)
            return [], out
        args = list(block.arguments)
        ret = list(block.operations)[-1]
        acc = list(seeds)

        def arg_ranges(acc: list[Range | None]) -> list[Range | None]:
            return [acc[i % n] if i % n < len(acc) else None for i in range(len(args))]

        for it in range(_MAX_ITERATIONS):
            layer: dict[Any, Any] = {key: (arg_ranges(acc), acc)}
            for a, r in zip(args, arg_ranges(acc)):
                if r is not None:
                    layer[a] = r
            self._layers.append(layer)
            try:
                outs = [self.range(x) for x in ret.operands]
            finally:
                self._layers.pop()
            new = []
            for k in range(n):
                if acc[k] is None or k >= len(outs):
                    new.append(acc[k])
                    continue
                o = outs[k] if outs[k] is not None else Range(*fulls[k])  # type: ignore[misc]
                nk: Range | None = join([acc[k], o])  # type: ignore[list-item]
                if it >= _WIDEN_AFTER:
                    nk = _widen(nk, acc[k], fulls[k])
                new.append(nk)
            if new == acc:
                break
            acc = new
        else:
            acc = [Range(*f) if f is not None else None for f in fulls]
        # sums: bounded by the number of elements combined
        if count is not None:
            for k in range(n):
                if acc[k] is None or k >= len(ret.operands):
                    continue
                add = defining_op(ret.operands[k])
                if add is None or spec_of(add.name).computes is not Computes.ADD:
                    continue
                if k + n >= len(args) or {add.operands[0], add.operands[1]} != {args[k], args[k + n]}:
                    continue
                x = self.range(elems[k])
                init = self.range(init_of[k]) if init_of is not None else Range(0, 0)
                if x is None or init is None or x.sentinels or init.sentinels:
                    continue
                bound = _sum_bound(x, init, count, kind is Reduction.SCATTER)
                f = fulls[k]
                if f is not None and f[0] <= bound.lo and bound.hi <= f[1]:
                    acc[k] = bound
        state = (arg_ranges(acc), acc)
        self._layers[-1][key] = state
        return state

    def range_given(self, v: ir.Value, pred: ir.Value, truth: bool) -> Range | None:
        """The range of ``v`` in the elements where ``pred`` is ``truth``.

        Where ``pred`` compares an integer ``x`` with a constant, ``x`` is
        narrowed to the values that give ``truth``, and so is ``v`` if it is
        ``x`` or computed from ``x`` by one op (JAX's ``where(i < 0, i + n,
        i)`` of every index it normalizes: ``i + n`` is only selected where
        ``i < 0``), also where the select is in a callee (``jnp.where``'s own
        jit) and ``v`` and ``pred`` are its arguments.  Otherwise ``v``'s
        range."""
        if self._bindings:
            v, pred = self._caller_value(v), self._caller_value(pred)
        base = self.range(v)
        if base is None or base.sentinels:
            return base
        cond = self._condition(pred, truth)
        if cond is None:
            return base
        x, lo, hi = cond
        rx = self.range(x)
        if rx is None or rx.sentinels or rx.empty:
            return base
        nx = Range(max(rx.lo, lo), min(rx.hi, hi))
        if nx.empty:
            return base
        if v == x:
            return nx
        op = defining_op(v)
        if op is None or not any(o == x for o in op.operands):
            return base
        transfer = self._spec_of(op.name).transfer
        if transfer is None:
            return base
        self._layers.append({x: nx})
        try:
            results = transfer(self, op)
        finally:
            self._layers.pop()
        r = next((r for res, r in zip(op.results, results) if res == v), None)
        if r is None or r.sentinels or r.empty:
            return base
        return Range(max(r.lo, base.lo), min(r.hi, base.hi))

    def _condition(self, pred: ir.Value, truth: bool) -> tuple[ir.Value, int, int] | None:
        """``(x, lo, hi)``: where ``pred`` is ``truth``, ``lo <= x <= hi``
        (``pred`` an integer compare of ``x`` with a constant)."""
        op = defining_op(pred)
        if op is None or self._spec_of(op.name).computes is not Computes.COMPARE:
            return None
        a, b = op.operands
        full = self.full(a)
        if full is None or "compare_type" not in op.attributes:
            return None
        kind = str(op.attributes["compare_type"]).split()[-1].rstrip(">")
        if kind != ("UNSIGNED" if full[0] == 0 else "SIGNED"):
            return None
        direction = _direction(op)
        mirror = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}
        cb = self.constant(b)
        if cb is not None and len(set(cb)) == 1:
            x, c = a, cb[0]
        else:
            ca = self.constant(a)
            if ca is None or len(set(ca)) != 1:
                return None
            x, c, direction = b, ca[0], mirror[direction]
        if not truth:
            direction = {"LT": "GE", "LE": "GT", "GT": "LE", "GE": "LT", "EQ": "NE", "NE": "EQ"}[direction]
        lo, hi = full
        bounds = {"LT": (lo, c - 1), "LE": (lo, c), "GT": (c + 1, hi), "GE": (c, hi), "EQ": (c, c)}
        if direction not in bounds:
            return None
        return (x, *bounds[direction])

    def guarded(self, v: ir.Value) -> Range | None:
        """The range of ``v``'s elements that reach a result: where every use
        of ``v`` is a branch of a ``select`` (not its predicate), the join of
        its ranges where each select takes it (:meth:`range_given`); else
        None."""
        parts = []
        for use in v.uses:
            user = _as_op(use.owner)
            spec = self._spec_of(user.name)
            if spec.computes is Computes.SELECT and use.operand_number in (1, 2):
                parts.append(self.branch_range(v, user.operands[0], use.operand_number == 1))
            elif spec.call:
                # a branch of a select inside the callee (jnp.where's own
                # jit), whose predicate is an argument of the call
                given = self._guarded_in_callee(v, user, use.operand_number)
                if given is None:
                    return None
                parts.extend(given)
            else:
                return None
        if not parts or any(p is None for p in parts):
            return None
        return join(parts)  # type: ignore[arg-type]

    def branch_range(self, v: ir.Value, pred: ir.Value, truth: bool) -> Range | None:
        """A select's branch ``v`` where ``pred`` is ``truth``
        (:meth:`range_given`); where both are arguments of a private function
        evaluated outside any call, the join over its call sites."""
        if not self._bindings:
            at_calls = self._guarded_at_call_sites(v, pred, truth)
            if at_calls is not None:
                if any(r is None for r in at_calls):
                    return self.range(v)
                return join(at_calls)  # type: ignore[arg-type]
        return self.range_given(v, pred, truth)

    def _guarded_at_call_sites(self, v: ir.Value, pred: ir.Value, truth: bool) -> list[Range | None] | None:
        """Where ``v`` and ``pred`` are arguments of one private function (a
        select in ``jnp.where``'s own jit): ``v``'s range where ``pred`` is
        ``truth``, at each of its call sites; else ``None``."""
        a, p = block_argument(v), block_argument(pred)
        if a is None or p is None or a.owner != p.owner:
            return None
        fn = _as_op(a.owner.owner)
        if not spec_of(fn.name).function or _is_public(fn):
            return None
        _, callers = self._symbols()
        sites = callers.get(ir.StringAttr(fn.attributes["sym_name"]).value, [])
        if not sites:
            return None
        return [self.range_given(call.operands[a.arg_number], call.operands[p.arg_number], truth)
                for call in sites]

    def _guarded_in_callee(self, v: ir.Value, call: ir.Operation, k: int) -> list[Range | None] | None:
        """The ranges of ``v``, the call's operand ``k``, where each select of
        the callee takes it; ``None`` unless every use of the callee's
        argument ``k`` is a branch of a select whose predicate is an argument
        of the callee."""
        callee = _callee_of(call)
        if callee is None:
            return None
        block = callee.regions[0].blocks[0]
        args = list(block.arguments)
        if k >= len(args):
            return None
        parts: list[Range | None] = []
        for use in args[k].uses:
            user = _as_op(use.owner)
            if self._spec_of(user.name).computes is not Computes.SELECT or use.operand_number not in (1, 2):
                return None
            pred = block_argument(user.operands[0])
            if pred is None or pred.owner != block:
                return None
            parts.append(self.range_given(v, call.operands[pred.arg_number], use.operand_number == 1))
        return parts or None

    def moved(self, result: ir.Value, sources: Sequence[ir.Value]) -> Range | None:
        """The range of ``result`` whose elements are elements of ``sources``
        (joined, sentinels kept); the full range if a source has another
        element type."""
        full = self.full(result)
        if full is None:
            return None
        parts = []
        element = ir.ShapedType(result.type).element_type
        for x in sources:
            r = self.range(x)
            if r is None or ir.ShapedType(x.type).element_type != element:
                return Range(*full)
            parts.append(r)
        return join(parts) if parts else Range(*full)


def _adds_to(y: ir.Value, acc: ir.Value) -> bool:
    """Whether ``y`` is ``acc + s`` with ``s`` independent of ``acc``, through
    calls (a call's result is its callee's returned value, a callee's
    argument the call's operand)."""
    found = _follow_add(y, acc, {}, 0)
    return found

def _resolve(v: ir.Value, binding: dict[Any, ir.Value]) -> ir.Value:
    while v in binding:
        v = binding[v]
    return v


def _callee_of(call: ir.Operation) -> ir.Operation | None:
    fn = callee_of(call)
    return fn if fn is not None and len(fn.regions[0].blocks) == 1 else None


def _call_binding(call: ir.Operation, callee: ir.Operation, binding: dict[Any, ir.Value]) -> dict[Any, ir.Value]:
    inner = dict(binding)
    for a, x in zip(callee.regions[0].blocks[0].arguments, call.operands):
        inner[a] = x
    return inner


def _follow_add(y: ir.Value, acc: ir.Value, binding: dict[Any, ir.Value], depth: int) -> bool:
    if depth > 8:
        return False
    y = _resolve(y, binding)
    op = defining_op(y)
    if op is None:
        return False
    spec = spec_of(op.name)
    if spec.call:
        callee = _callee_of(op)
        if callee is None:
            return False
        ret = list(callee.regions[0].blocks[0].operations)[-1]
        k = next(i for i, r in enumerate(op.results) if r == y)
        return _follow_add(ret.operands[k], acc, _call_binding(op, callee, binding), depth + 1)
    if spec.computes is not Computes.ADD:
        return False
    a, b = op.operands[0], op.operands[1]
    for x, s in ((a, b), (b, a)):
        if _resolve(x, binding) == acc and not _depends(s, acc, binding):
            return True
    return False


def _depends(v: ir.Value, target: ir.Value, binding: dict[Any, ir.Value], budget: list[int] | None = None) -> bool:
    """Whether ``v`` may depend on ``target`` (conservative: True when unsure)."""
    budget = budget if budget is not None else [2000]
    work = [(v, binding)]
    seen: set[Any] = set()
    while work:
        budget[0] -= 1
        if budget[0] < 0:
            return True
        x, bind = work.pop()
        x = _resolve(x, bind)
        if x == target:
            return True
        if x in seen:
            continue
        seen.add(x)
        op = defining_op(x)
        if op is None:
            owner = _as_op(x.owner.owner)
            if spec_of(owner.name).function:
                continue  # an argument of the function being analysed, not the target
            work.extend((o, bind) for o in owner.operands)
            continue
        if spec_of(op.name).call:
            callee = _callee_of(op)
            if callee is None:
                work.extend((o, bind) for o in op.operands)
                continue
            inner = _call_binding(op, callee, bind)
            ret = list(callee.regions[0].blocks[0].operations)[-1]
            work.extend((o, inner) for o in ret.operands)
            continue
        work.extend((o, bind) for o in op.operands)
        for region in op.regions:
            for block in region.blocks:
                for inner_op in block.operations:
                    work.extend((o, bind) for o in _as_op(inner_op).operands)
    return False


def _widen(new: Range | None, old: Range | None, full: Interval | None) -> Range | None:
    if new is None or old is None or full is None:
        return new
    lo = full[0] if new.lo < old.lo else new.lo
    hi = full[1] if new.hi > old.hi else new.hi
    return Range(lo, hi, new.sentinels)


def _sum_bound(x: Range, init: Range, count: int, scatter: bool) -> Range:
    """A sum of at most ``count`` elements of ``x``: with ``init`` once (a
    scatter's input), or possibly several times (a reduction's initial value,
    which XLA may apply per partial sum) unless it is zero."""
    if scatter:
        return Range(init.lo + min(0, count * x.lo), init.hi + max(0, count * x.hi))
    if init.lo == 0 and init.hi == 0:
        return Range(min(0, count * x.lo), max(0, count * x.hi))
    j = join([x, init])
    terms = 2 * count + 1
    return Range(min(0, terms * j.lo), max(0, terms * j.hi))


def _static_size(v: ir.Value) -> int | None:
    t = ir.RankedTensorType(v.type)
    return int(math.prod(t.shape)) if t.has_static_shape else None


def constant_elements(op: ir.Operation) -> np.ndarray | None:
    """The integer elements of a constant op, flat, in a numpy integer dtype
    that holds them (unsigned types read as unsigned); a splat gives one
    element.  ``None`` for a non-integer or unreadable constant."""
    attr = as_attribute(op.attributes["value"], ir.DenseIntElementsAttr)
    if attr is None:
        return None
    elem = ir.IntegerType(ir.ShapedType(attr.type).element_type)
    w = elem.width
    unsigned = elem.is_unsigned or w == 1
    if attr.is_splat:
        v = int(ir.IntegerAttr(attr.get_splat_value()).value)
        if unsigned:
            v %= 1 << w
        return np.array([v], dtype=np.uint64 if unsigned else np.int64)
    vals = np.asarray(attr).ravel()
    if unsigned:
        if w == 1:
            return (vals != 0).astype(np.uint64)
        if w == 64:
            return vals.astype(np.uint64)
        return vals.astype(np.int64) % (1 << w)
    return vals.astype(np.int64)


def _has_sentinel(vals: np.ndarray, op: ir.Operation) -> bool:
    elem = ir.IntegerType(ir.ShapedType(op.results[0].type).element_type)
    if elem.width != 64:
        return False
    own = (2**64 - 1,) if elem.is_unsigned else (2**63 - 1, -(2**63))
    return any((vals == np.array(s, dtype=vals.dtype)).any() for s in own)


def _loop_compare(cond_block: ir.Block) -> tuple[str, ir.Value, ir.Value] | None:
    """``(direction, lhs, rhs)`` of the compare a while loop's condition
    region returns, if it returns one."""
    ops = list(cond_block.operations)
    if not ops or not len(ops[-1].operands):
        return None
    pred = defining_op(ops[-1].operands[0])
    if pred is None or spec_of(pred.name).computes is not Computes.COMPARE:
        return None
    return _direction(pred), pred.operands[0], pred.operands[1]


def _arg_name(fn: ir.Operation, i: int) -> str | None:
    """The argument's name from its location (JAX writes ``loc("tokens")``)."""
    blocks = fn.regions[0].blocks
    if not len(blocks) or i >= len(blocks[0].arguments):
        return None
    loc = blocks[0].arguments[i].location
    if location_kind(loc) == "name":
        return loc.name_str
    text = str(loc)
    if text.startswith('loc("') and text.endswith('")'):
        return text[5:-2]
    return None


def _replica_count(op: ir.Operation) -> int | None:
    return replica_group_size(op)


def _reduced_count(op: ir.Operation) -> int | None:
    """How many elements one output element of a reduce (its ``dimensions``)
    or reduce_window (its ``window_dimensions``) sums."""
    if "dimensions" in op.attributes:
        t = ir.RankedTensorType(op.operands[0].type)
        if not t.has_static_shape:
            return None
        dims = ir.DenseI64ArrayAttr(op.attributes["dimensions"])
        return int(math.prod(t.shape[d] for d in dims))
    if "window_dimensions" in op.attributes:
        dims = ir.DenseI64ArrayAttr(op.attributes["window_dimensions"])
        return int(math.prod(dims))
    return None
