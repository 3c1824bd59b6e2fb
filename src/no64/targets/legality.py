"""What a module holds that a target would refuse or compute inexactly.

:func:`check_target` walks a module once and reports, per op and source
line, against a :class:`~no64.targets.Target`:

* ``type``: a 64-bit element type the target lacks (what :func:`no64.demote`
  removes), or a 16-bit integer type it carries in 32 bits
  (:attr:`~no64.targets.Target.widens`, what
  :func:`no64.transforms.legalize.legalize` widens) other than at the
  entry's boundary (its arguments, and the converts of its results right
  before return);
* ``refused``: an op of a form the target does not compile
  (:class:`~no64.targets.Refusal`), with the vendor's code and reason;
* ``inexact``: an integer op the target computes on a narrower datapath
  (:class:`~no64.targets.Datapath`) whose operands, products or partial
  results the range analysis cannot prove within the datapath's exact
  range (for Neuron's f32: magnitude 2**24) -- for the program's own 32-bit
  integers too; a scatter that only stores its updates computes nothing and
  is not reported, and one that takes the maximum or minimum (as a
  collective that does) sums nothing: its values alone must be within that
  range.  The analysis takes the module's integer inputs at their
  types' full range unless ``input_ranges`` says otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..analysis.ranges import RangeAnalysis, constant_ints
from ..ir._compat import block_argument
from ..ir._mlir import defining_op, ir, stablehlo
from ..ir.locations import SourceLocation, decode_location
from ..ir.types import wide_kind
from ..kinds import OpForm
from ..spec.registry import Computes, Reduction, form_of, spec_of
from ..spec.walk import all_ops, enclosing_function, extremum, is_public
from . import Datapath, Refusal, Target

__all__ = ["TargetFinding", "check_target", "inexact_reason", "refusal_reason", "trip_count"]

_ALLOWED_DIRECTIONS = frozenset({"LT", "LE", "GT", "GE"})
#: The forms whose ops sum: their partial sums lie in the result's range
#: unless its type clamped it.
_SUMS = frozenset({OpForm.MATMUL, OpForm.SCATTER, OpForm.COLLECTIVE})


@dataclasses.dataclass(frozen=True)
class TargetFinding:
    """One thing a target would refuse (``kind`` ``"type"`` or ``"refused"``)
    or compute inexactly (``"inexact"``)."""

    kind: str
    op: str
    location: SourceLocation
    target: str
    detail: str
    code: str = ""
    source: str = ""

    def __str__(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{self.op} at {self.location}: {self.target} {self.kind}{code}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "op": self.op, "location": self.location.to_dict(), "target": self.target,
                "detail": self.detail, "code": self.code, "source": self.source}


def _short(t: ir.Type) -> str | None:
    """A 64-bit element type's name in :data:`~no64.targets.WIDE_TYPES`
    (``"i64"``, ``"u64"``, ``"f64"``, ``"c128"``); ``None`` for any other."""
    return wide_kind(t.element_type if isinstance(t, ir.ShapedType) else t)


def _element(v: ir.Value) -> ir.Type:
    t = v.type
    return t.element_type if isinstance(t, ir.ShapedType) else t


def _is_int(v: ir.Value) -> bool:
    e = _element(v)
    return isinstance(e, ir.IntegerType) and e.width > 1


def _directions(op: ir.Operation) -> set[str]:
    """The directions of the comparisons in ``op``'s regions, at any depth."""
    found = set()
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                if spec_of(inner.name).computes is Computes.COMPARE:
                    found.add(str(stablehlo.ComparisonDirectionAttr(inner.attributes["comparison_direction"]).value))
                found |= _directions(inner)
    return found


