"""The hook's view: a program run under the compile hook, as
``NO64_PLATFORMS`` would run it, and what the hook did with it
(:class:`Predictor`, a :class:`~no64.jax.state.HookListener`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import No64Error, X64DisabledWarning
from ...ir._mlir import ir
from ...kinds import Handling, Mode, Verdict
from ...options import ENVIRONMENT, Options, read as read_environment
from ...transforms.scan import find_64bit
from .. import hook as jaxhook, host, intent
from .._compat import (
    backends_started,
    hide_from_tracebacks,
    installing,
    set_x64_global,
    watch_explicit_dtypes,
    x64_state,
)
from ..state import STATE, HookListener
from .observer import _X64Watch
from .sites import CallGraph, Site, _compile_site, _stack_site
from .values import (
    DtypeEvent,
    ModuleResult,
    TargetEvent,
    Value,
    X64Event,
    _module_name,
    _one_line,
    _refusal_handlings,
    _report_handlings,
    _values,
)

__all__ = ["Predictor"]


def _own_files() -> list[str]:
    """The audit's own source files: the modules of this package."""
    here = os.path.dirname(__file__)
    return [os.path.join(here, name) for name in sorted(os.listdir(here)) if name.endswith(".py")]


@dataclasses.dataclass(frozen=True)
class _StandIn(jaxhook.Config):
    """``Config`` whose platforms include the default backend here (the
    audit runs the program on it as on the platforms it names)."""

    def applies_to(self, platform: str) -> bool:
        if self.mode is Mode.OFF:
            return False
        if not backends_started():
            return True
        import jax

        default = jax.default_backend()
        return platform.lower() == default.lower() or jaxhook.Config.applies_to(self, platform)

    def describe(self) -> str:
        return f"{jaxhook.Config.describe(self)} (audited here)"


def _hook_settings(given: dict[str, Any]) -> dict[str, Any]:
    """The hook's settings but its platforms, as ``NO64_PLATFORMS`` sets
    them, each a word by name (``"mode"``, ``"policy"``, ``"target"``, ...:
    the mode and every option an environment variable sets): from its
    variable (declared in :data:`no64.options.ENVIRONMENT`), read as the
    hook reads it (a bad value raises :class:`no64.ConfigurationError`),
    unless ``given``.  ``target`` is ``None`` for the platform's profile."""
    chosen = {name: value for name, value in given.items() if value is not None}
    unknown = set(chosen) - {"mode", *_OPTION_VARIABLES}
    if unknown:
        raise TypeError(f"unknown hook setting(s): {', '.join(sorted(unknown))}")
    skipped = {_OPTION_VARIABLES[name] for name in chosen if name != "mode"}
    options = Options.from_env({k: v for k, v in os.environ.items() if k not in skipped})
    options = options.replace(**{name: value for name, value in chosen.items() if name != "mode"})
    mode = chosen.get("mode") or read_environment(os.environ, jaxhook.ENV_MODE) or Mode.FIX
    out: dict[str, Any] = {"mode": str(Mode.parse(mode, "no64 mode"))}
    for name in _OPTION_VARIABLES:
        value = getattr(options, name)
        out[name] = (None if value is None else value.name if name == "target"
                     else ("on" if value else "off") if isinstance(value, bool) else str(value))
    return out


def _platform_profile(platforms: frozenset[str]) -> str | None:
    """The device profile of the platforms named (:func:`no64.targets.target_for_platform`):
    the one profile other than ``generic`` they have, else ``None``."""
    from ...targets import target_for_platform

    found = {target_for_platform(p).name for p in platforms} - {"generic"}
    return found.pop() if len(found) == 1 else None


#: The options an environment variable sets, by field: the variable's name.
_OPTION_VARIABLES = {v.field: v.name for v in ENVIRONMENT if v.field}


