"""Jaxprs and traces: closed and open jaxprs, a scan's operands, evaluating and binding equations,
replaying a jaxpr under another x64 setting, traces in progress, the primitives JAX defines."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .base import missing, optional_module

# ---------------------------------------------------------------------------
# Closed jaxprs
# ---------------------------------------------------------------------------

def jaxpr_classes() -> tuple[type, ...]:
    """The classes of JAX's jaxprs: ``core.Jaxpr`` and ``core.ClosedJaxpr``
    where that is a class of its own (0.7-0.10), ``core.Jaxpr`` alone from
    0.11 (``ClosedJaxpr`` merged into it)."""
    from jax._src import core

    jaxpr = getattr(core, "Jaxpr", None)
    if jaxpr is None:
        raise missing("jaxpr class (jax._src.core.Jaxpr)")
    closed = getattr(core, "ClosedJaxpr", jaxpr)
    return (jaxpr,) if closed is jaxpr else (jaxpr, closed)


def open_jaxpr(jaxpr: Any) -> tuple[Any, Any]:
    """``(open jaxpr, consts)`` of a jaxpr JAX hands out: a ``ClosedJaxpr``'s
    ``jaxpr`` and ``consts`` (0.7-0.10), a ``Jaxpr`` and the consts it
    carries (from 0.11: its ``constvars`` are the inputs with values
    attached, its ``invars`` the others), or an open ``Jaxpr`` and ``()``."""
    from jax._src import core

    closed = getattr(core, "ClosedJaxpr", None)
    if closed is not None and closed is not getattr(core, "Jaxpr", None) and isinstance(jaxpr, closed):
        return jaxpr.jaxpr, jaxpr.consts
    return jaxpr, getattr(jaxpr, "consts", ())


def scan_layout(params: Any, n_in: int) -> tuple[int, int]:
    """``(consts, carried)``: how many of a ``scan`` equation's ``n_in``
    operands are constants and how many the carry (the rest are the scanned
    inputs; the carry's results come first)."""
    if "num_consts" in params and "num_carry" in params:
        return params["num_consts"], params["num_carry"]
    ft_in = params.get("ft_in")
    if ft_in is None or not hasattr(ft_in, "unpack"):
        raise missing("scan operand layout (scan parameters num_consts/num_carry or ft_in)")
    # as JAX's own scan splits its operands (a flat tree of three groups)
    consts, carry, _ = (list(group) for group in ft_in.update(tuple(range(n_in))).unpack())
    return len(consts), len(carry)


def jaxpr_literal_type() -> type:
    """The class of a literal operand of a jaxpr equation: the one JAX's
    equations hold, ``jax._src.core.Literal`` (0.7-0.12), else the public
    ``jax.extend.core.Literal`` (on 0.12 the audit's sentinel following saw
    no literal through the public name)."""
    core = optional_module("jax._src.core")
    found = getattr(core, "Literal", None) if core is not None else None
    if found is None:
        ec = optional_module("jax.extend.core")
        found = getattr(ec, "Literal", None) if ec is not None else None
    if found is None:
        raise missing("jax.extend.core.Literal")
    return found


def eval_jaxpr(jaxpr: Any, consts: Any, *args: Any) -> list[Any]:
    """Evaluate an open jaxpr eagerly: ``jax.core.eval_jaxpr`` (0.7-0.12)."""
    import jax

    fn = getattr(jax.core, "eval_jaxpr", None)
    if fn is None:
        raise missing("jax.core.eval_jaxpr")
    return list(fn(jaxpr, consts, *args))


def bind_equation(eqn: Any, operands: Sequence[Any]) -> list[Any]:
    """Apply one jaxpr equation to ``operands`` as ``jax.core.eval_jaxpr``
    does (a call's body handed over as its primitive takes it:
    ``Primitive.get_bind_params``: the parameters on 0.10-0.12,
    ``(subfuns, params)`` on 0.7); its outputs."""
    prim = eqn.primitive
    get_bind_params = getattr(prim, "get_bind_params", None)
    found = get_bind_params(eqn.params) if get_bind_params is not None else eqn.params
    subfuns, params = found if isinstance(found, tuple) else ((), found)
    out = prim.bind(*subfuns, *operands, **params)
    return list(out) if prim.multiple_results else [out]



# Replaying a jaxpr under another x64 setting
# ---------------------------------------------------------------------------

def closed_jaxpr_type() -> type:
    """The class of a jaxpr with its constants (``core.ClosedJaxpr``,
    0.7-0.10; ``core.Jaxpr`` from 0.11, where the two are one)."""
    from jax._src import core

    return getattr(core, "ClosedJaxpr", core.Jaxpr)


def open_jaxpr_type() -> type:
    """The class of an open jaxpr (``core.Jaxpr``); one no closed jaxpr is
    an instance of where the two are one class (from 0.11)."""
    from jax._src import core

    if closed_jaxpr_type() is core.Jaxpr:
        return type("_NoOpenJaxpr", (), {})
    return core.Jaxpr


def shaped_array_type() -> type:
    """``core.ShapedArray`` (0.7-0.12)."""
    from jax._src import core

    return core.ShapedArray


def make_closed_jaxpr(jaxpr: Any, consts: list[Any]) -> Any:
    """``core.ClosedJaxpr(jaxpr, consts)``; where the two classes are one
    (from 0.11), ``core.Jaxpr(jaxpr, consts)``, which attaches the
    constants to a copy of ``jaxpr``."""
    return closed_jaxpr_type()(jaxpr, consts)


def equation_context(eqn: Any) -> AbstractContextManager[Any]:
    """The context ``core.eval_jaxpr`` binds ``eqn`` in: its own traceback
    and name stack (``source_info_util.user_context``) and its equation
    context (``eqn.ctx.manager``: compute type, ...; 0.7-0.12)."""
    import contextlib

    from jax._src import source_info_util

    stack = contextlib.ExitStack()
    name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
    stack.enter_context(source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack))
    manager = getattr(getattr(eqn, "ctx", None), "manager", None)
    if manager is not None:
        stack.enter_context(manager)
    return stack


