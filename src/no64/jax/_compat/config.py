"""JAX's configuration: the x64 scope and value, configuration states in the trace context, the
platforms JAX was pinned to and whether its backends have started."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from .base import missing, optional_module
from .patching import note_permanent, replace_attribute

# ---------------------------------------------------------------------------
# enable_x64
# ---------------------------------------------------------------------------

def _find_enable_x64() -> Callable[[bool], AbstractContextManager[Any]]:
    import jax

    found = jax.__dict__.get("enable_x64")
    if found is not None:
        return found
    try:
        from jax._src import config as jax_config

        # jax.experimental's (0.7) is this one; taking it from config avoids
        # the deprecation shim of jax.experimental.
        return jax_config.enable_x64
    except (ImportError, AttributeError):
        pass
    experimental = importlib.import_module("jax.experimental")
    found = getattr(experimental, "enable_x64", None)
    if found is None:
        raise missing("enable_x64 scope (jax.enable_x64 or jax.experimental.enable_x64)")
    return found


_enable_x64: Callable[[bool], AbstractContextManager[Any]] | None = None


def enable_x64(new_val: bool = True) -> AbstractContextManager[Any]:
    """``jax.enable_x64(new_val)``: a thread-local scope with 64-bit types on
    or off (``jax.experimental.enable_x64`` where JAX has only that)."""
    global _enable_x64
    if _enable_x64 is None:
        _enable_x64 = _find_enable_x64()
    return _enable_x64(new_val)



def convert_weakly_typed(x: Any, dtype: Any, weak_type: bool) -> Any:
    """``x`` converted to ``dtype``, weakly typed where ``weak_type`` (as a
    Python scalar's value is): ``lax._convert_element_type``, the
    conversion that takes the weak type."""
    from .internals import internal_function

    return internal_function("lax_convert")(x, dtype, weak_type)

def set_x64_global(value: bool) -> None:
    """Set ``jax_enable_x64``'s global value without its update hooks (no
    warning, no guard), where jaxlib sees it: jaxlib reads the option itself
    from 0.8 (``jax_jit.set_enable_x64_state``); on 0.7 it keeps its own
    copy, which ``config._update_x64_global`` (the option's own update hook,
    which ``set_global`` skips) sets -- else jit's C++ dispatch would convert
    numpy arguments by the old value."""
    from jax._src import config as jax_config

    jax_config.enable_x64.set_global(value)
    mirror = getattr(jax_config, "_update_x64_global", None)
    if mirror is not None:
        mirror(value)


# ---------------------------------------------------------------------------
# Configuration states
# ---------------------------------------------------------------------------

def make_state(name: str, default: Any, help: str) -> Any:
    """A ``jax._src.config.State`` that is part of the jit cache key and of
    the trace context (so every JAX cache keys on its value)."""
    from jax._src import config as jax_config

    params = inspect.signature(jax_config.State.__init__).parameters
    if "include_in_trace_context" in params:
        return jax_config.State(name, default, help, include_in_jit_key=True,
                                include_in_trace_context=True)
    if "include_in_jit_key" not in params or not callable(getattr(jax_config, "trace_context", None)):
        raise missing("way to put a configuration state in the trace context")
    state = jax_config.State(name, default, help, include_in_jit_key=True)
    _extend_trace_context(jax_config, state)
    return state


def _extend_trace_context(jax_config: Any, state: Any) -> None:
    """Make ``jax_config.trace_context()`` end with ``state.value``.

    JAX's caches hold on to the function object itself (``weakref_lru_cache``
    captures it when its module is imported), so the function's code is
    replaced rather than the module attribute; the new code runs in the
    config module's globals, where the original's copy and the state are
    put under names of no64's own.
    """
    import types

    current = jax_config.trace_context
    if getattr(jax_config, "_no64_trace_context_states", None) is None:
        jax_config._no64_trace_context_original = types.FunctionType(
            current.__code__, current.__globals__, current.__name__,
            current.__defaults__, current.__closure__)
        jax_config._no64_trace_context_states = []
        current.__code__ = _trace_context_code.__code__
        note_permanent("jax._src.config.trace_context.__code__", _trace_context_code)
    jax_config._no64_trace_context_states.append(state)


#: JAX modules that add configuration states to the trace context when
#: first imported: ``jax.extend`` imports ``jax._src.pallas``, which adds
#: ``pallas_grid_context`` and ``pallas_dynamic_shapes_export`` on 0.12
#: (none on 0.7-0.10).
_TRACE_CONTEXT_MODULES = ("jax.extend",)


def settle_trace_context() -> None:
    """Import the JAX modules that add states to the trace context when first
    imported (:data:`_TRACE_CONTEXT_MODULES`), which no64 uses later (a pairs
    compile, ``jax.extend.backend``): a state added after a function was
    compiled changes the key of every JAX cache, so that each jitted
    function is traced and compiled again at its next call."""
    for name in _TRACE_CONTEXT_MODULES:
        optional_module(name)


def _trace_context_code() -> Any:  # runs in jax._src.config's globals
    return (_no64_trace_context_original()  # type: ignore[name-defined]  # noqa: F821
            + tuple(s.value for s in _no64_trace_context_states))  # type: ignore[name-defined]  # noqa: F821


# -- configuration ----------------------------------------------------------

def x64_state() -> Any:
    """The ``jax_enable_x64`` option: ``value`` (in this thread's scope),
    ``get_global()``, ``set_global(value)``."""
    from jax._src import config as jax_config

    return jax_config.enable_x64


def x64_update_hook() -> Callable[[Any], None] | None:
    """The function JAX calls when ``jax_enable_x64``'s global value is set
    (the option's ``_update_global_hook``)."""
    return x64_state()._update_global_hook


def set_x64_update_hook(hook: Callable[[Any], None] | None) -> None:
    """Make ``hook`` the function JAX calls when ``jax_enable_x64``'s global
    value is set (chain onto :func:`x64_update_hook` to keep JAX's)."""
    replace_attribute(x64_state(), "_update_global_hook", hook, where="jax._src.config.enable_x64")


def explicit_x64_dtypes_allowed() -> bool:
    """Whether JAX's ``jax_explicit_x64_dtypes`` (from 0.8) is ``ALLOW`` here:
    an explicit 64-bit dtype then makes 64-bit arrays with x64 off (``False``
    where JAX has no such option)."""
    from jax._src import config as jax_config

    state = getattr(jax_config, "explicit_x64_dtypes", None)
    value = getattr(state, "value", None)
    return str(getattr(value, "name", value)).upper() == "ALLOW"


def pinned_platforms() -> str | None:
    """``jax_platforms`` (``JAX_PLATFORMS``) as set, or ``None``."""
    from jax._src import config as jax_config

    return jax_config.jax_platforms.value


# -- backends ---------------------------------------------------------------

def backends_started() -> bool:
    """Whether JAX has started its backends (``xla_bridge.backends_are_initialized``)."""
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def platform_names(platform: str) -> set[str]:
    """``platform`` (lower-cased) and its aliases (``gpu`` <-> ``cuda``/
    ``rocm``/``oneapi``): ``xla_bridge.expand_platform_alias`` and
    ``xla_bridge._platform_aliases``."""
    from jax._src import xla_bridge

    platform = platform.lower()
    names = {platform, *xla_bridge.expand_platform_alias(platform)}
    alias = getattr(xla_bridge, "_platform_aliases", {}).get(platform)
    if alias is not None:
        names.add(alias)
    return names
