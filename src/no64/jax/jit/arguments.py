"""Host-side narrowing of :func:`no64.jit`'s inputs: 64-bit host data
converted to its 32-bit type by the pass's rules (sentinels to the 32-bit
extremes), any other value the 32-bit type cannot hold refused with
:class:`~no64.errors.ArgumentRangeError` at the caller's line."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ...errors import ArgumentRangeError, No64Error, TracedArgumentError
from ...ir.types import (
    F32_MAX as _F32_MAX,
    F64_MAX as _F64_MAX,
    I32 as _I32,
    I64 as _I64,
    NARROWED_DTYPES as NARROWED,
    U32 as _U32,
    U64 as _U64,
)
from ...kinds import IntegerPolicy
from .. import host

#: 64-bit dtype -> the 32-bit dtype no64 gives it.
WIDENED = {v: k for k, v in NARROWED.items()}

def _first_bad(bad: np.ndarray) -> tuple[int, ...] | None:
    if not bad.any():
        return None
    flat = int(np.argmax(bad.reshape(-1)))
    return tuple(int(i) for i in np.unravel_index(flat, bad.shape)) if bad.shape else ()


def _float_out_of_range(a: np.ndarray) -> np.ndarray:
    """Finite elements beyond float32's largest finite value, sentinels excepted."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(a) & (np.abs(a) > _F32_MAX) & (np.abs(a) != _F64_MAX)


def _range_problem(a: np.ndarray, policy: str, sentinels: bool = True
                   ) -> tuple[tuple[int, ...], Any, str] | None:
    """(index, value, reason) of the first element no64 refuses to narrow.

    Integers outside the 32-bit range are refused under the ``"error"``
    policy unless they are sentinels (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``), which map to the 32-bit extremes; finite floats beyond
    float32's largest finite value are refused unless they are float64's
    largest finite value or its negation (sentinels too).  With
    ``sentinels=False`` (``policy="exact"``, whose inputs are plain 32-bit
    values) integer sentinels are refused like any other out-of-range value.
    """
    dt = a.dtype
    if dt == np.int64 or dt == np.uint64:
        info: np.iinfo[Any]
        if policy != IntegerPolicy.ERROR or a.size == 0:
            return None
        if dt == np.int64:
            bad = (a < _I32.min) | (a > _I32.max)
            if sentinels:
                bad &= (a != _I64.max) & (a != _I64.min)
            info = _I32
        else:
            bad = a > _U32.max
            if sentinels:
                bad &= a != _U64.max
            info = _U32
        idx = _first_bad(bad)
        if idx is None:
            return None
        return idx, a[idx].item(), _integer_reason(f"{NARROWED[dt]}'s range [{info.min}, {info.max}]",
                                                   sentinels)
    if dt == np.float64:
        idx = _first_bad(_float_out_of_range(a))
        if idx is None:
            return None
        return idx, a[idx].item(), f"a finite value beyond float32's largest ({_F32_MAX:.8g}); it would become inf"
    if dt == np.complex128:
        idx = _first_bad(_float_out_of_range(a.real) | _float_out_of_range(a.imag))
        if idx is None:
            return None
        return idx, a[idx].item(), f"a part beyond float32's largest finite value ({_F32_MAX:.8g}); it would become inf"
    return None


def _integer_reason(what: str, sentinels: bool) -> str:
    if not sentinels:
        return (f"outside {what}; under policy='exact' the program takes this input as a 32-bit "
                "value and no64 maps no sentinel there (integer_policy='saturate' or 'wrap' "
                "narrows it anyway)")
    return (f"outside {what} and no sentinel; no64 never wraps (integer_policy='saturate' or "
            "'wrap' narrows it anyway)")


def _python_problem(x: int | float | complex, policy: str, sentinels: bool = True) -> str | None:
    if isinstance(x, int):
        if _I32.min <= x <= _I32.max or (sentinels and x in (_I64.max, _I64.min)):
            return None
        if policy != IntegerPolicy.ERROR and _I64.min <= x <= _I64.max:
            return None
        return _integer_reason(f"int32's range [{_I32.min}, {_I32.max}]", sentinels)
    parts = (x.real, x.imag) if isinstance(x, complex) else (x,)
    for p in parts:
        if np.isfinite(p) and abs(p) > _F32_MAX and abs(p) != _F64_MAX:
            return f"beyond float32's largest finite value ({_F32_MAX:.8g}); it would become inf"
    return None


