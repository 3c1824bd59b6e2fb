"""The x64 meaning of a program no64 runs 32-bit.

Under the compile hook no64 turns ``jax_enable_x64`` off before anything is
traced (a platform without 64-bit types cannot hold 64-bit arrays), and
:func:`no64.jit` traces with x64 off: JAX then computes in 32 bits, and a
program that asked for x64 because its integers need 64 bits (an ``int64``
``cumsum`` past 2**31, a sum of upcast ``int32`` values, a 64-bit hash) would
wrap silently.  This module gives no64 the program's *x64 meaning* to judge
the 32-bit program against:

* when JAX traces a top-level ``jit`` for a program that asked for x64 (no64
  turned x64 off for it, or the call is :func:`no64.jit`'s), the function is
  traced once, with x64 on, for the caller's argument dtypes (its x64
  program), and JAX's 32-bit trace is a replay of it (:mod:`no64.jax.replay`):
  the user's Python runs once (``_trace_for_jit``; JAX caches the trace per
  signature; where the replay cannot be had, the function is traced with x64
  off as well); under the pairs float policy its float64 host arguments
  enter as their ``S x 2`` float32 pairs, which a variant of the function
  takes back to float64 in the x64 program (``_float64_as_pairs``);
* when JAX lowers the 32-bit trace, the x64 trace is remembered beside the
  module JAX made, and lowered only when that module reaches the backend;
* the hook then judges the x64 module (:func:`no64.jax.hook.prepare_with_meaning`):
  every integer the
  x64 program computes in 64 bits is proven to fit in 32 bits, or reported
  at the user's line (:class:`no64.UnprovenIntegerWarning`, the compile
  record and the audit) under the default policy, refused under ``strict``,
  and computed exactly in 32-bit word pairs under ``exact`` -- where the
  converted x64 module is what the backend compiles, behind the 32-bit
  signature JAX lowered, and an output not proven to fit in the 32-bit
  array the user receives is refused (:class:`no64.OutputRangeError`).

What has no x64 meaning here: a trace whose x64 version fails or differs in
its signature (``kept`` arguments, effects, host callbacks), programs traced
inside other transformations (only top-level ``jit`` calls are traced
with x64 on), and 32-bit ``jax.Array`` values made from 64-bit data before the call
(their x64 meaning is not known; pass the host data to the jitted function).
"""

from __future__ import annotations

import collections
import functools
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import (
    ConstantRangeError,
    FloatPrecisionWarning,
    NarrowingError,
    NoX64MeaningError,
    NoX64MeaningWarning,
    OutputRangeError,
    UnprovenIntegerWarning,
)
from ..ir._mlir import ir
from ..ir.types import F32_MAX as _F32_MAX
from ..kinds import FloatPolicy, RangePolicy, Verdict
from ..report import DemotionReport, Narrowing
from ..spec.registry import spec_of
from . import host, x64_arrays
from ._compat import (
    after_python_jit_call,
    at_top_level,
    convert_element_type,
    enable_x64,
    eval_jaxpr,
    internal_function,
    jit_dynamic_arguments,
    jit_function,
    jit_input_avals,
    replace_jit_function,
    trace_flat,
    traced_constant_sources,
    watch_explicit_dtypes,
    wrap_jit_impl,
    wrap_jit_lower,
    wrap_jit_trace,
    wrap_numpy_function,
    wrap_primitive_callable,
    wrap_random_samplers,
    x64_state,
)
from .replay import image_aval, replay_function, widened_params
from .state import STATE

__all__ = ["NoMeaning", "clear_warned", "has_meaning", "install", "meaning_of", "no_meaning",
           "output_error", "refuse_or_warn_overflow", "refuse_without_meaning", "refuse_unless_proven",
           "runnable_32bit", "set_x64_meaning", "unproven", "warn_float_hints", "warn_unproven", "with_x64_arguments"]

_lock = threading.RLock()
_installed = False
_original_trace: Callable[..., Any] | None = None
_original_lower: Callable[..., Any] | None = None

#: 32-bit ClosedJaxpr -> the PjitParams of the x64 trace (None: no x64 meaning)
_meanings: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered) -> (that module, a function lowering the x64 trace)
_pending: "collections.OrderedDict[int, tuple[ir.Module, Callable[[], ir.Module | None]]]" = (
    collections.OrderedDict())
_PENDING_MAX = 256
#: 32-bit ClosedJaxpr -> the refusal its x64 meaning stands in for (see _trace_for_exact)
_required: "weakref.WeakKeyDictionary[Any, ConstantRangeError]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered) -> that refusal
_required_modules: dict[int, ConstantRangeError] = {}
#: replayed 32-bit ClosedJaxpr -> a function tracing the user's function with x64 off
_replayed: "weakref.WeakKeyDictionary[Any, Callable[[], Any]]" = weakref.WeakKeyDictionary()
#: id(module JAX lowered from a replay) -> (that module, a function lowering JAX's own trace)
_genuine: dict[int, tuple[ir.Module, Callable[[], ir.Module]]] = {}
#: 32-bit ClosedJaxpr with an x64 meaning -> its host sentinel check, run if
#: the 32-bit program runs after all (see _sentinels_judged)
_sentinel_checks: "weakref.WeakKeyDictionary[Any, Callable[[], None]]" = weakref.WeakKeyDictionary()
#: the 32-bit ClosedJaxprs whose own program runs (their x64 module could not be had)
_runs_32bit: "weakref.WeakSet[Any]" = weakref.WeakSet()
#: id(module JAX lowered) -> (that module, a weak reference to its 32-bit ClosedJaxpr)
_lowered_from: dict[int, tuple[ir.Module, Any]] = {}

_tls = threading.local()

#: (file, line) already warned about, once per process
_warned: set[tuple[str, int]] = set()
_warned_float: set[tuple[str, int]] = set()


