"""Float error measured on a program's own calls: ``no64 audit --numerics``
and ``pytest --no64-numerics``.

While a :class:`Measurer` is active, every call of the program's functions
made by ``jax.jit`` -- whenever they were jitted, before the measurement
began too -- is taken in JAX's Python dispatch (:func:`install`: the
program's calls are kept off jaxlib's C++ fast path, through
:func:`no64.jax._compat.route_python_jit_calls`), first run as usual, its
result returned unchanged, and sampled calls are then measured with
:func:`no64.numerics` on host copies of the call's own arguments, taken
before the call (a donated argument is gone after it): the x64 program
against the 32-bit one, equation by equation.  A call is sampled when it is
the 1st, ``1 + every``-th, ``1 + 2 every``-th ... call of its function, up to
``calls`` measured calls per function (``0``: no limit).  A function is
known by its Python function's code (a ``jax.jit(lambda ...)`` made anew in
a loop is one function).

Only calls made outside any trace are measured (a jitted function called
inside another one is measured as part of it).  Each argument goes in as
the x64 program has it: numpy data as it is, a ``jax.Array`` no64 noted as
holding a 64-bit value of the x64 program (:mod:`no64.jax.x64_arrays`) in
that dtype; under the hook, while the program asks for x64 (which no64
turned off), a float32 (complex64) ``jax.Array`` as float64 (complex128),
the x64 program's default float; any other ``jax.Array`` in its own dtype.  Positional arguments
that are arrays (or pytrees of arrays) are the measured function's inputs;
the rest (static arguments, Python numbers, keyword arguments) are bound as
they were given, their 64-bit integers (a host sentinel: ``INT64_MAX``)
narrowed for the 32-bit program as the hook narrows them; a function of
Python numbers alone is measured with no inputs.  PRNG keys (typed, or raw
``uint32`` words) are copied as keys of their kind.

Measured lines are gathered per user source line over calls
(:class:`MeasuredLine`: the worst error, the calls that listed it, the
outputs' error under ``float_policy="pairs"``); a function none of whose
calls can be measured (effects that running it again would repeat, an
integer argument beyond 32 bits that is no sentinel, an argument the trace
does not take) is said once, with why (:class:`MeasuredFunction`), and
fails ``--fail-on numerics`` (:meth:`NumericsSummary.unmeasured`).  What
no64 warns of while measuring (the pairs run) is not the program's and is
not shown.  Nothing the measurement
does reaches the program: an error in it is recorded, never raised.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np

from .. import interception
from .numerics_summary import MeasuredFunction, MeasuredLine, NumericsSummary
from .sites import relative_path

__all__ = ["Measurer", "install"]


class _Function:
    def __init__(self, record: MeasuredFunction) -> None:
        self.record = record
        self.seen = 0


class Measurer:
    """Measure jitted calls while active (a context manager; see the module
    docstring; :func:`measuring` also routes the program's jitted calls
    here, which :func:`install` does for good).  ``quiet`` is entered around each measurement: the audit
    stops recording there, so that what the measurement compiles is not
    the program's."""

    def __init__(self, *, calls: int = 3, every: int = 1, tol: float = 1e-3, pairs: bool = True,
                 quiet: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        if calls < 0 or every < 1 or not tol > 0:
            raise ValueError("calls >= 0, every >= 1 and tol > 0")
        self.calls, self.every, self.tol, self.pairs = calls, every, tol, pairs
        self.quiet = quiet
        #: Under the hook: a float32 ``jax.Array`` is float64 in the x64
        #: program when the program asked for x64 (see :func:`_host_copies`).
        self.widen = False
        self._functions: dict[Any, _Function] = {}
        self._lines: dict[tuple[Any, ...], MeasuredLine] = {}
        self._lock = threading.Lock()
        self._previous: Measurer | None = None

    def __enter__(self) -> "Measurer":
        global _active
        self._previous, _active = _active, self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _active
        _active = self._previous

    # -- the calls

    def _function(self, fun: Any) -> _Function:
        """The record of a jitted function, known by its Python function's
        code (and named, and placed, by the function under its wrappers)."""
        base = _unwrapped(fun)
        own, code = getattr(fun, "__code__", None), getattr(base, "__code__", None)
        name = getattr(fun, "__qualname__", None) or getattr(base, "__qualname__", None) or "<jitted>"
        key: Any = id(fun)
        if code is not None:
            key = (code.co_filename, code.co_firstlineno, str(name),
                   (own.co_filename, own.co_firstlineno) if own is not None else None)
        found = self._functions.get(key)
        if found is None:
            file = relative_path(code.co_filename) if code is not None else None
            line = code.co_firstlineno if code is not None else None
            found = self._functions[key] = _Function(MeasuredFunction(str(name), file, line))
        return found

    def _sampled(self, fun: Any) -> _Function | None:
        with self._lock:
            f = self._function(fun)
            f.seen += 1
            f.record.calls += 1
            n = f.seen - 1
            if n % self.every or (self.calls and n // self.every >= self.calls):
                return None
            return f

    def call(self, call: Any) -> Any:
        """Run a jit call (a :class:`no64.jax._compat.PythonJitCall`: its
        function, arguments and dispatch), and measure it if it is sampled."""
        if getattr(_measuring, "on", False) or not _concrete(call.args, call.kwargs):
            return call.run()
        f = self._sampled(call.fun)
        if f is None:
            return call.run()
        try:
            with self.quiet() if self.quiet is not None else nullcontext():
                snapshot: tuple[Any, Any] | None = (_host_copies(call.args, self.widen and _x64_requested()),
                                                    call.kwargs)
        except Exception:  # noqa: BLE001 - the call still runs; the measurement says why not
            snapshot = None
        out = call.run()
        self._measure(f, call, snapshot)
        return out

    def _measure(self, f: _Function, call: Any, snapshot: tuple[Any, Any] | None) -> None:
        import jax

        from ..numerics import numerics

        record = f.record
        _measuring.on = True
        try:
            with self.quiet() if self.quiet is not None else nullcontext(), warnings.catch_warnings():
                # what no64 says of the programs it measures (the pairs run)
                # is not the program's
                warnings.simplefilter("ignore")
                if snapshot is None:
                    raise ValueError("its arguments cannot be copied to the host")
                if call.static_argnums is None:
                    raise ValueError("its jit options (static arguments) cannot be read")
                inputs, bind = _split(*snapshot)
                # the function as jit traces it: its static arguments static,
                # the others (Python numbers too) traced
                jitted = jax.jit(call.fun, static_argnums=call.static_argnums,
                                 static_argnames=call.static_argnames)

                def measured(*xs: Any) -> Any:
                    full, kw = bind(xs)
                    return jitted(*full, **kw)

                measured.__name__ = measured.__qualname__ = record.name
                # pairs measured where a line is listed, once per function:
                # a large program's pairs compile can take minutes
                once = record.pairs_error is None and record.pairs_refusal is None
                report = numerics(measured, *inputs, tol=self.tol, pairs="listed" if self.pairs and once else False)
        except Exception as exc:  # noqa: BLE001 - measuring never breaks the program
            with self._lock:
                record.failed += 1
                if record.not_measured is None:
                    record.not_measured = _why(exc)
            return
        finally:
            _measuring.on = False
        with self._lock:
            record.measured += 1
            if report.output_error > record.output_error:
                record.output_error, record.output_absolute = report.output_error, report.output_absolute
            if report.pairs_error is not None and report.pairs_error >= (record.pairs_error or 0.0):
                record.pairs_error, record.pairs_absolute = report.pairs_error, report.pairs_absolute
            if report.pairs_refusal is not None and record.pairs_refusal is None:
                record.pairs_refusal = report.pairs_refusal
            if report.lines:
                record.listed += 1
            for line in report.lines:
                self._add(line, record.name, record.pairs_error, record.pairs_refusal, record.pairs_absolute)

    def _add(self, line: Any, function: str, pairs_error: float | None, refusal: str | None,
             pairs_absolute: bool) -> None:
        loc = line.location
        file = relative_path(loc.file) if loc is not None and loc.file else None
        number = loc.line if loc is not None else None
        key = (file, number) if file is not None else (None, function, tuple(line.primitives))
        found = self._lines.get(key)
        if found is None:
            self._lines[key] = MeasuredLine(file, number, line.kind, line.error, line.input_error,
                                            list(line.primitives), list(line.index), line.reference,
                                            line.got, [function], 1, pairs_error, refusal,
                                            line.absolute, pairs_absolute)
            return
        found.calls += 1
        if function not in found.functions:
            found.functions.append(function)
        for p in line.primitives:
            if p not in found.primitives:
                found.primitives.append(p)
        if pairs_error is not None and pairs_error >= (found.pairs_error or 0.0):
            found.pairs_error, found.pairs_absolute = pairs_error, pairs_absolute
        if refusal is not None and found.pairs_refusal is None:
            found.pairs_refusal = refusal
        if line.error > found.error:
            found.kind, found.error, found.input_error = line.kind, line.error, line.input_error
            found.index, found.reference, found.got = list(line.index), line.reference, line.got
            found.absolute = line.absolute

    def summary(self) -> NumericsSummary:
        """What was measured so far (lines worst first, then by place)."""
        with self._lock:
            lines = sorted(self._lines.values(),
                           key=lambda x: (-x.error, x.file or "", x.line or 0))
            functions = [f.record for f in self._functions.values()]
            return NumericsSummary(self.tol, self.calls, self.every,
                                   [dataclasses.replace(f) for f in functions],
                                   [dataclasses.replace(line, primitives=list(line.primitives),
                                                        functions=list(line.functions))
                                    for line in lines])


def _why(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text.removeprefix("no64.numerics: ")


_measuring = threading.local()
#: The active measurer (``None``: jitted calls run as they are).
_active: Measurer | None = None
_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Have every call of the program's jitted functions go through JAX's
    Python dispatch and, there, through the active :class:`Measurer` (once;
    calls run as they are while none is active): functions jitted at any
    time, before this too (at an import before the run began), and by
    ``jax.jit`` however it is reached (``eqx.filter_jit`` ...).

    A program's jitted function is one whose Python function (under its
    wrappers: ``functools.partial``, ``jax.grad`` ...) is not JAX's own
    code (``jax.numpy``'s functions are jitted) nor no64's, called from
    code that is not no64's.  Its calls are kept off jaxlib's C++ fast path
    (:func:`no64.jax._compat.route_python_jit_calls`), and the entries
    made there before are dropped
    (:func:`no64.jax._compat.clear_fast_path_entries`): its traces and
    executables stay in JAX's caches, so nothing is traced or compiled
    again, and each call costs JAX's Python dispatch.

    The JAX caches' keys are settled first (no64's configuration state and
    the states JAX adds to the trace context when no64 imports more of it:
    :func:`no64.jax._compat.settle_trace_context`), so that a measurement
    does not make the program's jitted functions compile again."""
    global _installed
    from .._compat import clear_fast_path_entries, route_python_jit_calls, settle_trace_context
    from ..state import STATE

    STATE.jax_state()
    settle_trace_context()
    with _install_lock:
        if not _installed:
            interception.install("measure", {"python-jit-calls": lambda: route_python_jit_calls(None)})
            route_python_jit_calls(_take)
            clear_fast_path_entries()
            _installed = True


def uninstall() -> None:
    """Let jitted calls run as they are again, the program's functions back
    on jaxlib's C++ fast path from their next call."""
    global _installed
    from .._compat import clear_fast_path_entries, route_python_jit_calls

    with _install_lock:
        if _installed:
            route_python_jit_calls(None)
            clear_fast_path_entries()
            _installed = False


def _take(call: Any) -> Any:
    """A jit call JAX dispatches in Python (a
    :class:`no64.jax._compat.PythonJitCall`): run, and measured by the
    active measurer where it is the program's."""
    if getattr(_measuring, "on", False) or not _programs(call.fun) or _called_by_no64():
        return call.run()
    call.off_fast_path = True  # its next calls come here too
    measurer = _active
    if measurer is None:
        return call.run()
    return measurer.call(call)


def _unwrapped(fun: Any) -> Any:
    """The Python function under ``fun``'s wrappers (``functools.partial``,
    ``__wrapped__``: ``jax.grad``, ``functools.wraps``)."""
    import functools

    for _ in range(100):
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif getattr(fun, "__wrapped__", None) is not None:
            fun = fun.__wrapped__
        else:
            break
    return fun


@functools.lru_cache(maxsize=None)
def _own_folders() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The folders of JAX's and jaxlib's code, and of no64's (as imported
    and as real paths)."""
    import no64

    from .._compat import jax_code_folders

    folder = os.path.dirname(no64.__file__ or "")
    return jax_code_folders(), tuple(sorted({folder + os.sep, os.path.realpath(folder) + os.sep}))


def _programs(fun: Any) -> bool:
    """Whether a jitted function is the program's: its Python function is
    not JAX's, jaxlib's or no64's own code."""
    code = getattr(_unwrapped(fun), "__code__", None)
    jax_code, no64_code = _own_folders()
    return code is None or not code.co_filename.startswith(jax_code + no64_code)


def _called_by_no64() -> bool:
    """Whether the jitted function is called by no64's own code (``no64.jit``
    runs the user's function through ``jax.jit``): the first frame outside
    JAX's dispatch (JAX's, jaxlib's code, this module and the seam) is no64's."""
    from .. import _compat

    jax_code, no64_code = _own_folders()
    seam = os.path.dirname(_compat.__file__ or "") + os.sep  # a package: its modules
    frame: Any = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename == __file__
                                 or frame.f_code.co_filename.startswith((seam, *jax_code))):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(no64_code)