def narrow_argument(x: Any, path: str = "argument", *, where: str = "no64",
                    integer_policy: str = "error", sentinels: bool = True) -> Any:
    """``x`` with its 64-bit values converted to 32 bits, by no64's rules.

    Handles numpy arrays and scalars, Python ``int``/``float``/``complex``
    (checked, then left as Python numbers so JAX keeps them weakly typed) and
    concrete ``jax.Array`` values (fetched, checked, converted and put back
    with the same sharding).  Anything else is returned unchanged.  Sentinels
    (``INT64_MAX``, ``INT64_MIN``, ``UINT64_MAX``, float64's largest finite
    value and its negation) map to the 32-bit extremes; other integers
    outside the 32-bit range follow ``integer_policy``; narrowings that are
    not exact are recorded in :func:`no64.host_records`.  ``sentinels=False``
    refuses integer sentinels too (the inputs of ``policy="exact"``).

    Raises:
      ArgumentRangeError: a value no64 refuses to narrow; the message names
        ``path``, the first offending index and the caller's source line.
    """
    if isinstance(x, (bool, np.bool_)) or x is None:
        return x
    op = f"{where} {path}"
    if isinstance(x, (int, float, complex)):
        problem = _python_problem(x, integer_policy, sentinels)
        if problem:
            raise ArgumentRangeError(
                f"{where}: {path} is the Python {type(x).__name__} {x!r}, {problem}{at_user()}",
                path=path, index=(), value=x, dtype=type(x).__name__,
                target={int: "int32", float: "float32", complex: "complex64"}[type(x)],
            )
        if isinstance(x, int) and not _I32.min <= x <= _I32.max:
            return host.narrow_python_int(x, integer_policy, op=op)
        if isinstance(x, float) and abs(x) == _F64_MAX:
            return host.narrow_python_float(x, op)
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        target = NARROWED.get(x.dtype)
        if target is None:
            return x
        a = np.asarray(x)
        _raise_if_out_of_range(a, path, where, integer_policy, sentinels)
        out = host.narrow_host_array(a, integer_policy, op=op)
        return out if isinstance(x, np.ndarray) else out[()]
    if isinstance(x, jax.core.Tracer):
        if _narrowed_dtype(x.dtype) is not None:
            raise TracedArgumentError(
                f"{where}: {path} is a traced {x.dtype} value: no64.jit is being called inside "
                "another transformation (jax.jit, grad, vmap, ...) that traces with x64 on. "
                "Apply no64.jit outermost, e.g. no64.jit(jax.grad(f)), so it sees the "
                "concrete inputs and can convert them with a range check."
            )
        return x
    if isinstance(x, jax.Array):
        target = _narrowed_dtype(x.dtype)
        if target is None:
            return x
        if not x.is_fully_addressable:
            raise No64Error(
                f"{where}: {path} is a {x.dtype} jax.Array spanning several processes; "
                "no64 converts 64-bit arrays on the host and cannot fetch it. Pass 32-bit data."
            )
        a = np.asarray(x)
        _raise_if_out_of_range(a, path, where, integer_policy, sentinels)
        return jax.device_put(host.narrow_host_array(a, integer_policy, op=op), x.sharding)
    return x


def check_argument_range(x: Any, path: str = "argument", *, where: str = "no64",
                         integer_policy: str = "error") -> None:
    """The range check :func:`narrow_argument` makes of a float64 numpy
    value or ``jax.Array`` ``x``, without converting it: a finite value
    beyond float32's range (float64's largest and its negation excepted)
    is refused (:class:`ArgumentRangeError`).  For an input that enters as
    float32 pairs (``float_policy="pairs"``), whose range is float32's."""
    a = np.asarray(x)
    _raise_if_out_of_range(a, path, where, integer_policy)


def at_user() -> str:
    source = host.user_source()
    return f" (at {source.source})" if source.source else ""


def _raise_if_out_of_range(a: np.ndarray, path: str, where: str, policy: str,
                           sentinels: bool = True) -> None:
    problem = _range_problem(a, policy, sentinels)
    if problem is None:
        return
    idx, value, reason = problem
    at = f" at index {idx}" if idx else ""
    raise ArgumentRangeError(
        f"{where}: {path} ({a.dtype}{list(a.shape)}) holds {value!r}{at}, {reason}{at_user()}",
        path=path, index=idx, value=value, dtype=str(a.dtype), target=str(NARROWED[a.dtype]),
    )


def _narrowed_dtype(dtype: Any) -> np.dtype | None:
    """The 32-bit dtype for a 64-bit ``dtype``; ``None`` for others (and PRNG key dtypes)."""
    if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
        return None
    try:
        return NARROWED.get(np.dtype(dtype))
    except TypeError:
        return None


def needs_narrowing(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, complex)):
        return True  # checked: Python numbers have no fixed width
    dt = getattr(x, "dtype", None)
    return dt is not None and _narrowed_dtype(dt) is not None


def whole_float(x: Any) -> bool:
    """A concrete float64 input (a numpy value or ``jax.Array``), which
    ``float_policy="pairs"`` passes whole: it enters as float32 pairs."""
    if isinstance(x, jax.core.Tracer) or not isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return False
    try:
        return np.dtype(x.dtype) == np.dtype(np.float64)
    except TypeError:
        return False  # PRNG key dtypes


def whole_integer(x: Any) -> bool:
    """A concrete 64-bit integer input (a Python int, an int64/uint64 numpy
    value or ``jax.Array``), which ``policy="exact"`` passes whole."""
    if isinstance(x, (bool, np.bool_)) or isinstance(x, jax.core.Tracer):
        return False
    if isinstance(x, int):
        return True
    if not isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return False
    try:
        return np.dtype(x.dtype) in (np.dtype(np.int64), np.dtype(np.uint64))
    except TypeError:
        return False  # PRNG key dtypes
