"""A program that asked for x64, prepared by its x64 meaning
(:mod:`no64.jax.intent`): the x64 module, converted by the pass and judged
under the configured policy, is what the backend compiles in place of JAX's
32-bit module."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from ...errors import NarrowingError, No64Error, OutputRangeError
from ...ir._mlir import ir
from ...ir.types import TypeConverter
from ...kinds import Outputs, RangePolicy
from ...spec.walk import entry_function
from ...transforms.emulate import exact_input_ranges
from ...transforms.pipeline import Pipeline
from .. import host, intent
from ..state import STATE
from .config import Config
from .prepare import clone_module, device_profile, module_name, prepare_module
from .records import record

logger = logging.getLogger("no64")

#: id(module) -> (that module, the error to raise if a result it checks by
#: value does not fit when it runs): modules prepared under ``exact`` whose
#: last result is that check (``outputs="checked"``; the compile hook reads
#: the flag after each run)
checked_modules: dict[int, tuple[ir.Module, Callable[[], OutputRangeError]]] = {}


def prepare_with_meaning(module: ir.Module, meaning: "ir.Module | intent.NoMeaning | None",
                         config: Config, platform: str) -> ir.Module:
    """What the backend compiles for ``module`` (JAX's 32-bit module of a
    program that asked for x64), given its x64 meaning ``meaning``
    (:func:`no64.jax.intent.meaning_of`).

    Under every policy the x64 module, converted by the pass, replaces JAX's
    (it has the same 32-bit signature), so what runs is what was judged:
    width-dependent integer ops (shifts by 32 or more, ``clz``/``popcnt``,
    64-bit random bits, composite keys) give the x64 result -- on 32-bit
    words, or, for a device profile with native ``int64``/``uint64``
    (``mtl``, ``neuron-trn2``), as the x64 program computes them, only its
    32-bit arguments widened and its results narrowed.  The integers
    it cannot prove inside 32 bits are reported at their lines
    (:class:`no64.UnprovenIntegerWarning`) under the default policy and
    computed as 32-bit values there, refused under ``strict``, and computed
    exactly on 32-bit words under ``exact`` (see :func:`judge_meaning`).
    ``None``: the x64 program holds no 64-bit value and means what JAX's
    does.  A program whose x64 meaning cannot be had
    (:class:`~no64.jax.intent.NoMeaning`) runs JAX's module with a
    :class:`no64.NoX64MeaningWarning` under the default policy and is
    refused under ``strict`` and ``exact``.
    """
    name = module_name(module)
    if isinstance(meaning, ir.Module) and _signature(meaning, narrowed=True) != _signature(module):
        meaning = intent.NoMeaning("its x64 program, narrowed, has another signature than its "
                                   "32-bit program")
    if isinstance(meaning, intent.NoMeaning):
        intent.refuse_without_meaning(module)
        intent.no_meaning(meaning, name, config.policy)
        return _prepared_32bit(module, config, platform)
    if not isinstance(meaning, ir.Module):
        return prepare_module(module, config, platform)
    return judge_meaning(module, meaning, config, platform)


def _prepared_32bit(module: ir.Module, config: Config, platform: str) -> ir.Module:
    """JAX's own 32-bit program of ``module``, prepared (it calls the host
    callbacks of the module it is made from)."""
    source = intent.runnable_32bit(module)
    prepared = prepare_module(source, config, platform)
    intent.carry_host_callbacks(source, prepared)
    return prepared


def _signature(module: ir.Module, narrowed: bool = False) -> tuple[list[str], list[str]] | None:
    """The entry function's input and result types (``narrowed``: as no64 narrows them)."""
    main = entry_function(module.operation)
    if main is None:
        return None
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        convert = TypeConverter().convert_or_same if narrowed else (lambda t: t)
        return [str(convert(t)) for t in ftype.inputs], [str(convert(t)) for t in ftype.results]


def judge_meaning(module: ir.Module, meaning: ir.Module, config: Config, platform: str) -> ir.Module:
    """Convert ``meaning``, the x64 module of JAX's 32-bit ``module``, into
    what the backend compiles for it, judged under the configured policy.

    Its 64-bit inputs are the 32-bit values the host narrowed, and its
    outputs come back narrowed to the 32-bit arrays JAX returns.  The
    64-bit types the device profile has (:func:`device_profile`) are kept
    inside: on a device with native ``int64``/``uint64`` only the results
    are narrowed, and judged as what follows says.  Under
    ``exact`` every integer not proven to fit is computed on 32-bit words
    and an output not proven to fit is refused
    (:class:`no64.OutputRangeError`).  Under the other policies the
    integers it cannot prove inside 32 bits are narrowed, reported once per
    source line (:class:`no64.UnprovenIntegerWarning`) and kept in the
    module's :class:`CompileRecord` (``meaning``); ``strict`` refuses them
    (:class:`no64.NarrowingError`).  The listeners are told the judgement
    (:meth:`~no64.jax.state.HookListener.on_meaning`), then the prepared
    module (:meth:`~no64.jax.state.HookListener.on_module`, with
    ``meaning`` as the module).
    """
    name = module_name(module)
    try:
        prepared = _judge_meaning(module, meaning, config, platform, name)
    except BaseException as exc:
        if STATE.listeners:
            STATE.tell.on_meaning(module, meaning, platform, None, exc)
            STATE.tell.on_module(meaning, platform, None, exc)
        raise
    return prepared


