"""jit's Python path: its functions by name, the trace and the lowering of a jit call, the
eager paths (a primitive's callable, ``jit``'s implementation, ``device_put``), JAX's samplers, a
call's results flagged, the C++ fast path of AOT-compiled calls."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .base import missing
from .patching import replace_attribute


def cpp_call_params(args: tuple[Any, ...]) -> Any:
    """The ``CompiledCallParams`` among the arguments JAX hands
    ``MeshExecutable.create_cpp_call`` (its only one, from 0.8), or ``None``
    (0.7): then no fast path is built, and JAX calls through
    ``stages.Compiled.call`` instead."""
    return args[0] if len(args) == 1 else None


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
        raise missing(f"{_JIT_FUNCTIONS[name]} (jax._src.pjit.{name})")
    return found


def replace_jit_function(name: str, new: Callable[..., Any]) -> Callable[..., Any]:
    """Put ``new`` in the place of ``jax._src.pjit.<name>``; returns the function it replaced."""
    from jax._src import pjit

    original = jit_function(name)
    replace_attribute(pjit, name, new)
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
        replace_attribute(pjit, "_trace_for_jit", make(trace))
        return
    impl = getattr(pjit, "_infer_params_impl", None)
    if impl is None:
        raise missing("trace of a jit call (pjit._trace_for_jit or pjit._infer_params_impl)")

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
    replace_attribute(pjit, "_infer_params_impl", _infer_params_impl)  # 0.7-0.8 only


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
        raise missing("abstract values of a jit call's arguments (pjit._infer_input_type)")
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
        raise missing("the jit of an eager primitive (dispatch.xla_primitive_callable)")
    wrapped = make(callable_)
    for name in ("cache_info", "cache_clear"):
        if hasattr(callable_, name) and not hasattr(wrapped, name):
            setattr(wrapped, name, getattr(callable_, name))
    replace_attribute(dispatch, "xla_primitive_callable", wrapped)


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
            replace_attribute(random, name, wrapped)
            names.append(name)
    return names


def wrap_numpy_function(name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of ``jax.numpy``'s function ``name``,
    in ``jax.numpy`` and in each ``jax._src.numpy`` module that holds it (an
    array method calls ``lax_numpy``'s: ``x.astype`` is ``lax_numpy.astype``,
    0.7-0.12)."""
    import jax.numpy as jnp

    from .values import numpy_modules

    original = getattr(jnp, name, None)
    if original is None:
        raise missing(f"jax.numpy.{name}")
    wrapped = make(original)
    for module in (*numpy_modules("array_creation", "lax_numpy"), jnp):
        if getattr(module, name, None) is original:
            replace_attribute(module, name, wrapped)


