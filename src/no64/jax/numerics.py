"""What float32 does to a float64 program, measured on the user's own data.

Static hints (:mod:`no64.analysis.float_hints`) guess where float32 changes
a float64 result; only the data can tell.  :func:`numerics` runs a function
twice on the CPU, equation by equation: its x64 program (the reference) and
the 32-bit program JAX traces from the same Python with x64 off (what the
default float policy runs: float64 computed as float32), on the same
arguments, the float64 ones rounded to float32 for the second (64-bit
integers narrowed to 32 bits, host sentinels such as ``INT64_MAX`` mapped to
the 32-bit extremes as the hook maps them; a result that keeps one counts
as equal).  A sampler of float64 values (``jax.random.normal``, ``uniform``,
``bernoulli``: a call whose own equations draw more random bits in the x64
program than in the 32-bit one) gives the 32-bit program the x64 program's
draw, rounded to float32: the hook runs the x64 draw (JAX's 32-bit program
draws other numbers); PRNG keys are compared by their bits.  Both traces
come from the same code, so their equations pair up one to one; nested
``jit``s and custom derivatives are followed inside, loops and branches are
compared as one step each (their outputs).  Each program is compiled once
for the CPU, every equation a computation of its own that returns its
values (the taken branch of a ``lax.cond``, its operands parameters), so
that each equation computes what it computes evaluated alone, bit for bit,
with no simplification or fusion across equations; a function measured
again runs the programs compiled for it.

For every equation whose float output differs from the reference by more
than ``tol`` (normwise: the largest difference over the largest magnitude
of that output; where the reference is 0 throughout, which leaves no
relative error to take, the largest difference itself, an *absolute*
error, said as such; float64's extremes standing for float32's, as no64
maps them, count as equal), or which makes ``inf``
or ``nan`` where the reference is finite, or whose integer or boolean
output differs (a comparison that flips, a trip count), the report names
the user's source line and says whether the line *introduces* the error
(its inputs were within ``tol``) or *amplifies* it (its output error is ten
times its inputs'), with the worst element, its reference value and what
float32 gave.  Lines that only carry an error are not reported, nor, when
the function's outputs are within ``tol`` of the reference, lines whose
float error does not reach them (a sum of deviations that cancels to
rounding noise); ``inf``/``nan`` and changed decisions are reported always.
A sum (``reduce_sum``, ``add``, ``sub``) whose x64 result is float64's own
rounding noise (within ``n`` epsilons of the sum of its ``n`` terms'
magnitudes: zero in exact arithmetic, such as a sum of deviations from
their mean) is not judged against that noise.  It then
runs the function under ``float_policy="pairs"`` (:func:`no64.jit`) and
says how far the outputs are from the reference there: the measured fix.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.locations import SourceLocation
from ..report import counted
from .host import eqn_source

#: What a line says where the outputs under ``float_policy="pairs"`` are not
#: finite or differ too ("within inf" would say nothing).
PAIRS_DO_NOT_HELP = ("float_policy='pairs' does not bring it closer (pairs compute float64 only, with "
                     "float32's range; an integer that needs 64 bits is exact under NO64_POLICY=exact)")

__all__ = ["NumericsLine", "NumericsReport", "numerics"]

#: Primitives whose body is another jaxpr, followed inside (by the name of
#: the parameter that holds it).
_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "custom_vjp_call_jaxpr": "fun_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}
#: An output more than this many times as wrong as its inputs amplifies the error.
_AMPLIFIES = 10.0


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
#: The kinds of a float error: relative (normwise), or absolute where the reference is 0 throughout.
_FLOAT = ("float", "absolute")


def _error(ref: np.ndarray, got: np.ndarray) -> tuple[str, float, tuple[int, ...], float, float]:
    """How far ``got`` (float32's) is from ``ref`` (x64's): ``(kind, error,
    index, reference, got)``, kind ``"ok"``, ``"float"`` (relative),
    ``"absolute"`` (a float error where ``ref`` is 0 throughout: no relative
    error exists), ``"inf/nan"`` or ``"differs"``."""
    ref = _host(ref)
    got = _host(got)
    if ref.shape != got.shape or ref.size == 0:
        return "ok", 0.0, (), 0.0, 0.0
    if ref.dtype.kind not in "fc":
        bad = ref != got.astype(ref.dtype) if got.dtype.kind not in "fc" else ref != got
        if ref.dtype.itemsize == 8 and got.dtype.kind in "iu" and got.dtype.itemsize == 4:
            # the 64-bit extremes a host sentinel maps to stand for them (as no64 maps them)
            for wide, narrow in _INT_SENTINELS[ref.dtype.kind]:
                bad &= ~((ref == wide) & (got == narrow))
        if not bad.any():
            return "ok", 0.0, (), 0.0, 0.0
        i = _index(bad)
        return "differs", float("inf"), i, float(ref[i]), float(got[i])
    r = ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    # float64's extremes, which float32's stand for (a mask's "minus infinity")
    f64max, f32max = np.finfo(np.float64).max, float(np.finfo(np.float32).max)
    sentinel = (np.abs(r) == f64max) & (np.abs(g) == f32max) & (np.sign(r) == np.sign(g))
    finite = np.isfinite(r) & ~sentinel
    gross = finite & ~np.isfinite(g)
    if gross.any():
        i = _index(gross)
        return "inf/nan", float("inf"), i, float(np.abs(r[i])), float(np.abs(g[i]))
    both = finite & np.isfinite(g)
    if not both.any():
        return "ok", 0.0, (), 0.0, 0.0
    # normwise: the largest difference over the largest magnitude of the result
    diff = np.where(both, np.abs(g - r), 0.0)
    scale = float(np.max(np.abs(r[both])))
    i = _index(diff == diff.max())
    if scale == 0.0:  # x64 gives 0 throughout: the difference itself
        return "absolute", float(diff[i]), i, float(np.real(r[i])), float(np.real(g[i]))
    return "float", float(diff[i]) / scale, i, float(np.real(r[i])), float(np.real(g[i]))


#: The 64-bit integer sentinels and the 32-bit extremes no64 maps them to, by kind.
_INT_SENTINELS = {
    "i": ((np.iinfo(np.int64).max, np.iinfo(np.int32).max), (np.iinfo(np.int64).min, np.iinfo(np.int32).min)),
    "u": ((np.iinfo(np.uint64).max, np.iinfo(np.uint32).max),),
}


def is_prng_key(x: Any) -> bool:
    """Whether ``x`` is an array of PRNG keys (``jax.random.key``'s dtype)."""
    import jax

    dtype = getattr(x, "dtype", None)
    return dtype is not None and not isinstance(dtype, np.dtype) and jax.dtypes.issubdtype(
        dtype, jax.dtypes.prng_key)


def _host(x: Any) -> np.ndarray:
    """``x`` as numpy data: an array of PRNG keys as its keys' bits
    (``jax.random.key_data``), which both programs compute alike."""
    import jax

    return np.asarray(jax.random.key_data(x)) if is_prng_key(x) else np.asarray(x)


def _worst(ref: Sequence[Any], got: Sequence[Any]) -> tuple[float, bool]:
    """The outputs' worst error, and whether it is absolute."""
    worst, absolute = 0.0, False
    for r, g in zip(ref, got):
        kind, e, *_ = _error(r, g)
        if kind != "ok" and e > worst:
            worst, absolute = e, kind == "absolute"
    return worst, absolute


def _index(mask: np.ndarray) -> tuple[int, ...]:
    flat = int(np.argmax(mask.reshape(-1)))
    return tuple(int(k) for k in np.unravel_index(flat, mask.shape)) if mask.shape else ()


# ---------------------------------------------------------------- the walk
_OK: tuple[str, float, tuple[int, ...], float, float] = ("ok", 0.0, (), 0.0, 0.0)
class _Walk:
    """The two programs' equations side by side.

    The walk runs in one of four modes, the same order of equations in each:
    ``"eager"`` evaluates each equation as it comes (an op compiled for the
    CPU at a time) and judges it; ``"collect"`` gathers the values the
    equations take that are not another equation's (arguments, constants,
    literals: *lifted*), per program; ``"trace"`` (inside ``jax.jit``) binds
    one program's equations to the compiled program's parameters, each
    equation's operands behind an optimization barrier, and records every
    output; ``"judge"`` reads the values the compiled programs returned, in
    that order, and judges the equations.  Each equation thus sees what it
    sees evaluated alone (parameters, not constants XLA could fold; nothing
    of its neighbours to fuse or simplify with), at one compile per program.
    """

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.mode = "eager"
        #: The program traced (``"trace"``): 0 the x64 one, 1 the 32-bit one.
        self.side = 0
        self.lifted: tuple[list[Any], list[Any]] = ([], [])
        self.recorded: tuple[list[Any], list[Any]] = ([], [])
        self._lifts: Any = iter(())
        #: ``"trace"``: the compiled program's parameter that is always true.
        self.gate: Any = None
        self._read = [0, 0]
        #: How many values each program's walk has evaluated so far (their
        #: places in ``recorded``).
        self._made = [0, 0]
        self._reset()

    def _reset(self) -> None:
        self.lines: dict[Any, NumericsLine] = {}
        self.equations = 0
        self.unpaired: str | None = None

    def run(self, j64: Any, j32: Any, a64: Sequence[Any], a32: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        """Evaluate the two closed jaxprs side by side; their outputs."""
        self._reset()
        return self._jaxpr(j64.jaxpr, j32.jaxpr, [self._lift(0, x) for x in j64.consts],
                           [self._lift(1, x) for x in j32.consts], [self._lift(0, x) for x in a64],
                           [self._lift(1, x) for x in a32])

    # -- what each mode does with a value, an equation, a whole jaxpr

    def _lift(self, side: int, x: Any) -> Any:
        """A value no equation of the walk computes (an argument, a constant, a literal)."""
        if self.mode == "collect":
            self.lifted[side].append(x)
            return None
        if self.mode == "trace":
            return next(self._lifts) if side == self.side else None
        return x

    def _apply(self, side: int, eqn: Any, operands: list[Any]) -> list[Any]:
        """``eqn``'s outputs on ``operands``, in program ``side``."""
        if self.mode == "eager":
            return _bound(eqn, operands)() if side == 0 else self._eval32(_bound(eqn, operands))
        return self._step(side, len(eqn.outvars),
                          lambda: _isolated(lambda ops: _bound(eqn, ops)(), operands, self.gate))

    def _whole(self, side: int, jaxpr: Any, consts: list[Any], args: list[Any]) -> list[Any]:
        """A jaxpr's outputs, its equations evaluated one at a time (not followed inside)."""
        from ._compat import bind_equation, eval_jaxpr, jaxpr_literal_type

        if self.mode == "eager":
            whole = functools.partial(eval_jaxpr, jaxpr, consts, *args)
            return whole() if side == 0 else self._eval32(whole)
        literal: Any = jaxpr_literal_type()
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args))

        def read(v: Any) -> Any:
            return self._lift(side, v.val) if isinstance(v, literal) else env[v]

        def run() -> list[Any]:
            for eqn in jaxpr.eqns:
                env.update(zip(eqn.outvars, _isolated(functools.partial(bind_equation, eqn),
                                                      [read(v) for v in eqn.invars], self.gate)))
            return [read(v) for v in jaxpr.outvars]

        if self.mode == "collect":
            for eqn in jaxpr.eqns:  # its literals, which its equations take as parameters
                for v in eqn.invars:
                    if isinstance(v, literal):
                        self._lift(side, v.val)
            for v in jaxpr.outvars:
                if isinstance(v, literal):
                    self._lift(side, v.val)
        return self._step(side, len(jaxpr.outvars), run)

    def _drawn(self, out64: list[Any], avals32: list[Any]) -> list[Any]:
        """The 32-bit program's values of a draw: the x64 program's
        (``out64``, the walk's last values of that program), each in its
        32-bit dtype (``avals32``)."""
        if self.mode in ("eager", "judge"):
            return [_narrowed_draw(x, aval.dtype) for x, aval in zip(out64, avals32)]
        if self.mode == "collect":
            start = self._made[0] - len(out64)
            return [self._lift(1, _Draw(start + k, tuple(aval.shape), aval.dtype)) for k, aval in enumerate(avals32)]
        return [self._lift(1, None) for _ in avals32]

    def _step(self, side: int, n: int, run: Callable[[], list[Any]]) -> list[Any]:
        self._made[side] += n
        if self.mode == "judge":
            at = self._read[side]
            self._read[side] = at + n
            return self.recorded[side][at:at + n]
        if self.mode == "trace" and side == self.side:
            out = list(run())
            self.recorded[side].extend(out)
            return out
        return [None] * n

    # -- the walk

    def _jaxpr(self, j64: Any, j32: Any, c64: list[Any], c32: list[Any], a64: list[Any],
               a32: list[Any], where: SourceLocation | None = None) -> tuple[list[Any], list[Any]]:
        """``where``: the line of the call whose body these are, for
        equations whose traceback holds no line of the user's."""
        from ._compat import jaxpr_literal_type

        literal: Any = jaxpr_literal_type()
        judged = self.mode in ("eager", "judge")
        env64: dict[Any, Any] = {}
        env32: dict[Any, Any] = {}
        err: dict[Any, float] = {}
        for v, x in zip(j64.constvars, c64):
            env64[v] = x
        for v, x in zip(j32.constvars, c32):
            env32[v] = x
        for v, x in zip(j64.invars, a64):
            env64[v] = x
        for v, x in zip(j32.invars, a32):
            env32[v] = x

        def read(env: dict[Any, Any], v: Any, side: int) -> Any:
            return self._lift(side, v.val) if isinstance(v, literal) else env[v]

        pairs = _aligned(list(j64.eqns), list(j32.eqns))
        if pairs is None:
            # the traces differ in structure: whole programs, compared by their outputs
            first = next((e for e, f in zip(j64.eqns, j32.eqns) if e.primitive.name != f.primitive.name),
                         j64.eqns[min(len(j64.eqns), len(j32.eqns)) - 1] if j64.eqns else None)
            if self.unpaired is None and first is not None:
                loc = eqn_source(first)
                self.unpaired = f"{first.primitive.name} at {loc.source if loc else '(no line)'}"
            return self._whole(0, j64, c64, a64), self._whole(1, j32, c32, a32)
        for e64, e32 in pairs:
            if e64 is None or e32 is None:
                # a convert one program has and the other does not (a no-op at 32 bits)
                if e64 is not None:
                    env64[e64.outvars[0]] = self._apply(0, e64, [read(env64, v, 0) for v in e64.invars])[0]
                else:
                    assert e32 is not None
                    env32[e32.outvars[0]] = self._apply(1, e32, [read(env32, v, 1) for v in e32.invars])[0]
                    src = e32.invars[0]
                    err[e32.outvars[0]] = 0.0 if isinstance(src, literal) else err.get(src, 0.0)
                continue
            in64 = [read(env64, v, 0) for v in e64.invars]
            in32 = [read(env32, v, 1) for v in e32.invars]
            in_err = max((err.get(v, 0.0) for v in e32.invars if not isinstance(v, literal)), default=0.0)
            sub = _CALLS.get(e64.primitive.name)
            body64 = e64.params.get(sub) if sub else None
            body32 = e32.params.get(sub) if sub else None
            if (body64 is not None and body32 is not None and hasattr(body64, "jaxpr")
                    and hasattr(body32, "jaxpr") and _draws_wider(body64.jaxpr, body32.jaxpr)):
                # a sampler drawing more random bits in the x64 program: the
                # 32-bit program takes the x64 draw, in its 32-bit dtypes
                out64 = self._apply(0, e64, in64)
                out32 = self._drawn(out64, [v.aval for v in e32.outvars])
                errors = [_OK] * len(out32)
            elif body64 is not None and body32 is not None and hasattr(body64, "jaxpr") and hasattr(body32, "jaxpr"):
                out64, out32 = self._jaxpr(body64.jaxpr, body32.jaxpr, [self._lift(0, x) for x in body64.consts],
                                           [self._lift(1, x) for x in body32.consts], in64, in32,
                                           eqn_source(e64) or where)
                errors = ([_error(r, g) for r, g in zip(out64, out32)] if judged
                          else [_OK] * len(out32))
            else:
                self.equations += 1
                out64 = self._apply(0, e64, in64)
                out32 = self._apply(1, e32, in32)
                errors = (self._judge(e64, in64, out64, out32, in_err, eqn_source(e64) or where) if judged
                          else [_OK] * len(out32))
            for v, x in zip(e64.outvars, out64):
                env64[v] = x
            for v32, x, (kind, e, *_) in zip(e32.outvars, out32, errors):
                env32[v32] = x
                err[v32] = e if kind != "ok" else 0.0
        return [read(env64, v, 0) for v in j64.outvars], [read(env32, v, 1) for v in j32.outvars]

    @staticmethod
    def _eval32(fn: Callable[[], Any]) -> Any:
        from ._compat import enable_x64

        with enable_x64(False):
            return list(fn())

    def _judge(self, e64: Any, in64: list[Any], out64: list[Any], out32: list[Any], in_err: float,
               loc: SourceLocation | None) -> list[tuple[str, float, tuple[int, ...], float, float]]:
        """Record the equation's line where its outputs are off; their errors."""
        errors = [_error(r, g) for r, g in zip(out64, out32)]
        if len(out64) == 1 and errors[0][0] in _FLOAT and _noise(e64, in64, np.asarray(out64[0])):
            # not listed; what reads it carries its error, whatever it does
            # with it (a square of noise is not an amplified error), and is
            # not listed for it
            _, _, i, rv, gv = errors[0]
            return [("noise", float("inf"), i, rv, gv)]
        worst: tuple[str, float, tuple[int, ...], float, float] | None = None
        for kind, e, i, rv, gv in errors:
            if kind == "ok" or (kind in _FLOAT and e <= self.tol):
                continue
            if worst is None or e > worst[1]:
                worst = (kind, e, i, rv, gv)
        if worst is None:
            return errors
        kind, e, i, rv, gv = worst
        absolute = kind == "absolute"
        if kind in _FLOAT:
            if in_err <= self.tol:
                kind = "introduces"
            elif e > _AMPLIFIES * in_err:
                kind = "amplifies"
            else:
                return errors  # carried: the line that made it is reported
        elif kind == "inf/nan" and in_err == float("inf"):
            return errors  # carried from an input that is not finite already
        key = (loc.file, loc.line) if loc is not None else ("", e64.primitive.name)
        found = self.lines.get(key)
        name = e64.primitive.name
        if found is None:
            self.lines[key] = NumericsLine(loc, [name], kind, e, in_err, i, rv, gv, absolute)
        else:
            if name not in found.primitives:
                found.primitives.append(name)
            if e > found.error:
                found.kind, found.error, found.input_error = kind, e, in_err
                found.index, found.reference, found.got, found.absolute = i, rv, gv, absolute
        return errors


