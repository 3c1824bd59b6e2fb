"""The value model: what was compiled, each 64-bit value attributed and
judged, and what else a run records.

Each 64-bit value of a compiled module (:class:`Value`) gets a handling
(:class:`no64.kinds.Handling`) and a site (:class:`~no64.jax.audit.sites.Site`);
a module (:class:`ModuleResult`) is passed, rewritten or refused.  Where x64
was turned on (:class:`X64Event`) and which explicit 64-bit dtypes JAX
truncated or no64 took over (:class:`DtypeEvent`) are recorded beside them,
and what the hook did for a device profile (:class:`TargetEvent`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ...errors import Boundary64BitError, No64Error, Remaining64BitError
from ...ir._mlir import ir, make_context
from ...kinds import EventKind, Handling, RangePolicy, Verdict
from ...options import Options
from ...rules import spec_of
from ...transforms.demote import demote
from ...transforms.scan import Finding
from .sites import CallGraph, Site, _helper_name

__all__ = ["DtypeEvent", "ModuleResult", "TargetEvent", "Value", "X64Event"]

_ELEMENT = re.compile(r"complex<f64>|[su]?i64|ui64|f64")
# Per-value verdicts come from the report's narrowing records; these event
# kinds only repeat them.
_PER_VALUE_EVENTS = frozenset({EventKind.UNPROVEN, EventKind.OVERFLOW})
#: The 64-bit float element types (the others are integers).
_FLOAT_ELEMENTS = frozenset({"f64", "complex<f64>"})
#: Events of float values only, and of integer values only (the others are of an op).
_FLOAT_EVENTS = frozenset({EventKind.FLOAT_INEXACT, EventKind.FLOAT_OVERFLOW, EventKind.PAIR_RANGE})
_INTEGER_EVENTS = frozenset({EventKind.SATURATED, EventKind.WRAPPED, EventKind.EMULATED})
#: Narrowing verdicts of floats as well as integers (a float rule's reduced
#: precision, an aggregate's); every other verdict is an integer's.
_ANY_ELEMENT_VERDICTS = frozenset({Verdict.PRECISION_REDUCED})


@dataclasses.dataclass(frozen=True)
class Value:
    """One 64-bit value of a compiled module, attributed and judged."""

    op: str
    primitive: str
    element: str
    handling: Handling
    site: Site
    function: str | None = None
    #: The outermost of JAX's public random functions it is computed in.
    helper: str | None = None


@dataclasses.dataclass
class ModuleResult:
    """One compiled module: what no64 does (or did) with it, and its values."""

    name: str
    platform: str
    status: str  # passed | rewritten | refused
    values: list[Value]
    refusal: str | None = None
    error: BaseException | None = None
    order: int = 0
    emulated: int = 0  # the report's values_emulated
    float_hints: list[Any] = dataclasses.field(default_factory=list)  # the report's float hints
    #: the user's line whose call compiled the module, and the JAX function
    #: it called there (``jax.random.normal``), where the stack had them
    compiled_at: Any = None
    called: str | None = None


def _element(type_text: str) -> str:
    m = _ELEMENT.search(type_text)
    return m.group(0) if m else type_text


def _primitive(f: Finding) -> str:
    spec = spec_of(f.op)
    if spec.function:
        return "<function argument>" if "argument" in f.role else "<function result>"
    if spec.constant:
        # JAX names a literal after the function or primitive that needed it.
        return "constant"
    return f.location.primitive or f.op


def _refusal_handlings(findings: list[Finding], exc: BaseException) -> list[Handling]:
    if isinstance(exc, Remaining64BitError) and not isinstance(exc, Boundary64BitError):
        return [Handling.REFUSED] * len(findings)
    if isinstance(exc, Boundary64BitError):
        bad = {(f.op, f.role, f.function) for f in exc.findings}
        out = [Handling.REFUSED if (f.op, f.role, f.function) in bad else Handling.BLOCKED
               for f in findings]
    else:
        op = getattr(exc, "op", None)
        loc = getattr(exc, "location", None)
        out = [
            Handling.REFUSED
            if op is not None and f.op == op and (loc is None or f.location == loc)
            else Handling.BLOCKED
            for f in findings
        ]
    if Handling.REFUSED not in out and findings:
        out[0] = Handling.REFUSED
    return out


def _report_handlings(findings: list[Finding], report: Any) -> list[Handling]:
    """Join findings with a :class:`~no64.report.DemotionReport`: a
    narrowed value by its narrowing record, an op-level event (rewrite,
    rounded constant) by op and location; the most severe handling wins."""
    # an op is known by its name and location, which several ops share (the
    # literals of a jitted function all have its location): a float
    # constant's rounding is a float's, never an integer's, and an integer
    # policy's clipping an integer's
    by_op: dict[tuple[str, Any, bool | None], Handling] = {}
    for e in report.events:
        if e.kind in _PER_VALUE_EVENTS:
            continue
        floats = True if e.kind in _FLOAT_EVENTS else False if e.kind in _INTEGER_EVENTS else None
        _worst(by_op, (e.op, e.location, floats), Handling.of_event(e.kind))
    # a record is known by its op, location and value, which two private
    # functions of a module can share (jnp.cumsum of int64 values and of
    # float64 values); a verdict of the integer range analysis, a sentinel
    # or an emulated pair is an integer's, never a float's
    by_value: dict[tuple[Any, ...], Handling] = {}
    of_integers: dict[tuple[Any, ...], Handling] = {}
    for n in report.narrowings:
        table = by_value if n.verdict in _ANY_ELEMENT_VERDICTS and n.interval is None else of_integers
        _worst(table, (n.op, n.location, n.role, n.index), Handling.of_verdict(n.verdict))
    out = []
    for f in findings:
        floating = _element(f.type) in _FLOAT_ELEMENTS
        h = None
        for ho in (by_op.get((f.op, f.location, None)), by_op.get((f.op, f.location, floating))):
            if ho is not None and (h is None or ho.rank > h.rank):
                h = ho
        if f.value is not None:
            key = (f.op, f.location, *f.value)
            for hv in (by_value.get(key), None if floating else of_integers.get(key)):
                if hv is not None and (h is None or hv.rank > h.rank):
                    h = hv
        if h is None:
            float32 = floating and not spec_of(f.op).constant
            h = Handling.FLOAT32 if float32 else Handling.EXACT
        out.append(h)
    return out


def _handlings(text: str, findings: list[Finding], integer_policy: str = "error",
               float_hints: list[Any] | None = None) -> tuple[list[Handling], No64Error | None]:
    """The handling of each finding of the module ``text``, and the error if
    no64 refuses it (:func:`no64.demote` on a private copy)."""
    with make_context():
        copy = ir.Module.parse(text)
    try:
        report = demote(copy, Options(policy=RangePolicy.PERMISSIVE, integer_policy=integer_policy))
    except No64Error as exc:
        return _refusal_handlings(findings, exc), exc
    if float_hints is not None:
        float_hints.extend(report.float_hints)
    return _report_handlings(findings, report), None


def _worst(table: dict[Any, Handling], key: Any, h: Handling) -> None:
    old = table.get(key)
    if old is None or h.rank > old.rank:
        table[key] = h


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _values(module: ir.Module, findings: list[Finding], handlings: list[Handling],
            call_site: Site | None = None) -> list[Value]:
    """The module's values; ``call_site``: the user's line that compiled it,
    for the entry's arguments and results where its return op names no line."""
    graph = CallGraph(module)
    # A module that is one of JAX's private helpers, compiled on its own
    # (jax.random.permutation called outside jit compiles jit__shuffle).
    name = _module_name(module.operation)
    helper = None
    if name.startswith("jit__"):
        helper = _helper_name(name[4:])
        if not helper.startswith("jax."):
            helper = None
    out = []
    constants: dict[tuple[str | None, str], int] = {}
    for f, h in zip(findings, handlings):
        site = graph.site(f.function, f.location.raw)
        if spec_of(f.op).constant and f.function is not None:
            # a literal where it is used, not at the jit call line
            k = constants[(f.function, f.location.raw)] = constants.get((f.function, f.location.raw), -1) + 1
            user = graph.constant_user(f.function, f.location.raw, k)
            if user is not None:
                at_user = graph.site(f.function, user)
                if at_user.file is not None:
                    site = at_user
        if site.file is None and spec_of(f.op).function and graph.is_entry(f.function) and f.function in graph.returns:
            # the entry's arguments and results: the line that called the jitted function
            site = graph.site(None, graph.returns[f.function])
        if site.file is None and spec_of(f.op).function and graph.is_entry(f.function) and call_site is not None:
            # JAX 0.7 gives the entry's return no location: the line compiling it
            site = call_site
        if helper is not None and site.via is None:
            site = dataclasses.replace(site, via=helper)
        out.append(Value(f.op, _primitive(f), _element(f.type), h, site, f.function,
                         graph.outer_helper(f.function)))
    return out


def _module_name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else "module"


@dataclasses.dataclass(frozen=True)
class X64Event:
    """x64 turned on: at a user's line, or by the environment; ``modules``
    compiled before it."""

    site: Site
    environment: str | None
    modules_before: int


@dataclasses.dataclass(frozen=True)
class TargetEvent:
    """What the hook did with one op for a device profile
    (:func:`no64.jax.hook.check_device`): ``kind`` ``"rewritten"`` (made
    exact there: ``detail`` says how), or a finding left, ``"refused"`` or
    ``"inexact"`` (``detail``: the profile's reason, ``code``: the vendor's
    error code), in module ``module`` at the user's ``site``."""

    kind: str
    op: str
    site: Site
    target: str
    module: str
    detail: str
    code: str = ""


@dataclasses.dataclass
class DtypeEvent:
    """An explicit 64-bit dtype JAX truncated (x64 off), or that no64 took
    over (``by_no64``: ``jnp.array``/``jnp.asarray`` of 64-bit host data,
    converted and range-checked by no64)."""

    site: Site
    requested: str
    became: str
    function: str
    count: int = 1
    by_no64: bool = False
