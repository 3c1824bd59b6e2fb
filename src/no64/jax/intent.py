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
  traced a second time with x64 on, for the caller's argument dtypes
  (``_trace_for_jit``; JAX caches both traces per signature);
* when JAX lowers the 32-bit trace, the x64 trace is remembered beside the
  module JAX made, and lowered only when that module reaches the backend;
* the hook then judges the x64 module (:func:`prepare`): every integer the
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
twice), and 32-bit ``jax.Array`` values made from 64-bit data before the call
(their x64 meaning is not known; pass the host data to the jitted function).
"""

from __future__ import annotations

import collections
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..core._mlir import ir
from ._compat import enable_x64, jit_input_avals, wrap_jit_lower, wrap_jit_trace
from ..core.demote import demote
from ..core.report import DemotionReport, Narrowing
from ..errors import (ConstantRangeError, FloatPrecisionWarning, NarrowingError, OutputRangeError,
                      UnprovenIntegerWarning)
from ..kinds import Mode, RangePolicy, Verdict

__all__ = ["clear_warned", "install", "meaning_of", "prepare", "unproven", "warn_float_hints",
           "warn_unproven", "with_x64_arguments"]

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

_tls = threading.local()

#: (file, line) already warned about, once per process
_warned: set[tuple[str, int]] = set()
_warned_float: set[tuple[str, int]] = set()


def install() -> None:
    """Put the second trace and lowering into JAX's ``jit`` (idempotent)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        from . import host

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
        host.host_policy = _forced_host_policy(host.host_policy)
        _installed = True


def _forced_host_policy(original: Callable[[], str | None]) -> Callable[[], str | None]:
    """``host.host_policy``, with the policy forced for the 32-bit trace of a
    program whose x64 meaning is what runs (see :func:`_trace_for_exact`)."""
    def host_policy() -> str | None:
        policy = original()
        forced = getattr(_tls, "host_policy", None)
        return forced if forced is not None and policy is not None else policy

    host_policy.__doc__ = original.__doc__
    return host_policy


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


def _wanted() -> bool:
    """Whether a trace starting now needs its x64 meaning."""
    if getattr(_tls, "busy", False):
        return False
    from jax._src import config as jax_config
    from jax._src import core

    from . import hook

    config = hook.active_config()
    if config is None or config.mode is not Mode.FIX or jax_config.enable_x64.value:
        return False
    if not core.trace_state_clean():
        return False
    return hook.ALL_PLATFORMS in config.platforms or hook._x64_off_by_no64


def _exact() -> bool:
    from . import hook

    config = hook.active_config()
    return config is not None and config.policy is RangePolicy.EXACT


def _trace_for_jit(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any) -> Any:
    assert _original_trace is not None
    try:
        p = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except ConstantRangeError as exc:
        # a host integer beyond 32 bits (a 64-bit hash multiplier): under
        # "exact" the x64 program, which holds it exactly, is what runs
        if not (_wanted() and _exact()):
            raise
        return _trace_for_exact(fun, ji, ctx_mesh, dbg, avals, args, kwargs, exc)
    if not _wanted():
        return p
    jaxpr = p.params["jaxpr"]
    meaning = None
    try:
        meaning = _trace_x64(fun, ji, ctx_mesh, dbg, args, kwargs, p)
    except Exception:  # noqa: BLE001 - the 32-bit program runs as it did without a meaning
        meaning = None
    try:
        _meanings[jaxpr] = meaning
    except TypeError:
        pass
    return p


def _trace_for_exact(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, avals: Any, args: Any, kwargs: Any,
                     refusal: ConstantRangeError) -> Any:
    """The 32-bit trace of a program the 32-bit trace refused a host integer
    of, taken only for its signature: the host integers are wrapped there
    (and not recorded), and the x64 module, which holds them exactly, must
    replace the module JAX lowers from it -- else ``refusal`` is raised."""
    from . import host

    assert _original_trace is not None
    with host._records_lock:
        records = dict(host._records)
    _tls.host_policy = "wrap"
    try:
        p = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    except Exception:  # noqa: BLE001 - not the host integer alone: the refusal stands
        raise refusal from None
    finally:
        _tls.host_policy = None
        with host._records_lock:
            host._records.clear()
            host._records.update(records)
    try:
        meaning = _trace_x64(fun, ji, ctx_mesh, dbg, args, kwargs, p)
    except Exception:  # noqa: BLE001
        meaning = None
    if meaning is None:
        raise refusal
    jaxpr = p.params["jaxpr"]
    _meanings[jaxpr] = meaning
    _required[jaxpr] = refusal
    return p


