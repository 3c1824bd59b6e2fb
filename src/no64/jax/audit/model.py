"""The report model: what an audit found (:class:`AuditReport`), by module
(:class:`ModuleAudit`), by primitive, line and handling (:class:`Group`), by
cause (:class:`Cause`) and host value (:class:`HostNarrowing`), and the
report as text, JSON (:data:`~no64.jax.audit.schema.AUDIT_JSON_SCHEMA`) and
SARIF.

``--fail-on`` levels (see :class:`no64.kinds.FailOn`): ``refused`` (the
default) fails on a refused module, ``unproven`` also on ``unproven`` and
``overflow`` values, ``lossy`` on those and ``precision-reduced``, ``any``
on every 64-bit value; ``numerics`` on a refused module and on any line
``--numerics`` measured beyond its tolerance (:mod:`no64.jax.audit.measure`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path
from typing import Any, TextIO

from ... import __version__
from ...kinds import EventKind, FailOn, Handling, IntegerPolicy, Mode, RangePolicy
from ...report import counted
from .numerics_summary import NumericsSummary
from .schema import AS_IS, CAUSE_KINDS, HOOK, MODULE_HOW, SARIF_RULES, SCHEMA_VERSION, sarif_log
from .sites import AtSource
from .values import ModuleResult

__all__ = ["FAIL_ON", "NOT_REMOVABLE", "AuditReport", "Cause", "Group", "HostNarrowing", "ModuleAudit",
           "write_report"]

#: Handlings each ``--fail-on`` level fails on (see :class:`no64.kinds.FailOn`).
FAIL_ON: dict[str, frozenset[Handling]] = {level.value: level.handlings for level in FailOn}

#: Handlings the pytest plugin fails a test on: no64 cannot remove the value exactly.
NOT_REMOVABLE = frozenset(h for h in Handling if not h.removable)


@dataclasses.dataclass
class ModuleAudit:
    """One compiled module.

    ``status`` is ``"passed"`` (no 64-bit value: the backend gets it as it
    is), ``"rewritten"`` (no64 removes every 64-bit value; ``handlings``
    counts how, and ``how`` sums it up: one of :data:`MODULE_HOW`) or
    ``"refused"`` (``refusal`` says why); ``compiles`` counts identical
    compilations.
    """

    name: str
    platform: str
    compiles: int
    values: int
    status: str
    refusal: str | None = None
    handlings: dict[str, int] = dataclasses.field(default_factory=dict)
    how: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Group(AtSource):
    """64-bit values with one cause: primitive, user source line and handling."""

    primitive: str
    file: str | None
    line: int | None
    handling: Handling
    hint: str
    count: int = 0
    element_types: dict[str, int] = dataclasses.field(default_factory=dict)
    ops: dict[str, int] = dataclasses.field(default_factory=dict)
    modules: list[str] = dataclasses.field(default_factory=list)
    via: str | None = None


@dataclasses.dataclass
class Cause(AtSource):
    """One root cause, once, with the user's line: ``kind`` (one of
    :data:`CAUSE_KINDS`), the worst ``handling`` of its values, the line
    (``file``/``line``, ``None`` when no user frame was found), ``via`` and
    a one-line ``message``; ``count`` values (or events) in ``modules``."""

    kind: str
    handling: Handling
    file: str | None
    line: int | None
    via: str | None
    message: str
    count: int = 0
    modules: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class HostNarrowing(AtSource):
    """A host value no64 narrowed (one :func:`no64.host_records` entry)."""

    kind: str
    file: str | None
    line: int | None
    detail: str
    count: int

    @property
    def handling(self) -> Handling:
        return Handling.of_event(EventKind(self.kind))

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["handling"] = self.handling
        return d


@dataclasses.dataclass
class AuditReport:
    """What an audit found.

    ``view`` is ``"hook"`` (what the compile hook did while the program ran
    under it) or ``"as-is"`` (the modules the program compiles on its own, as
    no64 would handle them); ``causes`` come first, ``groups`` give the
    values per primitive, line and handling, ``host`` the host values no64
    narrowed.  ``exit_status`` is the program's (``None`` for :func:`audit`);
    ``numerics`` is what ``--numerics`` measured (``None`` without it).
    """

    modules: list[ModuleAudit] = dataclasses.field(default_factory=list)
    groups: list[Group] = dataclasses.field(default_factory=list)
    causes: list[Cause] = dataclasses.field(default_factory=list)
    host: list[HostNarrowing] = dataclasses.field(default_factory=list)
    program: str | None = None
    exit_status: int | None = None
    view: str = AS_IS
    platforms: list[str] = dataclasses.field(default_factory=list)
    mode: str | None = None
    integer_policy: str | None = None
    policy: str | None = None
    #: The device profile named (``--target``, ``NO64_TARGET``); ``None``: the platform's.
    target: str | None = None
    numerics: NumericsSummary | None = None

    @property
    def values(self) -> int:
        return sum(g.count for g in self.groups)

    def failing(self, fail_on: str = "refused") -> list[Cause]:
        """The causes whose handling ``fail_on`` (a key of :data:`FAIL_ON`) fails on."""
        levels = FailOn.parse(fail_on, "fail_on").handlings
        return [c for c in self.causes if c.handling in levels]

    def fails(self, fail_on: str = "refused") -> bool:
        """Whether ``fail_on`` fails this report: a cause it fails on, or
        for ``numerics`` also a line measured beyond the tolerance, a jitted
        function a sampled call of which could not be measured, or a run
        that measured nothing (never green on nothing)."""
        if self.failing(fail_on):
            return True
        return (FailOn.parse(fail_on, "fail_on") is FailOn.NUMERICS and self.numerics is not None
                and (bool(self.numerics.lines) or bool(self.numerics.unmeasured())))

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data, valid against :data:`AUDIT_JSON_SCHEMA`."""
        return {
            "version": SCHEMA_VERSION,
            "tool": {"name": "no64", "version": __version__},
            "program": self.program,
            "view": self.view,
            "platforms": list(self.platforms),
            "mode": self.mode,
            "integer_policy": self.integer_policy,
            "policy": self.policy,
            "target": self.target,
            "exit_status": self.exit_status,
            "values": self.values,
            "causes": [c.to_dict() for c in self.causes],
            "host": [h.to_dict() for h in self.host],
            "modules": [m.to_dict() for m in self.modules],
            "groups": [g.to_dict() for g in self.groups],
            "numerics": self.numerics.to_dict() if self.numerics is not None else None,
        }

    def to_sarif(self) -> dict[str, Any]:
        """The report as a SARIF 2.1.0 log: one result per cause."""
        results = []
        for c in self.causes:
            result: dict[str, Any] = {
                "ruleId": f"no64/{c.kind}",
                "ruleIndex": CAUSE_KINDS.index(c.kind),
                "level": c.handling.sarif_level,
                "message": {"text": c.message},
                "properties": {
                    "handling": str(c.handling),
                    "count": c.count,
                    "modules": list(c.modules),
                    "via": c.via,
                    "view": self.view,
                },
            }
            if c.file is not None:
                region = {"startLine": c.line} if c.line is not None and c.line > 0 else {}
                result["locations"] = [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(c.file)},
                            **({"region": region} if region else {}),
                        }
                    }
                ]
            results.append(result)
        for line in self.numerics.lines if self.numerics is not None else []:
            result = {
                "ruleId": "no64/numerics",
                "ruleIndex": SARIF_RULES.index("numerics"),
                "level": "warning",
                "message": {"text": line.message()},
                "properties": {"kind": line.kind, "error": line.to_dict()["error"], "calls": line.calls,
                               "functions": list(line.functions),
                               "pairs_error": line.to_dict()["pairs_error"], "view": self.view},
            }
            if line.file is not None:
                region = {"startLine": line.line} if line.line is not None and line.line > 0 else {}
                result["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": _uri(line.file)},
                                                             **({"region": region} if region else {})}}]
            results.append(result)
        return sarif_log(results)

    def headline(self) -> str:
        n = len(self.modules)
        by = {s: sum(1 for m in self.modules if m.status == s) for s in ("passed", "rewritten", "refused")}
        if self.view == HOOK:
            plats = ",".join(self.platforms)
            if plats == "default":  # neither --platform nor NO64_PLATFORMS named one
                head = (f"no64 audit of {self.program or 'the program'} as the compile hook runs it for the "
                        "default backend (no platform named: --platform or NO64_PLATFORMS)")
            else:
                head = f"no64 audit of {self.program or 'the program'} as NO64_PLATFORMS={plats} runs it"
            chosen = [f"NO64_{name.upper()}={value}" for name, value, default in (
                ("mode", self.mode, Mode.FIX), ("integer_policy", self.integer_policy, IntegerPolicy.ERROR),
                ("policy", self.policy, RangePolicy.DEFAULT), ("target", self.target, None))
                if value and value != default]
            if chosen:
                head += f" ({', '.join(chosen)})"
        else:
            head = f"no64 audit of {self.program or 'the program'} as is (its own x64 setting; no hook)"
        parts = [f"{counted(n, 'module')} compiled"]
        verb = {"passed": "passed through", "rewritten": "rewritten", "refused": "refused"}
        if self.view == AS_IS:
            verb = {"passed": "without 64-bit values", "rewritten": "would be rewritten",
                    "refused": "would be refused"}
        for s in ("passed", "rewritten", "refused"):
            if not by[s]:
                continue
            part = f"{by[s]} {verb[s]}"
            if s == "rewritten":
                hows = collections.Counter(m.how for m in self.modules if m.status == s)
                part += " (" + ", ".join(f"{hows[h]} {h}" for h in MODULE_HOW if hows[h]) + ")"
            parts.append(part)
        if self.host:
            k = sum(h.count for h in self.host)
            parts.append(f"{counted(k, 'host value')} narrowed")
        return f"{head}: " + ", ".join(parts)

    def format_text(self, color: bool = False, verbose: bool = False, limit: int = 20) -> str:
        """Causes first, one line each (``limit`` of them unless ``verbose``);
        with ``verbose``, the values per primitive, line and handling and the
        modules too.  ANSI colours when ``color``."""
        lines = [self.headline()]
        if not self.causes:
            lines.append("  no 64-bit values and no narrowed host values")
        shown = self.causes if verbose else self.causes[:limit]
        for c in shown:
            line = f"  {c.message}"
            if color:
                code = {"error": "31", "warning": "33"}.get(c.handling.sarif_level, "")
                if code:
                    line = f"\x1b[{code}m{line}\x1b[0m"
            lines.append(line)
        if len(shown) < len(self.causes):
            rest = self.causes[len(shown):]
            kinds = sorted({str(c.handling) for c in rest})
            lines.append(f"  ... and {len(rest)} more ({', '.join(kinds)}): --verbose lists them")
        if self.numerics is not None:
            lines += self.numerics.text_lines()
        if verbose and self.groups:
            lines.append("values, per primitive, line and handling:")
            rows = [("handling", "values", "types", "primitive", "source", "via")]
            for g in self.groups:
                types = ",".join(sorted(g.element_types))
                rows.append((g.handling, str(g.count), types, g.primitive, g.source or "-", g.via or ""))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
            for row in rows:
                cells = [c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]
                lines.append("  " + "  ".join(cells).rstrip())
        if verbose and self.modules:
            lines.append("modules:")
            for m in self.modules:
                how = ", ".join(f"{n} {h}" for h, n in m.handlings.items())
                extra = f" ({how})" if how else ""
                times = f" x{m.compiles}" if m.compiles > 1 else ""
                lines.append(f"  {m.status:9} {m.name} ({m.platform}){times}{extra}")
        return "\n".join(lines) + "\n"


