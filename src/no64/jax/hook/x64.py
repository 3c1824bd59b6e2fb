"""x64 under the compile hook: ``jax_enable_x64`` turned off when no64
covers the default backend (and again when a program turns it on while no64
is active, through a guard chained onto JAX's update hook for the option),
said once, at the user's line."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from types import FrameType
from typing import Any

from ...errors import X64DisabledWarning
from ...kinds import FloatPolicy, Mode
from .._compat import backends_started as jax_backends_started, set_x64_update_hook, x64_state, x64_update_hook
from ..state import ALL_PLATFORMS, STATE, default_platform
from .config import Config

logger = logging.getLogger("no64")

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


def say_deferred() -> None:
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
# backends had started (see note_default_backend), are the state's
# (STATE.x64_off_by_no64, STATE.default_noted).


def handle_x64(config: Config, *, backends_started: bool, source: str, again: bool = False) -> None:
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


def note_default_backend() -> None:
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


def install_x64_guard() -> None:
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
        handle_x64(
            config,
            backends_started=jax_backends_started(),
            source="jax_enable_x64 was turned on while no64 is active",
            again=True,
        )

    set_x64_update_hook(guard)
