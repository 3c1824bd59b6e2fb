"""How far float32's output is from x64's: the kinds of error, the worst element, PRNG keys by
their bits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: The kinds of a float error: relative (normwise), or absolute where the reference is 0 throughout.
FLOAT = ("float", "absolute")


def error_of(ref: np.ndarray, got: np.ndarray) -> tuple[str, float, tuple[int, ...], float, float]:
    """How far ``got`` (float32's) is from ``ref`` (x64's): ``(kind, error,
    index, reference, got)``, kind ``"ok"``, ``"float"`` (relative),
    ``"absolute"`` (a float error where ``ref`` is 0 throughout: no relative
    error exists), ``"inf/nan"`` or ``"differs"``."""
    ref = _host(ref)
    got = _host(got)
    if ref.shape != got.shape or ref.size == 0:
        return "ok", 0.0, (), 0.0, 0.0
    if ref.dtype.kind not in "fc":
        bad = ref != got.astype(ref.dtype) if got.dtype.kind not in "fc" else ref != got
        if ref.dtype.itemsize == 8 and got.dtype.kind in "iu" and got.dtype.itemsize == 4:
            # the 64-bit extremes a host sentinel maps to stand for them (as no64 maps them)
            for wide, narrow in _INT_SENTINELS[ref.dtype.kind]:
                bad &= ~((ref == wide) & (got == narrow))
        if not bad.any():
            return "ok", 0.0, (), 0.0, 0.0
        i = _index(bad)
        return "differs", float("inf"), i, float(ref[i]), float(got[i])
    r = ref.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    # float64's extremes, which float32's stand for (a mask's "minus infinity")
    f64max, f32max = np.finfo(np.float64).max, float(np.finfo(np.float32).max)
    sentinel = (np.abs(r) == f64max) & (np.abs(g) == f32max) & (np.sign(r) == np.sign(g))
    finite = np.isfinite(r) & ~sentinel
    gross = finite & ~np.isfinite(g)
    if gross.any():
        i = _index(gross)
        return "inf/nan", float("inf"), i, float(np.abs(r[i])), float(np.abs(g[i]))
    both = finite & np.isfinite(g)
    if not both.any():
        return "ok", 0.0, (), 0.0, 0.0
    # normwise: the largest difference over the largest magnitude of the result
    diff = np.where(both, np.abs(g - r), 0.0)
    scale = float(np.max(np.abs(r[both])))
    i = _index(diff == diff.max())
    if scale == 0.0:  # x64 gives 0 throughout: the difference itself
        return "absolute", float(diff[i]), i, float(np.real(r[i])), float(np.real(g[i]))
    return "float", float(diff[i]) / scale, i, float(np.real(r[i])), float(np.real(g[i]))


#: The 64-bit integer sentinels and the 32-bit extremes no64 maps them to, by kind.
_INT_SENTINELS = {
    "i": ((np.iinfo(np.int64).max, np.iinfo(np.int32).max), (np.iinfo(np.int64).min, np.iinfo(np.int32).min)),
    "u": ((np.iinfo(np.uint64).max, np.iinfo(np.uint32).max),),
}


def is_prng_key(x: Any) -> bool:
    """Whether ``x`` is an array of PRNG keys (``jax.random.key``'s dtype)."""
    import jax

    dtype = getattr(x, "dtype", None)
    return dtype is not None and not isinstance(dtype, np.dtype) and jax.dtypes.issubdtype(
        dtype, jax.dtypes.prng_key)


def _host(x: Any) -> np.ndarray:
    """``x`` as numpy data: an array of PRNG keys as its keys' bits
    (``jax.random.key_data``), which both programs compute alike."""
    import jax

    return np.asarray(jax.random.key_data(x)) if is_prng_key(x) else np.asarray(x)


def worst_error(ref: Sequence[Any], got: Sequence[Any]) -> tuple[float, bool]:
    """The outputs' worst error, and whether it is absolute."""
    worst, absolute = 0.0, False
    for r, g in zip(ref, got):
        kind, e, *_ = error_of(r, g)
        if kind != "ok" and e > worst:
            worst, absolute = e, kind == "absolute"
    return worst, absolute


def _index(mask: np.ndarray) -> tuple[int, ...]:
    flat = int(np.argmax(mask.reshape(-1)))
    return tuple(int(k) for k in np.unravel_index(flat, mask.shape)) if mask.shape else ()