def _bits_drawn(jaxpr: Any) -> list[Any]:
    """The dtypes of the integers ``jaxpr``'s own equations (not the calls
    among them) make from PRNG keys: random bits, a key's data."""
    from ._compat import jaxprs_in_params

    return [v.aval.dtype for e in jaxpr.eqns
            if any(is_prng_key(getattr(v, "aval", None)) for v in e.invars) and not jaxprs_in_params(e.params)
            for v in e.outvars
            if isinstance(getattr(v.aval, "dtype", None), np.dtype) and v.aval.dtype.kind in "ui"]


def _draws_wider(j64: Any, j32: Any) -> bool:
    """Whether a call draws other random bits in the x64 program than in the
    32-bit one (a sampler of float64 values draws 64 bits, of float32 32).
    The hook runs the x64 program's draw, its bits exact (JAX's 32-bit
    program draws other numbers)."""
    drawn = _bits_drawn(j64)
    return bool(drawn) and drawn != _bits_drawn(j32)


@dataclasses.dataclass(frozen=True)
class _Draw:
    """A value of the 32-bit program taken from the x64 program's: the
    ``index``-th value its walk evaluates, in ``dtype``."""

    index: int
    shape: tuple[int, ...]
    dtype: Any


def _narrowed_draw(x: Any, dtype: Any) -> np.ndarray:
    """An x64 program's drawn value in the 32-bit program's dtype (a float
    rounded to the nearest float32; an integer's low 32 bits)."""
    return np.asarray(x).astype(dtype)


