"""The two programs' equations side by side: evaluated, compiled or replayed, each line judged
against the reference (introduces, amplifies), samplers given the x64 draw."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir.locations import SourceLocation
from ..host import eqn_source
from .errors import FLOAT, error_of, is_prng_key
from .report import NumericsLine

#: Primitives whose body is another jaxpr, followed inside (by the name of
#: the parameter that holds it).
_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "custom_vjp_call_jaxpr": "fun_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}
#: An output more than this many times as wrong as its inputs amplifies the error.
_AMPLIFIES = 10.0


# ---------------------------------------------------------------- the walk
_OK: tuple[str, float, tuple[int, ...], float, float] = ("ok", 0.0, (), 0.0, 0.0)
class Walk:
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
        from .._compat import bind_equation, eval_jaxpr, jaxpr_literal_type

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
            return [narrowed_draw(x, aval.dtype) for x, aval in zip(out64, avals32)]
        if self.mode == "collect":
            start = self._made[0] - len(out64)
            return [self._lift(1, Draw(start + k, tuple(aval.shape), aval.dtype)) for k, aval in enumerate(avals32)]
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
        from .._compat import jaxpr_literal_type

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
                errors = ([error_of(r, g) for r, g in zip(out64, out32)] if judged
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
        from .._compat import enable_x64

        with enable_x64(False):
            return list(fn())

    def _judge(self, e64: Any, in64: list[Any], out64: list[Any], out32: list[Any], in_err: float,
               loc: SourceLocation | None) -> list[tuple[str, float, tuple[int, ...], float, float]]:
        """Record the equation's line where its outputs are off; their errors."""
        errors = [error_of(r, g) for r, g in zip(out64, out32)]
        if len(out64) == 1 and errors[0][0] in FLOAT and _noise(e64, in64, np.asarray(out64[0])):
            # not listed; what reads it carries its error, whatever it does
            # with it (a square of noise is not an amplified error), and is
            # not listed for it
            _, _, i, rv, gv = errors[0]
            return [("noise", float("inf"), i, rv, gv)]
        worst: tuple[str, float, tuple[int, ...], float, float] | None = None
        for kind, e, i, rv, gv in errors:
            if kind == "ok" or (kind in FLOAT and e <= self.tol):
                continue
            if worst is None or e > worst[1]:
                worst = (kind, e, i, rv, gv)
        if worst is None:
            return errors
        kind, e, i, rv, gv = worst
        absolute = kind == "absolute"
        if kind in FLOAT:
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
    from .._compat import jaxprs_in_params

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
class Draw:
    """A value of the 32-bit program taken from the x64 program's: the
    ``index``-th value its walk evaluates, in ``dtype``."""

    index: int
    shape: tuple[int, ...]
    dtype: Any


def narrowed_draw(x: Any, dtype: Any) -> np.ndarray:
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