def _judged(report: Any) -> Any:
    """The report of an x64 program the hook judged, as the hook judged it:
    a value unproven only as a sentinel question (:func:`no64.jax.intent.unproven`
    leaves it to the sentinel rules) counts as a sentinel."""
    from types import SimpleNamespace

    bad = {id(n) for n in intent.unproven(report)}
    narrowings = [n if n.verdict not in (Verdict.UNPROVEN, Verdict.OVERFLOW) or id(n) in bad
                  else SimpleNamespace(op=n.op, location=n.location, role=n.role, index=n.index,
                                       verdict=Verdict.SENTINEL)
                  for n in report.narrowings]
    return SimpleNamespace(events=report.events, narrowings=narrowings)


def _target_events(module: Any, target: str, legalized: Any, findings: Any) -> list[TargetEvent]:
    """:class:`TargetEvent` of what :func:`no64.jax.hook.check_device` did
    with ``module`` (``legalized``: its :class:`~no64.transforms.legalize.Legalized`
    record or ``None``) and the ``findings`` it left, each at the innermost
    user frame of its op (followed out of JAX's private functions), else at
    the user's line that compiled the module."""
    from ...spec.walk import all_ops

    op = module.operation
    name = _module_name(op)
    graph = CallGraph(op)
    function_of: dict[str, str] = {}  # an op's location -> the function holding it
    for fn in op.regions[0].blocks[0].operations:
        fn = fn.operation
        if "sym_name" in fn.attributes:
            fname = ir.StringAttr(fn.attributes["sym_name"]).value
            for inner in all_ops(fn):
                function_of.setdefault(str(inner.location), fname)
    fallback: Site | None = None

    def site(raw: str) -> Site:
        nonlocal fallback
        found = graph.site(function_of.get(raw), raw)
        if found.file is None:
            fallback = fallback or _stack_site()
            return fallback
        return found

    left = {(x.op, x.location): x.detail for x in (legalized.left if legalized is not None else [])}
    out = [TargetEvent("rewritten", x.op, site(x.location.raw), target, name, x.detail)
           for x in (legalized.rewritten if legalized is not None else [])]
    for f in findings:
        detail = f.detail
        why = left.get((f.op, f.location))
        if why is not None:
            detail += f"; no64 leaves it as it is: {why}"
        out.append(TargetEvent(f.kind, f.op, site(f.location.raw), target, name, detail, f.code))
    return out


