"""Host values narrowed by no64's rules: sentinels, ranges, floats; refusals and warnings."""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import FloatPrecisionWarning, HostRangeError, PairRangeError, PairRangeWarning, PythonIntRangeError
from ...ir import pairs as P
from ...ir.locations import SourceLocation
from ...ir.types import F32_MAX as _F32_MAX, F64_MAX as _F64_MAX, I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ...kinds import EventKind, IntegerPolicy, RangePolicy
from ...transforms import constants as C
from ...transforms.pairs import split_pairs
from ..state import STATE
from .policy import INT64, NARROWED, UINT64
from .records import mapped_sentinels, record_event, user_source, user_source_at


def _describe(a: np.ndarray, scalar: bool) -> str:
    if scalar:
        return f"a numpy {a.dtype} scalar"
    article = "an" if str(a.dtype)[0] in "aeiou" else "a"
    return f"{article} {a.dtype}{list(a.shape)} array"


def _policy_hint() -> str:
    config = STATE.active_config()
    if config is not None and config.policy is RangePolicy.EXACT and STATE.x64_requested():
        # the hook: JAX passes the value as a 32-bit array, whatever the policy
        return (
            "under NO64_POLICY=exact the compile hook computes the x64 program exactly, but JAX's "
            "calling convention fixes a jit's arguments and arrays at 32 bits there (int32), so a "
            "64-bit value cannot cross into it whole; no64.jit(f, policy='exact') owns its "
            "boundary and takes 64-bit integer arguments whole (as 32-bit words)"
        )
    return (
        "no64 never wraps; NO64_INTEGER_POLICY (no64.jit: integer_policy=) 'saturate' or "
        "'wrap' narrows it anyway, recorded in no64.host_records()"
    )


def _sentinel_detail(a: np.ndarray, unsigned: bool) -> str:
    """Which 64-bit extremes ``a`` holds, and what they become."""
    if unsigned:
        return "mapped UINT64_MAX \u2192 UINT32_MAX"
    names = []
    if (a == _I64.max).any():
        names.append("INT64_MAX \u2192 INT32_MAX")
    if (a == _I64.min).any():
        names.append("INT64_MIN \u2192 INT32_MIN")
    return "mapped " + " and ".join(names)


#: (sentinel, its name, the 32-bit image, its name) per signedness.
PAIRS = {
    False: ((int(_I64.max), "INT64_MAX", int(_I32.max), "INT32_MAX"),
            (int(_I64.min), "INT64_MIN", int(_I32.min), "INT32_MIN")),
    True: ((int(_U64.max), "UINT64_MAX", int(_U32.max), "UINT32_MAX"),),
}


def _index_of(hit: np.ndarray) -> tuple[int, ...]:
    flat = int(np.argmax(hit.reshape(-1)))
    return tuple(int(i) for i in np.unravel_index(flat, hit.shape)) if hit.shape else ()


def _as_jax(policy: str, jax_refuses: bool) -> bool:
    """Whether an out-of-range host value is narrowed as JAX narrows it with
    x64 off rather than refused: the program did not ask for x64 (its
    meaning is JAX's 32-bit program, whose conversion keeps an integer's low
    32 bits and turns a float beyond float32 into ``inf``), JAX itself does
    not refuse the value, and the policy would refuse it."""
    return policy == IntegerPolicy.ERROR and not jax_refuses and not STATE.x64_requested()


_AS_JAX = "as JAX does with x64 off (the program did not ask for x64)"


def _refusal(jax_refuses: bool) -> type[HostRangeError]:
    """The error of a refused host integer: a :class:`PythonIntRangeError`
    (an ``OverflowError``) where JAX with x64 off refuses it too."""
    return PythonIntRangeError if jax_refuses else HostRangeError


def _refuse_collision(a: np.ndarray, unsigned: bool, op: str, scalar: bool,
                      what: str | None = None, jax_refuses: bool = False) -> None:
    """Refuse ``a`` if it holds a sentinel and, as an ordinary value, the
    32-bit extreme that sentinel maps to: in the 32-bit program the two would
    be one number.  Otherwise note which extremes now stand for sentinels."""
    for sentinel, name, image, image_name in PAIRS[unsigned]:
        is_sentinel = a == np.array(sentinel, a.dtype)
        if not is_sentinel.any():
            continue
        is_image = a == np.array(image, a.dtype)
        if is_image.any():
            source = user_source()
            what = what or _describe(a, scalar)
            if op != "host value":
                what = f"{what} ({op})"
            at_s, at_i = _index_of(is_sentinel), _index_of(is_image)
            raise _refusal(jax_refuses)(
                f"no64: {what} at {source.source or source.raw} holds both the sentinel "
                f"{name} ({sentinel}{f' at index {at_s}' if at_s else ''}) and {image_name} "
                f"({image}{f' at index {at_i}' if at_i else ''}): no64 maps {name} to "
                f"{image_name}, so the 32-bit program could not tell them apart. Use another "
                f"value for one of them, or no64.jit(..., policy='exact'), which computes with "
                f"the 64-bit values",
                value=sentinel, dtype=str(a.dtype), index=at_s, source=source,
            )
        _note_image(image)


