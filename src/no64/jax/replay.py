"""JAX's 32-bit program of a ``jit`` made from its x64 trace, without running the user's Python again.

A program that asked for x64 is traced once, with x64 on (its x64 program,
which :mod:`no64.jax.intent` judges and the hook compiles); JAX's own trace
with x64 off -- whose abstract values are the 32-bit signature the arrays
the user holds have -- is then given :func:`replay_function` in place of the
user's function: an interpreter of the x64 jaxpr that binds each equation
again with x64 off, every 64-bit dtype in its parameters (a conversion's
``new_dtype``, an ``iota``'s ``dtype``, a ``dot``'s preferred element type,
a callback's result types) replaced by its 32-bit image and every
sub-program (a nested ``jit``, a loop's body, a branch, a custom derivative's
primal) replayed the same way.  Equations are bound inside their own source
information, so JAX's locations, and the user's line that no64's host
narrowing names, are those of the x64 trace: its 64-bit host constants and
literals (``np.int64`` closures, Python ints) are narrowed by no64's rules
where the user's code used them, as a trace with x64 off would narrow them,
and the host sentinels among them are followed from there
(:mod:`no64.jax.host.sentinels`).

What the replay cannot rebuild -- an equation whose shape depends on the
width (``bitcast_convert_type`` between 64- and 32-bit types), a
sub-program that takes constants where JAX accepts none -- raises
:class:`CannotReplay` (or JAX's own error), and the caller traces the
user's function with x64 off instead, as before.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import host
from ._compat import (
    bind_equation_params,
    canonicalize_host_value,
    closed_jaxpr_type,
    equation_context,
    jaxpr_literal_type,
    jit_dynamic_arguments,
    make_closed_jaxpr,
    open_jaxpr_type,
    shaped_array_type,
    trace_flat,
    traceback_context,
    wrapped_function,
)
from .primitives import WIDTH_PARAMETERS

__all__ = ["CannotReplay", "image_aval", "replay_function", "retype_closed", "widened_params"]


class CannotReplay(Exception):
    """The x64 program holds something its 32-bit replay cannot rebuild."""


def _image_dtype(d: Any) -> Any:
    try:
        dt = np.dtype(d)
    except TypeError:
        return d
    return host.NARROWED.get(dt, d)


def image_aval(aval: Any) -> Any:
    """``aval`` with its dtype's 32-bit image (an abstract value without a
    plain numpy dtype, a typed PRNG key, as it is)."""
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return aval
    image = _image_dtype(dtype)
    if image is dtype or image == dtype:
        return aval
    return aval.update(dtype=image)


def _param(value: Any) -> Any:
    """A parameter of an equation of the x64 program, for its 32-bit replay."""
    if isinstance(value, closed_jaxpr_type()):
        return retype_closed(value)
    if isinstance(value, open_jaxpr_type()):
        return _retype_open(value)
    if isinstance(value, np.dtype):
        return _image_dtype(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        image = _image_dtype(value)
        return image.type if isinstance(image, np.dtype) else image
    if isinstance(value, shaped_array_type()):
        return image_aval(value)
    if type(value).__name__ == "ShapeDtypeStruct":
        image = _image_dtype(value.dtype)
        if image is value.dtype or image == value.dtype:
            return value
        return type(value)(value.shape, image, sharding=getattr(value, "sharding", None),
                           weak_type=bool(getattr(value, "weak_type", False)))
    if isinstance(value, tuple) and type(value) is tuple:
        return tuple(_param(v) for v in value)
    if isinstance(value, list):
        return [_param(v) for v in value]
    return value


#: parameters holding a function that traces a derivative rule of the x64
#: program on demand: its jaxpr is replayed the same way when it is traced
_RULE_THUNKS = ("jvp_jaxpr_fun", "fwd_jaxpr_thunk")


def _params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    out = {k: _param(v) for k, v in params.items()}
    for key in WIDTH_PARAMETERS.get(name, ()):
        if out.get(key) == 64:
            out[key] = 32
    for key in _RULE_THUNKS:
        thunk = params.get(key)
        if thunk is not None:
            out[key] = _retyped_rule(thunk)
    return out


def _retyped_rule(thunk: Any) -> Any:
    """A derivative rule's jaxpr-making thunk whose jaxpr (traced from the
    x64 program's abstract values, so with x64 on) is replayed in 32 bits."""
    from ._compat import enable_x64

    def call(*args: Any) -> Any:
        with enable_x64(True):
            made = thunk.call_wrapped(*args)
        jaxpr, consts, *rest = made
        closed = retype_closed(make_closed_jaxpr(jaxpr, list(consts)))
        return (closed.jaxpr, list(closed.consts), *rest)

    return wrapped_function(call, thunk)


