"""Cause building: the report from what was recorded (:func:`build_report`).

Values are grouped by primitive, user line and handling
(:class:`~no64.jax.audit.model.Group`), and groups are summed up as causes
(:class:`~no64.jax.audit.model.Cause`): where x64 was turned on, where
random bits are drawn, which host sentinels were mapped, what was refused
and why, with a hint of what no64 does and a way out.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from ...errors import (
    Boundary64BitError,
    ConstantRangeError,
    NarrowingError,
    No64Error,
    OutputRangeError,
    Remaining64BitError,
    TargetError,
    UnsupportedOpError,
)
from ...kinds import Handling, Mode
from ...report import counted
from ...rules import REGISTRY, spec_of
from .model import AuditReport, Cause, Group, HostNarrowing, ModuleAudit, _module_how
from .schema import AS_IS, CAUSE_KINDS, HOOK
from .sites import _NO_SITE, Site, relative_path
from .values import DtypeEvent, ModuleResult, TargetEvent, Value, X64Event, _one_line

__all__ = ["ReportInput", "build_report"]

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


def _hint(primitive: str, handling: Handling, elem: str, op: str, site: Site,
          refusal: str | None) -> str:
    """What no64 does with such a value, and what to do about it; where the
    user's line (or the library line it came through) names a 64-bit dtype,
    that it was requested explicitly."""
    if handling is Handling.REFUSED:
        return refusal or "no64 refuses this op"
    if handling is Handling.BLOCKED:
        return "no64 refuses this module because of another value (see refused)"
    how = _how_hint(primitive, handling, op, elem)
    named = site.names_64bit(elem) if elem in _DTYPE_NAMES else None
    if named == "here":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.source}"
    if named == "via":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.via} (via)"
    return how


_DTYPE_NAMES = {"i64": "int64", "si64": "int64", "ui64": "uint64", "f64": "float64",
                "complex<f64>": "complex128"}


#: The 64-bit float element types (the others are integers).
_FLOAT_ELEMENTS = frozenset({"f64", "complex<f64>"})


def _how_hint(primitive: str, handling: Handling, op: str, elem: str = "i64") -> str:
    if handling is Handling.EMULATED:
        return _DESCRIPTION[handling]
    if elem in _FLOAT_ELEMENTS and handling is Handling.OVERFLOW:
        # a float beyond float32's range, not an integer beyond 32 bits
        return ("beyond float32's range (|x| > 3.4e38): float32 makes it inf; float_policy=\"pairs\" "
                "does not help (its exponent range is float32's); scale the value")
    # what the op registry says about the op (or the op JAX's primitive lowers to)
    hint = spec_of(op).hint or next(
        (s.hint for name, s in REGISTRY.items() if s.hint and name.partition(".")[2] == primitive), None)
    if hint is not None:
        return hint
    if primitive in _RANDOM_PRIMITIVES:
        return "threefry counters: rewritten exactly"
    if primitive.startswith("<function"):
        if handling is Handling.UNPROVEN:
            return ("64-bit integer inputs of unknown range: pass int32 arrays, "
                    "or declare input ranges (no64 convert --range)")
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
    #: :data:`~no64.jax.audit.schema.HOOK` or :data:`~no64.jax.audit.schema.AS_IS`.
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
    #: The device profile named (``NO64_TARGET``; ``None``: the platform's), and
    #: what the hook did for the profile the modules were checked against.
    target: str | None = None
    targets: Sequence[TargetEvent] = ()


def build_report(given: ReportInput) -> AuditReport:
    """An :class:`AuditReport` from what was recorded (:class:`ReportInput`):
    module results, x64 events, truncated explicit dtypes, host records and
    the exception the program ended with, if any."""
    results, host = given.results, given.host
    report = AuditReport(program=given.program, view=given.view, platforms=list(given.platforms),
                         mode=given.mode, integer_policy=given.integer_policy, policy=given.policy,
                         target=given.target)
    # modules: identical results count as one module compiled several times
    merged: dict[tuple[Any, ...], ModuleAudit] = {}
    for r in results:
        hist: dict[str, int] = {}
        for v in r.values:
            hist[str(v.handling)] = hist.get(str(v.handling), 0) + 1
        how = _module_how(r)
        key: tuple[Any, ...] = (r.name, r.platform, r.status, r.refusal, tuple(sorted(hist.items())), how)
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
        HostNarrowing(str(e.kind), relative_path(e.location.file) if e.location.file else None,
                      e.location.line, e.detail, e.count)
        for e in host
    ]
    report.causes = _causes(report, given)
    return report


#: How a finding left for a device profile is handled: the device refuses
#: what its profile refuses; an op it may compute inexactly is unproven
#: under the default policy (the hook warns) and refused under ``strict``
#: and ``exact`` (the hook refuses the module).
_TARGET_HANDLING = {"rewritten": Handling.REWRITTEN, "refused": Handling.REFUSED, "inexact": Handling.UNPROVEN}


def _target_causes(given: ReportInput) -> list[Cause]:
    """One cause per line, op and kind of what the hook did for the device
    profile (:class:`TargetEvent`)."""
    strict = given.policy in ("strict", "exact")
    grouped: dict[tuple[Any, ...], list[TargetEvent]] = {}
    for e in given.targets:
        grouped.setdefault((e.site.file, e.site.line, e.site.via, e.op, e.kind, e.detail), []).append(e)
    out = []
    for (_, _, _, op, kind, detail), events in grouped.items():
        e = events[0]
        handling = _TARGET_HANDLING.get(kind, Handling.REFUSED)
        if strict and handling is Handling.UNPROVEN:
            handling = Handling.REFUSED
        short = op.split(".", 1)[-1]  # the op without its dialect
        where = e.site.where() if e.site.file is not None else "with no line in your code"
        via = f" via {e.site.via}" if e.site.via and e.site.file else ""
        modules = list(dict.fromkeys(x.module for x in events))
        if kind == "rewritten":
            text = f"made exact for target {e.target} {where}{via} ({short}): {detail}"
        else:
            code = f" [{e.code}]" if e.code else ""
            verb = {"refused": "refused by", "inexact": "inexact on"}.get(kind, kind)
            text = f"{verb} target {e.target}{code} {where}{via} ({short}): {detail}"
        out.append(Cause("target", handling, e.site.file, e.site.line, e.site.via, text, len(events), modules))
    return out


def _causes(report: AuditReport, given: ReportInput) -> list[Cause]:
    """Every cause of the report, one rule per kind, in the report's order
    (:func:`_order`)."""
    causes = _x64_causes(report, given) + _refusal_causes(given) + _target_causes(given)
    causes += _crash_causes(given, causes)
    causes += _dtype_causes(given) + _value_causes(given) + _float_causes(given) + _host_causes(report)
    return sorted(causes, key=_order)


def _order(c: Cause) -> tuple[Any, ...]:
    """x64 first, then the worst handling first, by kind, file and line."""
    first = 0 if c.kind == "x64" else 1
    return (first, -c.handling.rank, CAUSE_KINDS.index(c.kind), c.file or "~", c.line or 0)


def _x64_causes(report: AuditReport, given: ReportInput) -> list[Cause]:
    """x64: each place it was turned on, once, with what became of the
    modules compiled after it."""
    results, view = given.results, given.view
    causes: list[Cause] = []
    seen_x64: set[Any] = set()
    for e in given.x64:
        place = e.environment or e.site
        if place in seen_x64:
            continue
        seen_x64.add(place)
        after = list(dict.fromkeys(r.name for r in results if r.order > e.modules_before))
        after_results = [r for r in results if r.order > e.modules_before]
        if e.environment:
            where = f"by the environment ({e.environment})"
        else:
            where = e.site.where() + (f" (via {e.site.via})" if e.site.via else "")
        if view == HOOK and given.x64_kept:
            why = ", NO64_MODE=off" if report.mode == Mode.OFF else ""
            text = (f"x64 turned on {where} (no64 left it on{why}: {counted(len(after), 'module')} "
                    "compiled after it reach the backend unchanged)")
            handling = Handling.EXACT
        elif view == HOOK:
            parts = [f"{counted(len(after), 'module')} compiled after it {'is' if len(after) == 1 else 'are'} "
                     "32-bit"]
            if given.dtypes:
                parts.append(f"{counted(sum(d.count for d in given.dtypes), 'explicit 64-bit dtype')} "
                             "became 32-bit")
            if report.host:
                parts.append(f"{counted(sum(h.count for h in report.host), 'host value')} narrowed")
            text = f"x64 turned on {where} (no64 turned it off: {'; '.join(parts)})"
            handling = Handling.EXACT
        else:
            n = sum(len(r.values) for r in after_results)
            mods = len({r.name for r in after_results if r.values})
            text = (f"x64 turned on {where} ({counted(n, '64-bit value')} in {counted(mods, 'module')} "
                    "compiled after it; under the hook no64 turns it off)")
            handling = Handling.FLOAT32 if n else Handling.EXACT
        causes.append(Cause("x64", handling, e.site.file, e.site.line, e.site.via, text,
                            len(after), after[:50]))
    return causes


def _refusal_causes(given: ReportInput) -> list[Cause]:
    """Refusals: per refused module, at the value that is refused."""
    causes: list[Cause] = []
    for r in given.results:
        if r.status != "refused":
            continue
        culprit = next((v for v in r.values if v.handling is Handling.REFUSED), None)
        site = culprit.site if culprit is not None else _NO_SITE
        prim = f" ({culprit.primitive})" if culprit is not None else ""
        via = f" via {site.via}" if site.via and site.file else ""
        verb = "refused" if given.view == HOOK else "would be refused"
        text = (f"{verb} {site.where()}{prim}{via} in {r.name}: {_reason(r.refusal, r.error)}; "
                f"way out: {_way_out(r.error, r.refusal)}")
        causes.append(Cause("refused", Handling.REFUSED, site.file, site.line, site.via, text,
                            len(r.values), [r.name]))
    return causes


def _crash_causes(given: ReportInput, said: list[Cause]) -> list[Cause]:
    """The no64 error the program ended with, where no module's refusal and
    no target cause (among ``said``) says it already."""
    crash = given.crash
    if isinstance(crash, TargetError) and any(c.kind == "target" and c.handling is Handling.REFUSED
                                              for c in said):
        return []  # the refusal the target causes say, at their lines
    if not isinstance(crash, No64Error) or any(r.error is crash for r in given.results):
        return []
    loc = getattr(crash, "location", None)
    file = relative_path(loc.file) if loc is not None and loc.file else None
    line = loc.line if loc is not None else None
    site = Site(file, line)
    text = f"refused {site.where()}: {_reason(_one_line(crash))}; way out: {_way_out(crash, None)}"
    return [Cause("refused", Handling.REFUSED, file, line, None, text, 1, [])]


def _dtype_causes(given: ReportInput) -> list[Cause]:
    """Explicit 64-bit dtypes JAX truncated (x64 off) or no64 converted."""
    causes: list[Cause] = []
    for d in given.dtypes:
        via = f" via {d.site.via}" if d.site.via else ""
        if d.by_no64:
            how = f"no64 converts the data to {d.became}, each value checked"
        else:
            how = f"JAX makes it {d.became} (x64 is off)"
        text = f"{d.requested} requested explicitly {d.site.where()} (in {d.function}{via}): {how}"
        causes.append(Cause("explicit-dtype", Handling.EXACT, d.site.file, d.site.line, d.site.via,
                            text, d.count))
    return causes


def _drawn(v: Value) -> bool:
    """Whether ``v`` is a random draw's."""
    return v.primitive in _RANDOM_PRIMITIVES or (v.site.via or "").startswith("jax.random.")