def refusal_reason(op: ir.Operation, r: Refusal) -> str | None:
    """Why ``op`` falls under refusal ``r`` (``None``: it does not)."""
    when = r.when
    if when == "always":
        return r.reason
    if when == "variadic":
        n = len(op.results)
        return f"{r.reason} ({n} inputs)" if n > 1 else None
    if when == "variadic-adding":
        n = len(op.results)
        adds = any(spec_of(inner.name).computes is Computes.ADD for inner in all_ops(op))
        return f"{r.reason} ({n} inputs)" if n > 1 and adds else None
    if when == "variadic-dilated":
        n = len(op.results)
        dilated = "window_dilations" in op.attributes and any(
            d != 1 for d in ir.DenseI64ArrayAttr(op.attributes["window_dilations"]))
        return f"{r.reason} ({n} inputs, a dilated window)" if n > 1 and dilated else None
    if when == "operands!=2":
        n = len(op.operands)
        return f"{r.reason} (it has {n})" if n != 2 else None
    if when == "not-32-bit":
        e = _element(op.results[0])
        width = getattr(e, "width", None)
        return f"{r.reason} ({e})" if width is not None and width != 32 else None
    if when == "integer":
        return f"{r.reason} ({_element(op.operands[0])})" if _is_int(op.operands[0]) else None
    if when == "algorithm":
        algorithm = str(stablehlo.RngAlgorithmAttr(op.attributes["rng_algorithm"]).value)
        return f"{r.reason} ({algorithm})" if algorithm != "DEFAULT" else None
    if when == "comparator":
        found = _directions(op) - _ALLOWED_DIRECTIONS
        return f"{r.reason} (its comparator uses {', '.join(sorted(found))})" if found else None
    if when == "64-bit-integer":
        wide = sorted({k for v in (*op.operands, *op.results) if (k := _short(v.type)) in ("i64", "u64")})
        return f"{r.reason} ({', '.join(wide)})" if wide else None
    if when == "64-bit-float":
        wide = sorted({k for v in (*op.operands, *op.results) if (k := _short(v.type)) in ("f64", "c128")})
        return f"{r.reason} ({', '.join(wide)})" if wide else None
    if when == "float64-int64":
        kinds = {_short(op.operands[0].type), _short(op.results[0].type)}
        return f"{r.reason} ({' -> '.join(str(_short(v.type)) for v in (op.operands[0], op.results[0]))})" \
            if "f64" in kinds and kinds & {"i64", "u64"} else None
    if when == "dynamic-trip-count":
        return None if trip_count(op) is not None else f"{r.reason} (its trip count is not static)"
    if when == "64-bit-combining":
        if any(_short(v.type) in ("i64", "u64") for v in op.results) and not (
                "unique_indices" in op.attributes and ir.BoolAttr(op.attributes["unique_indices"]).value):
            return r.reason
        return None
    raise ValueError(f"unknown refusal condition {when!r}")


_MIRRORED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE", "EQ": "EQ"}


def _one_int(v: ir.Value) -> int | None:
    found = constant_ints(v)
    return found[0] if found is not None and len(found) == 1 else None