def wrap_vmap(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of the public ``jax.vmap`` (0.7-0.12);
    JAX's own modules call ``jax._src.api.vmap``, which stays."""
    import jax

    original = getattr(jax, "vmap", None)
    if original is None:
        raise missing("jax.vmap")
    replace_attribute(jax, "vmap", make(original))


def wrap_jit_impl(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of the eager implementation of JAX's
    ``jit`` primitive (``pjit.jit_p.impl(*args, jaxpr=..., ...)``, 0.7-0.12):
    what runs a traced ``jit`` outside any trace, its operands canonicalised."""
    from jax._src import pjit

    prim = getattr(pjit, "jit_p", None)
    if prim is None or not callable(getattr(prim, "impl", None)):
        raise missing("the jit primitive's eager implementation (pjit.jit_p.impl)")
    replace_attribute(prim, "impl", make(prim.impl), where="jax._src.pjit.jit_p")  # as prim.def_impl sets it


def after_python_jit_call(after: Callable[[Any, Any, Any], None]) -> None:
    """Have ``after(jaxpr, out_flat, args_flat)`` called after each jit call
    that takes JAX's Python dispatch path (every call that does not hit
    jaxlib's C++ fast path), with the call's ``ClosedJaxpr``, flat results
    and flat arguments, before JAX
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
            after(p.params["jaxpr"], result[1], result[3])
            return result

        _run_python_pjit.__wrapped__ = run  # type: ignore[attr-defined]
        _run_python_pjit.__no64__ = True  # type: ignore[attr-defined]
        replace_attribute(pjit, "_run_python_pjit", _run_python_pjit)
    elif run is None and helper is not None and not getattr(helper, "__no64__", False):
        def _python_pjit_helper(*args: Any, **kwargs: Any) -> Any:
            result = helper(*args, **kwargs)
            after(result[4], result[1], result[3])
            return result

        _python_pjit_helper.__wrapped__ = helper  # type: ignore[attr-defined]
        _python_pjit_helper.__no64__ = True  # type: ignore[attr-defined]
        replace_attribute(pjit, "_python_pjit_helper", _python_pjit_helper)
    elif run is None and helper is None:
        raise missing("the Python dispatch of a jit call (pjit._run_python_pjit)")


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
        if kwargs.get("strict", True) is False:
            # a prefix of the results (the tokens of ordered effects, which
            # come first), the flag left for the last consumption
            return self._results.consume_with_handlers(handlers, *args, **kwargs)
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
        raise missing("the eager implementation of device_put (dispatch.device_put_p.impl)")
    impl = prim.impl
    replace_attribute(prim, "impl", make(impl), where="jax._src.dispatch.device_put_p")  # as prim.def_impl sets it
    direct = getattr(dispatch, "_batched_device_put_impl", None)
    if callable(direct):
        replace_attribute(dispatch, "_batched_device_put_impl", make(direct))


def wrap_jit_lower(make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(original)`` in place of ``pjit._pjit_lower(jaxpr, ...)``
    (0.7-0.12; a cached function from 0.8, a wrapper of
    ``_pjit_lower_cached`` on 0.7), which returns the ``MeshComputation``
    (``_hlo``, ``compile_args``) of a jit call's ``ClosedJaxpr``."""
    from jax._src import pjit

    lower = getattr(pjit, "_pjit_lower", None)
    if lower is None:
        raise missing("lowering of a jit call (pjit._pjit_lower)")
    replace_attribute(pjit, "_pjit_lower", make(lower))  # a cached function from 0.8


def wrap_ahead_of_time_trace(during: Callable[[], Any]) -> None:
    """Have the context manager ``during()`` entered around each trace of a
    jit asked for ahead of time -- ``jit(f).trace``, ``.lower`` and so
    ``jax.export`` (``pjit.jit_trace``, 0.7-0.12) -- whose executable serves
    every later call of its signature, whatever the values; a call's trace
    (``cache_miss``) is not one."""
    from jax._src import pjit

    trace = getattr(pjit, "jit_trace", None)
    if trace is None:
        raise missing("trace of a jit asked for ahead of time (pjit.jit_trace)")
    if getattr(trace, "__no64__", False):
        return

    def jit_trace(*args: Any, **kwargs: Any) -> Any:
        with during():
            return trace(*args, **kwargs)

    jit_trace.__wrapped__ = trace  # type: ignore[attr-defined]
    jit_trace.__no64__ = True  # type: ignore[attr-defined]
    replace_attribute(pjit, "jit_trace", jit_trace)


def lowering_without_donation(jaxpr: Any, args: tuple[Any, ...],
                              kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of ``pjit._pjit_lower(jaxpr, *args, **kwargs)`` with no
    input donated: its ``donated_invars`` (a keyword, or the one positional
    argument that is a tuple of a bool per input of ``jaxpr``, 0.7-0.12)
    all false.  As they are where there is none such."""
    n = len(getattr(jaxpr, "in_avals", ()))

    def donations(v: Any) -> bool:
        return isinstance(v, (tuple, list)) and len(v) == n and all(isinstance(d, bool) for d in v)

    if "donated_invars" in kwargs:
        return args, {**kwargs, "donated_invars": (False,) * n}
    found = [i for i, a in enumerate(args) if donations(a)]
    if len(found) != 1 or n == 0:
        return args, kwargs
    i = found[0]
    return (*args[:i], (False,) * n, *args[i + 1:]), kwargs


def jit_dynamic_arguments(ji: Any, args: Any, kwargs: Any) -> list[Any]:
    """The flat dynamic arguments of a ``jit`` call, in the order of its
    jaxpr's inputs (static ones left out)."""
    return list(_jit_dynamic_arguments(ji, args, kwargs))