def _noise(eqn: Any, operands: list[Any], ref: np.ndarray) -> bool:
    """Whether the x64 result of a sum is its own rounding noise: zero in
    exact arithmetic as far as float64 can tell (a sum of deviations from
    their mean), below ``n`` float64 epsilons of the sum of its ``n`` terms'
    magnitudes.  Measured relative to itself, float32's rounding of the same
    terms is an error of 1e8 and more that says nothing of the line."""
    name = eqn.primitive.name
    if ref.dtype.kind != "f" or ref.size == 0 or name not in ("reduce_sum", "add", "sub"):
        return False
    xs = [np.abs(np.asarray(x, np.float64)) for x in operands]
    if name == "reduce_sum":
        axes = tuple(eqn.params.get("axes", ()))
        terms = int(np.prod([xs[0].shape[a] for a in axes])) if axes else 1
        magnitude = float(np.max(np.sum(xs[0], axis=axes))) if xs[0].size else 0.0
    else:
        terms = 2
        magnitude = float(np.max(np.broadcast_to(xs[0], ref.shape) + np.broadcast_to(xs[1], ref.shape)))
    worst = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0))
    return 0.0 < magnitude and worst <= terms * float(np.finfo(np.float64).eps) * magnitude


#: Equations one trace may hold and the other not: converts that are no-ops
#: at 32 bits (``x.astype(jnp.int64)`` of an int32 ``x`` with x64 off).
_UNPAIRED_OK = frozenset({"convert_element_type", "copy", "copy_p"})


