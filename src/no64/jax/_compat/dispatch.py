"""Every jit call through JAX's Python dispatch (measuring a program's calls), and the C++
fast-path entries dropped."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from .base import missing
from .jit_path import jit_function, replace_jit_function
from .patching import on_restore, replace_attribute

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
                raise missing("the Python dispatch of a jit call (pjit._run_python_pjit(p, ..., fun, args, kwargs))")
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
            replace_attribute(pjit, "_run_python_pjit", _run_python_pjit)
        elif helper is not None:
            def _python_pjit_helper(fun: Any, jit_info: Any, *args: Any, **kwargs: Any) -> Any:
                return _taken(fun, args, kwargs, jit_info, lambda: helper(fun, jit_info, *args, **kwargs))

            _python_pjit_helper.__wrapped__ = helper  # type: ignore[attr-defined]
            replace_attribute(pjit, "_python_pjit_helper", _python_pjit_helper)
        else:
            raise missing("the Python dispatch of a jit call (pjit._run_python_pjit)")

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
        on_restore(_unrouted)


def _unrouted() -> None:
    """JAX's dispatch put back: the next routing wraps it again."""
    _jit_calls_routed[0] = False


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
        raise missing("a way to drop jit's C++ fast-path entries (PjitFunctionCache.clear_all)")
    clear_all()