def _trace_x64(fun: Any, ji: Any, ctx_mesh: Any, dbg: Any, args: Any, kwargs: Any, p: Any) -> Any:
    given = getattr(_tls, "arguments", None)
    if given is not None:
        args, kwargs = given
    assert _original_trace is not None
    _tls.busy = True
    try:
        with enable_x64(True):
            avals = jit_input_avals(fun, ji, dbg, args, kwargs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p64 = _original_trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
    finally:
        _tls.busy = False
    if (p64.consts or p.consts or p64.in_tree != p.in_tree or p64.out_tree != p.out_tree
            or len(p64.in_avals) != len(p.in_avals)):
        return None
    j32, j64 = p.params["jaxpr"], p64.params["jaxpr"]
    if len(j32.out_avals) != len(j64.out_avals) or any(
            getattr(a, "shape", None) != getattr(b, "shape", None)
            for a, b in zip((*j32.in_avals, *j32.out_avals), (*j64.in_avals, *j64.out_avals))):
        return None
    if j32.effects or j64.effects:
        return None
    return p64


def _pjit_lower(jaxpr: Any, *args: Any, **kwargs: Any) -> Any:
    assert _original_lower is not None
    computation = _original_lower(jaxpr, *args, **kwargs)
    try:
        p64 = _meanings.get(jaxpr)
    except TypeError:
        p64 = None
    if p64 is None:
        return computation
    module = computation._hlo
    lowered: list[ir.Module | None] = []

    def lower_x64() -> ir.Module | None:
        if not lowered:  # once per module JAX lowered (an AOT executable may compile it again)
            lowered.append(_lower_x64())
        return lowered[0]

    def _lower_x64() -> ir.Module | None:
        import jax

        assert _original_lower is not None
        _tls.busy = True
        try:
            with enable_x64(True):
                c64 = _original_lower(p64.params["jaxpr"], *args, **kwargs)
        finally:
            _tls.busy = False
        a, b = computation.compile_args, c64.compile_args
        same = all(a.get(k) == b.get(k) for k in ("kept_var_idx", "ordered_effects", "unordered_effects"))
        if not same or a.get("host_callbacks") or b.get("host_callbacks"):
            return None
        return c64._hlo

    with _lock:
        _pending[id(module)] = (module, lower_x64)
        _pending.move_to_end(id(module))
        while len(_pending) > _PENDING_MAX:
            old, _ = _pending.popitem(last=False)
            _required_modules.pop(old, None)
        refusal = _required.get(jaxpr)
        if refusal is not None:
            _required_modules[id(module)] = refusal
    return computation


def meaning_of(module: ir.Module) -> ir.Module | None:
    """The x64 module of the program whose 32-bit module JAX hands the
    backend, lowered now; ``None`` when it has none."""
    with _lock:
        entry = _pending.get(id(module))
    if entry is None or entry[0] is not module:
        return None
    try:
        meaning = entry[1]()
    except Exception:  # noqa: BLE001 - no meaning: the 32-bit program runs as it did
        meaning = None
    if meaning is None:
        _refuse_without_meaning(module)
    return meaning


def _refuse_without_meaning(module: ir.Module) -> None:
    """Raise the host refusal a module's x64 meaning stood in for, if any."""
    refusal = _required_modules.get(id(module))
    if refusal is not None:
        raise refusal


# ---------------------------------------------------------------------------
# Judging the 32-bit program by its x64 meaning
# ---------------------------------------------------------------------------


def _signature(module: ir.Module, narrowed: bool = False) -> tuple[list[str], list[str]] | None:
    """The entry function's input and result types (``narrowed``: as no64 narrows them)."""
    from ..core.types import TypeConverter
    from .hook import _entry_function

    main = _entry_function(module)
    if main is None:
        return None
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        convert = TypeConverter().convert_or_same if narrowed else (lambda t: t)
        return [str(convert(t)) for t in ftype.inputs], [str(convert(t)) for t in ftype.results]


_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)


def _sentinel_question(n: Narrowing) -> bool:
    """Whether ``n`` is unproven only because of a signed sentinel: a sentinel
    compared with values that may reach the 32-bit extreme, or a value that
    is a 32-bit value or ``INT64_MIN``/``INT64_MAX`` (the identity of a
    ``min``/``argmax`` reduction, a masked fill).  The 32-bit program holds
    the mapped 32-bit extreme there (the pass's and the host's sentinel
    rules, reported as such); it is not a 64-bit value the 32-bit program
    computes differently."""
    if n.detail.startswith("compares a 64-bit sentinel"):
        return True
    if n.interval is None:
        return False
    lo, hi = n.interval
    lo_ok = lo == _I64[0] or _I32[0] <= lo
    hi_ok = hi == _I64[1] or hi <= _I32[1]
    both_extreme = lo == _I64[0] and hi == _I64[1]
    return lo_ok and hi_ok and not both_extreme and (lo == _I64[0] or hi == _I64[1])


