"""Rewriting a module into forms a target computes exactly.

:func:`legalize` rewrites, in place, every op that a target
(:class:`~no64.targets.Target`) would compute inexactly on a narrower
datapath, or refuses for its integer elements, where the op table gives the
op a ``legalize`` rule (:class:`~no64.spec.registry.OpSpec`): an integer
``dot_general`` on Neuron becomes limb dots whose every partial sum is
exact in f32 (:mod:`no64.rules.limbs`).  Which ops it touches is what
:func:`~no64.targets.legality.check_target` would report for them:

* an op on a datapath (:class:`~no64.targets.Datapath`) that the range
  analysis does not prove exact there is split so that every operand,
  product and partial sum stays within the datapath's exact range -- as
  integer ops of its kind, which the check then proves exact from their
  operands' ranges (``in_f32=True``: as f32 ops, like the next case);
* an op the target refuses and says it compiles on 32-bit elements within a
  bound (:attr:`~no64.targets.Refusal.split_within`: Metal's scatter that
  combines 64-bit elements, for its 32-bit atomics) is split the same way
  into such ops, within that bound;
* an op the target refuses for its integer elements (a
  :class:`~no64.targets.Refusal` ``"integer"``: Trn2's integer dot) becomes
  f32 ops of its kind on integers converted to f32, each within f32's exact
  range (:data:`~no64.targets.F32_EXACT`), and no integer op of its kind is
  left;
* an op the target refuses for its several inputs (a variadic ``reduce``),
  for the comparisons in its comparator (a ``sort`` testing equality) or
  for the width of its elements (an arithmetic right shift of ``int64``),
  or refuses outright (``reduce_precision``), is rewritten by its
  ``unfold`` rule (:mod:`no64.rules.unfold`, :mod:`no64.rules.rounding`)
  into a form the target compiles, with the same results;
* an op proven exact where it is, and every other op, is left as it is.

Before all of these, on a target that lacks 16-bit integers
(:attr:`~no64.targets.Target.widens`: Neuron), every ``i16``/``ui16``
value is carried as a 32-bit one with the 16-bit wrap-around kept exact
(:func:`no64.transforms.widen.widen`; the entry's signature is kept), or the
module is refused (:class:`~no64.errors.UnsupportedOpError`) unchanged.

An op with no exact form (a contraction over more than 2**24 elements) is
left as it is, with why, in :attr:`Legalized.left`; the check still reports
it.  The module's integer inputs are taken at their types' full range
unless ``input_ranges`` says otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..analysis.ranges import RangeAnalysis
from ..ir._mlir import ir
from ..ir.locations import SourceLocation, decode_location
from ..report import counted
from ..spec.protocols import Legalization
from ..spec.registry import form_of, spec_of
from ..spec.walk import all_ops
from ..targets import F32_EXACT, SEVERAL_INPUTS, Target
from ..targets.legality import inexact_reason, refusal_reason
from .widen import holds_narrow, widen

__all__ = ["LegalizedOp", "Legalized", "legalize", "may_legalize"]


@dataclasses.dataclass(frozen=True)
class LegalizedOp:
    """One op :func:`legalize` rewrote (``detail``: what it became, ``ops``
    how many ops of its kind; ``why``: what the target refuses or computes
    inexactly in it, in the vendor's words) or left (``detail``: why, ``ops``
    0)."""

    op: str
    location: SourceLocation
    detail: str
    ops: int = 0
    why: str = ""

    def __str__(self) -> str:
        because = f" (the target: {self.why})" if self.why else ""
        return f"{self.op} at {self.location}: {self.detail}{because}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "location": self.location.to_dict(), "detail": self.detail, "ops": self.ops,
                "why": self.why}


@dataclasses.dataclass
class Legalized:
    """What :func:`legalize` did to a module for ``target``."""

    target: str
    rewritten: list[LegalizedOp] = dataclasses.field(default_factory=list)
    left: list[LegalizedOp] = dataclasses.field(default_factory=list)
    #: The 16-bit integer values carried in 32 bits (targets without 16-bit
    #: integers, :mod:`no64.transforms.widen`): how many were retyped, and
    #: the ops given a fix-up to keep the 16-bit wrap-around.
    widened_values: int = 0
    widened: list[LegalizedOp] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether :func:`legalize` changed the module: an op rewritten, or a
        16-bit integer value carried in 32 bits (a module may need only the
        latter)."""
        return bool(self.rewritten) or bool(self.widened_values)

    def summary(self) -> str:
        """One line: how many ops were rewritten into how many, and how many left."""
        n = len(self.rewritten)
        line = (f"target {self.target}: {counted(n, 'op')} rewritten into "
                f"{counted(sum(r.ops for r in self.rewritten), 'exact op')} of their kind")
        if self.left:
            line += f"; {len(self.left)} left as {'it is' if len(self.left) == 1 else 'they are'} (no exact form)"
        if self.widened_values:
            line += (f"; 16-bit integers carried in 32 bits ({counted(self.widened_values, 'value')} retyped, "
                     f"{counted(len(self.widened), 'op')} fixed up)")
        return line

    def explain(self, finding: Any) -> str:
        """A :class:`~no64.targets.legality.TargetFinding` of the legalized
        module, with why no64 left its op as it is (where it did)."""
        for x in self.left:
            if x.op == finding.op and x.location == finding.location:
                return f"{finding}; no64 cannot make it exact: {x.detail}"
        return str(finding)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "rewritten": [r.to_dict() for r in self.rewritten],
                "left": [r.to_dict() for r in self.left], "widened_values": self.widened_values,
                "widened": [r.to_dict() for r in self.widened]}


