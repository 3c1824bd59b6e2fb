"""Host values: no64, not JAX, narrows 64-bit host data to 32 bits.

With ``jax_enable_x64`` off, JAX converts 64-bit host data to 32 bits by
blind truncation: ``np.int64(INT64_MAX)`` becomes ``-1``, ``INT64_MIN``
becomes ``0``, ``np.array([2**40])`` becomes ``[0]``, a float64 ``1e300``
becomes ``inf``, and a Python int outside the int32 range is an
``OverflowError``.  no64 turns x64 off for a platform without 64-bit types
(``NO64_PLATFORMS``, :func:`no64.install`) and inside :func:`no64.jit`, so
while it does, every such conversion goes through the rules the pass applies
to module constants (:mod:`no64.transforms.constants`):

* ``INT64_MAX``/``INT64_MIN``/``UINT64_MAX`` and float64's largest finite
  value and its negation map to the 32-bit extremes (report kind
  ``"sentinel"``);
* an array holding a sentinel and, as an ordinary value, the 32-bit extreme
  it maps to raises :class:`HostRangeError` naming both;
* any other integer outside the 32-bit range raises :class:`HostRangeError`
  (a :class:`no64.ConstantRangeError`) naming the value and the user's
  source line, or is narrowed by the integer policy (``"saturated"`` /
  ``"wrapped"``); where JAX refuses the value too (a Python int at one of
  JAX's range checks), the error is a :class:`PythonIntRangeError`, also an
  ``OverflowError`` as JAX's is.  In a program that did not ask for x64
  (its meaning is JAX's 32-bit program), a value JAX itself truncates keeps
  its low 32 bits as JAX's would (a float beyond float32 becomes ``inf``),
  recorded;
* float64 values are rounded to the nearest float32 (``"float-inexact"``,
  ``"float-overflow"`` for finite values that become ``inf``).

Each narrowing that is not exact is recorded against the user's source line
(:func:`host_records`), as the pass records it against the op's location.

Where JAX 0.10 converts host data, and the hook for each
------------------------------------------------------
1. ``dtypes.canonicalize_value`` (jaxlib's C++ registry): numpy arrays and
   scalars and Python scalars become ``TypedNdArray``/``TypedInt``/
   ``TypedFloat`` of the canonical dtype.  It serves ``Primitive.bind``
   (every eager op and every traced op with a numpy or Python operand, so
   closed-over constants), ``pxla.shard_args`` (``jit`` arguments,
   ``device_put``, ``jnp.asarray`` of a numpy array), ``vjp`` and the
   partial evaluator.  no64 registers its own handlers for ``np.ndarray``,
   the 64-bit numpy scalar types, ``int`` and ``float``.  (JAX 0.7
   canonicalises a traced constant only when the program is lowered or
   called, where the user's line is gone: there no64 has the trace
   canonicalise it when taking it in, as later releases do.)
2. ``core.pytype_aval_mappings[int]``: the abstract value of a Python int
   (``jit`` argument parsing, ``shaped_abstractify``), which raises
   ``OverflowError`` outside int32.  Wrapped: a sentinel or policy-narrowed
   int gets an int32 aval, any other out-of-range int is refused here.
3. ``lax._convert_element_type``: a Python or numpy scalar or a numpy array
   converted to a requested dtype on the host, by ``np.asarray(x, dtype)``
   or ``astype`` (``lax.full``/``jnp.full``/``full_like``, ``fill_value``,
   ``initial=``, ``jnp.arange``, dtype promotion in every ``jnp`` function).
   Wrapped: a 64-bit host operand converted to the 32-bit type of its kind
   is narrowed by no64 first.
4. ``jnp.array``/``jnp.asarray``/``jnp.int64(...)``: lists, Python scalars
   and numpy arrays with a requested dtype are converted by
   ``np.asarray(object, dtype=<canonical dtype>)`` before anything else.
   Wrapped: such input is converted as the x64 program would convert it,
   then narrowed by no64; a Python scalar requested as a 32-bit type (from
   jax 0.12 ``jnp.nonzero`` converts its ``fill_value`` so, with the 32-bit
   index type JAX canonicalised the x64 program's to) is narrowed as by (3).
5. The C++ ``jit`` dispatch path converts numpy arguments itself, without
   calling back into Python.  ``pjit._get_fastpath_data`` is wrapped so that
   a call with a 64-bit numpy argument -- or a numpy argument of their
   32-bit images (int32, uint32, float32, complex64), whose C++ cache entry
   a later 64-bit argument would hit, jaxlib keying it by canonical dtype --
   never gets a C++ fast path: such calls always go through (1).
   ``jax.Array`` and Python scalar arguments keep it.  An AOT
   ``Compiled`` object's C++ call (``MeshExecutable.create_cpp_call``) is
   wrapped likewise: with 64-bit numpy arguments it takes the Python path.

6. ``dtypes.coerce_to_array``: a Python number made a numpy array with
   JAX's dtype rules (``lax.asarray``: ``jnp.unique``'s ``fill_value``).
   Wrapped like (3).

Every function ``jit`` traces is followed from its host sentinels
(``pjit._infer_params`` wrapped: :func:`sentinel_reads`), and no64's own
frames are excluded from JAX's source locations.

Lowering (``mlir.ir_constant``) sees only canonicalized values: a 64-bit
constant that still reaches a module (a ``jax.Array`` made with x64 on) is
narrowed by the compile hook's pass, with the same rules.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, Literal, NamedTuple

import numpy as np

from ..errors import FloatPrecisionWarning, HostRangeError, PythonIntRangeError, UnprovenIntegerWarning
from ..ir.locations import SourceLocation
from ..ir.types import F32_MAX as _F32_MAX, F64_MAX as _F64_MAX, I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ..kinds import EventKind, IntegerPolicy, Mode
from ..report import Event
from ..transforms import constants as C
from . import x64_arrays
from .state import ALL_PLATFORMS, STATE, default_platform

__all__ = [
    "HostRangeError",
    "PythonIntRangeError",
    "clear_host_records",
    "host_policy",
    "host_records",
    "install_hooks",
    "narrow_host_array",
    "narrow_python_int",
    "user_source",
]

_INT64 = np.dtype(np.int64)
_UINT64 = np.dtype(np.uint64)
_FLOAT64 = np.dtype(np.float64)
_COMPLEX128 = np.dtype(np.complex128)
_INT32 = np.dtype(np.int32)
_UINT32 = np.dtype(np.uint32)
_FLOAT32 = np.dtype(np.float32)
_COMPLEX64 = np.dtype(np.complex64)

#: 64-bit dtype -> the 32-bit dtype no64 gives it.
from ..ir.types import NARROWED_DTYPES as NARROWED  # noqa: E402

#: numpy dtypes whose arguments must not get jaxlib's C++ fast path: the
#: 64-bit ones and their 32-bit images (jaxlib keys its C++ cache by the
#: canonical dtype, so an int64 array would be served -- and cast in C++,
#: unchecked -- by the entry an int32 array made).
#: the 32-bit dtypes no64 gives 64-bit ones
NARROWED_IMAGES = frozenset(np.dtype(d) for d in NARROWED.values())
_NO_FAST_PATH = frozenset(NARROWED) | NARROWED_IMAGES


# ---------------------------------------------------------------------------
# When no64 narrows host values
# ---------------------------------------------------------------------------

def host_policy() -> str | None:
    """The integer policy for host values in this thread, or ``None`` when
    no64 does not narrow them (x64 on, or no64 inactive for the default
    backend and outside :func:`no64.jit`).

    While the x64 meaning of a program whose 32-bit trace refused a host
    integer is taken (:mod:`no64.jax.intent`), the policy it forces
    (``STATE.thread.host_policy``) replaces a policy that is not ``None``.
    """
    policy = _host_policy()
    forced = STATE.thread.host_policy
    return forced if forced is not None and policy is not None else policy


def _host_policy() -> str | None:
    from jax._src import config as jax_config

    if jax_config.enable_x64.value:
        return None
    config = STATE.active_config()
    if config is None or config.mode is Mode.OFF:
        return None
    if ALL_PLATFORMS in config.platforms or STATE.x64_off_by_no64:
        return config.integer_policy
    covered = STATE.default_covered.get(config)
    if covered is None:
        from jax._src import xla_bridge

        started = xla_bridge.backends_are_initialized()
        default = default_platform(started)
        # Before the backends start, no64 turned x64 off on the assumption
        # that a listed platform may become the default.
        covered = True if default is None else config.applies_to(default)
        if started:
            STATE.default_covered[config] = covered
    return config.integer_policy if covered else None


# ---------------------------------------------------------------------------
# The user's source line, and records
# ---------------------------------------------------------------------------

_LIBRARIES = ("no64", "jax", "jaxlib", "numpy", "ml_dtypes", "flax", "optax", "chex",
              "equinox", "haiku", "opt_einsum", "jax_plugins")


def _library_dirs() -> tuple[str, ...]:
    """Directories whose frames are not the user's: the standard library and
    the libraries above that are loaded (computed when a record is made, so
    libraries imported later count too)."""
    dirs = [os.path.dirname(os.__file__) + os.sep]
    for name in _LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)


def _user_frame(traceback: Any, inside: tuple[str, ...]) -> SourceLocation | None:
    """The innermost frame of a JAX ``Traceback`` outside ``inside``."""
    from jax._src import source_info_util

    from ._compat import traceback_frames

    codes, lastis = traceback_frames(traceback)
    for code, lasti in zip(codes, lastis):
        filename = code.co_filename
        if not (filename.startswith(inside) or filename.startswith("<frozen")):
            line = source_info_util.raw_frame_to_frame(code, lasti).start_line
            return SourceLocation(None, code.co_name, filename, line, None, f"{filename}:{line}")
    return None


def user_source() -> SourceLocation:
    """The innermost frame outside no64, JAX, numpy, common JAX libraries
    and the standard library: the user's line.

    While JAX lowers or re-traces an equation it sets the equation's own
    traceback (from when the user's code traced it) as the current one;
    that traceback is used then, since the Python stack holds only JAX.
    """
    inside = _library_dirs()
    from jax._src import source_info_util

    traceback = source_info_util._source_info_context.context.traceback
    if traceback is not None:
        found = _user_frame(traceback, inside)
        if found is not None:
            return found
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(inside) or filename.startswith("<frozen")):
            raw = f"{filename}:{frame.f_lineno}"
            return SourceLocation(None, frame.f_code.co_name, filename, frame.f_lineno, None, raw)
        frame = frame.f_back
    return SourceLocation(None, None, None, None, None, "<unknown>")


_local = threading.local()


def _mapped() -> set[tuple[int, str | None, int | None]]:
    """The 32-bit extremes that host sentinels were mapped to in this thread
    since the innermost trace being watched began (see :func:`_install_sentinel_reads`)."""
    images = getattr(_local, "images", None)
    if images is None:
        images = _local.images = set()
    return images


_MAX_SITES = 1024


def _record(kind: EventKind, op: str, detail: str, count: int,
            source: SourceLocation | None = None) -> None:
    """Add ``count`` elements to the host record of ``kind`` at ``source``
    (the user's line), kept in ``STATE.host_records``."""
    if source is None:
        source = user_source()
    key = (kind, op, source.file, source.line)
    records = STATE.host_records
    with STATE.host_lock:
        event = records.get(key)
        if event is not None:
            event.count += count
        else:
            if len(records) >= _MAX_SITES:
                records.pop(next(iter(records)))
            event = records[key] = Event(kind, op, source, detail, count)
    if STATE.listeners:
        STATE.emit("on_host_event", event, count)


def host_records() -> list[Event]:
    """The host narrowings that were not exact, one :class:`no64.report.Event`
    per kind and source line (``count`` sums the elements over all calls),
    oldest first; the kinds are those of the pass's report."""
    with STATE.host_lock:
        return list(STATE.host_records.values())


def clear_host_records() -> None:
    """Forget the records returned by :func:`host_records`."""
    with STATE.host_lock:
        STATE.host_records.clear()


# ---------------------------------------------------------------------------
# Narrowing
# ---------------------------------------------------------------------------


def _describe(a: np.ndarray, scalar: bool) -> str:
    if scalar:
        return f"a numpy {a.dtype} scalar"
    article = "an" if str(a.dtype)[0] in "aeiou" else "a"
    return f"{article} {a.dtype}{list(a.shape)} array"


def _policy_hint() -> str:
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
_PAIRS = {
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
    for sentinel, name, image, image_name in _PAIRS[unsigned]:
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
    """Note that a host sentinel became ``image`` at the user's current line:
    a constant holding ``image`` used at that line may be that sentinel."""
    source = user_source()
    _mapped().add((image, source.file, source.line))


def _note_images(a: np.ndarray, unsigned: bool) -> None:
    for sentinel, _, image, _ in _PAIRS[unsigned]:
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
    if dt == _INT64 or dt == _UINT64:
        unsigned = dt == _UINT64
        # 1-d: narrow_integers' saturating clip returns a scalar for 0-d input.
        res = C.narrow_integers(a.reshape(-1), unsigned, policy)
        if res.sentinels:
            _refuse_collision(a, unsigned, op, scalar, what, jax_refuses)
            _record(EventKind.SENTINEL, op, _sentinel_detail(a, unsigned), res.sentinels)
        if res.out_of_range and res.values is None and _as_jax(policy, jax_refuses):
            res = C.narrow_integers(a.reshape(-1), unsigned, IntegerPolicy.WRAP)
            _record(EventKind.WRAPPED, op, f"out-of-range integer {res.first_bad} kept its low 32 bits, "
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
            _record(kind, op, f"out-of-range integer {res.first_bad} narrowed by policy "
                    f"{str(policy)!r}", res.out_of_range)
        assert res.values is not None
        return res.values.reshape(a.shape)
    fres = C.narrow_floats(a.reshape(-1))
    if fres.sentinels:
        _record(EventKind.SENTINEL, op, "mapped float64 max/lowest \u2192 float32 max/lowest", fres.sentinels)
    if fres.inexact:
        lost = _resolution(a.reshape(-1), op) if a.size >= 2 else None
        _record(EventKind.FLOAT_INEXACT, op, lost or "rounded to the nearest float32", fres.inexact)
    if fres.overflow:
        jax_like = _as_jax(policy, jax_refuses)
        if policy == IntegerPolicy.ERROR and not jax_like:
            _refuse_float_overflow(a, fres.overflow, scalar)
        _record(EventKind.FLOAT_OVERFLOW, op, "beyond float32's range: became inf"
                + (", " + _AS_JAX if jax_like else ""), fres.overflow)
    return fres.values.reshape(a.shape)


def _refuse_float_overflow(a: np.ndarray, count: int, scalar: bool) -> None:
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
        f"no64: {_describe(a, scalar)} at {source.source or source.raw} holds {value!r}{at}{more}, "
        "beyond float32's range (|x| > 3.4e38), which float32 and float32 pairs cannot hold: it "
        "would become inf; scale the data, or NO64_INTEGER_POLICY (no64.jit: integer_policy=) "
        "'saturate' or 'wrap' lets it become inf, recorded in no64.host_records()",
        value=value, dtype=str(a.dtype), index=index, source=source)


#: Fewer f32 steps than this across a float64 array's values: f32 cannot
#: tell them apart well enough to compute with their differences.
_RESOLVED_STEPS = 16
_warned_resolution: set[tuple[str, int]] = set()
#: user lines already warned of a host sentinel read as a number or met
_warned_sentinels: set[tuple[str, int]] = set()


def clear_warned() -> None:
    """Forget which lines were warned about (for tests)."""
    _warned_resolution.clear()
    _warned_sentinels.clear()


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
    steps = span / ulp
    if steps >= _RESOLVED_STEPS:
        return None
    source = user_source()
    detail = (f"float64 values from {lo!r} to {hi!r} ({span:.3g} apart at most): f32 spaces values "
              f"there {ulp:.3g} apart, so it keeps about {int(steps) + 1} distinct values of them and "
              "their differences are lost; float_policy=\"pairs\" holds them to 48 bits")
    _warn_once_at(source, f"no64: {op}: {detail}", FloatPrecisionWarning, _warned_resolution)
    return detail


def _warn_once_at(source: SourceLocation, message: str, category: type[Warning],
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
        _record(EventKind.SENTINEL, op, _sentinel_detail(a, unsigned), 1)
    elif res.values is None and _as_jax(policy, jax_refuses):
        res = C.narrow_integers(a, unsigned, IntegerPolicy.WRAP)
        _record(EventKind.WRAPPED, op, f"out-of-range integer {v} kept its low 32 bits, " + _AS_JAX, 1)
    elif res.values is None:
        source = user_source()
        raise _refusal(jax_refuses)(
            f"no64: the Python int {v} at {source.source or source.raw} is outside "
            f"{'uint32' if unsigned else 'int32'}'s range and no sentinel; {_policy_hint()}",
            value=v, dtype="int", index=(), source=source,
        )
    else:
        kind = EventKind.SATURATED if policy == IntegerPolicy.SATURATE else EventKind.WRAPPED
        _record(kind, op, f"out-of-range integer {v} narrowed by policy {str(policy)!r}", 1)
    assert res.values is not None
    return int(res.values[0])


def _narrow_python_float(v: float, op: str) -> float:
    """Float64 sentinels map to float32's; a finite value beyond float32 is
    recorded (it becomes inf).  Rounding of ordinary Python floats is not
    recorded: they are weakly typed and round to float32 in the x64 program
    too wherever they meet float32 arrays."""
    if v == _F64_MAX or v == -_F64_MAX:
        _record(EventKind.SENTINEL, op, "mapped float64 max/lowest \u2192 float32 max/lowest", 1)
        return _F32_MAX if v > 0 else -_F32_MAX
    if abs(v) > _F32_MAX and v == v and abs(v) != float("inf"):
        _record(EventKind.FLOAT_OVERFLOW, op, "beyond float32's range: became inf", 1)
    return v


def _needs_float(v: float) -> bool:
    return abs(v) > _F32_MAX and abs(v) != float("inf")


def _needs_int(v: int) -> bool:
    return not (_I32.min <= v <= _I32.max)


# ---------------------------------------------------------------------------
# The hooks
# ---------------------------------------------------------------------------

_installed = False
_install_lock = threading.Lock()


def install_hooks() -> None:
    """Put no64 at every point where JAX converts host data (idempotent)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        _install_canonicalize_handlers()
        _install_traced_constants()
        _install_int_aval()
        _install_convert_element_type()
        _install_coerce_to_array()
        _install_array()
        _install_device_put()
        _install_arange()
        _install_x64_creations()
        _install_fastpath_guard()
        _install_aot_guard()
        _install_sentinel_reads()
        _install_warning_levels()
        _installed = True


_WIDE_KEPT = 16


def _remember_wide(narrowed: Any, original: Any) -> Any:
    """Note, for this thread, the 64-bit host data a narrowed value was made
    from (the last few only): an eager primitive, whose operands JAX
    canonicalises before it runs, is given its x64 meaning from them (see
    :func:`wide_original`)."""
    kept = getattr(_local, "wide", None)
    if kept is None:
        kept = _local.wide = {}
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
    return bool(getattr(_local, "wide", None))


def wide_original(x: Any) -> Any:
    """The 64-bit host data ``x`` was narrowed from on this thread, or ``None``."""
    kept = getattr(_local, "wide", None)
    if not kept:
        return None
    entry = kept.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]()


def _install_canonicalize_handlers() -> None:
    from jax._src import dtypes

    from ._compat import register_canonicalize_handler, typed_ndarray, typed_scalar

    canonical = dtypes.canonicalize_dtype
    check_valid = dtypes.check_valid_dtype
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
        if _needs_int(x):
            policy = host_policy() if dtype == _INT32 else None
            if policy is not None and _I64.min <= x <= _I64.max:
                # JAX raises OverflowError for such an int here.
                return int_type(narrow_python_int(x, policy, jax_refuses=True), _INT32)
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} too large to convert to {dtype}")
        return int_type(x, dtype)

    def python_float(x: float) -> Any:
        dtype = canonical(f64)
        if dtype == _FLOAT32 and _needs_float(x) and host_policy() is not None:
            x = _narrow_python_float(x, "host value")
        return float_type(x, dtype)

    register = register_canonicalize_handler
    register(np.ndarray, ndarray)
    for t in {np.int64, np.uint64, np.float64, np.complex128, np.longlong, np.ulonglong}:
        if np.dtype(t) in NARROWED:
            register(t, scalar)
    register(int, python_int)
    register(float, python_float)


def _install_traced_constants() -> None:
    from ._compat import canonicalize_traced_constants

    canonicalize_traced_constants(lambda: host_policy() is not None)


def _install_int_aval() -> None:
    from jax._src import core

    original = core.pytype_aval_mappings[int]

    def int_aval(x: int) -> Any:
        if _needs_int(x):
            policy = host_policy()
            if policy is not None and _I64.min <= x <= _I64.max:
                if policy == IntegerPolicy.ERROR and x not in (_I64.max, _I64.min):
                    # raises, naming the user's line; JAX raises OverflowError here
                    narrow_python_int(x, policy, jax_refuses=True)
                return original(0)  # the weak int32 aval
        return original(x)

    int_aval.__wrapped__ = original  # type: ignore[attr-defined]
    core.pytype_aval_mappings[int] = int_aval


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
        if not _needs_int(operand):
            return operand
        try:
            new = np.dtype(new_dtype) if new_dtype is not None else _INT32
        except TypeError:
            return operand
        if new in (_INT32, _INT64):
            return narrow_python_int(operand, policy, op=op, jax_refuses=jax_refuses)
        if new in (_UINT32, _UINT64):
            return narrow_python_int(operand, policy, unsigned=True, op=op, jax_refuses=jax_refuses)
        return operand
    if t is float:
        if not _needs_float(operand):
            return operand
        try:
            new = np.dtype(new_dtype) if new_dtype is not None else _FLOAT32
        except TypeError:
            return operand
        if new in (_FLOAT32, _FLOAT64, _COMPLEX64, _COMPLEX128):
            return _narrow_python_float(operand, op)
        return operand
    if t is np.ndarray or (isinstance(operand, np.generic) and t is not bool):
        dt = operand.dtype
        if dt not in NARROWED or _target_for(dt, new_dtype) is None:
            return operand
        out = narrow_host_array(np.asarray(operand), policy, op=op,
                                scalar=t is not np.ndarray)
        return out if t is np.ndarray else out[()]
    return operand


def _install_convert_element_type() -> None:
    from jax._src.lax import lax

    original = lax._convert_element_type
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
    lax._convert_element_type = _convert_element_type


def _install_coerce_to_array() -> None:
    """``dtypes.coerce_to_array``: a Python scalar made a numpy array with
    JAX's dtype rules (``lax.asarray`` of a Python number, the overflow check
    of ``jnp.array``), where JAX raises ``OverflowError`` for an int beyond
    the canonical dtype."""
    from jax._src import dtypes

    original = dtypes.coerce_to_array
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

    _replace("coerce_to_array", original, coerce_to_array, (dtypes,))


def _is_32bit_or_none(dtype: Any) -> bool:
    if dtype is None:
        return True
    try:
        return np.dtype(dtype) in (_INT32, _UINT32)
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
        return _needs_int(obj)
    if t is float:
        return _needs_float(obj)
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
        STATE.emit("on_host_conversion", dtype, getattr(narrowed, "dtype", None), function)
    return narrowed, None


#: ``jax.numpy`` functions that make an array from a dtype JAX canonicalises
#: (given, or a default one): what they return eagerly is noted with its x64
#: dtype (:mod:`no64.jax.x64_arrays`)
_CREATIONS = ("arange", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
              "empty_like", "eye", "identity", "linspace", "tri", "astype")


def _install_x64_creations() -> None:
    import jax.numpy as jnp
    from jax._src.numpy import array_creation, lax_numpy

    modules = (array_creation, lax_numpy, jnp)
    for name in _CREATIONS:
        original = getattr(jnp, name, None)
        if original is None or getattr(original, "__no64_x64__", False):
            continue
        wrapper = _noting_x64(original)
        wrapper.__no64_x64__ = True  # type: ignore[attr-defined]
        for module in modules:
            if getattr(module, name, None) is original:
                setattr(module, name, wrapper)


def _noting_x64(original: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        dtype = getattr(out, "dtype", None)
        if dtype is not None and dtype in NARROWED_IMAGES and STATE.x64_requested():
            from jax._src import core

            if core.trace_state_clean() and computes_otherwise(_WIDENED[np.dtype(dtype)]):
                _noted(out, _x64_dtype_by_shape(original, args, kwargs))
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


def _install_device_put() -> None:
    from ._compat import wrap_device_put_impl

    def make(original: Any) -> Any:
        if getattr(original, "__no64__", False):
            return original

        def device_put(*xs: Any, **params: Any) -> Any:
            outs = original(*xs, **params)
            if STATE.x64_requested():
                for x, out in zip(xs, outs):
                    _noted(out, _x64_dtype_of(x, None))
            return outs

        device_put.__wrapped__ = original  # type: ignore[attr-defined]
        device_put.__no64__ = True  # type: ignore[attr-defined]
        return device_put

    wrap_device_put_impl(make)


def _x64_dtype_of(object: Any, dtype: Any) -> np.dtype[Any] | None:
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
    from jax._src import dtypes

    if dtype is not None:
        return dtypes.canonicalize_dtype(dtype)
    if isinstance(object, (np.ndarray, np.generic)):
        return object.dtype
    if not _python_numbers(object):
        raise TypeError("not host numbers")
    return dtypes.canonicalize_dtype(np.asarray(object).dtype)


def _python_numbers(object: Any, depth: int = 0) -> bool:
    if type(object) in (int, float, bool, complex):
        return True
    if isinstance(object, (list, tuple)) and depth < 8:
        return all(_python_numbers(x, depth + 1) for x in object)
    return False


def _x64_on() -> Any:
    from ._compat import enable_x64

    return enable_x64(True)


def _noted(out: Any, wide: np.dtype[Any] | None) -> Any:
    """``out``, noted as of the x64 program's ``wide`` dtype where it is its 32-bit image."""
    if wide is not None and getattr(out, "dtype", None) == NARROWED[wide] and computes_otherwise(wide):
        x64_arrays.mark(out, wide)
    return out


def computes_otherwise(dtype: Any, config: Any = None) -> bool:
    """Whether 64-bit data of ``dtype`` computes otherwise in the 32-bit
    program than in the x64 one under ``config`` (the active one by default):
    integers always, floats under the pairs float policy (under ``f32``
    float64 is float32 in both)."""
    from ..kinds import FloatPolicy

    kind = np.dtype(dtype).kind
    if kind in "iu":
        return True
    config = STATE.active_config() if config is None else config
    return kind in "fc" and config is not None and config.float_policy is FloatPolicy.PAIRS


def _replace(name: str, original: Any, wrapper: Any, modules: tuple[Any, ...]) -> None:
    wrapper.__wrapped__ = original
    wrapper.__no64__ = True
    for attr in ("__doc__", "__name__", "__qualname__", "__module__"):
        setattr(wrapper, attr, getattr(original, attr))
    for module in modules:
        if getattr(module, name, None) is original:
            setattr(module, name, wrapper)


def _install_array() -> None:
    import jax.numpy as jnp
    from jax._src.numpy import array_constructors, array_creation, index_tricks, lax_numpy, scalar_types

    modules = (array_constructors, array_creation, lax_numpy, index_tricks, scalar_types, jnp)
    original_array = array_constructors.array
    if getattr(original_array, "__no64__", False):
        return
    original_asarray = array_constructors.asarray

    def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
              ndmin: int = 0, **kwargs: Any) -> Any:
        wide = _x64_dtype_of(object, dtype)
        object, dtype = _array_input(object, dtype, "array")
        return _noted(original_array(object, dtype, copy=copy, order=order, ndmin=ndmin, **kwargs), wide)

    def asarray(a: Any, dtype: Any = None, order: str | None = None, **kwargs: Any) -> Any:
        wide = _x64_dtype_of(a, dtype)
        a, dtype = _array_input(a, dtype, "asarray")
        return _noted(original_asarray(a, dtype, order, **kwargs), wide)

    _replace("array", original_array, array, modules)
    _replace("asarray", original_asarray, asarray, modules)


def _install_arange() -> None:
    """``jnp.arange`` with a bound beyond 32 bits: JAX 0.7 builds
    ``arange(N, M)``, and up to 0.9 ``arange(N, M, K)``, on the host with
    ``np.arange(..., dtype=<canonical dtype>)``, which raises
    ``OverflowError`` before no64 sees the values; where it does, the values
    are built as the x64 program builds them, then narrowed by no64.  (Later
    releases convert the bounds with ``lax._convert_element_type``, see (3).)"""
    import jax.numpy as jnp
    from jax._src.numpy import lax_numpy

    original = lax_numpy.arange
    if getattr(original, "__no64__", False):
        return

    def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
        try:
            return original(start, stop, step, dtype, **kwargs)
        except OverflowError:
            policy = host_policy()
            bounds = [start] if stop is None and step is None else [start, stop, step]
            want: Any = _requested(dtype) if dtype is not None else _INT64
            if (policy is None or any(v is not None for v in kwargs.values()) or want is False
                    or not all(type(v) is int or isinstance(v, np.integer) for v in bounds if v is not None)
                    or not any(_needs_int(int(v)) for v in bounds if v is not None)):
                raise
        wide = np.arange(*bounds, dtype=want)
        # JAX raised OverflowError for these bounds: so does a refusal.
        return jnp.asarray(narrow_host_array(wide, policy, jax_refuses=True))

    _replace("arange", original, arange, (lax_numpy, jnp))


_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


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
            if not filename.startswith(_OWN_DIR):
                counted += 1
        self._module.warn(message, category, level + 1, *args, **kwargs)


def _install_warning_levels() -> None:
    import warnings

    from jax._src import dtypes

    if getattr(dtypes, "warnings", None) is warnings:
        dtypes.warnings = _WarningsPastNo64(warnings)  # type: ignore[assignment]  # a stand-in module


def _install_fastpath_guard() -> None:
    from ._compat import is_flagged, jit_function, replace_jit_function

    original = jit_function("_get_fastpath_data")
    if getattr(original, "__no64__", False):
        return

    def _get_fastpath_data(executable: Any, out_tree: Any, args_flat: Any, *rest: Any) -> Any:
        if host_policy() is not None:
            for a in args_flat:
                t = type(a)
                if (t is np.ndarray or isinstance(a, np.generic)) and a.dtype in _NO_FAST_PATH:
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


def _install_aot_guard() -> None:
    from jax._src import stages
    from jax._src.interpreters import pxla

    from ._compat import cpp_call_params, is_flagged

    original = pxla.MeshExecutable.create_cpp_call
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
                return stages.Compiled.call(params, *args, **kwargs)[0]  # through (1)
            return cpp(*args, **kwargs)

        return call

    create_cpp_call.__wrapped__ = original  # type: ignore[attr-defined]
    create_cpp_call.__no64__ = True  # type: ignore[attr-defined]
    pxla.MeshExecutable.create_cpp_call = create_cpp_call  # type: ignore[method-assign,assignment]



# ---------------------------------------------------------------------------
# Host sentinels that the program reads as numbers
# ---------------------------------------------------------------------------
#
# A host sentinel becomes the 32-bit extreme before JAX traces the program,
# so the 32-bit program holds INT32_MAX where the 64-bit one holds INT64_MAX.
# That is the same program only while the value is moved, selected, ordered
# or compared: arithmetic, bit operations and conversions read the number
# itself and compute with INT32_MAX (``INT64_MAX - x`` becomes
# ``INT32_MAX - x``).  Each traced program is therefore followed from the
# values that came from host sentinels -- its arguments that held one, and,
# when host sentinels were mapped while it was traced, its constants holding
# their 32-bit images -- and every primitive that reads one as a number is
# reported (``unproven`` in host_records() at the user's line) or, under the
# range policies that refuse unproven values (``strict``, ``exact``), refused.

#: Primitives whose results hold elements of their operands (moved, selected,
#: or the minimum/maximum of them): a sentinel passes through unchanged.
SENTINEL_MOVES = frozenset(
    "broadcast_in_dim reshape squeeze expand_dims transpose rev slice dynamic_slice "
    "dynamic_update_slice gather concatenate pad select_n copy copy_p device_put min max clamp "
    "reduce_min reduce_max cummin cummax sort scatter optimization_barrier sharding_constraint "
    "mesh_cast reshard split stack unstack tile all_gather all_to_all ppermute pbroadcast pmax "
    "pmin".split()
)
#: Primitives that read their operands only by order or equality, the way
#: the 64-bit program does; their results hold no operand element.
SENTINEL_ORDERS = frozenset("eq ne lt le gt ge eq_to lt_to le_to argmin argmax".split())
#: Primitives whose first results hold operand elements and whose others are indices.
_FIRST_RESULT_MOVES = frozenset({"top_k"})

_NAMES = {int(_I32.max): "INT64_MAX", int(_I32.min): "INT64_MIN", int(_U32.max): "UINT64_MAX"}
_WIDE = {int(_I32.max): int(_I64.max), int(_I32.min): int(_I64.min), int(_U32.max): int(_U64.max)}
_TARGET = {int(_I32.max): "INT32_MAX", int(_I32.min): "INT32_MIN", int(_U32.max): "UINT32_MAX"}


def _images_in(x: Any, images: frozenset[int]) -> frozenset[int]:
    """Which of ``images`` the 32-bit integer value ``x`` holds."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        if type(x) is int:
            return frozenset(i for i in images if x == i)
        return frozenset()
    try:
        dt = np.dtype(dt)
    except TypeError:
        return frozenset()
    if dt == _INT32:
        wanted = [i for i in images if i != _U32.max]
    elif dt == _UINT32:
        wanted = [i for i in images if i == _U32.max]
    else:
        return frozenset()
    if not wanted:
        return frozenset()
    a = np.asarray(x)
    return frozenset(i for i in wanted if (a == np.array(i, dt)).any())


def _sentinel_images(x: Any) -> frozenset[int]:
    """The 32-bit images of the sentinels a 64-bit host value holds."""
    t = type(x)
    if t is int:
        if x == _I64.max or x == _I64.min:
            return frozenset({int(_I32.max) if x > 0 else int(_I32.min)})
        return frozenset()
    dt = getattr(x, "dtype", None)
    if t is not np.ndarray and not isinstance(x, np.generic) and dt is not None:
        # a 64-bit jax.Array given to no64.jit (fetched there already)
        try:
            wide = np.dtype(dt) in (_INT64, _UINT64)
        except TypeError:
            wide = False
        if not wide or isinstance(x, _tracer_type()):
            return frozenset()
        x = np.asarray(x)
        t = np.ndarray
    if (t is np.ndarray or isinstance(x, np.generic)) and x.dtype in (_INT64, _UINT64):
        unsigned = x.dtype == _UINT64
        return frozenset(image for sentinel, _, image, _ in _PAIRS[unsigned]
                         if (x == np.array(sentinel, x.dtype)).any())
    return frozenset()


def _tracer_type() -> type:
    from jax._src import core

    return core.Tracer


class SentinelRead(NamedTuple):
    """A primitive that reads a host sentinel as a number (``meets=False``), or
    where one meets values that may be its 32-bit image (``meets=True``)."""

    primitive: str
    images: frozenset[int]
    source: SourceLocation
    meets: bool = False


class _Fact(NamedTuple):
    """What the walk knows of a value: the 32-bit images of the host
    sentinels it may hold, and the range ``[lo, hi]`` of its other elements
    (``None``: its type's range; ``lo > hi``: none)."""

    taint: frozenset[int] = frozenset()
    lo: int | None = None
    hi: int | None = None


_UNKNOWN = _Fact()


def _dtype_range(dtype: Any) -> tuple[int, int] | None:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt == np.bool_:
        return (0, 1)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return (int(info.min), int(info.max))
    return None


def _join(facts: list[_Fact]) -> _Fact:
    taint = frozenset().union(*(f.taint for f in facts)) if facts else frozenset()
    lo = hi = None
    known = True
    for f in facts:
        if f.lo is None or f.hi is None:
            known = False
            break
        if f.lo > f.hi:
            continue
        lo = f.lo if lo is None else min(lo, f.lo)
        hi = f.hi if hi is None else max(hi, f.hi)
    if not known:
        return _Fact(taint)
    return _Fact(taint, 1, 0) if lo is None else _Fact(taint, lo, hi)


def _sub_jaxpr(params: dict[str, Any], n_in: int, n_out: int) -> Any:
    """The one sub-jaxpr of a call-like primitive whose inputs and outputs are
    the equation's, one for one (``jit``, ``closed_call``, ``remat``,
    ``custom_jvp_call``, ...), or ``None``."""
    from jax._src import core

    subs = list(core.jaxprs_in_params(params))
    if len(subs) != 1:
        return None
    sub = subs[0]
    if len(sub.invars) != n_in or len(sub.outvars) != n_out:
        return None
    return sub


#: Data operands that meet (are selected among, ordered or compared with one
#: another) in each primitive that combines several: ``None`` is all of them.
_MEETING: dict[str, slice | tuple[int, ...] | None] = {
    **{name: None for name in "min max clamp concatenate pad pmax pmin stack".split()},
    **{name: None for name in SENTINEL_ORDERS if name not in ("argmin", "argmax")},
    "select_n": slice(1, None),
    "dynamic_update_slice": (0, 1),
    "scatter": (0, 2),
}


def sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                   images: frozenset[tuple[int, str | None, int | None]]) -> list[SentinelRead]:
    """The primitives of ``jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``) that read
    a host sentinel as a number, or where one meets values that may be its
    32-bit image (the ranges of other values are known from constants,
    iotas, narrow integer types and the ops that move them; anything else
    may be any value of its type).

    Args:
      seeds: Input positions holding host sentinels -> their 32-bit images
        (the input holds no other element equal to one: host narrowing
        refuses such an array).
      images: ``(image, file, line)``: a host sentinel became ``image``
        while ``jaxpr`` was traced, at that user's line: a constant or
        literal holding ``image`` used by an equation of that line may be
        that sentinel (a library's own ``INT32_MAX`` elsewhere is not).
    """
    from jax._src import core

    from ._compat import jaxpr_classes, open_jaxpr, scan_layout

    image_set = frozenset(i for i, _, _ in images)
    jaxprs = jaxpr_classes()

    inside = _library_dirs()
    found: list[SentinelRead] = []
    seen: set[tuple[str, str | None, int | None, bool]] = set()
    consts_of: dict[Any, Any] = {}

    def images_at(here: SourceLocation | None) -> frozenset[int]:
        if here is None:
            return image_set
        return frozenset(i for i, f, ln in images if (f, ln) == (here.file, here.line))

    def constant_fact(val: Any, here: SourceLocation | None) -> _Fact:
        if _dtype_range(getattr(val, "dtype", type(val))) is None and type(val) is not int:
            return _UNKNOWN
        a = np.asarray(val)
        if a.dtype.kind not in "iub" or a.size == 0 or a.size > 1 << 20:
            return _UNKNOWN
        wanted = images_at(here) if images else frozenset()
        taint = _images_in(val, wanted) if wanted else frozenset()
        if taint:
            a = a[~np.isin(a, np.array(sorted(taint), dtype=np.int64).astype(a.dtype))]
        if a.size == 0:
            return _Fact(taint, 1, 0)
        return _Fact(taint, int(a.min()), int(a.max()))

    def fact_of(v: Any, env: dict[Any, _Fact], here: SourceLocation | None = None) -> _Fact:
        if isinstance(v, core.Literal):
            return constant_fact(v.val, here)
        f = env.get(v)
        if f is None and v in consts_of:
            return constant_fact(consts_of[v], here)  # a closed-over constant, where it is used
        return _UNKNOWN if f is None else f

    def bounds(f: _Fact, v: Any) -> tuple[int, int] | None:
        if f.lo is not None and f.hi is not None:
            return (f.lo, f.hi)
        return _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))

    def where(eqn: Any, site: SourceLocation | None) -> SourceLocation | None:
        """The user's line of ``eqn``; inside a library's own jitted function
        (``jnp.floor_divide``) its equations have none: the call's line."""
        tb = getattr(eqn.source_info, "traceback", None)
        here = _user_frame(tb, inside) if tb is not None else None
        return here if here is not None else site

    def report(eqn: Any, t: frozenset[int], site: SourceLocation | None, meets: bool) -> None:
        source = where(eqn, site)
        if source is None:
            source = user_source()  # while JAX traces: the line that called the function
        key = (eqn.primitive.name, source.file, source.line, meets)
        if key not in seen:
            seen.add(key)
            found.append(SentinelRead(eqn.primitive.name, t, source, meets))

    def meeting(eqn: Any, fs: list[_Fact]) -> frozenset[int]:
        """The images of sentinels that meet, in ``eqn``, other values that may equal them."""
        which = _MEETING.get(eqn.primitive.name, False)
        if which is False:
            return frozenset()
        idx = list(range(len(fs)))
        if isinstance(which, slice):
            idx = idx[which]
        elif isinstance(which, tuple):
            idx = [i for i in which if i < len(fs)]
        return meets_among([fs[i] for i in idx], [eqn.invars[i] for i in idx])

    def meets_among(fs: list[_Fact], vs: list[Any]) -> frozenset[int]:
        """The images of sentinels among ``fs`` that another of ``fs`` may hold
        as an ordinary value (``vs``: the values, for their types)."""
        hit: set[int] = set()
        for i, f in enumerate(fs):
            if not f.taint:
                continue
            for j, (g, v) in enumerate(zip(fs, vs)):
                if j == i:
                    continue
                b = bounds(g, v)
                if b is not None:
                    hit.update(image for image in f.taint if b[0] <= image <= b[1])
        return frozenset(hit)

    def widened(f: _Fact, v: Any) -> _Fact:
        """``f`` with its ordinary values anywhere in their type but at the
        images of the sentinels it may hold (each join was checked for them)."""
        r = _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))
        if r is None or not f.taint:
            return _Fact(f.taint)
        lo = r[0] + 1 if r[0] in f.taint else r[0]
        hi = r[1] - 1 if r[1] in f.taint else r[1]
        return _Fact(f.taint, lo, hi)

    def run(jx: Any, ins: list[_Fact], consts: Any = (),
            site: SourceLocation | None = None) -> list[_Fact]:
        env: dict[Any, _Fact] = {}
        for var, c in zip(jx.constvars, consts):
            consts_of[var] = c
        for var, f in zip(jx.invars, ins):
            env[var] = f
        for eqn in jx.eqns:
            # The user's line (a walk of the equation's traceback) only where
            # it matters: constants that may be sentinels, and sub-programs.
            if (images and any(isinstance(v, core.Literal) or v in consts_of
                               for v in eqn.invars)) or any(
                    isinstance(p, jaxprs) or (
                        type(p) is tuple and p and isinstance(p[0], jaxprs))
                    for p in eqn.params.values()):
                here = where(eqn, site)
            else:
                here = site
            fs = [fact_of(v, env, here) for v in eqn.invars]
            t_all = frozenset().union(*(f.taint for f in fs)) if fs else frozenset()
            met = meeting(eqn, fs) if t_all else frozenset()
            if met:
                report(eqn, met, site, True)
            outs = _step(eqn, fs, t_all, here)
            if outs is None:
                report(eqn, t_all, site, False)
                continue
            for var, f in zip(eqn.outvars, outs):
                env[var] = f
        return [fact_of(v, env, site) for v in jx.outvars]

    def closed(cj: Any, ins: list[_Fact], site: SourceLocation | None = None) -> list[_Fact]:
        inner, consts = open_jaxpr(cj)
        return run(inner, ins, consts, site)

    def loop(eqn: Any, body: Any, consts: list[_Fact], carry: list[_Fact], rest: list[_Fact],
             n_out_extra: int, site: SourceLocation | None) -> list[_Fact]:
        """A carried loop body to a fixpoint: a carried range that changes is
        widened, and taint only grows.  A carried value joins what each trip
        computes: a sentinel meeting values that may be its image there is
        reported at the loop."""
        outs: list[_Fact] = []
        carried = eqn.outvars[:len(carry)]
        for _ in range(2 * len(carry) + 2):
            outs = closed(body, consts + carry + rest, site)
            new = []
            for c, o, v in zip(carry, outs[:len(carry)], carried):
                met = meets_among([c, o], [v, v])
                if met:
                    report(eqn, met, site, True)
                j = _join([c, o])
                new.append(j if (j.lo, j.hi) == (c.lo, c.hi) and j.taint == c.taint
                           else widened(j, v))
            if new == carry:
                break
            carry = new
        return carry + outs[len(carry):len(carry) + n_out_extra]

    def _step(eqn: Any, fs: list[_Fact], t_all: frozenset[int],
              site: SourceLocation | None) -> list[_Fact] | None:
        """The facts of ``eqn``'s results, or ``None`` if it reads a sentinel as a number."""
        name = eqn.primitive.name
        params = eqn.params
        n_out = len(eqn.outvars)
        if name in SENTINEL_MOVES:
            moved = fs
            if name == "select_n":
                if fs and fs[0].taint:
                    return None  # a sentinel as the case index
                moved = fs[1:]
            elif name == "scatter" and fs:
                if len(fs) > 1 and fs[1].taint:
                    return None  # a sentinel used as an index
                moved = [fs[0]] + fs[2:3]
            elif name in ("gather", "dynamic_slice", "dynamic_update_slice") and fs:
                n = 2 if name == "dynamic_update_slice" else 1
                if any(f.taint for f in fs[n:]):
                    return None  # a sentinel used as an index
                moved = fs[:n]
            elif name in ("sort", "split", "unstack") and len(fs) == n_out:
                return list(fs)  # result i holds elements of operand i
            elif name == "sort":
                return [_join(fs)] * n_out
            return [_join(moved)] * n_out
        if name in _FIRST_RESULT_MOVES:
            return [_join(fs[:1])] + [_UNKNOWN] * (n_out - 1)
        if name in SENTINEL_ORDERS:
            return [_UNKNOWN] * n_out
        if name == "iota":
            size = params["shape"][params["dimension"]]
            return [_Fact(frozenset(), 0, max(int(size) - 1, 0))]
        if name == "convert_element_type":
            src = eqn.invars[0].aval.dtype
            new = params["new_dtype"]
            if np.dtype(new) == np.dtype(src):
                return [fs[0]] * n_out
            if fs[0].taint:
                return None
            b, target = bounds(fs[0], eqn.invars[0]), _dtype_range(new)
            if b is not None and target is not None and target[0] <= b[0] and b[1] <= target[1]:
                return [_Fact(frozenset(), b[0], b[1])] * n_out
            return [_UNKNOWN] * n_out
        if name == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            carry = loop(eqn, params["body_jaxpr"], fs[nc:nc + nb], fs[nc + nb:], [], 0, site)
            closed(params["cond_jaxpr"], fs[:nc] + carry, site)
            return carry
        if name == "cond":
            if fs and fs[0].taint:
                return None  # a sentinel as the branch index
            results = [closed(branch, fs[1:], site) for branch in params["branches"]]
            outs = []
            for k, v in enumerate(eqn.outvars):
                per_branch = [r[k] for r in results]
                met = meets_among(per_branch, [v] * len(per_branch))
                if met:
                    report(eqn, met, site, True)  # the branches' results meet in the result
                outs.append(_join(per_branch))
            return outs
        if name == "scan":
            nc, ncarry = scan_layout(params, len(fs))
            consts, carry, xs = fs[:nc], fs[nc:nc + ncarry], fs[nc + ncarry:]
            return loop(eqn, params["jaxpr"], consts, carry, xs, n_out - ncarry, site)
        sub = _sub_jaxpr(params, len(fs), n_out)
        if sub is not None:
            return closed(sub, fs, site)
        if t_all:
            return None
        if images:  # constants of sub-jaxprs may be sentinels: look into them
            for sub_jaxpr in core.jaxprs_in_params(params):
                run(sub_jaxpr, [_UNKNOWN] * len(sub_jaxpr.invars), (), site)
        return [_UNKNOWN] * n_out

    inner, _ = open_jaxpr(jaxpr)
    ins = []
    for i, var in enumerate(inner.invars):
        taint = seeds.get(i, frozenset())
        if taint:
            # The input holds no ordinary element equal to the images of the
            # sentinels it holds (refused otherwise), and they are extremes.
            r = _dtype_range(var.aval.dtype) or (0, 0)
            lo = r[0] + 1 if r[0] in taint else r[0]
            hi = r[1] - 1 if r[1] in taint else r[1]
            ins.append(_Fact(taint, lo, hi))
        else:
            ins.append(_UNKNOWN)
    closed(jaxpr, ins)
    return found