def unproven(report: DemotionReport) -> list[Narrowing]:
    """The integer values of an x64 module that the 32-bit program may
    compute differently (sentinel questions left to the sentinel rules)."""
    return [n for n in report.narrowings if n.verdict in (Verdict.UNPROVEN, Verdict.OVERFLOW)
            and not _sentinel_question(n)]


def prepare(module: ir.Module, meaning: ir.Module, config: Any, platform: str) -> ir.Module:
    """What the backend compiles for ``module`` (JAX's 32-bit module), given
    its x64 meaning ``meaning``.

    Under ``policy="exact"`` the x64 module, converted with every integer not
    proven to fit computed exactly, replaces JAX's (it has the same 32-bit
    signature); an output not proven to fit in the 32-bit array the user
    receives raises :class:`no64.OutputRangeError`.  Under the other
    policies the x64 module is judged (:func:`no64.jax.hook.judge_meaning`:
    warnings and records; ``strict`` refuses) and JAX's module is compiled.
    """
    from . import hook

    name = hook.module_name(module)
    if config.policy is not RangePolicy.EXACT:
        hook.judge_meaning(module, meaning, config, platform)
        return hook.prepare_module(module, config, platform)
    if _signature(meaning, narrowed=True) != _signature(module):
        # no comparable x64 meaning: JAX's module runs as it would without one
        _refuse_without_meaning(module)
        return hook.prepare_module(module, config, platform)
    return hook.prepare_module(meaning, config, platform, boundary=False, name=name)


def output_error(name: str, exc: NarrowingError) -> OutputRangeError:
    """The error for an x64 output that ``policy="exact"`` cannot return in
    the 32-bit array JAX lowered (the only value it narrows)."""
    bad = [exc.narrowing] if exc.narrowing is not None else []
    out = OutputRangeError(_output_message(name, bad, str(exc)), bad)
    out.location = exc.location  # type: ignore[attr-defined]
    return out


def _output_message(name: str, bad: list[Narrowing], fallback: str) -> str:
    if not bad:
        return f"no64 (NO64_POLICY=exact) refuses {name}: {fallback}"
    n = bad[0]
    interval = f" in [{n.interval[0]}, {n.interval[1]}]" if n.interval else ""
    return (
        f"no64 (NO64_POLICY=exact) refuses {name}: its x64 program returns a 64-bit integer"
        f"{interval} at {_where(n)} that is not proven to fit in the 32-bit array "
        "JAX returns under the hook; way out: no64.jit(..., policy=\"exact\", restore_dtypes=True) "
        "returns it as int64 on the host"
    )


def _where(n: Narrowing) -> str:
    loc = n.location
    if loc.file is not None:
        return f"{loc.file}:{loc.line}" if loc.line is not None else loc.file
    from .host import user_source

    return user_source().source or "<unknown line>"


def _by_line(items: list[Any], warned: set[tuple[str, int]]) -> dict[tuple[str, int], list[Any]]:
    """``items`` (each with a ``location``) by user line not in ``warned``
    yet, which takes them; lines without a source position are the caller's."""
    by_line: dict[tuple[str, int], list[Any]] = {}
    for n in items:
        loc = n.location
        if loc.file is None or loc.line is None:
            from .host import user_source

            src = user_source()
            key = (src.file or "<unknown>", src.line or 0)
        else:
            key = (loc.file, loc.line)
        by_line.setdefault(key, []).append(n)
    fresh = {k: v for k, v in by_line.items() if k not in warned}
    warned.update(fresh)
    return fresh


def warn_unproven(report: DemotionReport, name: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line not warned about yet."""
    for (file, line), items in _by_line(unproven(report), _warned).items():
        prims = sorted({(i.location.primitive or i.op.rsplit(".", 1)[-1]) for i in items})
        worst = "overflow" if any(i.verdict is Verdict.OVERFLOW for i in items) else "unproven"
        what = ("overflows 32 bits" if worst == "overflow"
                else "is not proven to fit in 32 bits")
        message = (
            f"no64: the x64 program computes a 64-bit integer at {file}:{line} ({', '.join(prims)}, "
            f"in {name}) that {what}; the 32-bit program JAX runs may compute a different "
            "value there. NO64_POLICY=exact (or no64.jit(..., policy=\"exact\")) computes it "
            "exactly; NO64_POLICY=strict refuses it"
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


def clear_warned() -> None:
    """Forget which lines were warned about (for tests)."""
    _warned.clear()
    _warned_float.clear()

