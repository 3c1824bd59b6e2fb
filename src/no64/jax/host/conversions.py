"""JAX's conversions of host data to a requested dtype, wrapped (points 3,
4 and 6 of :mod:`no64.jax.host`, and ``jnp.arange``): a 64-bit host operand
is narrowed by no64 before JAX would truncate it, as the x64 program
converts it."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..state import STATE
from .narrowing import narrow_host_array, narrow_python_float, narrow_python_int, needs_float, needs_int
from .policy import COMPLEX64, COMPLEX128, FLOAT32, FLOAT64, INT32, INT64, NARROWED, UINT32, UINT64, host_policy
from .x64_dtypes import noted, x64_dtype_of


def _target_for(operand_dtype: np.dtype, new_dtype: Any) -> np.dtype | None:
    """The 32-bit dtype a 64-bit host operand narrows to when converted to
    ``new_dtype`` (``None``: the conversion is not a 64-to-32 narrowing of
    the same kind, and JAX's own conversion applies)."""
    narrowed = NARROWED[operand_dtype]
    if new_dtype is None:
        return narrowed
    try:
        new = np.dtype(new_dtype)
    except TypeError:
        return None
    if new == narrowed or new == operand_dtype:
        return narrowed
    return None


def _pre_narrow(operand: Any, new_dtype: Any, policy: str, op: str,
                jax_refuses: bool = False) -> Any:
    """``operand`` narrowed by no64 when it is 64-bit host data that a
    conversion to ``new_dtype`` would truncate; otherwise ``operand``.
    ``jax_refuses``: JAX refuses a Python int outside the 32-bit range in
    this conversion (it does not in ``lax._convert_element_type``, which
    truncates it)."""
    t = type(operand)
    if t is int:
        if not needs_int(operand):
            return operand
        try:
            new = np.dtype(new_dtype) if new_dtype is not None else INT32
        except TypeError:
            return operand
        if new in (INT32, INT64):
            return narrow_python_int(operand, policy, op=op, jax_refuses=jax_refuses)
        if new in (UINT32, UINT64):
            return narrow_python_int(operand, policy, unsigned=True, op=op, jax_refuses=jax_refuses)
        return operand
    if t is float:
        if not needs_float(operand):
            return operand
        try:
            new = np.dtype(new_dtype) if new_dtype is not None else FLOAT32
        except TypeError:
            return operand
        if new in (FLOAT32, FLOAT64, COMPLEX64, COMPLEX128):
            return narrow_python_float(operand, op)
        return operand
    if t is np.ndarray or (isinstance(operand, np.generic) and t is not bool):
        dt = operand.dtype
        if dt not in NARROWED or _target_for(dt, new_dtype) is None:
            return operand
        out = narrow_host_array(np.asarray(operand), policy, op=op,
                                scalar=t is not np.ndarray)
        return out if t is np.ndarray else out[()]
    return operand


def install_convert_element_type() -> None:
    from .._compat import internal_function, replace_internal_function

    original = internal_function("lax_convert")
    if getattr(original, "__no64__", False):
        return

    def _convert_element_type(operand: Any, new_dtype: Any = None, weak_type: bool = False,
                              sharding: Any = None, warn_on_complex_to_real_cast: bool = True) -> Any:
        t = type(operand)
        if t is int or t is float or t is np.ndarray or isinstance(operand, np.generic):
            policy = host_policy()
            if policy is not None:
                operand = _pre_narrow(operand, new_dtype, policy, "host value")
        return original(operand, new_dtype, weak_type, sharding, warn_on_complex_to_real_cast)

    _convert_element_type.__wrapped__ = original  # type: ignore[attr-defined]
    _convert_element_type.__no64__ = True  # type: ignore[attr-defined]
    replace_internal_function("lax_convert", _convert_element_type)


def install_coerce_to_array() -> None:
    """``dtypes.coerce_to_array``: a Python scalar made a numpy array with
    JAX's dtype rules (``lax.asarray`` of a Python number, the overflow check
    of ``jnp.array``), where JAX raises ``OverflowError`` for an int beyond
    the canonical dtype."""
    from .._compat import internal_function, replace_internal_function

    original = internal_function("coerce_to_array")
    if getattr(original, "__no64__", False):
        return

    def coerce_to_array(x: Any, dtype: Any = None) -> np.ndarray:
        t = type(x)
        if t is int or t is float:
            policy = host_policy()
            if policy is not None:
                # JAX's np.asarray(x, dtype) refuses an int beyond a 32-bit dtype
                # (the canonical one when dtype is None) with OverflowError.
                x = _pre_narrow(x, dtype, policy, "host value", jax_refuses=_is_32bit_or_none(dtype))
        return original(x, dtype)

    _replace("coerce_to_array", original, coerce_to_array, ())
    replace_internal_function("coerce_to_array", coerce_to_array)


def _is_32bit_or_none(dtype: Any) -> bool:
    if dtype is None:
        return True
    try:
        return np.dtype(dtype) in (INT32, UINT32)
    except TypeError:
        return False


def _python_refusal(obj: Any, target: np.dtype) -> bool:
    """Whether JAX with x64 off refuses ``obj`` (``jnp.array`` input) as
    ``target``: numpy refuses, with ``OverflowError``, an integer outside
    ``target``'s range that is a Python int or a scalar inside a list or
    tuple (the elements of a numpy array in a list it truncates)."""
    info = np.iinfo(target)

    def out(v: Any) -> bool:
        return not info.min <= int(v) <= info.max

    def visit(x: Any, nested: bool) -> bool:
        t = type(x)
        if t is int:
            return out(x)
        if nested and isinstance(x, np.integer):
            return out(x)
        if t is list or t is tuple:
            return any(visit(y, True) for y in x)
        return False

    return visit(obj, False)


def _leaves_need_narrowing(obj: Any) -> bool:
    t = type(obj)
    if t is int:
        return needs_int(obj)
    if t is float:
        return needs_float(obj)
    if t is np.ndarray or isinstance(obj, np.generic):
        return obj.dtype in NARROWED
    if t is list or t is tuple:
        return any(_leaves_need_narrowing(x) for x in obj)
    return False


def _requested(dtype: Any) -> np.dtype | None | Literal[False]:
    """The dtype a ``jnp.array`` call asks for (``None``: none), or ``False``
    when it is not one no64 narrows from."""
    if dtype is None:
        return None
    try:
        want = np.dtype(getattr(dtype, "dtype", dtype))
    except TypeError:
        return False
    return want if want in NARROWED else False


def _array_input(object: Any, dtype: Any, function: str) -> tuple[Any, Any]:
    """``jnp.array``/``jnp.asarray`` (``function``) input as the x64 program
    converts it on the host, then narrowed by no64 (``object`` and ``dtype``
    unchanged when nothing in it needs narrowing or no64 is not narrowing
    host values).  A conversion with an explicit dtype is told to the
    listeners (:meth:`~no64.jax.state.HookListener.on_host_conversion`)."""
    policy = host_policy()
    if policy is None or not _leaves_need_narrowing(object):
        return object, dtype
    want = _requested(dtype)
    if want is False:
        if type(object) is int or type(object) is float:
            # A Python scalar requested as a 32-bit type, maybe the type JAX
            # canonicalised the x64 program's 64-bit one to (jnp.nonzero's
            # fill_value from 0.12): converted as by (3); JAX refuses an int
            # beyond that type with OverflowError.
            return _pre_narrow(object, dtype, policy, "host value", jax_refuses=True), dtype
        return object, dtype
    requested: Any = want  # a dtype or None here
    try:
        wide = np.asarray(object, dtype=requested)
    except (TypeError, ValueError, OverflowError):
        return object, dtype
    if wide.dtype not in NARROWED:
        return object, dtype
    scalar = wide.ndim == 0 and not isinstance(object, np.ndarray)
    what = None
    if type(object) is int:
        what = "a Python int"
    elif type(object) is list or type(object) is tuple:
        what = f"a {type(object).__name__} read as {wide.dtype}{list(wide.shape)}"
    refuses = wide.dtype.kind in "iu" and _python_refusal(object, NARROWED[wide.dtype])
    narrowed = narrow_host_array(wide, policy, scalar=scalar, what=what, jax_refuses=refuses)
    if dtype is not None and STATE.listeners:
        STATE.tell.on_host_conversion(dtype, getattr(narrowed, "dtype", None), function)
    return narrowed, None



def _replace(name: str, original: Any, wrapper: Any, modules: tuple[Any, ...]) -> None:
    from .._compat import replace_attribute

    wrapper.__wrapped__ = original
    wrapper.__no64__ = True
    for attr in ("__doc__", "__name__", "__qualname__", "__module__"):
        setattr(wrapper, attr, getattr(original, attr))
    for module in modules:
        if getattr(module, name, None) is original:
            replace_attribute(module, name, wrapper)


def install_array() -> None:
    import jax.numpy as jnp

    from .._compat import internal_function, numpy_modules

    modules = (*numpy_modules("array_constructors", "array_creation", "lax_numpy", "index_tricks",
                              "scalar_types"), jnp)
    original_array = internal_function("array")
    if getattr(original_array, "__no64__", False):
        return
    original_asarray = internal_function("asarray")

    def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
              ndmin: int = 0, **kwargs: Any) -> Any:
        wide = x64_dtype_of(object, dtype)
        given, (object, dtype) = object, _array_input(object, dtype, "array")
        return noted(original_array(object, dtype, copy=copy, order=order, ndmin=ndmin, **kwargs), wide, given)

    def asarray(a: Any, dtype: Any = None, order: str | None = None, **kwargs: Any) -> Any:
        wide = x64_dtype_of(a, dtype)
        given, (a, dtype) = a, _array_input(a, dtype, "asarray")
        return noted(original_asarray(a, dtype, order, **kwargs), wide, given)

    _replace("array", original_array, array, modules)
    _replace("asarray", original_asarray, asarray, modules)


