"""Turning the compile hook on and off: :func:`install` and
:func:`uninstall` (no64's), the activation from ``NO64_PLATFORMS`` and the
compilation scope of :func:`no64.jit` (:func:`scoped`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ...kinds import IntegerPolicy, Mode, RangePolicy
from ...options import Options, read as read_environment
from .._compat import backends_started as jax_backends_started
from ..state import STATE
from .compiler import ensure_hooks
from .config import ENV_MODE, ENV_PLATFORMS, Config, active_config, normalize_platforms
from .x64 import handle_x64

logger = logging.getLogger("no64")

@contextmanager
def scoped(config: Config) -> Iterator[None]:
    """Use ``config`` for compilations started in this thread within the block.

    This is how :func:`no64.jit` makes its own compilations go through no64
    on every platform, whatever the global configuration says.
    """
    ensure_hooks()
    with STATE.jax_state()(config):
        yield


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
    ensure_hooks()
    STATE.jax_state()._set(config)
    logger.info("no64 active (%s): %s", source, config.describe())
    if config.mode is not Mode.OFF:
        handle_x64(config, backends_started=backends_started, source=source)
