"""A module JAX lowered, prepared for the backend: demoted (or refused)
under the configuration, its entry's 64-bit arrays refused, and made exact
on and checked against the device's profile."""

from __future__ import annotations

import logging
import warnings

from ...errors import Boundary64BitError, No64Error, Remaining64BitError, TargetWarning
from ...ir._mlir import ir
from ...ir.types import TypeConverter
from ...kinds import Mode, Outputs
from ...spec.registry import spec_of
from ...spec.walk import entry_function, symbol_name
from ...targets import Target, target_for_platform
from ...transforms.pipeline import Pipeline, constrains
from ...transforms.scan import check, find_64bit, has_64bit
from .. import host, intent
from .._compat import explicit_x64_dtypes_allowed, x64_state
from ..state import ALL_PLATFORMS, STATE
from .config import Config
from .records import record

logger = logging.getLogger("no64")

_warned_target: set[tuple[str, int, str]] = set()


def device_profile(config: Config, platform: str) -> Target:
    """The device profile modules for ``platform`` are converted for, made
    exact on and checked against: ``config``'s target, else the platform's
    (:func:`no64.targets.target_for_platform`; ``generic`` if none)."""
    given = config.options.target
    return given if given is not None else target_for_platform(platform)


def check_device(module: ir.Module, config: Config, platform: str, owned: bool = False) -> ir.Module:
    """The module to compile for ``module``'s device, made exact there where
    no64 can, and checked against the device's profile
    (:mod:`no64.targets`).

    First the ops the device computes inexactly on a narrower datapath, or
    refuses for their integer elements, are rewritten into exact forms
    (:func:`no64.transforms.legalize.legalize`: an integer ``dot`` into limb
    dots exact in f32), and the 16-bit integers a device without them
    widens are carried in 32 bits (for a module without any 64-bit value
    too), in a copy unless ``owned`` (the module is no64's own copy
    already).  Then each op the device refuses, and each integer
    op it computes on a narrower datapath without a proof of exactness (for
    the program's own 32-bit integers too), is a :class:`no64.TargetWarning`
    at its line (once per line) under the default policy and a
    :class:`no64.TargetError` under ``strict`` and ``exact``."""
    profile = device_profile(config, platform)
    if not constrains(profile):
        return module
    checked = Pipeline(config.options).check_target(module, profile, copy=None if owned else clone_module)
    module, findings, said = checked.module, checked.findings, checked.explain
    if checked.legalized.changed:
        logger.debug("no64 legalized %s for %s: %s", module_name(module), profile.name,
                     checked.legalized.summary())
    if STATE.listeners:
        STATE.tell.on_target(module, platform, profile, checked.legalized, findings)
    if not findings:
        return module
    name = module_name(module)
    if checked.refused:
        raise checked.refusal(f"no64 (NO64_POLICY={config.policy}) refuses {name} for target '{profile.name}'",
                              source=True)
    for f in findings:
        file, line = f.location.file or "<unknown>", f.location.line or 0
        key = (file, line, f.kind)
        if key in _warned_target:
            continue
        _warned_target.add(key)
        warnings.warn_explicit(f"no64: {name}: {said(f)} (NO64_POLICY=strict refuses it)", TargetWarning,
                               file, line)
    return module


def module_name(module: ir.Module) -> str:
    """The ``sym_name`` of a module (``jit_step``), or ``"<module>"``."""
    try:
        return ir.StringAttr(module.operation.attributes["sym_name"]).value
    except (KeyError, ValueError):
        return "<module>"


def prepare_module(module: ir.Module, config: Config, platform: str) -> ir.Module:
    """What the backend gets instead of ``module`` under ``config``.

    ``module`` itself is never modified.  A module without 64-bit values is
    returned as is; in ``"fix"`` mode a demoted and checked copy is returned;
    in ``"check"`` mode a module with 64-bit values is refused.  (The x64
    program of a module JAX lowered is prepared by :func:`judge_meaning`.)

    Raises:
      no64.Remaining64BitError: ``"check"`` mode and a 64-bit value remains.
      Boundary64BitError: the module's entry takes or returns 64-bit arrays.
      no64.UnsupportedOpError, no64.ConstantRangeError: demotion refused.

    The listeners (:data:`STATE`) are told what it recorded or raised
    (:meth:`~no64.jax.state.HookListener.on_module`).
    """
    if not STATE.listeners:
        return _prepare_module(module, config, platform)
    try:
        prepared = _prepare_module(module, config, platform)
    except BaseException as exc:
        STATE.tell.on_module(module, platform, None, exc)
        raise
    STATE.tell.on_module(module, platform, STATE.thread.report, None)
    return prepared


