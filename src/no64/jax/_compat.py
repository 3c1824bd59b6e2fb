"""The one seam between no64's JAX layer and the JAX it runs on.

Every JAX internal whose name or form differs between the supported releases
(jax 0.7.0 through 0.12.x, :data:`no64.ir._compat.TESTED_TEXT`) is reached
through this module.  It detects *features*, not versions: it tries the newer
name, falls back to the older one, and fails with one line naming the
missing feature (:class:`no64.ir._compat.UnsupportedJaxlibError`) where
neither exists.  The MLIR and XLA bindings have their own seam in the core,
:mod:`no64.ir._compat` (the core never imports JAX).

What it covers, with the releases that have each form:

* **``enable_x64`` scope** (:func:`enable_x64`): ``jax.enable_x64`` from 0.8;
  ``jax.experimental.enable_x64`` on 0.7 (deprecated there from 0.8, gone in
  0.9).
* **The global x64 value jaxlib sees** (:func:`set_x64_global`): jaxlib
  reads ``jax_enable_x64`` from 0.8; 0.7 mirrors it into jaxlib through
  ``config._update_x64_global``, which ``State.set_global`` does not call.
* **Host-value canonicalisation registry** (:func:`register_canonicalize_handler`):
  ``jax._src.dtypes.register_canonicalize_value_handler`` from 0.10.2
  (jaxlib's C++ registry when jaxlib has it); the plain dict
  ``jax._src.dtypes.canonicalize_value_handlers`` on 0.8-0.10.1;
  ``jax._src.interpreters.xla.canonicalize_dtype_handlers`` on 0.7.
* **Canonical host values** (:func:`typed_ndarray`, :func:`typed_scalar`):
  ``jax._src.literals.TypedNdArray(val)`` from 0.10 (an optional aval
  second), ``TypedNdArray(val, weak_type)`` on 0.8-0.9, and ``TypedInt``/
  ``TypedFloat(value, dtype)`` on 0.8-0.12; 0.7 has no ``literals`` module and
  canonicalises to plain numpy arrays (``np.asarray(value, dtype)``).
* **Configuration states in the trace context** (:func:`make_state`):
  ``jax._src.config.State(..., include_in_trace_context=True)`` from 0.8; on
  0.7 ``State`` has only ``include_in_jit_key`` and ``config.trace_context()``
  is a fixed tuple; its code is extended to include the state's value (JAX's
  caches hold the function object itself).
* **Explicitly requested dtypes** (:func:`watch_explicit_dtypes`):
  ``jax._src.dtypes._maybe_canonicalize_explicit_dtype`` from 0.8;
  ``jax._src.dtypes.check_user_dtype_supported`` (which only warns) on 0.7.
* **What the backend client receives** (:func:`backend_module_text`):
  ``Client.compile_and_load`` gets an ``ir.Module`` from 0.8 and MLIR
  bytecode on 0.7.
* **The C++ fast path of AOT-compiled calls** (:func:`cpp_call_params`):
  ``pxla.MeshExecutable.create_cpp_call(params)`` from 0.8; on 0.7 it takes
  ``(no_kwargs, in_tree, out_tree)``, with no parameters to fall back on.
* **Closed jaxprs** (:func:`jaxpr_classes`, :func:`open_jaxpr`):
  ``jax._src.core.ClosedJaxpr`` wraps a ``core.Jaxpr`` and its ``consts``
  on 0.7-0.10; from 0.11 one ``core.Jaxpr`` class carries its own
  ``consts`` (its ``constvars`` are the inputs with values attached, its
  ``jaxpr`` is itself), ``ClosedJaxpr`` an alias of it on 0.11 and gone
  from 0.12.
* **JAX's samplers** (:func:`wrap_random_samplers`): the public functions of
  ``jax.random`` whose first parameter is ``key`` and which take a ``dtype``
  or a ``shape``, found by signature (0.7-0.12).
* **A scan's operands** (:func:`scan_layout`): the ``scan`` primitive's
  parameters ``num_consts`` and ``num_carry`` on 0.7-0.10; from 0.11 a
  ``jax._src.flattree.FlatTree`` ``ft_in`` of (consts, carry, xs) (and
  ``ft_out`` of (carry, ys)).
* **jit's Python path** (:func:`jit_function`, :func:`replace_jit_function`,
  :func:`jit_input_avals`): ``jax._src.pjit``'s ``_infer_params``,
  ``_pjit_lower``, ``_get_fastpath_data`` and ``_infer_input_type`` on
  0.7-0.12 (the last takes a debug-info function from 0.8, the debug info
  on 0.7), ``_trace_for_jit`` from 0.9; a jit call's arguments are parsed
  (``jax_jit.parse_arguments``) with ``tree_util.tracing_registry`` from
  0.10 and ``tree_util.default_registry`` on 0.7-0.9.
* **Traces in progress** (:func:`at_top_level`, :func:`tracer_type`):
  whether a trace is in progress by ``core.trace_state_clean`` (else
  ``core.trace_ctx.is_top_level``); tracers are ``jax.core.Tracer``.
* **Every jit call through JAX's Python dispatch**
  (:func:`route_python_jit_calls`, :func:`clear_fast_path_entries`): jit's
  ``cache_miss`` runs ``pjit._run_python_pjit(p, args_flat, fun, [jit_info,]
  args, kwargs)`` from 0.9 (``jit_info`` on 0.9 only; from 0.10 the one
  ``pjit._infer_params`` was given for ``p``), ``pjit._python_pjit_helper(fun,
  jit_info, *args, **kwargs)`` on 0.7-0.8, then asks
  ``pjit._get_fastpath_data`` for the call's C++ fast-path entry; the
  entries are dropped with ``PjitFunctionCache.clear_all()`` (0.7-0.12).
* **The trace of a jit call** (:func:`wrap_jit_trace`, :func:`jit_input_avals`):
  ``pjit._trace_for_jit(fun, ji, ctx_mesh, dbg, avals, args, kwargs)`` from
  0.9; ``pjit._infer_params_impl(fun, ji, ctx_mesh, dbg, args, kwargs,
  in_avals)``, which also returns the flat arguments, on 0.7-0.8.
  ``pjit._infer_input_type`` takes a function returning the debug info from
  0.8, the debug info on 0.7; jit flattens arguments with
  ``tree_util.tracing_registry`` from 0.10, ``default_registry`` on 0.7-0.9.
* **The lowering of a jit call** (:func:`wrap_jit_lower`):
  ``pjit._pjit_lower(jaxpr, ...)`` on 0.7-0.12 (a wrapper of
  ``_pjit_lower_cached`` on 0.7).
* **Traced host constants** (:func:`canonicalize_traced_constants`):
  canonicalised by ``DynamicJaxprTrace._new_const`` through
  ``dtypes.canonicalize_value`` from 0.8; 0.7 canonicalises them only when
  lowering or calling (``xla.canonicalize_dtype``).
* **An equation's traceback** (:func:`traceback_frames`,
  :func:`locate_by_trace_frames`): from 0.9 (``_jax.TracebackScope``) it
  holds the frames of its own trace, and lowering adds the context's; 0.7-0.8
  record the whole Python stack (cut at ``partial_eval.trace_to_jaxpr_dynamic``
  / ``trace_to_jaxpr``, and ``mlir._traceback_to_location`` is given the cut
  frames and the context's).
* Internals that are the same on every supported release, each reached
  through a function of this module so that a future release that drops
  one is found in one place: ``jax._src.config`` (:func:`x64_state`,
  :func:`x64_update_hook`, :func:`set_x64_update_hook`,
  :func:`explicit_x64_dtypes_allowed`, :func:`pinned_platforms`),
  ``jax._src.xla_bridge`` (:func:`backends_started`, :func:`platform_names`,
  and ``_backend_factories["cpu"]``, which :func:`guard_cpu_compiler` wraps),
  ``jax._src.lib.xla_client`` (:func:`device_list`),
  ``jax._src.sharding_impls`` (:func:`sharding_for`),
  ``jax._src.traceback_util`` (:func:`hide_from_tracebacks`),
  ``jax._src.source_info_util`` (:func:`hide_from_source_locations`,
  :func:`frame_line`, :func:`current_traceback`), ``jax._src.core``
  (:func:`jaxprs_in_params`, :func:`aval_mapping`, :func:`set_aval_mapping`),
  ``jax._src.dtypes.warnings`` (:func:`wrap_dtype_warnings`), the modules of
  ``jax._src.numpy`` (:func:`numpy_modules`), and the functions no64 calls or
  wraps by name (:func:`internal_function`, :func:`replace_internal_function`):
  ``jax._src.compiler.compile_or_get_cached``,
  ``jax._src.lax.lax._convert_element_type``, ``jax._src.dtypes``'
  ``coerce_to_array``, ``canonicalize_dtype`` and ``check_valid_dtype``,
  ``jax._src.numpy.array_constructors.array``/``asarray``,
  ``jax._src.numpy.lax_numpy.arange``,
  ``jax._src.interpreters.pxla.MeshExecutable.create_cpp_call`` and
  ``jax._src.stages.Compiled.call``.
* **The primitives JAX defines** (:func:`primitive_names`): every
  ``jax.extend.core.Primitive`` bound at module level in JAX's modules
  (0.7-0.12 define them there, mostly in ``jax._src``).

No other module of no64 imports ``jax._src``, ``jax.interpreters``,
``jax.lib`` or ``jaxlib`` (the MLIR bindings excepted, which
:mod:`no64.ir._mlir` and :mod:`no64.ir._compat` import): ``tests/test_seam.py``
checks it.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from ..ir._compat import UnsupportedJaxlibError


def _missing(what: str) -> UnsupportedJaxlibError:
    return UnsupportedJaxlibError(f"no64 cannot use this JAX: it has no {what}")


def _optional_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


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
        raise _missing("enable_x64 scope (jax.enable_x64 or jax.experimental.enable_x64)")
    return found


_enable_x64: Callable[[bool], AbstractContextManager[Any]] | None = None


def enable_x64(new_val: bool = True) -> AbstractContextManager[Any]:
    """``jax.enable_x64(new_val)``: a thread-local scope with 64-bit types on
    or off (``jax.experimental.enable_x64`` where JAX has only that)."""
    global _enable_x64
    if _enable_x64 is None:
        _enable_x64 = _find_enable_x64()
    return _enable_x64(new_val)


def convert_element_type(x: Any, dtype: Any, weak_type: bool) -> Any:
    """``x`` converted to ``dtype``, weakly typed where ``weak_type`` (as a
    Python scalar's value is): ``lax._convert_element_type``, the
    conversion that takes the weak type."""
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
# Host-value canonicalisation
# ---------------------------------------------------------------------------

def register_canonicalize_handler(type_: type, handler: Callable[[Any], Any]) -> None:
    """Make ``handler`` JAX's canonicalisation of host values of ``type_``."""
    from jax._src import dtypes

    register = getattr(dtypes, "register_canonicalize_value_handler", None)
    if register is not None:
        register(type_, handler)
        return
    handlers = getattr(dtypes, "canonicalize_value_handlers", None)
    if handlers is None:
        xla = _optional_module("jax._src.interpreters.xla")
        handlers = getattr(xla, "canonicalize_dtype_handlers", None)
    if not isinstance(handlers, dict):
        raise _missing(
            "host-value canonicalisation registry (dtypes.register_canonicalize_value_handler, "
            "dtypes.canonicalize_value_handlers or xla.canonicalize_dtype_handlers)"
        )
    handlers[type_] = handler


def _typed_ndarray_factory() -> Callable[[np.ndarray], Any]:
    literals = _optional_module("jax._src.literals")
    cls = getattr(literals, "TypedNdArray", None)
    if cls is None:
        return lambda a: a  # JAX canonicalises to plain numpy arrays
    params = inspect.signature(cls).parameters
    if "weak_type" in params:
        return lambda a: cls(a, weak_type=False)
    return cls


def _typed_scalar_factory(kind: str) -> Callable[[Any, np.dtype], Any]:
    literals = _optional_module("jax._src.literals")
    cls = getattr(literals, kind, None)
    if cls is None:
        return lambda x, dtype: np.asarray(x, dtype)
    return cls


_factories: dict[str, Any] = {}
_factories_lock = threading.Lock()


def _factory(kind: str) -> Any:
    f = _factories.get(kind)
    if f is None:
        with _factories_lock:
            f = _typed_ndarray_factory() if kind == "TypedNdArray" else _typed_scalar_factory(kind)
            _factories[kind] = f
    return f


def typed_ndarray(a: np.ndarray) -> Any:
    """A numpy array in the form JAX's canonicalisation hands out (not weakly typed)."""
    return _factory("TypedNdArray")(a)


def typed_scalar(kind: str, x: Any, dtype: np.dtype) -> Any:
    """A Python scalar in canonical form: ``kind`` is ``"TypedInt"`` or
    ``"TypedFloat"`` (weakly typed where JAX has those classes)."""
    return _factory(kind)(x, dtype)


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
        raise _missing("way to put a configuration state in the trace context")
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
        _optional_module(name)


def _trace_context_code() -> Any:  # runs in jax._src.config's globals
    return (_no64_trace_context_original()  # type: ignore[name-defined]  # noqa: F821
            + tuple(s.value for s in _no64_trace_context_states))  # type: ignore[name-defined]  # noqa: F821



# ---------------------------------------------------------------------------
# Explicitly requested dtypes
# ---------------------------------------------------------------------------

def watch_explicit_dtypes(note: Callable[[Any, Any, Any], None]) -> Callable[[], None]:
    """Call ``note(requested, became, fun_name)`` each time JAX handles an
    explicitly requested dtype (``jnp.arange(..., dtype=jnp.int64)``);
    returns the function that takes the watch off.

    ``jax._src.dtypes._maybe_canonicalize_explicit_dtype`` (0.8-0.12) returns
    the dtype it became; on 0.7 ``check_user_dtype_supported`` only warns,
    and the dtype becomes ``canonicalize_dtype`` of it.
    """
    from jax._src import dtypes

    name = "_maybe_canonicalize_explicit_dtype"
    original = getattr(dtypes, name, None)
    if original is not None:
        canonical = original

        def canonicalize_explicit(dtype: Any, fun_name: Any) -> Any:
            out = canonical(dtype, fun_name)
            note(dtype, out, fun_name)
            return out

        wrapper: Callable[..., Any] = canonicalize_explicit
    else:
        name = "check_user_dtype_supported"
        original = getattr(dtypes, name, None)
        if original is None:
            raise _missing("hook for explicitly requested dtypes (dtypes._maybe_canonicalize_explicit_dtype "
                           "or dtypes.check_user_dtype_supported)")

        def check_user_dtype(dtype: Any, fun_name: Any = None) -> Any:
            out = original(dtype, fun_name)
            if dtype is None or dtype in (bool, int, float, complex):
                return out  # no explicit dtype (np.dtype(None) would say float64)
            try:
                requested = np.dtype(dtype)
            except TypeError:
                return out
            note(requested, dtypes.canonicalize_dtype(requested), fun_name)
            return out

        wrapper = check_user_dtype
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(dtypes, name, wrapper)

    def undo() -> None:
        if getattr(dtypes, name, None) is wrapper:
            setattr(dtypes, name, original)

    return undo


# ---------------------------------------------------------------------------
# What the backend client receives
# ---------------------------------------------------------------------------

def backend_module_text(computation: Any, *, debug_info: bool = False) -> str:
    """The text of a module as handed to ``Client.compile_and_load``: an
    ``ir.Module`` from 0.8, MLIR bytecode (``bytes``) on 0.7, or text."""
    if isinstance(computation, str):
        return computation
    if isinstance(computation, (bytes, bytearray)):
        from jax._src.interpreters import mlir as jax_mlir

        from ..ir._mlir import ir

        computation = ir.Module.parse(bytes(computation), context=jax_mlir.make_ir_context())
    return computation.operation.get_asm(enable_debug_info=debug_info)


def cpp_call_params(args: tuple[Any, ...]) -> Any:
    """The ``CompiledCallParams`` among the arguments JAX hands
    ``MeshExecutable.create_cpp_call`` (its only one, from 0.8), or ``None``
    (0.7): then no fast path is built, and JAX calls through
    ``stages.Compiled.call`` instead."""
    return args[0] if len(args) == 1 else None


# ---------------------------------------------------------------------------
# Closed jaxprs
# ---------------------------------------------------------------------------

def jaxpr_classes() -> tuple[type, ...]:
    """The classes of JAX's jaxprs: ``core.Jaxpr`` and ``core.ClosedJaxpr``
    where that is a class of its own (0.7-0.10), ``core.Jaxpr`` alone from
    0.11 (``ClosedJaxpr`` merged into it)."""
    from jax._src import core

    jaxpr = getattr(core, "Jaxpr", None)
    if jaxpr is None:
        raise _missing("jaxpr class (jax._src.core.Jaxpr)")
    closed = getattr(core, "ClosedJaxpr", jaxpr)
    return (jaxpr,) if closed is jaxpr else (jaxpr, closed)


def open_jaxpr(jaxpr: Any) -> tuple[Any, Any]:
    """``(open jaxpr, consts)`` of a jaxpr JAX hands out: a ``ClosedJaxpr``'s
    ``jaxpr`` and ``consts`` (0.7-0.10), a ``Jaxpr`` and the consts it
    carries (from 0.11: its ``constvars`` are the inputs with values
    attached, its ``invars`` the others), or an open ``Jaxpr`` and ``()``."""
    from jax._src import core

    closed = getattr(core, "ClosedJaxpr", None)
    if closed is not None and closed is not getattr(core, "Jaxpr", None) and isinstance(jaxpr, closed):
        return jaxpr.jaxpr, jaxpr.consts
    return jaxpr, getattr(jaxpr, "consts", ())


def scan_layout(params: Any, n_in: int) -> tuple[int, int]:
    """``(consts, carried)``: how many of a ``scan`` equation's ``n_in``
    operands are constants and how many the carry (the rest are the scanned
    inputs; the carry's results come first)."""
    if "num_consts" in params and "num_carry" in params:
        return params["num_consts"], params["num_carry"]
    ft_in = params.get("ft_in")
    if ft_in is None or not hasattr(ft_in, "unpack"):
        raise _missing("scan operand layout (scan parameters num_consts/num_carry or ft_in)")
    # as JAX's own scan splits its operands (a flat tree of three groups)
    consts, carry, _ = (list(group) for group in ft_in.update(tuple(range(n_in))).unpack())
    return len(consts), len(carry)


# ---------------------------------------------------------------------------
# jit's Python path
# ---------------------------------------------------------------------------

#: The functions of ``jax._src.pjit`` no64 wraps or calls, each described
#: for the line naming it where it is missing.
_JIT_FUNCTIONS = {
    "_infer_params": "Python path of a jit call",
    "_trace_for_jit": "trace of a jit call",
    "_pjit_lower": "lowering of a jit call",
    "_get_fastpath_data": "C++ fast path data of a jit call",
    "_infer_input_type": "input types of a jit call",
}


def jit_function(name: str) -> Callable[..., Any]:
    """``jax._src.pjit.<name>``, one of :data:`_JIT_FUNCTIONS`."""
    from jax._src import pjit

    found = getattr(pjit, name, None)
    if found is None:
        raise _missing(f"{_JIT_FUNCTIONS[name]} (jax._src.pjit.{name})")
    return found


def replace_jit_function(name: str, new: Callable[..., Any]) -> Callable[..., Any]:
    """Put ``new`` in the place of ``jax._src.pjit.<name>``; returns the function it replaced."""
    from jax._src import pjit

    original = jit_function(name)
    setattr(pjit, name, new)
    return original


# The trace and the lowering of a top-level jit
# ---------------------------------------------------------------------------

def wrap_jit_trace(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of JAX's trace of a ``jit`` call.

    ``original`` and what ``make`` returns both take ``(fun, ji, ctx_mesh,
    dbg, avals, args, kwargs)`` and return JAX's ``PjitParams`` (``consts``,
    ``params``, ``in_avals``, ``in_tree``, ``out_tree``):
    ``pjit._trace_for_jit`` from 0.9; on 0.7-0.8 it is
    ``pjit._infer_params_impl(fun, ji, ctx_mesh, dbg, args, kwargs,
    in_avals)``, which also returns the flat arguments (a call without
    ``in_avals``, under dynamic shapes, is left to it).
    """
    from jax._src import pjit

    trace = getattr(pjit, "_trace_for_jit", None)
    if trace is not None:
        pjit._trace_for_jit = make(trace)
        return
    impl = getattr(pjit, "_infer_params_impl", None)
    if impl is None:
        raise _missing("trace of a jit call (pjit._trace_for_jit or pjit._infer_params_impl)")

    def original(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
        return impl(fun, ji, ctx_mesh, dbg, args, kwargs, avals)[0]

    wrapped = make(original)

    def _infer_params_impl(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any,
                           in_avals: Any) -> Any:
        if in_avals is None:
            return impl(fun, ji, ctx_mesh, dbg, args, kwargs, in_avals)
        p = wrapped(fun, ji, ctx_mesh, dbg, in_avals, args, kwargs)
        return p, list(_jit_dynamic_arguments(ji, args, kwargs))

    _infer_params_impl.__wrapped__ = impl  # type: ignore[attr-defined]
    pjit._infer_params_impl = _infer_params_impl  # type: ignore[attr-defined]  # 0.7-0.8 only


def _jit_dynamic_arguments(ji: Any, args: Any, kwargs: Any) -> Any:
    from jax._src import tree_util
    from jax._src.lib import jax_jit

    # the registry jit flattens arguments with: tree_util.tracing_registry
    # from 0.10, tree_util.default_registry on 0.7-0.9
    registry = getattr(tree_util, "tracing_registry", None) or tree_util.default_registry
    _, dynargs = jax_jit.parse_arguments(
        args, tuple(kwargs.values()), tuple(kwargs.keys()), ji.static_argnums,
        ji.static_argnames, registry)
    return dynargs


def jit_input_avals(fun: Any, ji: Any, dbg: Any, args: Any, kwargs: Any) -> Any:
    """The abstract values ``jit`` traces ``fun`` for, given the call's
    arguments (under the x64 setting in force): ``pjit._infer_input_type``
    takes a function returning the debug info from 0.8, the debug info itself
    on 0.7."""
    from jax._src import pjit

    infer = getattr(pjit, "_infer_input_type", None)
    if infer is None:
        raise _missing("abstract values of a jit call's arguments (pjit._infer_input_type)")
    dynargs = _jit_dynamic_arguments(ji, args, kwargs)
    if "dbg_fn" in inspect.signature(infer).parameters:
        return infer(fun, lambda: dbg, dynargs)
    return infer(fun, dbg, dynargs)


def wrap_primitive_callable(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of ``dispatch.xla_primitive_callable(prim,
    **params)``, the ``jit`` an eager primitive runs through (its operands
    already canonicalised); ``dispatch.apply_primitive`` looks it up by name
    at every call (0.7-0.12).  The replacement keeps the original's cache
    interface (``cache_info``, ``cache_clear``: JAX's tests count its cache
    misses), which goes on counting the calls through it."""
    from jax._src import dispatch

    callable_ = getattr(dispatch, "xla_primitive_callable", None)
    if callable_ is None or not hasattr(dispatch, "apply_primitive"):
        raise _missing("the jit of an eager primitive (dispatch.xla_primitive_callable)")
    wrapped = make(callable_)
    for name in ("cache_info", "cache_clear"):
        if hasattr(callable_, name) and not hasattr(wrapped, name):
            setattr(wrapped, name, getattr(callable_, name))
    dispatch.xla_primitive_callable = wrapped


def wrap_random_samplers(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> list[str]:
    """Put ``make(original)`` in place of each public sampler of ``jax.random``
    -- a function whose first parameter is ``key`` and which takes a
    ``dtype`` or a ``shape`` (``normal``, ``uniform``, ``bits``, ``randint``,
    ``bernoulli``, ``categorical``, ``choice`` ...; not ``split``,
    ``fold_in``, ``clone``; found by signature, 0.7-0.12) -- and return their
    names.  JAX's samplers fix their dtype, and values derived from it
    (``bits``' bit width), in Python before they call their own ``jit``:
    from a ``dtype`` argument, or from a Python scalar's (``bernoulli``'s
    ``p``) or an array's dtype (``categorical``'s ``logits``)."""
    import jax.random as random

    names = []
    for name in dir(random):
        fun = getattr(random, name)
        if name.startswith("_") or not inspect.isfunction(fun) or getattr(fun, "__no64_sampler__", False):
            continue
        try:
            params = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            continue
        if params[:1] == ["key"] and ("dtype" in params or "shape" in params):
            wrapped = make(fun)
            wrapped.__no64_sampler__ = True  # type: ignore[attr-defined]
            setattr(random, name, wrapped)
            names.append(name)
    return names


def wrap_numpy_function(name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of ``jax.numpy``'s function ``name``,
    in ``jax.numpy`` and in each ``jax._src.numpy`` module that holds it (an
    array method calls ``lax_numpy``'s: ``x.astype`` is ``lax_numpy.astype``,
    0.7-0.12)."""
    import jax.numpy as jnp

    original = getattr(jnp, name, None)
    if original is None:
        raise _missing(f"jax.numpy.{name}")
    wrapped = make(original)
    for module in (*numpy_modules("array_creation", "lax_numpy"), jnp):
        if getattr(module, name, None) is original:
            setattr(module, name, wrapped)


def wrap_jit_impl(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of the eager implementation of JAX's
    ``jit`` primitive (``pjit.jit_p.impl(*args, jaxpr=..., ...)``, 0.7-0.12):
    what runs a traced ``jit`` outside any trace, its operands canonicalised."""
    from jax._src import pjit

    prim = getattr(pjit, "jit_p", None)
    if prim is None or not callable(getattr(prim, "impl", None)):
        raise _missing("the jit primitive's eager implementation (pjit.jit_p.impl)")
    prim.def_impl(make(prim.impl))


def after_python_jit_call(after: Callable[[Any, Any], None]) -> None:
    """Have ``after(jaxpr, out_flat)`` called after each jit call that takes
    JAX's Python dispatch path (every call that does not hit jaxlib's C++
    fast path), with the call's ``ClosedJaxpr`` and flat results, before JAX
    decides on the call's C++ fast-path entry: ``pjit._run_python_pjit(p,
    args_flat, ...)`` from 0.10, ``pjit._python_pjit_helper(fun, jit_info,
    ...)`` before; both return ``(outs, out_flat, out_tree, args_flat,
    jaxpr, ...)``."""
    from jax._src import pjit

    run = getattr(pjit, "_run_python_pjit", None)
    helper = getattr(pjit, "_python_pjit_helper", None)
    if run is not None and not getattr(run, "__no64__", False):
        def _run_python_pjit(p: Any, *rest: Any) -> Any:
            result = run(p, *rest)
            after(p.params["jaxpr"], result[1])
            return result

        _run_python_pjit.__wrapped__ = run  # type: ignore[attr-defined]
        _run_python_pjit.__no64__ = True  # type: ignore[attr-defined]
        setattr(pjit, "_run_python_pjit", _run_python_pjit)  # noqa: B010 - absent before 0.10
    elif run is None and helper is not None and not getattr(helper, "__no64__", False):
        def _python_pjit_helper(*args: Any, **kwargs: Any) -> Any:
            result = helper(*args, **kwargs)
            after(result[4], result[1])
            return result

        _python_pjit_helper.__wrapped__ = helper  # type: ignore[attr-defined]
        _python_pjit_helper.__no64__ = True  # type: ignore[attr-defined]
        setattr(pjit, "_python_pjit_helper", _python_pjit_helper)  # noqa: B010 - absent from 0.10
    elif run is None and helper is None:
        raise _missing("the Python dispatch of a jit call (pjit._run_python_pjit)")


class FlaggedExecutable:
    """A compiled executable (jaxlib's ``LoadedExecutable``) whose program
    returns one result more than JAX asked for: a scalar flag no64 reads
    after each run (``on_flag(per-device arrays)``, which raises if the run's
    results must not be handed out), stripped from what JAX sees -- the
    results of ``execute_sharded`` (``consume_with_handlers``,
    ``disassemble_into_single_device_arrays``) and of ``execute``, and the
    per-result ``get_output_shardings``, ``get_output_layouts`` and
    ``get_output_memory_kinds`` (0.7-0.12).  Everything else is the
    executable's.  jaxlib's C++ dispatch cannot take it: no64 keeps its
    calls off the C++ fast path (see :func:`is_flagged`)."""

    def __init__(self, executable: Any, on_flag: Callable[[Sequence[Any]], None]) -> None:
        self._executable = executable
        self._on_flag = on_flag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._executable, name)

    def execute_sharded(self, arguments: Any, *args: Any, **kwargs: Any) -> Any:
        return _FlaggedResults(self._executable.execute_sharded(arguments, *args, **kwargs), self._on_flag)

    def execute(self, arguments: Any, *args: Any, **kwargs: Any) -> Any:
        outs = list(self._executable.execute(arguments, *args, **kwargs))
        self._on_flag([outs[-1]])
        return outs[:-1]

    def get_output_shardings(self) -> Any:
        shardings = self._executable.get_output_shardings()
        return None if shardings is None else list(shardings)[:-1]

    def get_output_layouts(self) -> Any:
        return list(self._executable.get_output_layouts())[:-1]

    def get_output_memory_kinds(self) -> Any:
        return [list(kinds)[:-1] for kinds in self._executable.get_output_memory_kinds()]


class _FlaggedResults:
    def __init__(self, results: Any, on_flag: Callable[[Sequence[Any]], None]) -> None:
        self._results = results
        self._on_flag = on_flag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._results, name)

    def consume_with_handlers(self, handlers: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        outs = self._results.consume_with_handlers([*handlers, lambda xs: xs], *args, **kwargs)
        self._on_flag(outs[-1])
        return outs[:-1]

    def disassemble_into_single_device_arrays(self) -> Any:
        outs = self._results.disassemble_into_single_device_arrays()
        self._on_flag(outs[-1])
        return outs[:-1]


def is_flagged(executable: Any) -> bool:
    """Whether a ``MeshExecutable`` (or a compiled executable) runs a
    :class:`FlaggedExecutable`."""
    return isinstance(getattr(executable, "xla_executable", executable), FlaggedExecutable)


def wrap_device_put_impl(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of the eager implementation of
    ``jax.device_put`` (``dispatch.device_put_p.impl(*xs, devices=..., ...)``,
    a list of arrays, 0.7-0.12), which takes host data in unconverted; from
    0.10 ``jax.device_put`` calls it by its module name
    (``dispatch._batched_device_put_impl``) outside a trace."""
    from jax._src import dispatch

    prim = getattr(dispatch, "device_put_p", None)
    if prim is None or not callable(getattr(prim, "impl", None)) or not prim.multiple_results:
        raise _missing("the eager implementation of device_put (dispatch.device_put_p.impl)")
    impl = prim.impl
    prim.def_impl(make(impl))
    direct = getattr(dispatch, "_batched_device_put_impl", None)
    if callable(direct):
        dispatch._batched_device_put_impl = make(direct)


def wrap_jit_lower(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of ``pjit._pjit_lower(jaxpr, ...)``
    (0.7-0.12; a cached function from 0.8, a wrapper of
    ``_pjit_lower_cached`` on 0.7), which returns the ``MeshComputation``
    (``_hlo``, ``compile_args``) of a jit call's ``ClosedJaxpr``."""
    from jax._src import pjit

    lower = getattr(pjit, "_pjit_lower", None)
    if lower is None:
        raise _missing("lowering of a jit call (pjit._pjit_lower)")
    pjit._pjit_lower = make(lower)  # type: ignore[assignment]  # a cached function from 0.8


# ---------------------------------------------------------------------------
# Host constants taken in by a trace
# ---------------------------------------------------------------------------

_CONSTANT_TYPES = (int, float, bool, complex, np.generic, np.ndarray)


def canonicalize_traced_constants(active: Callable[[], bool]) -> None:
    """Have a host constant (a numpy array or scalar, a Python number) that a
    trace takes in canonicalised then, while the user's line is on the stack,
    whenever ``active()`` says so.

    From 0.8 JAX does this itself (``DynamicJaxprTrace._new_const`` calls
    ``dtypes.canonicalize_value``), and this does nothing.  0.7 keeps the
    constant as given in the jaxpr, a literal or a constant argument, and
    canonicalises it (``xla.canonicalize_dtype``) only when the program is
    lowered or called; there ``_new_const`` is wrapped to canonicalise it
    first (the constant stays keyed by the given object, as JAX keys it).
    """
    from jax._src import dtypes

    if callable(getattr(dtypes, "canonicalize_value", None)):
        return
    pe = _optional_module("jax._src.interpreters.partial_eval")
    trace = getattr(pe, "DynamicJaxprTrace", None)
    original = getattr(trace, "_new_const", None)
    canonicalize = getattr(_optional_module("jax._src.interpreters.xla"), "canonicalize_dtype", None)
    if original is None or canonicalize is None:
        raise _missing("canonicalisation of traced host constants (dtypes.canonicalize_value, or "
                       "DynamicJaxprTrace._new_const and xla.canonicalize_dtype)")
    if getattr(original, "__no64__", False):
        return

    def _new_const(self: Any, aval: Any, c: Any, source_info: Any) -> Any:
        if isinstance(c, _CONSTANT_TYPES) and active():
            canonical = canonicalize(c)
            if canonical is not c:
                tracer = original(self, aval, canonical, source_info)
                ids = self.frame.constid_to_tracer
                if ids.get(id(canonical)) is tracer:
                    del ids[id(canonical)]
                    ids[id(c)] = tracer
                return tracer
        return original(self, aval, c, source_info)

    _new_const.__wrapped__ = original  # type: ignore[attr-defined]
    _new_const.__no64__ = True  # type: ignore[attr-defined]
    trace._new_const = _new_const  # type: ignore[union-attr]  # found above (0.7 only)



_constants_seen = threading.local()


@contextmanager
def traced_constant_sources() -> Iterator[dict[int, tuple[Any, Any]]]:
    """Within the block, each host constant a trace in this thread takes in
    (``DynamicJaxprTrace._new_const``, 0.7-0.12) is noted in the dict
    yielded: ``id(constant) -> (constant, the traceback of the user's code
    that used it)``."""
    pe = _optional_module("jax._src.interpreters.partial_eval")
    trace = getattr(pe, "DynamicJaxprTrace", None)
    original = getattr(trace, "_new_const", None)
    if original is None:
        raise _missing("the constants a trace takes in (DynamicJaxprTrace._new_const)")
    if not getattr(original, "__no64_sources__", False):
        def _new_const(self: Any, aval: Any, c: Any, source_info: Any) -> Any:
            seen = getattr(_constants_seen, "found", None)
            if seen is not None and id(c) not in seen:
                seen[id(c)] = (c, getattr(source_info, "traceback", None))
            return original(self, aval, c, source_info)

        _new_const.__wrapped__ = original  # type: ignore[attr-defined]
        _new_const.__no64_sources__ = True  # type: ignore[attr-defined]
        trace._new_const = _new_const  # type: ignore[union-attr]
    saved = getattr(_constants_seen, "found", None)
    found: dict[int, tuple[Any, Any]] = {}
    _constants_seen.found = found
    try:
        yield found
    finally:
        _constants_seen.found = saved


def canonicalize_host_value(x: Any) -> Any:
    """A host value as JAX takes it into a trace under the x64 setting in
    force: ``dtypes.canonicalize_value`` (0.8-0.12), ``xla.canonicalize_dtype`` on 0.7."""
    from jax._src import dtypes

    fn = getattr(dtypes, "canonicalize_value", None)
    if fn is None:
        fn = getattr(_optional_module("jax._src.interpreters.xla"), "canonicalize_dtype", None)
    if fn is None:
        raise _missing("canonicalisation of host values (dtypes.canonicalize_value)")
    return fn(x)


def traceback_context(traceback: Any) -> AbstractContextManager[Any]:
    """JAX's current traceback set to ``traceback`` (``source_info_util.user_context``)."""
    from jax._src import source_info_util

    return source_info_util.user_context(traceback)

# ---------------------------------------------------------------------------
# The frames of an equation's traceback
# ---------------------------------------------------------------------------

_TRACE_STARTS = frozenset({"trace_to_jaxpr_dynamic", "trace_to_jaxpr"})


def traceback_frames(traceback: Any) -> tuple[list[Any], list[int]]:
    """The code objects and last instructions of a JAX ``Traceback`` (an
    equation's), innermost first, up to where the trace that made it began.

    From 0.9 jaxlib records only those frames: an equation inside a jitted
    function (a library's ``jnp.where``) names no line of the code that
    called it, whose trace JAX caches and reuses for later callers.  0.7-0.8
    record the whole Python stack; it is cut here at the innermost frame of
    ``partial_eval.trace_to_jaxpr_dynamic`` (or ``trace_to_jaxpr``), where
    the trace began.
    """
    codes, lastis = traceback.raw_frames()
    for i, code in enumerate(codes):
        if code.co_name in _TRACE_STARTS and code.co_filename.endswith("partial_eval.py"):
            return list(codes[:i]), list(lastis[:i])
    return list(codes), list(lastis)


class _TraceFrames:
    """A ``Traceback`` as JAX from 0.9 lowers it: its own trace's frames
    (:func:`traceback_frames`), then the context's -- the enclosing
    equation's traceback while a nested function is lowered, else the Python
    stack where the lowering was asked for (the call's line)."""

    __slots__ = ("traceback", "context")

    def __init__(self, traceback: Any, context: Any) -> None:
        self.traceback = traceback
        self.context = context

    def raw_frames(self) -> tuple[list[Any], list[int]]:
        codes, lastis = traceback_frames(self.traceback)
        if self.context is not None:  # a _TraceFrames
            more_codes, more_lastis = self.context.raw_frames()
            codes, lastis = codes + list(more_codes), lastis + list(more_lastis)
        return codes, lastis


def locate_by_trace_frames() -> None:
    """Have JAX's lowering locate an equation by the frames of its own trace
    (:func:`traceback_frames`) and the context it is lowered in, as JAX does
    from 0.9 (jaxlib's ``_jax.TracebackScope`` starts each trace's
    tracebacks afresh): then this does nothing.  On 0.7-0.8 an equation of a
    jitted library function whose trace JAX reuses would otherwise carry, in
    the module's locations, the line of whichever call traced it first:
    ``mlir._traceback_to_location(ctx, tb)`` (Python on 0.7, jaxlib's
    ``TracebackToLocationCache`` on 0.8, which takes only a ``Traceback``) is
    wrapped to build the location of :class:`_TraceFrames` (the context:
    ``source_info_util.current()``) as 0.7 builds one, where those frames
    are not the traceback's own."""
    from jax._src.lib import _jax

    if hasattr(_jax, "TracebackScope"):
        return
    from jax._src import source_info_util
    from jax._src.interpreters import mlir

    original = getattr(mlir, "_traceback_to_location", None)
    if original is None:
        raise _missing("per-trace tracebacks (_jax.TracebackScope or mlir._traceback_to_location)")
    if getattr(original, "__no64__", False):
        return

    local = threading.local()

    def located(seen: dict[int, tuple[Any, Any]], tb: Any) -> Any:
        known = seen.get(id(tb))
        return known[1] if known is not None and known[0] is tb else None

    def _traceback_to_location(ctx: Any, tb: Any) -> Any:
        seen = getattr(local, "seen", None)
        if seen is None:
            seen = local.seen = {}
        context = source_info_util.current().traceback
        if context is tb or context == tb:
            # the equation's own rule, lowering it: where it was located
            frames = located(seen, tb) or _TraceFrames(tb, None)
        else:
            # the enclosing equation as it was located, or the Python stack
            outer = located(seen, context) or _TraceFrames(context, None)
            frames = _TraceFrames(tb, outer)
            if len(seen) > 4096:
                seen.clear()
            seen[id(tb)] = (tb, frames)
        codes, lastis = frames.raw_frames()
        own, _ = tb.raw_frames()
        if len(codes) == len(own) and all(a is b for a, b in zip(codes, own)):
            return original(ctx, tb)
        return _frames_location(ctx, codes, lastis)

    _traceback_to_location.__wrapped__ = original  # type: ignore[attr-defined]
    _traceback_to_location.__no64__ = True  # type: ignore[attr-defined]
    mlir._traceback_to_location = _traceback_to_location


def _frames_location(ctx: Any, codes: list[Any], lastis: list[int]) -> Any:
    """The MLIR location of frames (innermost first), as JAX 0.7's
    ``mlir._traceback_to_location`` builds one: a call-site chain of the user
    frames, named by function, at most ``jax_traceback_in_locations_limit``
    of them; cached per module being lowered."""
    import re

    from jax._src import config as jax_config, source_info_util
    from jax._src.lib.mlir import ir

    caches = ctx.traceback_caches
    store = getattr(caches, "_no64_locations", None)
    if store is None:
        store = {}
        caches._no64_locations = store
    key = (tuple(codes), tuple(lastis))
    loc = store.get(key)
    if loc is not None:
        return loc
    limit = jax_config.traceback_in_locations_limit.value
    limit = limit if limit >= 0 else 1000
    pattern = jax_config.hlo_source_file_canonicalization_regex.value
    frame_locs: list[Any] = []
    for code, lasti in zip(codes, lastis):
        if len(frame_locs) >= limit:
            break
        if not source_info_util.is_user_filename(code.co_filename):
            continue
        frame = source_info_util.raw_frame_to_frame(code, lasti)
        file_name = re.sub(pattern, "", frame.file_name) if pattern else frame.file_name
        file_loc = ir.Location.file(file_name, frame.start_line, frame.start_column,
                                    frame.end_line, frame.end_column)
        frame_locs.append(ir.Location.name(frame.function_name, childLoc=file_loc))
    if not frame_locs:
        loc = ir.Location.unknown()
    elif len(frame_locs) == 1:
        loc = frame_locs[0]
    else:
        loc = ir.Location.callsite(frame_locs[0], frame_locs[1:])
    store[key] = loc
    return loc


def jaxpr_literal_type() -> type:
    """The class of a literal operand of a jaxpr equation: the one JAX's
    equations hold, ``jax._src.core.Literal`` (0.7-0.12), else the public
    ``jax.extend.core.Literal`` (on 0.12 the audit's sentinel following saw
    no literal through the public name)."""
    core = _optional_module("jax._src.core")
    found = getattr(core, "Literal", None) if core is not None else None
    if found is None:
        ec = _optional_module("jax.extend.core")
        found = getattr(ec, "Literal", None) if ec is not None else None
    if found is None:
        raise _missing("jax.extend.core.Literal")
    return found


def eval_jaxpr(jaxpr: Any, consts: Any, *args: Any) -> list[Any]:
    """Evaluate an open jaxpr eagerly: ``jax.core.eval_jaxpr`` (0.7-0.12)."""
    import jax

    fn = getattr(jax.core, "eval_jaxpr", None)
    if fn is None:
        raise _missing("jax.core.eval_jaxpr")
    return list(fn(jaxpr, consts, *args))


def bind_equation(eqn: Any, operands: Sequence[Any]) -> list[Any]:
    """Apply one jaxpr equation to ``operands`` as ``jax.core.eval_jaxpr``
    does (a call's body handed over as its primitive takes it:
    ``Primitive.get_bind_params``: the parameters on 0.10-0.12,
    ``(subfuns, params)`` on 0.7); its outputs."""
    prim = eqn.primitive
    get_bind_params = getattr(prim, "get_bind_params", None)
    found = get_bind_params(eqn.params) if get_bind_params is not None else eqn.params
    subfuns, params = found if isinstance(found, tuple) else ((), found)
    out = prim.bind(*subfuns, *operands, **params)
    return list(out) if prim.multiple_results else [out]



# Replaying a jaxpr under another x64 setting
# ---------------------------------------------------------------------------

def closed_jaxpr_type() -> type:
    """The class of a jaxpr with its constants (``core.ClosedJaxpr``,
    0.7-0.10; ``core.Jaxpr`` from 0.11, where the two are one)."""
    from jax._src import core

    return getattr(core, "ClosedJaxpr", core.Jaxpr)


def open_jaxpr_type() -> type:
    """The class of an open jaxpr (``core.Jaxpr``); one no closed jaxpr is
    an instance of where the two are one class (from 0.11)."""
    from jax._src import core

    if closed_jaxpr_type() is core.Jaxpr:
        return type("_NoOpenJaxpr", (), {})
    return core.Jaxpr


def shaped_array_type() -> type:
    """``core.ShapedArray`` (0.7-0.12)."""
    from jax._src import core

    return core.ShapedArray


def make_closed_jaxpr(jaxpr: Any, consts: list[Any]) -> Any:
    """``core.ClosedJaxpr(jaxpr, consts)``; where the two classes are one
    (from 0.11), ``core.Jaxpr(jaxpr, consts)``, which attaches the
    constants to a copy of ``jaxpr``."""
    return closed_jaxpr_type()(jaxpr, consts)


def equation_context(eqn: Any) -> AbstractContextManager[Any]:
    """The context ``core.eval_jaxpr`` binds ``eqn`` in: its own traceback
    and name stack (``source_info_util.user_context``) and its equation
    context (``eqn.ctx.manager``: compute type, ...; 0.7-0.12)."""
    import contextlib

    from jax._src import source_info_util

    stack = contextlib.ExitStack()
    name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
    stack.enter_context(source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack))
    manager = getattr(getattr(eqn, "ctx", None), "manager", None)
    if manager is not None:
        stack.enter_context(manager)
    return stack


def bind_equation_params(prim: Any, params: dict[str, Any], operands: Sequence[Any]) -> list[Any]:
    """Bind ``prim`` with an equation's ``params`` (as :func:`bind_equation`)."""
    get_bind_params = getattr(prim, "get_bind_params", None)
    found = get_bind_params(params) if get_bind_params is not None else params
    subfuns, bind_params = found if isinstance(found, tuple) else ((), found)
    out = prim.bind(*subfuns, *operands, **bind_params)
    return list(out) if prim.multiple_results else [out]


def trace_flat(fn: Callable[..., Any], avals: Sequence[Any], debug_info: Any) -> Any:
    """The closed jaxpr of ``fn`` (flat operands to a flat list of results)
    traced for ``avals``: ``pe.trace_to_jaxpr_dynamic`` (0.7-0.12)."""
    from jax._src import linear_util as lu
    from jax._src.interpreters import partial_eval as pe

    wrapped = lu.wrap_init(lambda *xs: list(fn(*xs)), debug_info=debug_info)
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(wrapped, list(avals))
    return make_closed_jaxpr(jaxpr, consts)


def wrapped_function(call: Callable[..., Any], like: Any) -> Any:
    """``call`` as a ``lu.WrappedFun`` with ``like``'s debug information."""
    from jax._src import linear_util as lu

    return lu.wrap_init(call, debug_info=like.debug_info)


def jit_dynamic_arguments(ji: Any, args: Any, kwargs: Any) -> list[Any]:
    """The flat dynamic arguments of a ``jit`` call, in the order of its
    jaxpr's inputs (static ones left out)."""
    return list(_jit_dynamic_arguments(ji, args, kwargs))

# The public jit: traces and tracers
# ---------------------------------------------------------------------------

def at_top_level() -> bool:
    """Whether nothing is being traced in this thread (a jitted function
    called here runs rather than being staged): ``core.trace_state_clean``
    (0.7-0.12), else ``core.trace_ctx.is_top_level``."""
    from jax._src import core

    clean = getattr(core, "trace_state_clean", None)
    if clean is not None:
        return bool(clean())
    ctx = getattr(core, "trace_ctx", None)
    if ctx is not None and hasattr(ctx, "is_top_level"):
        return bool(ctx.is_top_level())
    raise _missing("a test of whether a trace is in progress (core.trace_state_clean)")


def tracer_type() -> type:
    """The class of JAX's tracers: ``jax.core.Tracer`` (0.7-0.12)."""
    import jax

    found = getattr(jax.core, "Tracer", None)
    if found is None:
        from jax._src import core

        found = getattr(core, "Tracer", None)
    if found is None:
        raise _missing("jax.core.Tracer")
    return found


# ---------------------------------------------------------------------------
# Internals the same on every supported release
# ---------------------------------------------------------------------------
# Each is reached here, by a name of no64's own, so that a release that drops
# or renames one is found (and handled) in this one file.

#: JAX-internal functions no64 calls or wraps, by the name no64 gives them:
#: (module, attribute path in it).  Looked up anew on each call of
#: :func:`internal_function` (no64 and JAX both replace some of them).
_INTERNAL_FUNCTIONS: dict[str, tuple[str, str]] = {
    # jit lowering compiles through it; no64's hook and the audit's observer wrap it
    "compile_or_get_cached": ("jax._src.compiler", "compile_or_get_cached"),
    # the conversion of host operands inside lax (Python scalars, numpy data)
    "lax_convert": ("jax._src.lax.lax", "_convert_element_type"),
    # a Python scalar made a numpy array under JAX's dtype rules
    "coerce_to_array": ("jax._src.dtypes", "coerce_to_array"),
    "canonicalize_dtype": ("jax._src.dtypes", "canonicalize_dtype"),
    "check_valid_dtype": ("jax._src.dtypes", "check_valid_dtype"),
    # jnp.array / jnp.asarray / jnp.arange where they are defined
    "array": ("jax._src.numpy.array_constructors", "array"),
    "asarray": ("jax._src.numpy.array_constructors", "asarray"),
    "arange": ("jax._src.numpy.lax_numpy", "arange"),
    # the C++ fast path of an AOT-compiled call, and the Python call it falls back on
    "create_cpp_call": ("jax._src.interpreters.pxla", "MeshExecutable.create_cpp_call"),
    "compiled_call": ("jax._src.stages", "Compiled.call"),
}


def _internal_owner(name: str) -> tuple[Any, str]:
    """The object that holds internal function ``name``, and its attribute there."""
    try:
        module_name, path = _INTERNAL_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"no64 names no JAX internal {name!r}") from None
    *owners, attr = path.split(".")
    owner = _optional_module(module_name)
    for part in owners:
        owner = getattr(owner, part, None)
    if owner is None or not callable(getattr(owner, attr, None)):
        raise _missing(f"{module_name}.{path}")
    return owner, attr


def internal_function(name: str) -> Callable[..., Any]:
    """The JAX-internal function no64 calls ``name`` (:data:`_INTERNAL_FUNCTIONS`
    says which), as it is now."""
    owner, attr = _internal_owner(name)
    return getattr(owner, attr)


def replace_internal_function(name: str, new: Callable[..., Any]) -> None:
    """Put ``new`` in place of the JAX-internal function ``name`` where it is
    defined (callers that bound it elsewhere are seen to by the caller, see
    :func:`numpy_modules`)."""
    owner, attr = _internal_owner(name)
    setattr(owner, attr, new)


#: The modules of ``jax._src.numpy`` that bind ``jax.numpy``'s functions.
_NUMPY_MODULES = ("array_constructors", "array_creation", "lax_numpy", "index_tricks", "scalar_types")


def numpy_modules(*names: str) -> tuple[Any, ...]:
    """The ``jax._src.numpy`` modules ``names`` (of :data:`_NUMPY_MODULES`),
    where ``jax.numpy``'s functions are defined or bound by import: a wrapper
    of one of them replaces it in each that holds it."""
    found = []
    for name in names:
        if name not in _NUMPY_MODULES:
            raise ValueError(f"no64 names no jax.numpy module {name!r}")
        module = _optional_module(f"jax._src.numpy.{name}")
        if module is None:
            raise _missing(f"jax._src.numpy.{name}")
        found.append(module)
    return tuple(found)


def jaxprs_in_params(params: Any) -> list[Any]:
    """The jaxprs a jaxpr equation's parameters hold (``core.jaxprs_in_params``)."""
    from jax._src import core

    return list(core.jaxprs_in_params(params))


def aval_mapping(type_: type) -> Callable[[Any], Any]:
    """JAX's abstract value of a host value of ``type_``
    (``core.pytype_aval_mappings[type_]``)."""
    from jax._src import core

    return core.pytype_aval_mappings[type_]


def set_aval_mapping(type_: type, mapping: Callable[[Any], Any]) -> None:
    """Make ``mapping`` JAX's abstract value of host values of ``type_``."""
    from jax._src import core

    core.pytype_aval_mappings[type_] = mapping


def wrap_dtype_warnings(make: Callable[[Any], Any]) -> None:
    """Give ``jax._src.dtypes`` ``make(warnings)`` in place of the ``warnings``
    module it warns through (once: where it still holds ``warnings`` itself)."""
    import warnings

    from jax._src import dtypes

    if getattr(dtypes, "warnings", None) is warnings:
        dtypes.warnings = make(warnings)


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
    x64_state()._update_global_hook = hook


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


def device_list(devices: Sequence[Any]) -> Any:
    """The devices an executable is compiled for, as the backend client takes
    them (``xla_client.DeviceList``)."""
    from jax._src.lib import xla_client

    return xla_client.DeviceList(tuple(devices))


def sharding_for(devices: Sequence[Any], op_sharding: Any) -> Any:
    """A JAX sharding for a parameter or output sharding XLA reports
    (``None`` or one device: a ``SingleDeviceSharding``; else a
    ``GSPMDSharding`` of ``op_sharding`` over ``devices``)."""
    from jax._src.sharding_impls import GSPMDSharding, SingleDeviceSharding

    if op_sharding is None or len(devices) == 1:
        return SingleDeviceSharding(devices[0])
    return GSPMDSharding(device_list(devices), op_sharding)


# -- tracebacks and source locations ------------------------------------------

def hide_from_tracebacks(path: str) -> None:
    """Leave frames of files under ``path`` out of the tracebacks JAX filters
    (``traceback_util.register_exclusion``)."""
    from jax._src import traceback_util

    traceback_util.register_exclusion(path)


def hide_from_source_locations(path: str) -> None:
    """No frame of a file under ``path`` is the user's frame in JAX's source
    locations (``source_info_util.register_exclusion``, once)."""
    from jax._src import source_info_util

    if path not in getattr(source_info_util, "_exclude_paths", ()):
        source_info_util.register_exclusion(path)


def frame_line(code: Any, lasti: int) -> int:
    """The line a frame of a JAX traceback (its code and last instruction) is at."""
    from jax._src import source_info_util

    return source_info_util.raw_frame_to_frame(code, lasti).start_line


def current_traceback() -> Any:
    """The traceback JAX holds as the current one (an equation's own while it
    is lowered or re-traced), or ``None``."""
    from jax._src import source_info_util

    return source_info_util._source_info_context.context.traceback


# The primitives JAX defines
# ---------------------------------------------------------------------------

def primitive_names() -> frozenset[str]:
    """The names of the primitives the installed JAX defines: those bound at
    module level in its modules that ``import jax`` loads."""
    import sys

    import jax  # noqa: F401  (loads its modules)

    ec = _optional_module("jax.extend.core")
    primitive = getattr(ec, "Primitive", None) if ec is not None else None
    if primitive is None:
        raise _missing("jax.extend.core.Primitive")
    names = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "jax" or name.startswith("jax.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, primitive):
                names.add(value.name)
    return frozenset(names)


# ----------------------------------------------------- XLA's CPU compiler
#: The LLVM option that turns off the hash (CRC) recognition of LLVM's loop
#: idiom pass (``HashRecognize``), which takes time exponential in the size
#: of a loop body whose values have several uses (llvm/llvm-project#211711,
#: #211887).  XLA's CPU kernels of float pairs are such loops: a one-layer
#: GPT-2 training step as pairs compiles in 19 s on jaxlib 0.7 and 0.12 and
#: did not finish in 12 minutes on 0.10.2, whose LLVM has the fault.
HASH_RECOGNIZE_OFF = "-disable-loop-idiom-hashrecognize"
#: How much of each jaxlib library is searched for the option's name (LLVM's
#: option names are among its first read-only data: 19 MB into jaxlib
#: 0.10.2's and 0.12's libjax_common.so); one found later is missed, and the
#: option then not set -- slower compiles, never a process LLVM ends.
_SEARCHED = 64 << 20
#: What :func:`guard_cpu_compiler` did: ``""`` (nothing yet),
#: ``"installed"`` (the CPU backend is not made yet), ``"applied"``,
#: ``"absent"`` (the binding's LLVM has no such option), ``"user"`` (the
#: user's ``XLA_FLAGS`` set LLVM options), ``"late"`` (JAX's backends were
#: started first) or ``"unavailable"`` (no backend factory to wrap).
_guard = [""]


def _binding_has(option: str) -> bool:
    """Whether a shared library of the installed jaxlib names LLVM option
    ``option`` (LLVM registers each option under its name, a string)."""
    import importlib.util
    import mmap

    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        return False
    needle = option.lstrip("-").encode()
    for folder in spec.submodule_search_locations:
        for root, _, files in sorted(os.walk(folder)):
            for name in sorted(files):
                if not name.endswith((".so", ".pyd", ".dylib")):
                    continue
                path = os.path.join(root, name)
                if os.path.getsize(path) == 0:
                    continue
                with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    if m.find(needle, 0, _SEARCHED) >= 0:
                        return True
    return False


def guard_cpu_compiler() -> str:
    """Have XLA's CPU compiler made with :data:`HASH_RECOGNIZE_OFF` where the
    binding's LLVM has that option; what was done (see ``_guard``).

    XLA reads LLVM's options from ``XLA_FLAGS`` (``--xla_backend_extra_options``)
    once, when JAX makes its CPU backend, and an option LLVM does not know
    ends the process.  So JAX's CPU backend factory
    (``jax._src.xla_bridge._backend_factories["cpu"]``, the same on 0.7-0.12)
    is wrapped: while the backend is made, ``XLA_FLAGS`` has the option added
    where a library of jaxlib names it, and the variable is restored after
    (no process started later, no other backend sees it).  A user's flags
    that set LLVM options are left as they are.  Called when this module is
    imported and by no64's JAX plugin (:mod:`jax_plugins.no64`) as JAX makes
    its backends, where no64 is imported then."""
    if _guard[0]:
        return _guard[0]
    from jax._src import xla_bridge

    factories = getattr(xla_bridge, "_backend_factories", None)
    if not isinstance(factories, dict):
        _guard[0] = "unavailable"
        return _guard[0]
    registration = factories.get("cpu")
    if registration is None or not hasattr(registration, "factory"):
        _guard[0] = "unavailable"
        return _guard[0]
    if backends_started():
        _guard[0] = "late"
        return _guard[0]
    make = registration.factory

    def guarded(*args: Any, **kwargs: Any) -> Any:
        flags = os.environ.get("XLA_FLAGS")
        if flags is not None and "xla_backend_extra_options" in flags:
            _guard[0] = "user"
        elif not _binding_has(HASH_RECOGNIZE_OFF):
            _guard[0] = "absent"
        else:
            _guard[0] = "applied"
            os.environ["XLA_FLAGS"] = f"{flags or ''} --xla_backend_extra_options={HASH_RECOGNIZE_OFF}".strip()
        try:
            return make(*args, **kwargs)
        finally:
            if _guard[0] == "applied":
                if flags is None:
                    os.environ.pop("XLA_FLAGS", None)
                else:
                    os.environ["XLA_FLAGS"] = flags

    factories["cpu"] = dataclasses.replace(registration, factory=guarded)
    _guard[0] = "installed"
    return _guard[0]


def late_cpu_guard_warning() -> str | None:
    """A warning's text where JAX's CPU backend was started before
    :func:`guard_cpu_compiler` and the binding's LLVM has the pass, else
    ``None``."""
    if _guard[0] != "late" or not _binding_has(HASH_RECOGNIZE_OFF):
        return None
    return ("XLA's CPU compiler of this jaxlib may take many minutes on float64 pairs (LLVM's loop hash "
            "recognition, llvm/llvm-project#211711): import no64 before JAX starts its backends, or start "
            f"Python with XLA_FLAGS=--xla_backend_extra_options={HASH_RECOGNIZE_OFF}")


guard_cpu_compiler()


# ---------------------------------------------------------------------------
# Every jit call through JAX's Python dispatch (measuring a program's calls)
# ---------------------------------------------------------------------------

class PythonJitCall:
    """One call of a jitted function that JAX dispatches in Python: ``fun``,
    the Python function ``jit`` was given (whenever it was jitted),
    ``args``/``kwargs`` as the caller passed them (static ones included),
    ``static_argnums``/``static_argnames`` as ``jit`` took them (``None``
    where they could not be read), :meth:`run` the dispatch itself (trace,
    compile or find, execute), whose result the taker of the call returns.
    ``off_fast_path`` set true: the call leaves no entry in jaxlib's C++
    fast path, so that its function's next call with these argument types
    is dispatched in Python again."""

    __slots__ = ("fun", "args", "kwargs", "static_argnums", "static_argnames", "off_fast_path", "_run")

    def __init__(self, fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], jit_info: Any,
                 run: Callable[[], Any]) -> None:
        self.fun, self.args, self.kwargs, self._run = fun, args, kwargs, run
        argnums = getattr(jit_info, "static_argnums", None)
        argnames = getattr(jit_info, "static_argnames", None)
        self.static_argnums = tuple(argnums) if argnums is not None and argnames is not None else None
        self.static_argnames = tuple(argnames) if argnums is not None and argnames is not None else None
        self.off_fast_path = False

    def run(self) -> Any:
        return self._run()


#: What takes each call (``None``: it runs as it is).
_jit_call_taker: list[Callable[[PythonJitCall], Any] | None] = [None]
_jit_calls_routed = [False]
_jit_calls_lock = threading.Lock()
#: Per thread: ``out_flat``, the flat results of the last call kept off the
#: C++ fast path, until ``_get_fastpath_data`` is asked about it (jit's
#: ``cache_miss`` asks right after the call returns); ``params``, the last
#: ``(PjitParams, PjitInfo)`` ``_infer_params`` made (from 0.10, where the
#: Python dispatch is not given the ``PjitInfo``).
_jit_call_state = threading.local()


def route_python_jit_calls(take: Callable[[PythonJitCall], Any] | None) -> None:
    """Have ``take(call)`` run each jit call that JAX dispatches in Python
    (a :class:`PythonJitCall`), and return its result; ``None``: calls run
    as they are.  A jitted function's call goes through JAX's Python
    dispatch on a miss of jaxlib's C++ fast path (a new signature) and for
    every call whose entry there was refused (see ``off_fast_path``) or
    dropped (:func:`clear_fast_path_entries`).

    JAX's ``cache_miss`` of a jit call runs
    ``pjit._run_python_pjit(p, args_flat, fun, [jit_info,] args, kwargs)``
    from 0.9 (``jit_info`` on 0.9 only; the parameters are found by name;
    from 0.10 the ``PjitInfo`` is the one ``pjit._infer_params(fun,
    jit_info, args, kwargs)`` was given for ``p`` just before),
    ``pjit._python_pjit_helper(fun, jit_info, *args, **kwargs)`` on 0.7-0.8;
    both return ``(outs, out_flat, ...)``, and ``cache_miss`` then asks
    ``pjit._get_fastpath_data(executable, out_tree, args_flat, out_flat,
    ...)`` (0.7-0.12) for the call's fast-path entry, wrapped here to give
    none to a call kept off it (told by its ``out_flat``)."""
    _jit_call_taker[0] = take
    if _jit_calls_routed[0]:
        return
    with _jit_calls_lock:
        if _jit_calls_routed[0]:
            return
        from jax._src import pjit

        run = getattr(pjit, "_run_python_pjit", None)
        helper = getattr(pjit, "_python_pjit_helper", None)
        if run is not None:
            names = list(inspect.signature(run).parameters)  # through wrappers' __wrapped__
            if not {"p", "fun", "args", "kwargs"} <= set(names):
                raise _missing("the Python dispatch of a jit call (pjit._run_python_pjit(p, ..., fun, args, kwargs))")
            at: dict[str, int] = {name: names.index(name) for name in ("p", "fun", "args", "kwargs", "jit_info")
                                  if name in names}
            if "jit_info" not in at:
                _note_jit_infos()

            def _run_python_pjit(*a: Any, **k: Any) -> Any:
                def given(name: str) -> Any:
                    return a[at[name]] if len(a) > at[name] else k[name]

                if "jit_info" in at:
                    jit_info = given("jit_info")
                else:
                    p, jit_info = getattr(_jit_call_state, "params", (None, None))
                    jit_info = jit_info if p is given("p") else None
                return _taken(given("fun"), tuple(given("args")), dict(given("kwargs")), jit_info,
                              lambda: run(*a, **k))

            _run_python_pjit.__wrapped__ = run  # type: ignore[attr-defined]
            setattr(pjit, "_run_python_pjit", _run_python_pjit)  # noqa: B010 - absent before 0.9
        elif helper is not None:
            def _python_pjit_helper(fun: Any, jit_info: Any, *args: Any, **kwargs: Any) -> Any:
                return _taken(fun, args, kwargs, jit_info, lambda: helper(fun, jit_info, *args, **kwargs))

            _python_pjit_helper.__wrapped__ = helper  # type: ignore[attr-defined]
            setattr(pjit, "_python_pjit_helper", _python_pjit_helper)  # noqa: B010 - absent from 0.9
        else:
            raise _missing("the Python dispatch of a jit call (pjit._run_python_pjit)")

        fastpath = jit_function("_get_fastpath_data")

        def _get_fastpath_data(*a: Any, **k: Any) -> Any:
            kept = getattr(_jit_call_state, "out_flat", None)
            if kept is not None and kept is (a[3] if len(a) > 3 else k.get("out_flat")):
                _jit_call_state.out_flat = None
                return None
            return fastpath(*a, **k)

        _get_fastpath_data.__wrapped__ = fastpath  # type: ignore[attr-defined]
        replace_jit_function("_get_fastpath_data", _get_fastpath_data)
        _jit_calls_routed[0] = True


def _note_jit_infos() -> None:
    """Have ``pjit._infer_params(fun, jit_info, args, kwargs)`` (0.7-0.12)
    note, per thread, the ``(PjitParams, PjitInfo)`` of its last result."""
    infer = jit_function("_infer_params")

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        out = infer(fun, ji, args, kwargs)
        _jit_call_state.params = (out[0], ji)
        return out

    _infer_params.__wrapped__ = infer  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)


