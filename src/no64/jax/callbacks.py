"""The host callbacks of a program that asked for x64, kept in its x64 program.

A host callback (``jax.debug.print``, ``jax.debug.callback``,
``jax.pure_callback``, ``io_callback``: the primitives of
:data:`no64.jax.primitives.HOST_CALLBACKS`) runs Python on the host, where
64-bit types exist.  So the x64 program keeps each callback, and only its
boundary is made 32-bit: :func:`adapted` rewrites the x64 jaxpr so that each
callback with a 64-bit operand or result passes the device's 32-bit
representation of it (:class:`Boundary`), and calls a :class:`HostCallback`
in place of the user's function, which rebuilds the x64 values on the host
(``int64``/``float64`` numpy data, placed on the CPU as the callback's
operands are), calls the user's function with ``jax_enable_x64`` on, as the
x64 program does, and gives its results back in the device's representation:

* ``WORDS`` (64-bit integer operands, and results under ``exact``): as
  their packed ``S x 2`` 32-bit words (low, high), computed inside the
  program from the 64-bit value (which the pass computes exactly wherever
  it holds it exactly) and joined on the host
  (:func:`no64.transforms.emulate.join_words`); results split on the host
  and joined inside the program: whole 64-bit values both ways;
* ``NARROW`` (integer results under the default and ``strict`` policies,
  and float64 under the float policy ``f32``): float64 operands converted
  to float32 inside the program (as the pass computes them already) and
  widened on the host; a result narrowed on the host by no64's rules for
  host values (an integer beyond 32 bits, a sentinel included, is refused
  with :class:`no64.HostRangeError` naming the callback's line, a float64
  beyond float32's range likewise), so the program takes it as a value
  proven to fit, and converts it back to the 64-bit type;
* ``PAIRS`` (float64 under ``NO64_FLOAT_POLICY=pairs``): operands as their
  ``S x 2`` float32 pairs (the value rounded to f32 and the rest), joined on
  the host; results split on the host (:func:`no64.jax.host.host_pairs`,
  checked by value at the callback's line) and added inside the program.

The 32-bit program JAX holds is replayed from the adapted x64 jaxpr
(:mod:`no64.jax.replay`), so both programs call the same
:class:`HostCallback`; the compile hook hands the backend the host
callbacks of the module it compiles (:func:`no64.jax._compat.with_host_callbacks`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import HostRangeError
from ..kinds import FloatPolicy, IntegerPolicy, RangePolicy
from ..transforms.emulate import join_words, split_words
from ..transforms.pairs import join_pairs
from . import host
from ._compat import (
    as_debug_callback,
    bind_equation_params,
    closed_jaxpr_type,
    enable_x64,
    equation_context,
    jaxpr_literal_type,
    jaxprs_in_params,
    open_jaxpr_type,
    trace_flat,
    traceback_context,
)
from .primitives import CALLS_ITS_IMPLEMENTATION, HOST_CALLBACKS

__all__ = ["Boundary", "HostCallback", "adapted", "holds_wide_callback"]

_INT64, _UINT64 = np.dtype(np.int64), np.dtype(np.uint64)
_FLOAT64, _COMPLEX128 = np.dtype(np.float64), np.dtype(np.complex128)


class Boundary(enum.Enum):
    """How a 64-bit operand or result of a host callback crosses between the
    device and the host (see the module's docstring)."""

    #: Not 64-bit: as it is.
    SAME = "same"
    #: As its 32-bit type.
    NARROW = "narrow"
    #: As its packed ``S x 2`` 32-bit words.
    WORDS = "words"
    #: As its packed ``S x 2`` float32 pairs.
    PAIRS = "pairs"


def _dtype(aval: Any) -> np.dtype[Any] | None:
    try:
        return np.dtype(getattr(aval, "dtype", None))
    except TypeError:
        return None


def boundary_of(aval: Any, policy: RangePolicy, float_policy: FloatPolicy, *, result: bool) -> Boundary:
    """How a value of abstract value ``aval`` crosses a callback's boundary
    (``result``: from the host into the program, else out of it).  A 64-bit
    integer operand leaves as its words under every policy: the program may
    hold it exactly even where it is not ``exact`` (a product by a host
    integer beyond 32 bits is computed on words where its users need it),
    and a value it computes as a 32-bit one (reported at its line) gives the
    words of that value."""
    dt = _dtype(aval)
    if dt is None or dt not in host.NARROWED:
        return Boundary.SAME
    if dt in (_INT64, _UINT64):
        return Boundary.WORDS if policy is RangePolicy.EXACT or not result else Boundary.NARROW
    if dt == _FLOAT64 and float_policy is FloatPolicy.PAIRS:
        return Boundary.PAIRS
    return Boundary.NARROW


def _boundary_aval(aval: Any, kind: Boundary) -> Any:
    dt = _dtype(aval)
    if kind is Boundary.SAME or dt is None:
        return aval
    if kind is Boundary.NARROW:
        return aval.update(dtype=host.NARROWED[dt], weak_type=False)
    part = (np.uint32 if dt == _UINT64 else np.int32) if kind is Boundary.WORDS else np.float32
    return aval.update(shape=(*aval.shape, 2), dtype=np.dtype(part), weak_type=False)


# ------------------------------------------------------ inside the program
def _stack(first: Any, second: Any) -> Any:
    from jax import lax

    n = len(first.shape)
    shape = (*first.shape, 1)
    return lax.concatenate([lax.broadcast_in_dim(first, shape, tuple(range(n))),
                            lax.broadcast_in_dim(second, shape, tuple(range(n)))], n)


def _part(x: Any, i: int) -> Any:
    from jax import lax

    return lax.index_in_dim(x, i, axis=len(x.shape) - 1, keepdims=False)


def _to_boundary(x: Any, kind: Boundary, aval: Any) -> Any:
    """Operand ``x`` of the x64 program in its boundary representation
    (traced with x64 on)."""
    from jax import lax

    dt = _dtype(aval)
    if kind is Boundary.SAME or dt is None:
        return x
    if kind is Boundary.NARROW:
        return lax.convert_element_type(x, host.NARROWED[dt])
    if kind is Boundary.WORDS:
        unsigned = dt == _UINT64
        low = lax.convert_element_type(lax.bitwise_and(x, lax.full_like(x, 0xFFFFFFFF)), np.uint32)
        shift = lax.shift_right_logical if unsigned else lax.shift_right_arithmetic
        high = lax.convert_element_type(shift(x, lax.full_like(x, 32)), np.uint32 if unsigned else np.int32)
        if not unsigned:
            low = lax.bitcast_convert_type(low, np.int32)
        return _stack(low, high)
    high = lax.convert_element_type(x, np.float32)
    rest = lax.convert_element_type(lax.sub(x, lax.convert_element_type(high, np.float64)), np.float32)
    rest = lax.select(lax.is_finite(high), rest, lax.full_like(rest, 0))
    return _stack(high, rest)


def _from_boundary(r: Any, kind: Boundary, aval: Any) -> Any:
    """Result ``r`` of a callback, in its boundary representation, as the x64
    program's value of abstract value ``aval`` (traced with x64 on)."""
    from jax import lax

    dt = _dtype(aval)
    if kind is Boundary.SAME or dt is None:
        return r
    if kind is Boundary.NARROW:
        return lax.convert_element_type(r, dt)
    if kind is Boundary.WORDS:
        low, high = _part(r, 0), _part(r, 1)
        if dt == _INT64:
            low = lax.bitcast_convert_type(low, np.uint32)
        high = lax.convert_element_type(high, dt)
        shifted = lax.shift_left(high, lax.full_like(high, 32))
        return lax.bitwise_or(shifted, lax.convert_element_type(low, dt))
    high = lax.convert_element_type(_part(r, 0), np.float64)
    rest = lax.convert_element_type(_part(r, 1), np.float64)
    return lax.select(lax.eq(rest, lax.full_like(rest, 0)), high, lax.add(high, rest))


# ------------------------------------------------------------- on the host
class HostCallback:
    """The function a kept callback of the x64 program calls on the host in
    place of ``callback`` (the callback primitive's own): its operands
    arrive in their boundary representations and its results leave in
    theirs (see the module's docstring)."""

    def __init__(self, callback: Any, primitive: str, ins: Sequence[tuple[Boundary, Any]],
                 outs: Sequence[tuple[Boundary, Any]] | None, traceback: Any) -> None:
        self.callback = callback
        self.primitive = primitive
        self.ins = list(ins)
        self.outs = None if outs is None else list(outs)
        self.traceback = traceback

    def __call__(self, *args: Any) -> Any:
        import jax

        values = [_from_host(np.asarray(a), kind, aval) for a, (kind, aval) in zip(args, self.ins, strict=True)]
        with enable_x64(True):
            cpu = jax.devices("cpu")[0]
            placed = jax.device_put(values, cpu)
            out = self.callback(*placed)
        if self.outs is None:
            return out
        leaves = list(out)
        if len(leaves) != len(self.outs):
            raise RuntimeError(f"Mismatched number of outputs from callback. Expected: {len(self.outs)}, "
                               f"Actual: {len(leaves)}")
        return tuple(self._to_host(np.asarray(a), i) for i, a in enumerate(leaves))

    def _to_host(self, a: np.ndarray, i: int) -> np.ndarray:
        """Result ``i`` of the user's function as the x64 program takes it
        (JAX's checks of its shape and dtype), in its boundary representation."""
        assert self.outs is not None
        kind, aval = self.outs[i]
        want = _dtype(aval)
        if a.shape != tuple(aval.shape):
            raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: {tuple(aval.shape)}, "
                               f"Actual: {a.shape}")
        if want is not None and a.dtype != want:
            if want in host.NARROWED and a.dtype == host.NARROWED[want]:
                a = a.astype(want)  # computed with x64 off inside the callback: its x64 type
            else:
                raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: {want}, "
                                   f"Actual: {a.dtype}")
        if kind is Boundary.SAME:
            return a
        if kind is Boundary.WORDS:
            return split_words(a)
        what = f"result #{i} of {self.primitive}"
        policy = host.host_policy() or IntegerPolicy.ERROR
        with traceback_context(self.traceback):
            if kind is Boundary.PAIRS:
                return host.host_pairs(a, policy, what)
            if a.dtype.kind in "iu" and policy == IntegerPolicy.ERROR:
                self._refuse_beyond(a, i)
            return host.narrow_host_array(a, policy, op=self.primitive, what=what)

    def _refuse_beyond(self, a: np.ndarray, i: int) -> None:
        """Refuse integer result ``i`` where it holds a value beyond its
        32-bit type: a sentinel too (``INT64_MIN``), which the program would
        read as the 32-bit extreme it maps to, computing another number than
        the x64 program with it."""
        info = np.iinfo(host.NARROWED[a.dtype])
        bad = (a < info.min) | (a > info.max)
        if not bad.any():
            return
        first = int(np.argmax(bad.reshape(-1)))
        index = tuple(int(j) for j in np.unravel_index(first, a.shape)) if a.shape else ()
        value = int(a.reshape(-1)[first])
        source = host.user_source()
        at = f" at index {index}" if index else ""
        raise HostRangeError(
            f"no64: result #{i} of the {self.primitive} at {source.source or source.raw} is {value}{at}, "
            f"outside {info.dtype}'s range, in which the program takes it; no64 never wraps "
            "(NO64_POLICY=exact takes a 64-bit result back whole, as 32-bit words)",
            value=value, dtype=str(a.dtype), index=index, source=source)


