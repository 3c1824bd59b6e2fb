"""One trace per x64 signature of a call, and the 32-bit results of a call marked with their x64
dtypes."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...ir.types import F32_MAX as _F32_MAX
from ...kinds import FloatPolicy
from .. import host, x64_arrays
from .._compat import (
    convert_weakly_typed,
    jit_function,
    replace_jit_function,
)
from ..state import STATE
from .eager import differs_in_x64
from .judge import NoMeaning
from .records import meanings, tls, wanted, x64_requested

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


#: A 64-bit integer argument whose values the host knows lie within
#: ``[-SMALL, SMALL]`` (``[0, SMALL]`` unsigned) is stated to lie there to the
#: judgement of the x64 program (:func:`small_arguments`): ``2 * x + y``, even
#: ``x * y``, of such values is proven to fit, where an argument of unknown
#: value may be any 32-bit value.  The call's x64 signature tells the class,
#: so a call with a larger value traces (and is judged) again.
SMALL = 2**15


@contextmanager
def ahead_of_time() -> Iterator[None]:
    """Within the block, in this thread, jit traces are asked for ahead of
    time (``jit(f).lower``, ``jax.export``): their executable serves any
    later values, so :func:`small_arguments` states no range."""
    tls.ahead = getattr(tls, "ahead", 0) + 1
    try:
        yield
    finally:
        tls.ahead -= 1


def small_arguments(leaves: list[Any], seeds: dict[int, frozenset[int]] | None = None) -> dict[int, tuple[int, int]]:
    """The positions among a call's dynamic ``leaves`` of the 64-bit integer
    data of the x64 program (a Python int, int64/uint64 numpy data, an array
    noted with the bounds of the host data it was made from) whose values
    lie within :data:`SMALL`, and the range stated for them (none holding a
    host sentinel: ``seeds``, :func:`no64.jax.host.argument_seeds` of
    ``leaves`` where the caller has them); none for a trace asked for ahead
    of time (:func:`ahead_of_time`), whose executable later calls take with
    any values."""
    import numpy as np

    out: dict[int, tuple[int, int]] = {}
    if getattr(tls, "ahead", 0):
        return out
    if seeds is None:
        seeds = host.argument_seeds(leaves)
    for i, a in enumerate(leaves):
        bounds: tuple[int, int] | None
        if type(a) is int:
            unsigned, bounds = False, (a, a)
        elif isinstance(a, (np.ndarray, np.generic)):
            if a.dtype not in host.NARROWED or a.dtype.kind not in "iu" or i in seeds:
                continue
            unsigned, bounds = a.dtype.kind == "u", host.host_bounds(a)
        else:
            marked = x64_arrays.x64_dtype(a)
            if marked is None or marked.kind not in "iu":
                continue
            unsigned, bounds = marked.kind == "u", x64_arrays.known_bounds(a)
        lo = 0 if unsigned else -SMALL
        if bounds is not None and lo <= bounds[0] and bounds[1] <= SMALL:
            out[i] = (lo, SMALL)
    return out


def _x64_signature(args: Any, kwargs: Any) -> tuple[str, ...] | None:
    """The dtypes of a call's array leaves (and the host sentinels 64-bit
    numpy data holds, the range stated for small integers,
    :func:`small_arguments`) if one is 64-bit numpy data, a 32-bit array of
    a 64-bit value of the x64 program (:mod:`no64.jax.x64_arrays`), which
    the 32-bit program holds as 32-bit data, or a small integer, else ``None``."""
    import numpy as np
    from jax import tree_util

    leaves = tree_util.tree_leaves((args, kwargs))
    seeds = host.argument_seeds(leaves)
    small = small_arguments(leaves, seeds)
    wide = bool(small)
    key = []
    for i, a in enumerate(leaves):
        if i in small:
            key.append(f"{getattr(a, 'dtype', type(a).__name__)} in {list(small[i])}")
            continue
        if type(a) is np.ndarray or isinstance(a, np.generic):
            wide = wide or a.dtype in host.NARROWED
            # data holding a host sentinel is another x64 program: the sentinel
            # is taken back at its entry (_sentinels_restored)
            images = seeds.get(i)
            key.append(a.dtype.str if not images else f"{a.dtype.str} holding {sorted(images)}")
            continue
        marked = x64_arrays.x64_dtype(a)
        if marked is not None:
            wide = True
            images = x64_arrays.sentinel_images(a)
            # an array holding host sentinels is another x64 program (as above)
            key.append(f"{marked.str} array" if not images else f"{marked.str} array holding {sorted(images)}")
            continue
        dtype = getattr(a, "dtype", None)
        key.append(str(dtype) if dtype is not None else type(a).__name__)
    return tuple(key) if wide else None


def _variant(fun: Any, args: Any, kwargs: Any, pairs: frozenset[int] = frozenset(),
             weak: frozenset[int] = frozenset()) -> Any:
    given = getattr(tls, "arguments", None)
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
    hi = convert_weakly_typed(p[..., 0], wide, weak)
    lo = convert_weakly_typed(p[..., 1], wide, weak)
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

    map_dynamic(args, kwargs, ji, leaf)


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
    if config is None or getattr(tls, "arguments", None) is not None:
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

    args, kwargs = map_dynamic(args, kwargs, ji, leaf)
    leaves = tree_util.tree_leaves((args, kwargs))
    found = {i: entered[id(x)][1] for i, x in enumerate(leaves)
             if id(x) in entered and entered[id(x)][0] is x}
    return args, kwargs, frozenset(found), frozenset(i for i, weak in found.items() if weak)


def map_dynamic(args: tuple[Any, ...], kwargs: dict[str, Any], ji: Any,
                 leaf: Callable[[Any], Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``leaf`` applied to every leaf of a call's arguments but the static ones."""
    import jax

    n = len(args)
    static = {i % n for i in ji.static_argnums if -n <= i < n} if n else set()
    names = set(ji.static_argnames)
    return (tuple(x if i in static else jax.tree.map(leaf, x) for i, x in enumerate(args)),
            {k: (v if k in names else jax.tree.map(leaf, v)) for k, v in kwargs.items()})


