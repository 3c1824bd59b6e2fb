"""The program runner: a script or ``-m`` module run in this process as
``python`` would run it, under the compile hook (:func:`run_program`, the
engine of ``no64 audit``) or as is; and the as-is report of recorded
modules (:func:`analyze`) or of one function (:func:`audit`).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from ...kinds import IntegerPolicy, Mode, RangePolicy
from ...report import counted
from .. import host
from .causes import ReportInput, build_report
from .measure import Measurer, measuring
from .model import AuditReport
from .observer import Compiled, Observer, _explain, _X64Watch
from .predictor import Predictor
from .schema import AS_IS, HOOK
from .values import X64Event, _module_name

__all__ = ["Progress", "analyze", "audit", "run_program"]

#: This package's directory: its frames are not the program's.
_PACKAGE_DIR = os.path.realpath(os.path.dirname(__file__)) + os.sep


def analyze(compiled: Sequence[Compiled], *, program: str | None = None) -> AuditReport:
    """Explain recorded modules as no64 would handle them (the as-is view)."""
    return build_report(ReportInput(_explain(compiled), program=program, view=AS_IS))


def audit(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> AuditReport:
    """Audit one function: lower ``jax.jit(fun)`` for ``args``/``kwargs`` and
    explain every 64-bit value of its module (nothing is compiled or run)."""
    import jax

    lowered = jax.jit(fun).lower(*args, **kwargs)
    module = lowered.compiler_ir("stablehlo")
    assert module is not None  # (JAX has a StableHLO form of every lowering)
    op = module.operation
    platform = jax.default_backend()
    text = op.get_asm(enable_debug_info=True)
    return analyze([Compiled(_module_name(op), platform, text)], program=getattr(fun, "__qualname__", None))


def _print_exception(exc: BaseException) -> None:
    """Print ``exc`` as Python would, without the frames of the audit itself."""
    tb = exc.__traceback__
    while tb is not None and (
        os.path.realpath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR)
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
        self.show(f"no64 audit: {counted(count, 'module')} compiled so far")

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


def _program_ended(line: Progress | None, modules: int) -> None:
    """The program has ended: its output flushed, ahead of the status line
    (if any), which now says its ``modules`` are analysed."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if line is not None:
        line.show(f"no64 audit: analysing {counted(modules, 'module')}")


def run_program(target: str, args: Sequence[str], *, module: bool = False,
                platform: str | None = None, progress: TextIO | None = None,
                as_is: bool = False, numerics: Measurer | None = None,
                profile: str | None = None) -> AuditReport:
    """Run a script (or ``-m`` module) in this process as ``python`` would;
    returns the report with ``exit_status`` set.

    By default the program runs as ``NO64_PLATFORMS=platform`` would run it
    (``platform`` defaults to ``$NO64_PLATFORMS``, else the backend the
    program runs on here) and the report says what the hook did.  With
    ``as_is`` it runs unchanged and ``platform`` only restricts the modules
    recorded.  The program's output is not touched; an exception it raises
    is printed as Python prints it and gives exit status 1.  ``profile``
    names the device profile the hook makes modules exact on and checks
    them against, as ``NO64_TARGET`` does (default: ``$NO64_TARGET``, else
    the platform's); what it did and found there are causes of kind
    ``"target"``, one per line.  With
    ``progress`` (a terminal stream), a status line counts the compiled
    modules while the program runs and is erased before the report.
    """
    if as_is and profile is not None:
        raise ValueError("a device profile is checked under the hook's view, not as is")
    line = Progress(progress) if progress is not None else None
    observed = line.observed if line is not None else None
    if as_is:
        x64: list[X64Event] = []
        with Observer(platform, observed) as obs, _X64Watch(x64, lambda: len(obs.modules)):
            if numerics is not None:
                numerics.quiet = obs.paused
            with measuring(numerics):
                status, crash = _run(target, args, module)
        _program_ended(line, len(obs.modules))
        try:
            report = build_report(ReportInput(_explain(obs.modules), program=target, view=AS_IS,
                                              x64=x64, crash=crash))
        finally:
            if line is not None:
                line.clear()
        report.exit_status = status
        report.numerics = numerics.summary() if numerics is not None else None
        return report
    label = platform or os.environ.get("NO64_PLATFORMS", "").strip()
    with Predictor(label, progress=observed, target=profile) as pred:
        if numerics is not None:
            numerics.quiet = pred.paused
            numerics.widen = True
        with measuring(numerics):
            status, crash = _run(target, args, module)
        records = host.host_records()
    _program_ended(line, len(pred.results))
    platforms = sorted(pred.platforms)
    if not label:
        from .._compat import backends_started

        if backends_started():
            import jax

            platforms = [jax.default_backend()]
    report = build_report(ReportInput(
        pred.results, program=target, view=HOOK, x64=pred.x64, dtypes=pred.dtypes, host=records,
        crash=crash, platforms=platforms, mode=str(Mode(pred.mode)),
        integer_policy=str(IntegerPolicy(pred.integer_policy)),
        # the range policy the hook's pass uses (its Config's, else the pass's default)
        policy=str(RangePolicy(pred.settings.get("policy", RangePolicy.DEFAULT))),
        x64_kept=pred.x64_kept, target=pred.settings.get("target"), targets=pred.targets))
    if line is not None:
        line.clear()
    report.exit_status = status
    report.numerics = numerics.summary() if numerics is not None else None
    return report
