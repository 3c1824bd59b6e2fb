"""What the measurement reports: a line of the user's program, and the report."""

from __future__ import annotations

import dataclasses
import math

from ...ir.locations import SourceLocation
from ...report import counted

#: What a line says where the outputs under ``float_policy="pairs"`` are not
#: finite or differ too ("within inf" would say nothing).
PAIRS_DO_NOT_HELP = ("float_policy='pairs' does not bring it closer (pairs compute float64 only, with "
                     "float32's range; an integer that needs 64 bits is exact under NO64_POLICY=exact)")


@dataclasses.dataclass
class NumericsLine:
    """One source line where float32 gives another result than float64."""

    location: SourceLocation | None
    #: The primitives computed there whose outputs were measured.
    primitives: list[str]
    #: ``"introduces"``, ``"amplifies"`` or ``"inf/nan"`` (gross: not finite
    #: where the reference is), ``"differs"`` (an integer or boolean result).
    kind: str
    #: The worst relative error of a float output (``inf`` for inf/nan);
    #: absolute where the reference is 0 throughout (see ``absolute``).
    error: float
    #: The inputs' worst relative error, for ``"amplifies"``.
    input_error: float
    #: The worst element: its index, the reference's value, float32's.
    index: tuple[int, ...]
    reference: float
    got: float
    #: ``error`` is an absolute error: the x64 output is 0 throughout.
    absolute: bool = False

    def __str__(self) -> str:
        where = self.location.source if self.location is not None and self.location.source else "(no line)"
        prims = ", ".join(self.primitives[:3]) + (" ..." if len(self.primitives) > 3 else "")
        if self.kind == "differs":
            what = f"differs from the x64 program at {list(self.index)}: {self.got:g}, x64 {self.reference:g}"
        elif self.kind == "inf/nan":
            what = (f"float32 gives {self.got!r} at {list(self.index)} where x64 gives {self.reference:.17g}")
        elif self.absolute:
            what = f"absolute error {self.error:.2g} where x64 is 0 (float32 {self.got:.9g} at {list(self.index)})"
        else:
            what = (f"relative error {self.error:.2g} (x64 {self.reference:.17g}, float32 {self.got:.9g} at "
                    f"{list(self.index)})")
            if self.kind == "amplifies":
                what += f", {self.error / max(self.input_error, 1e-300):.3g}x its inputs' {self.input_error:.2g}"
        return f"{where}: {self.kind} ({prims}): {what}"


@dataclasses.dataclass
class NumericsReport:
    """What :func:`numerics` measured."""

    #: The function's name.
    name: str
    tol: float
    #: The lines that introduce or amplify an error beyond ``tol``, in order.
    lines: list[NumericsLine]
    #: The worst relative error of the function's float outputs under float32.
    output_error: float
    #: The same under ``float_policy="pairs"`` (``None`` when not measured),
    #: or why pairs could not run it.
    pairs_error: float | None = None
    pairs_refusal: str | None = None
    #: Equations compared, and where the two traces stopped pairing up (the
    #: rest compared by the function's outputs only).
    equations: int = 0
    unpaired: str | None = None
    #: Lines whose float error exceeds ``tol`` but does not reach the
    #: outputs (not listed: the outputs are within ``tol``).
    washed_out: int = 0
    #: ``output_error`` (``pairs_error``) is absolute: the worst output is
    #: 0 throughout in the x64 program.
    output_absolute: bool = False
    pairs_absolute: bool = False

    def __str__(self) -> str:
        absolute = "absolute error: x64 gives 0 there; " if self.output_absolute else ""
        within = (f"float32 outputs within {self.output_error:.2g} of x64" if math.isfinite(self.output_error)
                  else "float32 outputs not finite or another value where x64's are not")
        head = (f"no64 numerics of {self.name}: {counted(self.equations, 'equation')} compared, {within} "
                f"({absolute}tolerance {self.tol:g}); {counted(len(self.lines), 'line')} beyond it")
        out = [head] + [f"  {line}" for line in self.lines]
        if self.washed_out:
            out.append(f"  ({counted(self.washed_out, 'line')} with a larger intermediate error that does not "
                       "reach the outputs)")
        if self.unpaired:
            out.append(f"  (compared by outputs only after {self.unpaired})")
        if self.pairs_refusal is not None:
            out.append(f"  float_policy='pairs' cannot run it: {self.pairs_refusal}")
        elif self.pairs_error is not None and not math.isfinite(self.pairs_error):
            out.append(f"  {PAIRS_DO_NOT_HELP}")
        elif self.pairs_error is not None:
            out.append(f"  under float_policy='pairs' the outputs are within {self.pairs_error:.2g} of x64"
                       + (ABSOLUTE if self.pairs_absolute else ""))
        return "\n".join(out)


# ---------------------------------------------------------------- errors
#: How a report says that an error is absolute (after ``within E of x64``).
ABSOLUTE = " (absolute error: x64 gives 0 there)"
