"""Narrowing of constant values: sentinels, range policy, float rounding.

Pure numpy; no MLIR.  The demotion pass reads a constant's elements, asks
this module for the 32-bit elements and what happened to them, and writes a
new attribute.

Sentinels are the extremes a program uses for their meaning rather than
their magnitude (argmin/argmax initial values, clamps, masks, "no index"
markers): ``INT64_MAX``, ``INT64_MIN``, ``UINT64_MAX`` and float64's largest
finite value and its negation.  They map to the 32-bit extremes so that a
comparison against them keeps its outcome for every 32-bit value.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..ir.types import F32_MAX, F64_MAX, I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ..kinds import IntegerPolicy

__all__ = [
    "IntegerPolicy",
    "IntNarrowing",
    "FloatNarrowing",
    "narrow_integers",
    "narrow_floats",
    "parse_dense_literal",
]

_F64_MAX = np.float64(F64_MAX)
_F32_MAX = np.float32(F32_MAX)


@dataclasses.dataclass
class IntNarrowing:
    """Result of narrowing 64-bit integers.

    ``out_of_range`` counts non-sentinel elements outside the 32-bit range
    (narrowed by the policy unless it is ``"error"``), ``first_bad`` is the
    first such value.
    """

    values: np.ndarray | None
    sentinels: int
    out_of_range: int
    first_bad: int | None


@dataclasses.dataclass
class FloatNarrowing:
    """Result of rounding f64 (or complex128) elements to nearest f32.

    ``inexact`` counts elements that changed value (excluding sentinels and
    overflows), ``overflow`` finite elements that became infinite.
    """

    values: np.ndarray
    sentinels: int
    inexact: int
    overflow: int


def narrow_integers(values: np.ndarray, unsigned: bool, policy: IntegerPolicy | str) -> IntNarrowing:
    """Map 64-bit integer elements to 32 bits.

    Sentinels map to the 32-bit extremes.  Other elements outside the 32-bit
    range count as ``out_of_range``; with ``policy="error"`` no values are
    produced (``values`` is ``None``), with ``"saturate"`` they clip to the
    32-bit range and with ``"wrap"`` they keep their low 32 bits.
    """
    policy = IntegerPolicy.parse(policy, "integer_policy")
    if unsigned:
        v = values.astype(np.uint64, copy=False)
        sentinel = v == _U64.max
        bad = (v > _U32.max) & ~sentinel
        n_bad = int(np.count_nonzero(bad))
        first = int(v[bad].flat[0]) if n_bad else None
        if n_bad and policy is IntegerPolicy.ERROR:
            return IntNarrowing(None, int(np.count_nonzero(sentinel)), n_bad, first)
        if policy is IntegerPolicy.SATURATE:
            out = np.minimum(v, _U32.max).astype(np.uint32)
        else:
            out = v.astype(np.uint32)  # wrap: low 32 bits
        out[sentinel] = _U32.max
        return IntNarrowing(out, int(np.count_nonzero(sentinel)), n_bad, first)
    v = values.astype(np.int64, copy=False)
    hi = v == _I64.max
    lo = v == _I64.min
    bad = ((v > _I32.max) | (v < _I32.min)) & ~hi & ~lo
    n_bad = int(np.count_nonzero(bad))
    first = int(v[bad].flat[0]) if n_bad else None
    n_sent = int(np.count_nonzero(hi) + np.count_nonzero(lo))
    if n_bad and policy is IntegerPolicy.ERROR:
        return IntNarrowing(None, n_sent, n_bad, first)
    if policy is IntegerPolicy.SATURATE:
        out = np.clip(v, _I32.min, _I32.max).astype(np.int32)
    else:
        out = v.astype(np.int32)  # wrap: two's-complement low 32 bits
    out[hi] = _I32.max
    out[lo] = _I32.min
    return IntNarrowing(out, n_sent, n_bad, first)


def _narrow_real(v: np.ndarray) -> tuple[np.ndarray, int, int, int]:
    v = v.astype(np.float64, copy=False)
    hi = v == _F64_MAX
    lo = v == -_F64_MAX
    with np.errstate(over="ignore"):
        out = v.astype(np.float32)
    out[hi] = _F32_MAX
    out[lo] = -_F32_MAX
    finite_in = np.isfinite(v) & ~hi & ~lo
    overflow = finite_in & ~np.isfinite(out)
    back = out.astype(np.float64)
    inexact = finite_in & ~overflow & (back != v)
    return (
        out,
        int(np.count_nonzero(hi) + np.count_nonzero(lo)),
        int(np.count_nonzero(inexact)),
        int(np.count_nonzero(overflow)),
    )


def narrow_floats(values: np.ndarray) -> FloatNarrowing:
    """Round f64 or complex128 elements to the nearest f32 / complex64."""
    if np.iscomplexobj(values):
        re_, s1, i1, o1 = _narrow_real(values.real)
        im_, s2, i2, o2 = _narrow_real(values.imag)
        out = np.empty(values.shape, np.complex64)
        out.real = re_
        out.imag = im_
        return FloatNarrowing(out, s1 + s2, i1 + i2, o1 + o2)
    out, s, i, o = _narrow_real(values)
    return FloatNarrowing(out, s, i, o)


_NUM = re.compile(
    r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan)|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
)


def _scalar(tok: str, bits_dtype: type) -> float:
    if tok.startswith("0x") or tok.startswith("0X"):
        view = np.float64 if bits_dtype is np.uint64 else np.float32
        return float(np.array([int(tok, 16)], dtype=bits_dtype).view(view)[0])
    return float(tok)


def parse_dense_literal(body: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Parse the body of an MLIR ``dense<...>`` literal into a numpy array.

    Handles the hex form (``"0x..."``: raw little-endian element bytes,
    splat when it holds a single element) and the nested-list form, for real
    and complex element types.  Used for element types that jaxlib's
    bindings cannot read (complex) and for ``dense_resource`` blobs.
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    body = body.strip()
    if body.startswith('"'):
        raw = bytes.fromhex(body.strip('"')[2:])
        arr = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)
        if arr.size == 1 and count != 1:
            arr = np.full(count, arr[0], dtype)
        return arr.reshape(shape)
    bits = np.uint64 if dtype in (np.dtype(np.float64), np.dtype(np.complex128)) else np.uint32
    toks = [_scalar(t, bits) for t in _NUM.findall(body)]
    if np.issubdtype(dtype, np.complexfloating):
        pairs = np.array(toks, np.float64).reshape(-1, 2)
        arr = np.empty(pairs.shape[0], dtype)
        arr.real = pairs[:, 0]
        arr.imag = pairs[:, 1]
    else:
        arr = np.array(toks, dtype=np.float64).astype(dtype)
    if arr.size == 1 and count != 1:
        arr = np.full(count, arr[0], dtype)
    if arr.size != count:
        raise ValueError(f"dense literal has {arr.size} elements, expected {count}")
    return arr.reshape(shape)
