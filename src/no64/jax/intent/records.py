"""What the x64 meaning remembers between JAX's trace, its lowering and the compile hook (each
registry keyed by JAX's 32-bit jaxpr or by the module JAX lowered), whether a call asked for x64,
and the modules' x64 meanings as the hook asks for them."""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import (
    ConstantRangeError,
)
from ...ir._mlir import ir
from ...report import DemotionReport
from .._compat import (
    at_top_level,
)
from ..state import STATE
from .judge import NoMeaning, unproven

lock = threading.RLock()

#: 32-bit ClosedJaxpr -> the PjitParams of the x64 trace (None: no x64 meaning)
meanings: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered) -> (that module, a function lowering the x64 trace)
pending: "collections.OrderedDict[int, tuple[ir.Module, Callable[[], ir.Module | None]]]" = (
    collections.OrderedDict())
PENDING_MAX = 256
#: 32-bit ClosedJaxpr -> the refusal its x64 meaning stands in for (see _trace_for_exact)
required: "weakref.WeakKeyDictionary[Any, ConstantRangeError]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered) -> that refusal
required_modules: dict[int, ConstantRangeError] = {}
#: replayed 32-bit ClosedJaxpr -> a function tracing the user's function with x64 off
replayed: "weakref.WeakKeyDictionary[Any, Callable[[], Any]]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered from a replay) -> (that module, a function lowering JAX's own trace)
genuine_modules: dict[int, tuple[ir.Module, Callable[[], ir.Module]]] = {}
#: 32-bit ClosedJaxpr with an x64 meaning -> its host sentinel check, run if
#: the 32-bit program runs after all (see sentinels_judged)
sentinel_checks: "weakref.WeakKeyDictionary[Any, Callable[[], None]]" = weakref.WeakKeyDictionary()
#: the 32-bit ClosedJaxprs whose own program runs (their x64 module could not be had)
runs_32bit: "weakref.WeakSet[Any]" = weakref.WeakSet()
#: id(module JAX lowered) -> (that module, a weak reference to its 32-bit ClosedJaxpr)
lowered_from: dict[int, tuple[ir.Module, Any]] = {}

#: id(module no64 lowered) -> (that module, the host callbacks its lowering
#: registered: what the backend must be given with it)
host_callbacks: "collections.OrderedDict[int, tuple[ir.Module, list[Any]]]" = collections.OrderedDict()

tls = threading.local()


def keep_host_callbacks(module: ir.Module, callbacks: Any) -> None:
    """Remember the host callbacks the lowering of ``module`` (a module no64
    lowered: an x64 module, or JAX's own 32-bit one traced anew) registered,
    for the compile of ``module`` or of what is prepared from it."""
    if not callbacks:
        return
    with lock:
        host_callbacks[id(module)] = (module, list(callbacks))
        host_callbacks.move_to_end(id(module))
        while len(host_callbacks) > PENDING_MAX:
            host_callbacks.popitem(last=False)


def carry_host_callbacks(source: ir.Module, prepared: ir.Module) -> None:
    """``prepared`` (made from ``source``) calls the host callbacks of ``source``."""
    if prepared is source:
        return
    with lock:
        entry = host_callbacks.get(id(source))
    if entry is not None and entry[0] is source:
        keep_host_callbacks(prepared, entry[1])


def host_callbacks_of(module: ir.Module) -> list[Any] | None:
    """The host callbacks the backend must be given with ``module`` where
    they are not those of the module JAX lowered (``None``: JAX's are)."""
    with lock:
        entry = host_callbacks.get(id(module))
    return entry[1] if entry is not None and entry[0] is module else None


@contextmanager
def with_x64_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
    """Within the block, a top-level trace's x64 meaning takes these arguments
    (the caller's, before :func:`no64.jit` narrowed them)."""
    saved = getattr(tls, "arguments", None)
    tls.arguments = (args, kwargs)
    try:
        yield
    finally:
        tls.arguments = saved


def x64_requested() -> bool:
    """Whether the program asked for x64 and no64 turned it off (outside
    no64's own x64 traces)."""
    return not getattr(tls, "busy", False) and STATE.x64_requested()


#: Whether no64 traces the x64 meaning of programs (see :func:`set_x64_meaning`).
_meaning_on = True


