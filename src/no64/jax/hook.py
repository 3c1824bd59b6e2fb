"""Per-platform activation: every module JAX compiles for a listed platform
passes through :func:`no64.demote` and its strict check first.

This is the JAX layer behind ``NO64_PLATFORMS`` (read when ``jax`` is
imported, through no64's start-up file, or else by the ``jax_plugins`` entry
point when JAX starts its backends), :func:`install` / :func:`uninstall`,
and the compilation scope that :func:`no64.jit` uses.

Where the hook sits
-------------------
Every compilation JAX performs -- ``jit`` and everything built on it (``grad``,
``vmap``, control flow, ``custom_jvp``/``custom_vjp``, ``shard_map``, sharded
``jit``, ``jax.export``'s ``call``, AOT ``.lower().compile()``, eager op
dispatch) -- reaches ``jax._src.compiler.compile_or_get_cached(backend,
module, ...)``: the one function that receives the StableHLO ``ir.Module``
together with the backend that will compile it.  It computes the persistent
compilation-cache key from that module, then reads the cache or calls the
backend.  no64 wraps this function, so

* the module the backend sees, and the module the persistent cache key is
  computed from, is the rewritten one (a cached executable is found only for
  the same rewritten module);
* the module JAX passed in is never modified: JAX keeps it (``Lowered``
  objects and its lowering caches hold it), so no64 rewrites a copy, and only
  when the module holds a 64-bit value or something the device profile has
  no64 make exact (a 16-bit integer on a device without them, an integer
  ``dot`` on an f32 datapath).

The active configuration lives in a JAX configuration state that is part of
JAX's trace context and jit cache key, like ``jax_enable_x64``.  Changing the
mode or the platforms therefore never reuses an in-memory executable (nor a
traced or lowered computation) made under another configuration; JAX's own
caches keep one entry per configuration.

x64
---
A platform without 64-bit types cannot hold 64-bit arrays, so a computation
whose arguments or results are 64-bit cannot run there whatever happens to
its module.  When no64 is installed for a platform that is (or, before the
backends start, may become) the default backend and ``jax_enable_x64`` is on,
it turns ``jax_enable_x64`` off and warns once (:class:`X64DisabledWarning`);
turning it on again globally later is undone the same way (a guard chained
onto JAX's update hook for the option).  A module that still has 64-bit
arguments or results when it reaches a listed platform (traced inside a
``jax.enable_x64(True)`` scope, or given a 64-bit array made before no64 was
active) is refused with :class:`Boundary64BitError`, which says why.

A program that asked for x64 is judged by its x64 meaning
(:mod:`no64.jax.intent`): each top-level ``jit`` is traced and lowered a
second time with x64 on, and the integers that program computes in 64 bits
are proven to fit, reported (:class:`no64.UnprovenIntegerWarning`),
refused (``strict``) or computed exactly (``exact``, where the converted
x64 module is what the backend compiles).

The backend verifies every module it receives, so the pass does not run
MLIR's verifier a second time here; a rewritten module that fails the
backend's verification is reported as :class:`~no64.errors.InvalidModuleError`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ..errors import (
    Boundary64BitError,
    ConfigurationError,
    InvalidModuleError,
    NarrowingError,
    No64Error,
    OutputRangeError,
    Remaining64BitError,
    TargetWarning,
    X64DisabledWarning,
)
from ..ir._mlir import ir
from ..ir.types import TypeConverter
from ..kinds import FloatPolicy, IntegerPolicy, Mode, Outputs, RangePolicy
from ..options import Options, read as read_environment, variable
from ..report import DemotionReport
from ..spec.registry import spec_of
from ..spec.walk import entry_function, symbol_name
from ..targets import Target, target_for_platform
from ..transforms.emulate import exact_input_ranges
from ..transforms.pipeline import Pipeline, constrains
from ..transforms.scan import check, find_64bit, has_64bit
from . import host, intent
from ._compat import (
    FlaggedExecutable,
    backends_started as jax_backends_started,
    explicit_x64_dtypes_allowed,
    internal_function,
    platform_names,
    replace_internal_function,
    set_x64_update_hook,
    x64_state,
    x64_update_hook,
)
from .state import ALL_PLATFORMS, STATE, default_platform

__all__ = [
    "ALL_PLATFORMS",
    "Boundary64BitError",
    "CompileRecord",
    "Config",
    "ENV_INTEGER_POLICY",
    "ENV_MODE",
    "ENV_PLATFORMS",
    "ENV_POLICY",
    "MODES",
    "X64DisabledWarning",
    "active_config",
    "clear_compile_records",
    "compile_records",
    "install",
    "is_exact",
    "scoped",
    "uninstall",
]

logger = logging.getLogger("no64")

# The environment variables (declared, with what each means, in
# no64.options.ENVIRONMENT; an undeclared name fails here).
#: Environment variable naming the platforms to protect (comma separated).
ENV_PLATFORMS = variable("NO64_PLATFORMS").name
#: Environment variable selecting the mode used with :data:`ENV_PLATFORMS`.
ENV_MODE = variable("NO64_MODE").name
#: Environment variable selecting the integer policy used with :data:`ENV_PLATFORMS`.
ENV_INTEGER_POLICY = variable("NO64_INTEGER_POLICY").name
#: Environment variable selecting the range policy used with :data:`ENV_PLATFORMS`.
ENV_POLICY = variable("NO64_POLICY").name
#: Environment variable selecting the float policy used with :data:`ENV_PLATFORMS`.
ENV_FLOAT_POLICY = variable("NO64_FLOAT_POLICY").name
#: The device profile modules are checked against (default: the platform's).
ENV_TARGET = variable("NO64_TARGET").name

#: The modes (see :class:`no64.kinds.Mode`): ``"fix"`` demotes then checks;
#: ``"check"`` refuses any 64-bit value; ``"off"`` passes modules through.
MODES = Mode.values()


def is_exact(report: DemotionReport | None) -> bool:
    """Whether a demotion kept every value: no lossy event, only exact or sentinel verdicts."""
    return report is None or report.exact


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


def normalize_platforms(platforms: str | Iterable[str]) -> frozenset[str]:
    """Platform names as no64 keeps them: ``"cpu, TPU"`` or ``["cpu", "tpu"]``
    -> ``{"cpu", "tpu"}`` (lower-cased, stripped, empty names dropped);
    :class:`TypeError` for a name that is not a string."""
    if isinstance(platforms, str):
        names = platforms.split(",")
    else:
        names = list(platforms)
    out = set()
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"platform names must be strings, got {name!r}")
        name = name.strip().lower()
        if name:
            out.add(name)
    return frozenset(out)


@dataclasses.dataclass(frozen=True)
class Config:
    """Which platforms no64 protects, and how.

    Attributes:
      platforms: Lower-case platform names (``"cpu"``, ``"neuron"``, ``"gpu"``,
        ...); ``"*"`` means every platform.  ``"gpu"`` also matches
        ``"cuda"``, ``"rocm"`` and ``"oneapi"``.
      mode: ``"fix"`` (demote, then check), ``"check"`` (refuse a module
        with any 64-bit value with :class:`no64.Remaining64BitError`) or
        ``"off"`` (modules pass through untouched).
      options: The conversion's :class:`~no64.options.Options` in ``"fix"``
        mode: its range policy (``policy``: ``"exact"`` computes every
        integer not proven to fit in word pairs), ``integer_policy`` and
        ``float_policy`` (``"pairs"``: float64 values computed as pairs of
        f32, outputs rounded to f32 once) are :func:`no64.demote`'s; its
        ``target`` is the device profile (:mod:`no64.targets`) each
        compiled module is made exact on where no64 can (an integer ``dot``
        split into limb dots) and then checked against: what it refuses,
        and integer ops on a narrower datapath not proven exact, are a
        :class:`no64.TargetWarning` at the line (refused under ``strict``
        and ``exact``); ``None``: the profile of the platform compiled for
        (``generic`` if none).  Its other fields are the hook's own (it
        narrows outputs and lets the backend verify).
    """

    platforms: frozenset[str]
    mode: Mode = Mode.FIX
    #: The hook's default options leave float hints off (``NO64_FLOAT_HINTS``).
    options: Options = Options(float_hints=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode.parse(self.mode, "no64 mode"))
        if not isinstance(self.options, Options):
            raise TypeError(f"Config.options must be a no64.options.Options, not {type(self.options).__name__}")

    @property
    def policy(self) -> RangePolicy:
        """The range policy (``options.policy``)."""
        return self.options.policy

    @property
    def integer_policy(self) -> IntegerPolicy:
        """The integer policy (``options.integer_policy``)."""
        return self.options.integer_policy

    @property
    def float_policy(self) -> FloatPolicy:
        """The float policy (``options.float_policy``)."""
        return self.options.float_policy

    @property
    def target(self) -> str | None:
        """The name of the device profile (``None``: the platform's)."""
        return self.options.target.name if self.options.target is not None else None

    def applies_to(self, platform: str) -> bool:
        """Whether modules compiled for ``platform`` go through no64."""
        if self.mode is Mode.OFF:
            return False
        if ALL_PLATFORMS in self.platforms:
            return True
        return bool(platform_names(platform) & self._expanded())

    def _expanded(self) -> frozenset[str]:
        names: set[str] = set()
        for p in self.platforms:
            names |= platform_names(p)
        return frozenset(names)

    def describe(self) -> str:
        plats = "every platform" if ALL_PLATFORMS in self.platforms else ", ".join(sorted(self.platforms))
        extra = "" if self.policy is RangePolicy.DEFAULT else f", policy {self.policy.value!r}"
        if self.float_policy is not FloatPolicy.F32:
            extra += f", float policy {self.float_policy.value!r}"
        return f"mode {self.mode.value!r}{extra} for {plats}"


# ---------------------------------------------------------------------------
# The JAX configuration state (part of the trace context and jit cache key)
# ---------------------------------------------------------------------------

# The configuration lives in a JAX configuration state held by the hook's
# state object (:data:`no64.jax.state.STATE`), with everything else the hook
# keeps between calls.


def active_config() -> Config | None:
    """The configuration in effect in this thread (``None`` when inactive)."""
    return STATE.active_config()


@contextmanager
def scoped(config: Config) -> Iterator[None]:
    """Use ``config`` for compilations started in this thread within the block.

    This is how :func:`no64.jit` makes its own compilations go through no64
    on every platform, whatever the global configuration says.
    """
    _ensure_hooks()
    with STATE.jax_state()(config):
        yield


# ---------------------------------------------------------------------------
# Install / uninstall
# ---------------------------------------------------------------------------


def install(
    platforms: str | Iterable[str],
    *,
    mode: Mode | str = Mode.FIX,
    integer_policy: IntegerPolicy | str = IntegerPolicy.ERROR,
    policy: RangePolicy | str = RangePolicy.DEFAULT,
    float_policy: str = "f32",
    target: str | None = None,
    float_hints: bool = False,
) -> Config:
    """Make every module JAX compiles for ``platforms`` pass through no64.

    Args:
      platforms: Platform names, as a list or a comma-separated string
        (``"neuron"``, ``["cpu"]``, ``"cpu,neuron"``); ``"*"`` means all.
      mode: ``"fix"`` (default): demote with :func:`no64.demote`, then
        :func:`no64.check`; ``"check"``: refuse any module holding a 64-bit
        value with :class:`no64.Remaining64BitError`; ``"off"``: leave
        modules untouched.
      integer_policy: For ``"fix"``: what :func:`no64.demote` does with
        out-of-range 64-bit integer constants.
      policy: For ``"fix"``: the range policy of :func:`no64.demote`;
        ``"exact"`` computes every integer not proven to fit in 32 bits
        exactly in 32-bit word pairs.
      float_policy: For ``"fix"``: ``"pairs"`` computes float64 values as
        pairs of f32 (:func:`no64.demote`); in a program that asked for
        x64, the float64 arguments of a top-level ``jit`` call enter as
        their pairs (split on the host, checked by value); the executables
        return what JAX lowered, so float64 outputs are rounded to f32 once,
        at the end.
      target: The device profile modules are checked against (``"neuron"``,
        ...; see :mod:`no64.targets`); default: the compiled platform's.
      float_hints: Also look for float64 results that f32 demonstrably
        changes and warn at their lines (:class:`no64.FloatPrecisionWarning`;
        as ``NO64_FLOAT_HINTS=on``).  Off by default: on a model's module
        the analysis costs about as much as the rest of the pass.

    Returns:
      The installed :class:`Config`.

    An explicit call replaces the configuration from ``NO64_PLATFORMS``
    (also when made before JAX starts its backends).  When ``jax_enable_x64``
    is on and a listed platform is the default backend, x64 is turned off
    with a one-time :class:`X64DisabledWarning`.  Switching configuration
    never reuses executables compiled under another one.
    """
    config = Config(normalize_platforms(platforms), Mode.parse(mode, "no64 mode"),
                    Options(integer_policy=integer_policy, policy=policy, float_policy=float_policy, target=target,
                            float_hints=float_hints))
    if not config.platforms:
        raise ValueError("no64.install needs at least one platform name")
    with STATE.lock:
        STATE.explicit = True
        STATE.config_error = None
        _activate(config, backends_started=jax_backends_started(), source="no64.install")
    return config


def uninstall() -> None:
    """Stop rewriting modules (the configuration from ``NO64_PLATFORMS`` too).

    ``jax_enable_x64`` is left as it is.  Executables compiled while no64
    was installed are not reused afterwards (the configuration is part of
    JAX's cache keys).
    """
    with STATE.lock:
        STATE.explicit = True
        STATE.config_error = None
        state = STATE.jax_state(create=False)
        if state is not None:
            state._set(None)


def initialize_from_environment(*, strict: bool = False) -> Config | None:
    """Install from ``NO64_PLATFORMS`` / ``NO64_MODE`` / ``NO64_INTEGER_POLICY`` /
    ``NO64_POLICY`` / ``NO64_FLOAT_POLICY``.

    Called by the ``jax_plugins`` entry point while JAX starts its backends
    (so it must not start them itself).  Does nothing when the variable is
    empty or when :func:`install` / :func:`uninstall` was already called.

    A bad ``NO64_MODE``, ``NO64_INTEGER_POLICY``, ``NO64_POLICY`` or
    ``NO64_FLOAT_POLICY`` fails closed: it raises
    :class:`no64.ConfigurationError` (a ``ValueError``) when ``strict``;
    otherwise the hook is installed and the first compile for a listed
    platform raises it, so that ``import jax`` never fails with a traceback
    over a typo and nothing runs under a setting other than the one meant.
    """
    platforms = normalize_platforms(os.environ.get(ENV_PLATFORMS, ""))
    if not platforms:
        return None
    config, problems = _environment_config(platforms, strict)
    with STATE.lock:
        if STATE.explicit:
            return active_config()
        STATE.config_error = "; ".join(problems) or None
        STATE.deferring = True
        try:
            _activate(config, backends_started=False, source=f"{ENV_PLATFORMS}={','.join(sorted(platforms))}")
        finally:
            STATE.deferring = False
    return config


def _environment_config(platforms: frozenset[str], strict: bool) -> tuple[Config, list[str]]:
    """The configuration the environment sets for ``platforms``: the mode
    from ``NO64_MODE``, the options from theirs
    (:meth:`~no64.options.Options.from_env`).  A bad value raises
    :class:`no64.ConfigurationError` if ``strict``; else it is one of the
    problems returned, and its default taken (the hook refuses to compile
    under it)."""
    problems: list[str] = []
    collect = None if strict else problems
    mode = read_environment(os.environ, ENV_MODE, collect) or Mode.FIX
    return Config(platforms, Mode(mode), Options.from_env(os.environ, problems=collect)), problems


def activate(config: Config, *, source: str) -> None:
    """Make ``config`` the global configuration, as :func:`install` does but
    without taking precedence over the environment's activation: inside
    :meth:`STATE.settings_swapped <no64.jax.state.HookState.settings_swapped>`,
    which puts the settings back (the audit runs a program under the hook
    this way).  ``source`` is said in the log and the x64 warning."""
    with STATE.lock:
        _activate(config, backends_started=jax_backends_started(), source=source)


def _activate(config: Config, *, backends_started: bool, source: str) -> None:
    _ensure_hooks()
    STATE.jax_state()._set(config)
    logger.info("no64 active (%s): %s", source, config.describe())
    if config.mode is not Mode.OFF:
        _handle_x64(config, backends_started=backends_started, source=source)


# ---------------------------------------------------------------------------
# x64
# ---------------------------------------------------------------------------

# The x64 warnings already given (each once per process) and those held
# back while JAX is imported are the state's (STATE.x64_warnings,
# STATE.deferring, STATE.deferred).


def _warn_once(kind: str, message: str) -> None:
    if kind not in STATE.x64_warnings:
        STATE.x64_warnings.add(kind)
        if STATE.deferring:
            STATE.deferred.append(message)
        else:
            _warn_at_caller(message)
    logger.info("%s", message)


def _say_deferred() -> None:
    """Give the x64 warnings held back at start-up: to the pytest plugin's
    report when pytest runs (a suite configured ``filterwarnings = error``
    must be able to start), else as a warning at the user's line that
    compiles first."""
    with STATE.lock:
        messages = list(STATE.deferred)
        STATE.deferred.clear()
    plugin = sys.modules.get("no64.jax.pytest_plugin")
    notes = getattr(plugin, "x64_notes", None)
    for message in messages:
        if notes is not None:
            notes.append(message)
        else:
            _warn_at_caller(message)


def _warn_at_caller(message: str) -> None:
    """Warn with the location of the first frame outside no64, JAX and the
    import machinery: the user's ``import jax``, ``jax.config.update`` or
    first computation, however deep the call chain that got here."""
    import jax

    inside = tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep
        for m in (sys.modules["no64"], jax, sys.modules.get("jax_plugins.no64"))
        if m is not None and m.__file__ is not None
    )
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            filename.startswith(inside) or filename.startswith("<frozen") or f"{os.sep}importlib{os.sep}" in filename
        ):
            registry = frame.f_globals.setdefault("__warningregistry__", {})
            warnings.warn_explicit(
                message,
                X64DisabledWarning,
                filename,
                frame.f_lineno,
                module=frame.f_globals.get("__name__"),
                registry=registry,
            )
            return
        frame = frame.f_back
    warnings.warn(message, X64DisabledWarning, stacklevel=2)


