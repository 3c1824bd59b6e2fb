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

The package, by job (each module imports only those above it): ``config``
(which platforms no64 protects and how, the environment variables, the
configuration in effect) and ``records`` (what the hook did with each
module), ``x64`` (``jax_enable_x64`` turned off, and said once),
``prepare`` (a module demoted or refused, checked against the device's
profile), ``meaning`` (a program that asked for x64, by its x64 meaning),
``compiler`` (the hook in front of JAX's compiler, and its installation)
and ``activation`` (:func:`install`, :func:`uninstall`, the environment's
activation and :func:`scoped`); this face re-exports their public names.
"""

from __future__ import annotations

from ...errors import Boundary64BitError, X64DisabledWarning
from ..state import ALL_PLATFORMS, STATE  # noqa: F401
from .activation import activate, initialize_from_environment, install, scoped, uninstall  # noqa: F401
from .config import (  # noqa: F401
    ENV_FLOAT_POLICY,
    ENV_INTEGER_POLICY,
    ENV_MODE,
    ENV_PLATFORMS,
    ENV_POLICY,
    ENV_TARGET,
    MODES,
    Config,
    active_config,
    normalize_platforms,
)
from .meaning import judge_meaning, prepare_with_meaning  # noqa: F401
from .prepare import check_device, clone_module, device_profile, module_name, prepare_module  # noqa: F401
from .records import CompileRecord, clear_compile_records, compile_records, is_exact
from .x64 import say_deferred  # noqa: F401

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
