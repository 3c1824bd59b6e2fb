"""Host values and dtypes: canonicalisation handlers, canonical host values, explicitly requested
dtypes, traced host constants, abstract values and dtype warnings, ``jax.numpy``'s modules."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .base import missing, optional_module
from .config import convert_weakly_typed
from .patching import note_permanent, replace_attribute, replace_item

# ---------------------------------------------------------------------------
# Host-value canonicalisation
# ---------------------------------------------------------------------------

def register_canonicalize_handler(type_: type, handler: Callable[[Any], Any]) -> None:
    """Make ``handler`` JAX's canonicalisation of host values of ``type_``."""
    from jax._src import dtypes

    register = getattr(dtypes, "register_canonicalize_value_handler", None)
    if register is not None:  # jaxlib's registry: no removal, and its entries cannot be read back
        register(type_, handler)
        note_permanent(f"jax._src.dtypes.canonicalize_value_handlers[{type_.__name__}]", handler)
        return
    handlers = getattr(dtypes, "canonicalize_value_handlers", None)
    if handlers is None:
        xla = optional_module("jax._src.interpreters.xla")
        handlers = getattr(xla, "canonicalize_dtype_handlers", None)
    if not isinstance(handlers, dict):
        raise missing(
            "host-value canonicalisation registry (dtypes.register_canonicalize_value_handler, "
            "dtypes.canonicalize_value_handlers or xla.canonicalize_dtype_handlers)"
        )
    replace_item(handlers, type_, handler, where="jax._src.dtypes.canonicalize_value_handlers")


def _typed_ndarray_factory() -> Callable[[np.ndarray], Any]:
    literals = optional_module("jax._src.literals")
    cls = getattr(literals, "TypedNdArray", None)
    if cls is None:
        return lambda a: a  # JAX canonicalises to plain numpy arrays
    params = inspect.signature(cls).parameters
    if "weak_type" in params:
        return lambda a: cls(a, weak_type=False)
    return cls


def _typed_scalar_factory(kind: str) -> Callable[[Any, np.dtype], Any]:
    literals = optional_module("jax._src.literals")
    cls = getattr(literals, kind, None)
    if cls is None:
        return lambda x, dtype: np.asarray(x, dtype)
    return cls


_factories: dict[str, Any] = {}
_factories_lock = threading.Lock()


def _factory(kind: str) -> Any:
    f = _factories.get(kind)
    if f is None:
        with _factories_lock:
            f = _typed_ndarray_factory() if kind == "TypedNdArray" else _typed_scalar_factory(kind)
            _factories[kind] = f
    return f


def typed_ndarray(a: np.ndarray) -> Any:
    """A numpy array in the form JAX's canonicalisation hands out (not weakly typed)."""
    return _factory("TypedNdArray")(a)


def typed_scalar(kind: str, x: Any, dtype: np.dtype) -> Any:
    """A Python scalar in canonical form: ``kind`` is ``"TypedInt"`` or
    ``"TypedFloat"`` (weakly typed where JAX has those classes)."""
    return _factory(kind)(x, dtype)



# ---------------------------------------------------------------------------
# Explicitly requested dtypes
# ---------------------------------------------------------------------------

def watch_explicit_dtypes(note: Callable[[Any, Any, Any], None]) -> Callable[[], None]:
    """Call ``note(requested, became, fun_name)`` each time JAX handles an
    explicitly requested dtype (``jnp.arange(..., dtype=jnp.int64)``);
    returns the function that takes the watch off.

    ``jax._src.dtypes._maybe_canonicalize_explicit_dtype`` (0.8-0.12) returns
    the dtype it became; on 0.7 ``check_user_dtype_supported`` only warns,
    and the dtype becomes ``canonicalize_dtype`` of it.
    """
    from jax._src import dtypes

    name = "_maybe_canonicalize_explicit_dtype"
    original = getattr(dtypes, name, None)
    if original is not None:
        canonical = original

        def canonicalize_explicit(dtype: Any, fun_name: Any) -> Any:
            out = canonical(dtype, fun_name)
            note(dtype, out, fun_name)
            return out

        wrapper: Callable[..., Any] = canonicalize_explicit
    else:
        name = "check_user_dtype_supported"
        original = getattr(dtypes, name, None)
        if original is None:
            raise missing("hook for explicitly requested dtypes (dtypes._maybe_canonicalize_explicit_dtype "
                           "or dtypes.check_user_dtype_supported)")

        def check_user_dtype(dtype: Any, fun_name: Any = None) -> Any:
            out = original(dtype, fun_name)
            if dtype is None or dtype in (bool, int, float, complex):
                return out  # no explicit dtype (np.dtype(None) would say float64)
            try:
                requested = np.dtype(dtype)
            except TypeError:
                return out
            note(requested, dtypes.canonicalize_dtype(requested), fun_name)
            return out

        wrapper = check_user_dtype
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    replace_attribute(dtypes, name, wrapper)

    def undo() -> None:
        if getattr(dtypes, name, None) is wrapper:
            replace_attribute(dtypes, name, original)

    return undo


