"""Measuring a function: its arguments as the 32-bit program takes them, both programs traced,
compiled once and walked, and the outputs under ``float_policy="pairs"``."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import is_prng_key, worst_error
from .report import NumericsReport
from .walk import Draw, Walk, narrowed_draw


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
    from ...transforms.constants import narrow_integers

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

    from ...kinds import Mode
    from .._compat import enable_x64
    from ..hook import Config, scoped

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
        walk = Walk(tol)
        with enable_x64(True):
            out64, out32 = _evaluate(walk, j64, j32, a64, a32)
    output_error, output_absolute = worst_error(out64, out32)
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


def _evaluate(walk: Walk, j64: Any, j32: Any, a64: list[Any], a32: list[Any]) -> tuple[list[Any], list[Any]]:
    """Both programs evaluated and judged equation by equation (``walk``'s
    outputs): each program compiled once, all its equations' values its
    outputs (see :class:`Walk`); where that cannot be, one op at a time."""
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

    from .._compat import enable_x64

    collect = Walk(tol)
    collect.mode = "collect"
    collect.run(j64, j32, a64, a32)
    lifted = collect.lifted
    text = f"{j64}\n{j32}"
    # draws the 32-bit program takes from the x64 one: traced as their
    # shapes, given the x64 program's values once it has run
    traced = [jax.ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, Draw) else x for x in lifted[1]]
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
            args = [narrowed_draw(recorded[0][x.index], x.dtype) if isinstance(x, Draw) else x for x in args]
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
        walk = Walk(tol)
        walk.mode, walk.side, walk._lifts, walk.gate = "trace", side, iter(lifted), gate
        walk.run(j64, j32, [None] * n64, [None] * n32)
        return walk.recorded[side]

    return replay


def _measure_pairs(report: NumericsReport, fn: Callable[..., Any], args: tuple[Any, ...],
                   out64: list[Any]) -> None:
    import jax

    from ...errors import No64Error
    from ..jit import jit as no64_jit

    def numbers(*xs: Any) -> list[Any]:
        """``fn``'s outputs but its PRNG keys (which ``no64.jit`` does not return)."""
        return [x for x in jax.tree.leaves(fn(*xs)) if not is_prng_key(x)]

    numbers.__name__ = numbers.__qualname__ = getattr(fn, "__name__", "<function>")
    try:
        got = no64_jit(numbers, float_policy="pairs", restore_dtypes=True)(*args)
    except No64Error as exc:
        report.pairs_refusal = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return
    report.pairs_error, report.pairs_absolute = worst_error([x for x in out64 if not is_prng_key(x)], got)