def _note_image(image: int) -> None:
    """Note that a host sentinel became ``image`` at the user's current
    expression: a constant holding ``image`` used by an equation traced there
    may be that sentinel (an ``INT32_MAX`` of another expression of the line
    is an ordinary value)."""
    source, at = user_source_at()
    mapped_sentinels().add((image, source.file, source.line, at))


def _note_images(a: np.ndarray, unsigned: bool) -> None:
    for sentinel, _, image, _ in PAIRS[unsigned]:
        if (a == np.array(sentinel, a.dtype)).any():
            _note_image(image)


def narrow_host_array(a: np.ndarray, policy: str, *, op: str = "host value",
                      scalar: bool = False, what: str | None = None,
                      jax_refuses: bool = False) -> np.ndarray:
    """``a`` (of a 64-bit dtype) as its 32-bit dtype, by no64's rules.

    ``what`` describes the data in a refusal (default: ``a``'s numpy type);
    ``jax_refuses``: JAX with x64 off refuses an out-of-range integer of
    this data too (Python ints), so a refusal is a
    :class:`PythonIntRangeError`.

    Raises:
      HostRangeError: an integer outside the 32-bit range that is no
        sentinel, under the ``"error"`` policy.
    """
    dt = a.dtype
    if dt == INT64 or dt == UINT64:
        unsigned = dt == UINT64
        # 1-d: narrow_integers' saturating clip returns a scalar for 0-d input.
        res = C.narrow_integers(a.reshape(-1), unsigned, policy)
        if res.sentinels:
            _refuse_collision(a, unsigned, op, scalar, what, jax_refuses)
            record_event(EventKind.SENTINEL, op, _sentinel_detail(a, unsigned), res.sentinels)
        if res.out_of_range and res.values is None and _as_jax(policy, jax_refuses):
            res = C.narrow_integers(a.reshape(-1), unsigned, IntegerPolicy.WRAP)
            record_event(EventKind.WRAPPED, op, f"out-of-range integer {res.first_bad} kept its low 32 bits, "
                         + _AS_JAX, res.out_of_range)
        elif res.out_of_range:
            if res.values is None:
                info = _U32 if unsigned else _I32
                bad = (a > info.max) if unsigned else ((a > info.max) | (a < info.min))
                bad &= ~((a == _U64.max) if unsigned else ((a == _I64.max) | (a == _I64.min)))
                flat = int(np.argmax(bad.reshape(-1)))
                index = tuple(int(i) for i in np.unravel_index(flat, a.shape)) if a.shape else ()
                source = user_source()
                at = f" at index {index}" if index else ""
                more = f" (and {res.out_of_range - 1} more)" if res.out_of_range > 1 else ""
                assert res.first_bad is not None  # out of range: the first such element
                raise _refusal(jax_refuses)(
                    f"no64: {what or _describe(a, scalar)} at {source.source or source.raw} holds "
                    f"{res.first_bad}{at}{more}, outside {NARROWED[dt]}'s range and no "
                    f"sentinel; {_policy_hint()}",
                    value=int(res.first_bad), dtype=str(dt), index=index, source=source,
                )
            kind = EventKind.SATURATED if policy == IntegerPolicy.SATURATE else EventKind.WRAPPED
            record_event(kind, op, f"out-of-range integer {res.first_bad} narrowed by policy "
                         f"{str(policy)!r}", res.out_of_range)
        assert res.values is not None
        return res.values.reshape(a.shape)
    as_pairs = computes_otherwise_as_pairs(dt)
    if as_pairs:
        # f32 values entering pairs: below 2**-126 they flush
        flat = np.abs(a.reshape(-1))
        tiny = (flat != 0) & (flat < np.finfo(np.float32).tiny)
        if tiny.any():
            check_pair_range(a, P.RangeCheck(np.zeros_like(tiny), tiny), scalar=scalar, what=what, op=op)
    fres = C.narrow_floats(a.reshape(-1))
    if fres.sentinels:
        record_event(EventKind.SENTINEL, op, "mapped float64 max/lowest \u2192 float32 max/lowest", fres.sentinels)
    if fres.inexact:
        # (under pairs the x64 program holds the data to 48 bits: nothing to say)
        lost = _resolution(a.reshape(-1), op) if a.size >= 2 and not as_pairs else None
        record_event(EventKind.FLOAT_INEXACT, op, lost or "rounded to the nearest float32", fres.inexact)
    if fres.overflow:
        jax_like = _as_jax(policy, jax_refuses)
        if policy == IntegerPolicy.ERROR and not jax_like:
            _refuse_float_overflow(a, fres.overflow, scalar)
        record_event(EventKind.FLOAT_OVERFLOW, op, "beyond float32's range: became inf"
                     + (", " + _AS_JAX if jax_like else ""), fres.overflow)
    return fres.values.reshape(a.shape)