def install() -> None:
    """Put the x64 trace, its replay and the x64 lowering into JAX's ``jit`` (idempotent)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        def take_trace(original: Callable[..., Any]) -> Callable[..., Any]:
            global _original_trace
            _original_trace = original
            return _trace_for_jit

        def take_lower(original: Callable[..., Any]) -> Callable[..., Any]:
            global _original_lower
            _original_lower = original
            return _pjit_lower

        wrap_jit_trace(take_trace)
        wrap_jit_lower(take_lower)
        _install_call_variants()
        wrap_primitive_callable(_eager_with_wide_operands)
        watch_explicit_dtypes(_note_explicit_dtype)
        host.veto_fast_path(_no_fast_path)
        after_python_jit_call(_after_call)
        host.on_wide_narrowed(_note_wide_host_data)
        wrap_jit_impl(_unjudged_jit_with_wide_operands)
        wrap_random_samplers(_sampler_in_a_jit)
        wrap_numpy_function("astype", _conversion_in_a_jit)
        host.judged_by_x64_module(_sentinels_judged)

        _installed = True


# ---------------------------------------------------------------------------
# One trace per x64 signature of the call
# ---------------------------------------------------------------------------
#
# JAX keys its trace (and so the module and the executable) by the 32-bit
# abstract values of a call.  A call with 64-bit numpy data has the same
# 32-bit values as one with 32-bit data, but another x64 program
# (``a * a`` of int64 data is a 64-bit product): it must not be served the
# trace -- and the x64 meaning -- of the other.  Such a call traces a
# variant of the function, equal to it but for the dtypes of the host data,
# so JAX's caches keep one entry per x64 signature.  (Calls with 64-bit numpy
# data never take jaxlib's C++ fast path: see no64.jax.host.)


class _X64Variant:
    """``fun`` under another key: the dtypes of the call's 64-bit host data.

    ``pairs``: the leaves of the call's arguments (all of them, flattened)
    that are float64 host data entering as their ``S x 2`` float32 pairs
    (:func:`_float64_as_pairs`): the variant gives ``fun`` each as the value
    its pair holds (float64 with x64 on, its f32 rounding with x64 off),
    weakly typed where it is a Python float (``weak``)."""

    def __init__(self, fun: Callable[..., Any], key: tuple[str, ...],
                 pairs: frozenset[int] = frozenset(), weak: frozenset[int] = frozenset()) -> None:
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._key = key
        self._pairs = pairs
        self._weak = weak

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._pairs:
            from jax import tree_util

            leaves, tree = tree_util.tree_flatten((args, kwargs))
            leaves = [_from_pairs(x, i in self._weak) if i in self._pairs else x
                      for i, x in enumerate(leaves)]
            args, kwargs = tree_util.tree_unflatten(tree, leaves)
        return self._fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash((self._fun, self._key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _X64Variant) and other._fun == self._fun
                and other._key == self._key)

    def __repr__(self) -> str:
        return f"{self._fun!r} (x64 signature {', '.join(self._key)})"


#: fun -> {x64 signature: its variant}
_variants: "weakref.WeakKeyDictionary[Any, dict[tuple[str, ...], _X64Variant]]" = (
    weakref.WeakKeyDictionary())


def _x64_signature(args: Any, kwargs: Any) -> tuple[str, ...] | None:
    """The dtypes of a call's array leaves (and the host sentinels 64-bit
    numpy data holds) if one is 64-bit numpy data or a 32-bit array of a
    64-bit value of the x64 program (:mod:`no64.jax.x64_arrays`), which the
    32-bit program holds as 32-bit data, else ``None``."""
    import numpy as np
    from jax import tree_util

    leaves = tree_util.tree_leaves((args, kwargs))
    wide = False
    key = []
    for a in leaves:
        if type(a) is np.ndarray or isinstance(a, np.generic):
            wide = wide or a.dtype in host.NARROWED
            # data holding a host sentinel is another x64 program: the sentinel
            # is taken back at its entry (_sentinels_restored)
            images = host.argument_seeds([a]).get(0)
            key.append(a.dtype.str if not images else f"{a.dtype.str} holding {sorted(images)}")
            continue
        marked = x64_arrays.x64_dtype(a)
        if marked is not None:
            wide = True
            key.append(f"{marked.str} array")
            continue
        dtype = getattr(a, "dtype", None)
        key.append(str(dtype) if dtype is not None else type(a).__name__)
    return tuple(key) if wide else None


def _variant(fun: Any, args: Any, kwargs: Any, pairs: frozenset[int] = frozenset(),
             weak: frozenset[int] = frozenset()) -> Any:
    given = getattr(_tls, "arguments", None)
    key = _x64_signature(*(given if given is not None else (args, kwargs)))
    if pairs:
        key = (*(key or ()), f"float64 as pairs at {sorted(pairs)}, Python floats at {sorted(weak)}")
    if key is None:
        return fun
    try:
        per_fun = _variants.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: a variant per call (no cache)
        return _X64Variant(fun, key, pairs, weak)
    variant = per_fun.get(key)
    if variant is None:
        variant = per_fun[key] = _X64Variant(fun, key, pairs, weak)
    return variant


def _from_pairs(p: Any, weak: bool) -> Any:
    """The value an ``S x 2`` float32 pair (hi, lo) holds: ``hi + lo`` as
    float64 with x64 on (the x64 program's argument, which the pairs
    compute exactly), its f32 rounding with x64 off; ``hi`` itself where
    ``lo`` is zero (a signed zero, an infinity, NaN); weakly typed, as a
    Python float is, where ``weak``."""
    import jax
    import numpy as np
    from jax import lax

    wide = jax.dtypes.canonicalize_dtype(np.float64)
    hi = convert_element_type(p[..., 0], wide, weak)
    lo = convert_element_type(p[..., 1], wide, weak)
    return lax.select(lax.eq(lo, lax.full_like(lo, 0)), hi, lax.add(hi, lo))


def _check_python_floats(ji: Any, args: Any, kwargs: Any) -> None:
    """A top-level jit call's Python float arguments beyond float32's range
    (float64 in the x64 program, ``inf`` in the 32-bit one): refused as
    float64 numpy data is (:func:`no64.jax.host.check_float_range`)."""
    import numpy as np
    from jax import tree_util

    if not any(type(x) is float and abs(x) > _F32_MAX for x in tree_util.tree_leaves((args, kwargs))):
        return
    policy = host.host_policy()
    if policy is None:
        return

    def leaf(x: Any) -> Any:
        if type(x) is float:
            host.check_float_range(np.asarray(x), policy, "a Python float argument")
        return x

    _map_dynamic(args, kwargs, ji, leaf)


def _float64_as_pairs(ji: Any, args: Any, kwargs: Any) -> tuple[Any, Any, frozenset[int], frozenset[int]]:
    """A top-level jit call's arguments under the pairs float policy, with
    each float64 numpy array or scalar among its dynamic arguments replaced
    by its ``S x 2`` float32 pairs (:func:`no64.jax.host.host_pairs`,
    checked by value at the user's line), the positions of those leaves
    among all the arguments' leaves, and of those that were Python floats
    (weakly typed in the x64 program).  JAX's calling convention
    passes a float64 argument as one float32 array: as pairs its value
    crosses into the x64 program whole (about 48 bits of significand)
    rather than rounded to f32 on the host."""
    import numpy as np
    from jax import tree_util

    config = STATE.active_config()
    if config is None or getattr(_tls, "arguments", None) is not None:
        return args, kwargs, frozenset(), frozenset()  # (no64.jit's own call: it checks its arguments)
    if config.float_policy is not FloatPolicy.PAIRS:
        _check_python_floats(ji, args, kwargs)
        return args, kwargs, frozenset(), frozenset()
    f64 = np.dtype(np.float64)

    def host_float64(x: Any) -> bool:
        return type(x) is float or (
            (type(x) is np.ndarray or isinstance(x, np.generic)) and x.dtype == f64)

    if not any(host_float64(x) for x in tree_util.tree_leaves((args, kwargs))):
        return args, kwargs, frozenset(), frozenset()
    policy = host.host_policy()
    if policy is None:
        return args, kwargs, frozenset(), frozenset()
    entered: dict[int, tuple[Any, bool]] = {}

    def leaf(x: Any) -> Any:
        if not host_float64(x):
            return x
        what = "a Python float argument" if type(x) is float else f"a float64{list(np.shape(x))} argument"
        out = host.host_pairs(np.asarray(x), policy, what)
        entered[id(out)] = (out, type(x) is float)
        return out

    args, kwargs = _map_dynamic(args, kwargs, ji, leaf)
    leaves = tree_util.tree_leaves((args, kwargs))
    found = {i: entered[id(x)][1] for i, x in enumerate(leaves)
             if id(x) in entered and entered[id(x)][0] is x}
    return args, kwargs, frozenset(found), frozenset(i for i, weak in found.items() if weak)


def _eager_with_wide_operands(original: Callable[..., Any]) -> Callable[..., Any]:
    """An eager primitive's ``jit``, called with the 64-bit host data its
    operands were canonicalised from (so that it traces its x64 meaning, as
    a jitted function called with that data does)."""

    def xla_primitive_callable(prim: Any, **params: Any) -> Any:
        fun = original(prim, **params)
        if (host.wide_pending() or x64_arrays.marked_count()) and _wanted():
            def with_wide_operands(*args: Any) -> Any:
                wide = _wide_operands(prim, args)
                args = args if wide is None else wide
                kinds = _wide_kinds(args)
                call = _with_x64_params(fun, prim, params, kinds) if kinds else fun
                with x64_arrays.assumed(_promoted(args)):
                    return call(*args)
            return with_wide_operands
        return fun

    xla_primitive_callable.__wrapped__ = original  # type: ignore[attr-defined]
    return xla_primitive_callable


#: an eager primitive's jit -> {its operands' 64-bit dtypes by kind: the jit
#: binding it with the x64 program's parameters}
_x64_param_jits: "weakref.WeakKeyDictionary[Any, dict[tuple[tuple[str, str], ...], Any]]" = (
    weakref.WeakKeyDictionary())


def _with_x64_params(fun: Any, prim: Any, params: dict[str, Any], wide: dict[str, Any]) -> Any:
    """The jit of an eager primitive whose operands of a kind are 64-bit in
    the x64 program (``wide``): its x64 trace binds the primitive with the
    parameters the x64 program gives it (:func:`no64.jax.replay.widened_params`:
    a scatter's ``update_jaxpr`` for ``f64`` elements, where JAX made it for
    the ``f32`` it holds), a trace with x64 off with JAX's own; ``fun``
    itself where no parameter depends on the operands' width."""
    key = tuple(sorted((kind, d.str) for kind, d in wide.items()))
    try:
        per_fun = _x64_param_jits.setdefault(fun, {})
    except TypeError:  # not weakly referenceable: made for this call alone
        per_fun = {}
    jitted = per_fun.get(key)
    if jitted is None:
        params64 = widened_params(params, wide)
        jitted = per_fun[key] = fun if params64 is None else _x64_params_jit(prim, params, params64)
    return jitted


def _x64_params_jit(prim: Any, params: dict[str, Any], params64: dict[str, Any]) -> Any:
    import jax

    def prim_fun(*args: Any) -> Any:
        return prim.bind(*args, **(params64 if x64_state().value else params))

    prim_fun.__name__ = prim_fun.__qualname__ = prim.name
    return jax.jit(prim_fun)


def _wide_kinds(args: tuple[Any, ...]) -> dict[str, Any]:
    """The 64-bit dtypes, by kind, of an eager primitive's operands that are
    64-bit in the x64 program (:mod:`no64.jax.x64_arrays`) or 64-bit host data."""
    import numpy as np

    wide: dict[str, Any] = {}
    for a in args:
        d = x64_arrays.x64_dtype(a)
        if d is None and (type(a) is np.ndarray or isinstance(a, np.generic)) and a.dtype in host.NARROWED:
            d = a.dtype  # 64-bit host data (see _wide_operands)
        if d is not None:
            wide.setdefault(d.kind, d)
    return wide


def _promoted(args: tuple[Any, ...]) -> dict[int, Any]:
    """An eager primitive's 32-bit array operands that meet one of a 64-bit
    value of the x64 program (:mod:`no64.jax.x64_arrays`), or 64-bit host
    data, of their kind: JAX
    promoted them to it there before the primitive (``i32 + i64`` is an int64
    sum), so its x64 meaning takes them so."""
    import numpy as np

    wide = _wide_kinds(args)
    if not wide:
        return {}
    out: dict[int, Any] = {}
    for a in args:
        dtype = getattr(a, "dtype", None)
        if dtype is None or x64_arrays.x64_dtype(a) is not None:
            continue
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            continue
        if dtype in host.NARROWED_IMAGES and dtype.kind in wide:
            out[id(a)] = wide[dtype.kind]
    return out


def _differs_in_x64(dtype: Any, config: Any) -> bool:
    """Whether 64-bit data of ``dtype`` computes otherwise in the 32-bit
    program than in the x64 one: integers always, floats under the pairs
    float policy (under ``f32`` float64 is float32 in both)."""
    return host.computes_otherwise(dtype, config)


def _judged_original(x: Any, config: Any) -> Any:
    """The 64-bit host data ``x`` was narrowed from, where it computes
    otherwise in the x64 program (:func:`_differs_in_x64`); else ``None``."""
    w = host.wide_original(x)
    return w if w is not None and _differs_in_x64(w.dtype, config) else None


def _described(a: Any) -> str:
    """``int64[3]``: host data's dtype and shape."""
    import numpy as np

    return f"{np.dtype(a.dtype)}[{','.join(map(str, np.shape(a)))}]"


def _wide_operands(prim: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """An eager primitive's operands with the 64-bit host data they were
    narrowed from in place of their narrowed images (integers; floats under
    the pairs float policy), or ``None`` when none was.  A 32-bit array among
    them is promoted to the host data's dtype in the x64 meaning, as JAX
    promotes it there (:func:`_promoted`)."""
    config = STATE.active_config()
    if config is None:
        return None
    out = []
    found = False
    for a in args:
        w = _judged_original(a, config)
        found = found or w is not None
        out.append(a if w is None else w)
    return tuple(out) if found else None


def _unjudged_jit_with_wide_operands(original: Callable[..., Any]) -> Callable[..., Any]:
    """The eager run of a traced ``jit``: one traced with no x64 meaning (inside
    a transformation called outside any jit, ``jax.vmap(f)`` of a function
    calling ``jnp`` functions) that 64-bit host data enters is said at the
    line (:func:`no_meaning`): its 32-bit program computes that data."""

    def impl(*args: Any, **params: Any) -> Any:
        if (host.wide_pending() or x64_arrays.marked_count()) and _wanted():
            jaxpr = params.get("jaxpr")
            try:
                judged = jaxpr is None or jaxpr in _meanings
            except TypeError:
                judged = True
            if not judged:
                _refuse_unjudged(args, params)
        return original(*args, **params)

    impl.__wrapped__ = original  # type: ignore[attr-defined]
    return impl


def _no_fast_path(args_flat: Any, out_flat: Any) -> bool:
    """Whether a jit call must keep off jaxlib's C++ fast path: with x64
    requested, a call taking a 32-bit array (one of a 64-bit value of the x64
    program or not: the C++ cache cannot tell them apart) or returning one of
    a 64-bit value (to be noted at every call, :func:`_mark_outputs`)."""
    if not _x64_requested():
        return False
    import numpy as np

    config = STATE.active_config()
    assert config is not None
    for a in args_flat:
        dtype = getattr(a, "dtype", None)
        try:
            if dtype is not None and np.dtype(dtype) in host.NARROWED_IMAGES and _differs_in_x64(dtype, config):
                return True
        except TypeError:
            continue
    return x64_arrays.any_marked(out_flat)


#: 32-bit ClosedJaxpr -> per result, its 64-bit dtype in the x64 program (or None)
_out_x64: "weakref.WeakKeyDictionary[Any, tuple[Any, ...]]" = weakref.WeakKeyDictionary()


def _after_call(jaxpr: Any, out_flat: Any) -> None:
    if _x64_requested():
        _mark_outputs(jaxpr, out_flat)


def _mark_outputs(jaxpr: Any, outs: Any) -> None:
    """Note each result of a jit call that is 64-bit in the call's x64
    program (:mod:`no64.jax.x64_arrays`): the next call it enters takes it
    as the x64 program does (a step counter, an int64 accumulator)."""
    if jaxpr is None:
        return
    try:
        dtypes = _out_x64.get(jaxpr)
        if dtypes is None:
            deferred = _meanings.get(jaxpr)
            if deferred is None:
                return
            dtypes = _out_x64[jaxpr] = _x64_results(jaxpr, deferred.get())
    except TypeError:
        return
    if not any(d is not None for d in dtypes):
        return
    for out, dtype in zip(outs, dtypes):
        if dtype is not None:
            x64_arrays.mark(out, dtype)


def _x64_results(jaxpr: Any, p64: Any) -> tuple[Any, ...]:
    import numpy as np

    config = STATE.active_config()
    n = len(jaxpr.out_avals)
    if config is None or p64 is None or isinstance(p64, NoMeaning):
        return (None,) * n
    out: list[Any] = []
    for a32, a64 in zip(jaxpr.out_avals, p64.params["jaxpr"].out_avals):
        d32, d64 = getattr(a32, "dtype", None), getattr(a64, "dtype", None)
        try:
            wide = (d64 is not None and np.dtype(d64) in host.NARROWED
                    and host.NARROWED[np.dtype(d64)] == np.dtype(d32) and _differs_in_x64(d64, config))
        except TypeError:  # an extended dtype (a typed PRNG key)
            wide = False
        out.append(np.dtype(d64) if wide else None)
    return tuple(out)


# ---------------------------------------------------------------------------
# JAX's samplers called eagerly
# ---------------------------------------------------------------------------
#
# ``jax.random.normal(key, (3,))`` called outside any jit fixes its dtype --
# and what follows from it, such as the number of random bits -- in Python,
# before it calls its own jit: with x64 turned off that is float32 and 32
# bits, and the jit's x64 trace only sees the 32-bit choice, so the numbers
# are JAX's 32-bit draw, not the x64 program's (other values, not float64's
# rounded).  With x64 requested, an eager call of a sampler runs inside a
# top-level jit of its own, where the dtype is fixed while tracing: the x64
# trace draws what the x64 program draws, as ``jax.jit(jax.random.normal)``
# would.  (One jit per sampler and static arguments, kept in a bounded cache.)


def _is_array(x: Any) -> bool:
    import jax
    import numpy as np

    return isinstance(x, (np.ndarray, np.generic, jax.Array))


def _sampler_in_a_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def sampler(*args: Any, **kwargs: Any) -> Any:
        if not _wanted():
            return original(*args, **kwargs)
        outer = getattr(_tls, "sampler", None)
        _tls.sampler = outer or f"jax.random.{original.__name__}"
        try:
            return _called_in_a_jit(original, args, kwargs)
        finally:
            _tls.sampler = outer

    return sampler


def _called_in_a_jit(original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``original(*args, **kwargs)`` run inside a top-level jit of its own:
    its arrays are the jit's arguments, everything else (shapes, dtypes,
    Python scalars) is fixed while it is traced, with x64 on for its x64
    meaning."""
    dynamic = tuple(i for i, a in enumerate(args) if _is_array(a))
    dynamic_kw = tuple(sorted(k for k, v in kwargs.items() if _is_array(v)))
    static = tuple(None if i in dynamic else _hashable(a) for i, a in enumerate(args))
    static_kw = tuple(sorted((k, _hashable(v)) for k, v in kwargs.items() if k not in dynamic_kw))
    operands = (*(args[i] for i in dynamic), *(kwargs[k] for k in dynamic_kw))
    try:
        jitted = _sampler_jit(original, static, static_kw, dynamic, dynamic_kw)
    except TypeError:  # an unhashable static argument: a jit for this call alone
        jitted = _sampler_jit.__wrapped__(original, static, static_kw, dynamic, dynamic_kw)
    return jitted(*operands)


# ``x.astype(jnp.int64)`` outside any jit: JAX makes the requested dtype
# int32 in Python (with its warning that int64 "is not available") before the
# conversion runs, so a float beyond int32 (1e10) saturates to INT32_MAX where
# the x64 program holds 10000000000, and nothing would say so.  With x64
# requested, an eager conversion to a dtype JAX narrows runs inside a jit of
# its own, as a sampler does: its x64 trace converts to the 64-bit dtype, and
# the hook judges the 32-bit array it returns like any jit's result (reported
# at the line under the default policy, refused by strict, checked by value
# under exact).


def _conversion_in_a_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def astype(x: Any, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        if _wanted() and _narrowed_request(dtype):
            return _called_in_a_jit(original, (x, dtype, *args), kwargs)
        return original(x, dtype, *args, **kwargs)

    return astype


def _narrowed_request(dtype: Any) -> bool:
    """Whether ``dtype``, asked for in the x64 program, is a 64-bit dtype JAX
    makes 32-bit that computes otherwise there (:func:`_differs_in_x64`)."""
    import numpy as np

    config = STATE.active_config()
    if dtype is None or config is None:
        return False
    try:
        with enable_x64(True):
            wide = np.dtype(internal_function("canonicalize_dtype")(dtype))
    except TypeError:
        return False
    return wide in host.NARROWED and _differs_in_x64(wide, config)


def eager_sampler() -> str | None:
    """The public name of the sampler (``jax.random.normal``) whose eager
    call is compiling now, if any: the jit it runs in hides it from the
    stack."""
    return getattr(_tls, "sampler", None)


def _hashable(x: Any) -> Any:
    """A list (a shape given as a list) as a tuple, for the jit cache."""
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


@functools.lru_cache(maxsize=256)
def _sampler_jit(original: Callable[..., Any], static: tuple[Any, ...], static_kw: tuple[tuple[str, Any], ...],
                 dynamic: tuple[int, ...], dynamic_kw: tuple[str, ...]) -> Callable[..., Any]:
    import jax

    def call(*operands: Any) -> Any:
        args = list(static)
        for i, x in zip(dynamic, operands):
            args[i] = x
        kwargs = dict(static_kw)
        kwargs.update(zip(dynamic_kw, operands[len(dynamic):]))
        return original(*args, **kwargs)

    functools.update_wrapper(call, original)
    return jax.jit(call)


def _refuse_unjudged(args: tuple[Any, ...], params: dict[str, Any]) -> None:
    config = STATE.active_config()
    if config is None:
        return
    for a in args:
        w = _judged_original(a, config)
        marked = x64_arrays.x64_dtype(a)
        if w is not None or (marked is not None and _differs_in_x64(marked, config)):
            what = (f"{_described(w)} host data" if w is not None else
                    f"an array of the x64 program's {marked}[{','.join(map(str, a.shape))}]")
            no_meaning(NoMeaning(f"{what} enters it, traced {_TRANSFORMED}"),
                       str(params.get("name", "a jitted function")), config.policy)
            return


def _install_call_variants() -> None:
    original = jit_function("_infer_params")
    if getattr(original, "__no64_variants__", False):
        return

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        if _wanted():
            wide_args, wide_kwargs = args, kwargs
            args, kwargs, pairs, weak = _float64_as_pairs(ji, args, kwargs)
            fun = _variant(fun, wide_args, wide_kwargs, pairs, weak)
        return original(fun, ji, args, kwargs)

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64_variants__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)


@contextmanager
def with_x64_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[None]:
    """Within the block, a top-level trace's x64 meaning takes these arguments
    (the caller's, before :func:`no64.jit` narrowed them)."""
    saved = getattr(_tls, "arguments", None)
    _tls.arguments = (args, kwargs)
    try:
        yield
    finally:
        _tls.arguments = saved


def _x64_requested() -> bool:
    """Whether the program asked for x64 and no64 turned it off (outside
    no64's own x64 traces)."""
    return not getattr(_tls, "busy", False) and STATE.x64_requested()


#: Whether no64 traces the x64 meaning of programs (see :func:`set_x64_meaning`).
_meaning_on = True


def set_x64_meaning(on: bool) -> None:
    """Turn the x64 meaning on (the default) or off for the traces that
    start from now on, in every thread.  Off, no64 traces no program a
    second time with x64 on: what the x64 meaning costs is measured this
    way (``benchmarks/bench_hook.py``).  A trace that starts while it is
    off has no x64 meaning, as where the program did not ask for x64.  Not
    for use in programs."""
    global _meaning_on
    _meaning_on = bool(on)


def _wanted() -> bool:
    """Whether a trace starting now needs its x64 meaning."""
    if not _meaning_on or not _x64_requested():
        return False
    return at_top_level()


def _unjudged_transformation(dtype: Any) -> RangePolicy | None:
    """The policy in force if a 64-bit ``dtype`` met now is in a trace with no
    x64 meaning (a transformation outside any jit), else ``None``."""
    if dtype.itemsize != 8 or dtype.kind not in "iuf":
        return None
    if getattr(_tls, "judging", 0) or not _x64_requested():
        return None
    if at_top_level():
        return None  # eager (an eager primitive takes the x64 meaning) or a jit's arguments
    config = STATE.active_config()
    assert config is not None
    return config.policy if _differs_in_x64(dtype, config) else None


_TRANSFORMED = ("under a transformation (vmap, grad, scan, shard_map) outside any jit, which "
                "has no x64 meaning there (jit the transformed function)")


def _note_wide_host_data(original: Any) -> None:
    """64-bit host data narrowed as it enters a trace with no x64 meaning."""
    policy = _unjudged_transformation(original.dtype)
    if policy is not None:
        no_meaning(NoMeaning(f"{_described(original)} host data is narrowed in a function traced "
                             f"{_TRANSFORMED}"),
                   "a transformed function", policy)


def _note_explicit_dtype(requested: Any, became: Any, fun_name: Any) -> None:
    """An explicitly requested 64-bit dtype (``astype(jnp.int64)``) JAX made
    32-bit in a trace that has no x64 meaning: a ``jit`` under ``vmap``,
    ``grad``, ``scan`` or ``shard_map`` called outside a ``jit`` (the top-level
    ``jit`` of such a function has one).  Said at the user's line: the
    32-bit program runs there unjudged."""
    import numpy as np

    try:
        requested, became = np.dtype(requested), np.dtype(became)
    except TypeError:
        return
    if requested == became:
        return
    policy = _unjudged_transformation(requested)
    if policy is not None:
        no_meaning(NoMeaning(f"{fun_name or 'it'} asks for {requested} in a function traced "
                             f"{_TRANSFORMED}"),
                   "a transformed function", policy)


def _trace_for_jit(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    assert _original_trace is not None
    if not _wanted():
        return _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    # One trace of the user's Python: the x64 program first, and JAX's 32-bit
    # program replayed from it (no64.jax.replay); the user's function is traced
    # with x64 off as well only where the replay cannot rebuild it.
    given = getattr(_tls, "arguments", None)
    try:
        with traced_constant_sources() as sources:
            p64 = _trace_x64_program(fun, ji, ctx_mesh, dbg, args, kwargs, given)
    except Exception as exc:  # noqa: BLE001 - the 32-bit trace says what the user's code raises
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        why = NoMeaning(f"tracing it with x64 on raised {type(exc).__name__}: {first}")
        return _traced_twice(fun, ji, ctx_mesh, dbg, avals, args, kwargs, lambda p: why)
    if p64.consts:
        why = NoMeaning("its trace holds constants JAX passes as arguments")
        return _traced_twice(fun, ji, ctx_mesh, dbg, avals, args, kwargs, lambda p: why)
    replay = replay_function(fun, p64.params["jaxpr"], p64.out_tree, ji, sources)
    p64 = _sentinels_restored(p64, ji, *(given if given is not None else (args, kwargs)))
    _tls.judging = getattr(_tls, "judging", 0) + 1
    try:
        try:
            p = _original_trace(replay, ji, ctx_mesh, dbg, avals, args, kwargs)
        except ConstantRangeError as exc:
            # a host integer beyond 32 bits (a 64-bit hash multiplier): the x64
            # program, which holds it exactly, is what runs -- outside exact only
            # where its conversion proves every narrowing (refuse_unless_proven)
            return _replayed_for_exact(replay, fun, ji, ctx_mesh, dbg, avals, args, kwargs, p64, exc)
        except Exception:  # noqa: BLE001 - not replayable: the user's function traced with x64 off
            p = None
    finally:
        _tls.judging -= 1
    meaning = _compared(p, p64) if p is not None else None
    if p is None or not _replays(p, p64) or isinstance(meaning, NoMeaning):
        # what runs without an x64 meaning is JAX's own 32-bit program
        return _traced_twice(fun, ji, ctx_mesh, dbg, avals, args, kwargs,
                             lambda p32: _compared(p32, p64), p64)
    _keep_meaning(p, meaning)
    # should the x64 module not be had when it is compiled, JAX's own 32-bit
    # program runs: traced then, from the arguments' shapes and dtypes
    a_args, a_kwargs = _abstracted(args, kwargs, ji)
    try:
        _replayed[p.params["jaxpr"]] = functools.partial(
            _original_trace, fun, ji, ctx_mesh, dbg, avals, a_args, a_kwargs)
    except TypeError:
        pass
    return p


#: a host sentinel's 32-bit image -> the sentinel (INT32_MAX -> INT64_MAX, ...)
_SENTINELS = {image: sentinel for unsigned in (False, True)
              for sentinel, _, image, _ in host.SENTINEL_PAIRS[unsigned]}


def _sentinels_restored(p64: Any, ji: Any, args: Any, kwargs: Any) -> Any:
    """``p64``, the x64 trace of a call, taking back at its entry, under
    ``exact``, the host sentinels its arguments held (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``): no64 narrowed them to their 32-bit images on the host,
    which is what the module JAX calls receives, and the x64 program must
    compute with the sentinels themselves (``x > INT32_MAX`` of an argument
    holding ``INT64_MAX`` is true).  The host refuses an array holding both a
    sentinel and its image as an ordinary value, and a call whose arguments
    hold sentinels has an x64 signature of its own (:func:`_x64_signature`),
    so the image at such an argument is the sentinel."""
    config = STATE.active_config()
    if config is None or config.policy is not RangePolicy.EXACT:
        return p64  # the other policies compute with the images (_sentinels_judged)
    seeds = host.argument_seeds(jit_dynamic_arguments(ji, args, kwargs))
    if not seeds:
        return p64
    import numpy as np

    closed = p64.params["jaxpr"]

    def restored(*given: Any) -> list[Any]:
        from jax import lax

        xs = list(given)
        for i, images in seeds.items():
            x = xs[i]
            for image in sorted(images):
                dt = np.dtype(x.dtype)
                hit = lax.eq(x, lax.full_like(x, np.array(image, dt)))
                xs[i] = x = lax.select(hit, lax.full_like(x, np.array(_SENTINELS[image], dt)), x)
        return eval_jaxpr(closed.jaxpr, closed.consts, *xs)

    with enable_x64(True):
        jaxpr = trace_flat(restored, [v.aval for v in closed.jaxpr.invars], closed.jaxpr.debug_info)
    return p64._replace(params={**p64.params, "jaxpr": jaxpr})


def _sentinels_judged(jaxpr: Any, check: Callable[[], None]) -> bool:
    """Take the host sentinel check of the traced 32-bit program ``jaxpr``
    where its x64 module is what runs under ``exact`` (see
    :func:`no64.jax.host.judged_by_x64_module`): that module holds the host
    constants exactly and computes on words every integer not proven to fit,
    and takes the sentinels the call's arguments held back at its entry
    (:func:`_sentinels_restored`), so nothing is left for the host to follow.
    The other policies compute with the 32-bit images of the sentinels (the
    pass maps a module's sentinel constants as the host does), so the host
    follows them as in JAX's 32-bit program.  The check runs when the
    32-bit program runs after all (:func:`runnable_32bit`)."""
    config = STATE.active_config()
    if config is None or config.policy is not RangePolicy.EXACT:
        return False
    try:
        deferred = _meanings.get(jaxpr)
    except TypeError:
        return False
    if deferred is None or isinstance(deferred.get(), NoMeaning):
        return False
    with _lock:
        if jaxpr in _runs_32bit:
            return False
        _sentinel_checks[jaxpr] = check
    return True


def _keep_meaning(p: Any, meaning: Any) -> None:
    deferred = _Deferred(lambda: meaning)
    deferred.get()
    try:
        _meanings[p.params["jaxpr"]] = deferred
    except TypeError:
        pass


def _replays(p: Any, p64: Any) -> bool:
    """Whether the replayed 32-bit trace ``p`` has the signature of the x64
    trace ``p64`` with each 64-bit type narrowed (else the user's function is
    traced with x64 off: an equation the replay rebuilt otherwise)."""
    if p.consts or p.in_tree != p64.in_tree or p.out_tree != p64.out_tree:
        return False
    j32, j64 = p.params["jaxpr"], p64.params["jaxpr"]
    if _holds_64bit(j32):
        return False  # a primitive whose 64-bit form is no dtype parameter (random_bits of 64 bits)
    pairs = list(zip((*j32.in_avals, *j32.out_avals), (*j64.in_avals, *j64.out_avals)))
    if len(j32.in_avals) != len(j64.in_avals) or len(j32.out_avals) != len(j64.out_avals):
        return False
    return all(a == image_aval(b) or _unweak(a) == _unweak(image_aval(b)) for a, b in pairs)


def _unweak(aval: Any) -> Any:
    strip = getattr(aval, "strip_weak_type", None)
    return strip() if strip is not None else aval


def _traced_twice(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any,
                  meaning: Callable[[Any], Any], p64: Any = None) -> Any:
    """JAX's own trace of ``fun`` with x64 off, judged by ``meaning(p)`` (the
    x64 trace taken already, compared with it, or why there is none)."""
    assert _original_trace is not None
    _tls.judging = getattr(_tls, "judging", 0) + 1
    try:
        p = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except ConstantRangeError as exc:
        return _trace_for_exact(fun, ji, ctx_mesh, dbg, avals, args, kwargs, exc, p64)
    finally:
        _tls.judging -= 1
    _keep_meaning(p, meaning(p))
    return p


def _replayed_for_exact(replay: Any, fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any,
                        kwargs: Any, p64: Any, refusal: ConstantRangeError) -> Any:
    """The replayed 32-bit trace of a program whose replay refused a host
    integer, taken only for its signature (see :func:`_trace_for_exact`)."""
    assert _original_trace is not None
    with STATE.host_records_kept():
        STATE.thread.host_policy = "wrap"
        try:
            p = _original_trace(replay, ji, ctx_mesh, dbg, avals, args, kwargs)
        except Exception:  # noqa: BLE001 - not the host integer alone
            p = None
        finally:
            STATE.thread.host_policy = None
    if p is None or not _replays(p, p64):
        return _trace_for_exact(fun, ji, ctx_mesh, dbg, avals, args, kwargs, refusal, p64)
    meaning = _compared(p, p64)
    if isinstance(meaning, NoMeaning):
        raise refusal
    _keep_meaning(p, meaning)
    _required[p.params["jaxpr"]] = refusal
    return p


class NoMeaning:
    """Why a program that asked for x64 has no x64 meaning here (its x64
    trace failed, or differs from the 32-bit one where the hook cannot put
    one in place of the other): under the default policy the 32-bit program
    runs with a :class:`no64.NoX64MeaningWarning` at the user's line;
    ``strict`` and ``exact`` refuse it (:class:`no64.NoX64MeaningError`)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"NoMeaning({self.reason!r})"


class _Deferred:
    """The x64 trace of a 32-bit trace, taken at most once, when first asked
    for; a :class:`NoMeaning` when it has no comparable x64 meaning (or
    tracing it failed)."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] | None = make
        self._value: Any = None

    def get(self) -> Any:
        make = self._make
        if make is not None:
            self._make = None  # drop what the closure holds
            try:
                self._value = make()
            except Exception as exc:  # noqa: BLE001 - no meaning: said at the compile (see NoMeaning)
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                self._value = NoMeaning(f"tracing it with x64 on raised {type(exc).__name__}: {first}")
        return self._value


def _abstracted(args: tuple[Any, ...], kwargs: dict[str, Any], ji: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with every array (numpy, JAX, numpy scalar)
    replaced by its shape and dtype, static arguments kept: what a later
    trace needs, without keeping the caller's data alive until compile."""
    import jax
    import numpy as np

    def leaf(x: Any) -> Any:
        if isinstance(x, (np.ndarray, np.generic, jax.Array)):
            return jax.ShapeDtypeStruct(np.shape(x), x.dtype, weak_type=bool(getattr(x, "weak_type", False)))
        return x

    return _map_dynamic(args, kwargs, ji, leaf)


def _map_dynamic(args: tuple[Any, ...], kwargs: dict[str, Any], ji: Any,
                 leaf: Callable[[Any], Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``leaf`` applied to every leaf of a call's arguments but the static ones."""
    import jax

    n = len(args)
    static = {i % n for i in ji.static_argnums if -n <= i < n} if n else set()
    names = set(ji.static_argnames)
    return (tuple(x if i in static else jax.tree.map(leaf, x) for i, x in enumerate(args)),
            {k: (v if k in names else jax.tree.map(leaf, v)) for k, v in kwargs.items()})


def _as_in_x64(args: tuple[Any, ...], kwargs: dict[str, Any], ji: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with each 32-bit array of a 64-bit value of the
    x64 program (:mod:`no64.jax.x64_arrays`) replaced by its shape and x64 dtype."""
    if not x64_arrays.marked_count():
        return args, kwargs
    import jax
    import numpy as np

    def leaf(x: Any) -> Any:
        dtype = x64_arrays.x64_dtype(x)
        if dtype is None:
            return x
        return jax.ShapeDtypeStruct(np.shape(x), dtype, weak_type=bool(getattr(x, "weak_type", False)))

    return _map_dynamic(args, kwargs, ji, leaf)


def _trace_for_exact(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any,
                     refusal: ConstantRangeError, p64: Any = None) -> Any:
    """The 32-bit trace of a program the 32-bit trace refused a host integer
    of, taken only for its signature: the host integers are wrapped there
    (and not recorded), and the x64 module, which holds them exactly, must
    replace the module JAX lowers from it -- else ``refusal`` is raised."""
    assert _original_trace is not None
    with STATE.host_records_kept():
        STATE.thread.host_policy = "wrap"
        try:
            p = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
        except Exception:  # noqa: BLE001 - not the host integer alone: the refusal stands
            raise refusal from None
        finally:
            STATE.thread.host_policy = None
    meaning = _Deferred(lambda: _trace_x64(fun, ji, ctx_mesh, dbg, args, kwargs, p,
                                           getattr(_tls, "arguments", None))
                        if p64 is None else _compared(p, p64))
    if isinstance(meaning.get(), NoMeaning):
        raise refusal
    jaxpr = p.params["jaxpr"]
    _meanings[jaxpr] = meaning
    _required[jaxpr] = refusal
    return p


def _trace_x64(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any, p: Any,
               given: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Any:
    p64 = _trace_x64_program(fun, ji, ctx_mesh, dbg, args, kwargs, given)
    if p64.consts:
        return NoMeaning("its trace holds constants JAX passes as arguments")
    return _compared(p, _sentinels_restored(p64, ji, *(given if given is not None else (args, kwargs))))


def _trace_x64_program(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any,
                       given: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Any:
    """JAX's trace of ``fun`` with x64 on, for the caller's arguments as
    given (the 64-bit host data, and each array of a 64-bit value of the x64
    program as that value)."""
    if given is not None:
        args, kwargs = given
    args, kwargs = _as_in_x64(args, kwargs, ji)
    assert _original_trace is not None
    _tls.busy = True
    try:
        with enable_x64(True):
            avals = jit_input_avals(fun, ji, dbg, args, kwargs)
            return _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    finally:
        _tls.busy = False


def _compared(p: Any, p64: Any) -> Any:
    """``p64``, the x64 trace of the 32-bit trace ``p``, where it can stand
    for it; else why not (:class:`NoMeaning`)."""
    if p64.consts or p.consts:
        return NoMeaning("its trace holds constants JAX passes as arguments")
    if p64.in_tree != p.in_tree or p64.out_tree != p.out_tree or len(p64.in_avals) != len(p.in_avals):
        return NoMeaning("its x64 trace takes or returns other values than its 32-bit trace")
    j32, j64 = p.params["jaxpr"], p64.params["jaxpr"]
    if len(j32.out_avals) != len(j64.out_avals) or any(
            getattr(a, "shape", None) != getattr(b, "shape", None)
            for a, b in zip((*j32.in_avals, *j32.out_avals), (*j64.in_avals, *j64.out_avals))):
        return NoMeaning("its x64 trace has other argument or result shapes than its 32-bit trace")
    if j32.effects or j64.effects:
        effects = ", ".join(sorted({type(e).__name__ for e in (*j32.effects, *j64.effects)}))
        return NoMeaning(f"it has side effects ({effects}: a callback, debug.print, io), whose "
                         "host calls no64 cannot move into its x64 program")
    return p64


def _pjit_lower(jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
    assert _original_lower is not None
    computation = _original_lower(jaxpr, *args, **kwargs)
    try:
        deferred = _meanings.get(jaxpr)
    except TypeError:
        deferred = None
    if deferred is None:
        return computation
    module = computation._hlo
    lowered: list[ir.Module | None] = []

    def lower_x64() -> ir.Module | NoMeaning | None:
        if not lowered:  # once per module JAX lowered (an AOT executable may compile it again)
            lowered.append(_lower_x64())
        return lowered[0]

    def _lower_x64() -> ir.Module | NoMeaning | None:
        assert _original_lower is not None
        p64 = deferred.get()
        if isinstance(p64, NoMeaning):
            return p64
        if not _holds_64bit(p64.params["jaxpr"]):
            # no 64-bit value in the x64 program: it means what JAX's 32-bit one does
            return None
        _tls.busy = True
        try:
            with enable_x64(True):
                c64 = _original_lower(p64.params["jaxpr"], *args, **kwargs)
        finally:
            _tls.busy = False
        a, b = computation.compile_args, c64.compile_args
        same = all(a.get(k) == b.get(k) for k in ("kept_var_idx", "ordered_effects", "unordered_effects"))
        if not same or a.get("host_callbacks") or b.get("host_callbacks"):
            return NoMeaning("its lowering has effects or host callbacks no64 cannot move into "
                             "its x64 program")
        return c64._hlo

    try:
        retrace = _replayed.get(jaxpr)
    except TypeError:
        retrace = None
    genuine: list[ir.Module] = []

    def lower_genuine() -> ir.Module:
        if not genuine:
            assert _original_lower is not None and retrace is not None
            p = retrace()
            genuine.append(_original_lower(p.params["jaxpr"], *args, **kwargs)._hlo)
        return genuine[0]

    with _lock:
        _pending[id(module)] = (module, lower_x64)
        _pending.move_to_end(id(module))
        try:
            _lowered_from[id(module)] = (module, weakref.ref(jaxpr))
        except TypeError:
            pass
        if retrace is not None:
            _genuine[id(module)] = (module, lower_genuine)
        while len(_pending) > _PENDING_MAX:
            old, _ = _pending.popitem(last=False)
            _required_modules.pop(old, None)
            _genuine.pop(old, None)
            _lowered_from.pop(old, None)
        refusal = _required.get(jaxpr)
        if refusal is not None:
            _required_modules[id(module)] = refusal
    return computation


_WIDE = frozenset({"int64", "uint64", "float64", "complex128"})


def _holds_64bit(jaxpr: Any) -> bool:
    """Whether a (closed) jaxpr, its sub-jaxprs included, has a value of a
    64-bit dtype (duck-typed: ``eqns``/``invars``/``outvars`` of vars with
    an ``aval``)."""
    seen: set[int] = set()
    stack = [jaxpr]
    while stack:
        j = stack.pop()
        j = getattr(j, "jaxpr", j)  # ClosedJaxpr -> Jaxpr
        if id(j) in seen or not hasattr(j, "eqns"):
            continue
        seen.add(id(j))
        for v in (*j.invars, *getattr(j, "constvars", ()), *j.outvars):
            if str(getattr(getattr(v, "aval", None), "dtype", "")) in _WIDE:
                return True
        for eqn in j.eqns:
            for v in eqn.outvars:
                if str(getattr(getattr(v, "aval", None), "dtype", "")) in _WIDE:
                    return True
            for value in eqn.params.values():
                if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
                    stack.append(value)
                elif isinstance(value, (tuple, list)):
                    stack.extend(x for x in value
                                 if hasattr(x, "eqns") or hasattr(getattr(x, "jaxpr", None), "eqns"))
    return False


def runnable_32bit(module: ir.Module) -> ir.Module:
    """JAX's own 32-bit module for ``module``, what runs where the x64 module
    cannot: ``module`` itself, or, where it was lowered from the 32-bit
    replay of the x64 trace (:mod:`no64.jax.replay`, which keeps the x64
    program's choices by dtype: float64's mantissa width in a sampler), the
    module of the user's function traced now with x64 off.  The host
    sentinels of the program, left to its x64 module, are followed through
    the 32-bit program now (:func:`_sentinels_judged`)."""
    with _lock:
        source = _lowered_from.get(id(module))
        jaxpr = source[1]() if source is not None and source[0] is module else None
        check = None
        if jaxpr is not None:
            _runs_32bit.add(jaxpr)
            check = _sentinel_checks.pop(jaxpr, None)
    if check is not None:
        check()
    with _lock:
        entry = _genuine.get(id(module))
    if entry is None or entry[0] is not module:
        return module
    return entry[1]()


def has_meaning(module: ir.Module) -> bool:
    """Whether the 32-bit ``module`` JAX hands the backend has an x64 trace
    to be judged by (not lowered yet; see :func:`meaning_of`)."""
    with _lock:
        entry = _pending.get(id(module))
    return entry is not None and entry[0] is module


def meaning_of(module: ir.Module) -> ir.Module | NoMeaning | None:
    """The x64 module of the program whose 32-bit module JAX hands the
    backend, lowered now: ``None`` when there is none to ask for (no x64
    requested, or an x64 program without a 64-bit value, which means what
    the 32-bit one does), a :class:`NoMeaning` when the program asked for
    x64 and its x64 meaning cannot be had (the refusal of a host value it
    stood in for is raised instead, where there is one)."""
    with _lock:
        entry = _pending.get(id(module))
    if entry is None or entry[0] is not module:
        return None
    try:
        meaning = entry[1]()
    except Exception as exc:  # noqa: BLE001 - said at the compile (see NoMeaning)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        meaning = NoMeaning(f"lowering it with x64 on raised {type(exc).__name__}: {first}")
    if not isinstance(meaning, ir.Module):
        refuse_without_meaning(module)
    return meaning


_warned_none: set[tuple[str, int]] = set()


def no_meaning(why: NoMeaning, name: str, policy: RangePolicy) -> None:
    """Say at the user's line that ``name`` asked for x64 and has no x64
    meaning here: a refusal (:class:`no64.NoX64MeaningError`) under
    ``strict`` and ``exact``, else one :class:`no64.NoX64MeaningWarning`
    per line (JAX's 32-bit program then runs)."""
    src = host.user_source()
    file, line = src.file or "<unknown>", src.line or 0
    where = f"{file}:{line}" if src.file else "<unknown line>"
    if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
        raise NoX64MeaningError(
            f"no64 (NO64_POLICY={policy}) refuses {name} at {where}: the program asked for x64, "
            f"but {why.reason}; its 32-bit program may compute other integers than its x64 "
            "program, and no64 cannot tell")
    if (file, line) in _warned_none:
        return
    _warned_none.add((file, line))
    warnings.warn_explicit(
        f"no64: {name} at {where} asked for x64, but {why.reason}; JAX's 32-bit program runs "
        "unjudged and may compute other integers than the x64 program (NO64_POLICY=strict "
        "refuses it)", NoX64MeaningWarning, file, line)


def refuse_without_meaning(module: ir.Module) -> None:
    """Raise the host refusal a module's x64 meaning stood in for, if any."""
    refusal = _required_modules.get(id(module))
    if refusal is not None:
        raise refusal


def refuse_unless_proven(module: ir.Module, report: DemotionReport) -> None:
    """Raise the host refusal a module's x64 meaning stood in for when the
    converted x64 program holds an integer it cannot prove inside 32 bits:
    outside ``exact`` the x64 program replaces a refused host integer (a
    64-bit hash multiplier) only where every narrowing of it is proven, so
    the user's ``integer_policy="error"`` still refuses a host integer whose
    value would reach a 32-bit result."""
    refusal = _required_modules.get(id(module))
    if refusal is not None and unproven(report):
        raise refusal


# ---------------------------------------------------------------------------
# Judging the 32-bit program by its x64 meaning
# ---------------------------------------------------------------------------


def _sentinel_question(n: Narrowing) -> bool:
    """Whether ``n`` is unproven only because a sentinel (``INT64_MAX`` ...)
    meets ordinary values that fit 32 bits (:attr:`Narrowing.collision`):
    a reduction's identity compared with its elements, a ``min`` whose
    identity never reaches the result of a non-empty reduction.  The 32-bit
    program holds the mapped 32-bit extreme there, by the pass's and the
    host's sentinel rules (reported as such); it is no 64-bit value computed
    differently.  (A select outside a reduction is not one: there the
    sentinel is the result, beside values that may be the same extreme.)"""
    return n.collision


def unproven(report: DemotionReport) -> list[Narrowing]:
    """The integer values of an x64 module that the 32-bit program may
    compute differently (sentinel questions left to the sentinel rules)."""
    return [n for n in report.narrowings if n.verdict in (Verdict.UNPROVEN, Verdict.OVERFLOW)
            and not _sentinel_question(n)]


def output_error(name: str, exc: NarrowingError) -> OutputRangeError:
    """The error for an x64 output that ``policy="exact"`` cannot return in
    the 32-bit array JAX lowered (the only value it narrows)."""
    bad = [exc.narrowing] if exc.narrowing is not None else []
    out = OutputRangeError(_output_message(name, bad, str(exc)), bad)
    out.location = exc.location  # type: ignore[attr-defined]
    return out


def checked_output_error(name: str, checked: list[Narrowing]) -> OutputRangeError:
    """The error for a run of ``name`` whose x64 program returned a value,
    checked by value (``policy="exact"``, ``outputs="checked"``), that does
    not fit in the 32-bit array JAX returns; raised at the run, it names the
    line that called it where that is another than the op's."""
    where = list(dict.fromkeys(_where(n) for n in checked))
    called = host.user_source().source
    via = f", called at {called}" if called and called not in where else ""
    return OutputRangeError(
        f"no64 (NO64_POLICY=exact): {name} returned a 64-bit integer of its x64 program at "
        f"{', '.join(where)}{via} that does not fit in the 32-bit array JAX returns under the hook "
        "(checked by value when it ran; no result is handed out); ways out: no64.jit(..., "
        "policy=\"exact\", restore_dtypes=True) returns it as int64 on the host", checked)


def _output_message(name: str, bad: list[Narrowing], fallback: str) -> str:
    if not bad:
        return f"no64 (NO64_POLICY=exact) refuses {name}: {fallback}"
    n = bad[0]
    interval = f" in [{n.interval[0]}, {n.interval[1]}]" if n.interval else ""
    return (
        f"no64 (NO64_POLICY=exact) refuses {name}: its x64 program returns a 64-bit integer"
        f"{interval} at {_where(n)} that is not proven to fit in the 32-bit array "
        "JAX returns under the hook; ways out: no64.assume(x, lo, hi) states a range the program "
        "knows, no64.jit(..., policy=\"exact\", restore_dtypes=True) returns it as int64 on the host"
    )


def _where(n: Narrowing) -> str:
    loc = n.location
    if loc.file is not None:
        return f"{loc.file}:{loc.line}" if loc.line is not None else loc.file
    return host.user_source().source or "<unknown line>"


def _by_line(items: list[Any], warned: set[tuple[str, int]]) -> dict[tuple[str, int], list[Any]]:
    """``items`` (each with a ``location``) by user line not in ``warned``
    yet, which takes them.  Items without a source position (the body of a
    private function JAX outlines, such as ``cumsum``'s) go with the line of
    a located ``func.call`` (else of the first located item) of the same
    report, and only where there is none with the caller's line."""
    by_line: dict[tuple[str, int], list[Any]] = {}
    unlocated = []
    first: tuple[str, int] | None = None
    call: tuple[str, int] | None = None
    for n in items:
        loc = n.location
        if loc.file is None or loc.line is None:
            unlocated.append(n)
            continue
        key = (loc.file, loc.line)
        first = first or key
        if spec_of(n.op).call:
            call = call or key
        by_line.setdefault(key, []).append(n)
    home = call or first
    if unlocated:
        if home is None:
            src = host.user_source()
            home = (src.file or "<unknown>", src.line or 0)
        by_line.setdefault(home, []).extend(unlocated)
    fresh = {k: v for k, v in by_line.items() if k not in warned}
    warned.update(fresh)
    return fresh


def warn_unproven(report: DemotionReport, name: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line not warned about yet."""
    for (file, line), items in _by_line(unproven(report), _warned).items():
        prims = sorted({(i.location.primitive or i.op.rsplit(".", 1)[-1]) for i in items})
        worst = Verdict.OVERFLOW if any(i.verdict is Verdict.OVERFLOW for i in items) else Verdict.UNPROVEN
        what = ("overflows 32 bits" if worst is Verdict.OVERFLOW
                else "is not proven to fit in 32 bits")
        # on a target with native 64-bit integers only the results JAX returns are narrowed
        how = (f"no64 computes it as it is (native on target {report.target}) and returns it "
               "in the 32-bit array JAX returns, clipped to the 32-bit range" if report.narrowed_outputs
               else "no64 computes it as a 32-bit value there")
        message = (
            f"no64: the x64 program computes a 64-bit integer at {file}:{line} ({', '.join(prims)}, "
            f"in {name}) that {what}; {how}, which may "
            "differ from the x64 program's. NO64_POLICY=exact (or no64.jit(..., "
            "policy=\"exact\")) computes it exactly; NO64_POLICY=strict refuses it"
        )
        warnings.warn_explicit(message, UnprovenIntegerWarning, file, line)


def warn_float_hints(report: DemotionReport, name: str) -> None:
    """One :class:`no64.FloatPrecisionWarning` per user line of the report's
    float hints not warned about yet."""
    for (file, line), items in _by_line(list(report.float_hints), _warned_float).items():
        what = "; ".join(dict.fromkeys(f"[{h.kind}] {h.detail}" for h in items))
        message = (f"no64: float64 computed in f32 changes the result at {file}:{line} (in {name}): "
                   f"{what}")
        warnings.warn_explicit(message, FloatPrecisionWarning, file, line)


def refuse_or_warn_overflow(report: DemotionReport, name: str, policy: RangePolicy) -> None:
    """The float64 constants of a program's x64 program (closed-over numpy
    data, Python floats) that are finite beyond float32's range, and so
    become ``inf`` under either float policy: refused under ``strict`` and
    ``exact`` (:class:`no64.NarrowingError`, verdict ``overflow``, naming
    the value and its line), else one :class:`no64.FloatPrecisionWarning`
    per line naming the value -- as a float64 argument beyond that range is
    refused on the host (:class:`no64.HostRangeError`)."""
    from ..kinds import EventKind

    found = [e for e in report.events if e.kind is EventKind.FLOAT_OVERFLOW]
    if not found:
        return
    if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
        e = found[0]
        raise NarrowingError(e.op, e.location, Verdict.OVERFLOW, (0, 0), policy,
                             reason=f"{e.detail} in {name}'s x64 program, under either float policy "
                                    "(float32 pairs keep float32's range)",
                             hint="scale the data (the default policy warns and lets it become inf)")
    for (file, line), items in _by_line(found, _warned_float).items():
        what = "; ".join(dict.fromkeys(e.detail for e in items))
        warnings.warn_explicit(
            f"no64: float64 computed in f32 changes the result at {file}:{line} (in {name}): [overflow] "
            f"{what}; float_policy=\"pairs\" does not help (its exponent range is f32's); "
            "NO64_POLICY=strict refuses it", FloatPrecisionWarning, file, line)


def clear_warned() -> None:
    """Forget which lines were warned about (for tests)."""
    _warned.clear()
    _warned_float.clear()
    _warned_none.clear()
    host.clear_warned()