# Whether no64 turned x64 off for the default backend (globally), and
# whether the default backend was compared with the configuration once the
# backends had started (see _note_default_backend), are the state's
# (STATE.x64_off_by_no64, STATE.default_noted).


def _handle_x64(config: Config, *, backends_started: bool, source: str, again: bool = False) -> None:
    """Turn x64 off when ``config`` covers the default backend (``again``: it
    was just turned on while no64 was active), and say so once."""
    if not x64_state().get_global():
        return
    default = default_platform(backends_started)
    listed = ", ".join(sorted(config.platforms))
    if default is not None and not config.applies_to(default):
        _warn_once(
            "kept",
            f"jax_enable_x64 stays on for the default backend ({default}), which is not a no64 "
            f"platform ({listed}; {source}).\nComputations for {listed} must be traced with x64 "
            "off (no64.jit does that), or no64 refuses them (no64.Boundary64BitError).",
        )
        return
    import jax

    jax.config.update("jax_enable_x64", False)
    STATE.x64_off_by_no64 = True
    if default is None:
        where = f"a no64 platform ({listed}) may be the default backend"
        STATE.default_noted = False  # compare once the backends have started
    else:
        where = f"the default backend ({default}) is a no64 platform"
    floats = ("float64 as pairs of float32" if config.float_policy is FloatPolicy.PAIRS
              else "float64 as float32 (NO64_FLOAT_POLICY=pairs for pairs)")
    _warn_once(
        "again" if again else "off",
        f"no64 turned jax_enable_x64 off ({source}): {where}.\nJAX computes in 32 bits: "
        f"{floats}, int64 as its x64 program; host values: no64.host_records().",
    )