def retype_closed(closed: Any) -> Any:
    """A closed jaxpr of the x64 program replayed in 32 bits (a closed jaxpr)."""
    avals = [image_aval(v.aval) for v in closed.jaxpr.invars]
    return trace_flat(lambda *xs: _evaluate_closed(closed, xs), avals, closed.jaxpr.debug_info)


def _evaluate_closed(closed: Any, args: Sequence[Any]) -> list[Any]:
    """:func:`evaluate` of a closed jaxpr; the constants of a library's own
    function (a ``jnp`` function's ``jit``) narrowed as its own
    (:func:`no64.jax.host.library_constants`): a trace with x64 off would
    have made them 32-bit there."""
    info = getattr(closed.jaxpr.debug_info, "func_src_info", None)
    if getattr(_local, "library", False) or not host.library_function(info):
        return evaluate(closed.jaxpr, closed.consts, args)
    _local.library = True
    try:
        with host.library_constants():
            return evaluate(closed.jaxpr, closed.consts, args)
    finally:
        _local.library = False


def _retype_open(jaxpr: Any) -> Any:
    if jaxpr.constvars:
        raise CannotReplay("an open sub-program with constants")
    avals = [image_aval(v.aval) for v in jaxpr.invars]
    closed = trace_flat(lambda *xs: evaluate(jaxpr, (), xs), avals, jaxpr.debug_info)
    if closed.consts:
        raise CannotReplay("an open sub-program whose replay takes constants")
    return closed.jaxpr


def widened_params(params: dict[str, Any], wide: dict[str, Any]) -> dict[str, Any] | None:
    """An eager primitive's parameters as the x64 program binds it where its
    operands of a kind are 64-bit (``wide``: dtype kind -> that 64-bit
    dtype): JAX made each sub-program parameter (a scatter's
    ``update_jaxpr``, a reduction's body) from the operands' 32-bit dtypes
    before the primitive ran, and the x64 program's is made from the 64-bit
    ones; each input of such a sub-program of a 32-bit image of a kind in
    ``wide`` is retraced as that kind's 64-bit dtype, with x64 on (a body
    for ``f32`` operands bound to ``f64`` ones is a module XLA's verifier
    rejects).  ``None`` where no parameter changes."""
    out = {k: _widened(v, wide) for k, v in params.items()}
    return out if any(out[k] is not v for k, v in params.items()) else None


def _widened(value: Any, wide: dict[str, Any]) -> Any:
    if isinstance(value, closed_jaxpr_type()):
        return _widened_closed(value, wide)
    if isinstance(value, open_jaxpr_type()) and not getattr(value, "constvars", ()):
        closed = _widened_closed(make_closed_jaxpr(value, []), wide)
        return value if closed.consts else getattr(closed, "jaxpr", closed)
    return value


