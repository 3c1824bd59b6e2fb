"""Audit a real program: what the compile hook does with it, and why, by the user's lines.

Two views of a program:

*the hook's view* (the default of ``no64 audit``, :func:`run_program`)
    The program runs exactly as with ``NO64_PLATFORMS=P``: no64 is activated
    when JAX is imported, with the settings of ``NO64_MODE``,
    ``NO64_INTEGER_POLICY`` and ``NO64_POLICY``; it turns ``jax_enable_x64``
    off, narrows 64-bit host values and rewrites, emulates or refuses every
    module before the backend compiles it.  The backend the program runs on here stands in for
    P.  :class:`Predictor` records what the hook did with each module --
    passed through, rewritten (and how) or refused -- and where x64 was
    turned on, which explicit 64-bit dtypes JAX truncated and which host
    values no64 narrowed.
*as is* (``--as-is``, :class:`Observer` and :func:`analyze`)
    The program runs unchanged, with its own x64 setting, and every module it
    compiles is explained as if it were handed to no64: what the modules are
    before any hook.  The pytest plugin uses this view.

Each 64-bit value gets a handling (:class:`no64.kinds.Handling`):

``exact``
    narrowed to 32 bits with the same value.
``sentinel``
    a 64-bit extreme (``INT64_MAX``, ...) mapped to the 32-bit extreme.
``rewritten``
    an op replaced by an exact 32-bit equivalent (random-number counters and
    rbg state, bit counts, ...).
``emulated``
    a 64-bit integer computed exactly in a pair of 32-bit words.
``float32``
    an f64 value computed in f32 (the x64 program run without x64).
``rounded``
    f64 constant(s) rounded to the nearest f32.
``precision-reduced``
    an op replaced by a rule that computes the same thing with fewer bits.
``unproven``
    an integer that is exact only if it fits in 32 bits, which no64 cannot
    prove.
``overflow``
    a value that never fits in 32 bits.
``refused``
    no64 refuses the module because of this value.
``blocked``
    a value in a module refused because of another value.

Every value is attributed to the innermost frame of the user's code: the
op's own call-site location, or, for ops inside JAX's jitted helpers
(``jax.random.normal`` and the like, lowered as private functions without a
source line), the call sites of the function holding it, followed outwards
until a user frame is found; the library function or frame it came through
is given as ``via``.  Values are grouped by primitive, user line and
handling (:class:`Group`), and groups are summed up as causes
(:class:`Cause`): where x64 was turned on, where random bits are drawn,
which host sentinels were mapped, what was refused and why.

``--fail-on`` levels (see :class:`no64.kinds.FailOn`): ``refused`` (the
default) fails on a refused module, ``unproven`` also on ``unproven`` and
``overflow`` values, ``lossy`` on those and ``precision-reduced``, ``any``
on every 64-bit value.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import re
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from ... import __version__
from .. import host
from ...errors import (
    Boundary64BitError,
    ConstantRangeError,
    NarrowingError,
    No64Error,
    Remaining64BitError,
    UnsupportedOpError,
    OutputRangeError,
)
from ...kinds import EventKind, FailOn, Handling, IntegerPolicy, Mode, RangePolicy
from ...rules import spec_of
from .observer import Compiled, Observer, _explain, _X64Watch
from .predictor import Predictor, _hook_settings  # noqa: F401
from .schema import (
    AS_IS,
    AUDIT_JSON_SCHEMA,
    CAUSE_KINDS,
    HANDLINGS,
    HOOK,
    MODULE_HOW,
    SCHEMA_VERSION,
    sarif_log,
)
from .sites import _NO_SITE, CallGraph, Site, _relative  # noqa: F401
from .values import DtypeEvent, ModuleResult, Value, X64Event, _handlings, _module_name, _one_line  # noqa: F401

__all__ = [
    "AUDIT_JSON_SCHEMA",
    "FAIL_ON",
    "HANDLINGS",
    "AuditReport",
    "Cause",
    "Group",
    "ModuleAudit",
    "Observer",
    "Predictor",
    "analyze",
    "audit",
    "run_program",
]


#: Handlings each ``--fail-on`` level fails on (see :class:`no64.kinds.FailOn`).
FAIL_ON: dict[str, frozenset[Handling]] = {level.value: level.handlings for level in FailOn}

#: Handlings the pytest plugin fails a test on: no64 cannot remove the value exactly.
NOT_REMOVABLE = frozenset(h for h in Handling if not h.removable)


_DESCRIPTION = {
    Handling.EXACT: "narrowed to 32 bits, value unchanged",
    Handling.SENTINEL: "64-bit extreme mapped to the 32-bit extreme",
    Handling.REWRITTEN: "op rewritten exactly in 32 bits",
    Handling.EMULATED: "64-bit integer computed exactly in 32-bit word pairs",
    Handling.FLOAT32: "f64 computed in f32",
    Handling.ROUNDED: "f64 constant rounded to f32",
    Handling.PRECISION_REDUCED: "op replaced by a lower-precision 32-bit equivalent",
    Handling.UNPROVEN: "integer may not fit in 32 bits",
    Handling.OVERFLOW: "value never fits in 32 bits",
    Handling.REFUSED: "no64 refuses the module",
    Handling.BLOCKED: "module refused elsewhere",
}


_RANDOM_PRIMITIVES = frozenset({
    "iota_2x32_shape", "threefry2x32", "rng_bit_generator", "random_bits", "random_seed",
    "random_wrap", "random_split", "random_fold_in", "random_unwrap",
})


# --------------------------------------------------------------------------- the report


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
class Group:
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

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        return d


@dataclasses.dataclass
class Cause:
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

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        return d


@dataclasses.dataclass
class HostNarrowing:
    """A host value no64 narrowed (one :func:`no64.host_records` entry)."""

    kind: str
    file: str | None
    line: int | None
    detail: str
    count: int

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def handling(self) -> Handling:
        return Handling.of_event(EventKind(self.kind))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        d["handling"] = self.handling
        return d


@dataclasses.dataclass
class AuditReport:
    """What an audit found.

    ``view`` is ``"hook"`` (what the compile hook did while the program ran
    under it) or ``"as-is"`` (the modules the program compiles on its own, as
    no64 would handle them); ``causes`` come first, ``groups`` give the
    values per primitive, line and handling, ``host`` the host values no64
    narrowed.  ``exit_status`` is the program's (``None`` for :func:`audit`).
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

    @property
    def values(self) -> int:
        return sum(g.count for g in self.groups)

    def failing(self, fail_on: str = "refused") -> list[Cause]:
        """The causes whose handling ``fail_on`` (a key of :data:`FAIL_ON`) fails on."""
        levels = FailOn.parse(fail_on, "fail_on").handlings
        return [c for c in self.causes if c.handling in levels]

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
            "exit_status": self.exit_status,
            "values": self.values,
            "causes": [c.to_dict() for c in self.causes],
            "host": [h.to_dict() for h in self.host],
            "modules": [m.to_dict() for m in self.modules],
            "groups": [g.to_dict() for g in self.groups],
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
        return sarif_log(results)

    def headline(self) -> str:
        n = len(self.modules)
        by = {s: sum(1 for m in self.modules if m.status == s) for s in ("passed", "rewritten", "refused")}
        if self.view == HOOK:
            plats = ",".join(self.platforms)
            head = f"no64 audit of {self.program or 'the program'} as NO64_PLATFORMS={plats} runs it"
            chosen = [f"NO64_{name.upper()}={value}" for name, value, default in (
                ("mode", self.mode, Mode.FIX), ("integer_policy", self.integer_policy, IntegerPolicy.ERROR),
                ("policy", self.policy, RangePolicy.DEFAULT)) if value and value != default]
            if chosen:
                head += f" ({', '.join(chosen)})"
        else:
            head = f"no64 audit of {self.program or 'the program'} as is (its own x64 setting; no hook)"
        parts = [f"{n} module{'s' if n != 1 else ''} compiled"]
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
            parts.append(f"{k} host value{'s' if k != 1 else ''} narrowed")
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