def _concrete(args: Any, kwargs: Any) -> bool:
    """Whether the call runs (no tracer among its arguments, no trace in progress)."""
    import jax

    from .._compat import at_top_level, tracer_type

    tracer = tracer_type()
    if any(isinstance(x, tracer) for x in jax.tree.leaves((args, kwargs))):
        return False
    return at_top_level()


def _is_array(x: Any) -> bool:
    import jax

    return isinstance(x, (np.ndarray, np.generic, jax.Array))


def _x64_requested() -> bool:
    from ..state import STATE

    return bool(STATE.x64_requested())


def _host_copies(args: tuple[Any, ...], floats_wide: bool = False) -> tuple[Any, ...]:
    """The arguments with every array leaf a host copy in the x64 program's
    dtype: noted by no64 (:mod:`no64.jax.x64_arrays`), else, with
    ``floats_wide`` (the program asked for x64, which no64 turned off),
    float64 for a float32 array and complex128 for a complex64 one (the
    default float of the x64 program), else its own."""
    import jax

    from .. import x64_arrays
    from ..numerics import is_prng_key

    def copy(x: Any) -> Any:
        if isinstance(x, (np.ndarray, np.generic)):
            return np.array(x)
        if isinstance(x, jax.Array) and is_prng_key(x):
            # PRNG keys: a copy of their bits, as keys of the same kind
            data = np.array(jax.random.key_data(x))
            return jax.random.wrap_key_data(jax.numpy.asarray(data), impl=jax.random.key_impl(x))
        if isinstance(x, jax.Array):
            wide = x64_arrays.x64_dtype(x)
            host = np.asarray(x)
            if wide is None and floats_wide and host.dtype in (np.float32, np.complex64):
                wide = np.dtype(np.float64 if host.dtype == np.float32 else np.complex128)
            return host.astype(wide) if wide is not None else np.array(host)
        return x

    return tuple(jax.tree.map(copy, a) for a in args)