def _widened_closed(closed: Any, wide: dict[str, Any]) -> Any:
    from ._compat import enable_x64, eval_jaxpr

    def widened(aval: Any) -> Any:
        dtype = getattr(aval, "dtype", None)
        try:
            dt = np.dtype(dtype)
        except TypeError:
            return aval
        return aval.update(dtype=wide[dt.kind]) if dt in host.NARROWED_IMAGES and dt.kind in wide else aval

    jaxpr = getattr(closed, "jaxpr", closed)
    avals = [widened(v.aval) for v in jaxpr.invars]
    if all(a is v.aval for a, v in zip(avals, jaxpr.invars)):
        return closed
    with enable_x64(True):
        return trace_flat(lambda *xs: eval_jaxpr(jaxpr, closed.consts, *xs), avals, jaxpr.debug_info)


def _host_value(val: Any, aval: Any) -> Any:
    """A literal or constant of the x64 trace as the host value the user's
    code gave there: a Python scalar where it is weakly typed (so a Python int
    beyond int32 is refused as JAX with x64 off refuses it), a numpy array or
    scalar otherwise (narrowed by no64's rules when it is bound)."""
    if isinstance(val, np.ndarray) or isinstance(val, np.generic) or type(val).__name__.startswith("Typed"):
        a = np.asarray(val)
        if a.ndim == 0 and getattr(aval, "weak_type", False):
            kind = a.dtype.kind
            if kind == "b":
                return bool(a)
            if kind in "iu":
                return int(a)
            if kind == "f":
                return float(a)
            if kind == "c":
                return complex(a)
        return a[()] if a.ndim == 0 else a
    return val


_local = threading.local()


def _taken_in(c: Any, aval: Any) -> Any:
    """A constant of the x64 program, taken into the 32-bit trace where the
    user's code used it (narrowed there by no64's rules, once)."""
    value = _host_value(c, aval)
    sources = getattr(_local, "sources", None)
    found = sources.get(id(c)) if sources else None
    if found is None or found[0] is not c or found[1] is None:
        return value
    if isinstance(value, (bool, int, float, complex)):
        return value  # a weakly typed Python scalar: narrowed where it is bound
    with traceback_context(found[1]):
        return canonicalize_host_value(value)


def evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """The outputs of the x64 program's open ``jaxpr`` with each equation
    bound again, under the x64 setting in force, for the 32-bit values
    ``args`` (see the module's docstring)."""
    literal: Any = jaxpr_literal_type()
    env: dict[Any, Any] = {}
    hosted: dict[Any, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        hosted[v] = c
    for v, a in zip(jaxpr.invars, args, strict=True):
        env[v] = a

    def read(v: Any) -> Any:
        if isinstance(v, literal):
            return _taken_in(v.val, v.aval)
        if v not in env:
            env[v] = _taken_in(hosted[v], v.aval)
        return env[v]

    for eqn in jaxpr.eqns:
        params = _params(eqn.primitive.name, eqn.params)
        with equation_context(eqn):
            outs = bind_equation_params(eqn.primitive, params, [read(v) for v in eqn.invars])
        for v, o in zip(eqn.outvars, outs, strict=True):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def replay_function(fun: Callable[..., Any], closed: Any, out_tree: Any, ji: Any,
                    sources: dict[int, tuple[Any, Any]] | None = None) -> Callable[..., Any]:
    """A function JAX's ``jit`` traces in place of ``fun``: it takes the
    call's arguments (static ones included), evaluates the x64 program
    ``closed`` on their dynamic leaves in 32 bits and returns its outputs
    in ``fun``'s output structure ``out_tree``.  ``sources`` holds the
    tracebacks of the x64 trace's host constants
    (:func:`no64.jax._compat.traced_constant_sources`): each is narrowed at
    the user's line that used it."""
    from jax import tree_util

    @functools.wraps(fun)
    def replay(*args: Any, **kwargs: Any) -> Any:
        leaves = jit_dynamic_arguments(ji, args, kwargs)
        saved = getattr(_local, "sources", None)
        _local.sources = sources
        try:
            outs = _evaluate_closed(closed, leaves)
        finally:
            _local.sources = saved
        return tree_util.tree_unflatten(out_tree, outs)

    return replay
