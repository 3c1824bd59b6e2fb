"""The compile hook's state, in one object, and the listeners that watch it.

The compile hook (:mod:`no64.jax.hook`), host narrowing
(:mod:`no64.jax.host`) and the x64 meaning (:mod:`no64.jax.intent`) share
what they know between calls.  It lives here, below the three of them, in
one :class:`HookState` (:data:`STATE`): each reads and writes it, and none
of them needs another one for it.

What :data:`STATE` holds:

* the settings: the JAX configuration state holding the active
  :class:`~no64.jax.hook.Config` (part of JAX's trace context and jit cache
  key, see :meth:`HookState.jax_state`) and whether :func:`no64.install` /
  :func:`no64.uninstall` was called (``explicit``: the activation from
  ``NO64_PLATFORMS`` then yields);
* whether the compile hook is installed (``original_compile``: the function
  it wraps);
* what no64 did with ``jax_enable_x64`` and the warnings it gave about it,
  each once per process, and those held back while JAX is imported;
* the records: the modules that went through the hook
  (:func:`no64.compile_records`) and the host values no64 narrowed
  (:func:`no64.host_records`);
* per thread (``thread``): the reports of the module being prepared and of
  its x64 meaning, and the host policy forced while the x64 meaning of a
  refused trace is taken;
* a cache: whether the default backend is a no64 platform, per
  configuration;
* the listeners.

Listeners
---------
Like MLIR's pass instrumentation, a :class:`HookListener` is told what the
hook does: a module on its way to the backend (:meth:`~HookListener.before_backend`,
:meth:`~HookListener.after_backend`), a module judged by its x64 meaning
(:meth:`~HookListener.on_meaning`), a module prepared or refused by the pass
(:meth:`~HookListener.on_module`), a compile record made
(:meth:`~HookListener.on_compile`), a host value narrowed
(:meth:`~HookListener.on_host_event`) and 64-bit host data converted with
its explicit 64-bit dtype (:meth:`~HookListener.on_host_conversion`).
Subscribe one with :meth:`HookState.subscribe` (or, for a block,
:meth:`HookState.listening`).  The audit watches a program this way, and
swaps the hook's settings for its own with :meth:`HookState.settings_swapped`,
which puts them back.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ._compat import make_state, pinned_platforms, x64_state

__all__ = ["ALL_PLATFORMS", "STATE", "HookListener", "HookState", "default_platform"]

#: Platform wildcard: every platform (the scope :func:`no64.jit` uses).
ALL_PLATFORMS = "*"

#: How many compile records are kept (the most recent).
MAX_RECORDS = 1024


class HookListener:
    """What the compile hook tells a subscriber (every method does nothing
    here; a listener overrides those it needs).

    The hook calls them in the thread that does the work, in this order for
    one module: :meth:`before_backend`; then, for a program with an x64
    meaning judged under its policy, :meth:`on_meaning`; then
    :meth:`on_compile` and :meth:`on_module` once the pass prepared it (or
    :meth:`on_module` alone with the refusal); then :meth:`after_backend`.
    An exception a listener raises reaches the program: a listener that
    must never break it catches its own.
    """

    def before_backend(self, module: Any, platform: str) -> None:
        """``module`` (the ``ir.Module`` JAX lowered) reached the hook on its
        way to the backend of ``platform``; nothing was done with it yet."""

    def after_backend(self, module: Any, platform: str) -> None:
        """The hook is done with ``module``: the backend compiled what it got,
        or something (the hook's refusal, the backend) raised."""

    def on_meaning(self, module: Any, meaning: Any, platform: str, report: Any,
                   error: BaseException | None) -> None:
        """The hook judged the 32-bit ``module`` by its x64 module ``meaning``
        (:func:`no64.jax.hook.judge_meaning`): the report (``None``: not
        judged), or the exception judging raised (``error``)."""

    def on_module(self, module: Any, platform: str, report: Any, error: BaseException | None) -> None:
        """The hook's pass prepared ``module`` for ``platform``
        (:func:`no64.jax.hook.prepare_module`): the report it recorded
        (``None``: no 64-bit value, passed as is), or the exception it
        raised (``error``: a refusal, or a failure)."""

    def on_compile(self, record: Any) -> None:
        """A :class:`no64.jax.hook.CompileRecord` was added to
        :func:`no64.compile_records`."""

    def on_target(self, module: Any, platform: str, target: Any, legalized: Any, findings: Any) -> None:
        """The hook made ``module`` exact on the device profile ``target``
        (:func:`no64.jax.hook.check_device`) where it could -- ``legalized``,
        the :class:`~no64.transforms.legalize.Legalized` record, empty
        where nothing was to be rewritten -- and checked it: ``findings``
        (:class:`~no64.targets.legality.TargetFinding`) are what the profile
        would still refuse or compute inexactly, told before the hook warns
        or raises."""

    def on_host_event(self, event: Any, count: int) -> None:
        """``count`` host elements were narrowed inexactly and added to
        ``event`` (the :func:`no64.host_records` entry of their kind and
        line)."""

    def on_host_conversion(self, requested: Any, became: Any, function: str) -> None:
        """64-bit host data given to ``jnp.array``/``jnp.asarray``
        (``function``) with the explicit 64-bit dtype ``requested`` was
        converted and narrowed by no64 to ``became``: JAX never saw the
        dtype."""


class _Broadcast(HookListener):
    """Each :class:`HookListener` method, called on every subscribed
    listener in turn (:attr:`HookState.tell`): events are typed methods, so
    a misspelt one is an error, not a silent no-op."""

    def __init__(self, state: HookState) -> None:
        self._state = state

    def before_backend(self, module: Any, platform: str) -> None:
        for x in self._state.listeners:
            x.before_backend(module, platform)

    def after_backend(self, module: Any, platform: str) -> None:
        for x in self._state.listeners:
            x.after_backend(module, platform)

    def on_meaning(self, module: Any, meaning: Any, platform: str, report: Any,
                   error: BaseException | None) -> None:
        for x in self._state.listeners:
            x.on_meaning(module, meaning, platform, report, error)

    def on_module(self, module: Any, platform: str, report: Any, error: BaseException | None) -> None:
        for x in self._state.listeners:
            x.on_module(module, platform, report, error)

    def on_compile(self, record: Any) -> None:
        for x in self._state.listeners:
            x.on_compile(record)

    def on_target(self, module: Any, platform: str, target: Any, legalized: Any, findings: Any) -> None:
        for x in self._state.listeners:
            x.on_target(module, platform, target, legalized, findings)

    def on_host_event(self, event: Any, count: int) -> None:
        for x in self._state.listeners:
            x.on_host_event(event, count)

    def on_host_conversion(self, requested: Any, became: Any, function: str) -> None:
        for x in self._state.listeners:
            x.on_host_conversion(requested, became, function)


class _PerThread(threading.local):
    #: The report of the last module the pass prepared in this thread.
    report: Any = None
    #: The report of the x64 meaning judged for the module being prepared.
    meaning: Any = None
    #: The host policy forced for the 32-bit trace of a program whose x64
    #: meaning is what runs (``None``: not forced).
    host_policy: str | None = None


class HookState:
    """Everything the compile hook, host narrowing and the x64 meaning keep
    between calls (see the module docstring); one instance, :data:`STATE`.

    Fields are read and written under :attr:`lock` where more than one of
    them changes together (activation, installation); the records have
    their own locks.
    """

    def __init__(self) -> None:
        #: Held while the settings change or the hook is installed.
        self.lock = threading.RLock()
        self._jax_state: Any = None
        #: install()/uninstall() was called: the environment no longer applies.
        self.explicit = False
        #: ``jax._src.compiler.compile_or_get_cached`` as it was before the
        #: hook wrapped it (``None``: not installed).
        self.original_compile: Callable[..., Any] | None = None
        #: The x64 warnings already given, each once per process: "off" (no64
        #: turned x64 off), "again" (turned it off again after someone turned
        #: it on), "kept" (x64 stays on for an unlisted default backend),
        #: "elsewhere" (x64 was turned off before the backends started, and
        #: the default is not a listed platform).
        self.x64_warnings: set[str] = set()
        #: Set while no64 activates from the environment (inside ``import
        #: jax``): the x64 warning is then held back (in :attr:`deferred`)
        #: until the first compile, so that ``import jax`` never fails under
        #: ``-W error``.
        self.deferring = False
        self.deferred: list[str] = []
        #: An unknown value of a no64 environment variable (the problem,
        #: said at the first compile under the environment's configuration).
        self.config_error: str | None = None
        #: no64 turned x64 off for the default backend (globally); host
        #: values are then narrowed by no64 whatever the default backend
        #: turns out to be.
        self.x64_off_by_no64 = False
        #: Whether the default backend was compared with the configuration
        #: once the backends had started.
        self.default_noted = False
        #: The most recent modules that went through the hook.
        self.records: collections.deque[Any] = collections.deque(maxlen=MAX_RECORDS)
        #: The host narrowings that were not exact, by (kind, op, file, line).
        self.host_records: dict[tuple[Any, ...], Any] = {}
        self.host_lock = threading.Lock()
        #: Configuration -> whether the default backend is one of its
        #: platforms (filled once the backends have started).
        self.default_covered: dict[Any, bool] = {}
        #: Per thread: see :class:`_PerThread`.
        self.thread = _PerThread()
        self._listeners: tuple[HookListener, ...] = ()

    # -- the settings

    def jax_state(self, *, create: bool = True) -> Any:
        """The ``no64_config`` JAX configuration state, created on first use
        (``create=False``: ``None`` until then).

        ``include_in_trace_context`` and ``include_in_jit_key`` make every
        JAX cache (traces, lowerings, in-memory executables, the C++ jit
        dispatch cache) key on the configuration.
        """
        if self._jax_state is None and create:
            with self.lock:
                if self._jax_state is None:
                    self._jax_state = make_state(
                        "no64_config",
                        None,
                        "Platforms whose compiled modules no64 rewrites or checks, and the mode.",
                    )
        return self._jax_state

    def active_config(self) -> Any:
        """The configuration in effect in this thread (``None`` when inactive)."""
        state = self._jax_state
        return None if state is None else state.value

    def x64_requested(self) -> bool:
        """Whether the program asked for x64 and no64 turned it off, for the
        platforms no64 serves in this thread (JAX computes in 32 bits there)."""
        from ..kinds import Mode

        config = self.active_config()
        if config is None or config.mode is not Mode.FIX or x64_state().value:
            return False
        return ALL_PLATFORMS in config.platforms or self.x64_off_by_no64

    def global_config(self) -> Any:
        """The global configuration (``None`` when inactive or not yet made)."""
        state = self._jax_state
        return None if state is None else state.get_global()

    @contextmanager
    def settings_swapped(self) -> Iterator[None]:
        """Within the block the hook's settings are the caller's to set
        (with :func:`no64.jax.hook.activate`), and are put back after it.

        On entry the environment's activation (``NO64_PLATFORMS``, when
        ``jax`` is imported or JAX starts its backends) yields to the
        caller's, as it yields to :func:`no64.install`; on exit the global
        configuration and that precedence are as they were before the block.
        The audit runs a program under the hook this way.
        """
        with self.lock:
            explicit = self.explicit
            self.explicit = True
            config = self.global_config()
        try:
            yield
        finally:
            with self.lock:
                if self._jax_state is not None:
                    self._jax_state._set(config)
                self.explicit = explicit

    # -- the host records

    @contextmanager
    def host_records_kept(self) -> Iterator[None]:
        """Within the block host narrowings are recorded as usual; after it
        the host records are those from before it."""
        with self.host_lock:
            saved = dict(self.host_records)
        try:
            yield
        finally:
            with self.host_lock:
                self.host_records.clear()
                self.host_records.update(saved)

    # -- the listeners

    @property
    def listeners(self) -> tuple[HookListener, ...]:
        """The subscribed listeners, in the order they were subscribed."""
        return self._listeners

    def subscribe(self, listener: HookListener) -> None:
        """Tell ``listener`` what the hook does from now on."""
        with self.lock:
            self._listeners = (*self._listeners, listener)

    def unsubscribe(self, listener: HookListener) -> None:
        """Stop telling ``listener`` (nothing if it is not subscribed)."""
        with self.lock:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

    @contextmanager
    def listening(self, listener: HookListener) -> Iterator[HookListener]:
        """``listener`` subscribed for the block."""
        self.subscribe(listener)
        try:
            yield listener
        finally:
            self.unsubscribe(listener)

    @property
    def tell(self) -> HookListener:
        """Every subscribed listener, as one: ``STATE.tell.on_module(...)``."""
        return _Broadcast(self)


#: The one state of no64's JAX layer.
STATE = HookState()


def default_platform(backends_started: bool) -> str | None:
    """The default backend's platform, or ``None`` when it cannot be known yet.

    Before the backends start, only an explicit ``JAX_PLATFORMS`` /
    ``jax_platforms`` names it (its first entry).
    """
    import jax

    if backends_started:
        return jax.default_backend()
    pinned = pinned_platforms()
    if pinned:
        return pinned.split(",")[0].strip().lower() or None
    return None