def install_arange() -> None:
    """``jnp.arange`` with a bound beyond 32 bits: JAX 0.7 builds
    ``arange(N, M)``, and up to 0.9 ``arange(N, M, K)``, on the host with
    ``np.arange(..., dtype=<canonical dtype>)``, which raises
    ``OverflowError`` before no64 sees the values; where it does, the values
    are built as the x64 program builds them, then narrowed by no64.  (Later
    releases convert the bounds with ``lax._convert_element_type``, see (3).)"""
    import jax.numpy as jnp

    from .._compat import internal_function, numpy_modules

    original = internal_function("arange")
    if getattr(original, "__no64__", False):
        return

    def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
        try:
            return original(start, stop, step, dtype, **kwargs)
        except OverflowError:
            policy = host_policy()
            bounds = [start] if stop is None and step is None else [start, stop, step]
            want: Any = _requested(dtype) if dtype is not None else INT64
            if (policy is None or any(v is not None for v in kwargs.values()) or want is False
                    or not all(type(v) is int or isinstance(v, np.integer) for v in bounds if v is not None)
                    or not any(needs_int(int(v)) for v in bounds if v is not None)):
                raise
        wide = np.arange(*bounds, dtype=want)
        # JAX raised OverflowError for these bounds: so does a refusal.
        return jnp.asarray(narrow_host_array(wide, policy, jax_refuses=True))

    _replace("arange", original, arange, (*numpy_modules("lax_numpy"), jnp))