def bind_equation_params(prim: Any, params: dict[str, Any], operands: Sequence[Any]) -> list[Any]:
    """Bind ``prim`` with an equation's ``params`` (as :func:`bind_equation`)."""
    get_bind_params = getattr(prim, "get_bind_params", None)
    found = get_bind_params(params) if get_bind_params is not None else params
    subfuns, bind_params = found if isinstance(found, tuple) else ((), found)
    out = prim.bind(*subfuns, *operands, **bind_params)
    return list(out) if prim.multiple_results else [out]


def trace_flat(fn: Callable[..., Any], avals: Sequence[Any], debug_info: Any) -> Any:
    """The closed jaxpr of ``fn`` (flat operands to a flat list of results)
    traced for ``avals``: ``pe.trace_to_jaxpr_dynamic`` (0.7-0.12)."""
    from jax._src import linear_util as lu
    from jax._src.interpreters import partial_eval as pe

    wrapped = lu.wrap_init(lambda *xs: list(fn(*xs)), debug_info=debug_info)
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(wrapped, list(avals))
    return make_closed_jaxpr(jaxpr, consts)


def wrapped_function(call: Callable[..., Any], like: Any) -> Any:
    """``call`` as a ``lu.WrappedFun`` with ``like``'s debug information."""
    from jax._src import linear_util as lu

    return lu.wrap_init(call, debug_info=like.debug_info)


# The public jit: traces and tracers
# ---------------------------------------------------------------------------

def at_top_level() -> bool:
    """Whether nothing is being traced in this thread (a jitted function
    called here runs rather than being staged): ``core.trace_state_clean``
    (0.7-0.12), else ``core.trace_ctx.is_top_level``."""
    from jax._src import core

    clean = getattr(core, "trace_state_clean", None)
    if clean is not None:
        return bool(clean())
    ctx = getattr(core, "trace_ctx", None)
    if ctx is not None and hasattr(ctx, "is_top_level"):
        return bool(ctx.is_top_level())
    raise missing("a test of whether a trace is in progress (core.trace_state_clean)")


def tracer_type() -> type:
    """The class of JAX's tracers: ``jax.core.Tracer`` (0.7-0.12)."""
    import jax

    found = getattr(jax.core, "Tracer", None)
    if found is None:
        from jax._src import core

        found = getattr(core, "Tracer", None)
    if found is None:
        raise missing("jax.core.Tracer")
    return found


def jaxprs_in_params(params: Any) -> list[Any]:
    """The jaxprs a jaxpr equation's parameters hold (``core.jaxprs_in_params``)."""
    from jax._src import core

    return list(core.jaxprs_in_params(params))


# The primitives JAX defines
# ---------------------------------------------------------------------------

def primitive_names() -> frozenset[str]:
    """The names of the primitives the installed JAX defines: those bound at
    module level in its modules that ``import jax`` loads."""
    import sys

    import jax  # noqa: F401  (loads its modules)

    ec = optional_module("jax.extend.core")
    primitive = getattr(ec, "Primitive", None) if ec is not None else None
    if primitive is None:
        raise missing("jax.extend.core.Primitive")
    names = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "jax" or name.startswith("jax.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, primitive):
                names.add(value.name)
    return frozenset(names)


def callback_effect_types() -> tuple[type, ...]:
    """The classes of the effects of JAX's host callbacks: ``jax.debug``'s
    (``debugging.DebugEffect``, ``OrderedDebugEffect``) and
    ``io_callback``'s (``callback.IOEffect``, ``OrderedIOEffect``), those
    this JAX has (0.7-0.12)."""
    found: list[type] = []
    for module_name, names in (("jax._src.debugging", ("DebugEffect", "OrderedDebugEffect")),
                               ("jax._src.callback", ("IOEffect", "OrderedIOEffect", "_IOEffect",
                                                      "_OrderedIOEffect"))):
        module = optional_module(module_name)
        for name in names:
            kind = getattr(module, name, None)
            if isinstance(kind, type) and kind not in found:
                found.append(kind)
    return tuple(found)


def as_debug_callback(prim: Any, params: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An equation of a primitive that calls the host by its own
    implementation (``jax.debug.print``'s ``debug_print``, which formats
    there), as the ``jax.debug.callback`` equation it lowers as: the
    primitive ``debugging.debug_callback_p`` and its parameters, whose
    ``callback`` runs ``prim``'s implementation with ``params`` on the
    operands, its effect ordered as ``params["ordered"]`` says (0.7-0.12)."""
    import functools

    debugging = optional_module("jax._src.debugging")
    callback_p = getattr(debugging, "debug_callback_p", None)
    unordered = getattr(debugging, "debug_effect", None)
    ordered = getattr(debugging, "ordered_debug_effect", None)
    impl = getattr(prim, "impl", None)
    if callback_p is None or unordered is None or ordered is None or impl is None:
        raise missing("jax._src.debugging.debug_callback_p with debug_effect and ordered_debug_effect")

    def call(*args: Any) -> Any:
        impl(*args, **params)
        return ()

    effect = ordered if params.get("ordered") else unordered
    return callback_p, {"callback": functools.update_wrapper(call, impl), "effect": effect,
                        "partitioned": bool(params.get("partitioned", False))}
