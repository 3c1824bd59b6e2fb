"""Calls outside any jit: eager primitives and ``jit``'s implementation given 64-bit host data,
JAX's samplers called eagerly, host data and explicit dtypes under a transformation."""

from __future__ import annotations

import collections
import functools
import weakref
from collections.abc import Callable
from typing import Any

from ...kinds import RangePolicy
from .. import host, x64_arrays
from .._compat import (
    at_top_level,
    enable_x64,
    internal_function,
    x64_state,
)
from ..replay import widened_params
from ..state import STATE
from .judge import NoMeaning, no_meaning
from .records import meanings, tls, wanted, x64_requested


def eager_with_wide_operands(original: Callable[..., Any]) -> Callable[..., Any]:
    """An eager primitive's ``jit``, called with the 64-bit host data its
    operands were canonicalised from (so that it traces its x64 meaning, as
    a jitted function called with that data does)."""

    def xla_primitive_callable(prim: Any, **params: Any) -> Any:
        fun = original(prim, **params)
        if (host.wide_pending() or x64_arrays.marked_count()) and wanted():
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


def differs_in_x64(dtype: Any, config: Any) -> bool:
    """Whether 64-bit data of ``dtype`` computes otherwise in the 32-bit
    program than in the x64 one: integers always, floats under the pairs
    float policy (under ``f32`` float64 is float32 in both)."""
    return host.computes_otherwise(dtype, config)


def _judged_original(x: Any, config: Any) -> Any:
    """The 64-bit host data ``x`` was narrowed from, where it computes
    otherwise in the x64 program (:func:`differs_in_x64`); else ``None``."""
    w = host.wide_original(x)
    return w if w is not None and differs_in_x64(w.dtype, config) else None


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


def unjudged_jit_with_wide_operands(original: Callable[..., Any]) -> Callable[..., Any]:
    """The eager run of a traced ``jit``: one traced with no x64 meaning (inside
    a transformation called outside any jit, ``jax.vmap(f)`` of a function
    calling ``jnp`` functions) that 64-bit host data enters is said at the
    line (:func:`no_meaning`): its 32-bit program computes that data."""

    def impl(*args: Any, **params: Any) -> Any:
        if (host.wide_pending() or x64_arrays.marked_count()) and wanted():
            jaxpr = params.get("jaxpr")
            try:
                judged = jaxpr is None or jaxpr in meanings
            except TypeError:
                judged = True
            if not judged:
                _refuse_unjudged(args, params)
        return original(*args, **params)

    impl.__wrapped__ = original  # type: ignore[attr-defined]
    return impl


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


def sampler_in_a_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def sampler(*args: Any, **kwargs: Any) -> Any:
        if not wanted():
            return original(*args, **kwargs)
        outer = getattr(tls, "sampler", None)
        tls.sampler = outer or f"jax.random.{original.__name__}"
        try:
            return _called_in_a_jit(original, args, kwargs)
        finally:
            tls.sampler = outer

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


