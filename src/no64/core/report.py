"""The demotion report: what the pass changed, and every narrowing that is
not trivially exact, with its location."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from .locations import SourceLocation, decode_location

__all__ = ["DemotionReport", "Event"]


class Event:
    """One noteworthy narrowing.

    ``kind`` is one of:

    * ``"sentinel"``: an integer or float extreme (``INT64_MAX``,
      ``INT64_MIN``, ``UINT64_MAX``, float64 max/lowest) mapped to the 32-bit
      extreme, keeping its meaning.
    * ``"saturated"`` / ``"wrapped"``: an out-of-range integer constant
      narrowed under ``integer_policy="saturate"`` / ``"wrap"``.
    * ``"float-inexact"``: f64 constant(s) that lost precision when rounded to
      the nearest f32 (``count`` elements).
    * ``"float-overflow"``: finite f64 constant(s) beyond f32's range, now
      ``inf`` (``count`` elements).
    * ``"rewrite"``: an op replaced by an exact 32-bit equivalent.
    * ``"precision-reduced"``: an op replaced by a 32-bit equivalent that
      computes the same thing with fewer bits (f64 random floats).
    * ``"unproven"``: a narrowing that is exact only for values in the
      32-bit range, which the pass cannot prove (e.g. ``f64 -> i64``
      converts).

    ``location`` is decoded from the op's MLIR location on first use, so
    that recording an event inside the pass costs almost nothing.
    """

    __slots__ = ("kind", "op", "detail", "count", "_loc", "_decoded")

    def __init__(
        self, kind: str, op: str, location: SourceLocation | Any, detail: str, count: int = 1
    ) -> None:
        self.kind = kind
        self.op = op
        self.detail = detail
        self.count = count
        self._loc = location
        self._decoded: SourceLocation | None = (
            location if isinstance(location, SourceLocation) else None
        )

    @property
    def location(self) -> SourceLocation:
        if self._decoded is None:
            self._decoded = decode_location(self._loc)
        return self._decoded

    def to_dict(self) -> dict[str, Any]:
        loc = self.location.to_dict()
        loc["text"] = str(self.location)
        return {"kind": self.kind, "op": self.op, "location": loc, "detail": self.detail, "count": self.count}

    def __repr__(self) -> str:
        return f"Event({self.kind!r}, {self.op!r}, {str(self.location)!r}, {self.detail!r}, {self.count})"

    def __str__(self) -> str:
        n = f" x{self.count}" if self.count != 1 else ""
        return f"[{self.kind}{n}] {self.op} at {self.location}: {self.detail}"


@dataclasses.dataclass
class DemotionReport:
    """What :func:`no64.demote` did to a module.

    Attributes:
      integer_policy: The policy used for out-of-range integer constants.
      values_retyped: Op results and block arguments whose type changed.
      functions_retyped: ``func.func`` ops whose signature changed.
      constants_narrowed: Constant ops whose value was rewritten.
      converts_removed: ``convert`` ops that became no-ops and were erased.
      ops_rewritten: Width-dependent ops replaced by rewrite rules.
      retyped_by_type: Count of retyped values per original element type.
      verdicts: Count of narrowed values per verdict: ``exact``,
        ``sentinel``, ``unproven``, ``overflow``, ``precision-reduced``.
      events: Every sentinel, saturation, wrap, precision loss, overflow and
        rewrite, with its op and location.
    """

    integer_policy: str = "error"
    values_retyped: int = 0
    functions_retyped: int = 0
    constants_narrowed: int = 0
    converts_removed: int = 0
    ops_rewritten: int = 0
    retyped_by_type: dict[str, int] = dataclasses.field(default_factory=dict)
    verdicts: dict[str, int] = dataclasses.field(default_factory=dict)
    events: list[Event] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.values_retyped
            or self.functions_retyped
            or self.constants_narrowed
            or self.ops_rewritten
        )

    def count(self, kind: str) -> int:
        """Total element count of events of ``kind``."""
        return sum(e.count for e in self.events if e.kind == kind)

    def add(self, kind: str, op: str, location: Any, detail: str, count: int = 1) -> None:
        """Record an event; ``location`` is a SourceLocation or an MLIR location."""
        self.events.append(Event(kind, op, location, detail, count))

    def to_dict(self) -> dict[str, Any]:
        return {
            "integer_policy": self.integer_policy,
            "changed": self.changed,
            "values_retyped": self.values_retyped,
            "functions_retyped": self.functions_retyped,
            "constants_narrowed": self.constants_narrowed,
            "converts_removed": self.converts_removed,
            "ops_rewritten": self.ops_rewritten,
            "retyped_by_type": dict(self.retyped_by_type),
            "verdicts": dict(self.verdicts),
            "counts": {k: self.count(k) for k in sorted({e.kind for e in self.events})},
            "events": [e.to_dict() for e in self.events],
        }

    def summary(self) -> str:
        """A short multi-line text for people."""
        lines = [
            f"retyped {self.values_retyped} value(s) in {self.functions_retyped} function signature(s) "
            f"and their bodies; narrowed {self.constants_narrowed} constant(s); "
            f"removed {self.converts_removed} no-op convert(s)"
        ]
        if self.retyped_by_type:
            parts = ", ".join(
                f"{t}: {n}" for t, n in sorted(self.retyped_by_type.items(), key=lambda kv: -kv[1])
            )
            lines.append(f"by element type: {parts}")
        if self.verdicts:
            order = [
                "exact", "sentinel", "saturated", "wrapped", "precision-reduced", "unproven", "overflow"
            ]
            lines.append(
                "verdicts: "
                + ", ".join(f"{k} {self.verdicts[k]}" for k in order if self.verdicts.get(k))
            )
        kinds = collections.Counter()
        for e in self.events:
            kinds[e.kind] += e.count
        if kinds:
            lines.append("events: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        for e in self.events[:50]:
            lines.append(f"  {e}")
        if len(self.events) > 50:
            lines.append(f"  ... and {len(self.events) - 50} more (see --json)")
        lines.append(f"integer policy: {self.integer_policy}")
        return "\n".join(lines)
