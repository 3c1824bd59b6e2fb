"""The points where JAX converts host data, each wrapped so that no64 narrows it (see :mod:`no64.jax.host`)."""

from __future__ import annotations

import functools
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ...ir.types import I64 as _I64
from ...kinds import IntegerPolicy
from .. import x64_arrays
from ..state import STATE
from .narrowing import narrow_host_array, narrow_python_float, narrow_python_int, needs_float, needs_int
from .policy import (
    COMPLEX64,
    COMPLEX128,
    FLOAT32,
    FLOAT64,
    INT32,
    INT64,
    NARROWED,
    NARROWED_IMAGES,
    NO_FAST_PATH,
    OWN_DIR,
    UINT32,
    UINT64,
    host_policy,
)
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


def install_device_put() -> None:
    from .._compat import wrap_device_put_impl

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
    from ...kinds import FloatPolicy

    kind = np.dtype(dtype).kind
    if kind in "iu":
        return True
    config = STATE.active_config() if config is None else config
    return kind in "fc" and config is not None and config.float_policy is FloatPolicy.PAIRS


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
        wide = _x64_dtype_of(object, dtype)
        object, dtype = _array_input(object, dtype, "array")
        return _noted(original_array(object, dtype, copy=copy, order=order, ndmin=ndmin, **kwargs), wide)

    def asarray(a: Any, dtype: Any = None, order: str | None = None, **kwargs: Any) -> Any:
        wide = _x64_dtype_of(a, dtype)
        a, dtype = _array_input(a, dtype, "asarray")
        return _noted(original_asarray(a, dtype, order, **kwargs), wide)

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
            if not filename.startswith(OWN_DIR):
                counted += 1
        self._module.warn(message, category, level + 1, *args, **kwargs)


def install_warning_levels() -> None:
    from .._compat import wrap_dtype_warnings

    wrap_dtype_warnings(_WarningsPastNo64)


def install_fastpath_guard() -> None:
    from .._compat import is_flagged, jit_function, replace_jit_function

    original = jit_function("_get_fastpath_data")
    if getattr(original, "__no64__", False):
        return

    def _get_fastpath_data(executable: Any, out_tree: Any, args_flat: Any, *rest: Any) -> Any:
        if host_policy() is not None:
            for a in args_flat:
                t = type(a)
                if (t is np.ndarray or isinstance(a, np.generic)) and a.dtype in NO_FAST_PATH:
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


def install_aot_guard() -> None:
    from .._compat import cpp_call_params, internal_function, is_flagged, replace_internal_function

    original = internal_function("create_cpp_call")
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
                return internal_function("compiled_call")(params, *args, **kwargs)[0]  # through (1)
            return cpp(*args, **kwargs)

        return call

    create_cpp_call.__wrapped__ = original  # type: ignore[attr-defined]
    create_cpp_call.__no64__ = True  # type: ignore[attr-defined]
    replace_internal_function("create_cpp_call", create_cpp_call)