def _note_default_backend() -> None:
    """Once the backends have started: if no64 turned x64 off before the
    default backend was known and it turned out not to be a no64 platform,
    say so (once)."""
    STATE.default_noted = True
    config = STATE.global_config()
    if config is None or not STATE.x64_off_by_no64 or ALL_PLATFORMS in config.platforms:
        return
    import jax

    default = jax.default_backend()
    if config.applies_to(default):
        return
    listed = ", ".join(sorted(config.platforms))
    _warn_once(
        "elsewhere",
        f"no64 turned jax_enable_x64 off for {listed} before JAX started its backends, but the "
        f"default backend is {default}, not a no64 platform.\nComputations on {default} run "
        f"32-bit; if {listed} should be the default, check that its plugin is installed "
        "(or set JAX_PLATFORMS).",
    )


# ---------------------------------------------------------------------------
# The compile hook
# ---------------------------------------------------------------------------


def _ensure_hooks() -> None:
    """Wrap ``compile_or_get_cached`` and put no64 where JAX converts host data (idempotent)."""
    if STATE.original_compile is not None:
        return
    with STATE.lock:
        if STATE.original_compile is not None:
            return
        STATE.jax_state()
        from ._compat import locate_by_trace_frames, settle_trace_context

        settle_trace_context()
        host.install_hooks()
        intent.install()
        locate_by_trace_frames()
        _install_x64_guard()
        STATE.original_compile = internal_function("compile_or_get_cached")
        replace_internal_function("compile_or_get_cached", _compile_or_get_cached)