# ---------------------------------------------------------------------------
# Host constants taken in by a trace
# ---------------------------------------------------------------------------

_CONSTANT_TYPES = (int, float, bool, complex, np.generic, np.ndarray)


def canonicalize_traced_constants(active: Callable[[], bool]) -> None:
    """Have a host constant (a numpy array or scalar, a Python number) that a
    trace takes in canonicalised then, while the user's line is on the stack,
    whenever ``active()`` says so.

    From 0.8 JAX does this itself (``DynamicJaxprTrace._new_const`` calls
    ``dtypes.canonicalize_value``), and this does nothing.  0.7 keeps the
    constant as given in the jaxpr, a literal or a constant argument, and
    canonicalises it (``xla.canonicalize_dtype``) only when the program is
    lowered or called; there ``_new_const`` is wrapped to canonicalise it
    first (the constant stays keyed by the given object, as JAX keys it).
    """
    from jax._src import dtypes

    if callable(getattr(dtypes, "canonicalize_value", None)):
        return
    def canonicalizing(original: Any, canonicalize: Any) -> Callable[..., Any]:
        def _new_const(self: Any, aval: Any, c: Any, source_info: Any) -> Any:
            if isinstance(c, _CONSTANT_TYPES) and active():
                canonical = canonicalize(c)
                if canonical is not c:
                    tracer = original(self, aval, canonical, source_info)
                    ids = self.frame.constid_to_tracer
                    if ids.get(id(canonical)) is tracer:
                        del ids[id(canonical)]
                        ids[id(c)] = tracer
                    return tracer
            return original(self, aval, c, source_info)

        return _new_const

    _wrap_new_const("__no64__", getattr(optional_module("jax._src.interpreters.xla"), "canonicalize_dtype", None),
                    "canonicalisation of traced host constants (dtypes.canonicalize_value, or "
                    "DynamicJaxprTrace._new_const and xla.canonicalize_dtype)", canonicalizing)



def _new_const_of_traces() -> tuple[Any, Any]:
    """JAX's ``DynamicJaxprTrace`` and its ``_new_const`` (how a trace takes
    in a constant, 0.7-0.12), each ``None`` where missing."""
    pe = optional_module("jax._src.interpreters.partial_eval")
    trace = getattr(pe, "DynamicJaxprTrace", None)
    return trace, getattr(trace, "_new_const", None)


def _wrap_new_const(flag: str, needs: Any, what: str, make: Callable[[Any, Any], Callable[..., Any]]) -> None:
    """``make(original, needs)`` in place of ``DynamicJaxprTrace._new_const``
    (``original``), marked ``flag``, unless a wrapper so marked is in place;
    ``needs``: what the wrapper calls besides.  :func:`missing` ``what``
    where either is missing."""
    trace, original = _new_const_of_traces()
    if original is None or needs is None:
        raise missing(what)
    if not getattr(original, flag, False):
        _put_new_const(trace, original, make(original, needs), flag)


def _put_new_const(trace: Any, original: Any, new: Callable[..., Any], flag: str) -> None:
    """``new`` in place of ``trace._new_const`` (``original``), flagged as no64's."""
    new.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(new, flag, True)
    replace_attribute(trace, "_new_const", new)


