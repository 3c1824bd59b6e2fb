"""The x64 trace of a top-level jit call (JAX's 32-bit trace replayed from it) and its lowering,
remembered beside the module JAX lowered."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from ...errors import (
    ConstantRangeError,
)
from ...ir._mlir import ir
from ...ir.locations import assume_scope
from ...kinds import RangePolicy
from .. import callbacks, host, x64_arrays
from .._compat import (
    callback_effect_types,
    enable_x64,
    eval_jaxpr,
    jit_dynamic_arguments,
    jit_input_avals,
    lowering_without_donation,
    trace_flat,
    traced_constant_sources,
)
from ..replay import image_aval, replay_function
from ..state import STATE
from .judge import NoMeaning
from .records import (
    PENDING_MAX,
    Deferred,
    genuine_modules,
    keep_host_callbacks,
    lock,
    lowered_from,
    meanings,
    pending,
    replayed,
    required,
    required_modules,
    runs_32bit,
    sentinel_checks,
    tls,
    wanted,
)
from .variants import map_dynamic, small_arguments

_original_trace: Callable[..., Any] | None = None
_original_lower: Callable[..., Any] | None = None


def take_trace(original: Callable[..., Any]) -> Callable[..., Any]:
    """JAX's trace of a jit call (kept) -> :func:`_trace_for_jit`."""
    global _original_trace
    _original_trace = original
    return _trace_for_jit


def take_lower(original: Callable[..., Any]) -> Callable[..., Any]:
    """JAX's lowering of a jit call (kept) -> :func:`_pjit_lower`."""
    global _original_lower
    _original_lower = original
    return _pjit_lower