def _install_x64_guard() -> None:
    """Undo a later global ``jax_enable_x64 = True`` while no64 is active for
    the default backend (a trainer file, a library turning it on): chain a
    hook onto JAX's update hook for the option."""
    previous = x64_update_hook()

    def guard(value: Any) -> None:
        if previous is not None:
            previous(value)
        if not value:
            # turned off (by the program, or by no64 just before it notes
            # that it did): programs traced from now on did not ask for x64
            STATE.x64_off_by_no64 = False
            return
        config = STATE.global_config()
        if config is None or config.mode is Mode.OFF:
            return
        _handle_x64(
            config,
            backends_started=jax_backends_started(),
            source="jax_enable_x64 was turned on while no64 is active",
            again=True,
        )

    set_x64_update_hook(guard)


def _compile_or_get_cached(backend: Any, computation: ir.Module, *args: Any, **kwargs: Any) -> Any:
    """``jax._src.compiler.compile_or_get_cached`` with no64 in front of it."""
    listeners = STATE.listeners
    if not listeners:
        return _compile(backend, computation, args, kwargs)
    platform = str(getattr(backend, "platform", "unknown"))
    for listener in listeners:
        listener.before_backend(computation, platform)
    try:
        return _compile(backend, computation, args, kwargs)
    finally:
        for listener in listeners:  # the same listeners, whoever subscribed since
            listener.after_backend(computation, platform)