def _hint(primitive: str, handling: Handling, elem: str, op: str, site: Site,
          refusal: str | None) -> str:
    """What no64 does with such a value, and what to do about it; where the
    user's line (or the library line it came through) names a 64-bit dtype,
    that it was requested explicitly."""
    if handling is Handling.REFUSED:
        return refusal or "no64 refuses this op"
    if handling is Handling.BLOCKED:
        return "no64 refuses this module because of another value (see refused)"
    how = _how_hint(primitive, handling, op)
    named = site.names_64bit() if elem in _DTYPE_NAMES else None
    if named == "here":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.source}"
    if named == "via":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.via} (via)"
    return how


_DTYPE_NAMES = {"i64": "int64", "si64": "int64", "ui64": "uint64", "f64": "float64",
                "complex<f64>": "complex128"}


def _how_hint(primitive: str, handling: Handling, op: str) -> str:
    if handling is Handling.EMULATED:
        return _DESCRIPTION[handling]
    # what the op registry says about the op (or the op JAX's primitive lowers to)
    hint = spec_of(op).hint or spec_of(f"stablehlo.{primitive}").hint
    if hint is not None:
        return hint
    if primitive in _RANDOM_PRIMITIVES:
        return "threefry counters: rewritten exactly"
    if primitive.startswith("<function"):
        if handling is Handling.UNPROVEN:
            return "64-bit integer inputs of unknown range: pass int32 arrays, or declare input ranges (no64 convert --range)"
        what = "inputs" if "argument" in primitive else "outputs"
        return f"64-bit {what} of the compiled function: the caller passes or receives 64-bit arrays"
    if handling is Handling.UNPROVEN:
        return ("range not provable within 32 bits: NO64_POLICY=exact computes it exactly in 32-bit "
                "word pairs; or use int32, or declare input ranges (no64 convert --range)")
    if handling is Handling.OVERFLOW:
        return "the value does not fit in 32 bits: the 32-bit program computes something else"
    if handling is Handling.PRECISION_REDUCED:
        return "computed with 32-bit words: fewer random bits than the 64-bit program"
    if handling is Handling.REWRITTEN:
        return "rewritten exactly by a no64 rule"
    if handling is Handling.ROUNDED:
        return "f64 constant rounded to the nearest f32"
    if handling is Handling.FLOAT32:
        return "x64 is on: f64 arithmetic becomes f32 (pass float32 data or disable jax_enable_x64)"
    return _DESCRIPTION[handling]


