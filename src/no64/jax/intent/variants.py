"""One trace per x64 signature of a call, and the 32-bit results of a call marked with their x64
dtypes."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from .. import host, x64_arrays
from .._compat import (
    jit_function,
    replace_jit_function,
)
from ..state import STATE
from .eager import differs_in_x64
from .judge import NoMeaning
from .records import meanings, tls, wanted, x64_requested

# ---------------------------------------------------------------------------
# One trace per x64 signature of the call
# ---------------------------------------------------------------------------
#
# JAX keys its trace (and so the module and the executable) by the 32-bit
# abstract values of a call.  A call with 64-bit numpy data has the same
# 32-bit values as one with 32-bit data, but another x64 program
# (``a * a`` of int64 data is a 64-bit product): it must not be served the
# trace -- and the x64 meaning -- of the other.  Such a call traces a
# variant of the function, equal to it but for the dtypes of the host data,
# so JAX's caches keep one entry per x64 signature.  (Calls with 64-bit numpy
# data never take jaxlib's C++ fast path: see no64.jax.host.)


class _X64Variant:
    """``fun`` under another key: the dtypes of the call's 64-bit host data."""

    def __init__(self, fun: Callable[..., Any], key: tuple[str, ...]) -> None:
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._key = key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash((self._fun, self._key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _X64Variant) and other._fun == self._fun
                and other._key == self._key)

    def __repr__(self) -> str:
        return f"{self._fun!r} (x64 signature {', '.join(self._key)})"


#: fun -> {x64 signature: its variant}
_variants: "weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], _X64Variant]]" = (
    weakref.WeakKeyDictionary())


def _x64_signature(args: Any, kwargs: Any) -> tuple[str, ...] | None:
    """The dtypes of a call's array leaves (and the host sentinels 64-bit
    numpy data holds) if one is 64-bit numpy data or a 32-bit array of a
    64-bit value of the x64 program (:mod:`no64.jax.x64_arrays`), which the
    32-bit program holds as 32-bit data, else ``None``."""
    import numpy as np
    from jax import tree_util

    leaves = tree_util.tree_leaves((args, kwargs))
    wide = False
    key = []
    for a in leaves:
        if type(a) is np.ndarray or isinstance(a, np.generic):
            wide = wide or a.dtype in host.NARROWED
            # data holding a host sentinel is another x64 program: the sentinel
            # is taken back at its entry (_sentinels_restored)
            images = host.argument_seeds([a]).get(0)
            key.append(a.dtype.str if not images else f"{a.dtype.str} holding {sorted(images)}")
            continue
        marked = x64_arrays.x64_dtype(a)
        if marked is not None:
            wide = True
            key.append(f"{marked.str} array")
            continue
        dtype = getattr(a, "dtype", None)
        key.append(str(dtype) if dtype is not None else type(a).__name__)
    return tuple(key) if wide else None


def _variant(fun: Any, args: Any, kwargs: Any) -> Any:
    given = getattr(tls, "arguments", None)
    key = _x64_signature(*(given if given is not None else (args, kwargs)))
    if key is None:
        return fun
    try:
        per_fun = _variants.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: a variant per call (no cache)
        return _X64Variant(fun, key)
    variant = per_fun.get(key)
    if variant is None:
        variant = per_fun[key] = _X64Variant(fun, key)
    return variant


def no_fast_path(args_flat: Any, out_flat: Any) -> bool:
    """Whether a jit call must keep off jaxlib's C++ fast path: with x64
    requested, a call taking a 32-bit array (one of a 64-bit value of the x64
    program or not: the C++ cache cannot tell them apart) or returning one of
    a 64-bit value (to be noted at every call, :func:`_mark_outputs`)."""
    if not x64_requested():
        return False
    import numpy as np

    config = STATE.active_config()
    assert config is not None
    for a in args_flat:
        dtype = getattr(a, "dtype", None)
        try:
            if dtype is not None and np.dtype(dtype) in host.NARROWED_IMAGES and differs_in_x64(dtype, config):
                return True
        except TypeError:
            continue
    return x64_arrays.any_marked(out_flat)


#: 32-bit ClosedJaxpr -> per result, its 64-bit dtype in the x64 program (or None)
_out_x64: "weakref.WeakKeyDictionary[Any, tuple[Any, ...]]" = weakref.WeakKeyDictionary()


def after_call(jaxpr: Any, out_flat: Any) -> None:
    if x64_requested():
        _mark_outputs(jaxpr, out_flat)


def _mark_outputs(jaxpr: Any, outs: Any) -> None:
    """Note each result of a jit call that is 64-bit in the call's x64
    program (:mod:`no64.jax.x64_arrays`): the next call it enters takes it
    as the x64 program does (a step counter, an int64 accumulator)."""
    if jaxpr is None:
        return
    try:
        dtypes = _out_x64.get(jaxpr)
        if dtypes is None:
            deferred = meanings.get(jaxpr)
            if deferred is None:
                return
            dtypes = _out_x64[jaxpr] = _x64_results(jaxpr, deferred.get())
    except TypeError:
        return
    if not any(d is not None for d in dtypes):
        return
    for out, dtype in zip(outs, dtypes):
        if dtype is not None:
            x64_arrays.mark(out, dtype)


def _x64_results(jaxpr: Any, p64: Any) -> tuple[Any, ...]:
    import numpy as np

    config = STATE.active_config()
    n = len(jaxpr.out_avals)
    if config is None or p64 is None or isinstance(p64, NoMeaning):
        return (None,) * n
    out: list[Any] = []
    for a32, a64 in zip(jaxpr.out_avals, p64.params["jaxpr"].out_avals):
        d32, d64 = getattr(a32, "dtype", None), getattr(a64, "dtype", None)
        try:
            wide = (d64 is not None and np.dtype(d64) in host.NARROWED
                    and host.NARROWED[np.dtype(d64)] == np.dtype(d32) and differs_in_x64(d64, config))
        except TypeError:  # an extended dtype (a typed PRNG key)
            wide = False
        out.append(np.dtype(d64) if wide else None)
    return tuple(out)


def install_call_variants() -> None:
    original = jit_function("_infer_params")
    if getattr(original, "__no64_variants__", False):
        return

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        if wanted():
            fun = _variant(fun, args, kwargs)
        return original(fun, ji, args, kwargs)

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64_variants__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)
