"""Host values: no64, not JAX, narrows 64-bit host data to 32 bits.

With ``jax_enable_x64`` off, JAX converts 64-bit host data to 32 bits by
blind truncation: ``np.int64(INT64_MAX)`` becomes ``-1``, ``INT64_MIN``
becomes ``0``, ``np.array([2**40])`` becomes ``[0]``, a float64 ``1e300``
becomes ``inf``, and a Python int outside the int32 range is an
``OverflowError``.  no64 turns x64 off for a platform without 64-bit types
(``NO64_PLATFORMS``, :func:`no64.install`) and inside :func:`no64.jit`, so
while it does, every such conversion goes through the rules the pass applies
to module constants (:mod:`no64.core.constants`):

* ``INT64_MAX``/``INT64_MIN``/``UINT64_MAX`` and float64's largest finite
  value and its negation map to the 32-bit extremes (report kind
  ``"sentinel"``);
* any other integer outside the 32-bit range raises :class:`HostRangeError`
  (a :class:`no64.ConstantRangeError`) naming the value and the user's
  source line, or is narrowed by the integer policy (``"saturated"`` /
  ``"wrapped"``);
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
   the 64-bit numpy scalar types, ``int`` and ``float``.
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
   then narrowed by no64.
5. The C++ ``jit`` dispatch path converts numpy arguments itself, without
   calling back into Python.  ``pjit._get_fastpath_data`` is wrapped so that
   a call with a 64-bit numpy argument never gets a C++ fast path: such
   calls always go through (1).  32-bit arguments keep it.  An AOT
   ``Compiled`` object's C++ call (``MeshExecutable.create_cpp_call``) is
   wrapped likewise: with 64-bit numpy arguments it takes the Python path.

Lowering (``mlir.ir_constant``) sees only canonicalized values: a 64-bit
constant that still reaches a module (a ``jax.Array`` made with x64 on) is
narrowed by the compile hook's pass, with the same rules.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

from ..core import constants as C
from ..core.locations import SourceLocation
from ..core.report import Event
from ..errors import ConstantRangeError, HostRangeError, No64Error

__all__ = [
    "HostRangeError",
    "clear_host_records",
    "host_policy",
    "host_records",
    "install_hooks",
    "narrow_host_array",
    "narrow_python_int",
    "user_source",
]

_I32 = np.iinfo(np.int32)
_U32 = np.iinfo(np.uint32)
_I64 = np.iinfo(np.int64)
_U64 = np.iinfo(np.uint64)
_F64_MAX = float(np.finfo(np.float64).max)
_F32_MAX = float(np.finfo(np.float32).max)

_INT64 = np.dtype(np.int64)
_UINT64 = np.dtype(np.uint64)
_FLOAT64 = np.dtype(np.float64)
_COMPLEX128 = np.dtype(np.complex128)
_INT32 = np.dtype(np.int32)
_UINT32 = np.dtype(np.uint32)
_FLOAT32 = np.dtype(np.float32)
_COMPLEX64 = np.dtype(np.complex64)

#: 64-bit dtype -> the 32-bit dtype no64 gives it.
NARROWED = {_INT64: _INT32, _UINT64: _UINT32, _FLOAT64: _FLOAT32, _COMPLEX128: _COMPLEX64}


# ---------------------------------------------------------------------------
# When no64 narrows host values
# ---------------------------------------------------------------------------

_default_covered: dict[Any, bool] = {}


def host_policy() -> str | None:
    """The integer policy for host values in this thread, or ``None`` when
    no64 does not narrow them (x64 on, or no64 inactive for the default
    backend and outside :func:`no64.jit`)."""
    from jax._src import config as jax_config

    if jax_config.enable_x64.value:
        return None
    from . import hook

    state = hook._state
    if state is None:
        return None
    config = state.value
    if config is None or config.mode == "off":
        return None
    if hook.ALL_PLATFORMS in config.platforms or hook._x64_off_by_no64:
        return config.integer_policy
    covered = _default_covered.get(config)
    if covered is None:
        from jax._src import xla_bridge

        started = xla_bridge.backends_are_initialized()
        default = hook._default_platform(started)
        # Before the backends start, no64 turned x64 off on the assumption
        # that a listed platform may become the default.
        covered = True if default is None else config.applies_to(default)
        if started:
            _default_covered[config] = covered
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
        codes, lastis = traceback.raw_frames()
        for code, lasti in zip(codes, lastis):
            filename = code.co_filename
            if not (filename.startswith(inside) or filename.startswith("<frozen")):
                line = source_info_util.raw_frame_to_frame(code, lasti).start_line
                return SourceLocation(None, code.co_name, filename, line, None,
                                      f"{filename}:{line}")
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(inside) or filename.startswith("<frozen")):
            raw = f"{filename}:{frame.f_lineno}"
            return SourceLocation(None, frame.f_code.co_name, filename, frame.f_lineno, None, raw)
        frame = frame.f_back
    return SourceLocation(None, None, None, None, None, "<unknown>")


_records_lock = threading.Lock()
_records: dict[tuple[Any, ...], Event] = {}
_MAX_SITES = 1024


def _record(kind: str, op: str, detail: str, count: int) -> None:
    source = user_source()
    key = (kind, op, source.file, source.line)
    with _records_lock:
        event = _records.get(key)
        if event is not None:
            event.count += count
            return
        if len(_records) >= _MAX_SITES:
            _records.pop(next(iter(_records)))
        _records[key] = Event(kind, op, source, detail, count)


def host_records() -> list[Event]:
    """The host narrowings that were not exact, one :class:`no64.core.report.Event`
    per kind and source line (``count`` sums the elements over all calls),
    oldest first; the kinds are those of the pass's report."""
    with _records_lock:
        return list(_records.values())