def _aligned(e64: list[Any], e32: list[Any]) -> list[tuple[Any, Any]] | None:
    """The two traces' equations paired one to one, a convert that only one
    of them has paired with ``None``; ``None`` where they differ otherwise."""
    out: list[tuple[Any, Any]] = []
    i = j = 0
    while i < len(e64) or j < len(e32):
        a = e64[i] if i < len(e64) else None
        b = e32[j] if j < len(e32) else None
        if a is not None and b is not None and a.primitive.name == b.primitive.name:
            out.append((a, b))
            i, j = i + 1, j + 1
        elif a is not None and a.primitive.name in _UNPAIRED_OK and len(a.outvars) == 1:
            out.append((a, None))
            i += 1
        elif b is not None and b.primitive.name in _UNPAIRED_OK and len(b.outvars) == 1:
            out.append((None, b))
            j += 1
        else:
            return None
    return out


def _bound(eqn: Any, operands: list[Any]) -> Callable[[], list[Any]]:
    """``eqn``'s primitive applied to ``operands``, when called."""
    return lambda: _as_list(eqn.primitive.bind(*operands, **eqn.params), eqn.primitive.multiple_results)


def _isolated(run: Callable[[list[Any]], list[Any]], operands: list[Any], gate: Any) -> list[Any]:
    """``run(operands)`` in a compiled program as if compiled alone: the
    taken branch of a ``lax.cond`` on ``gate`` (a parameter that is always
    true), which XLA compiles as a computation of its own, so that nothing
    of the program around it fuses or simplifies with it (an optimization
    barrier does not keep a multiply out of the fused sum that reads it, which
    the CPU then computes with fused multiply-adds).  A value of an extended
    dtype (a PRNG key) cannot be a branch's: there ``run`` is inlined (it
    computes integers, which fusing does not change)."""
    import jax
    from jax import lax

    if not all(isinstance(getattr(x, "dtype", None), np.dtype) for x in operands):
        return run(operands)
    shapes: list[Any] = []

    def taken(ops: list[Any]) -> list[Any]:
        out = list(run(list(ops)))
        shapes[:] = [jax.ShapeDtypeStruct(np.shape(x), getattr(x, "dtype", None),
                                          weak_type=bool(getattr(x, "weak_type", False))) for x in out]
        return out

    def skipped(ops: list[Any]) -> list[Any]:
        return [jax.numpy.zeros_like(x) for x in shapes]

    try:
        return list(lax.cond(gate, taken, skipped, operands))
    except TypeError:
        if shapes and all(isinstance(x.dtype, np.dtype) for x in shapes):
            raise
        return run(operands)  # an output of an extended dtype