#: Values by line (:func:`_group_values`), and the site that compiled a
#: draw without a line of the user's, with the JAX function called there.
_ValueGroups = dict[tuple[Any, ...], list[tuple[ModuleResult, Value]]]
_CompiledSites = dict[tuple[Any, ...], tuple[Any, str | None]]


def _group_values(results: Sequence[ModuleResult]) -> tuple[_ValueGroups, _CompiledSites]:
    """The values of the modules not refused, by line: random draws under a
    ``("random", file, line)`` key, every other value under ``("value", ...)``;
    and, for a draw whose module has no line of the user's, the site that
    compiled it and the JAX function called there, by key."""
    # lines that draw random bits: their other exact ui64 values (counter
    # constants) belong to the draw
    random_lines = {(v.site.file, v.site.line) for r in results for v in r.values if _drawn(v)}
    by_key: _ValueGroups = {}
    compiled_sites: _CompiledSites = {}
    for r in results:
        if r.status == "refused":
            continue  # said by the refusal causes
        called = r.called if (r.called or "").startswith("jax.random.") else None
        for v in r.values:
            at = r.compiled_at
            if called and at is not None and (v.site.file, v.site.line) == (at.file, at.line):
                # the user's line called the JAX sampler that compiled this
                # module: its values are that draw's, by that name (JAX's
                # tracebacks name inner samplers, or none, on some releases)
                v = dataclasses.replace(v, site=dataclasses.replace(v.site, via=called))
            rng = _drawn(v) or (
                (v.site.file, v.site.line) in random_lines and v.element == "ui64"
                and v.handling.rank <= Handling.REWRITTEN.rank
            )
            # integers and floats of one line are causes of their own (an
            # integer's range and a float's precision have their own hints)
            key = ("random", v.site.file, v.site.line) if rng else (
                "value", v.site.file, v.site.line, v.site.via if v.site.file is None else None,
                v.element in _FLOAT_ELEMENTS)
            if (rng and v.site.file is None and at is not None and at.file is not None
                    and ((r.called or "").startswith("jax.random.") or at.via is not None)):
                # a draw whose module has no line of the user's (JAX's
                # tracebacks stop at the jit a library call makes): the
                # user's line that called the JAX function, or the library,
                # compiling it
                key = ("random", at.file, at.line)
                compiled_sites[key] = (at, r.called)
            by_key.setdefault(key, []).append((r, v))
    return by_key, compiled_sites