def _trace_for_jit(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    assert _original_trace is not None
    if not wanted():
        return _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    # One trace of the user's Python: the x64 program first, and JAX's 32-bit
    # program replayed from it (no64.jax.replay); the user's function is traced
    # with x64 off as well only where the replay cannot rebuild it.
    given = getattr(tls, "arguments", None)
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
    p64 = _callbacks_adapted(p64)
    replay = replay_function(fun, p64.params["jaxpr"], p64.out_tree, ji, sources)
    p64 = _sentinels_restored(p64, ji, *(given if given is not None else (args, kwargs)))
    p64 = _ranges_stated(p64, ji, *(given if given is not None else (args, kwargs)))
    tls.judging = getattr(tls, "judging", 0) + 1
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
        tls.judging -= 1
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
        replayed[p.params["jaxpr"]] = functools.partial(
            _original_trace, fun, ji, ctx_mesh, dbg, avals, a_args, a_kwargs)
    except TypeError:
        pass
    return p


def _callbacks_adapted(p64: Any) -> Any:
    """``p64``, the x64 trace of a call, with the boundary of each of its
    host callbacks made 32-bit (:func:`no64.jax.callbacks.adapted`): the
    callbacks stay in the x64 program, and the host rebuilds their 64-bit
    values."""
    config = STATE.active_config()
    if config is None:
        return p64
    closed = p64.params["jaxpr"]
    try:
        jaxpr = callbacks.adapted(closed, config.policy, config.float_policy)
    except Exception:  # noqa: BLE001 - no x64 meaning then (see _compared)
        return p64
    return p64 if jaxpr is closed else p64._replace(params={**p64.params, "jaxpr": jaxpr})


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
        return p64  # the other policies compute with the images (sentinels_judged)
    seeds = host.argument_seeds(jit_dynamic_arguments(ji, args, kwargs))
    if not seeds:
        return p64
    import numpy as np

    def restored(i: int, x: Any) -> Any:
        from jax import lax

        for image in sorted(seeds[i]):
            dt = np.dtype(x.dtype)
            hit = lax.eq(x, lax.full_like(x, np.array(image, dt)))
            x = lax.select(hit, lax.full_like(x, np.array(_SENTINELS[image], dt)), x)
        return x

    return _at_entry(p64, seeds, restored)


def _at_entry(p64: Any, positions: Any, step: Callable[[int, Any], Any]) -> Any:
    """``p64``, the x64 trace of a call, with each input at ``positions``
    taken through ``step(position, input)`` where its program begins
    (traced again with x64 on)."""
    closed = p64.params["jaxpr"]

    def stepped(*given: Any) -> list[Any]:
        xs = list(given)
        for i in positions:
            xs[i] = step(i, xs[i])
        return eval_jaxpr(closed.jaxpr, closed.consts, *xs)

    with enable_x64(True):
        jaxpr = trace_flat(stepped, [v.aval for v in closed.jaxpr.invars], closed.jaxpr.debug_info)
    return p64._replace(params={**p64.params, "jaxpr": jaxpr})


def _ranges_stated(p64: Any, ji: Any, args: Any, kwargs: Any) -> Any:
    """``p64``, the x64 trace of a call, stating at its entry the range of
    each argument the host knows to be small (:func:`~.variants.small_arguments`:
    a Python int, int64 numpy data, an array made from such data), as
    ``no64.assume`` states one: the call's x64 signature holds the class, so
    this trace serves only calls whose values lie in it."""
    small = small_arguments(jit_dynamic_arguments(ji, args, kwargs))
    if not small:
        return p64

    def stated(i: int, x: Any) -> Any:
        import jax
        from jax import lax

        with jax.named_scope(assume_scope(*small[i])):
            return lax.optimization_barrier(x)

    return _at_entry(p64, small, stated)


def sentinels_judged(jaxpr: Any, check: Callable[[], None]) -> bool:
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
        deferred = meanings.get(jaxpr)
    except TypeError:
        return False
    if deferred is None or isinstance(deferred.get(), NoMeaning):
        return False
    with lock:
        if jaxpr in runs_32bit:
            return False
        sentinel_checks[jaxpr] = check
    return True


def _keep_meaning(p: Any, meaning: Any) -> None:
    deferred = Deferred(lambda: meaning)
    deferred.get()
    try:
        meanings[p.params["jaxpr"]] = deferred
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
    tls.judging = getattr(tls, "judging", 0) + 1
    try:
        p = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except ConstantRangeError as exc:
        return _trace_for_exact(fun, ji, ctx_mesh, dbg, avals, args, kwargs, exc, p64)
    finally:
        tls.judging -= 1
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
    required[p.params["jaxpr"]] = refusal
    return p


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

    return map_dynamic(args, kwargs, ji, leaf)


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

    return map_dynamic(args, kwargs, ji, leaf)


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
    meaning = Deferred(lambda: _trace_x64(fun, ji, ctx_mesh, dbg, args, kwargs, p,
                                           getattr(tls, "arguments", None))
                        if p64 is None else _compared(p, p64))
    if isinstance(meaning.get(), NoMeaning):
        raise refusal
    jaxpr = p.params["jaxpr"]
    meanings[jaxpr] = meaning
    required[jaxpr] = refusal
    return p


def _trace_x64(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any, p: Any,
               given: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Any:
    p64 = _trace_x64_program(fun, ji, ctx_mesh, dbg, args, kwargs, given)
    if p64.consts:
        return NoMeaning("its trace holds constants JAX passes as arguments")
    p64 = _callbacks_adapted(p64)
    called = given if given is not None else (args, kwargs)
    return _compared(p, _ranges_stated(_sentinels_restored(p64, ji, *called), ji, *called))


def _trace_x64_program(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any,
                       given: tuple[tuple[Any, ...], dict[str, Any]] | None) -> Any:
    """JAX's trace of ``fun`` with x64 on, for the caller's arguments as
    given (the 64-bit host data, and each array of a 64-bit value of the x64
    program as that value)."""
    if given is not None:
        args, kwargs = given
    args, kwargs = _as_in_x64(args, kwargs, ji)
    assert _original_trace is not None
    tls.busy = True
    try:
        with enable_x64(True):
            avals = jit_input_avals(fun, ji, dbg, args, kwargs)
            return _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    finally:
        tls.busy = False


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
    kept = callback_effect_types()
    others = {type(e).__name__ for e in (*j32.effects, *j64.effects) if not isinstance(e, kept)}
    if others:
        return NoMeaning(f"it has side effects ({', '.join(sorted(others))}) other than host callbacks, "
                         "which no64 cannot move into its x64 program")
    if callbacks.holds_wide_callback(j64):
        # (the 32-bit trace of the user's function, traced a second time)
        return NoMeaning("its host callbacks could not be given a 32-bit boundary in its x64 program")
    return p64


def _pjit_lower(jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
    assert _original_lower is not None
    computation = _original_lower(jaxpr, *args, **kwargs)
    try:
        deferred = meanings.get(jaxpr)
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
        # without donation: which inputs the module JAX lowered aliases to
        # which results is a matter of its 32-bit signature, which the
        # prepared x64 module takes from it (its 64-bit types alias otherwise,
        # and JAX would warn of the same donation twice)
        a64, k64 = lowering_without_donation(p64.params["jaxpr"], args, kwargs)
        tls.busy = True
        try:
            with enable_x64(True):
                c64 = _original_lower(p64.params["jaxpr"], *a64, **k64)
        finally:
            tls.busy = False
        a, b = computation.compile_args, c64.compile_args
        same = all(a.get(k) == b.get(k) for k in ("kept_var_idx", "ordered_effects", "unordered_effects"))
        if not same or len(a.get("host_callbacks") or ()) != len(b.get("host_callbacks") or ()):
            return NoMeaning("its lowering has other effects or host callbacks than its 32-bit "
                             "program's")
        keep_host_callbacks(c64._hlo, b.get("host_callbacks"))
        return c64._hlo

    try:
        retrace = replayed.get(jaxpr)
    except TypeError:
        retrace = None
    genuine: list[ir.Module] = []

    def lower_genuine() -> ir.Module:
        if not genuine:
            assert _original_lower is not None and retrace is not None
            p = retrace()
            c32 = _original_lower(p.params["jaxpr"], *args, **kwargs)
            keep_host_callbacks(c32._hlo, c32.compile_args.get("host_callbacks"))
            genuine.append(c32._hlo)
        return genuine[0]

    with lock:
        pending[id(module)] = (module, lower_x64)
        pending.move_to_end(id(module))
        try:
            lowered_from[id(module)] = (module, weakref.ref(jaxpr))
        except TypeError:
            pass
        if retrace is not None:
            genuine_modules[id(module)] = (module, lower_genuine)
        while len(pending) > PENDING_MAX:
            old, _ = pending.popitem(last=False)
            required_modules.pop(old, None)
            genuine_modules.pop(old, None)
            lowered_from.pop(old, None)
        refusal = required.get(jaxpr)
        if refusal is not None:
            required_modules[id(module)] = refusal
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