def clear_host_records() -> None:
    """Forget the records returned by :func:`host_records`."""
    with _records_lock:
        _records.clear()


# ---------------------------------------------------------------------------
# Narrowing
# ---------------------------------------------------------------------------


def _describe(a: np.ndarray, scalar: bool) -> str:
    if scalar:
        return f"a numpy {a.dtype} scalar"
    return f"an {a.dtype}{list(a.shape)} array"


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


def narrow_host_array(a: np.ndarray, policy: str, *, op: str = "host value",
                      scalar: bool = False) -> np.ndarray:
    """``a`` (of a 64-bit dtype) as its 32-bit dtype, by no64's rules.

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
            _record("sentinel", op, _sentinel_detail(a, unsigned), res.sentinels)
        if res.out_of_range:
            if res.values is None:
                info = _U32 if unsigned else _I32
                bad = (a > info.max) if unsigned else ((a > info.max) | (a < info.min))
                bad &= ~((a == _U64.max) if unsigned else ((a == _I64.max) | (a == _I64.min)))
                flat = int(np.argmax(bad.reshape(-1)))
                index = tuple(int(i) for i in np.unravel_index(flat, a.shape)) if a.shape else ()
                source = user_source()
                at = f" at index {index}" if index else ""
                more = f" (and {res.out_of_range - 1} more)" if res.out_of_range > 1 else ""
                raise HostRangeError(
                    f"no64: {_describe(a, scalar)} at {source.source or source.raw} holds "
                    f"{res.first_bad}{at}{more}, outside {NARROWED[dt]}'s range and no "
                    f"sentinel; {_policy_hint()}",
                    value=int(res.first_bad), dtype=str(dt), index=index, source=source,
                )
            kind = "saturated" if policy == "saturate" else "wrapped"
            _record(kind, op, f"out-of-range integer {res.first_bad} narrowed by policy "
                    f"{policy!r}", res.out_of_range)
        assert res.values is not None
        return res.values.reshape(a.shape)
    fres = C.narrow_floats(a.reshape(-1))
    if fres.sentinels:
        _record("sentinel", op, "mapped float64 max/lowest \u2192 float32 max/lowest", fres.sentinels)
    if fres.inexact:
        _record("float-inexact", op, "rounded to the nearest float32", fres.inexact)
    if fres.overflow:
        _record("float-overflow", op, "beyond float32's range: became inf", fres.overflow)
    return fres.values.reshape(a.shape)


def narrow_python_int(v: int, policy: str, *, unsigned: bool = False,
                      op: str = "host value") -> int:
    """A Python int outside the 32-bit range but inside the 64-bit one, by
    no64's rules (``unsigned``: for a uint32 target).  Ints already in range,
    or beyond 64 bits, are returned unchanged."""
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
        _record("sentinel", op, _sentinel_detail(a, unsigned), 1)
    elif res.values is None:
        source = user_source()
        raise HostRangeError(
            f"no64: the Python int {v} at {source.source or source.raw} is outside "
            f"{'uint32' if unsigned else 'int32'}'s range and no sentinel; {_policy_hint()}",
            value=v, dtype="int", index=(), source=source,
        )
    else:
        kind = "saturated" if policy == "saturate" else "wrapped"
        _record(kind, op, f"out-of-range integer {v} narrowed by policy {policy!r}", 1)
    assert res.values is not None
    return int(res.values[0])


def _narrow_python_float(v: float, op: str) -> float:
    """Float64 sentinels map to float32's; a finite value beyond float32 is
    recorded (it becomes inf).  Rounding of ordinary Python floats is not
    recorded: they are weakly typed and round to float32 in the x64 program
    too wherever they meet float32 arrays."""
    if v == _F64_MAX or v == -_F64_MAX:
        _record("sentinel", op, "mapped float64 max/lowest \u2192 float32 max/lowest", 1)
        return _F32_MAX if v > 0 else -_F32_MAX
    if abs(v) > _F32_MAX and v == v and abs(v) != float("inf"):
        _record("float-overflow", op, "beyond float32's range: became inf", 1)
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
        _install_int_aval()
        _install_convert_element_type()
        _install_array()
        _install_fastpath_guard()
        _install_aot_guard()
        _install_warning_levels()
        _installed = True


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
                return typed(np.ascontiguousarray(narrow_host_array(np.asarray(x), policy)))
        check_valid(dt)
        return typed(np.asarray(x, dtype=canonical(dt), order="C"))

    def scalar(x: np.generic) -> Any:
        policy = host_policy()
        a = np.asarray(x)
        if policy is not None:
            return typed(narrow_host_array(a, policy, scalar=True))
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
                return int_type(narrow_python_int(x, policy), _INT32)
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


def _install_int_aval() -> None:
    from jax._src import core

    original = core.pytype_aval_mappings[int]

    def int_aval(x: int) -> Any:
        if _needs_int(x):
            policy = host_policy()
            if policy is not None and _I64.min <= x <= _I64.max:
                if policy == "error" and x not in (_I64.max, _I64.min):
                    narrow_python_int(x, policy)  # raises, naming the user's line
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


def _pre_narrow(operand: Any, new_dtype: Any, policy: str, op: str) -> Any:
    """``operand`` narrowed by no64 when it is 64-bit host data that a
    conversion to ``new_dtype`` would truncate; otherwise ``operand``."""
    t = type(operand)
    if t is int:
        if not _needs_int(operand):
            return operand
        try:
            new = np.dtype(new_dtype) if new_dtype is not None else _INT32
        except TypeError:
            return operand
        if new in (_INT32, _INT64):
            return narrow_python_int(operand, policy, op=op)
        if new in (_UINT32, _UINT64):
            return narrow_python_int(operand, policy, unsigned=True, op=op)
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


def _requested(dtype: Any) -> np.dtype | None | bool:
    """The dtype a ``jnp.array`` call asks for (``None``: none), or ``False``
    when it is not one no64 narrows from."""
    if dtype is None:
        return None
    try:
        want = np.dtype(getattr(dtype, "dtype", dtype))
    except TypeError:
        return False
    return want if want in NARROWED else False


def _array_input(object: Any, dtype: Any) -> tuple[Any, Any]:
    """``jnp.array``/``jnp.asarray`` input as the x64 program converts it on
    the host, then narrowed by no64 (``object`` and ``dtype`` unchanged when
    nothing in it needs narrowing or no64 is not narrowing host values)."""
    policy = host_policy()
    if policy is None or not _leaves_need_narrowing(object):
        return object, dtype
    want = _requested(dtype)
    if want is False:
        return object, dtype
    try:
        wide = np.asarray(object, dtype=want)
    except (TypeError, ValueError, OverflowError):
        return object, dtype
    if wide.dtype not in NARROWED:
        return object, dtype
    scalar = wide.ndim == 0 and not isinstance(object, np.ndarray)
    return narrow_host_array(wide, policy, scalar=scalar), None


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
    from jax._src.numpy import array_constructors, array_creation, index_tricks, lax_numpy
    from jax._src.numpy import scalar_types

    modules = (array_constructors, array_creation, lax_numpy, index_tricks, scalar_types, jnp)
    original_array = array_constructors.array
    if getattr(original_array, "__no64__", False):
        return
    original_asarray = array_constructors.asarray

    def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = "K",
              ndmin: int = 0, **kwargs: Any) -> Any:
        object, dtype = _array_input(object, dtype)
        return original_array(object, dtype, copy=copy, order=order, ndmin=ndmin, **kwargs)

    def asarray(a: Any, dtype: Any = None, order: str | None = None, **kwargs: Any) -> Any:
        a, dtype = _array_input(a, dtype)
        return original_asarray(a, dtype, order, **kwargs)

    _replace("array", original_array, array, modules)
    _replace("asarray", original_asarray, asarray, modules)


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
        dtypes.warnings = _WarningsPastNo64(warnings)


def _install_fastpath_guard() -> None:
    from jax._src import pjit

    original = pjit._get_fastpath_data
    if getattr(original, "__no64__", False):
        return

    def _get_fastpath_data(executable: Any, out_tree: Any, args_flat: Any, *rest: Any) -> Any:
        if host_policy() is not None:
            for a in args_flat:
                t = type(a)
                if (t is np.ndarray or isinstance(a, np.generic)) and a.dtype in NARROWED:
                    return None  # jaxlib's C++ dispatch would truncate it
        return original(executable, out_tree, args_flat, *rest)

    _get_fastpath_data.__wrapped__ = original  # type: ignore[attr-defined]
    _get_fastpath_data.__no64__ = True  # type: ignore[attr-defined]
    pjit._get_fastpath_data = _get_fastpath_data


def _has_wide_numpy(tree: Any) -> bool:
    from jax import tree_util

    for a in tree_util.tree_leaves(tree):
        if (type(a) is np.ndarray or isinstance(a, np.generic)) and a.dtype in NARROWED:
            return True
    return False


def _install_aot_guard() -> None:
    from jax._src import stages
    from jax._src.interpreters import pxla

    from ._compat import cpp_call_params

    original = pxla.MeshExecutable.create_cpp_call
    if getattr(original, "__no64__", False):
        return

    def create_cpp_call(self: Any, *args: Any) -> Any:
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
    pxla.MeshExecutable.create_cpp_call = create_cpp_call