def _describe_images(images: frozenset[int]) -> str:
    return " / ".join(f"{_NAMES[i]} ({_WIDE[i]}) \u2192 {_TARGET[i]}" for i in sorted(images))


def act_on_sentinel_reads(reads: list[SentinelRead]) -> None:
    """Refuse (range policies ``strict`` and ``exact``) or record as
    ``unproven`` (``default``, ``permissive``) each read of a host sentinel
    as a number."""
    if not reads:
        return
    from ..kinds import RangePolicy

    config = STATE.active_config()
    policy = config.policy if config is not None else RangePolicy.DEFAULT
    for r in reads:
        image = min(r.images)
        sentinel = _describe_images(r.images)
        if r.meets:
            what = (f"the host sentinel {sentinel} meets, in {r.primitive}, values that may be "
                    f"{' / '.join(_TARGET[i] for i in sorted(r.images))} themselves")
            why = "the 32-bit program could not tell them apart"
            way = ("Declare a value range that excludes it (a narrower type, a clip), use "
                   "another \"no value\" marker")
        else:
            what = f"the host sentinel {sentinel} is read as a number by {r.primitive}"
            why = (f"the 32-bit program would compute with {_TARGET[image]} where the 64-bit "
                   f"one computes with {_WIDE[image]}")
            way = "Keep sentinels to moves, selections, min/max, sorting and comparisons"
        if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
            raise HostRangeError(
                f"no64: {what} at {r.source.source or r.source.raw}: {why} (policy "
                f"{policy.value!r} refuses it). {way}, or use no64.jit(..., policy='exact'), "
                "which computes with the 64-bit values",
                value=_WIDE[image], dtype="uint64" if image == _U32.max else "int64", index=(),
                source=r.source,
            )
        _record(EventKind.UNPROVEN, r.primitive, f"{what}: {why}", 1, source=r.source)
        if policy is RangePolicy.DEFAULT:
            _warn_sentinel(r.source, f"{what}: {why}. {way}, or use policy 'exact'")


