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
* Internals that are the same on every supported release, named here so that
  a future release that drops one is found in one place:
  ``jax._src.config.enable_x64`` (``value``, ``get_global``, ``set_global``),
  ``jax._src.xla_bridge`` (``expand_platform_alias``, ``_platform_aliases``,
  ``backends``), ``jax._src.compiler.compile_or_get_cached``,
  ``jax._src.core.pytype_aval_mappings``, ``jax._src.core.Jaxpr``,
  ``jax._src.core.Literal``, ``jax._src.core.jaxprs_in_params``, ``jax._src.lax.lax._convert_element_type``,
  ``jax._src.numpy.array_constructors.array``/``asarray``,
  ``jax._src.lib.xla_client``, ``jax._src.source_info_util``,
  ``jax._src.traceback_util``, ``jax._src.stages``,
  ``jax._src.interpreters.pxla``, ``jax._src.sharding_impls``.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
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
        def canonicalize_explicit(dtype: Any, fun_name: Any) -> Any:
            out = original(dtype, fun_name)
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


def jit_input_avals(fun: Any, ji: Any, dbg: Any, args: Any, kwargs: Any) -> Any:
    """The abstract values a jit call's arguments have now (under the
    configuration in force), as ``pjit._infer_params`` computes them."""
    from jax._src import tree_util
    from jax._src.lib import jax_jit

    registry = getattr(tree_util, "tracing_registry", None) or getattr(tree_util, "default_registry", None)
    if registry is None:
        raise _missing("pytree registry of jit arguments (tree_util.tracing_registry or default_registry)")
    _, dynargs = jax_jit.parse_arguments(
        args, tuple(kwargs.values()), tuple(kwargs.keys()), ji.static_argnums,
        ji.static_argnames, registry)
    infer = jit_function("_infer_input_type")
    # its second parameter: a function giving the debug info from 0.8
    # (``dbg_fn``), the debug info itself on 0.7 (``dbg``)
    if "dbg_fn" in inspect.signature(infer).parameters:
        return infer(fun, lambda: dbg, dynargs)
    return infer(fun, dbg, dynargs)