_HOW_OF = {
    Handling.EXACT: "exact", Handling.REWRITTEN: "exact", Handling.SENTINEL: "sentinel",
    Handling.EMULATED: "emulated", Handling.FLOAT32: "precision-reduced",
    Handling.ROUNDED: "precision-reduced", Handling.PRECISION_REDUCED: "precision-reduced",
    Handling.UNPROVEN: "unproven", Handling.OVERFLOW: "overflow",
}


def _module_how(r: ModuleResult) -> str | None:
    """How a rewritten module was rewritten (one of :data:`MODULE_HOW`)."""
    if r.status != "rewritten":
        return None
    worst = max((v.handling for v in r.values), key=lambda h: h.rank, default=Handling.EXACT)
    if r.emulated and worst.rank < Handling.EMULATED.rank:
        worst = Handling.EMULATED  # the report says so even where no value record does
    return _HOW_OF.get(worst, "exact")


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def write_report(report: AuditReport, fmt: str, stream: TextIO, color: bool = False,
                 verbose: bool = False) -> None:
    """Write ``report`` as ``"text"``, ``"json"`` or ``"sarif"``."""
    if fmt == "json":
        stream.write(json.dumps(report.to_dict(), indent=2) + "\n")
    elif fmt == "sarif":
        stream.write(json.dumps(report.to_sarif(), indent=2) + "\n")
    else:
        stream.write(report.format_text(color, verbose=verbose))
    stream.flush()