def _way_out(exc: BaseException | None, refusal: str | None) -> str:
    if isinstance(exc, Boundary64BitError):
        return "trace it with x64 off, or pass 64-bit host data through no64.jit"
    if isinstance(exc, Remaining64BitError):
        return "NO64_MODE=fix rewrites such modules instead of refusing them"
    if isinstance(exc, OutputRangeError):
        return ('no64.jit(..., policy="exact", restore_dtypes=True) returns it as int64 on the host; '
                "or keep the result in int32's range")
    if isinstance(exc, NarrowingError):
        return ("NO64_POLICY=exact computes such integers exactly in 32-bit word pairs; "
                "or keep the value in int32's range")
    if isinstance(exc, ConstantRangeError):
        return ("keep the value in int32's range or use INT64_MAX/INT64_MIN as a sentinel; "
                "NO64_INTEGER_POLICY=saturate or wrap narrows it anyway")
    if isinstance(exc, UnsupportedOpError) or (refusal and "refuses" in refusal):
        return "compute it in 32 bits (uint32 keys, int32 arithmetic) or keep it off the device"
    return "compute it in 32 bits"


def _reason(refusal: str | None, exc: BaseException | None = None) -> str:
    """The reason for a refusal, in one line of at most 200 characters."""
    text = getattr(exc, "reason", None) or getattr(exc, "detail", None)
    if text is None and exc is not None:
        text = str(exc).split("\n", 1)[0]  # the first line says what; the rest lists values
        if isinstance(exc, NarrowingError):
            # the op and its location are said by the cause; the hint by the way out
            text = text.removeprefix(f"{exc.op} at {exc.location}: ").split("); ", 1)[0] + ")"
    text = " ".join(str(text or refusal or "no64 refuses this module").split())
    text = re.sub(r"^no64(?: \(mode '\w+'\))? refuses [^:]*: ", "", text).rstrip(".:")
    return text if len(text) <= 200 else text[:197] + "..."