def _split(args: tuple[Any, ...], kwargs: dict[str, Any]
           ) -> tuple[list[Any], Callable[[tuple[Any, ...]], tuple[list[Any], dict[str, Any]]]]:
    """The positional arguments that are arrays or pytrees of arrays (the
    measured inputs), and how to put the call's arguments back together from
    them.  The other arguments (Python numbers, static arguments, keyword
    arguments) are bound as given for the x64 program and, for the 32-bit
    one (traced with x64 off), with their 64-bit integers as that program
    takes them (:func:`no64.jax.numerics.argument32`: a host sentinel mapped to
    the 32-bit extreme, as the hook maps it)."""
    import jax

    from .._compat import x64_state

    positions = [i for i, a in enumerate(args)
                 if jax.tree.leaves(a) and all(_is_array(x) for x in jax.tree.leaves(a))]
    inputs = [args[i] for i in positions]
    rest = [a for i, a in enumerate(args) if i not in positions]
    narrow: list[tuple[list[Any], dict[str, Any]]] = []

    def bind(xs: tuple[Any, ...]) -> tuple[list[Any], dict[str, Any]]:
        others, kw = list(rest), kwargs
        if not x64_state().value:  # the 32-bit program's trace
            if not narrow:
                narrow.append(jax.tree.map(_bound32, (others, dict(kwargs))))
            others, kw = narrow[0]
        full, given = [], iter(xs)
        bound = iter(others)
        for i in range(len(args)):
            full.append(next(given) if i in positions else next(bound))
        return full, kw

    return inputs, bind


def _bound32(x: Any) -> Any:
    """A bound argument's leaf as the 32-bit program takes it: a 64-bit
    integer (a Python int, numpy data) narrowed as no64 narrows it."""
    from ..numerics import argument32

    if (isinstance(x, int) and not isinstance(x, bool)) or (
            isinstance(x, (np.ndarray, np.generic)) and x.dtype in (np.int64, np.uint64)):
        return argument32(x)
    return x


@contextmanager
def measuring(measurer: Measurer | None) -> Iterator[Measurer | None]:
    """``measurer`` active for the block, the program's jitted calls routed
    to it (:func:`install`; undone after it, unless it was in place before);
    nothing when ``measurer`` is ``None``."""
    if measurer is None:
        yield None
        return
    installed = _installed
    install()
    try:
        with measurer:
            yield measurer
    finally:
        if not installed:
            uninstall()