def set_x64_meaning(on: bool) -> None:
    """Turn the x64 meaning on (the default) or off for the traces that
    start from now on, in every thread.  Off, no64 traces no program a
    second time with x64 on: what the x64 meaning costs is measured this
    way (``benchmarks/bench_hook.py``).  A trace that starts while it is
    off has no x64 meaning, as where the program did not ask for x64.  Not
    for use in programs."""
    global _meaning_on
    _meaning_on = bool(on)


def wanted() -> bool:
    """Whether a trace starting now needs its x64 meaning."""
    if not _meaning_on or not x64_requested():
        return False
    return at_top_level()


class Deferred:
    """The x64 trace of a 32-bit trace, taken at most once, when first asked
    for; a :class:`NoMeaning` when it has no comparable x64 meaning (or
    tracing it failed)."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] | None = make
        self._value: Any = None

    def get(self) -> Any:
        make = self._make
        if make is not None:
            self._make = None  # drop what the closure holds
            try:
                self._value = make()
            except Exception as exc:  # noqa: BLE001 - no meaning: said at the compile (see NoMeaning)
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                self._value = NoMeaning(f"tracing it with x64 on raised {type(exc).__name__}: {first}")
        return self._value


def runnable_32bit(module: ir.Module) -> ir.Module:
    """JAX's own 32-bit module for ``module``, what runs where the x64 module
    cannot: ``module`` itself, or, where it was lowered from the 32-bit
    replay of the x64 trace (:mod:`no64.jax.replay`, which keeps the x64
    program's choices by dtype: float64's mantissa width in a sampler), the
    module of the user's function traced now with x64 off.  The host
    sentinels of the program, left to its x64 module, are followed through
    the 32-bit program now (:func:`sentinels_judged`)."""
    with lock:
        source = lowered_from.get(id(module))
        jaxpr = source[1]() if source is not None and source[0] is module else None
        check = None
        if jaxpr is not None:
            runs_32bit.add(jaxpr)
            check = sentinel_checks.pop(jaxpr, None)
    if check is not None:
        check()
    with lock:
        entry = genuine_modules.get(id(module))
    if entry is None or entry[0] is not module:
        return module
    return entry[1]()


def has_meaning(module: ir.Module) -> bool:
    """Whether the 32-bit ``module`` JAX hands the backend has an x64 trace
    to be judged by (not lowered yet; see :func:`meaning_of`)."""
    with lock:
        entry = pending.get(id(module))
    return entry is not None and entry[0] is module


def meaning_of(module: ir.Module) -> ir.Module | NoMeaning | None:
    """The x64 module of the program whose 32-bit module JAX hands the
    backend, lowered now: ``None`` when there is none to ask for (no x64
    requested, or an x64 program without a 64-bit value, which means what
    the 32-bit one does), a :class:`NoMeaning` when the program asked for
    x64 and its x64 meaning cannot be had (the refusal of a host value it
    stood in for is raised instead, where there is one)."""
    with lock:
        entry = pending.get(id(module))
    if entry is None or entry[0] is not module:
        return None
    try:
        meaning = entry[1]()
    except Exception as exc:  # noqa: BLE001 - said at the compile (see NoMeaning)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        meaning = NoMeaning(f"lowering it with x64 on raised {type(exc).__name__}: {first}")
    if not isinstance(meaning, ir.Module):
        refuse_without_meaning(module)
    return meaning


def refuse_without_meaning(module: ir.Module) -> None:
    """Raise the host refusal a module's x64 meaning stood in for, if any."""
    refusal = required_modules.get(id(module))
    if refusal is not None:
        raise refusal


def refuse_unless_proven(module: ir.Module, report: DemotionReport) -> None:
    """Raise the host refusal a module's x64 meaning stood in for when the
    converted x64 program holds an integer it cannot prove inside 32 bits:
    outside ``exact`` the x64 program replaces a refused host integer (a
    64-bit hash multiplier) only where every narrowing of it is proven, so
    the user's ``integer_policy="error"`` still refuses a host integer whose
    value would reach a 32-bit result."""
    refusal = required_modules.get(id(module))
    if refusal is not None and unproven(report):
        raise refusal