def _from_host(a: np.ndarray, kind: Boundary, aval: Any) -> np.ndarray:
    """An operand the host received in its boundary representation, as the
    x64 program's value."""
    want = _dtype(aval)
    if kind is Boundary.SAME or want is None:
        return a
    if kind is Boundary.NARROW:
        return a.astype(want)
    if kind is Boundary.WORDS:
        return join_words(a)
    return join_pairs(a)


# --------------------------------------------------------- the x64 program
def _wide_callback(eqn: Any) -> bool:
    key = HOST_CALLBACKS.get(eqn.primitive.name, "")
    if key == "":
        return False
    avals = [v.aval for v in eqn.invars]
    if key is not None:
        avals += list(eqn.params.get(key, ()))
    return any(_dtype(a) in host.NARROWED for a in avals)


def holds_wide_callback(jaxpr: Any, seen: set[int] | None = None) -> bool:
    """Whether ``jaxpr`` (its sub-jaxprs included) calls a host callback
    with a 64-bit operand or result."""
    seen = set() if seen is None else seen
    j = getattr(jaxpr, "jaxpr", jaxpr)
    if id(j) in seen:
        return False
    seen.add(id(j))
    for eqn in j.eqns:
        if _wide_callback(eqn):
            return True
        if any(holds_wide_callback(sub, seen) for sub in jaxprs_in_params(eqn.params)):
            return True
    return False