# ---------------------------------------------------------------------------
# Arrays of 64-bit values the x64 trace closes over
# ---------------------------------------------------------------------------
#
# A ``jax.Array`` no64 noted as 64-bit in the x64 program (a step counter
# returned by a jit, ``jax.random.normal(key, (3,))`` or ``jnp.zeros(3)``
# under pairs, made outside any jit) is taken by the x64 trace with its x64
# dtype where it is an argument of the call (``_as_in_x64`` in
# :mod:`.trace`).  Closed over by the traced function -- a matrix a vector
# field multiplies by, a table a model indexes -- it enters the trace as a
# constant: the x64 trace takes it in converted to its x64 dtype, where a
# ``lax`` primitive binds it (:func:`constant_x64_dtype`) and where it is
# an argument of a jitted function called inside the trace (a ``jnp``
# function: :func:`_constants_widened`), so that ``c * c`` of an ``int64``
# table is a 64-bit product and ``A @ y`` of a float64 matrix a float64
# product, as in the x64 program.  Traces with x64 off take it as it is.


def _in_x64_trace() -> bool:
    return bool(getattr(tls, "busy", False))


def constant_x64_dtype(constant: Any) -> Any:
    """The x64 program's dtype of an array the x64 trace of a call takes in
    as a constant, where no64 noted one; else ``None``."""
    return x64_arrays.x64_dtype(constant) if _in_x64_trace() else None


def _constants_widened(ji: Any, args: Any, kwargs: Any) -> tuple[Any, Any]:
    """A jitted function's arguments, called inside the x64 trace, with each
    noted ``jax.Array`` among them (a constant of the trace, not a tracer)
    converted, in the trace, to its x64 dtype."""
    if not x64_arrays.marked_count():
        return args, kwargs
    def leaf(x: Any) -> Any:
        dtype = x64_arrays.x64_dtype(x)
        return x if dtype is None else convert_weakly_typed(x, dtype, bool(getattr(x, "weak_type", False)))

    return map_dynamic(args, kwargs, ji, leaf)


def no_fast_path(args_flat: Any, out_flat: Any) -> bool:
    """Whether a jit call must keep off jaxlib's C++ fast path: with x64
    requested, a call taking a 32-bit array (one of a 64-bit value of the x64
    program or not: the C++ cache cannot tell them apart) or a Python int
    (small or not: :func:`small_arguments`), or returning one of a 64-bit
    value (to be noted at every call, :func:`_mark_outputs`)."""
    if not x64_requested():
        return False
    import numpy as np

    config = STATE.active_config()
    assert config is not None
    for a in args_flat:
        if type(a) is int:
            return True  # a small Python int has a trace of its own (small_arguments)
        dtype = getattr(a, "dtype", None)
        try:
            if dtype is not None and np.dtype(dtype) in host.NARROWED_IMAGES and differs_in_x64(dtype, config):
                return True
        except TypeError:
            continue
    return x64_arrays.any_marked(out_flat)


#: 32-bit ClosedJaxpr -> per result, its 64-bit dtype in the x64 program (or None)
_out_x64: "weakref.WeakKeyDictionary[Any, tuple[Any, ...]]" = weakref.WeakKeyDictionary()


def after_call(jaxpr: Any, out_flat: Any, args_flat: Any) -> None:
    if x64_requested():
        _mark_outputs(jaxpr, out_flat, args_flat)


def _mark_outputs(jaxpr: Any, outs: Any, args_flat: Any) -> None:
    """Note each result of a jit call that is 64-bit in the call's x64
    program (:mod:`no64.jax.x64_arrays`): the next call it enters takes it
    as the x64 program does (a step counter, an int64 accumulator), its
    host sentinels included (:func:`no64.jax.host.result_sentinels`: a
    result filled with ``INT64_MAX`` holds ``INT32_MAX`` here)."""
    if jaxpr is None:
        return
    try:
        dtypes = _out_x64.get(jaxpr)
        if dtypes is None:
            deferred = meanings.get(jaxpr)
            if deferred is None:
                return
            dtypes = _out_x64[jaxpr] = _x64_results(jaxpr, deferred.get())
    except TypeError:
        return
    if not any(d is not None for d in dtypes):
        return
    held = host.result_sentinels(jaxpr, list(args_flat)) or [frozenset()] * len(dtypes)
    for out, dtype, sentinels in zip(outs, dtypes, held):
        if dtype is not None:
            x64_arrays.mark(out, dtype, sentinels)


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
                    and host.NARROWED[np.dtype(d64)] == np.dtype(d32) and differs_in_x64(d64, config))
        except TypeError:  # an extended dtype (a typed PRNG key)
            wide = False
        out.append(np.dtype(d64) if wide else None)
    return tuple(out)


def install_call_variants() -> None:
    original = jit_function("_infer_params")
    if getattr(original, "__no64_variants__", False):
        return

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        if wanted():
            wide_args, wide_kwargs = args, kwargs
            args, kwargs, pairs, weak = _float64_as_pairs(ji, args, kwargs)
            fun = _variant(fun, wide_args, wide_kwargs, pairs, weak)
        elif _in_x64_trace():
            args, kwargs = _constants_widened(ji, args, kwargs)
        return original(fun, ji, args, kwargs)

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64_variants__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)
