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
* **Array constants of a trace** (:func:`widen_traced_constants`): a
  closed-over ``jax.Array`` enters a trace through
  ``DynamicJaxprTrace._new_const``, which keys it by id in the frame's
  ``constid_to_tracer``; a conversion is bound in that trace under
  ``core.set_current_trace`` (0.7-0.12).
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

The seam is a package with a module per job, each importing only those
before it: ``base`` (the error naming a missing feature), ``patching`` (the
journal of what the seam replaced in JAX, which puts the originals back),
``config`` (the x64 scope and value, configuration states, the platforms),
``values`` (host values and dtypes), ``jaxprs`` (jaxprs, equations and
traces), ``internals`` (JAX's functions by no64's names, devices),
``tracebacks`` (source locations), ``jit_path`` (jit's Python path: its
trace, lowering and eager implementations), ``dispatch`` (every jit call
through JAX's Python dispatch) and ``cpu_compiler`` (XLA's CPU compiler,
wrapped as the seam loads).  This module re-exports their names: the rest of
no64 imports from ``no64.jax._compat`` alone.
"""

from __future__ import annotations

from ...ir._compat import UnsupportedJaxlibError
from .config import (
    backends_started,
    convert_weakly_typed,
    enable_x64,
    explicit_x64_dtypes_allowed,
    make_state,
    pinned_platforms,
    platform_names,
    set_x64_global,
    set_x64_update_hook,
    settle_trace_context,
    x64_state,
    x64_update_hook,
)
from .cpu_compiler import HASH_RECOGNIZE_OFF, guard_cpu_compiler, late_cpu_guard_warning
from .dispatch import PythonJitCall, clear_fast_path_entries, route_python_jit_calls
from .internals import (
    backend_module_text,
    device_list,
    internal_function,
    replace_internal_function,
    sharding_for,
    with_host_callbacks,
)
from .jaxprs import (
    as_debug_callback,
    at_top_level,
    bind_equation,
    bind_equation_params,
    callback_effect_types,
    closed_jaxpr_type,
    equation_context,
    eval_jaxpr,
    jaxpr_classes,
    jaxpr_literal_type,
    jaxprs_in_params,
    make_closed_jaxpr,
    open_jaxpr,
    open_jaxpr_type,
    primitive_names,
    scan_layout,
    shaped_array_type,
    trace_flat,
    tracer_type,
    wrapped_function,
)
from .jit_path import (
    FlaggedExecutable,
    after_python_jit_call,
    cpp_call_params,
    is_flagged,
    jit_dynamic_arguments,
    jit_function,
    jit_input_avals,
    lowering_without_donation,
    replace_jit_function,
    wrap_ahead_of_time_trace,
    wrap_device_put_impl,
    wrap_jit_impl,
    wrap_jit_lower,
    wrap_jit_trace,
    wrap_numpy_function,
    wrap_primitive_callable,
    wrap_random_samplers,
    wrap_vmap,
)
from .patching import Change, changes, installing, replace_attribute, restore
from .tracebacks import (
    current_traceback,
    frame_line,
    hide_from_source_locations,
    hide_from_tracebacks,
    jax_code_folders,
    locate_by_trace_frames,
    traceback_context,
    traceback_frames,
)
from .values import (
    aval_mapping,
    canonicalize_host_value,
    canonicalize_traced_constants,
    numpy_modules,
    register_canonicalize_handler,
    set_aval_mapping,
    traced_constant_sources,
    typed_ndarray,
    typed_scalar,
    watch_explicit_dtypes,
    widen_traced_constants,
    wrap_dtype_warnings,
)

__all__ = [
    "as_debug_callback",
    "callback_effect_types",
    "with_host_callbacks",
    "after_python_jit_call",
    "at_top_level",
    "aval_mapping",
    "backend_module_text",
    "backends_started",
    "bind_equation",
    "bind_equation_params",
    "canonicalize_host_value",
    "canonicalize_traced_constants",
    "Change",
    "changes",
    "clear_fast_path_entries",
    "closed_jaxpr_type",
    "cpp_call_params",
    "current_traceback",
    "device_list",
    "convert_weakly_typed",
    "enable_x64",
    "equation_context",
    "eval_jaxpr",
    "explicit_x64_dtypes_allowed",
    "FlaggedExecutable",
    "frame_line",
    "guard_cpu_compiler",
    "HASH_RECOGNIZE_OFF",
    "hide_from_source_locations",
    "hide_from_tracebacks",
    "installing",
    "internal_function",
    "is_flagged",
    "jax_code_folders",
    "jaxpr_classes",
    "jaxpr_literal_type",
    "jaxprs_in_params",
    "jit_dynamic_arguments",
    "jit_function",
    "jit_input_avals",
    "lowering_without_donation",
    "late_cpu_guard_warning",
    "locate_by_trace_frames",
    "make_closed_jaxpr",
    "make_state",
    "numpy_modules",
    "open_jaxpr",
    "open_jaxpr_type",
    "pinned_platforms",
    "platform_names",
    "primitive_names",
    "PythonJitCall",
    "register_canonicalize_handler",
    "replace_attribute",
    "replace_internal_function",
    "replace_jit_function",
    "restore",
    "route_python_jit_calls",
    "scan_layout",
    "set_aval_mapping",
    "set_x64_global",
    "set_x64_update_hook",
    "settle_trace_context",
    "shaped_array_type",
    "sharding_for",
    "trace_flat",
    "traceback_context",
    "traceback_frames",
    "traced_constant_sources",
    "tracer_type",
    "typed_ndarray",
    "typed_scalar",
    "UnsupportedJaxlibError",
    "watch_explicit_dtypes",
    "widen_traced_constants",
    "wrap_device_put_impl",
    "wrap_dtype_warnings",
    "wrap_jit_impl",
    "wrap_numpy_function",
    "wrap_ahead_of_time_trace",
    "wrap_jit_lower",
    "wrap_jit_trace",
    "wrap_primitive_callable",
    "wrap_random_samplers",
    "wrap_vmap",
    "wrapped_function",
    "x64_state",
    "x64_update_hook",
]
