"""The x64 program's 64-bit dtype of the 32-bit arrays JAX makes from host
data, noted on them (:mod:`no64.jax.x64_arrays`): ``jax.numpy``'s creation
functions and ``jax.device_put`` wrapped, and what ``jnp.array`` gives in
the x64 program told; whether a 64-bit dtype computes otherwise in the
32-bit program at all."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.types import I32 as _I32, I64 as _I64
from .. import x64_arrays
from ..state import STATE
from .narrowing import PAIRS
from .policy import INT64, NARROWED, NARROWED_IMAGES, UINT64

#: ``jax.numpy`` functions that make an array from a dtype JAX canonicalises
#: (given, or a default one): what they return eagerly is noted with its x64
#: dtype (:mod:`no64.jax.x64_arrays`)
_CREATIONS = ("arange", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
              "empty_like", "eye", "identity", "linspace", "tri", "astype")


def install_x64_creations() -> None:
    import jax.numpy as jnp

    from .._compat import numpy_modules, replace_attribute

    modules = (*numpy_modules("array_creation", "lax_numpy"), jnp)
    for name in _CREATIONS:
        original = getattr(jnp, name, None)
        if original is None or getattr(original, "__no64_x64__", False):
            continue
        wrapper = _noting_x64(original)
        wrapper.__no64_x64__ = True  # type: ignore[attr-defined]
        for module in modules:
            if getattr(module, name, None) is original:
                replace_attribute(module, name, wrapper)


def _noting_x64(original: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        dtype = getattr(out, "dtype", None)
        if dtype is not None and dtype in NARROWED_IMAGES and STATE.x64_requested():
            from .._compat import at_top_level

            if at_top_level() and computes_otherwise(_WIDENED[np.dtype(dtype)]):
                noted(out, _x64_dtype_by_shape(original, args, kwargs), _fill_of(original, args, kwargs))
        return out

    functools.update_wrapper(create, original)
    return create


#: the 32-bit dtype no64 gives a 64-bit one -> that 64-bit one
_WIDENED = {np.dtype(v): np.dtype(k) for k, v in NARROWED.items()}


def _x64_dtype_by_shape(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The dtype ``fun(*args, **kwargs)`` returns in the x64 program, its array
    arguments taken with their x64 dtypes (``None`` where it cannot be told)."""
    import jax
    from jax import tree_util

    leaves, tree = tree_util.tree_flatten((args, kwargs))
    arrays = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)]

    def call(*dynamic: Any) -> Any:
        filled = list(leaves)
        for i, x in zip(arrays, dynamic):
            filled[i] = x
        a, k = tree_util.tree_unflatten(tree, filled)
        return fun(*a, **k)

    specs = [jax.ShapeDtypeStruct(np.shape(leaves[i]), x64_arrays.x64_dtype(leaves[i]) or leaves[i].dtype)
             for i in arrays]
    try:
        with _x64_on(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = jax.eval_shape(call, *specs)
    except Exception:  # noqa: BLE001 - no x64 dtype to tell (a bound that must be concrete)
        return None
    dtype = getattr(out, "dtype", None)
    return np.dtype(dtype) if dtype is not None and np.dtype(dtype) in NARROWED else None


#: what the creations that fill an array with one value fill it with
_FILLS = {"zeros": 0, "zeros_like": 0, "ones": 1, "ones_like": 1}


def _fill_of(original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The one host value ``jnp.zeros``/``ones``/``full`` (and ``_like``)
    filled an array with (``jnp.full(3, INT64_MAX)`` holds INT64_MAX in the
    x64 program, its image in the 32-bit one), or ``None``."""
    name = getattr(original, "__name__", "")
    if name in _FILLS:
        return _FILLS[name]
    if name in ("full", "full_like"):
        return kwargs.get("fill_value", args[1] if len(args) > 1 else None)
    return None


def host_bounds(object: Any) -> tuple[int, int] | None:
    """The least and greatest of the integers the host value ``object``
    holds (a Python int, a list of them, numpy integer data), or ``None``."""
    if type(object) is int:
        return (object, object)
    if isinstance(object, (list, tuple)) and object and _python_numbers(object):
        if not all(type(x) is int for x in _flat(object)):
            return None
        ints = list(_flat(object))
        return (min(ints), max(ints))
    if isinstance(object, (np.ndarray, np.generic)) and object.dtype.kind in "iu" and object.size:
        return (int(object.min()), int(object.max()))
    return None


def _flat(object: Any) -> Any:
    for x in object:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def held_sentinels(object: Any) -> frozenset[int]:
    """The 32-bit images of the host sentinels (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``) the host value ``object`` holds: a Python int, a list of
    them, 64-bit numpy data, or a 32-bit array noted as holding them.  Host
    narrowing refuses data holding both a sentinel and its image as an
    ordinary value, so the image in what JAX makes of it is the sentinel."""
    if isinstance(object, (list, tuple)) and object and _python_numbers(object):
        try:
            with _x64_on():
                object = np.asarray(object)
        except Exception:  # noqa: BLE001 - not numbers numpy takes
            return frozenset()
        if object.dtype.kind not in "iu":
            return frozenset()
        if object.dtype not in NARROWED:
            object = object.astype(np.int64)
    return sentinel_images_of(object)


def sentinel_images_of(x: Any) -> frozenset[int]:
    """The 32-bit images of the sentinels a 64-bit host value holds (a
    32-bit array noted as holding some: those)."""
    t = type(x)
    if t is int:
        if x == _I64.max or x == _I64.min:
            return frozenset({int(_I32.max) if x > 0 else int(_I32.min)})
        return frozenset()
    dt = getattr(x, "dtype", None)
    if t is not np.ndarray and not isinstance(x, np.generic) and dt is not None:
        # a 64-bit jax.Array given to no64.jit (fetched there already)
        try:
            wide = np.dtype(dt) in (INT64, UINT64)
        except TypeError:
            wide = False
        if isinstance(x, _tracer_type()):
            return frozenset()
        if not wide:
            # a 32-bit array of the x64 program's int64 data holding the
            # images of host sentinels (jnp.full(3, INT64_MAX), a jit's result)
            return x64_arrays.sentinel_images(x)
        x = np.asarray(x)
        t = np.ndarray
    if (t is np.ndarray or isinstance(x, np.generic)) and x.dtype in (INT64, UINT64):
        unsigned = x.dtype == UINT64
        return frozenset(image for sentinel, _, image, _ in PAIRS[unsigned]
                         if (x == np.array(sentinel, x.dtype)).any())
    return frozenset()


def _tracer_type() -> type:
    from .._compat import tracer_type

    return tracer_type()


def install_device_put() -> None:
    from .._compat import wrap_device_put_impl

    def make(original: Any) -> Any:
        if getattr(original, "__no64__", False):
            return original

        def device_put(*xs: Any, **params: Any) -> Any:
            outs = original(*xs, **params)
            if STATE.x64_requested():
                for x, out in zip(xs, outs):
                    noted(out, x64_dtype_of(x, None), x)
            return outs

        device_put.__wrapped__ = original  # type: ignore[attr-defined]
        device_put.__no64__ = True  # type: ignore[attr-defined]
        return device_put

    wrap_device_put_impl(make)


def x64_dtype_of(object: Any, dtype: Any) -> np.dtype[Any] | None:
    """The 64-bit dtype ``jnp.array(object, dtype)`` has in the x64 program
    when no64 makes it 32-bit (int64 host data, a list of Python ints, a
    requested ``jnp.int64``, an array of the x64 program's int64); else ``None``."""
    if not STATE.x64_requested():
        return None
    if dtype is None:
        marked = x64_arrays.x64_dtype(object)
        if marked is not None:
            return marked
        if hasattr(object, "dtype") and not isinstance(object, (np.ndarray, np.generic)):
            return None  # a 32-bit array: 32-bit in the x64 program too
    try:
        with _x64_on():
            wide = np.dtype(_x64_result_dtype(object, dtype))
    except Exception:  # noqa: BLE001 - no dtype to tell (a pytree, an object JAX refuses later)
        return None
    return wide if wide in NARROWED else None


def _x64_result_dtype(object: Any, dtype: Any) -> Any:
    from .._compat import internal_function

    canonicalize_dtype = internal_function("canonicalize_dtype")
    if dtype is not None:
        return canonicalize_dtype(dtype)
    if isinstance(object, (np.ndarray, np.generic)):
        return object.dtype
    if not _python_numbers(object):
        raise TypeError("not host numbers")
    return canonicalize_dtype(np.asarray(object).dtype)


def _python_numbers(object: Any, depth: int = 0) -> bool:
    if type(object) in (int, float, bool, complex):
        return True
    if isinstance(object, (list, tuple)) and depth < 8:
        return all(_python_numbers(x, depth + 1) for x in object)
    return False


def _x64_on() -> Any:
    from .._compat import enable_x64

    return enable_x64(True)


def noted(out: Any, wide: np.dtype[Any] | None, source: Any = None) -> Any:
    """``out``, noted as of the x64 program's ``wide`` dtype where it is its
    32-bit image, with the host sentinels and the bounds of ``source``, the
    host data it was made from (or the one value it was filled with)."""
    if wide is not None and getattr(out, "dtype", None) == NARROWED[wide] and computes_otherwise(wide):
        sentinels = held_sentinels(source) if source is not None else frozenset()
        bounds = host_bounds(source) if source is not None and not sentinels else None
        x64_arrays.mark(out, wide, sentinels, bounds)
    return out


def computes_otherwise(dtype: Any, config: Any = None) -> bool:
    """Whether 64-bit data of ``dtype`` computes otherwise in the 32-bit
    program than in the x64 one under ``config`` (the active one by default):
    integers always, floats under the pairs float policy (under ``f32``
    float64 is float32 in both)."""
    from ...kinds import FloatPolicy

    kind = np.dtype(dtype).kind
    if kind in "iu":
        return True
    config = STATE.active_config() if config is None else config
    return kind in "fc" and config is not None and config.float_policy is FloatPolicy.PAIRS