def _refuse_float_overflow(a: np.ndarray, count: int, scalar: bool, what: str | None = None) -> None:
    """Refuse 64-bit host floats beyond float32's range (they would become
    ``inf`` on a device without float64; float32 pairs have the same
    exponent range)."""
    flat = a.reshape(-1)
    parts = [flat.real, flat.imag] if np.iscomplexobj(flat) else [flat]
    big = np.finfo(np.float32).max
    fmax = np.finfo(np.float64).max
    bad = np.zeros(flat.shape, bool)
    for part in parts:
        mag = np.abs(part)
        bad |= np.isfinite(part) & (mag > big) & (mag != fmax)
    if not bad.any():
        return
    first = int(np.argmax(bad))
    index = tuple(int(i) for i in np.unravel_index(first, a.shape)) if a.shape else ()
    value = flat[first]
    source = user_source()
    at = f" at index {index}" if index else ""
    more = f" (and {count - 1} more)" if count > 1 else ""
    raise HostRangeError(
        f"no64: {what or _describe(a, scalar)} at {source.source or source.raw} holds {value!r}{at}{more}, "
        "beyond float32's range (|x| > 3.4e38): it would become inf under either float policy "
        "(NO64_FLOAT_POLICY=pairs keeps float32's range); scale the data, or let it become inf, "
        "recorded in no64.host_records(), with the out-of-range policy, which covers host floats "
        "too: NO64_INTEGER_POLICY (no64.jit: integer_policy=) 'saturate' or 'wrap'",
        value=value, dtype=str(a.dtype), index=index, source=source)


_warned_pair_range: set[tuple[str, int]] = set()