def trip_count(op: ir.Operation) -> int | None:
    """How many times the ``while`` loop ``op`` runs its body, where that is
    fixed: its condition compares a carried counter (started by a constant,
    stepped by adding or subtracting a constant in the body) with a constant
    (``fori_loop`` with constant bounds, ``scan``, no64's own loops); else
    ``None``."""
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    predicate = defining_op(list(cond.operations)[-1].operation.operands[0])
    if predicate is None or spec_of(predicate.name).computes is not Computes.COMPARE:
        return None
    direction = str(stablehlo.ComparisonDirectionAttr(predicate.attributes["comparison_direction"]).value)
    a, b = predicate.operands
    counter = block_argument(a)
    if counter is None or counter.owner != cond:
        a, b, direction = b, a, _MIRRORED[direction]
        counter = block_argument(a)
    if counter is None or counter.owner != cond:
        return None
    i = counter.arg_number
    bound, start = _one_int(b), _one_int(op.operands[i])
    stepped = defining_op(list(body.operations)[-1].operation.operands[i])
    if bound is None or start is None or stepped is None:
        return None
    computes = spec_of(stepped.name).computes
    if computes not in (Computes.ADD, Computes.SUBTRACT) or len(stepped.operands) != 2:
        return None
    x, y = stepped.operands
    if computes is Computes.ADD and block_argument(y) is not None:
        x, y = y, x
    held = block_argument(x)
    if computes not in (Computes.ADD, Computes.SUBTRACT) or held is None or held.owner != body \
            or held.arg_number != i or (step := _one_int(y)) is None:
        return None
    step = step if computes is Computes.ADD else -step
    if direction == "LE":
        direction, bound = "LT", bound + 1
    elif direction == "GE":
        direction, bound = "GT", bound - 1
    if direction == "LT":
        return 0 if start >= bound else (-(-(bound - start) // step) if step > 0 else None)
    if direction == "GT":
        return 0 if start <= bound else (-(-(start - bound) // -step) if step < 0 else None)
    if direction == "NE":
        n, rest = divmod(bound - start, step) if step else (0, bound - start)
        return n if rest == 0 and n >= 0 else None
    return None


def _moves_only(op: ir.Operation) -> bool:
    """Whether ``op``'s body computes nothing: it returns one of its arguments
    (a scatter that stores its updates, ``.at[].set``), which no datapath
    computes."""
    if not len(op.regions) or not len(op.regions[0].blocks):
        return False
    block = op.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    return all(block_argument(v) is not None for v in ret.operands)


def inexact_reason(op: ir.Operation, d: Datapath, ranges: RangeAnalysis) -> str | None:
    """Why an integer op on datapath ``d`` may not be exact (``None``: proven)."""
    operands = list(op.operands)
    if spec_of(op.name).reduction is Reduction.SCATTER:
        n = len(op.results)  # its indices only address: they are not computed with
        operands = operands[:n] + operands[n + 1:]
    values = [v for v in (*operands, *op.results) if _is_int(v)]
    if not values or not any(_is_int(r) for r in op.results) or _moves_only(op):
        return None
    bound = d.exact_below
    worst = 0
    for v in values:
        r = ranges.range(v)
        if r is None:
            return f"{d.reason}; a value's range is unknown"
        lo, hi = r.interval
        worst = max(worst, abs(lo), abs(hi))
    form = form_of(op)
    if op.results and form in _SUMS and extremum(op) is None:  # a maximum or minimum sums nothing
        # every product and partial sum lies in the result's unclamped range
        # (the transfers' [min(0, lo*n), max(0, hi*n)], a scatter's or a
        # collective's sum of its n terms), which the result's range holds
        # unless the type clamped it
        full = ranges.full(op.results[0])
        r = ranges.range(op.results[0])
        if r is not None and full is not None and r.interval == full:
            what = "products and sums" if form is OpForm.MATMUL else "partial sums"
            return (f"{d.reason}; its {what} are not proven below 2**{bound.bit_length() - 1} "
                    f"in magnitude ({d.computes_in} datapath)")
    if worst > bound:
        return (f"{d.reason}; its values are not proven below 2**{bound.bit_length() - 1} in magnitude "
                f"(up to {worst}, {d.computes_in} datapath)")
    return None


def _narrow(t: ir.Type, target: Target) -> str | None:
    """``"i16"``/``"u16"`` where ``t`` has 16-bit integer elements ``target`` lacks."""
    e = t.element_type if isinstance(t, ir.ShapedType) else t
    if isinstance(e, ir.IntegerType) and e.width == 16:
        kind = "u16" if e.is_unsigned else "i16"
        return kind if target.widened(kind) else None
    return None


def _narrow_lacking(op: ir.Operation, target: Target) -> list[TargetFinding]:
    """The 16-bit integer results and block arguments of ``op`` that ``target``
    carries in 32 bits, but for the entry's boundary."""
    out = []
    where = None
    for i, r in enumerate(op.results):
        kind = _narrow(r.type, target)
        if kind is None:
            continue
        users = [u.owner.operation.name for u in r.uses]
        if spec_of(op.name).convert and users and all(spec_of(u).terminator for u in users):
            continue  # a result converted back right before the entry returns
        where = where or decode_location(op.location)
        out.append(TargetFinding("type", op.name, where, target.name,
                                 f"result #{i} is {r.type}, a 16-bit integer type {target.name} carries in "
                                 f"{target.widened(kind)}"))
    entry = spec_of(op.name).function and is_public(op)
    for region in op.regions:
        for block in region.blocks:
            for a in block.arguments:
                kind = _narrow(a.type, target)
                if kind is None or entry:
                    continue
                out.append(TargetFinding("type", op.name, decode_location(a.location), target.name,
                                         f"argument #{a.arg_number} is {a.type}, a 16-bit integer type "
                                         f"{target.name} carries in {target.widened(kind)}"))
    return out


def _types_lacking(root: ir.Operation, target: Target) -> list[TargetFinding]:
    """The op results and block arguments of a type ``target`` lacks."""
    out = []
    for op in all_ops(root):
        if target.widens:
            out += _narrow_lacking(op, target)
        where = None
        for i, r in enumerate(op.results):
            short = _short(r.type)
            if short is not None and target.lacks(short):
                where = where or decode_location(op.location)
                out.append(TargetFinding("type", op.name, where, target.name,
                                         f"result #{i} is {r.type}, a type {target.name} does not have"))
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    short = _short(a.type)
                    if short is not None and target.lacks(short):
                        out.append(TargetFinding("type", op.name, decode_location(a.location), target.name,
                                                 f"argument #{a.arg_number} is {a.type}, a type "
                                                 f"{target.name} does not have"))
    return out


class _Lines:
    """The source lines of ops, for people: an op that names no file (in a
    library's own jitted function, which JAX lowers to a private function
    whose ops carry no user frame) takes the line of the call that reaches
    it, followed outwards through nested calls."""

    def __init__(self, root: ir.Operation) -> None:
        self.root = root
        self._calls: dict[str, list[ir.Operation]] | None = None

    def of(self, op: ir.Operation) -> SourceLocation:
        where = decode_location(op.location)
        if where.file is not None:
            return where
        if self._calls is None:
            self._calls = {}
            for x in all_ops(self.root):
                if spec_of(x.name).call:
                    self._calls.setdefault(ir.FlatSymbolRefAttr(x.attributes["callee"]).value, []).append(x)
        site = op
        for _ in range(16):
            fn = enclosing_function(site)
            sites = self._calls.get(fn) if fn is not None else None
            if not sites:
                break
            site = sites[0]
            at = decode_location(site.location)
            if at.file is not None:
                return SourceLocation(where.primitive, where.scope, at.file, at.line, at.column, where.raw)
        return where


def check_target(module: ir.Module | ir.Operation, target: Target,
                 input_ranges: Mapping[int | str, tuple[int, int]] | None = None,
                 types: bool = True) -> list[TargetFinding]:
    """Every value of a type ``target`` lacks (unless not ``types``), every op
    it refuses and every integer op it may compute inexactly in ``module``, in
    walk order."""
    root = module.operation if isinstance(module, ir.Module) else module
    out: list[TargetFinding] = []
    with root.context:
        if types:
            out += _types_lacking(root, target)
        refusals: dict[OpForm, list[Refusal]] = {}
        for r in target.refuses:
            refusals.setdefault(r.form, []).append(r)
        datapaths = {d.form: d for d in target.datapaths}
        if not refusals and not datapaths:
            return out
        ranges: RangeAnalysis | None = None
        lines = _Lines(root)
        for op in all_ops(root):
            form = form_of(op)
            if form is None:
                continue
            for r in refusals.get(form, ()):
                why = refusal_reason(op, r)
                if why is not None:
                    out.append(TargetFinding("refused", op.name, lines.of(op), target.name,
                                             why, r.code, r.source))
            d = datapaths.get(form)
            if d is not None:
                if ranges is None:
                    ranges = RangeAnalysis(root, input_ranges)
                why = inexact_reason(op, d, ranges)
                if why is not None:
                    out.append(TargetFinding("inexact", op.name, lines.of(op), target.name,
                                             why, d.code, d.source))
    return out