def widen_traced_constants(widened: Callable[[Any], Any]) -> None:
    """Have each array constant a trace takes in (``DynamicJaxprTrace._new_const``,
    0.7-0.12: a ``jax.Array`` closed over by the traced function) enter it
    converted to the dtype ``widened(constant)`` names, where it names one
    (``None``: as it is): the constant stays what the trace holds, and a
    conversion bound in that trace (``core.set_current_trace``, 0.7-0.12) is
    what its uses take, kept for its later uses in the trace in the frame's
    ``constid_to_tracer`` (0.7-0.12)."""
    from jax._src import core

    def widening(original: Any, in_trace: Any) -> Callable[..., Any]:
        def _new_const(self: Any, aval: Any, c: Any, source_info: Any) -> Any:
            tracer = original(self, aval, c, source_info)
            dtype = None if isinstance(c, _CONSTANT_TYPES) else widened(c)
            if dtype is None or np.dtype(getattr(tracer.aval, "dtype", dtype)) == np.dtype(dtype):
                return tracer
            with in_trace(self):
                wide = convert_weakly_typed(tracer, dtype, bool(getattr(tracer.aval, "weak_type", False)))
            ids = getattr(getattr(self, "frame", None), "constid_to_tracer", None)
            if ids is not None and ids.get(id(c)) is tracer:
                ids[id(c)] = wide
            return wide

        return _new_const

    _wrap_new_const("__no64_widened__", getattr(core, "set_current_trace", None),
                    "the array constants a trace takes in (DynamicJaxprTrace._new_const, "
                    "core.set_current_trace)", widening)


_constants_seen = threading.local()


@contextmanager
def traced_constant_sources() -> Iterator[dict[int, tuple[Any, Any]]]:
    """Within the block, each host constant a trace in this thread takes in
    (``DynamicJaxprTrace._new_const``, 0.7-0.12) is noted in the dict
    yielded: ``id(constant) -> (constant, the traceback of the user's code
    that used it)``."""
    trace, original = _new_const_of_traces()
    if original is None:
        raise missing("the constants a trace takes in (DynamicJaxprTrace._new_const)")
    if not getattr(original, "__no64_sources__", False):
        def _new_const(self: Any, aval: Any, c: Any, source_info: Any) -> Any:
            seen = getattr(_constants_seen, "found", None)
            if seen is not None and id(c) not in seen:
                seen[id(c)] = (c, getattr(source_info, "traceback", None))
            return original(self, aval, c, source_info)

        _put_new_const(trace, original, _new_const, "__no64_sources__")
    saved = getattr(_constants_seen, "found", None)
    found: dict[int, tuple[Any, Any]] = {}
    _constants_seen.found = found
    try:
        yield found
    finally:
        _constants_seen.found = saved


def canonicalize_host_value(x: Any) -> Any:
    """A host value as JAX takes it into a trace under the x64 setting in
    force: ``dtypes.canonicalize_value`` (0.8-0.12), ``xla.canonicalize_dtype`` on 0.7."""
    from jax._src import dtypes

    fn = getattr(dtypes, "canonicalize_value", None)
    if fn is None:
        fn = getattr(optional_module("jax._src.interpreters.xla"), "canonicalize_dtype", None)
    if fn is None:
        raise missing("canonicalisation of host values (dtypes.canonicalize_value)")
    return fn(x)


#: The modules of ``jax._src.numpy`` that bind ``jax.numpy``'s functions.
_NUMPY_MODULES = ("array_constructors", "array_creation", "lax_numpy", "index_tricks", "scalar_types")


def numpy_modules(*names: str) -> tuple[Any, ...]:
    """The ``jax._src.numpy`` modules ``names`` (of :data:`_NUMPY_MODULES`),
    where ``jax.numpy``'s functions are defined or bound by import: a wrapper
    of one of them replaces it in each that holds it."""
    found = []
    for name in names:
        if name not in _NUMPY_MODULES:
            raise ValueError(f"no64 names no jax.numpy module {name!r}")
        module = optional_module(f"jax._src.numpy.{name}")
        if module is None:
            raise missing(f"jax._src.numpy.{name}")
        found.append(module)
    return tuple(found)


def aval_mapping(type_: type) -> Callable[[Any], Any]:
    """JAX's abstract value of a host value of ``type_``
    (``core.pytype_aval_mappings[type_]``)."""
    from jax._src import core

    return core.pytype_aval_mappings[type_]


def set_aval_mapping(type_: type, mapping: Callable[[Any], Any]) -> None:
    """Make ``mapping`` JAX's abstract value of host values of ``type_``."""
    from jax._src import core

    replace_item(core.pytype_aval_mappings, type_, mapping, where="jax._src.core.pytype_aval_mappings")


def wrap_dtype_warnings(make: Callable[[Any], Any]) -> None:
    """Give ``jax._src.dtypes`` ``make(warnings)`` in place of the ``warnings``
    module it warns through (once: where it still holds ``warnings`` itself)."""
    import warnings

    from jax._src import dtypes

    if getattr(dtypes, "warnings", None) is warnings:
        replace_attribute(dtypes, "warnings", make(warnings))