def _as_list(out: Any, multiple: bool) -> list[Any]:
    return list(out) if multiple else [out]


def argument32(x: Any) -> Any:
    """An argument of the x64 program as the 32-bit program takes it:
    float64 (complex128) rounded to float32 (complex64), a 64-bit integer
    as 32 bits with its host sentinels (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``) mapped to the 32-bit extremes as the hook maps them, a
    Python int as a Python int (weakly typed, as given); PRNG keys and
    everything else as they are."""
    if is_prng_key(x):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        if not -(2**63) <= x < 2**64:
            raise ValueError(f"no64.numerics: an integer argument is {x}, beyond 64 bits")
        narrow = _narrowed(np.asarray(x, np.int64 if x < 2**63 else np.uint64))
        return int(narrow)
    if isinstance(x, (float, complex, bool)) or x is None:
        return x
    a = np.asarray(x)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype == np.complex128:
        return a.astype(np.complex64)
    if a.dtype in (np.dtype(np.int64), np.dtype(np.uint64)):
        return _narrowed(a)
    return x


def _narrowed(a: np.ndarray) -> np.ndarray:
    """A 64-bit integer array as 32 bits, its sentinels mapped as the hook
    maps them (:func:`no64.transforms.constants.narrow_integers`)."""
    from ..transforms.constants import narrow_integers

    done = narrow_integers(a.reshape(-1), a.dtype == np.uint64, "error")
    if done.values is None:
        raise ValueError(f"no64.numerics: an integer argument holds {done.first_bad}, which does not fit in 32 "
                         "bits and is no sentinel; the 32-bit program cannot take it (pass it as int32, or use "
                         "no64.jit's exact policy)")
    return done.values.reshape(a.shape)


