"""JAX's canonicalisation of host data, wrapped (points 1 and 2 of
:mod:`no64.jax.host`, and the constants a JAX 0.7 trace takes in): numpy
arrays, 64-bit numpy scalars, Python ints and floats narrowed by no64; and,
for each value it narrowed, the 64-bit host data it was made from."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...ir.types import I64 as _I64
from ...kinds import IntegerPolicy
from .narrowing import narrow_host_array, narrow_python_float, narrow_python_int, needs_float, needs_int
from .policy import FLOAT32, INT32, NARROWED, host_policy
from .records import local_state

_WIDE_KEPT = 16


def _remember_wide(narrowed: Any, original: Any) -> Any:
    """Note, for this thread, the 64-bit host data a narrowed value was made
    from (the last few only): an eager primitive, whose operands JAX
    canonicalises before it runs, is given its x64 meaning from them (see
    :func:`wide_original`)."""
    kept = getattr(local_state, "wide", None)
    if kept is None:
        kept = local_state.wide = {}
    elif len(kept) >= _WIDE_KEPT:
        del kept[next(iter(kept))]
    # weakly, where the objects allow it: a large host array is not kept
    # alive by this note (a numpy scalar, which allows no weak reference, is)
    kept[id(narrowed)] = (_ref(narrowed), _ref(original))
    for listener in _wide_listener:
        listener(original)
    return narrowed


def _ref(x: Any) -> Any:
    try:
        return weakref.ref(x)
    except TypeError:
        return lambda: x


#: called with each 64-bit host array or scalar no64 narrows (see no64.jax.intent)
_wide_listener: list[Any] = []


def on_wide_narrowed(listener: Any) -> None:
    """Have ``listener(original)`` called whenever JAX canonicalises 64-bit
    host data that no64 narrows (once; the last one set wins)."""
    _wide_listener[:] = [listener]


def wide_pending() -> bool:
    """Whether this thread has narrowed 64-bit host data lately (see :func:`wide_original`)."""
    return bool(getattr(local_state, "wide", None))


def wide_original(x: Any) -> Any:
    """The 64-bit host data ``x`` was narrowed from on this thread, or ``None``."""
    kept = getattr(local_state, "wide", None)
    if not kept:
        return None
    entry = kept.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]()


def install_canonicalize_handlers() -> None:
    from .._compat import internal_function, register_canonicalize_handler, typed_ndarray, typed_scalar

    canonical = internal_function("canonicalize_dtype")
    check_valid = internal_function("check_valid_dtype")
    typed = typed_ndarray

    def ndarray(x: np.ndarray) -> Any:
        dt = x.dtype
        if dt in NARROWED:
            policy = host_policy()
            if policy is not None:
                # np.asarray, not np.ascontiguousarray: that makes a 0-d array 1-d.
                return _remember_wide(
                    typed(np.asarray(narrow_host_array(np.asarray(x), policy), order="C")), x)
        check_valid(dt)
        return typed(np.asarray(x, dtype=canonical(dt), order="C"))

    def scalar(x: np.generic) -> Any:
        policy = host_policy()
        a = np.asarray(x)
        if policy is not None:
            return _remember_wide(typed(narrow_host_array(a, policy, scalar=True)), x)
        return typed(np.asarray(a, dtype=canonical(a.dtype)))

    def int_type(x: int, dtype: np.dtype) -> Any:
        return typed_scalar("TypedInt", x, dtype)

    def float_type(x: float, dtype: np.dtype) -> Any:
        return typed_scalar("TypedFloat", x, dtype)

    i64 = np.dtype(np.int64)
    f64 = np.dtype(np.float64)

    def python_int(x: int) -> Any:
        dtype = canonical(i64)
        if needs_int(x):
            policy = host_policy() if dtype == INT32 else None
            if policy is not None and _I64.min <= x <= _I64.max:
                # JAX raises OverflowError for such an int here.
                return int_type(narrow_python_int(x, policy, jax_refuses=True), INT32)
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} too large to convert to {dtype}")
        return int_type(x, dtype)

    def python_float(x: float) -> Any:
        dtype = canonical(f64)
        if dtype == FLOAT32 and needs_float(x) and host_policy() is not None:
            x = narrow_python_float(x, "host value")
        return float_type(x, dtype)

    register = register_canonicalize_handler
    register(np.ndarray, ndarray)
    for t in {np.int64, np.uint64, np.float64, np.complex128, np.longlong, np.ulonglong}:
        if np.dtype(t) in NARROWED:
            register(t, scalar)
    register(int, python_int)
    register(float, python_float)


def install_traced_constants() -> None:
    from .._compat import canonicalize_traced_constants

    canonicalize_traced_constants(lambda: host_policy() is not None)


def install_int_aval() -> None:
    from .._compat import aval_mapping, set_aval_mapping

    original = aval_mapping(int)

    def int_aval(x: int) -> Any:
        if needs_int(x):
            policy = host_policy()
            if policy is not None and _I64.min <= x <= _I64.max:
                if policy == IntegerPolicy.ERROR and x not in (_I64.max, _I64.min):
                    # raises, naming the user's line; JAX raises OverflowError here
                    narrow_python_int(x, policy, jax_refuses=True)
                return original(0)  # the weak int32 aval
        return original(x)

    int_aval.__wrapped__ = original  # type: ignore[attr-defined]
    set_aval_mapping(int, int_aval)