def _judge_meaning(module: ir.Module, meaning: ir.Module, config: Config, platform: str,
                   name: str) -> ir.Module:
    STATE.thread.report = None
    exact = config.policy is RangePolicy.EXACT
    copy = clone_module(meaning)
    try:
        # the unproven integers are the judgement's (refused under strict below)
        # a target with native 64-bit integers computes them as the x64
        # program does; only the results JAX returns in 32 bits are narrowed
        report = Pipeline(config.options.replace(
            policy=config.policy if exact else RangePolicy.PERMISSIVE,
            input_ranges=exact_input_ranges(copy.operation, None), verify=False, check=True,
            outputs=Outputs.CHECKED if exact else Outputs.NARROW,
            target=device_profile(config, platform))).demote(copy)
    except No64Error as exc:
        if exact and isinstance(exc, NarrowingError):
            raise intent.output_error(name, exc) from None
        host.name_callers_line(exc, meaning)
        if config.policy in (RangePolicy.DEFAULT, RangePolicy.PERMISSIVE):
            # no64 cannot convert the x64 program (an op with no 32-bit form
            # there): said at the line, and JAX's 32-bit program runs
            first = (str(exc).strip().splitlines() or [""])[0]
            intent.no_meaning(intent.NoMeaning(f"no64 cannot convert its x64 program ({first})"),
                              name, config.policy)
            return _prepared_32bit(module, config, platform)
        exc.add_note(f"no64 was preparing the x64 program of {name} for platform '{platform}' "
                     f"({config.describe()})")
        raise
    intent.refuse_or_warn_overflow(report, name, config.policy)
    if not exact:
        intent.refuse_unless_proven(module, report)
        if config.policy is RangePolicy.STRICT:
            bad = intent.unproven(report)
            if bad:
                n = bad[0]
                refusal = NarrowingError(n.op, n.location, n.verdict, n.interval or (0, 0), config.policy,
                                         narrowing=n, reason=n.detail if intent.meets_sentinel(n) or not n.interval
                                         else None)
                host.name_callers_line(refusal, meaning)
                refusal.add_note(f"no64 was judging {name} for platform '{platform}' by its x64 "
                                 f"program ({config.describe()})")
                refusal.add_note("where the program knows the value's range, no64.assume(x, lo, hi) "
                                 "states it there")
                raise refusal
        intent.warn_unproven(report, name)
        STATE.thread.meaning = report
    if report.checked_outputs:
        checked_modules[id(copy)] = (copy, functools.partial(intent.checked_output_error, name,
                                                      list(report.checked_outputs)))
    if STATE.listeners:
        STATE.tell.on_meaning(module, meaning, platform, None if exact else report, None)
    STATE.thread.report = report
    if report.float_hints:
        intent.warn_float_hints(report, name)
    record(name, platform, config.mode, report)
    if STATE.listeners:
        STATE.tell.on_module(meaning, platform, report, None)
    logger.debug("no64 converted the x64 program of %s for %s: %s", name, platform,
                 report.summary().splitlines()[0])
    # the x64 module calls the host callbacks its own lowering registered
    intent.carry_host_callbacks(meaning, copy)
    _donations_taken(module, copy)
    return copy


#: the attributes of an entry argument by which JAX's lowering donates it:
#: the result its buffer is aliased to, or donated for the compiler to alias
_DONATION = ("tf.aliasing_output", "jax.buffer_donor")


def _argument_attributes(function: ir.Operation) -> list[dict[str, ir.Attribute]]:
    """The attributes of each of an entry function's arguments, by name."""
    if "arg_attrs" not in function.attributes:
        return []
    out = []
    for d in ir.ArrayAttr(function.attributes["arg_attrs"]):
        d = ir.DictAttr(d)
        out.append({d[i].name: d[i].attr for i in range(len(d))})
    return out


def _donations_taken(module: ir.Module, prepared: ir.Module) -> None:
    """``prepared``, made from the x64 module of JAX's 32-bit ``module`` and
    with its signature, donates the inputs ``module`` donates, aliased to the
    same results: the caller's donated buffer holds the result as JAX
    planned (the x64 module is lowered without donation, its 64-bit types
    aliasing otherwise)."""
    source, target = entry_function(module.operation), entry_function(prepared.operation)
    if source is None or target is None:
        return
    given = _argument_attributes(source)
    if not any(k in _DONATION for attrs in given for k in attrs):
        return
    with prepared.context:
        n = len(ir.FunctionType(ir.TypeAttr(target.attributes["function_type"]).value).inputs)
        attrs = _argument_attributes(target) or [{} for _ in range(n)]
        for i, named in enumerate(attrs):
            for k in _DONATION:
                named.pop(k, None)
                if i < len(given) and k in given[i]:
                    named[k] = ir.Attribute.parse(str(given[i][k]))
        target.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in attrs])