def numerics(fn: Callable[..., Any], *args: Any, tol: float = 1e-3,
             pairs: bool | str = True) -> NumericsReport:
    """Measure, on these arguments, where float32 makes ``fn``'s float64
    results differ from its x64 program (see the module docstring).

    Args:
      fn: A JAX function of arrays (its keyword-free arguments).
      args: Its arguments, as the x64 program takes them (float64 data).
      tol: The relative error reported (per element; default 1e-3).
      pairs: Also run ``fn`` under ``float_policy="pairs"`` and report its
        outputs' error: the measured fix.  ``"listed"``: only when a line
        is listed (a program f32 computes well needs no fix, and compiling
        a large program for pairs can take minutes).

    Returns:
      A :class:`NumericsReport`; ``str()`` of it is the text report.

    Raises:
      ValueError: ``fn`` has effects (``jax.debug.print``, callbacks), which
        evaluating it again would repeat, or an integer argument does not
        fit in 32 bits.
    """
    import contextlib

    import jax

    from ..kinds import Mode
    from ._compat import enable_x64
    from .hook import Config, scoped

    with contextlib.ExitStack() as stack:
        # both programs as JAX runs them on the CPU, whatever no64 is
        # installed for: the reference is the x64 program itself
        stack.enter_context(scoped(Config(frozenset(), mode=Mode.OFF)))
        stack.enter_context(jax.default_device(jax.devices("cpu")[0]))
        with enable_x64(True):
            j64 = jax.make_jaxpr(fn)(*args)
            a64 = jax.tree.leaves(args)
        args32 = jax.tree.map(argument32, args)
        with enable_x64(False):
            j32 = jax.make_jaxpr(fn)(*args32)
            a32 = jax.tree.leaves(args32)
        effects = sorted({type(e).__name__ for e in (*getattr(j64, "effects", ()), *getattr(j32, "effects", ()))})
        if effects:
            raise ValueError(f"no64.numerics: {getattr(fn, '__name__', 'the function')} has effects "
                             f"({', '.join(effects)}): measuring it would run them again")
        walk = _Walk(tol)
        with enable_x64(True):
            out64, out32 = _evaluate(walk, j64, j32, a64, a32)
    output_error, output_absolute = _worst(out64, out32)
    lines = list(walk.lines.values())
    washed = 0
    if output_error <= tol:
        # the outputs hold: an intermediate float error that does not reach
        # them is not the program's (a sum of deviations that cancels to
        # rounding noise); gross ones (inf/nan, a changed decision) still are
        kept = [x for x in lines if x.kind in ("inf/nan", "differs")]
        washed, lines = len(lines) - len(kept), kept
    report = NumericsReport(getattr(fn, "__name__", "<function>"), tol, lines, output_error,
                            equations=walk.equations, unpaired=walk.unpaired, washed_out=washed,
                            output_absolute=output_absolute)
    if pairs not in (True, False, "listed"):
        raise ValueError(f"no64.numerics: pairs must be True, False or 'listed', not {pairs!r}")
    if pairs is True or (pairs == "listed" and lines):
        _measure_pairs(report, fn, args, out64)
    return report


