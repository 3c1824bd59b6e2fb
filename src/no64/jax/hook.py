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
  when the module holds a 64-bit value at all.

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

import collections
import dataclasses
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..core._mlir import ir
from ..core.demote import FLOAT_POLICIES, demote
from ..errors import (
    Boundary64BitError,
    InvalidModuleError,
    No64Error,
    Remaining64BitError,
    X64DisabledWarning,
)
from ..core.report import DemotionReport
from ..kinds import LOSSY_EVENTS, FloatPolicy, IntegerPolicy, Mode, RangePolicy
from ..core.scan import check, find_64bit, has_64bit
from ..core.types import TypeConverter

__all__ = [
    "ALL_PLATFORMS",
    "Boundary64BitError",
    "CompileRecord",
    "Config",
    "ENV_INTEGER_POLICY",
    "ENV_MODE",
    "ENV_PLATFORMS",
    "ENV_POLICY",
    "LOSSY_EVENT_KINDS",
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

#: Environment variable naming the platforms to protect (comma separated).
ENV_PLATFORMS = "NO64_PLATFORMS"
#: Environment variable selecting the mode used with :data:`ENV_PLATFORMS`.
ENV_MODE = "NO64_MODE"
#: Environment variable selecting the integer policy used with :data:`ENV_PLATFORMS`.
ENV_INTEGER_POLICY = "NO64_INTEGER_POLICY"
#: Environment variable selecting the range policy used with :data:`ENV_PLATFORMS`.
ENV_POLICY = "NO64_POLICY"
#: Environment variable selecting the float policy used with :data:`ENV_PLATFORMS`.
ENV_FLOAT_POLICY = "NO64_FLOAT_POLICY"

#: The modes (see :class:`no64.kinds.Mode`): ``"fix"`` demotes then checks;
#: ``"check"`` refuses any 64-bit value; ``"off"`` passes modules through.
MODES = Mode.values()
#: Platform wildcard used by :func:`no64.jit`'s scope: every platform.
ALL_PLATFORMS = "*"

#: Report event kinds whose narrowing may change a value (see :class:`no64.kinds.EventKind`).
LOSSY_EVENT_KINDS = LOSSY_EVENTS


def is_exact(report: DemotionReport | None) -> bool:
    """Whether a demotion kept every value: no lossy event, only exact or sentinel verdicts."""
    return report is None or report.exact


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------


def _normalize_platforms(platforms: str | Iterable[str]) -> frozenset[str]:
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
      integer_policy: Passed to :func:`no64.demote` in ``"fix"`` mode.
      policy: The range policy passed to :func:`no64.demote` in ``"fix"``
        mode (``"default"``, ``"strict"``, ``"permissive"`` or ``"exact"``).
      float_policy: The float policy passed to :func:`no64.demote` in
        ``"fix"`` mode: ``"f32"`` or ``"pairs"`` (float64 values computed
        as pairs of f32, outputs rounded to f32 once).
    """

    platforms: frozenset[str]
    mode: Mode = Mode.FIX
    integer_policy: IntegerPolicy = IntegerPolicy.ERROR
    policy: RangePolicy = RangePolicy.DEFAULT
    float_policy: FloatPolicy = FloatPolicy.F32

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode.parse(self.mode, "no64 mode"))
        object.__setattr__(
            self, "integer_policy", IntegerPolicy.parse(self.integer_policy, "integer_policy")
        )
        object.__setattr__(self, "policy", RangePolicy.parse(self.policy, "policy"))
        object.__setattr__(self, "float_policy", FloatPolicy.parse(self.float_policy, "float_policy"))

    def applies_to(self, platform: str) -> bool:
        """Whether modules compiled for ``platform`` go through no64."""
        if self.mode is Mode.OFF:
            return False
        if ALL_PLATFORMS in self.platforms:
            return True
        return bool(_platform_names(platform) & self._expanded())

    def _expanded(self) -> frozenset[str]:
        names: set[str] = set()
        for p in self.platforms:
            names |= _platform_names(p)
        return frozenset(names)

    def describe(self) -> str:
        plats = "every platform" if ALL_PLATFORMS in self.platforms else ", ".join(sorted(self.platforms))
        extra = "" if self.policy is RangePolicy.DEFAULT else f", policy {self.policy.value!r}"
        if self.float_policy != "f32":
            extra += f", float policy {self.float_policy.value!r}"
        return f"mode {self.mode.value!r}{extra} for {plats}"


def _platform_names(platform: str) -> set[str]:
    """``platform`` and its aliases (``gpu`` <-> ``cuda``/``rocm``/``oneapi``)."""
    from jax._src import xla_bridge

    platform = platform.lower()
    names = {platform, *xla_bridge.expand_platform_alias(platform)}
    alias = xla_bridge._platform_aliases.get(platform)
    if alias is not None:
        names.add(alias)
    return names


# ---------------------------------------------------------------------------
# The JAX configuration state (part of the trace context and jit cache key)
# ---------------------------------------------------------------------------

_lock = threading.RLock()
_state: Any = None
_original_compile: Callable[..., Any] | None = None
_explicit = False  # install()/uninstall() was called: the environment no longer applies


def _get_state() -> Any:
    """The ``no64_config`` JAX state, created on first use.

    ``include_in_trace_context`` and ``include_in_jit_key`` make every JAX
    cache (traces, lowerings, in-memory executables, the C++ jit dispatch
    cache) key on the configuration.
    """
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                from ._compat import make_state

                _state = make_state(
                    "no64_config",
                    None,
                    "Platforms whose compiled modules no64 rewrites or checks, and the mode.",
                )
    return _state


def active_config() -> Config | None:
    """The configuration in effect in this thread (``None`` when inactive)."""
    if _state is None:
        return None
    return _state.value


@contextmanager
def scoped(config: Config) -> Iterator[None]:
    """Use ``config`` for compilations started in this thread within the block.

    This is how :func:`no64.jit` makes its own compilations go through no64
    on every platform, whatever the global configuration says.
    """
    _ensure_hooks()
    with _get_state()(config):
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
        pairs of f32 (:func:`no64.demote`); the executables return what JAX
        lowered, so float64 outputs are rounded to f32 once, at the end.

    Returns:
      The installed :class:`Config`.

    An explicit call replaces the configuration from ``NO64_PLATFORMS``
    (also when made before JAX starts its backends).  When ``jax_enable_x64``
    is on and a listed platform is the default backend, x64 is turned off
    with a one-time :class:`X64DisabledWarning`.  Switching configuration
    never reuses executables compiled under another one.
    """
    global _explicit
    config = Config(_normalize_platforms(platforms), mode, integer_policy, policy, float_policy)
    if not config.platforms:
        raise ValueError("no64.install needs at least one platform name")
    from jax._src import xla_bridge

    with _lock:
        _explicit = True
        _activate(config, backends_started=xla_bridge.backends_are_initialized(), source="no64.install")
    return config


def uninstall() -> None:
    """Stop rewriting modules (the configuration from ``NO64_PLATFORMS`` too).

    ``jax_enable_x64`` is left as it is.  Executables compiled while no64
    was installed are not reused afterwards (the configuration is part of
    JAX's cache keys).
    """
    global _explicit
    with _lock:
        _explicit = True
        if _state is not None:
            _state._set(None)


def initialize_from_environment(*, strict: bool = False) -> Config | None:
    """Install from ``NO64_PLATFORMS`` / ``NO64_MODE`` / ``NO64_INTEGER_POLICY`` / ``NO64_POLICY``.

    Called by the ``jax_plugins`` entry point while JAX starts its backends
    (so it must not start them itself).  Does nothing when the variable is
    empty or when :func:`install` / :func:`uninstall` was already called.

    A bad ``NO64_MODE``, ``NO64_INTEGER_POLICY`` or ``NO64_POLICY`` raises
    ``ValueError`` when ``strict``; otherwise it is reported in one line on
    standard error and the default (``fix``, ``error``, ``default``) is used, so that
    ``import jax`` never fails with a traceback over a typo.
    """
    platforms = _normalize_platforms(os.environ.get(ENV_PLATFORMS, ""))
    if not platforms:
        return None
    mode = _environment_choice(ENV_MODE, MODES, Mode.FIX, strict)
    integer_policy = _environment_choice(ENV_INTEGER_POLICY, IntegerPolicy.values(), IntegerPolicy.ERROR, strict)
    policy = _environment_choice(ENV_POLICY, RangePolicy.values(), RangePolicy.DEFAULT, strict)
    float_policy = _environment_choice(ENV_FLOAT_POLICY, FloatPolicy.values(), FloatPolicy.F32, strict)
    config = Config(platforms, mode, integer_policy, policy, float_policy)
    global _deferring
    with _lock:
        if _explicit:
            return active_config()
        _deferring = True
        try:
            _activate(config, backends_started=False, source=f"{ENV_PLATFORMS}={','.join(sorted(platforms))}")
        finally:
            _deferring = False
    return config


def _environment_choice(name: str, choices: tuple[str, ...], default: str, strict: bool) -> str:
    """The value of environment variable ``name`` if it is one of ``choices``;
    else ``default`` with one line on stderr (or ``ValueError`` if ``strict``)."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower() or default
    if value in choices:
        return value
    problem = f"{name}={raw!r} is not one of {', '.join(choices)}"
    if strict:
        raise ValueError(f"invalid no64 environment: {problem}")
    sys.stderr.write(f"no64: {problem}; using {str(default)!r}\n")
    return default


def _activate(config: Config, *, backends_started: bool, source: str) -> None:
    _ensure_hooks()
    _get_state()._set(config)
    logger.info("no64 active (%s): %s", source, config.describe())
    if config.mode is not Mode.OFF:
        _handle_x64(config, backends_started=backends_started, source=source)


# ---------------------------------------------------------------------------
# x64
# ---------------------------------------------------------------------------

#: The x64 warnings already given, each once per process: "off" (no64 turned
#: x64 off), "again" (turned it off again after someone turned it on), "kept"
#: (x64 stays on for an unlisted default backend), "elsewhere" (x64 was turned
#: off before the backends started, and the default is not a listed platform).
_x64_warnings: set[str] = set()


#: Set while no64 activates from the environment (inside ``import jax``):
#: the x64 warning is then held back until the first compile, so that
#: ``import jax`` never fails under ``-W error``.
_deferring = False
_deferred: list[str] = []


def _warn_once(kind: str, message: str) -> None:
    if kind not in _x64_warnings:
        _x64_warnings.add(kind)
        if _deferring:
            _deferred.append(message)
        else:
            _warn_at_caller(message)
    logger.info("%s", message)


def _say_deferred() -> None:
    """Give the x64 warnings held back at start-up: to the pytest plugin's
    report when pytest runs (a suite configured ``filterwarnings = error``
    must be able to start), else as a warning at the user's line that
    compiles first."""
    with _lock:
        messages = list(_deferred)
        _deferred.clear()
    plugin = sys.modules.get("no64.jax.pytest_plugin")
    notes = getattr(plugin, "x64_notes", None)
    for message in messages:
        if notes is not None:
            notes.append(message)
        else:
            _warn_at_caller(message)


def _default_platform(backends_started: bool) -> str | None:
    """The default backend's platform, or ``None`` when it cannot be known yet.

    Before the backends start, only an explicit ``JAX_PLATFORMS`` /
    ``jax_platforms`` names it (its first entry).
    """
    import jax
    from jax._src import config as jax_config

    if backends_started:
        return jax.default_backend()
    pinned = jax_config.jax_platforms.value
    if pinned:
        return pinned.split(",")[0].strip().lower() or None
    return None


def _warn_at_caller(message: str) -> None:
    """Warn with the location of the first frame outside no64, JAX and the
    import machinery: the user's ``import jax``, ``jax.config.update`` or
    first computation, however deep the call chain that got here."""
    import jax

    inside = tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep
        for m in (sys.modules["no64"], jax, sys.modules.get("jax_plugins.no64"))
        if m is not None and getattr(m, "__file__", None)
    )
    frame = sys._getframe(1)
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


#: no64 turned x64 off for the default backend (globally); host values are
#: then narrowed by no64 whatever the default backend turns out to be.
_x64_off_by_no64 = False
#: Whether the default backend was compared with the configuration once the
#: backends had started (see _note_default_backend).
_default_noted = False


def _handle_x64(config: Config, *, backends_started: bool, source: str, again: bool = False) -> None:
    """Turn x64 off when ``config`` covers the default backend (``again``: it
    was just turned on while no64 was active), and say so once."""
    global _x64_off_by_no64, _default_noted
    from jax._src import config as jax_config

    if not jax_config.enable_x64.get_global():
        return
    default = _default_platform(backends_started)
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
    _x64_off_by_no64 = True
    if default is None:
        where = f"a no64 platform ({listed}) may be the default backend"
        _default_noted = False  # compare once the backends have started
    else:
        where = f"the default backend ({default}) is a no64 platform"
    _warn_once(
        "again" if again else "off",
        f"no64 turned jax_enable_x64 off ({source}): {where}.\nJAX computes in 32 bits; "
        "no64 narrows 64-bit host values (sentinels kept, others range-checked): "
        "no64.host_records().",
    )


def _note_default_backend() -> None:
    """Once the backends have started: if no64 turned x64 off before the
    default backend was known and it turned out not to be a no64 platform,
    say so (once)."""
    global _default_noted
    _default_noted = True
    config = _state.get_global() if _state is not None else None
    if config is None or not _x64_off_by_no64 or ALL_PLATFORMS in config.platforms:
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
    global _original_compile
    if _original_compile is not None:
        return
    with _lock:
        if _original_compile is not None:
            return
        from jax._src import compiler

        from . import host

        from . import intent
        from ._compat import locate_by_trace_frames

        _get_state()
        host.install_hooks()
        intent.install()
        locate_by_trace_frames()
        _install_x64_guard()
        _original_compile = compiler.compile_or_get_cached
        compiler.compile_or_get_cached = _compile_or_get_cached


def _install_x64_guard() -> None:
    """Undo a later global ``jax_enable_x64 = True`` while no64 is active for
    the default backend (a trainer file, a library turning it on): chain a
    hook onto JAX's update hook for the option."""
    from jax._src import config as jax_config

    state = jax_config.enable_x64
    previous = state._update_global_hook

    def guard(value: Any) -> None:
        if previous is not None:
            previous(value)
        if not value:
            return
        config = _state.get_global() if _state is not None else None
        if config is None or config.mode is Mode.OFF:
            return
        from jax._src import xla_bridge

        _handle_x64(
            config,
            backends_started=xla_bridge.backends_are_initialized(),
            source="jax_enable_x64 was turned on while no64 is active",
            again=True,
        )

    state._update_global_hook = guard


def _compile_or_get_cached(backend: Any, computation: ir.Module, *args: Any, **kwargs: Any) -> Any:
    """``jax._src.compiler.compile_or_get_cached`` with no64 in front of it."""
    config = _state.value if _state is not None else None
    assert _original_compile is not None
    if _deferred:
        _say_deferred()
    if not _default_noted:
        _note_default_backend()
    platform = str(backend.platform)
    if config is None or config.mode is Mode.OFF or not config.applies_to(platform):
        return _original_compile(backend, computation, *args, **kwargs)
    from . import intent

    meaning = intent.meaning_of(computation)
    if meaning is not None:
        prepared = intent.prepare(computation, meaning, config, platform)
    else:
        prepared = prepare_module(computation, config, platform)
    if prepared is computation:
        return _original_compile(backend, computation, *args, **kwargs)
    if config.float_policy == "pairs":
        # once per platform: the backend must keep IEEE f32 for pairs
        from .pair_probe import require_ieee_f32

        require_ieee_f32(backend, backend.devices()[0])
    try:
        return _original_compile(backend, prepared, *args, **kwargs)
    except Exception:
        # The pass leaves verification to the backend, which verifies every
        # module it receives (and reports a failure in its own words: an
        # MLIRError in-process, a runtime error from a PJRT plugin).  If the
        # rewritten module is what fails verification, say so.
        _blame_rewrite(prepared, computation)
        raise


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


def prepare_module(module: ir.Module, config: Config, platform: str, *, boundary: bool = True,
                   name: str | None = None) -> ir.Module:
    """What the backend gets instead of ``module`` under ``config``.

    ``module`` itself is never modified.  A module without 64-bit values is
    returned as is; in ``"fix"`` mode a demoted and checked copy is returned;
    in ``"check"`` mode a module with 64-bit values is refused.
    ``boundary=False`` is for the x64 meaning of a 32-bit module JAX
    lowered (:mod:`no64.jax.intent`): its 64-bit inputs are the 32-bit values
    the host narrowed, and its outputs come back narrowed; ``name`` is the
    name of that module.

    Raises:
      no64.Remaining64BitError: ``"check"`` mode and a 64-bit value remains.
      Boundary64BitError: the module's entry takes or returns 64-bit arrays.
      no64.UnsupportedOpError, no64.ConstantRangeError: demotion refused.
    """
    name = name or module_name(module)
    _last.report = None
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
    if boundary:
        _check_boundary(module, name, platform, config)
    copy = clone_module(module)
    # the x64 meaning's 64-bit inputs are the 32-bit values the host narrowed
    ranges = None
    if not boundary:
        from ..core.emulate import exact_input_ranges

        ranges = exact_input_ranges(copy.operation, None)
    try:
        # The strict check runs inside the pass (over the ops it already
        # holds); the backend verifies the module it receives, so the pass
        # does not verify it a second time (see _compile_or_get_cached).
        report = demote(copy, integer_policy=config.integer_policy, policy=config.policy,
                        input_ranges=ranges, verify=False, check=True, outputs="narrow",
                        float_policy=config.float_policy)
    except No64Error as exc:
        from ..errors import NarrowingError
        from .host import name_callers_line

        if not boundary and isinstance(exc, NarrowingError) and config.policy is RangePolicy.EXACT:
            from .intent import output_error

            raise output_error(name, exc) from None
        name_callers_line(exc, module)
        exc.add_note(f"no64 was preparing {name} for platform '{platform}' ({config.describe()})")
        raise
    _last.report = report
    if report.float_hints:
        from .intent import warn_float_hints

        warn_float_hints(report, name)
    _record(name, platform, config.mode, report)
    logger.debug("no64 demoted %s for %s: %s", name, platform, report.summary().splitlines()[0])
    return copy


_last = threading.local()


def last_report() -> DemotionReport | None:
    """The report of the last :func:`prepare_module` in this thread (``None``: nothing demoted)."""
    return getattr(_last, "report", None)


def judge_meaning(module: ir.Module, meaning: ir.Module, config: Config, platform: str) -> DemotionReport | None:
    """Judge the 32-bit ``module`` JAX lowered by its x64 meaning (under the
    default, strict and permissive policies; :mod:`no64.jax.intent`).

    A copy of the x64 module is demoted with the configured policy, taking
    its 64-bit inputs as the 32-bit values the host narrowed: the integers
    it cannot prove inside 32 bits are those the 32-bit program may compute
    differently.  Each is reported once per source line
    (:class:`no64.UnprovenIntegerWarning`) and the report is kept in the
    module's :class:`CompileRecord` (``meaning``).  ``strict`` refuses them
    (:class:`no64.NarrowingError`).  An x64 module no64 cannot convert is
    not judged (``None``), except under ``strict``, which refuses it.  The
    32-bit program is what runs, so nothing else is refused here.
    """
    from ..core.emulate import exact_input_ranges
    from . import intent

    name = module_name(module)
    copy = clone_module(meaning)
    # the 32-bit program runs: its differences are reported (refused only under strict)
    try:
        report = demote(copy, integer_policy=config.integer_policy, policy=RangePolicy.PERMISSIVE,
                        input_ranges=exact_input_ranges(copy.operation, None),
                        verify=False, outputs="narrow")
    except No64Error as exc:
        if config.policy is RangePolicy.STRICT:
            exc.add_note(f"no64 was judging {name} for platform '{platform}' by its x64 program "
                         f"({config.describe()})")
            raise
        logger.debug("no64 could not judge %s by its x64 program: %s", name, exc)
        return None
    if config.policy is RangePolicy.STRICT:
        bad = intent.unproven(report)
        if bad:
            from ..errors import NarrowingError

            n = bad[0]
            exc = NarrowingError(n.op, n.location, n.verdict, n.interval or (0, 0), config.policy,
                                 narrowing=n, reason=None if n.interval else n.detail)
            exc.add_note(f"no64 was judging {name} for platform '{platform}' by its x64 program "
                         f"({config.describe()})")
            raise exc
    _last.meaning = report
    intent.warn_unproven(report, name)
    intent.warn_float_hints(report, name)
    return report


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


def _entry_function(module: ir.Module) -> ir.Operation | None:
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    return None


def _check_boundary(module: ir.Module, name: str, platform: str, config: Config) -> None:
    """Refuse a module whose entry function takes or returns 64-bit values."""
    main = _entry_function(module)
    if main is None:
        return
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        holds = TypeConverter().holds_64bit
        if not any(holds(t) for t in (*ftype.inputs, *ftype.results)):
            return
    findings = [
        f for f in find_64bit(module)
        if f.function == "main" and f.op == "func.func"
    ]
    shown = "\n  ".join(str(f) for f in findings[:10])
    more = f"\n  ... and {len(findings) - 10} more" if len(findings) > 10 else ""
    from jax._src import config as jax_config

    if ALL_PLATFORMS in config.platforms:
        why = (
            "Under no64.jit arguments are converted to 32 bits and tracing runs with x64 off, "
            "so the 64-bit value entered another way (e.g. a 64-bit array JAX passes to the "
            "computation as an argument): pass it to the function as an argument instead."
        )
    elif jax_config.enable_x64.value:
        why = (
            "jax_enable_x64 is on. Turn it off for this platform (no64 turns it off when it is "
            "installed for the default backend), or use no64.jit, which traces with x64 off "
            "and converts 64-bit host inputs with range checks."
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
    #: strict or permissive policy (see :func:`judge_meaning`); ``None``
    #: when the program did not ask for x64 or it was not judged.
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
        from .intent import unproven

        return is_exact(self.report) and (self.meaning is None or not unproven(self.meaning))


_records: collections.deque[CompileRecord] = collections.deque(maxlen=1024)


def _record(name: str, platform: str, mode: Mode, report: DemotionReport | None) -> None:
    meaning = getattr(_last, "meaning", None)
    _last.meaning = None
    _records.append(CompileRecord(name, platform, mode, report, meaning))


def compile_records() -> list[CompileRecord]:
    """The most recent modules (up to 1024) that went through the hook, oldest first."""
    return list(_records)


def clear_compile_records() -> None:
    """Forget the records returned by :func:`compile_records`."""
    _records.clear()