def _value_causes(given: ReportInput) -> list[Cause]:
    """Values: random draws per line, everything else per line."""
    by_key, compiled_sites = _group_values(given.results)
    causes = []
    for key, items in by_key.items():
        values = [v for _, v in items]
        modules = list(dict.fromkeys(r.name for r, _ in items))
        site = values[0].site
        if key in compiled_sites:
            site, called = compiled_sites[key]
            if called is not None:
                values = [dataclasses.replace(v, site=dataclasses.replace(v.site, via=called)) for v in values]
        if key[0] == "random":
            causes.append(_random_cause(values, modules, site))
        else:
            causes.append(_value_cause(values, modules, site))
    return causes


def _random_cause(values: list[Value], modules: list[str], site: Site) -> Cause:
    """The cause of the values one line's random draws hold."""
    worst = max((v.handling for v in values), key=lambda h: h.rank)
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
    return Cause("random", worst, site.file, site.line, site.via, text, len(values), modules)


def _value_cause(values: list[Value], modules: list[str], site: Site) -> Cause:
    """The cause of the 64-bit values of one line (or of one module's
    boundary), by their worst handling, with a hint."""
    worst = max((v.handling for v in values), key=lambda h: h.rank)
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
    text = (f"{worst} {where}{via}: {counted(len(values), ','.join(elems) + ' value')} "
            f"from {', '.join(prims[:4])}{' ...' if len(prims) > 4 else ''}{split}: {hint}")
    return Cause("value", worst, site.file, site.line, site.via, text, len(values), modules)


