"""Where JAX would go around no64 or past its frames, guarded: jaxlib's C++
fast paths (a jit call's, an AOT-compiled call's) refused to calls no64
must see (point 5 of :mod:`no64.jax.host`), and the stack level of JAX's
dtype warnings counted without no64's own frames."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .policy import NARROWED, NO_FAST_PATH, OWN_DIR, host_policy


class _WarningsPastNo64:
    """The ``warnings`` module as ``jax._src.dtypes`` sees it: ``warn`` with a
    ``stacklevel`` counts no frame of no64's own wrappers (``jnp.array``
    above, the audit's), so that JAX's warning about an explicit 64-bit
    dtype names the line it names without no64, not one of no64's."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def warn(self, message: Any, category: Any = None, stacklevel: int = 1, *args: Any,
             **kwargs: Any) -> None:
        frame = sys._getframe(1)  # the frame that warns: level 1
        level = counted = 1
        while counted < stacklevel and frame.f_back is not None:
            frame = frame.f_back
            filename = frame.f_code.co_filename
            if "importlib" in filename and "_bootstrap" in filename:
                continue  # warn() does not count these either
            level += 1
            if not filename.startswith(OWN_DIR):
                counted += 1
        self._module.warn(message, category, level + 1, *args, **kwargs)


def install_warning_levels() -> None:
    from .._compat import wrap_dtype_warnings

    wrap_dtype_warnings(_WarningsPastNo64)


def install_fastpath_guard() -> None:
    from .._compat import is_flagged, jit_function, replace_jit_function

    original = jit_function("_get_fastpath_data")
    if getattr(original, "__no64__", False):
        return

    def _get_fastpath_data(executable: Any, out_tree: Any, args_flat: Any, *rest: Any) -> Any:
        if host_policy() is not None:
            for a in args_flat:
                t = type(a)
                if (t is np.ndarray or isinstance(a, np.generic)) and a.dtype in NO_FAST_PATH:
                    # jaxlib's C++ dispatch would truncate 64-bit numpy data,
                    # on this call or on a later one this entry would serve
                    return None
        if is_flagged(executable):
            return None  # no64 reads its last result after each run
        for veto in _fast_path_vetoes:
            if veto(args_flat, rest[0] if rest else ()):
                return None
        return original(executable, out_tree, args_flat, *rest)

    _get_fastpath_data.__wrapped__ = original  # type: ignore[attr-defined]
    _get_fastpath_data.__no64__ = True  # type: ignore[attr-defined]
    replace_jit_function("_get_fastpath_data", _get_fastpath_data)


#: predicates ``veto(args_flat, out_flat)``: a call for which one holds gets
#: no C++ fast-path entry (see :func:`veto_fast_path`)
_fast_path_vetoes: list[Callable[[Any, Any], bool]] = []


def veto_fast_path(veto: Callable[[Any, Any], bool]) -> None:
    """Give no C++ fast-path entry to a jit call for which ``veto(args_flat,
    out_flat)`` holds: jaxlib's C++ dispatch keys its cache by the 32-bit
    abstract values alone and would serve later calls without no64."""
    if veto not in _fast_path_vetoes:
        _fast_path_vetoes.append(veto)


def _has_wide_numpy(tree: Any) -> bool:
    from jax import tree_util

    for a in tree_util.tree_leaves(tree):
        if (type(a) is np.ndarray or isinstance(a, np.generic)) and a.dtype in NARROWED:
            return True
    return False


def install_aot_guard() -> None:
    from .._compat import cpp_call_params, internal_function, is_flagged, replace_internal_function

    original = internal_function("create_cpp_call")
    if getattr(original, "__no64__", False):
        return

    def create_cpp_call(self: Any, *args: Any) -> Any:
        if is_flagged(self):
            return None  # no64 reads its last result after each run: through (1)
        params = cpp_call_params(args)
        if params is None:
            return None  # JAX calls through stages.Compiled.call, where (1) applies
        cpp = original(self, params)
        if cpp is None:
            return None

        def call(*args: Any, **kwargs: Any) -> Any:
            if host_policy() is not None and _has_wide_numpy((args, kwargs)):
                return internal_function("compiled_call")(params, *args, **kwargs)[0]  # through (1)
            return cpp(*args, **kwargs)

        return call

    create_cpp_call.__wrapped__ = original  # type: ignore[attr-defined]
    create_cpp_call.__no64__ = True  # type: ignore[attr-defined]
    replace_internal_function("create_cpp_call", create_cpp_call)