def adapted(closed: Any, policy: RangePolicy, float_policy: FloatPolicy) -> Any:
    """The closed x64 jaxpr ``closed`` with the boundary of each host
    callback made 32-bit (see the module's docstring); ``closed`` itself
    where no callback has a 64-bit operand or result."""
    if not holds_wide_callback(closed):
        return closed
    adapt = _Adapt(policy, float_policy)
    with enable_x64(True):
        return adapt.closed(closed)


class _Adapt:
    def __init__(self, policy: RangePolicy, float_policy: FloatPolicy) -> None:
        self.policy, self.float_policy = policy, float_policy

    def closed(self, closed: Any) -> Any:
        if not holds_wide_callback(closed):
            return closed
        jaxpr = closed.jaxpr
        return trace_flat(lambda *xs: self.evaluate(jaxpr, closed.consts, xs),
                          [v.aval for v in jaxpr.invars], jaxpr.debug_info)

    def open(self, jaxpr: Any) -> Any:
        if not holds_wide_callback(jaxpr) or jaxpr.constvars:
            return jaxpr
        closed = trace_flat(lambda *xs: self.evaluate(jaxpr, (), xs), [v.aval for v in jaxpr.invars],
                            jaxpr.debug_info)
        return jaxpr if closed.consts else closed.jaxpr

    def param(self, value: Any) -> Any:
        if isinstance(value, closed_jaxpr_type()):
            return self.closed(value)
        if isinstance(value, open_jaxpr_type()):
            return self.open(value)
        if isinstance(value, tuple) and type(value) is tuple:
            return tuple(self.param(v) for v in value)
        if isinstance(value, list):
            return [self.param(v) for v in value]
        return value

    def evaluate(self, jaxpr: Any, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        literal: Any = jaxpr_literal_type()
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args, strict=True))

        def read(v: Any) -> Any:
            return v.val if isinstance(v, literal) else env[v]

        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            with equation_context(eqn):
                if _wide_callback(eqn):
                    outs = self.callback(eqn, ins)
                else:
                    params = {k: self.param(v) for k, v in eqn.params.items()}
                    outs = bind_equation_params(eqn.primitive, params, ins)
            for v, o in zip(eqn.outvars, outs, strict=True):
                env[v] = o
        return [read(v) for v in jaxpr.outvars]

    def callback(self, eqn: Any, ins: list[Any]) -> list[Any]:
        prim, name = eqn.primitive, eqn.primitive.name
        key = HOST_CALLBACKS[name]
        kinds = [(boundary_of(v.aval, self.policy, self.float_policy, result=False), v.aval)
                 for v in eqn.invars]
        params = dict(eqn.params)
        if name in CALLS_ITS_IMPLEMENTATION:
            prim, params = as_debug_callback(prim, params)
        outs: list[tuple[Boundary, Any]] | None = None
        if key is not None:
            given = params[key]
            outs = [(boundary_of(a, self.policy, self.float_policy, result=True), a) for a in given]
            params[key] = type(given)(_boundary_aval(a, k) for k, a in outs)
        params["callback"] = HostCallback(params["callback"], f"jax {name}", kinds, outs,
                                          getattr(eqn.source_info, "traceback", None))
        xs = [_to_boundary(x, k, a) for x, (k, a) in zip(ins, kinds)]
        results = bind_equation_params(prim, params, xs)
        if outs is None:
            return results
        return [_from_boundary(r, k, a) for r, (k, a) in zip(results, outs, strict=True)]
