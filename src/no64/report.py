"""The demotion report: what the pass changed, and every narrowing that is
not trivially exact, with its location."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable
from typing import Any

from .ir.locations import SourceLocation, decode_location
from .kinds import EXACT_VERDICTS, LOSSY_EVENTS, EventKind, Verdict

__all__ = ["DemotionReport", "Event", "Finding", "Narrowing"]


@dataclasses.dataclass(frozen=True)
class Finding:
    """One 64-bit value (or type attribute) in a module.

    Attributes:
      op: Name of the op that defines the value (``"stablehlo.add"``,
        ``"func.func"`` for signatures).
      role: Which value of the op: ``"result #0"``, ``"function argument #1"``,
        ``"function result #0"``, ``"region 0 block 0 argument #2"``,
        or ``"operand #1"`` (only with ``uses=True``).
      type: The value's type as MLIR prints it.
      location: The decoded location of the op (or block argument).
      function: Symbol name of the enclosing ``func.func``, if any.
      value: Which value, for joining with the report's
        :class:`~no64.report.Narrowing` records: ``("result", i)``,
        ``("argument", n)`` for a block argument (function or region), or
        ``None`` (function results and operands, which are not definitions).
    """

    op: str
    role: str
    type: str
    location: SourceLocation
    function: str | None = None
    value: tuple[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["value"]
        d["location"] = self.location.to_dict()
        return d

    def __str__(self) -> str:
        fn = f" in @{self.function}" if self.function else ""
        where = self.location.where().removeprefix(" at ")
        return f"{self.op} {self.role}: {self.type}{fn}" + (f" ({where})" if where else "")


class Event:
    """One noteworthy narrowing of an op (``count`` elements or values).

    ``kind`` is an :class:`~no64.kinds.EventKind` (see there for each kind).
    ``location`` is decoded from the op's MLIR location on first use, so
    that recording an event inside the pass costs almost nothing.
    """

    __slots__ = ("kind", "op", "detail", "count", "_loc", "_decoded")

    def __init__(
        self, kind: EventKind | str, op: str, location: SourceLocation | Any, detail: str, count: int = 1
    ) -> None:
        self.kind = EventKind(kind)
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
        return {"kind": self.kind, "op": self.op, "location": self.location.to_dict(), "detail": self.detail,
                "count": self.count}

    def __repr__(self) -> str:
        return f"Event({self.kind.value!r}, {self.op!r}, {str(self.location)!r}, {self.detail!r}, {self.count})"

    def __str__(self) -> str:
        n = f" x{self.count}" if self.count != 1 else ""
        return f"[{self.kind}{n}] {self.op}{self.location.where()}: {self.detail}"


@dataclasses.dataclass(frozen=True, slots=True, init=False, eq=False, repr=False)
class Narrowing:
    """One narrowed value whose verdict is not plain ``exact``.

    Attributes:
      op: Name of the op that defines the value (``"func.func"`` for a
        function argument, the region's op for a region argument).
      role: ``"result"`` or ``"argument"`` (a block argument).
      index: The result index or the argument number.
      verdict: The value's :class:`~no64.kinds.Verdict`.
      interval: The value's range in the 64-bit program, when the range
        analysis gave the verdict.
      detail: A short text for people.
      location: The value's :class:`~no64.SourceLocation` (decoded on first
        use): the op's location for a result, the argument's own location
        for a block argument.
      collision: The value is unproven only because it may hold a sentinel
        (``INT64_MAX`` ...) while its ordinary values fit 32 bits and may
        reach the sentinel's 32-bit image (or a comparison meets it).
    """

    op: str
    role: str
    index: int
    verdict: Verdict
    interval: tuple[int, int] | None
    detail: str
    collision: bool
    _loc: Any
    _decoded: SourceLocation | None

    def __init__(
        self,
        op: str,
        role: str,
        index: int,
        location: SourceLocation | Any,
        verdict: Verdict | str,
        interval: tuple[int, int] | None = None,
        detail: str = "",
        collision: bool = False,
    ) -> None:
        if role not in ("result", "argument"):
            raise ValueError(f"role must be 'result' or 'argument', not {role!r}")
        init = object.__setattr__
        init(self, "op", op)
        init(self, "role", role)
        init(self, "index", index)
        init(self, "verdict", Verdict(verdict))
        init(self, "interval", interval)
        init(self, "detail", detail)
        init(self, "collision", collision)
        init(self, "_loc", location)
        init(self, "_decoded", location if isinstance(location, SourceLocation) else None)

    @property
    def location(self) -> SourceLocation:
        if self._decoded is None:
            object.__setattr__(self, "_decoded", decode_location(self._loc))
        assert self._decoded is not None
        return self._decoded

    def _key(self) -> tuple[Any, ...]:
        return (self.op, self.role, self.index, self.location, self.verdict, self.interval, self.detail,
                self.collision)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Narrowing):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "role": self.role,
            "index": self.index,
            "verdict": self.verdict,
            "interval": list(self.interval) if self.interval is not None else None,
            "location": self.location.to_dict(),
            "detail": self.detail,
            "collision": self.collision,
        }

    def __repr__(self) -> str:
        return (
            f"Narrowing({self.op!r}, {self.role!r}, {self.index}, {str(self.location)!r}, "
            f"{self.verdict.value!r}, {self.interval!r}, {self.detail!r})"
        )

    def __str__(self) -> str:
        iv = f" in [{self.interval[0]}, {self.interval[1]}]" if self.interval is not None else ""
        return f"[{self.verdict}] {self.op} {self.role} #{self.index}{iv} at {self.location}: {self.detail}"


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
      values_emulated: 64-bit integer values carried exactly as pairs of
        32-bit words (see :mod:`no64.transforms.emulate`).
      ops_emulated: Ops computed on such pairs (by op name in
        ``emulated_by_op``).
      emulated_outputs: Indices of the entry function's results that come
        back as word pairs: shape ``S x 2``, ``[..., 0]`` the low and
        ``[..., 1]`` the high 32 bits (``ui32`` for unsigned results, ``i32``
        bit patterns for signed ones).
      checked_outputs: The entry function's results (one
        :class:`Narrowing` each) returned in 32 bits without a proof that
        they fit, checked by value when the module runs
        (``outputs="checked"``): the entry function's last result is then a
        scalar ``i1``, true when all of them fit.
      emulated_inputs: Indices of the entry function's arguments that enter
        as word pairs, in the same layout (``policy="exact"``: 64-bit
        integer inputs not proven to fit; :func:`no64.split_words` makes
        them from ``int64``/``uint64`` values).
      float_policy: How float64 values were computed: ``"f32"`` (narrowed)
        or ``"pairs"`` (as normalized pairs of f32, see
        :mod:`no64.transforms.pairs`).
      values_on_pairs: Float64 values carried as pairs; ``ops_on_pairs``
        the ops computed on them (by op name in ``pairs_by_op``).
      pair_inputs, pair_outputs: Indices of the entry function's arguments
        and results that are packed pairs: shape ``S x 2`` float32,
        ``[..., 0]`` hi and ``[..., 1]`` lo (``no64.split_pairs`` /
        ``no64.join_pairs``).
      target: The device profile the module was converted for
        (:mod:`no64.targets`), or ``None`` (a device with no 64-bit type).
      kept_native: The 64-bit element types kept as they are, the target
        having them natively (``"i64"``, ``"u64"``, ...).
      widened_inputs, narrowed_outputs: Under ``outputs="narrow"`` or
        ``"checked"`` with a target that keeps 64-bit integers, indices of
        the entry function's kept integer arguments that take their 32-bit
        type and are widened inside, and of its kept integer results that
        are narrowed on the way out (judged like every narrowed result;
        :mod:`no64.transforms.boundary`).
      retyped_by_type: Count of retyped values per original element type.
      verdicts: Count of narrowed values per :class:`~no64.kinds.Verdict`.
      events: Every sentinel, saturation, wrap, precision loss, overflow and
        rewrite, with its op and location.
      narrowings: One :class:`Narrowing` per narrowed value whose verdict is
        not ``exact``, except f64 values computed in f32 (counted in
        ``verdicts`` as ``precision-reduced``, not listed one by one).
    """

    integer_policy: str = "error"
    values_retyped: int = 0
    functions_retyped: int = 0
    constants_narrowed: int = 0
    converts_removed: int = 0
    ops_rewritten: int = 0
    values_emulated: int = 0
    ops_emulated: int = 0
    emulated_by_op: dict[str, int] = dataclasses.field(default_factory=dict)
    emulated_outputs: list[int] = dataclasses.field(default_factory=list)
    emulated_inputs: list[int] = dataclasses.field(default_factory=list)
    checked_outputs: list["Narrowing"] = dataclasses.field(default_factory=list)
    float_policy: str = "f32"
    values_on_pairs: int = 0
    ops_on_pairs: int = 0
    pairs_by_op: dict[str, int] = dataclasses.field(default_factory=dict)
    pair_inputs: list[int] = dataclasses.field(default_factory=list)
    pair_outputs: list[int] = dataclasses.field(default_factory=list)
    target: str | None = None
    kept_native: list[str] = dataclasses.field(default_factory=list)
    widened_inputs: list[int] = dataclasses.field(default_factory=list)
    narrowed_outputs: list[int] = dataclasses.field(default_factory=list)
    retyped_by_type: dict[str, int] = dataclasses.field(default_factory=dict)
    verdicts: dict[Verdict, int] = dataclasses.field(default_factory=dict)
    events: list[Event] = dataclasses.field(default_factory=list)
    narrowings: list[Narrowing] = dataclasses.field(default_factory=list)
    #: Under ``float_policy="f32"``: where computing float64 in f32 changes a
    #: result (:class:`no64.analysis.float_hints.FloatHint`, with its line).
    float_hints: list[Any] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.values_retyped
            or self.functions_retyped
            or self.constants_narrowed
            or self.ops_rewritten
            or self.ops_emulated
            or self.ops_on_pairs
            or self.widened_inputs
            or self.narrowed_outputs
        )

    @property
    def exact(self) -> bool:
        """Whether every narrowing kept its value: no lossy event
        (:data:`~no64.kinds.LOSSY_EVENTS`) and only exact or sentinel
        verdicts (:data:`~no64.kinds.EXACT_VERDICTS`)."""
        if any(e.kind in LOSSY_EVENTS for e in self.events):
            return False
        if any(n.verdict not in EXACT_VERDICTS for n in self.narrowings):
            return False
        return all(v in EXACT_VERDICTS for v, n in self.verdicts.items() if n)

    def count(self, kind: EventKind | str) -> int:
        """Total element count of events of ``kind``."""
        return sum(e.count for e in self.events if e.kind == kind)

    def add(self, kind: EventKind | str, op: str, location: Any, detail: str, count: int = 1) -> None:
        """Record an event; ``location`` is a SourceLocation or an MLIR location."""
        self.events.append(Event(kind, op, location, detail, count))

    def add_narrowing(
        self,
        op: str,
        role: str,
        index: int,
        location: Any,
        verdict: Verdict | str,
        interval: tuple[int, int] | None = None,
        detail: str = "",
    ) -> Narrowing:
        """Record a narrowed value; ``location`` is a SourceLocation or an MLIR location."""
        record = Narrowing(op, role, index, location, verdict, interval, detail)
        self.narrowings.append(record)
        return record

    def to_dict(self) -> dict[str, Any]:
        return {
            "integer_policy": self.integer_policy,
            "changed": self.changed,
            "values_retyped": self.values_retyped,
            "functions_retyped": self.functions_retyped,
            "constants_narrowed": self.constants_narrowed,
            "converts_removed": self.converts_removed,
            "ops_rewritten": self.ops_rewritten,
            "values_emulated": self.values_emulated,
            "ops_emulated": self.ops_emulated,
            "emulated_by_op": dict(self.emulated_by_op),
            "emulated_outputs": list(self.emulated_outputs),
            "emulated_inputs": list(self.emulated_inputs),
            "checked_outputs": [n.to_dict() for n in self.checked_outputs],
            "float_policy": self.float_policy,
            "values_on_pairs": self.values_on_pairs,
            "ops_on_pairs": self.ops_on_pairs,
            "pairs_by_op": dict(self.pairs_by_op),
            "pair_inputs": list(self.pair_inputs),
            "pair_outputs": list(self.pair_outputs),
            "target": self.target,
            "kept_native": list(self.kept_native),
            "widened_inputs": list(self.widened_inputs),
            "narrowed_outputs": list(self.narrowed_outputs),
            "retyped_by_type": dict(self.retyped_by_type),
            "verdicts": dict(self.verdicts),
            "counts": {k: self.count(k) for k in sorted({e.kind for e in self.events})},
            "events": [e.to_dict() for e in self.events],
            "narrowings": [n.to_dict() for n in self.narrowings],
            "float_hints": [h.to_dict() for h in self.float_hints],
        }

    def summary(self) -> str:
        """A short multi-line text for people.

        Events alike in kind, op, detail, source location (and element
        count) are one line, ``(xN)`` after it when there are N of them.  At
        most 50 such lines are listed.  ``to_dict`` keeps every event.
        """
        lines = [
            f"retyped {counted(self.values_retyped, 'value')} in "
            f"{counted(self.functions_retyped, 'function signature')} and their bodies; "
            f"narrowed {counted(self.constants_narrowed, 'constant')}; "
            f"removed {counted(self.converts_removed, 'no-op convert')}"
        ]
        if self.ops_emulated:
            lines.append(
                f"emulated {counted(self.values_emulated, 'value')} exactly as 32-bit word pairs in "
                f"{counted(self.ops_emulated, 'op')}"
                + (f"; inputs {self.emulated_inputs} enter as [..., 2] word pairs (low, high)"
                   if self.emulated_inputs else "")
                + (f"; outputs {self.emulated_outputs} come back as [..., 2] word pairs (low, high)"
                   if self.emulated_outputs else "")
            )
        if self.ops_on_pairs:
            lines.append(
                f"computed {counted(self.values_on_pairs, 'float64 value')} as f32 pairs (hi, lo) in "
                f"{counted(self.ops_on_pairs, 'op')}"
                + (f"; inputs {self.pair_inputs} are [..., 2] pairs" if self.pair_inputs else "")
                + (f"; outputs {self.pair_outputs} come back as [..., 2] pairs (hi, lo)"
                   if self.pair_outputs else "")
            )
        if self.kept_native:
            lines.append(f"kept {', '.join(self.kept_native)} as they are (native on target {self.target})"
                         + (f"; inputs {self.widened_inputs} enter as 32-bit values, widened"
                            if self.widened_inputs else "")
                         + (f"; outputs {self.narrowed_outputs} come back narrowed to 32 bits"
                            if self.narrowed_outputs else ""))
        if self.retyped_by_type:
            parts = ", ".join(
                f"{t}: {n}" for t, n in sorted(self.retyped_by_type.items(), key=lambda kv: -kv[1])
            )
            lines.append(f"by element type: {parts}")
        if self.verdicts:
            lines.append(
                "verdicts: "
                + ", ".join(f"{k} {self.verdicts[k]}" for k in Verdict if self.verdicts.get(k))
            )
        kinds: collections.Counter[EventKind] = collections.Counter()
        for e in self.events:
            kinds[e.kind] += e.count
        if kinds:
            lines.append("events: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        events = grouped_lines(str(e) for e in self.events)
        for line in events[:_MAX_EVENT_LINES]:
            lines.append(f"  {line}")
        if len(events) > _MAX_EVENT_LINES:
            lines.append(f"  ... and {len(events) - _MAX_EVENT_LINES} more (see --json)")
        if self.float_hints:
            lines.append(f"float hints: {counted(len(self.float_hints), 'place')} where f32 changes a float64 result")
            lines.extend(f"  {h}" for h in grouped_lines(str(h) for h in self.float_hints))
        lines.append(f"integer policy: {self.integer_policy}")
        return "\n".join(lines)


#: The most event lines :meth:`DemotionReport.summary` lists.
_MAX_EVENT_LINES = 50


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``n`` and ``word``, the word in the plural unless ``n`` is 1
    (``counted(1, "value")``: ``"1 value"``; ``counted(2, "value")``:
    ``"2 values"``); ``plural`` for a word that does not just add an s."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def grouped_lines(lines: Iterable[str]) -> list[str]:
    """Identical lines once each, in first-seen order, ``(xN)`` after one
    that came N > 1 times."""
    counts = collections.Counter(lines)
    return [f"{line} (x{n})" if n > 1 else line for line, n in counts.items()]