def check_float_range(a: np.ndarray, policy: str, what: str, op: str = "argument") -> np.ndarray:
    """Float64 host data ``a`` entering a program that asked for x64 as a
    jit argument (``what``): a finite value beyond float32's range (float64's
    largest and its negation, sentinels, excepted) becomes ``inf`` under
    either float policy, so it is refused as the host refuses such numpy
    data (:class:`HostRangeError`, naming the value and the user's line),
    or, under the policies ``saturate``/``wrap``, recorded (as ``op``).
    Returns the mask of such elements."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        over = np.isfinite(a) & (np.abs(a) > _F32_MAX) & (np.abs(a) != _F64_MAX)
    if over.any():
        if policy == IntegerPolicy.ERROR:
            _refuse_float_overflow(a, int(over.sum()), a.ndim == 0, what)
        record_event(EventKind.FLOAT_OVERFLOW, op, "beyond float32's range: became inf",
                     int(over.sum()))
    return over


def host_pairs(a: np.ndarray, policy: str, what: str, *, refuse: bool | None = None,
               op: str = "argument") -> np.ndarray:
    """Float64 host data ``a`` as the ``S x 2`` float32 pairs it enters a
    program computing float64 as pairs with (:func:`no64.split_pairs`; a
    zero low word takes the high word's sign, so that ``hi + lo`` is
    ``-0.0`` for ``-0.0``), checked by value at the user's line: float64's
    largest finite value and its smallest normal one, either sign, map to
    float32's (sentinels), any
    other finite value beyond float32's range is refused as the host refuses
    it (:class:`HostRangeError`; the policies ``saturate``/``wrap`` let it
    become ``inf``, recorded), and a value the pairs cannot hold within
    ``2**-48`` (below ``2**-78``: :func:`check_pair_range`) is warned of at
    the line, or refused under ``strict`` and ``exact`` (``refuse``: by
    default the active range policy's), recorded as ``op``."""
    a = np.asarray(a, dtype=np.float64)
    flat = a.reshape(-1)
    flat, mapped = P.float_sentinels_mapped(flat)
    if mapped:
        record_event(EventKind.SENTINEL, op, "mapped float64 max/lowest/tiny \u2192 float32 max/lowest/tiny",
                     mapped)
    over = check_float_range(flat.reshape(a.shape), policy, what, op).reshape(-1)
    flat = np.where(over, np.copysign(np.inf, flat), flat)
    check = P.range_check(flat)
    check = P.RangeCheck(np.zeros_like(check.over), check.under)  # (beyond the range: above)
    check_pair_range(flat.reshape(a.shape), check, refuse=refuse, scalar=a.ndim == 0, what=what, op=op)
    with warnings.catch_warnings():  # (just checked, at the user's line)
        warnings.simplefilter("ignore", PairRangeWarning)
        pairs = np.asarray(split_pairs(flat.reshape(a.shape)), dtype=np.float32)
    hi, lo = pairs[..., 0], pairs[..., 1]
    pairs[..., 1] = np.where(lo == 0, np.copysign(np.float32(0), hi), lo)
    return pairs


def computes_otherwise_as_pairs(dtype: np.dtype) -> bool:
    """Whether float64 host data of ``dtype`` enters pairs under the active
    configuration (``NO64_FLOAT_POLICY=pairs``)."""
    from ...kinds import FloatPolicy

    config = STATE.active_config()
    return (np.dtype(dtype).kind in "fc" and config is not None
            and config.float_policy is FloatPolicy.PAIRS)


def check_pair_range(a: np.ndarray, check: "P.RangeCheck | None" = None, *, refuse: bool | None = None,
                     scalar: bool = False, what: str | None = None, op: str = "host value") -> None:
    """Float64 host data ``a`` entering f32 pairs: elements outside their
    range (``check``, by default :func:`no64.ir.pairs.range_check` of
    ``a``) are refused (:class:`no64.PairRangeError`, under ``refuse``: by
    default the active range policy ``strict`` or ``exact``) or warned of
    (:class:`no64.PairRangeWarning`, once per user line) and recorded
    (``pair-range``), naming the caller's line.  Complex data: its real
    and imaginary parts."""
    flat = np.asarray(a).reshape(-1)
    if check is None:
        if np.iscomplexobj(flat):
            re, im = P.range_check(flat.real), P.range_check(flat.imag)
            check = P.RangeCheck(re.over | im.over, re.under | im.under)
        else:
            check = P.range_check(flat)
    first = check.first()
    if first < 0:
        return
    if refuse is None:
        config = STATE.active_config()
        refuse = config is not None and config.policy in (RangePolicy.STRICT, RangePolicy.EXACT)
    value = flat[first]
    part = value.real if P.range_check(value.real).bad.any() else value.imag
    count = int(check.bad.sum())
    index = tuple(int(i) for i in np.unravel_index(first, np.shape(a))) if np.shape(a) else ()
    source = user_source()
    at = f"at index {index}, " if index else ""
    more = f" ({count} such elements)" if count > 1 else ""
    detail = f"{at}{check.describe(float(part))}{more}"
    message = f"no64: {what or _describe(np.asarray(a), scalar)} at {source.source or source.raw}: {detail}"
    if refuse:
        raise PairRangeError(message + "; refused under policy 'strict'/'exact' (the default policy warns)",
                             op=op, location=source, value=float(part), index=index, count=count)
    warn_once_at(source, message, PairRangeWarning, _warned_pair_range)
    record_event(EventKind.PAIR_RANGE, op, detail, count, source)


#: Fewer f32 steps than this across a float64 array's values: f32 cannot
#: tell them apart well enough to compute with their differences.
_RESOLVED_STEPS = 16
_warned_resolution: set[tuple[str, int]] = set()
#: user lines already warned of a host sentinel read as a number or met
warned_sentinels: set[tuple[str, int]] = set()


def clear_warned() -> None:
    """Forget which lines were warned about (for tests)."""
    _warned_resolution.clear()
    warned_sentinels.clear()
    _warned_pair_range.clear()


def _resolution(flat: np.ndarray, op: str) -> str | None:
    """Where f32 resolves the spread of a float64 array's values in fewer
    than 16 steps -- timestamps in seconds since 1970 a fraction of a second
    apart: f32 holds them 128 s apart, so their differences are lost --
    warn (:class:`no64.FloatPrecisionWarning`, once per user line) and
    return the detail for the host record; else None.  Complex data: its
    real parts, then its imaginary parts."""
    if np.iscomplexobj(flat):
        return _resolution(flat.real, op) or _resolution(flat.imag, op)
    finite = flat[np.isfinite(flat)]
    if finite.size < 2:
        return None
    lo, hi = float(finite.min()), float(finite.max())
    span = hi - lo
    if span <= 0 or (lo < 0 < hi):
        return None
    near = min(abs(lo), abs(hi))
    ulp = float(np.spacing(np.float32(near)))
    if not ulp > 0:
        return None  # (near 0 with denormals flushed, as in a callback on XLA's threads: f32 resolves it)
    steps = span / ulp
    if steps >= _RESOLVED_STEPS:
        return None
    source = user_source()
    detail = (f"float64 values from {lo!r} to {hi!r} ({span:.3g} apart at most): f32 spaces values "
              f"there {ulp:.3g} apart, so it keeps about {int(steps) + 1} distinct values of them and "
              "their differences are lost; float_policy=\"pairs\" holds them to 48 bits")
    warn_once_at(source, f"no64: {op}: {detail}", FloatPrecisionWarning, _warned_resolution)
    return detail


def warn_once_at(source: SourceLocation, message: str, category: type[Warning],
                 warned: set[tuple[str, int]]) -> bool:
    """Warn ``message`` at ``source``, the user's line, unless a line of
    ``warned`` already had it; whether ``source`` has a line at all."""
    if source.file is None or source.line is None:
        return False
    key = (source.file, source.line)
    with STATE.host_lock:
        if key in warned:
            return True
        warned.add(key)
    warnings.warn_explicit(message, category, source.file, source.line)
    return True


def narrow_python_int(v: int, policy: str, *, unsigned: bool = False,
                      op: str = "host value", jax_refuses: bool = False) -> int:
    """A Python int outside the 32-bit range but inside the 64-bit one, by
    no64's rules (``unsigned``: for a uint32 target).  Ints already in range,
    or beyond 64 bits, are returned unchanged.  ``jax_refuses``: JAX with
    x64 off refuses ``v`` here too, so a refusal is a
    :class:`PythonIntRangeError` (an ``OverflowError``)."""
    lo, hi = (0, _U32.max) if unsigned else (_I32.min, _I32.max)
    if lo <= v <= hi:
        return v
    if unsigned:
        if not 0 <= v <= _U64.max:
            return v
        a = np.array([v], np.uint64)
    else:
        if not _I64.min <= v <= _I64.max:
            return v
        a = np.array([v], np.int64)
    res = C.narrow_integers(a, unsigned, policy)
    if res.sentinels:
        _note_images(a, unsigned)
        record_event(EventKind.SENTINEL, op, _sentinel_detail(a, unsigned), 1)
    elif res.values is None and _as_jax(policy, jax_refuses):
        res = C.narrow_integers(a, unsigned, IntegerPolicy.WRAP)
        record_event(EventKind.WRAPPED, op, f"out-of-range integer {v} kept its low 32 bits, " + _AS_JAX, 1)
    elif res.values is None:
        source = user_source()
        raise _refusal(jax_refuses)(
            f"no64: the Python int {v} at {source.source or source.raw} is outside "
            f"{'uint32' if unsigned else 'int32'}'s range and no sentinel; {_policy_hint()}",
            value=v, dtype="int", index=(), source=source,
        )
    else:
        kind = EventKind.SATURATED if policy == IntegerPolicy.SATURATE else EventKind.WRAPPED
        record_event(kind, op, f"out-of-range integer {v} narrowed by policy {str(policy)!r}", 1)
    assert res.values is not None
    return int(res.values[0])


def narrow_python_float(v: float, op: str) -> float:
    """Float64 sentinels map to float32's; a finite value beyond float32 is
    recorded (it becomes inf).  Rounding of ordinary Python floats is not
    recorded: they are weakly typed and round to float32 in the x64 program
    too wherever they meet float32 arrays."""
    if v == _F64_MAX or v == -_F64_MAX:
        record_event(EventKind.SENTINEL, op, "mapped float64 max/lowest \u2192 float32 max/lowest", 1)
        return _F32_MAX if v > 0 else -_F32_MAX
    if abs(v) > _F32_MAX and v == v and abs(v) != float("inf"):
        record_event(EventKind.FLOAT_OVERFLOW, op, "beyond float32's range: became inf", 1)
    return v


def needs_float(v: float) -> bool:
    return abs(v) > _F32_MAX and abs(v) != float("inf")


def needs_int(v: int) -> bool:
    return not (_I32.min <= v <= _I32.max)


