"""What measuring a program's calls found, and how it is reported: the
measured lines (:class:`MeasuredLine`) and jitted functions
(:class:`MeasuredFunction`) gathered by :class:`no64.jax.audit.measure.Measurer`,
and their summary (:class:`NumericsSummary`) in text and JSON."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ...report import counted
from ..numerics import PAIRS_DO_NOT_HELP
from .sites import AtSource

__all__ = ["MeasuredFunction", "MeasuredLine", "NumericsSummary"]


@dataclasses.dataclass
class MeasuredLine(AtSource):
    """One user source line listed by :func:`no64.numerics` in one or more
    measured calls: its worst measurement over them."""

    file: str | None
    line: int | None
    #: ``"introduces"``, ``"amplifies"``, ``"inf/nan"`` or ``"differs"``
    #: (see :class:`no64.jax.numerics.NumericsLine`).
    kind: str
    #: The worst relative error (normwise; ``inf`` for inf/nan and differs;
    #: absolute where the x64 output is 0 throughout: see ``absolute``).
    error: float
    input_error: float
    primitives: list[str]
    #: The worst element: its index, the x64 program's value, float32's.
    index: list[int]
    reference: float
    got: float
    #: The jitted function(s) whose calls listed it.
    functions: list[str]
    #: How many measured calls listed it.
    calls: int = 1
    #: The worst outputs' error under ``float_policy="pairs"`` over those
    #: calls (``None`` when not measured), or why pairs cannot run one.
    pairs_error: float | None = None
    pairs_refusal: str | None = None
    #: ``error`` (``pairs_error``) is an absolute error: x64 gives 0 there.
    absolute: bool = False
    pairs_absolute: bool = False

    def message(self) -> str:
        """The line as the report prints it."""
        where = self.source or "(no line in your code)"
        prims = ", ".join(self.primitives[:3]) + (" ..." if len(self.primitives) > 3 else "")
        at = f"at {self.index}"
        if self.kind == "differs":
            what = f"differs from the x64 program {at}: {self.got:g}, x64 {self.reference:g}"
        elif self.kind == "inf/nan":
            what = f"float32 gives {_number(self.got)} {at} where x64 gives {self.reference:.9g}"
        elif self.absolute:
            what = f"absolute error {self.error:.2g} where x64 is 0 (float32 {self.got:.9g} {at})"
        else:
            what = f"relative error {self.error:.2g} (x64 {self.reference:.9g}, float32 {self.got:.9g} {at})"
            if self.kind == "amplifies":
                what += f", {self.error / max(self.input_error, 1e-300):.3g}x its inputs'"
        if self.pairs_refusal is not None:
            fix = f"float_policy='pairs' cannot run it: {self.pairs_refusal}"
        elif self.pairs_error is not None and not math.isfinite(self.pairs_error):
            fix = PAIRS_DO_NOT_HELP
        elif self.pairs_error is not None:
            fix = f"under float_policy='pairs' the outputs are within {self.pairs_error:.2g}"
            fix += " (absolute error: x64 gives 0 there)" if self.pairs_absolute else ""
        else:
            fix = "pairs not measured"
        calls = f"{counted(self.calls, 'call')} of {', '.join(self.functions)}"
        return f"{where}: {self.kind} ({prims}): {what}; {calls}; {fix}"

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for key in ("error", "input_error", "reference", "got", "pairs_error"):
            d[key] = _json_number(d[key])
        return d


@dataclasses.dataclass
class MeasuredFunction(AtSource):
    """One jitted function: its calls seen and measured."""

    name: str
    #: Where its Python function is defined.
    file: str | None
    line: int | None
    #: Calls made outside any trace, and how many of them were measured.
    calls: int = 0
    measured: int = 0
    #: Measured calls that listed a line.
    listed: int = 0
    #: The worst outputs' error under float32 and under pairs over the measured calls.
    output_error: float = 0.0
    pairs_error: float | None = None
    #: Whether they are absolute errors (x64 gives 0 there).
    output_absolute: bool = False
    pairs_absolute: bool = False
    #: Why pairs cannot run it (its first measurement under pairs), or ``None``.
    pairs_refusal: str | None = None
    #: Why a sampled call could not be measured (the first reason), or ``None``.
    not_measured: str | None = None
    #: Sampled calls that could not be measured.
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["output_error"] = _json_number(self.output_error)
        d["pairs_error"] = _json_number(self.pairs_error)
        return d


@dataclasses.dataclass
class NumericsSummary:
    """What the measurement of a run found: the settings, the functions and
    the listed lines (worst first)."""

    tol: float
    calls: int
    every: int
    functions: list[MeasuredFunction] = dataclasses.field(default_factory=list)
    lines: list[MeasuredLine] = dataclasses.field(default_factory=list)

    @property
    def measured(self) -> int:
        return sum(f.measured for f in self.functions)

    def headline(self) -> str:
        sampled = "every call" if self.calls == 0 else f"the first {self.calls}"
        if self.every > 1:
            sampled = f"1 call in {self.every}" + (f", at most {self.calls}" if self.calls else "")
        return (f"measured float error (x64 program vs 32-bit, tolerance {self.tol:g}): "
                f"{counted(self.measured, 'call')} of {counted(len(self.functions), 'jitted function')} "
                f"measured ({sampled} of each), {counted(len(self.lines), 'line')} beyond the tolerance")

    def unmeasured(self) -> list[str]:
        """What was not measured, one line each: a jitted function some
        sampled call of which could not be (which, and why), or that no
        call of a jitted function was measured at all."""
        out = []
        for f in self.functions:
            if f.not_measured is not None:
                where = f" ({f.source})" if f.source else ""
                count = f"{f.failed} of {counted(f.failed + f.measured, 'sampled call')}" if f.measured else "its calls"
                out.append(f"{f.name}{where}: {count} not measured: {f.not_measured}")
        if not self.measured and not out:
            out.append("nothing measured: no jitted function was called outside a trace")
        return out

    def text_lines(self) -> list[str]:
        out = [self.headline()]
        out += [f"  {line.message()}" for line in self.lines]
        out += [f"  {x}" for x in self.unmeasured()]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "tol": self.tol,
            "calls": self.calls,
            "every": self.every,
            "measured": self.measured,
            "functions": [f.to_dict() for f in self.functions],
            "lines": [line.to_dict() for line in self.lines],
        }


def _json_number(x: float | None) -> float | str | None:
    """A float JSON can hold: ``inf``/``nan`` as the strings ``"inf"``/``"nan"``."""
    if x is None or math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _number(x: float) -> str:
    return repr(float(x)) if not math.isfinite(x) else f"{x:.9g}"