class Predictor(HookListener):
    """Run a program under the compile hook, as ``NO64_PLATFORMS`` would,
    and record what the hook does (a context manager; see :func:`run_program`).

    On entry no64 is activated for ``platforms`` with the hook's settings
    (``mode``, ``integer_policy``, ``policy``: every field of its
    :class:`~no64.jax.hook.Config`), each by default from its environment
    variable (``NO64_MODE``, ``NO64_INTEGER_POLICY``, ``NO64_POLICY``) as the
    environment activation reads it, the default backend here standing in
    for the platforms.  While active it listens to the hook
    (:class:`~no64.jax.state.HookListener`) and records each
    module the hook handles (:class:`ModuleResult`), where x64 is turned on
    (:class:`X64Event`), and explicit 64-bit dtypes that JAX truncates
    (:class:`DtypeEvent`); host narrowings are no64's own
    :func:`no64.host_records`.  On exit the previous settings are put back
    (:meth:`~no64.jax.state.HookState.settings_swapped`).
    """

    def __init__(self, platforms: str, *, progress: Callable[[int], None] | None = None,
                 **settings: Any) -> None:
        self.platforms = jaxhook.normalize_platforms(platforms) or frozenset({"default"})
        #: The hook's settings, by field of its Config.
        self.settings = _hook_settings(settings)
        if self.settings.get("target") is None:
            # the device the audit stands in for has a profile: the hook
            # would apply it there (NO64_TARGET, else the platform's)
            self.settings["target"] = _platform_profile(self.platforms)
        self.mode = self.settings["mode"]
        self.integer_policy = self.settings["integer_policy"]
        self.progress = progress
        self.results: list[ModuleResult] = []
        self.x64: list[X64Event] = []
        self.dtypes: list[DtypeEvent] = []
        #: What the hook did for the device profile, op by op.
        self.targets: list[TargetEvent] = []
        self._lock = threading.Lock()
        self._tls = threading.local()
        self._pauses = 0
        self._saved: dict[str, Any] = {}
        self._count = 0
        self._recording = False

    # -- activation

    def __enter__(self) -> "Predictor":
        # The audit's own frames (this package's) are not part of the
        # program's traceback (a run under NO64_PLATFORMS has none): JAX
        # leaves them out as it leaves out its own frames.
        with installing("audit-frames"):
            for path in _own_files():
                hide_from_tracebacks(path)

        warnings.filterwarnings("ignore", category=X64DisabledWarning)
        # the environment activation (NO64_PLATFORMS) yields to this one
        self._settings = STATE.settings_swapped()
        self._settings.__enter__()
        import jax  # noqa: F401 - the program would import it; activation follows
        state = x64_state()
        self._saved["x64"] = state.get_global()
        self._recording = True
        self._x64_watch = _X64Watch(self.x64, lambda: self._count, self._on).__enter__()
        words = {name: word for name, word in self.settings.items() if name != "mode" and word is not None}
        words["float_hints"] = True  # the audit names what f32 changes, whatever the hook would
        config = _StandIn(self.platforms, Mode(self.settings["mode"]), Options(**words))
        self.config = config
        label = ",".join(sorted(self.platforms))
        jaxhook.activate(config, source=f"{jaxhook.ENV_PLATFORMS}={label}")
        host.clear_host_records()
        # What the hook does with each module, and the host data it converts.
        STATE.subscribe(self)

        def explicit_dtype(dtype: Any, out: Any, fun_name: str) -> None:
            if self._on():
                try:
                    self._note_dtype(dtype, out, fun_name)
                except Exception:  # noqa: BLE001
                    pass

        with installing("audit-explicit-dtypes"):
            self._saved["explicit_dtype"] = watch_explicit_dtypes(explicit_dtype)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._recording = False
        #: Whether x64 is still on when the program ends (no64 left it on).
        self.x64_kept = bool(x64_state().get_global())
        STATE.unsubscribe(self)
        self._saved["explicit_dtype"]()  # takes the watch off
        self._settings.__exit__(None, None, None)
        self._x64_watch.__exit__()
        if self._saved["x64"] and not x64_state().get_global():
            set_x64_global(True)

    # -- recording

    def _on(self) -> bool:
        """Whether what happens now is recorded (not during a pause)."""
        return self._recording and not self._pauses

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing compiled, traced or narrowed in the block is recorded (the
        measurement of ``--numerics`` is not the program's).  The pause is
        the whole process's, not the thread's: JAX may compile in threads of
        its own, while the program's thread waits for the
        measurement."""
        with self._lock:
            self._pauses += 1
        try:
            with STATE.host_records_kept():
                yield
        finally:
            with self._lock:
                self._pauses -= 1

    def _note_dtype(self, dtype: Any, out: Any, fun_name: str, by_no64: bool = False) -> None:
        import numpy as np

        requested = np.dtype(getattr(dtype, "dtype", dtype))
        if out is None or requested.itemsize != 8 and requested.kind != "c":
            return
        became = np.dtype(out)
        if requested == became:
            return
        site = _stack_site()
        with self._lock:
            fun = fun_name or "dtype"
            for e in self.dtypes:
                if e.site == site and e.requested == requested.name and e.by_no64 == by_no64:
                    e.count += 1
                    if fun not in e.function.split(", "):
                        e.function += f", {fun}"
                    return
            self.dtypes.append(DtypeEvent(site, requested.name, became.name, fun, by_no64=by_no64))

    # -- the hook's listener

    def on_host_conversion(self, requested: Any, became: Any, function: str) -> None:
        """``jnp.array``/``jnp.asarray`` of 64-bit host data with a 64-bit
        dtype: no64 converts the data itself and JAX never sees the dtype."""
        if self._on():
            try:
                self._note_dtype(requested, became, function, by_no64=True)
            except Exception:  # noqa: BLE001
                pass

    def on_target(self, module: Any, platform: str, target: Any, legalized: Any, findings: Any) -> None:
        """The ops the hook made exact on the device profile, and what it
        would still refuse or compute inexactly, each at the user's line."""
        if not self._on():
            return
        try:
            events = _target_events(module, target.name, legalized, findings)
        except Exception:  # noqa: BLE001 - recording must never break the program
            return
        with self._lock:
            self.targets += events

    def before_backend(self, module: Any, platform: str) -> None:
        self._tls.prepared = False

    def after_backend(self, module: Any, platform: str) -> None:
        if not getattr(self._tls, "prepared", True) and self._on():
            self._capture(module, platform, None, None, handled=False)

    def on_module(self, module: Any, platform: str, report: Any, error: BaseException | None) -> None:
        self._tls.prepared = True
        if not self._on():
            return
        if error is None:
            self._capture(module, platform, report, None)
        elif isinstance(error, No64Error):
            self._capture(module, platform, None, error)

    def on_meaning(self, module: Any, meaning: Any, platform: str, report: Any,
                   error: BaseException | None) -> None:
        """The hook judging a 32-bit module by its x64 meaning: a refusal is
        the module's (its x64 values); the integers it cannot prove inside
        32 bits become the values of the module the hook then compiles."""
        self._tls.meaning = None
        if isinstance(error, No64Error):
            if self._on():
                self._tls.prepared = True
                self._capture(meaning, platform, None, error)
        elif error is None and report is not None and self._on():
            self._tls.meaning = (meaning, report)

    @staticmethod
    def _unproven(meaning: Any, report: Any) -> list[Value]:
        from types import SimpleNamespace

        findings = find_64bit(meaning)
        handlings = _report_handlings(findings, SimpleNamespace(events=[], narrowings=intent.unproven(report)))
        keep = [(f, h) for f, h in zip(findings, handlings)
                if h in (Handling.UNPROVEN, Handling.OVERFLOW)]
        if not keep:
            return []
        return _values(meaning, [f for f, _ in keep], [h for _, h in keep])

    def _capture(self, module: Any, platform: str, report: Any, exc: BaseException | None,
                 handled: bool = True) -> None:
        meaning = getattr(self._tls, "meaning", None)
        self._tls.meaning = None
        try:
            name = _module_name(module.operation)
            unproven = self._unproven(*meaning) if meaning is not None and exc is None else []
            if unproven:
                # the 32-bit program may compute these integers differently than its x64 meaning
                result = ModuleResult(name, platform, "rewritten", unproven)
            elif report is None and exc is None and handled:
                result = ModuleResult(name, platform, "passed", [])
            else:
                findings = find_64bit(module)
                if exc is not None:
                    handlings = _refusal_handlings(findings, exc)
                    status = "refused"
                elif report is not None:
                    handlings = _report_handlings(findings, _judged(report) if meaning is not None else report)
                    status = "rewritten"
                else:  # not the hook's (mode off): the backend gets its 64-bit values
                    handlings = [Handling.EXACT] * len(findings)
                    status = "passed"
                result = ModuleResult(name, platform, status,
                                      _values(module, findings, handlings, _stack_site())
                                      if status != "passed" else [],
                                      _one_line(exc) if exc is not None else None, exc,
                                      emulated=getattr(report, "values_emulated", 0) or 0)
            # the x64 meaning's hints where it was judged, else the module's own
            judged = meaning[1] if meaning is not None else report
            result.float_hints = list(getattr(judged, "float_hints", []) or [])
            result.compiled_at, result.called = _compile_site()
        except Exception as problem:  # noqa: BLE001 - recording must never break the program
            result = ModuleResult("<module>", platform, "passed", [], f"(not analysed: {problem})")
        with self._lock:
            self._count += 1
            result.order = self._count
            self.results.append(result)
            count = self._count
        if self.progress is not None:
            self.progress(count)