def _integer_refusals(op: ir.Operation, target: Target) -> bool:
    """Whether ``target`` refuses ``op`` for its integer elements."""
    form = form_of(op)
    return any(r.form is form and r.when == "integer" and refusal_reason(op, r) is not None
               for r in target.refuses)


def _split_bound(op: ir.Operation, target: Target) -> int | None:
    """The smallest bound of the refusals of ``op`` that ``target`` answers by
    splitting it into ops on 32-bit elements (:attr:`Refusal.split_within`),
    if any refuses it."""
    form = form_of(op)
    bounds = [r.split_within for r in target.refuses
              if r.form is form and r.split_within and refusal_reason(op, r) is not None]
    return min(bounds) if bounds else None


def _candidates(root: ir.Operation, target: Target) -> list[ir.Operation]:
    """The ops with a ``legalize`` rule whose form ``target`` computes on a
    datapath, refuses for integer elements or answers by a split (before any
    range is read)."""
    forms = ({d.form for d in target.datapaths}
             | {r.form for r in target.refuses if r.when == "integer" or r.split_within})
    if not forms:
        return []
    return [op for op in all_ops(root) if spec_of(op.name).legalize is not None and form_of(op) in forms]


def _unfoldable(root: ir.Operation, target: Target) -> list[ir.Operation]:
    """The ops with an ``unfold`` rule that ``target`` refuses for their
    several inputs (a variadic ``reduce``, a ``reduce_window`` of more than
    two operands), their comparator (a ``sort`` testing equality) or
    outright (``reduce_precision``), innermost first."""
    refusals = [r for r in target.refuses if r.when in _UNFOLDED]
    if not refusals:
        return []
    found = [op for op in all_ops(root)
             if spec_of(op.name).unfold is not None
             and any(r.form is form_of(op) and refusal_reason(op, r) is not None for r in refusals)]
    return found[::-1]


#: The refusals an op's ``unfold`` rule answers (``"always"``: an op the
#: target never compiles, ``reduce_precision``, computed another way).
_UNFOLDED = SEVERAL_INPUTS | {"comparator", "always", "not-32-bit", "64-bit-float", "float64-int64"}


def may_legalize(module: ir.Module | ir.Operation, target: Target) -> bool:
    """Whether :func:`legalize` may rewrite something in ``module`` (cheap:
    reads no range)."""
    root = module.operation if isinstance(module, ir.Module) else module
    with root.context:
        return (bool(_candidates(root, target)) or bool(_unfoldable(root, target))
                or (bool(target.widens) and holds_narrow(root, target)))


def legalize(module: ir.Module | ir.Operation, target: Target,
             input_ranges: Mapping[int | str, tuple[int, int]] | None = None,
             in_f32: bool = False) -> Legalized:
    """Rewrite, in place, the ops of ``module`` that ``target`` computes
    inexactly or refuses for their integer elements into exact forms (see
    the module docstring); ``in_f32``: in f32 also where the target computes
    the integer form."""
    root = module.operation if isinstance(module, ir.Module) else module
    out = Legalized(target.name)
    with root.context:
        carried = widen(root, target)
        out.widened_values = carried.retyped
        out.widened = [LegalizedOp(name, where, f"16-bit integers carried in 32 bits: {detail}", 1)
                       for name, where, detail in carried.fixed]
        _unfold(root, target, out)
        candidates = _candidates(root, target)
        if not candidates:
            return out
        datapaths = {d.form: d for d in target.datapaths}
        ranges = RangeAnalysis(root, input_ranges)
        planned: list[Legalization] = []
        # every range is read before the first op changes
        for op in candidates:
            spec = spec_of(op.name)
            form = form_of(op)
            assert spec.legalize is not None and form is not None
            refused = _integer_refusals(op, target)
            split = _split_bound(op, target)
            d = datapaths.get(form)
            inexact = None if d is None else inexact_reason(op, d, ranges)
            if not refused and split is None and inexact is None:
                continue
            f32 = refused or in_f32
            bounds = [b for b in (split, None if d is None else d.exact_below) if b is not None]
            bound = min(bounds) if bounds else F32_EXACT
            if f32:
                bound = min(bound, F32_EXACT)
            got = spec.legalize(op, ranges, bound, f32)
            where = decode_location(op.location)
            if isinstance(got, str):
                out.left.append(LegalizedOp(op.name, where, got))
            else:
                planned.append(got)
                why = _refused_why(op, target) or inexact or ""
                out.rewritten.append(LegalizedOp(op.name, where, got.summary, got.ops, why))
        for how in planned:
            how.apply()
    return out


def _unfold(root: ir.Operation, target: Target, out: Legalized) -> None:
    """Rewrite the ops ``target`` refuses for their several inputs into their
    bodies on whole tensors, and the sorts it refuses for their comparators
    into sorts whose comparators it takes (:mod:`no64.rules.unfold`),
    innermost first; an op with no such form is left, with why, in
    ``out.left``."""
    for op in _unfoldable(root, target):
        rule = spec_of(op.name).unfold
        assert rule is not None
        got = rule(op)
        where = decode_location(op.location)
        if isinstance(got, str):
            out.left.append(LegalizedOp(op.name, where, got))
        else:
            out.rewritten.append(LegalizedOp(op.name, where, got.summary, got.ops, _refused_why(op, target)))
            got.apply()


def _refused_why(op: ir.Operation, target: Target) -> str:
    """The reasons ``target`` gives for refusing ``op`` ("" if it does not)."""
    form = form_of(op)
    reasons = [why for r in target.refuses if r.form is form and (why := refusal_reason(op, r)) is not None]
    return "; ".join(f"refuses it: {why}" for why in reasons)