#: The compiled replays of recent programs, by their two traces' text: a
#: function measured again (a training step's next call) runs them again.
_PROGRAMS: dict[tuple[int, str], Any] = {}
_PROGRAMS_KEPT = 16


def _evaluate(walk: _Walk, j64: Any, j32: Any, a64: list[Any], a32: list[Any]) -> tuple[list[Any], list[Any]]:
    """Both programs evaluated and judged equation by equation (``walk``'s
    outputs): each program compiled once, all its equations' values its
    outputs (see :class:`_Walk`); where that cannot be, one op at a time."""
    try:
        recorded = _replayed(walk.tol, j64, j32, a64, a32)
    except Exception:  # noqa: BLE001 - a program the replay cannot compile is evaluated op by op
        recorded = None
    if recorded is None:
        walk.mode = "eager"
    else:
        walk.mode, walk.recorded, walk._read = "judge", recorded, [0, 0]
    return walk.run(j64, j32, a64, a32)


def _replayed(tol: float, j64: Any, j32: Any, a64: list[Any], a32: list[Any]) -> tuple[list[Any], list[Any]]:
    """Every value each program's walk evaluates, in the walk's order, from
    one compiled program per side (the x64 one with x64 on)."""
    import jax

    from ._compat import enable_x64

    collect = _Walk(tol)
    collect.mode = "collect"
    collect.run(j64, j32, a64, a32)
    lifted = collect.lifted
    text = f"{j64}\n{j32}"
    # draws the 32-bit program takes from the x64 one: traced as their
    # shapes, given the x64 program's values once it has run
    traced = [jax.ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, _Draw) else x for x in lifted[1]]
    programs: list[Any] = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        for side in (0, 1):
            program = _PROGRAMS.pop((side, text), None)
            if program is None:
                # the x64 program compiles (XLA, without the GIL) while the 32-bit one is traced
                with enable_x64(side == 0):
                    replay = jax.jit(_replay(tol, side, j64, j32, len(a64), len(a32)))
                    lowered = replay.trace(traced if side else lifted[side], np.bool_(True)).lower()
                program = pool.submit(lowered.compile)
            programs.append(program)
        programs = [p.result() if isinstance(p, concurrent.futures.Future) else p for p in programs]
    recorded: list[list[Any]] = []
    for side, program in enumerate(programs):
        args = lifted[side]
        if side:
            args = [_narrowed_draw(recorded[0][x.index], x.dtype) if isinstance(x, _Draw) else x for x in args]
        with enable_x64(side == 0):
            recorded.append(list(program(args, np.bool_(True))))
        _PROGRAMS[(side, text)] = program
        while len(_PROGRAMS) > _PROGRAMS_KEPT:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
    return recorded[0], recorded[1]


