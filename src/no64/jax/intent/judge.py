"""Judging the 32-bit program by its x64 meaning: what is unproven, the output errors, the
warnings at the user's lines (each once per process), and a program without an x64 meaning."""

from __future__ import annotations

import warnings
from typing import Any

from ...errors import (
    FloatPrecisionWarning,
    NarrowingError,
    NoX64MeaningError,
    NoX64MeaningWarning,
    OutputRangeError,
    UnprovenIntegerWarning,
)
from ...kinds import RangePolicy, SentinelUse, Verdict
from ...report import DemotionReport, Narrowing
from ...spec.registry import spec_of
from .. import host

#: (file, line) already warned about, once per process
_warned: set[tuple[str, int]] = set()
_warned_float: set[tuple[str, int]] = set()


class NoMeaning:
    """Why a program that asked for x64 has no x64 meaning here (its x64
    trace failed, or differs from the 32-bit one where the hook cannot put
    one in place of the other): under the default policy the 32-bit program
    runs with a :class:`no64.NoX64MeaningWarning` at the user's line;
    ``strict`` and ``exact`` refuse it (:class:`no64.NoX64MeaningError`)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"NoMeaning({self.reason!r})"


_warned_none: set[tuple[str, int]] = set()


def no_meaning(why: NoMeaning, name: str, policy: RangePolicy) -> None:
    """Say at the user's line that ``name`` asked for x64 and has no x64
    meaning here: a refusal (:class:`no64.NoX64MeaningError`) under
    ``strict`` and ``exact``, else one :class:`no64.NoX64MeaningWarning`
    per line (JAX's 32-bit program then runs)."""
    src = host.user_source()
    file, line = src.file or "<unknown>", src.line or 0
    where = f"{file}:{line}" if src.file else "<unknown line>"
    if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
        raise NoX64MeaningError(
            f"no64 (NO64_POLICY={policy}) refuses {name} at {where}: the program asked for x64, "
            f"but {why.reason}; its 32-bit program may compute other integers than its x64 "
            "program, and no64 cannot tell")
    if (file, line) in _warned_none:
        return
    _warned_none.add((file, line))
    warnings.warn_explicit(
        f"no64: {name} at {where} asked for x64, but {why.reason}; JAX's 32-bit program runs "
        "unjudged and may compute other integers than the x64 program (NO64_POLICY=strict "
        "refuses it)", NoX64MeaningWarning, file, line)


# ---------------------------------------------------------------------------
# Judging the 32-bit program by its x64 meaning
# ---------------------------------------------------------------------------


def _sentinel_question(n: Narrowing) -> bool:
    """Whether ``n`` is unproven only because a sentinel (``INT64_MAX`` ...)
    meets ordinary values that fit 32 bits (:attr:`Narrowing.collision`):
    a reduction's identity compared with its elements, a ``min`` whose
    identity never reaches the result of a non-empty reduction.  The 32-bit
    program holds the mapped 32-bit extreme there, by the pass's and the
    host's sentinel rules (reported as such); it is no 64-bit value computed
    differently.  (A select outside a reduction is not one: there the
    sentinel is the result, beside values that may be the same extreme.)"""
    return n.collision


def unproven(report: DemotionReport) -> list[Narrowing]:
    """The integer values of an x64 module that the 32-bit program may
    compute differently (sentinel questions left to the sentinel rules)."""
    return [n for n in report.narrowings if n.verdict in (Verdict.UNPROVEN, Verdict.OVERFLOW)
            and not _sentinel_question(n)]


def output_error(name: str, exc: NarrowingError) -> OutputRangeError:
    """The error for an x64 output that ``policy="exact"`` cannot return in
    the 32-bit array JAX lowered (the only value it narrows)."""
    bad = [exc.narrowing] if exc.narrowing is not None else []
    out = OutputRangeError(_output_message(name, bad, str(exc)), bad)
    out.location = exc.location  # type: ignore[attr-defined]
    return out


def checked_output_error(name: str, checked: list[Narrowing]) -> OutputRangeError:
    """The error for a run of ``name`` whose x64 program returned a value,
    checked by value (``policy="exact"``, ``outputs="checked"``), that does
    not fit in the 32-bit array JAX returns; raised at the run, it names the
    line that called it where that is another than the op's."""
    where = list(dict.fromkeys(_where(n) for n in checked))
    called = host.user_source().source
    via = f", called at {called}" if called and called not in where else ""
    return OutputRangeError(
        f"no64 (NO64_POLICY=exact): {name} returned a 64-bit integer of its x64 program at "
        f"{', '.join(where)}{via} that does not fit in the 32-bit array JAX returns under the hook "
        "(checked by value when it ran; no result is handed out); ways out: no64.jit(..., "
        "policy=\"exact\", restore_dtypes=True) returns it as int64 on the host", checked)


def _output_message(name: str, bad: list[Narrowing], fallback: str) -> str:
    if not bad:
        return f"no64 (NO64_POLICY=exact) refuses {name}: {fallback}"
    n = bad[0]
    interval = f" in [{n.interval[0]}, {n.interval[1]}]" if n.interval else ""
    return (
        f"no64 (NO64_POLICY=exact) refuses {name}: its x64 program returns a 64-bit integer"
        f"{interval} at {_where(n)} that is not proven to fit in the 32-bit array "
        "JAX returns under the hook; ways out: no64.assume(x, lo, hi) states a range the program "
        "knows, no64.jit(..., policy=\"exact\", restore_dtypes=True) returns it as int64 on the host"
    )


def _where(n: Narrowing) -> str:
    loc = n.location
    if loc.file is not None:
        return f"{loc.file}:{loc.line}" if loc.line is not None else loc.file
    return host.user_source().source or "<unknown line>"


def _by_line(items: list[Any], warned: set[tuple[str, int]]) -> dict[tuple[str, int], list[Any]]:
    """``items`` (each with a ``location``) by user line not in ``warned``
    yet, which takes them.  Items without a source position (the body of a
    private function JAX outlines, such as ``cumsum``'s) go with the line of
    a located ``func.call`` (else of the first located item) of the same
    report, and only where there is none with the caller's line."""
    by_line: dict[tuple[str, int], list[Any]] = {}
    unlocated = []
    first: tuple[str, int] | None = None
    call: tuple[str, int] | None = None
    for n in items:
        loc = n.location
        if loc.file is None or loc.line is None:
            unlocated.append(n)
            continue
        key = (loc.file, loc.line)
        first = first or key
        if spec_of(n.op).call:
            call = call or key
        by_line.setdefault(key, []).append(n)
    home = call or first
    if unlocated:
        if home is None:
            src = host.user_source()
            home = (src.file or "<unknown>", src.line or 0)
        by_line.setdefault(home, []).extend(unlocated)
    fresh = {k: v for k, v in by_line.items() if k not in warned}
    warned.update(fresh)
    return fresh


def meets_sentinel(n: Narrowing) -> bool:
    """Whether ``n`` is a comparison certain to meet a 64-bit sentinel with a
    value equal to its 32-bit extreme (``x > INT32_MAX`` of an ``INT64_MAX``):
    the pass records such a meeting at the comparison."""
    return spec_of(n.op).sentinels is SentinelUse.COMPARES


def warn_unproven(report: DemotionReport, name: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line not warned about yet."""
    for (file, line), items in _by_line(unproven(report), _warned).items():
        prims = sorted({(i.location.primitive or i.op.rsplit(".", 1)[-1]) for i in items})
        if all(meets_sentinel(i) for i in items):
            warnings.warn_explicit(
                f"no64: at {file}:{line} ({', '.join(prims)}, in {name}) the x64 program {items[0].detail}; "
                "the 32-bit program cannot tell the two apart. NO64_POLICY=exact (or no64.jit(..., "
                "policy=\"exact\")) computes it exactly; NO64_POLICY=strict refuses it",
                UnprovenIntegerWarning, file, line)
            continue
        worst = Verdict.OVERFLOW if any(i.verdict is Verdict.OVERFLOW for i in items) else Verdict.UNPROVEN
        what = ("overflows 32 bits" if worst is Verdict.OVERFLOW
                else "is not proven to fit in 32 bits")
        # on a target with native 64-bit integers only the results JAX returns are narrowed
        how = (f"no64 computes it as it is (native on target {report.target}) and returns it "
               "in the 32-bit array JAX returns, clipped to the 32-bit range" if report.narrowed_outputs
               else "no64 computes it as a 32-bit value there")
        message = (
            f"no64: the x64 program computes a 64-bit integer at {file}:{line} ({', '.join(prims)}, "
            f"in {name}) that {what}; {how}, which may "
            "differ from the x64 program's. NO64_POLICY=exact (or no64.jit(..., "
            "policy=\"exact\")) computes it exactly; NO64_POLICY=strict refuses it"
        )
        warnings.warn_explicit(message, UnprovenIntegerWarning, file, line)


def warn_float_hints(report: DemotionReport, name: str) -> None:
    """One :class:`no64.FloatPrecisionWarning` per user line of the report's
    float hints not warned about yet."""
    for (file, line), items in _by_line(list(report.float_hints), _warned_float).items():
        what = "; ".join(dict.fromkeys(f"[{h.kind}] {h.detail}" for h in items))
        message = (f"no64: float64 computed in f32 changes the result at {file}:{line} (in {name}): "
                   f"{what}")
        warnings.warn_explicit(message, FloatPrecisionWarning, file, line)


def refuse_or_warn_overflow(report: DemotionReport, name: str, policy: RangePolicy) -> None:
    """The float64 constants of a program's x64 program (closed-over numpy
    data, Python floats) that are finite beyond float32's range, and so
    become ``inf`` under either float policy: refused under ``strict`` and
    ``exact`` (:class:`no64.NarrowingError`, verdict ``overflow``, naming
    the value and its line), else one :class:`no64.FloatPrecisionWarning`
    per line naming the value -- as a float64 argument beyond that range is
    refused on the host (:class:`no64.HostRangeError`)."""
    from ...kinds import EventKind

    found = [e for e in report.events if e.kind is EventKind.FLOAT_OVERFLOW]
    if not found:
        return
    if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
        e = found[0]
        raise NarrowingError(e.op, e.location, Verdict.OVERFLOW, (0, 0), policy,
                             reason=f"{e.detail} in {name}'s x64 program, under either float policy "
                                    "(float32 pairs keep float32's range)",
                             hint="scale the data (the default policy warns and lets it become inf)")
    for (file, line), items in _by_line(found, _warned_float).items():
        what = "; ".join(dict.fromkeys(e.detail for e in items))
        warnings.warn_explicit(
            f"no64: float64 computed in f32 changes the result at {file}:{line} (in {name}): [overflow] "
            f"{what}; float_policy=\"pairs\" does not help (its exponent range is f32's); "
            "NO64_POLICY=strict refuses it", FloatPrecisionWarning, file, line)


def clear_warned() -> None:
    """Forget which lines were warned about (for tests)."""
    _warned.clear()
    _warned_float.clear()
    _warned_none.clear()
    host.clear_warned()