def _taken(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], jit_info: Any,
           run: Callable[[], Any]) -> Any:
    take = _jit_call_taker[0]
    if take is None:
        return run()
    call = PythonJitCall(fun, args, kwargs, jit_info, run)
    result = take(call)
    # out_flat: the list jit's cache_miss hands _get_fastpath_data next
    _jit_call_state.out_flat = result[1] if call.off_fast_path else None
    return result


def clear_fast_path_entries() -> None:
    """Drop the entries of every jitted function in jaxlib's C++ fast path
    (``PjitFunctionCache.clear_all()``, the class of
    ``pjit._cpp_pjit_cache_fun_only``, 0.7-0.12; what ``jax.clear_caches``
    does to it): each function's next call goes through JAX's Python
    dispatch, which finds its trace and its executable in JAX's own caches
    (nothing is traced or compiled again)."""
    from jax._src import pjit

    cache = getattr(pjit, "_cpp_pjit_cache_fun_only", None)
    clear_all = getattr(type(cache), "clear_all", None)
    if cache is None or clear_all is None:
        raise _missing("a way to drop jit's C++ fast-path entries (PjitFunctionCache.clear_all)")
    clear_all()


def jax_code_folders() -> tuple[str, ...]:
    """The folders of JAX's and jaxlib's own code (``jax``, ``jaxlib``), as
    imported and as real paths, each ending in a separator."""
    import jax
    import jaxlib

    out: set[str] = set()
    for module in (jax, jaxlib):
        folder = os.path.dirname(module.__file__ or "")
        out |= {folder + os.sep, os.path.realpath(folder) + os.sep}
    return tuple(sorted(out))