def _prepare_module(module: ir.Module, config: Config, platform: str) -> ir.Module:
    name = module_name(module)
    STATE.thread.report = None
    if not has_64bit(module):
        record(name, platform, config.mode, None)
        return module
    if config.mode is Mode.CHECK:
        try:
            check(module)
        except Remaining64BitError as exc:
            raise Remaining64BitError(
                f"no64 (mode 'check') refuses {name} for platform '{platform}': {exc}",
                exc.findings,
            ) from None
    _check_boundary(module, name, platform, config)
    copy = clone_module(module)
    try:
        # The strict check runs inside the pass (over the ops it already
        # holds); the backend verifies the module it receives, so the pass
        # does not verify it a second time (see _compile_or_get_cached).
        report = Pipeline(config.options.replace(verify=False, check=True, outputs=Outputs.NARROW,
                                                 target=device_profile(config, platform))).demote(copy)
    except No64Error as exc:
        host.name_callers_line(exc, module)
        exc.add_note(f"no64 was preparing {name} for platform '{platform}' ({config.describe()})")
        raise
    STATE.thread.report = report
    if report.float_hints:
        intent.warn_float_hints(report, name)
    record(name, platform, config.mode, report)
    logger.debug("no64 demoted %s for %s: %s", name, platform, report.summary().splitlines()[0])
    return copy


def clone_module(module: ir.Module) -> ir.Module:
    """A deep copy of ``module`` in the same context, as an ``ir.Module``.

    ``Operation.clone`` returns the copied ``builtin.module`` as an op; its
    body is moved into a fresh ``ir.Module`` carrying the same attributes, so
    the copy can be handed to the backend like the original.
    """
    with module.context, module.operation.location:
        new = ir.Module.create()
        src = module.operation.attributes
        dst = new.operation.attributes
        for i in range(len(src)):
            named = src[i]
            dst[named.name] = named.attr
        copy = module.operation.clone()
        body = new.body
        for op in list(copy.regions[0].blocks[0].operations):
            op = op.operation
            op.detach_from_parent()
            body.append(op)
        copy.operation.erase()
    return new


def _check_boundary(module: ir.Module, name: str, platform: str, config: Config) -> None:
    """Refuse a module whose entry function takes or returns 64-bit values."""
    main = entry_function(module.operation)
    if main is None:
        return
    with module.context:
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        holds = TypeConverter().holds_64bit
        if not any(holds(t) for t in (*ftype.inputs, *ftype.results)):
            return
    entry = symbol_name(main)
    findings = [
        f for f in find_64bit(module)
        if f.function == entry and spec_of(f.op).function
    ]
    shown = "\n  ".join(str(f) for f in findings[:10])
    more = f"\n  ... and {len(findings) - 10} more" if len(findings) > 10 else ""
    if ALL_PLATFORMS in config.platforms:
        why = (
            "Under no64.jit arguments are converted to 32 bits and tracing runs with x64 off, "
            "so the 64-bit value entered another way (e.g. a 64-bit array JAX passes to the "
            "computation as an argument): pass it to the function as an argument instead."
        )
    elif x64_state().value:
        why = (
            "jax_enable_x64 is on. Turn it off for this platform (no64 turns it off when it is "
            "installed for the default backend), or use no64.jit, which traces with x64 off "
            "and converts 64-bit host inputs with range checks."
        )
    elif explicit_x64_dtypes_allowed():
        why = (
            "jax_explicit_x64_dtypes is 'allow' (globally or in a scope, "
            "jax.config.explicit_x64_dtypes), so JAX makes the 64-bit arrays a dtype asks for "
            "(uint64, int64, float64) with x64 off. Ask for 32-bit dtypes, or leave it at "
            "'warn' (JAX's default), where JAX gives the 32-bit dtype instead."
        )
    else:
        why = (
            "The computation was traced with jax_enable_x64 on in a scope (jax.enable_x64(True)) "
            "or before no64 was active, or is given a 64-bit jax.Array made then. no64 turns "
            "x64 off when it becomes active (when jax is imported, with NO64_PLATFORMS set and "
            "no64's start-up file installed; otherwise when JAX starts its backends), so "
            "calling it again outside such a scope traces it anew 32-bit. no64.jit passes "
            "64-bit host data in with range checks."
        )
    raise Boundary64BitError(
        f"no64 refuses {name} for platform '{platform}': its entry takes or returns 64-bit "
        f"arrays, which cannot exist on a platform without 64-bit types.\n  {shown}{more}\n{why}",
        findings,
    )