@dataclasses.dataclass(frozen=True)
class ReportInput:
    """What :func:`build_report` makes a report of: what was recorded while
    the program ran, and the view and settings it ran under."""

    #: The modules compiled, as the view handled them.
    results: Sequence[ModuleResult] = ()
    #: The program (script or module) audited.
    program: str | None = None
    #: :data:`HOOK` or :data:`AS_IS`.
    view: str = AS_IS
    #: Where x64 was turned on.
    x64: Sequence[X64Event] = ()
    #: Explicit 64-bit dtypes JAX truncated or no64 took over.
    dtypes: Sequence[DtypeEvent] = ()
    #: The host records (:func:`no64.host_records`).
    host: Sequence[Any] = ()
    #: The exception the program ended with, if any.
    crash: BaseException | None = None
    #: The hook's platforms, mode, integer policy and range policy (the hook's view).
    platforms: Sequence[str] = ()
    mode: str | None = None
    integer_policy: str | None = None
    policy: str | None = None
    #: The hook left x64 on (``NO64_MODE=off``, a default backend it does not protect).
    x64_kept: bool = False


def build_report(given: ReportInput) -> AuditReport:
    """An :class:`AuditReport` from what was recorded (:class:`ReportInput`):
    module results, x64 events, truncated explicit dtypes, host records and
    the exception the program ended with, if any."""
    results, host = given.results, given.host
    report = AuditReport(program=given.program, view=given.view, platforms=list(given.platforms),
                         mode=given.mode, integer_policy=given.integer_policy, policy=given.policy)
    # modules: identical results count as one module compiled several times
    merged: dict[tuple[Any, ...], ModuleAudit] = {}
    for r in results:
        hist: dict[str, int] = {}
        for v in r.values:
            hist[str(v.handling)] = hist.get(str(v.handling), 0) + 1
        how = _module_how(r)
        key = (r.name, r.platform, r.status, r.refusal, tuple(sorted(hist.items())), how)
        compiles = getattr(r, "compiles", 1)
        if key in merged:
            merged[key].compiles += compiles
            continue
        merged[key] = ModuleAudit(r.name, r.platform, compiles, len(r.values), r.status, r.refusal,
                                  dict(sorted(hist.items(), key=lambda kv: Handling(kv[0]).rank)), how)
    report.modules = list(merged.values())
    # groups: values per primitive, user line and handling
    groups: dict[tuple[Any, ...], Group] = {}
    for r in results:
        for v in r.values:
            key = (v.primitive, v.site.file, v.site.line, v.handling)
            g = groups.get(key)
            if g is None:
                hint = _hint(v.primitive, v.handling, v.element, v.op, v.site, _reason(r.refusal))
                g = groups[key] = Group(v.primitive, v.site.file, v.site.line, v.handling, hint,
                                        via=v.site.via)
            g.count += 1
            g.element_types[v.element] = g.element_types.get(v.element, 0) + 1
            g.ops[v.op] = g.ops.get(v.op, 0) + 1
            if r.name not in g.modules:
                g.modules.append(r.name)
    report.groups = sorted(
        groups.values(), key=lambda g: (-g.handling.rank, g.file or "~", g.line or 0, g.primitive)
    )
    report.host = [
        HostNarrowing(str(e.kind), _relative(e.location.file) if e.location.file else None,
                      e.location.line, e.detail, e.count)
        for e in host
    ]
    report.causes = _causes(report, given)
    return report


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _causes(report: AuditReport, given: ReportInput) -> list[Cause]:
    results, view, x64, dtypes = given.results, given.view, given.x64, given.dtypes
    crash, x64_kept = given.crash, given.x64_kept
    causes: list[Cause] = []
    # x64: each place it was turned on, once
    seen_x64: set[Any] = set()
    for e in x64:
        key = e.environment or e.site
        if key in seen_x64:
            continue
        seen_x64.add(key)
        after = list(dict.fromkeys(r.name for r in results if r.order > e.modules_before))
        after_results = [r for r in results if r.order > e.modules_before]
        if e.environment:
            where = f"by the environment ({e.environment})"
        else:
            where = e.site.where() + (f" (via {e.site.via})" if e.site.via else "")
        if view == HOOK and x64_kept:
            why = ", NO64_MODE=off" if report.mode == Mode.OFF else ""
            text = (f"x64 turned on {where} (no64 left it on{why}: {_plural(len(after), 'module')} "
                    "compiled after it reach the backend unchanged)")
            handling = Handling.EXACT
        elif view == HOOK:
            parts = [f"{_plural(len(after), 'module')} compiled after it are 32-bit"]
            if dtypes:
                parts.append(f"{_plural(sum(d.count for d in dtypes), 'explicit 64-bit dtype')} became 32-bit")
            if report.host:
                parts.append(f"{_plural(sum(h.count for h in report.host), 'host value')} narrowed")
            text = f"x64 turned on {where} (no64 turned it off: {'; '.join(parts)})"
            handling = Handling.EXACT
        else:
            n = sum(len(r.values) for r in after_results)
            mods = len({r.name for r in after_results if r.values})
            text = (f"x64 turned on {where} ({_plural(n, '64-bit value')} in {_plural(mods, 'module')} "
                    "compiled after it; under the hook no64 turns it off)")
            handling = Handling.FLOAT32 if n else Handling.EXACT
        causes.append(Cause("x64", handling, e.site.file, e.site.line, e.site.via, text,
                            len(after), after[:50]))
    # refusals: per refused module, at the value that is refused
    for r in results:
        if r.status != "refused":
            continue
        culprit = next((v for v in r.values if v.handling is Handling.REFUSED), None)
        site = culprit.site if culprit is not None else _NO_SITE
        prim = f" ({culprit.primitive})" if culprit is not None else ""
        via = f" via {site.via}" if site.via and site.file else ""
        verb = "refused" if view == HOOK else "would be refused"
        text = (f"{verb} {site.where()}{prim}{via} in {r.name}: {_reason(r.refusal, r.error)}; "
                f"way out: {_way_out(r.error, r.refusal)}")
        causes.append(Cause("refused", Handling.REFUSED, site.file, site.line, site.via, text,
                            len(r.values), [r.name]))
    if isinstance(crash, No64Error) and not any(r.error is crash for r in results):
        loc = getattr(crash, "location", None)
        file = _relative(loc.file) if loc is not None and loc.file else None
        line = loc.line if loc is not None else None
        site = Site(file, line)
        text = f"refused {site.where()}: {_reason(_one_line(crash))}; way out: {_way_out(crash, None)}"
        causes.append(Cause("refused", Handling.REFUSED, file, line, None, text, 1, []))
    # explicit 64-bit dtypes JAX truncated (x64 off)
    for d in dtypes:
        via = f" via {d.site.via}" if d.site.via else ""
        if d.by_no64:
            how = f"no64 converts the data to {d.became}, each value checked"
        else:
            how = f"JAX makes it {d.became} (x64 is off)"
        text = f"{d.requested} requested explicitly {d.site.where()} (in {d.function}{via}): {how}"
        causes.append(Cause("explicit-dtype", Handling.EXACT, d.site.file, d.site.line, d.site.via,
                            text, d.count))
    # values: random draws per line, everything else per line
    def drawn(v: Value) -> bool:
        return v.primitive in _RANDOM_PRIMITIVES or (v.site.via or "").startswith("jax.random.")

    # lines that draw random bits: their other exact ui64 values (counter
    # constants) belong to the draw
    random_lines = {(v.site.file, v.site.line) for r in results for v in r.values if drawn(v)}
    by_key: dict[tuple[Any, ...], list[tuple[ModuleResult, Value]]] = {}
    for r in results:
        if r.status == "refused":
            continue  # said above
        for v in r.values:
            rng = drawn(v) or (
                (v.site.file, v.site.line) in random_lines and v.element == "ui64"
                and v.handling.rank <= Handling.REWRITTEN.rank
            )
            key = ("random", v.site.file, v.site.line) if rng else (
                "value", v.site.file, v.site.line, v.site.via if v.site.file is None else None)
            by_key.setdefault(key, []).append((r, v))
    for key, items in by_key.items():
        values = [v for _, v in items]
        modules = list(dict.fromkeys(r.name for r, _ in items))
        worst = max((v.handling for v in values), key=lambda h: h.rank)
        site = values[0].site
        if key[0] == "random":
            names = [v.site.via for v in values if (v.site.via or "").startswith("jax.random.")]
            # the function the user called: the most frequent public name;
            # through a library, the JAX function the library called
            if names:
                what = max(dict.fromkeys(names), key=names.count)
            else:
                inner = [v.helper for v in values if v.helper]
                name = max(dict.fromkeys(inner), key=inner.count) if inner else None
                if site.via:
                    what = f"{name} via {site.via}" if name else f"via {site.via}"
                else:
                    what = name or values[0].primitive
            rbg = any(v.primitive == "rng_bit_generator" for v in values)
            if worst is Handling.PRECISION_REDUCED:
                how = "f64 random floats drawn from 32-bit words (precision reduced)"
            elif worst.rank > Handling.REWRITTEN.rank:
                how = f"{worst} ({_DESCRIPTION[worst]})"
            elif rbg:
                how = "rbg state rewritten exactly (ThreeFry/Philox in 32-bit words)"
            else:
                how = "counters rewritten exactly"
            where = site.where() if site.file is not None else "with no line in your code"
            text = f"random bits drawn {where} ({what}): {how}"
            causes.append(Cause("random", worst, site.file, site.line, site.via, text, len(values), modules))
            continue
        prims = sorted({v.primitive for v in values})
        elems = sorted({v.element for v in values})
        first = next(v for v in values if v.handling is worst)
        hint = _hint(first.primitive, worst, first.element, first.op, first.site, None)
        via = f" via {site.via}" if site.via and site.file else ""
        where = site.where() if site.file is not None or site.via else (
            f"in the inputs/outputs of {', '.join(modules[:3])}{' ...' if len(modules) > 3 else ''} "
            "(no line in your code)")
        counts = collections.Counter(v.handling for v in values)
        split = "" if len(counts) == 1 else " (" + ", ".join(
            f"{counts[h]} {h}" for h in sorted(counts, key=lambda h: -h.rank)) + ")"
        text = (f"{worst} {where}{via}: {_plural(len(values), ','.join(elems) + ' value')} "
                f"from {', '.join(prims[:4])}{' ...' if len(prims) > 4 else ''}{split}: {hint}")
        causes.append(Cause("value", worst, site.file, site.line, site.via, text, len(values), modules))
    # float64 results that f32 changes (the pass's float hints), per line and kind
    floats: dict[tuple[Any, ...], list[tuple[ModuleResult, Any]]] = {}
    for r in results:
        for fh in r.float_hints:
            file = _relative(fh.location.file) if fh.location.file is not None else None
            floats.setdefault((file, fh.location.line, fh.kind), []).append((r, fh))
    for (file, line, kind), items in floats.items():
        fh = items[0][1]
        where = f"at {file}:{line}" if file is not None else "with no line in your code"
        text = f"float64 {kind} {where}: {fh.detail}"
        causes.append(Cause("float", Handling.PRECISION_REDUCED, file, line, None, text, len(items),
                            list(dict.fromkeys(r.name for r, _ in items))))
    # host values no64 narrowed
    for h in report.host:
        where = f"at {h.source}" if h.source else "with no source line"
        name = {"sentinel": "host sentinel", "float-inexact": "host float64 value(s)",
                "float-overflow": "host float64 value(s)"}.get(h.kind, f"host value ({h.kind})")
        text = f"{name} {where} {h.detail} ({_plural(h.count, 'element')})"
        causes.append(Cause("host", h.handling, h.file, h.line, None, text, h.count))

    def order(c: Cause) -> tuple[Any, ...]:
        first = 0 if c.kind == "x64" else 1
        return (first, -c.handling.rank, CAUSE_KINDS.index(c.kind), c.file or "~", c.line or 0)

    return sorted(causes, key=order)


