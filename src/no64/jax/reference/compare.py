"""Inputs narrowed as the demoted program takes them, outputs compared with the 64-bit original's
(:class:`Tolerance`), and word pairs split and joined at a converted program's boundary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir._mlir import ir
from ...ir.types import (
    DTYPE_KINDS,
    F32_MAX as _F32_MAX,
    F64_MAX as _F64_MAX,
    I32 as _I32,
    I64 as _I64,
    NARROWED_DTYPES,
    U32 as _U32,
    U64 as _U64,
)
from ...report import DemotionReport, counted
from ...transforms.emulate import split_words
from .modules import ArraySpec, main_signature

# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def narrow_dtype(dtype: Any) -> np.dtype:
    """The dtype a value of ``dtype`` has after demotion (unchanged if not 64-bit)."""
    d = np.dtype(dtype)
    return NARROWED_DTYPES.get(d, d)


def narrow_inputs(args: Sequence[Any]) -> list[np.ndarray]:
    """Cast each input to its narrowed dtype; integers must fit exactly.

    Raises ``ValueError`` when a 64-bit integer input does not fit its 32-bit
    type: such an input cannot be given to the demoted program unchanged.
    """
    out = []
    for i, arg in enumerate(args):
        a = np.asarray(arg)
        target = narrow_dtype(a.dtype)
        if target == a.dtype:
            out.append(a)
            continue
        if np.issubdtype(target, np.integer) and a.size:
            info = np.iinfo(target)
            if a.min() < info.min or a.max() > info.max:
                raise ValueError(
                    f"input #{i} ({a.dtype}) has values in [{a.min()}, {a.max()}], "
                    f"outside {target}"
                )
        out.append(a.astype(target))
    return out


@dataclass(frozen=True)
class Tolerance:
    """How a floating-point output of a demoted program is compared.

    An element ``d`` of the demoted output passes against the reference
    element ``r`` when::

        |d - r| <= rtol * |r| + atol

    where ``atol`` defaults to ``rtol * max|ref|`` over the output's finite,
    non-sentinel elements (sentinels must map exactly instead).  The
    relative term bounds the error of each element; the ``atol`` term makes
    the test norm-wise, so elements that are small only through cancellation
    (a gradient entry near zero, a centred value) are measured against the
    output's scale.  That is how f32 rounding error behaves: a sum of ``n``
    terms is off by about ``n * eps * sum|terms|``, not by ``eps`` times the
    (possibly tiny) result.

    The default ``rtol=1e-4`` is about 840 f32 ulps (eps = 1.19e-7): loose
    enough for the few hundred roundings of a training step, a transformer
    gradient or an FFT, tight enough that a wrong rewrite (a dropped term, a
    wrong constant, a truncated integer) fails by orders of magnitude.
    Non-finite values must sit at the same places with the same value (NaN
    matches NaN, ``inf`` matches ``inf`` of the same sign).  Complex outputs
    use the modulus of the difference.  Integer and boolean outputs must be
    equal.
    """

    rtol: float = 1e-4
    atol: float | None = None

    def atol_for(self, reference: np.ndarray) -> float:
        """The absolute tolerance used for ``reference``."""
        if self.atol is not None:
            return self.atol
        finite = np.abs(reference[np.isfinite(reference)])
        return self.rtol * float(finite.max()) if finite.size else 0.0


def expected_after_demotion(reference: np.ndarray) -> np.ndarray:
    """The values a correct demoted program returns for ``reference``.

    Equal to ``reference`` (widened to int64/uint64/float64/complex128 for
    comparison) except that sentinels map to their 32-bit counterparts, as
    demotion maps sentinel constants: ``INT64_MAX``/``INT64_MIN`` to
    ``INT32_MAX``/``INT32_MIN``, ``UINT64_MAX`` to ``UINT32_MAX`` and
    float64's largest finite value (either sign) to float32's.  A masked
    ``min`` whose row is all masked returns ``INT64_MAX`` in the reference,
    and should return ``INT32_MAX`` after demotion.  Outputs of other dtypes
    are only widened.  This is written independently of
    :mod:`no64.transforms.constants`, so the check does not trust the code it checks.
    """
    if reference.dtype == np.int64:
        out = reference.copy()
        out[reference == _I64.max] = _I32.max
        out[reference == _I64.min] = _I32.min
        return out
    if reference.dtype == np.uint64:
        out = reference.copy()
        out[reference == _U64.max] = _U32.max
        return out
    if reference.dtype == np.bool_ or np.issubdtype(reference.dtype, np.signedinteger):
        return reference.astype(np.int64)
    if np.issubdtype(reference.dtype, np.unsignedinteger):
        return reference.astype(np.uint64)

    def real(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        if reference.dtype in (np.float64, np.complex128):
            v[v == _F64_MAX] = _F32_MAX
            v[v == -_F64_MAX] = -_F32_MAX
        return v

    if np.iscomplexobj(reference):
        return real(reference.real) + 1j * real(reference.imag)
    return real(reference)


def _float_sentinels(reference: np.ndarray) -> np.ndarray:
    """Where a float64/complex128 reference holds +-finfo(float64).max."""
    if reference.dtype == np.float64:
        return np.abs(reference) == _F64_MAX
    if reference.dtype == np.complex128:
        return (np.abs(reference.real) == _F64_MAX) | (np.abs(reference.imag) == _F64_MAX)
    return np.zeros(reference.shape, dtype=bool)


@dataclass
class OutputComparison:
    """How one output of the demoted program compares with the reference."""

    index: int
    name: str
    reference_dtype: np.dtype
    demoted_dtype: np.dtype
    shape: tuple[int, ...]
    exact: bool  # compared for equality (integers, booleans)
    max_abs_error: float
    max_rel_error: float  # max |d - r| / |r| over finite r != 0
    rtol: float = 0.0
    atol: float = 0.0
    mismatches: int = 0
    worst: str = ""  # the worst elements, when there are mismatches

    @property
    def ok(self) -> bool:
        """Whether every element is within tolerance."""
        return self.mismatches == 0

    def __str__(self) -> str:
        kind = "exact" if self.exact else f"rtol={self.rtol:g} atol={self.atol:.3g}"
        status = "ok" if self.ok else counted(self.mismatches, "mismatching element")
        return (
            f"{self.name}: {self.reference_dtype}->{self.demoted_dtype}{list(self.shape)} "
            f"max_abs={self.max_abs_error:.3g} max_rel={self.max_rel_error:.3g} ({kind}) {status}"
        )


def _worst(ref: np.ndarray, got: np.ndarray, err: np.ndarray, bad: np.ndarray, limit: int = 5) -> str:
    flat_bad = np.flatnonzero(bad.reshape(-1))
    order = flat_bad[np.argsort(-np.nan_to_num(err.reshape(-1)[flat_bad], nan=np.inf))]
    shown = []
    for flat in order[:limit]:
        idx = tuple(int(i) for i in np.unravel_index(flat, ref.shape)) if ref.shape else ()
        shown.append(
            f"at {idx}: reference {ref.reshape(-1)[flat]!r}, demoted {got.reshape(-1)[flat]!r}"
        )
    return "; ".join(shown)


def compare_output(
    reference: np.ndarray,
    demoted: np.ndarray,
    *,
    name: str = "output",
    index: int = 0,
    tolerance: Tolerance | None = None,
    wide: bool = False,
) -> OutputComparison:
    """Compare one demoted output with its 64-bit reference (no raising).

    The demoted output must have the reference's shape and its narrowed dtype
    (else ``AssertionError``).  Sentinels are mapped first
    (:func:`expected_after_demotion`); integers and booleans must then be
    equal, floats within ``tolerance`` (:class:`Tolerance`).  A ``wide``
    output (an emulated one, joined from its words) must keep the
    reference's 64-bit dtype and equal it bit for bit, sentinels included.
    """
    tol = tolerance or Tolerance()
    reference = np.asarray(reference)
    demoted = np.asarray(demoted)
    expected_dtype = reference.dtype if wide else narrow_dtype(reference.dtype)
    if demoted.dtype != expected_dtype or demoted.shape != reference.shape:
        raise AssertionError(
            f"{name}: the reference is {reference.dtype}{list(reference.shape)}, so the "
            f"demoted program should return {expected_dtype}{list(reference.shape)}, "
            f"but it returned {demoted.dtype}{list(demoted.shape)}"
        )
    expected = reference if wide else expected_after_demotion(reference)
    if not np.issubdtype(reference.dtype, np.inexact):
        got = demoted.astype(expected.dtype)
        bad = expected != got
        err = np.abs(expected.astype(np.float64) - got.astype(np.float64))
        rel = err / np.maximum(np.abs(expected.astype(np.float64)), 1.0)
        return OutputComparison(
            index, name, reference.dtype, demoted.dtype, reference.shape, True,
            float(err.max(initial=0.0)), float(rel.max(initial=0.0)),
            mismatches=int(bad.sum()),
            worst=_worst(reference, demoted, err, bad) if bad.any() else "",
        )
    got = demoted.astype(expected.dtype)
    finite = np.isfinite(expected)
    both_finite = finite & np.isfinite(got)
    sentinel = _float_sentinels(reference)
    with np.errstate(invalid="ignore", over="ignore"):
        same_nonfinite = np.isnan(expected) & np.isnan(got) | (~finite & (expected == got))
        err = np.where(both_finite, np.abs(got - expected), np.where(same_nonfinite, 0.0, np.inf))
        magnitude = np.where(finite, np.abs(expected), 0.0)
        rel = np.where(both_finite & (magnitude > 0), err / np.where(magnitude > 0, magnitude, 1.0), 0.0)
    # Sentinels must map exactly and do not set the output's scale.
    atol = tol.atol_for(expected[~sentinel])
    bad = ~(err <= tol.rtol * magnitude + atol) | (sentinel & (err != 0))
    return OutputComparison(
        index, name, reference.dtype, demoted.dtype, reference.shape, False,
        float(err.max(initial=0.0)), float(rel.max(initial=0.0)),
        rtol=tol.rtol, atol=atol, mismatches=int(bad.sum()),
        worst=_worst(reference, demoted, err, bad) if bad.any() else "",
    )


def compare_outputs(
    reference: Sequence[np.ndarray],
    demoted: Sequence[np.ndarray],
    *,
    names: Sequence[str] | None = None,
    tolerance: Tolerance | None = None,
    what: str = "demoted program",
    wide: Sequence[int] = (),
) -> list[OutputComparison]:
    """Compare every output (see :func:`compare_output`); raise on any mismatch.

    Raises:
      AssertionError: naming each mismatching output, its largest errors and
        tolerance, and its worst elements.
    """
    if len(reference) != len(demoted):
        raise AssertionError(
            f"{what} returned {len(demoted)} outputs, the reference {len(reference)}"
        )
    names = list(names) if names is not None else [f"result #{i}" for i in range(len(reference))]
    results = [
        compare_output(r, d, name=n, index=i, tolerance=tolerance, wide=i in wide)
        for i, (n, r, d) in enumerate(zip(names, reference, demoted))
    ]
    failures = [o for o in results if not o.ok]
    if failures:
        lines = [f"{what} differs from the 64-bit reference:"]
        for o in failures:
            lines.append(f"  {o}")
            lines.append(f"    worst: {o.worst}")
        raise AssertionError("\n".join(lines))
    return results


@dataclass
class ComparisonResult:
    """Outcome of :func:`compare_with_reference`.

    ``original`` is the 64-bit module, ``demoted`` the rewritten copy that
    ran, ``report`` what :func:`no64.demote` returned; the value lists hold
    the flat outputs of both runs.
    """

    outputs: list[OutputComparison]
    report: DemotionReport
    original: ir.Module
    demoted: ir.Module
    reference_values: list[np.ndarray] = field(repr=False)
    demoted_values: list[np.ndarray] = field(repr=False)

    @property
    def max_abs_error(self) -> float:
        """Largest absolute error over all outputs."""
        return max((o.max_abs_error for o in self.outputs), default=0.0)

    @property
    def max_rel_error(self) -> float:
        """Largest elementwise relative error over all outputs."""
        return max((o.max_rel_error for o in self.outputs), default=0.0)

    def summary(self) -> str:
        """One line per output."""
        return "\n".join(str(o) for o in self.outputs)


def _word_pairs(before: Sequence[ArraySpec], after: Sequence[ArraySpec]) -> list[int]:
    out = []
    for j, (b, a) in enumerate(zip(before, after)):
        if np.dtype(b.dtype).itemsize == 8 and np.dtype(b.dtype).kind in "iu" \
                and tuple(a.shape) == tuple(b.shape) + (2,) and np.dtype(a.dtype).itemsize == 4:
            out.append(j)
    return out


def word_pair_outputs(original: ir.Module, converted: ir.Module) -> list[int]:
    """Indices of the entry function's results that the conversion returns
    as 32-bit word pairs: a 64-bit integer result of shape ``S`` that became
    a 32-bit one of shape ``S x 2``."""
    return _word_pairs(main_signature(original)[1], main_signature(converted)[1])


def word_pair_inputs(original: ir.Module, converted: ir.Module) -> list[int]:
    """Indices of the entry function's arguments that enter the converted
    module as 32-bit word pairs (``policy="exact"``: a 64-bit integer
    argument of shape ``S`` that became a 32-bit one of shape ``S x 2``)."""
    return _word_pairs(main_signature(original)[0], main_signature(converted)[0])


def converted_inputs(args: Sequence[Any], words: Sequence[int] = (),
                     keep: Sequence[str] = ()) -> list[np.ndarray]:
    """The inputs of a converted module for the original's ``args``: the
    arguments at ``words`` (``report.emulated_inputs``) as their 32-bit word
    pairs (:func:`no64.split_words`), those of a 64-bit type the module
    kept (``keep``: ``report.kept_native``) as they are, every other one
    cast to its narrowed dtype (:func:`narrow_inputs`: its integers must
    fit)."""
    wide = set(words)
    out = []
    for i, arg in enumerate(args):
        if i in wide:
            out.append(split_words(np.asarray(arg)))
        elif DTYPE_KINDS.get(np.asarray(arg).dtype) in keep:
            out.append(np.asarray(arg))
        else:
            try:
                out.extend(narrow_inputs([arg]))
            except ValueError as exc:
                raise ValueError(str(exc).replace("input #0", f"input #{i}", 1)) from None
    return out