def _replay(tol: float, side: int, j64: Any, j32: Any, n64: int, n32: int) -> Callable[[list[Any], Any], list[Any]]:
    """The function ``jax.jit`` compiles for one side: the lifted values in,
    every value the walk evaluates on that side out."""
    def replay(lifted: list[Any], gate: Any) -> list[Any]:
        walk = _Walk(tol)
        walk.mode, walk.side, walk._lifts, walk.gate = "trace", side, iter(lifted), gate
        walk.run(j64, j32, [None] * n64, [None] * n32)
        return walk.recorded[side]

    return replay


def _measure_pairs(report: NumericsReport, fn: Callable[..., Any], args: tuple[Any, ...],
                   out64: list[Any]) -> None:
    import jax

    from ..errors import No64Error
    from .jit import jit as no64_jit

    def numbers(*xs: Any) -> list[Any]:
        """``fn``'s outputs but its PRNG keys (which ``no64.jit`` does not return)."""
        return [x for x in jax.tree.leaves(fn(*xs)) if not is_prng_key(x)]

    numbers.__name__ = numbers.__qualname__ = getattr(fn, "__name__", "<function>")
    try:
        got = no64_jit(numbers, float_policy="pairs", restore_dtypes=True)(*args)
    except No64Error as exc:
        report.pairs_refusal = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return
    report.pairs_error, report.pairs_absolute = _worst([x for x in out64 if not is_prng_key(x)], got)