def analyze(compiled: Sequence[Compiled], *, program: str | None = None) -> AuditReport:
    """Explain recorded modules as no64 would handle them (the as-is view)."""
    return build_report(ReportInput(_explain(compiled), program=program, view=AS_IS))


def audit(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> AuditReport:
    """Audit one function: lower ``jax.jit(fun)`` for ``args``/``kwargs`` and
    explain every 64-bit value of its module (nothing is compiled or run)."""
    import jax

    lowered = jax.jit(fun).lower(*args, **kwargs)
    module = lowered.compiler_ir("stablehlo")
    op = module.operation
    platform = jax.default_backend()
    text = op.get_asm(enable_debug_info=True)
    return analyze([Compiled(_module_name(op), platform, text)], program=getattr(fun, "__qualname__", None))


# --------------------------------------------------------------------------- running a program


def _print_exception(exc: BaseException) -> None:
    """Print ``exc`` as Python would, without the frames of the audit itself."""
    tb = exc.__traceback__
    here = os.path.realpath(__file__)
    while tb is not None and (
        os.path.realpath(tb.tb_frame.f_code.co_filename) == here
        or tb.tb_frame.f_code.co_filename == runpy.__file__
        or tb.tb_frame.f_globals.get("__name__") == "runpy"
    ):
        tb = tb.tb_next
    sys.stderr.flush()
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _program_argv(argv: list[str], path0: str | None) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv[:] = argv
    if path0 is not None:
        sys.path.insert(0, path0)
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path


class Progress:
    """A one-line status on a terminal (``stream``) while a program runs:
    how many modules were observed, then that they are being analysed.
    Each update rewrites the line; :meth:`clear` erases it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def show(self, text: str) -> None:
        try:
            self.stream.write(f"\r\x1b[K{text}")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            pass

    def observed(self, count: int) -> None:
        self.show(f"no64 audit: {count} module(s) compiled so far")

    def clear(self) -> None:
        if self.shown:
            self.show("")
            self.shown = False


def _run(target: str, args: Sequence[str], module: bool) -> tuple[int, BaseException | None]:
    """Run the program; its exit status and the exception it ended with."""
    try:
        if module:
            with _program_argv([target, *args], os.getcwd()):
                runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            path0 = os.path.dirname(os.path.abspath(target))
            with _program_argv([target, *args], path0):
                # python runs a script under its absolute path (tracebacks, __file__)
                runpy.run_path(os.path.abspath(target), run_name="__main__")
    except SystemExit as exc:
        return _exit_status(exc), None
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return 130, exc
    except BaseException as exc:  # noqa: BLE001 - the program's own crash
        _print_exception(exc)
        return 1, exc
    return 0, None


def run_program(target: str, args: Sequence[str], *, module: bool = False,
                platform: str | None = None, progress: TextIO | None = None,
                as_is: bool = False) -> AuditReport:
    """Run a script (or ``-m`` module) in this process as ``python`` would;
    returns the report with ``exit_status`` set.

    By default the program runs as ``NO64_PLATFORMS=platform`` would run it
    (``platform`` defaults to ``$NO64_PLATFORMS``, else the backend the
    program runs on here) and the report says what the hook did.  With
    ``as_is`` it runs unchanged and ``platform`` only restricts the modules
    recorded.  The program's output is not touched; an exception it raises
    is printed as Python prints it and gives exit status 1.  With
    ``progress`` (a terminal stream), a status line counts the compiled
    modules while the program runs and is erased before the report.
    """
    line = Progress(progress) if progress is not None else None
    observed = line.observed if line is not None else None
    if as_is:
        x64: list[X64Event] = []
        with Observer(platform, observed) as obs, _X64Watch(x64, lambda: len(obs.modules)):
            status, crash = _run(target, args, module)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        if line is not None:
            line.show(f"no64 audit: analysing {len(obs.modules)} module(s)")
        try:
            report = build_report(ReportInput(_explain(obs.modules), program=target, view=AS_IS,
                                              x64=x64, crash=crash))
        finally:
            if line is not None:
                line.clear()
        report.exit_status = status
        return report
    label = platform or os.environ.get("NO64_PLATFORMS", "").strip()
    with Predictor(label, progress=observed) as pred:
        status, crash = _run(target, args, module)
        records = host.host_records()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if line is not None:
        line.show(f"no64 audit: analysing {len(pred.results)} module(s)")
    platforms = sorted(pred.platforms)
    if not label:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            import jax

            platforms = [jax.default_backend()]
    report = build_report(ReportInput(
        pred.results, program=target, view=HOOK, x64=pred.x64, dtypes=pred.dtypes, host=records,
        crash=crash, platforms=platforms, mode=str(Mode(pred.mode)),
        integer_policy=str(IntegerPolicy(pred.integer_policy)),
        # the range policy the hook's pass uses (its Config's, else the pass's default)
        policy=str(RangePolicy(pred.settings.get("policy", RangePolicy.DEFAULT))),
        x64_kept=pred.x64_kept))
    if line is not None:
        line.clear()
    report.exit_status = status
    return report


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