def conversion_in_a_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def astype(x: Any, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        if wanted() and _narrowed_request(dtype):
            return _called_in_a_jit(original, (x, dtype, *args), kwargs)
        return original(x, dtype, *args, **kwargs)

    return astype


def _narrowed_request(dtype: Any) -> bool:
    """Whether ``dtype``, asked for in the x64 program, is a 64-bit dtype JAX
    makes 32-bit that computes otherwise there (:func:`differs_in_x64`)."""
    import numpy as np

    config = STATE.active_config()
    if dtype is None or config is None:
        return False
    try:
        with enable_x64(True):
            wide = np.dtype(internal_function("canonicalize_dtype")(dtype))
    except TypeError:
        return False
    return wide in host.NARROWED and differs_in_x64(wide, config)


# ``jax.vmap(f)(x)`` outside any jit traces ``f`` with x64 off: each ``jnp``
# function it calls is a jit traced inside the vmap with JAX's 32-bit
# dtypes, and the batched program of that jit then runs eagerly.  That
# program is not the x64 program (its literals, dtypes and defaults were
# fixed for 32 bits), so a float64 array under pairs or an int64 array
# entering it could only be computed as 32-bit data, or refused.  With x64
# requested, the vmapped function called outside any jit runs inside a
# top-level jit of its own, ``jax.jit(jax.vmap(f))``: its x64 trace is the
# x64 program of the whole batched function, judged and computed as any
# jit's (pairs, words, the output checks).  Its array leaves are the jit's
# arguments (with the x64 dtypes no64 noted for them); every other leaf (a
# Python scalar, a function, an unmapped static value) is fixed while
# tracing, as vmap sees it.  A function that needs the concrete value of
# an array (Python control flow on an unmapped argument) cannot be traced
# inside a jit: it runs as vmap runs it, where 64-bit data entering it is
# said as before (:func:`unjudged_jit_with_wide_operands`).


def vmap_in_a_jit(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def vmap(fun: Any, *args: Any, **kwargs: Any) -> Any:
        vmapped = original(fun, *args, **kwargs)

        @functools.wraps(vmapped)
        def call(*a: Any, **kw: Any) -> Any:
            if not wanted():
                return vmapped(*a, **kw)
            return _transformed_in_a_jit(vmapped, a, kw)

        return call

    return vmap


def _transformed_in_a_jit(transformed: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``transformed(*args, **kwargs)`` run inside a top-level jit of its
    own, its array leaves the jit's arguments; as it is where tracing it
    needs a concrete value."""
    import jax
    from jax import tree_util

    leaves, tree = tree_util.tree_flatten((args, kwargs))
    dynamic = tuple(i for i, x in enumerate(leaves) if _is_array(x))
    taken = set(dynamic)
    # a static leaf's type is part of its key: 1, 1.0 and True are equal
    static = tuple(None if i in taken else (type(x), x) for i, x in enumerate(leaves))
    jitted = _transformed_jit(transformed, tree, dynamic, static)
    try:
        return jitted(*(leaves[i] for i in dynamic))
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
            jax.errors.TracerIntegerConversionError):
        pass  # run as it is, below (not inside the handler: its error is not this one's consequence)
    return transformed(*args, **kwargs)


#: a transformed function -> {(its arguments' tree, dynamic leaves, static leaves): its jit}
_transformed_jits: "weakref.WeakKeyDictionary[Any, collections.OrderedDict[Any, Any]]" = (
    weakref.WeakKeyDictionary())
_TRANSFORMED_JITS_MAX = 32


def _transformed_jit(transformed: Callable[..., Any], tree: Any, dynamic: tuple[int, ...],
                     static: tuple[Any, ...]) -> Any:
    key = (tree, dynamic, static)
    try:
        hash(key)
        per_fun = _transformed_jits.setdefault(transformed, collections.OrderedDict())
    except TypeError:  # an unhashable static leaf, or no weak reference: a jit for this call alone
        return _make_transformed_jit(transformed, tree, dynamic, static)
    jitted = per_fun.get(key)
    if jitted is None:
        jitted = per_fun[key] = _make_transformed_jit(transformed, tree, dynamic, static)
        while len(per_fun) > _TRANSFORMED_JITS_MAX:
            per_fun.popitem(last=False)
    else:
        per_fun.move_to_end(key)
    return jitted


def _make_transformed_jit(transformed: Callable[..., Any], tree: Any, dynamic: tuple[int, ...],
                          static: tuple[Any, ...]) -> Any:
    import jax
    from jax import tree_util

    def call(*operands: Any) -> Any:
        leaves = [None if s is None else s[1] for s in static]
        for i, x in zip(dynamic, operands):
            leaves[i] = x
        args, kwargs = tree_util.tree_unflatten(tree, leaves)
        return transformed(*args, **kwargs)

    functools.update_wrapper(call, transformed)
    return jax.jit(call)


def eager_sampler() -> str | None:
    """The public name of the sampler (``jax.random.normal``) whose eager
    call is compiling now, if any: the jit it runs in hides it from the
    stack."""
    return getattr(tls, "sampler", None)


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
        if w is not None or (marked is not None and differs_in_x64(marked, config)):
            what = (f"{_described(w)} host data" if w is not None else
                    f"an array of the x64 program's {marked}[{','.join(map(str, a.shape))}]")
            no_meaning(NoMeaning(f"{what} enters it, traced {_TRANSFORMED}"),
                       str(params.get("name", "a jitted function")), config.policy)
            return


def _unjudged_transformation(dtype: Any) -> RangePolicy | None:
    """The policy in force if a 64-bit ``dtype`` met now is in a trace with no
    x64 meaning (a transformation outside any jit), else ``None``."""
    if dtype.itemsize != 8 or dtype.kind not in "iuf":
        return None
    if getattr(tls, "judging", 0) or not x64_requested():
        return None
    if at_top_level():
        return None  # eager (an eager primitive takes the x64 meaning) or a jit's arguments
    config = STATE.active_config()
    assert config is not None
    return config.policy if differs_in_x64(dtype, config) else None


_TRANSFORMED = ("under a transformation (vmap, grad, scan, shard_map) outside any jit, which "
                "has no x64 meaning there (jit the transformed function)")


def note_wide_host_data(original: Any) -> None:
    """64-bit host data narrowed as it enters a trace with no x64 meaning."""
    policy = _unjudged_transformation(original.dtype)
    if policy is not None:
        no_meaning(NoMeaning(f"{_described(original)} host data is narrowed in a function traced "
                             f"{_TRANSFORMED}"),
                   "a transformed function", policy)


def note_explicit_dtype(requested: Any, became: Any, fun_name: Any) -> None:
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