def _warn_sentinel(source: SourceLocation, message: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line where a host
    sentinel is read as a number or meets values that may be its image (the
    default policy computes with the image there: never silently)."""
    if not _warn_once_at(source, f"no64: {message}", UnprovenIntegerWarning, _warned_sentinels):
        warnings.warn(f"no64: {message}", UnprovenIntegerWarning, stacklevel=2)


#: per traced program (weakly): (seeds, images) -> what sentinel_reads found
_reads_cache: "weakref.WeakKeyDictionary[Any, dict[Any, list[SentinelRead]]]" = (
    weakref.WeakKeyDictionary())
_reads_lock = threading.Lock()


def check_sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                         images: frozenset[tuple[int, str | None, int | None]]) -> None:
    """:func:`sentinel_reads` (cached per jaxpr, seeds and images), then
    :func:`act_on_sentinel_reads`."""
    key = (tuple(sorted(seeds.items())), images)
    with _reads_lock:
        try:
            per = _reads_cache.get(jaxpr)
        except TypeError:
            per = None
        reads = per.get(key) if per is not None else None
    if reads is None:
        reads = sentinel_reads(jaxpr, seeds, images)
        with _reads_lock:
            try:
                _reads_cache.setdefault(jaxpr, {})[key] = reads
            except TypeError:
                pass
    act_on_sentinel_reads(reads)


def argument_seeds(leaves: list[Any], offset: int = 0) -> dict[int, frozenset[int]]:
    """Positions (plus ``offset``) of the host values among ``leaves`` that
    hold sentinels, and the 32-bit images they map to."""
    seeds: dict[int, frozenset[int]] = {}
    for i, x in enumerate(leaves):
        images = _sentinel_images(x)
        if images:
            seeds[i + offset] = images
    return seeds


def _install_sentinel_reads() -> None:
    """Wrap ``pjit._infer_params`` (the Python path of every ``jit`` call,
    ``.trace()`` and ``.lower()``: a call with a 64-bit numpy argument always
    takes it, see ``_install_fastpath_guard``): the host sentinels mapped
    while it traces, and the arguments holding sentinels, are followed
    through the traced program (:func:`sentinel_reads`)."""
    from jax._src import core as jax_core

    from ._compat import jit_function, replace_jit_function

    _exclude_from_source_locations()
    original = jit_function("_infer_params")
    if getattr(original, "__no64__", False):
        return

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        try:
            return _following(fun, ji, args, kwargs)
        except OverflowError as exc:
            own = exc.__context__
            if not isinstance(own, PythonIntRangeError) or own is exc:
                raise
            # JAX's argument parsing replaced no64's refusal (an OverflowError)
            # with its own: the refusal, with JAX's words as a note.
            own.add_note(str(exc))
            raise own from None

    def _following(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        if host_policy() is None:
            return original(fun, ji, args, kwargs)
        if not jax_core.trace_state_clean():
            # Traced inside another function (jnp.where's own jit): its
            # operands are known only there, whose trace is followed whole.
            return original(fun, ji, args, kwargs)
        # A top-level trace: what host sentinels become while it runs (nested
        # library traces included) is noted afresh, and forgotten after.
        _local.images = set()
        try:
            p, args_flat = original(fun, ji, args, kwargs)
            images = frozenset(_local.images)
        finally:
            _local.images = set()
        seeds = argument_seeds(args_flat)
        if images or seeds:
            check_sentinel_reads(p.params["jaxpr"], seeds, images)
        return p, args_flat

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)


def _exclude_from_source_locations() -> None:
    """No frame of no64 is the user's frame in JAX's source locations (the
    locations of a module's ops, which the pass's reports and refusals name)."""
    from jax._src import source_info_util

    if _OWN_DIR not in source_info_util._exclude_paths:
        source_info_util.register_exclusion(_OWN_DIR)


# ---------------------------------------------------------------------------
# The user's line of a refused op inside a library's own jitted function
# ---------------------------------------------------------------------------


def name_callers_line(exc: BaseException, module: Any) -> None:
    """Give a refusal of an op that has no source line of its own the line of
    the call that reached it.

    JAX lowers a library's own jitted function (``jnp.where``'s ``_where``) to
    a private function whose ops carry no user frame; the user's line is that
    of a ``func.call`` of it (followed outwards through nested calls).  Only
    on the error path: nothing is looked up while a module converts.
    """
    from ..ir._mlir import ir
    from ..ir.locations import decode_location
    from ..spec.registry import spec_of

    loc = getattr(exc, "location", None)
    if not isinstance(loc, SourceLocation) or loc.file is not None or not exc.args:
        return
    wanted = f"loc({loc.raw})"
    found: list[Any] = []

    def visit(op: Any) -> Any:
        if str(op.location) == wanted:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    try:
        module.operation.walk(visit)
    except Exception:  # noqa: BLE001 - a best effort on the error path only
        return
    if not found:
        return
    calls: dict[str, list[Any]] = {}

    def collect(op: Any) -> Any:
        if spec_of(op.name).call:
            calls.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    op = found[0]
    for _ in range(16):
        fn = op.parent
        while fn is not None and not spec_of(fn.name).function:
            fn = fn.parent
        if fn is None:
            return
        sites = calls.get(ir.StringAttr(fn.attributes["sym_name"]).value)
        if not sites:
            return
        op = sites[0]
        site = decode_location(op.location)
        if site.file is not None:
            new = SourceLocation(loc.primitive, loc.scope, site.file, site.line, site.column,
                                 loc.raw)
            old_text, new_text = f" at {loc}", f" at {new}"
            message = str(exc.args[0])
            if old_text in message:
                exc.args = (message.replace(old_text, new_text, 1), *exc.args[1:])
            else:
                exc.args = (f"{message} (called at {new.source})", *exc.args[1:])
            exc.location = new  # type: ignore[attr-defined]
            return