def _float_causes(given: ReportInput) -> list[Cause]:
    """float64 results that f32 changes (the pass's float hints), per line
    and kind."""
    floats: dict[tuple[Any, ...], list[tuple[ModuleResult, Any]]] = {}
    for r in given.results:
        for fh in r.float_hints:
            file = relative_path(fh.location.file) if fh.location.file is not None else None
            floats.setdefault((file, fh.location.line, fh.kind), []).append((r, fh))
    causes = []
    for (file, line, kind), hinted in floats.items():
        fh = hinted[0][1]
        where = f"at {file}:{line}" if file is not None else "with no line in your code"
        text = f"float64 {kind} {where}: {fh.detail}"
        causes.append(Cause("float", Handling.PRECISION_REDUCED, file, line, None, text, len(hinted),
                            list(dict.fromkeys(r.name for r, _ in hinted))))
    return causes


def _host_causes(report: AuditReport) -> list[Cause]:
    """Host values no64 narrowed."""
    causes = []
    for h in report.host:
        where = f"at {h.source}" if h.source else "with no source line"
        host_floats = "host float64 value" if h.count == 1 else "host float64 values"
        name = {"sentinel": "host sentinel", "float-inexact": host_floats,
                "float-overflow": host_floats}.get(h.kind, f"host value ({h.kind})")
        text = f"{name} {where} {h.detail} ({counted(h.count, 'element')})"
        causes.append(Cause("host", h.handling, h.file, h.line, None, text, h.count))
    return causes