def _compile(backend: Any, computation: ir.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    config = STATE.active_config()
    original = STATE.original_compile
    assert original is not None
    if STATE.deferred:
        _say_deferred()
    if not STATE.default_noted:
        _note_default_backend()
    platform = str(backend.platform)
    if config is None or config.mode is Mode.OFF or not config.applies_to(platform):
        return original(backend, computation, *args, **kwargs)
    if STATE.config_error is not None and STATE.global_config() is config:
        raise ConfigurationError(f"no64: {STATE.config_error}; no64 refuses to compile for "
                                 f"'{platform}' under another setting than the one meant")
    if intent.has_meaning(computation):
        # the program asked for x64: what runs is its x64 program, converted
        prepared = prepare_with_meaning(computation, intent.meaning_of(computation), config, platform)
    else:
        prepared = prepare_module(computation, config, platform)
    # a module whose last result is a check by value (exact): read after each run
    checked = _checked.pop(id(prepared), None)
    checked = checked if checked is not None and checked[0] is prepared else None
    if config.mode is Mode.FIX:
        prepared = check_device(prepared, config, platform, owned=prepared is not computation)
    if prepared is computation:
        return original(backend, computation, *args, **kwargs)
    _probe_pairs(config, backend, platform)
    try:
        executable = original(backend, prepared, *args, **kwargs)
    except Exception:
        # The pass leaves verification to the backend, which verifies every
        # module it receives (and reports a failure in its own words: an
        # MLIRError in-process, a runtime error from a PJRT plugin).  If the
        # rewritten module is what fails verification, say so.
        if prepared is not computation:
            _blame_rewrite(prepared, computation)
        raise
    if checked is not None:
        return FlaggedExecutable(executable, _refuse_unless_all_fit(checked[1]))
    return executable


#: id(module) -> (that module, the error to raise if a result it checks by
#: value does not fit when it runs): modules prepared under ``exact`` whose
#: last result is that check (``outputs="checked"``)
_checked: dict[int, tuple[ir.Module, Callable[[], OutputRangeError]]] = {}


def _refuse_unless_all_fit(error: Callable[[], OutputRangeError]) -> Any:
    """Read the flag a run returns last: raise ``error()`` unless it is true
    on every device (one small device-to-host copy per run)."""
    import numpy as np

    def on_flag(arrays: Any) -> None:
        if not all(bool(np.asarray(a)) for a in arrays):
            raise error()

    return on_flag


_warned_target: set[tuple[str, int, str]] = set()


def device_profile(config: Config, platform: str) -> Target:
    """The device profile modules for ``platform`` are converted for, made
    exact on and checked against: ``config``'s target, else the platform's
    (:func:`no64.targets.target_for_platform`; ``generic`` if none)."""
    given = config.options.target
    return given if given is not None else target_for_platform(platform)


def check_device(module: ir.Module, config: Config, platform: str, owned: bool = False) -> ir.Module:
    """The module to compile for ``module``'s device, made exact there where
    no64 can, and checked against the device's profile
    (:mod:`no64.targets`).

    First the ops the device computes inexactly on a narrower datapath, or
    refuses for their integer elements, are rewritten into exact forms
    (:func:`no64.transforms.legalize.legalize`: an integer ``dot`` into limb
    dots exact in f32), and the 16-bit integers a device without them
    widens are carried in 32 bits (for a module without any 64-bit value
    too), in a copy unless ``owned`` (the module is no64's own copy
    already).  Then each op the device refuses, and each integer
    op it computes on a narrower datapath without a proof of exactness (for
    the program's own 32-bit integers too), is a :class:`no64.TargetWarning`
    at its line (once per line) under the default policy and a
    :class:`no64.TargetError` under ``strict`` and ``exact``."""
    profile = device_profile(config, platform)
    if not constrains(profile):
        return module
    checked = Pipeline(config.options).check_target(module, profile, copy=None if owned else clone_module)
    module, findings, said = checked.module, checked.findings, checked.explain
    if checked.legalized.changed:
        logger.debug("no64 legalized %s for %s: %s", module_name(module), profile.name,
                     checked.legalized.summary())
    if STATE.listeners:
        STATE.tell.on_target(module, platform, profile, checked.legalized, findings)
    if not findings:
        return module
    name = module_name(module)
    if checked.refused:
        raise checked.refusal(f"no64 (NO64_POLICY={config.policy}) refuses {name} for target '{profile.name}'",
                              source=True)
    for f in findings:
        file, line = f.location.file or "<unknown>", f.location.line or 0
        key = (file, line, f.kind)
        if key in _warned_target:
            continue
        _warned_target.add(key)
        warnings.warn_explicit(f"no64: {name}: {said(f)} (NO64_POLICY=strict refuses it)", TargetWarning,
                               file, line)
    return module


def _probe_pairs(config: Config, backend: Any, platform: str) -> None:
    """Under ``float_policy="pairs"``, once per platform: the backend's f32
    must give what the pair algorithms rest on, as the device's profile
    declares it (:func:`no64.jax.pair_probe.require_pair_arithmetic`)."""
    if config.float_policy is FloatPolicy.PAIRS:
        from .pair_probe import require_pair_arithmetic

        require_pair_arithmetic(backend, backend.devices()[0], device_profile(config, platform).arithmetic)


def _blame_rewrite(prepared: ir.Module, original: ir.Module) -> None:
    """Raise InvalidModuleError if ``prepared`` does not verify but ``original`` does."""
    try:
        prepared.operation.verify()
        return
    except ir.MLIRError as exc:
        problem = exc
    try:
        original.operation.verify()
    except ir.MLIRError:
        return  # the module JAX produced is invalid already: not no64's doing
    raise InvalidModuleError(
        f"the module no64 rewrote for {module_name(original)} does not verify "
        f"(please report this as a no64 bug, with the input module): {problem}"
    ) from None


def module_name(module: ir.Module) -> str:
    """The ``sym_name`` of a module (``jit_step``), or ``"<module>"``."""
    try:
        return ir.StringAttr(module.operation.attributes["sym_name"]).value
    except (KeyError, ValueError):
        return "<module>"


def prepare_module(module: ir.Module, config: Config, platform: str) -> ir.Module:
    """What the backend gets instead of ``module`` under ``config``.

    ``module`` itself is never modified.  A module without 64-bit values is
    returned as is; in ``"fix"`` mode a demoted and checked copy is returned;
    in ``"check"`` mode a module with 64-bit values is refused.  (The x64
    program of a module JAX lowered is prepared by :func:`judge_meaning`.)

    Raises:
      no64.Remaining64BitError: ``"check"`` mode and a 64-bit value remains.
      Boundary64BitError: the module's entry takes or returns 64-bit arrays.
      no64.UnsupportedOpError, no64.ConstantRangeError: demotion refused.

    The listeners (:data:`STATE`) are told what it recorded or raised
    (:meth:`~no64.jax.state.HookListener.on_module`).
    """
    if not STATE.listeners:
        return _prepare_module(module, config, platform)
    try:
        prepared = _prepare_module(module, config, platform)
    except BaseException as exc:
        STATE.tell.on_module(module, platform, None, exc)
        raise
    STATE.tell.on_module(module, platform, STATE.thread.report, None)
    return prepared


def _prepare_module(module: ir.Module, config: Config, platform: str) -> ir.Module:
    name = module_name(module)
    STATE.thread.report = None
    if not has_64bit(module):
        _record(name, platform, config.mode, None)
        return module
    if config.mode is Mode.CHECK:
        try:
            check(module)
        except Remaining64BitError as exc:
            raise Remaining64BitError(
                f"no64 (mode 'check') refuses {name} for platform '{platform}': {exc}",
                exc.findings,
            ) from None
    _check_boundary(module, name, platform, config)
    copy = clone_module(module)
    try:
        # The strict check runs inside the pass (over the ops it already
        # holds); the backend verifies the module it receives, so the pass
        # does not verify it a second time (see _compile_or_get_cached).
        report = Pipeline(config.options.replace(verify=False, check=True, outputs=Outputs.NARROW,
                                                 target=device_profile(config, platform))).demote(copy)
    except No64Error as exc:
        host.name_callers_line(exc, module)
        exc.add_note(f"no64 was preparing {name} for platform '{platform}' ({config.describe()})")
        raise
    STATE.thread.report = report
    if report.float_hints:
        intent.warn_float_hints(report, name)
    _record(name, platform, config.mode, report)
    logger.debug("no64 demoted %s for %s: %s", name, platform, report.summary().splitlines()[0])
    return copy


def prepare_with_meaning(module: ir.Module, meaning: "ir.Module | intent.NoMeaning | None",
                         config: Config, platform: str) -> ir.Module:
    """What the backend compiles for ``module`` (JAX's 32-bit module of a
    program that asked for x64), given its x64 meaning ``meaning``
    (:func:`no64.jax.intent.meaning_of`).

    Under every policy the x64 module, converted by the pass, replaces JAX's
    (it has the same 32-bit signature), so what runs is what was judged:
    width-dependent integer ops (shifts by 32 or more, ``clz``/``popcnt``,
    64-bit random bits, composite keys) give the x64 result -- on 32-bit
    words, or, for a device profile with native ``int64``/``uint64``
    (``mtl``, ``neuron-trn2``), as the x64 program computes them, only its
    32-bit arguments widened and its results narrowed.  The integers
    it cannot prove inside 32 bits are reported at their lines
    (:class:`no64.UnprovenIntegerWarning`) under the default policy and
    computed as 32-bit values there, refused under ``strict``, and computed
    exactly on 32-bit words under ``exact`` (see :func:`judge_meaning`).
    ``None``: the x64 program holds no 64-bit value and means what JAX's
    does.  A program whose x64 meaning cannot be had
    (:class:`~no64.jax.intent.NoMeaning`) runs JAX's module with a
    :class:`no64.NoX64MeaningWarning` under the default policy and is
    refused under ``strict`` and ``exact``.
    """
    name = module_name(module)
    if isinstance(meaning, ir.Module) and _signature(meaning, narrowed=True) != _signature(module):
        meaning = intent.NoMeaning("its x64 program, narrowed, has another signature than its "
                                   "32-bit program")
    if isinstance(meaning, intent.NoMeaning):
        intent.refuse_without_meaning(module)
        intent.no_meaning(meaning, name, config.policy)
        return prepare_module(intent.runnable_32bit(module), config, platform)
    if not isinstance(meaning, ir.Module):
        return prepare_module(module, config, platform)
    return judge_meaning(module, meaning, config, platform)


def _signature(module: ir.Module, narrowed: bool = False) -> tuple[list[str], list[str]] | None:
    """The entry function's input and result types (``narrowed``: as no64 narrows them)."""
    main = entry_function(module.operation)
    if main is None:
        return None
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        convert = TypeConverter().convert_or_same if narrowed else (lambda t: t)
        return [str(convert(t)) for t in ftype.inputs], [str(convert(t)) for t in ftype.results]


def judge_meaning(module: ir.Module, meaning: ir.Module, config: Config, platform: str) -> ir.Module:
    """Convert ``meaning``, the x64 module of JAX's 32-bit ``module``, into
    what the backend compiles for it, judged under the configured policy.

    Its 64-bit inputs are the 32-bit values the host narrowed, and its
    outputs come back narrowed to the 32-bit arrays JAX returns.  The
    64-bit types the device profile has (:func:`device_profile`) are kept
    inside: on a device with native ``int64``/``uint64`` only the results
    are narrowed, and judged as what follows says.  Under
    ``exact`` every integer not proven to fit is computed on 32-bit words
    and an output not proven to fit is refused
    (:class:`no64.OutputRangeError`).  Under the other policies the
    integers it cannot prove inside 32 bits are narrowed, reported once per
    source line (:class:`no64.UnprovenIntegerWarning`) and kept in the
    module's :class:`CompileRecord` (``meaning``); ``strict`` refuses them
    (:class:`no64.NarrowingError`).  The listeners are told the judgement
    (:meth:`~no64.jax.state.HookListener.on_meaning`), then the prepared
    module (:meth:`~no64.jax.state.HookListener.on_module`, with
    ``meaning`` as the module).
    """
    name = module_name(module)
    try:
        prepared = _judge_meaning(module, meaning, config, platform, name)
    except BaseException as exc:
        if STATE.listeners:
            STATE.tell.on_meaning(module, meaning, platform, None, exc)
            STATE.tell.on_module(meaning, platform, None, exc)
        raise
    return prepared


def _judge_meaning(module: ir.Module, meaning: ir.Module, config: Config, platform: str,
                   name: str) -> ir.Module:
    STATE.thread.report = None
    exact = config.policy is RangePolicy.EXACT
    copy = clone_module(meaning)
    try:
        # the unproven integers are the judgement's (refused under strict below)
        # a target with native 64-bit integers computes them as the x64
        # program does; only the results JAX returns in 32 bits are narrowed
        report = Pipeline(config.options.replace(
            policy=config.policy if exact else RangePolicy.PERMISSIVE,
            input_ranges=exact_input_ranges(copy.operation, None), verify=False, check=True,
            outputs=Outputs.CHECKED if exact else Outputs.NARROW,
            target=device_profile(config, platform))).demote(copy)
    except No64Error as exc:
        if exact and isinstance(exc, NarrowingError):
            raise intent.output_error(name, exc) from None
        host.name_callers_line(exc, meaning)
        if config.policy in (RangePolicy.DEFAULT, RangePolicy.PERMISSIVE):
            # no64 cannot convert the x64 program (an op with no 32-bit form
            # there): said at the line, and JAX's 32-bit program runs
            first = (str(exc).strip().splitlines() or [""])[0]
            intent.no_meaning(intent.NoMeaning(f"no64 cannot convert its x64 program ({first})"),
                              name, config.policy)
            return prepare_module(intent.runnable_32bit(module), config, platform)
        exc.add_note(f"no64 was preparing the x64 program of {name} for platform '{platform}' "
                     f"({config.describe()})")
        raise
    intent.refuse_or_warn_overflow(report, name, config.policy)
    if not exact:
        intent.refuse_unless_proven(module, report)
        if config.policy is RangePolicy.STRICT:
            bad = intent.unproven(report)
            if bad:
                n = bad[0]
                refusal = NarrowingError(n.op, n.location, n.verdict, n.interval or (0, 0), config.policy,
                                         narrowing=n, reason=None if n.interval else n.detail)
                host.name_callers_line(refusal, meaning)
                refusal.add_note(f"no64 was judging {name} for platform '{platform}' by its x64 "
                                 f"program ({config.describe()})")
                refusal.add_note("where the program knows the value's range, no64.assume(x, lo, hi) "
                                 "states it there")
                raise refusal
        intent.warn_unproven(report, name)
        STATE.thread.meaning = report
    if report.checked_outputs:
        _checked[id(copy)] = (copy, functools.partial(intent.checked_output_error, name,
                                                      list(report.checked_outputs)))
    if STATE.listeners:
        STATE.tell.on_meaning(module, meaning, platform, None if exact else report, None)
    STATE.thread.report = report
    if report.float_hints:
        intent.warn_float_hints(report, name)
    _record(name, platform, config.mode, report)
    if STATE.listeners:
        STATE.tell.on_module(meaning, platform, report, None)
    logger.debug("no64 converted the x64 program of %s for %s: %s", name, platform,
                 report.summary().splitlines()[0])
    return copy


def clone_module(module: ir.Module) -> ir.Module:
    """A deep copy of ``module`` in the same context, as an ``ir.Module``.

    ``Operation.clone`` returns the copied ``builtin.module`` as an op; its
    body is moved into a fresh ``ir.Module`` carrying the same attributes, so
    the copy can be handed to the backend like the original.
    """
    with module.context, module.operation.location:
        new = ir.Module.create()
        src = module.operation.attributes
        dst = new.operation.attributes
        for i in range(len(src)):
            named = src[i]
            dst[named.name] = named.attr
        copy = module.operation.clone()
        body = new.body
        for op in list(copy.regions[0].blocks[0].operations):
            op = op.operation
            op.detach_from_parent()
            body.append(op)
        copy.operation.erase()
    return new


def _check_boundary(module: ir.Module, name: str, platform: str, config: Config) -> None:
    """Refuse a module whose entry function takes or returns 64-bit values."""
    main = entry_function(module.operation)
    if main is None:
        return
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        holds = TypeConverter().holds_64bit
        if not any(holds(t) for t in (*ftype.inputs, *ftype.results)):
            return
    entry = symbol_name(main)
    findings = [
        f for f in find_64bit(module)
        if f.function == entry and spec_of(f.op).function
    ]
    shown = "\n  ".join(str(f) for f in findings[:10])
    more = f"\n  ... and {len(findings) - 10} more" if len(findings) > 10 else ""
    if ALL_PLATFORMS in config.platforms:
        why = (
            "Under no64.jit arguments are converted to 32 bits and tracing runs with x64 off, "
            "so the 64-bit value entered another way (e.g. a 64-bit array JAX passes to the "
            "computation as an argument): pass it to the function as an argument instead."
        )
    elif x64_state().value:
        why = (
            "jax_enable_x64 is on. Turn it off for this platform (no64 turns it off when it is "
            "installed for the default backend), or use no64.jit, which traces with x64 off "
            "and converts 64-bit host inputs with range checks."
        )
    elif explicit_x64_dtypes_allowed():
        why = (
            "jax_explicit_x64_dtypes is 'allow' (globally or in a scope, "
            "jax.config.explicit_x64_dtypes), so JAX makes the 64-bit arrays a dtype asks for "
            "(uint64, int64, float64) with x64 off. Ask for 32-bit dtypes, or leave it at "
            "'warn' (JAX's default), where JAX gives the 32-bit dtype instead."
        )
    else:
        why = (
            "The computation was traced with jax_enable_x64 on in a scope (jax.enable_x64(True)) "
            "or before no64 was active, or is given a 64-bit jax.Array made then. no64 turns "
            "x64 off when it becomes active (when jax is imported, with NO64_PLATFORMS set and "
            "no64's start-up file installed; otherwise when JAX starts its backends), so "
            "calling it again outside such a scope traces it anew 32-bit. no64.jit passes "
            "64-bit host data in with range checks."
        )
    raise Boundary64BitError(
        f"no64 refuses {name} for platform '{platform}': its entry takes or returns 64-bit "
        f"arrays, which cannot exist on a platform without 64-bit types.\n  {shown}{more}\n{why}",
        findings,
    )


# ---------------------------------------------------------------------------
# Records of what the hook did
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CompileRecord:
    """One module that went through the hook.

    ``report`` is ``None`` when the module held no 64-bit value (it then
    reached the backend unchanged).
    """

    module: str
    platform: str
    mode: Mode
    report: DemotionReport | None
    #: The report of the module's x64 meaning, judged under the default,
    #: strict or permissive policy (see :func:`judge_meaning`; it is then
    #: also ``report``); ``None`` when the program did not ask for x64, or
    #: under ``exact``, whose ``report`` is that of the x64 program.
    meaning: DemotionReport | None = None

    @property
    def changed(self) -> bool:
        """Whether the backend got a rewritten module."""
        return self.report is not None and self.report.changed

    @property
    def exact(self) -> bool:
        """Whether every narrowing kept its value (see :func:`is_exact`) and,
        for a program that asked for x64, every integer its x64 program
        computes in 64 bits is proven to fit."""
        return is_exact(self.report) and (self.meaning is None or not intent.unproven(self.meaning))


def _record(name: str, platform: str, mode: Mode, report: DemotionReport | None) -> None:
    meaning = STATE.thread.meaning
    STATE.thread.meaning = None
    record = CompileRecord(name, platform, mode, report, meaning)
    STATE.records.append(record)
    if STATE.listeners:
        STATE.tell.on_compile(record)


def compile_records() -> list[CompileRecord]:
    """The most recent modules (up to 1024) that went through the hook, oldest first."""
    return list(STATE.records)


def clear_compile_records() -> None:
    """Forget the records returned by :func:`compile_records`."""
    STATE.records.clear()
