"""The compile hook itself: ``jax._src.compiler.compile_or_get_cached``
with no64 in front of it, installed with the hook's other points (the
group ``hook`` of :data:`no64.jax.interception.POINTS`) at its first
activation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import ConfigurationError, InvalidModuleError, OutputRangeError
from ...ir._mlir import ir
from ...kinds import FloatPolicy, Mode
from .. import host, intent, interception
from .._compat import FlaggedExecutable, internal_function, replace_internal_function, with_host_callbacks
from ..state import STATE
from .config import Config
from .meaning import checked_modules, prepare_with_meaning
from .prepare import check_device, device_profile, module_name, prepare_module
from .x64 import install_x64_guard, note_default_backend, say_deferred


def ensure_hooks() -> None:
    """Wrap ``compile_or_get_cached`` and put no64 where JAX converts host data (idempotent): the
    host's and the x64 meaning's points, then the hook's own (the group ``hook`` of
    :data:`no64.jax.interception.POINTS`, in its order)."""
    if STATE.original_compile is not None:
        return
    with STATE.lock:
        if STATE.original_compile is not None:
            return
        STATE.jax_state()
        from .._compat import locate_by_trace_frames, settle_trace_context

        settle_trace_context()
        host.install_hooks()
        intent.install()
        interception.install("hook", {
            "trace-frame-locations": locate_by_trace_frames,
            "x64-update-hook": install_x64_guard,
            "compile": _install_compile,
        })


def _install_compile() -> None:
    STATE.original_compile = internal_function("compile_or_get_cached")
    replace_internal_function("compile_or_get_cached", _compile_or_get_cached)


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
        say_deferred()
    if not STATE.default_noted:
        note_default_backend()
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
    checked = checked_modules.pop(id(prepared), None)
    checked = checked if checked is not None and checked[0] is prepared else None
    # a module no64 lowered (the x64 one) calls the host callbacks of its own lowering
    callbacks = intent.host_callbacks_of(prepared)
    if config.mode is Mode.FIX:
        prepared = check_device(prepared, config, platform, owned=prepared is not computation)
    if prepared is computation:
        return original(backend, computation, *args, **kwargs)
    _probe_pairs(config, backend, platform)
    if callbacks is not None:
        args, kwargs = with_host_callbacks(original, args, kwargs, callbacks)
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


def _refuse_unless_all_fit(error: Callable[[], OutputRangeError]) -> Any:
    """Read the flag a run returns last: raise ``error()`` unless it is true
    on every device (one small device-to-host copy per run)."""
    import numpy as np

    def on_flag(arrays: Any) -> None:
        if not all(bool(np.asarray(a)) for a in arrays):
            raise error()

    return on_flag


def _probe_pairs(config: Config, backend: Any, platform: str) -> None:
    """Under ``float_policy="pairs"``, once per platform: the backend's f32
    must give what the pair algorithms rest on, as the device's profile
    declares it (:func:`no64.jax.pair_probe.require_pair_arithmetic`)."""
    if config.float_policy is FloatPolicy.PAIRS:
        from ..pair_probe import require_pair_arithmetic

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
