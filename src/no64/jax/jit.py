"""Scoped use: :func:`jit` and :func:`lower`, 32-bit whatever ``jax_enable_x64`` says.

``no64.jit(fun, **jit_kwargs)`` is shaped like :func:`jax.jit`.  Each call

1. converts 64-bit inputs on the host (numpy arrays and scalars, Python
   numbers, 64-bit ``jax.Array`` arguments) to their 32-bit types by the
   pass's rules: sentinels (``INT64_MAX``, ``INT64_MIN``, ``UINT64_MAX``,
   float64's largest finite value and its negation) map to the 32-bit
   extremes; any other value the 32-bit type cannot hold is refused with
   :class:`ArgumentRangeError`, naming the argument's pytree path, the first
   offending index and the caller's line: integers outside the int32/uint32
   range (never wrapped; ``integer_policy`` ``"saturate"``/``"wrap"``
   narrows them instead) and finite floats beyond float32's largest finite
   value (``inf`` and ``nan`` pass); complex numbers are checked part by
   part;
2. traces, lowers and runs ``fun`` with ``jax_enable_x64`` off (a thread-local
   scope, so the rest of the process keeps its setting), and compiles every
   module of the call through :func:`no64.demote` and :func:`no64.check` on
   whatever platform it runs (leftover 64-bit values from random number
   generation, explicit dtypes or library code are removed or refused);
3. with ``restore_dtypes=True``, returns outputs in the dtypes the function
   returns with x64 on for the caller's arguments.

Every call asks for the x64 meaning: under the default policy the function
is also traced with x64 on for the caller's argument dtypes, and an integer
that x64 program computes in 64 bits and that is not proven to fit is
reported at its line (:class:`no64.UnprovenIntegerWarning`; refused under
``policy="strict"``; see :mod:`no64.jax.intent`).

``no64.lower(fun, *args, **kwargs)`` lowers the same way and returns a
:class:`Lowered` holding the 64-bit-free module and its demotion report, for
offline compilers.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Iterator, NamedTuple

import jax
import numpy as np

from .. import io as no64_io
from ..errors import ArgumentRangeError, No64Error, PairRangeWarning, TracedArgumentError
from ..ir._mlir import ir
from ..ir.types import (
    F32_MAX as _F32_MAX,
    F64_MAX as _F64_MAX,
    I32 as _I32,
    I64 as _I64,
    NARROWED_DTYPES as NARROWED,
    U32 as _U32,
    U64 as _U64,
)
from ..kinds import FloatPolicy, IntegerPolicy, Mode, Outputs, RangePolicy
from ..options import Options
from ..report import DemotionReport
from ..targets import Arithmetic, Target
from ..transforms.boundary import native_boundary
from ..transforms.demote import demote
from ..transforms.emulate import join_words, split_words
from ..transforms.pairs import join_pairs, split_pairs
from ..transforms.scan import check
from . import hook as jaxhook, host, intent
from ._compat import enable_x64

__all__ = [
    "ArgumentRangeError",
    "Jitted",
    "Lowered",
    "TracedArgumentError",
    "jit",
    "lower",
    "narrow_argument",
]

#: 64-bit dtype -> the 32-bit dtype no64 gives it.
_WIDENED = {v: k for k, v in NARROWED.items()}


# ---------------------------------------------------------------------------
# Host-side narrowing of inputs
# ---------------------------------------------------------------------------


def _first_bad(bad: np.ndarray) -> tuple[int, ...] | None:
    if not bad.any():
        return None
    flat = int(np.argmax(bad.reshape(-1)))
    return tuple(int(i) for i in np.unravel_index(flat, bad.shape)) if bad.shape else ()


def _float_out_of_range(a: np.ndarray) -> np.ndarray:
    """Finite elements beyond float32's largest finite value, sentinels excepted."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(a) & (np.abs(a) > _F32_MAX) & (np.abs(a) != _F64_MAX)


def _range_problem(a: np.ndarray, policy: str, sentinels: bool = True
                   ) -> tuple[tuple[int, ...], Any, str] | None:
    """(index, value, reason) of the first element no64 refuses to narrow.

    Integers outside the 32-bit range are refused under the ``"error"``
    policy unless they are sentinels (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``), which map to the 32-bit extremes; finite floats beyond
    float32's largest finite value are refused unless they are float64's
    largest finite value or its negation (sentinels too).  With
    ``sentinels=False`` (``policy="exact"``, whose inputs are plain 32-bit
    values) integer sentinels are refused like any other out-of-range value.
    """
    dt = a.dtype
    if dt == np.int64 or dt == np.uint64:
        info: np.iinfo[Any]
        if policy != IntegerPolicy.ERROR or a.size == 0:
            return None
        if dt == np.int64:
            bad = (a < _I32.min) | (a > _I32.max)
            if sentinels:
                bad &= (a != _I64.max) & (a != _I64.min)
            info = _I32
        else:
            bad = a > _U32.max
            if sentinels:
                bad &= a != _U64.max
            info = _U32
        idx = _first_bad(bad)
        if idx is None:
            return None
        return idx, a[idx].item(), _integer_reason(f"{NARROWED[dt]}'s range [{info.min}, {info.max}]",
                                                   sentinels)
    if dt == np.float64:
        idx = _first_bad(_float_out_of_range(a))
        if idx is None:
            return None
        return idx, a[idx].item(), f"a finite value beyond float32's largest ({_F32_MAX:.8g}); it would become inf"
    if dt == np.complex128:
        idx = _first_bad(_float_out_of_range(a.real) | _float_out_of_range(a.imag))
        if idx is None:
            return None
        return idx, a[idx].item(), f"a part beyond float32's largest finite value ({_F32_MAX:.8g}); it would become inf"
    return None


def _integer_reason(what: str, sentinels: bool) -> str:
    if not sentinels:
        return (f"outside {what}; under policy='exact' the program takes this input as a 32-bit "
                "value and no64 maps no sentinel there (integer_policy='saturate' or 'wrap' "
                "narrows it anyway)")
    return (f"outside {what} and no sentinel; no64 never wraps (integer_policy='saturate' or "
            "'wrap' narrows it anyway)")


def _python_problem(x: int | float | complex, policy: str, sentinels: bool = True) -> str | None:
    if isinstance(x, int):
        if _I32.min <= x <= _I32.max or (sentinels and x in (_I64.max, _I64.min)):
            return None
        if policy != IntegerPolicy.ERROR and _I64.min <= x <= _I64.max:
            return None
        return _integer_reason(f"int32's range [{_I32.min}, {_I32.max}]", sentinels)
    parts = (x.real, x.imag) if isinstance(x, complex) else (x,)
    for p in parts:
        if np.isfinite(p) and abs(p) > _F32_MAX and abs(p) != _F64_MAX:
            return f"beyond float32's largest finite value ({_F32_MAX:.8g}); it would become inf"
    return None


def narrow_argument(x: Any, path: str = "argument", *, where: str = "no64",
                    integer_policy: str = "error", sentinels: bool = True) -> Any:
    """``x`` with its 64-bit values converted to 32 bits, by no64's rules.

    Handles numpy arrays and scalars, Python ``int``/``float``/``complex``
    (checked, then left as Python numbers so JAX keeps them weakly typed) and
    concrete ``jax.Array`` values (fetched, checked, converted and put back
    with the same sharding).  Anything else is returned unchanged.  Sentinels
    (``INT64_MAX``, ``INT64_MIN``, ``UINT64_MAX``, float64's largest finite
    value and its negation) map to the 32-bit extremes; other integers
    outside the 32-bit range follow ``integer_policy``; narrowings that are
    not exact are recorded in :func:`no64.host_records`.  ``sentinels=False``
    refuses integer sentinels too (the inputs of ``policy="exact"``).

    Raises:
      ArgumentRangeError: a value no64 refuses to narrow; the message names
        ``path``, the first offending index and the caller's source line.
    """
    if isinstance(x, (bool, np.bool_)) or x is None:
        return x
    op = f"{where} {path}"
    if isinstance(x, (int, float, complex)):
        problem = _python_problem(x, integer_policy, sentinels)
        if problem:
            raise ArgumentRangeError(
                f"{where}: {path} is the Python {type(x).__name__} {x!r}, {problem}{_at_user()}",
                path=path, index=(), value=x, dtype=type(x).__name__,
                target={int: "int32", float: "float32", complex: "complex64"}[type(x)],
            )
        if isinstance(x, int) and not _I32.min <= x <= _I32.max:
            return host.narrow_python_int(x, integer_policy, op=op)
        if isinstance(x, float) and abs(x) == _F64_MAX:
            return host.narrow_python_float(x, op)
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        target = NARROWED.get(x.dtype)
        if target is None:
            return x
        a = np.asarray(x)
        _raise_if_out_of_range(a, path, where, integer_policy, sentinels)
        out = host.narrow_host_array(a, integer_policy, op=op)
        return out if isinstance(x, np.ndarray) else out[()]
    if isinstance(x, jax.core.Tracer):
        if _narrowed_dtype(x.dtype) is not None:
            raise TracedArgumentError(
                f"{where}: {path} is a traced {x.dtype} value: no64.jit is being called inside "
                "another transformation (jax.jit, grad, vmap, ...) that traces with x64 on. "
                "Apply no64.jit outermost, e.g. no64.jit(jax.grad(f)), so it sees the "
                "concrete inputs and can convert them with a range check."
            )
        return x
    if isinstance(x, jax.Array):
        target = _narrowed_dtype(x.dtype)
        if target is None:
            return x
        if not x.is_fully_addressable:
            raise No64Error(
                f"{where}: {path} is a {x.dtype} jax.Array spanning several processes; "
                "no64 converts 64-bit arrays on the host and cannot fetch it. Pass 32-bit data."
            )
        a = np.asarray(x)
        _raise_if_out_of_range(a, path, where, integer_policy, sentinels)
        return jax.device_put(host.narrow_host_array(a, integer_policy, op=op), x.sharding)
    return x


def _at_user() -> str:
    source = host.user_source()
    return f" (at {source.source})" if source.source else ""


def _raise_if_out_of_range(a: np.ndarray, path: str, where: str, policy: str,
                           sentinels: bool = True) -> None:
    problem = _range_problem(a, policy, sentinels)
    if problem is None:
        return
    idx, value, reason = problem
    at = f" at index {idx}" if idx else ""
    raise ArgumentRangeError(
        f"{where}: {path} ({a.dtype}{list(a.shape)}) holds {value!r}{at}, {reason}{_at_user()}",
        path=path, index=idx, value=value, dtype=str(a.dtype), target=str(NARROWED[a.dtype]),
    )


def _narrowed_dtype(dtype: Any) -> np.dtype | None:
    """The 32-bit dtype for a 64-bit ``dtype``; ``None`` for others (and PRNG key dtypes)."""
    if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
        return None
    try:
        return NARROWED.get(np.dtype(dtype))
    except TypeError:
        return None


def _needs_narrowing(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, complex)):
        return True  # checked: Python numbers have no fixed width
    dt = getattr(x, "dtype", None)
    return dt is not None and _narrowed_dtype(dt) is not None


def _whole_integer(x: Any) -> bool:
    """A concrete 64-bit integer input (a Python int, an int64/uint64 numpy
    value or ``jax.Array``), which ``policy="exact"`` passes whole."""
    if isinstance(x, (bool, np.bool_)) or isinstance(x, jax.core.Tracer):
        return False
    if isinstance(x, int):
        return True
    if not isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return False
    try:
        return np.dtype(x.dtype) in (np.dtype(np.int64), np.dtype(np.uint64))
    except TypeError:
        return False  # PRNG key dtypes


# ---------------------------------------------------------------------------
# no64.jit
# ---------------------------------------------------------------------------


def _index_tuple(v: int | Iterable[int] | None) -> tuple[int, ...]:
    if v is None:
        return ()
    if isinstance(v, int):
        return (v,)
    return tuple(int(i) for i in v)


def _name_tuple(v: str | Iterable[str] | None) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


class Jitted:
    """What :func:`jit` returns: call it like the function, or :meth:`lower` it.

    Attributes:
      jitted: The underlying :func:`jax.jit` object (call it only inside
        :meth:`scope`).
      options: The :class:`~no64.options.Options` the keywords of
        :func:`jit` ask for (``integer_policy``, ``policy``,
        ``float_policy``, ``target``).
    """

    def __init__(
        self,
        fun: Callable[..., Any],
        *,
        restore_dtypes: bool,
        integer_policy: str,
        jit_kwargs: Mapping[str, Any],
        policy: str = "default",
        float_policy: str = "f32",
        target: "str | Target | None" = None,
    ) -> None:
        self.options = options = Options(integer_policy=integer_policy, policy=policy, float_policy=float_policy,
                                         target=target)
        self._fun = fun
        self._restore = restore_dtypes
        # the 32-bit program's compilations (float64 is float32 there; under
        # float_policy="pairs" the x64 program runs, on the exact path)
        self._config = jaxhook.Config(frozenset({jaxhook.ALL_PLATFORMS}), Mode.FIX,
                                      options.replace(float_policy=FloatPolicy.F32))
        self._jit_kwargs = dict(jit_kwargs)
        self.jitted = jax.jit(fun, **jit_kwargs)
        self._exact: _ExactPath | None = None
        if options.policy is RangePolicy.EXACT or options.float_policy is FloatPolicy.PAIRS:
            self._exact = _ExactPath(fun, self._jit_kwargs, self._config, options.float_policy)
        try:
            sig: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            sig = None
        self._positional: list[str] = []
        self._varargs: str | None = None
        if sig is not None:
            for p in sig.parameters.values():
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    self._positional.append(p.name)
                elif p.kind is p.VAR_POSITIONAL:
                    self._varargs = p.name
        nums = _index_tuple(jit_kwargs.get("static_argnums"))
        names = _name_tuple(jit_kwargs.get("static_argnames"))
        if not nums and names:
            nums = tuple(i for i, n in enumerate(self._positional) if n in names)
        if nums and not names and "static_argnames" not in jit_kwargs:
            names = tuple(self._positional[i] for i in nums if 0 <= i < len(self._positional))
        self._static_nums = frozenset(nums)
        self._static_names = frozenset(names)
        self._name = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
        self._out_dtypes: dict[Any, Any] = {}
        #: per argument signature: the traced program and the offset of its arguments
        self._sentinel_traces: dict[Any, tuple[Any, int]] = {}
        functools.update_wrapper(self, fun)

    def __repr__(self) -> str:
        return f"no64.jit({self._name})"

    # -- the scope -------------------------------------------------------
    @contextmanager
    def scope(self) -> Iterator[None]:
        """x64 off and every compilation through no64, in this thread."""
        with enable_x64(False), jaxhook.scoped(self._config):
            yield

    # -- inputs ----------------------------------------------------------
    def _arg_name(self, i: int) -> str:
        if i < len(self._positional):
            return self._positional[i]
        if self._varargs is not None:
            return f"{self._varargs}[{i - len(self._positional)}]"
        return f"args[{i}]"

    def _is_static(self, i: int, n: int) -> bool:
        return i in self._static_nums or (i - n) in self._static_nums

    def _narrow(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        where = f"no64.jit({self._name})"
        new_args = list(args)
        for i, a in enumerate(args):
            if not self._is_static(i, len(args)):
                new_args[i] = self._narrow_tree(a, self._arg_name(i), where)
        new_kwargs = dict(kwargs)
        for k, v in kwargs.items():
            if k not in self._static_names:
                new_kwargs[k] = self._narrow_tree(v, k, where)
        return tuple(new_args), new_kwargs

    def _narrow_tree(self, tree: Any, name: str, where: str) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        if not any(_needs_narrowing(x) for x in leaves):
            return tree
        paths = None
        out = []
        for i, x in enumerate(leaves):
            if self._exact is not None and _whole_integer(x):
                # policy="exact": a 64-bit integer input is passed whole (as
                # words where the program may need all 64 bits)
                if isinstance(x, int) and not _I64.min <= x <= _I64.max:
                    if paths is None:
                        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
                    path = f"argument {name}{jax.tree_util.keystr(paths[i])}"
                    raise ArgumentRangeError(
                        f"{where}: {path} is the Python int {x!r}, outside int64's range "
                        f"[{_I64.min}, {_I64.max}]{_at_user()}",
                        path=path, index=(), value=x, dtype="int", target="int64",
                    )
            elif _needs_narrowing(x):
                if paths is None:
                    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
                x = narrow_argument(x, f"argument {name}{jax.tree_util.keystr(paths[i])}", where=where,
                                    integer_policy=self._config.integer_policy,
                                    sentinels=self._config.policy is not RangePolicy.EXACT)
            out.append(x)
        return jax.tree_util.tree_unflatten(treedef, out)

    # -- calling ---------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        nargs, nkwargs = self._narrow(args, kwargs)
        if self._exact is not None:
            return self._exact.call(self._abstract(args, kwargs), self._dynamic_leaves(nargs, nkwargs),
                                    self._restore, self._name, self._dynamic_leaves(args, kwargs))
        self._check_sentinel_arguments(args, kwargs, nargs, nkwargs)
        with self.scope(), intent.with_x64_arguments(args, kwargs):
            out = self.jitted(*nargs, **nkwargs)
        if self._restore:
            out = self._restore_dtypes(args, kwargs, out)
        return out

    def _check_sentinel_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                                  nargs: tuple[Any, ...], nkwargs: dict[str, Any]) -> None:
        """Arguments that held host sentinels, followed through the traced
        program: a read of one as a number is reported or refused
        (:func:`no64.jax.host.sentinel_reads`)."""
        leaves = self._dynamic_leaves(args, kwargs)
        seeds = host.argument_seeds(leaves)
        if not seeds:
            return
        key = self._abstract(args, kwargs).key
        traced = self._sentinel_traces.get(key) if key is not None else None
        with self.scope():
            if traced is None:
                jaxpr = self.jitted.trace(*nargs, **nkwargs).jaxpr
                traced = (jaxpr, len(jaxpr.jaxpr.invars) - len(leaves))
                if key is not None:
                    if len(self._sentinel_traces) >= 64:
                        self._sentinel_traces.clear()
                    self._sentinel_traces[key] = traced
            jaxpr, offset = traced
            host.check_sentinel_reads(jaxpr, {i + offset: t for i, t in seeds.items()},
                                      frozenset())

    def _restore_dtypes(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        """Outputs in the dtypes the x64 program returns for these arguments.

        The expected dtypes come from tracing the function abstractly with
        x64 on (``eval_shape``, cached per argument signature).  An output
        whose expected dtype is 64-bit and that came back as the matching
        32-bit dtype is returned as a numpy array of the 64-bit dtype (a
        64-bit value cannot live on a device without 64-bit types); every
        other output is returned as it came.
        """
        out_leaves, out_tree = jax.tree_util.tree_flatten(out)
        if any(isinstance(x, jax.core.Tracer) for x in out_leaves):
            return out
        expected = self._expected_out_dtypes(args, kwargs)
        if expected is None or len(expected) != len(out_leaves):
            return out
        restored = []
        for x, want in zip(out_leaves, expected):
            got = getattr(x, "dtype", None)
            if want is not None and got is not None and _WIDENED.get(np.dtype(got)) == want:
                x = np.asarray(x).astype(want)
            restored.append(x)
        return jax.tree_util.tree_unflatten(out_tree, restored)

    def _dynamic_leaves(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The leaves of the non-static arguments, in JAX's order."""
        n = len(args)
        dynamic = (tuple(a for i, a in enumerate(args) if not self._is_static(i, n)),
                   {k: v for k, v in kwargs.items() if k not in self._static_names})
        return jax.tree_util.tree_leaves(dynamic)

    def _abstract(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> "_Abstract":
        """The call's arguments with arrays replaced by their shapes and
        dtypes (as the caller gave them), and a cache key for them."""
        def spec(x: Any) -> Any:
            if isinstance(x, (np.ndarray, np.generic)) or (
                isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
            ):
                return jax.ShapeDtypeStruct(np.shape(x), x.dtype)
            return x

        n = len(args)
        static = [i for i in range(n) if self._is_static(i, n)]
        sargs = tuple(a if i in static else jax.tree_util.tree_map(spec, a)
                      for i, a in enumerate(args))
        skwargs = {k: v if k in self._static_names else jax.tree_util.tree_map(spec, v)
                   for k, v in kwargs.items()}
        dynamic = ([a for i, a in enumerate(sargs) if i not in static],
                   {k: v for k, v in skwargs.items() if k not in self._static_names})
        leaves, treedef = jax.tree_util.tree_flatten(
            dynamic, is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct))
        key: Any = (
            tuple((i, args[i]) for i in static),
            tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static_names)),
            treedef,
            tuple(_spec_key(x) for x in leaves),
        )
        try:
            hash(key)
        except TypeError:
            key = None
        return _Abstract(sargs, skwargs, key)

    def _expected_out_dtypes(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
        abstract = self._abstract(args, kwargs)
        sargs, skwargs, key = abstract.args, abstract.kwargs, abstract.key
        if key is not None and key in self._out_dtypes:
            return self._out_dtypes[key]
        with enable_x64(True):
            shapes = self.jitted.eval_shape(*sargs, **skwargs)
        dtypes = [np.dtype(s.dtype) if not jax.dtypes.issubdtype(s.dtype, jax.dtypes.extended) else None
                  for s in jax.tree_util.tree_leaves(shapes)]
        dtypes = [d if d in _WIDENED.values() else None for d in dtypes]
        if key is not None:
            if len(self._out_dtypes) >= 256:
                self._out_dtypes.clear()
            self._out_dtypes[key] = dtypes
        return dtypes

    # -- lowering --------------------------------------------------------
    def lower(self, *args: Any, **kwargs: Any) -> "Lowered":
        """Lower for these arguments (converted as for a call) to a 64-bit-free :class:`Lowered`."""
        nargs, nkwargs = self._narrow(args, kwargs)
        if self._exact is not None:
            abstract = self._abstract(args, kwargs)
            return self._exact.lowered(abstract, self._name)
        self._check_sentinel_arguments(args, kwargs, nargs, nkwargs)
        with self.scope():
            lowered = self.jitted.lower(*nargs, **nkwargs)
        low = Lowered._from_jax(lowered, Options(integer_policy=self._config.integer_policy,
                                                 outputs=Outputs.NARROW, target=self.options.target), self._name)
        return low._for_target(self._config)

    def clear_cache(self) -> None:
        """Drop this function's compiled executables and traces."""
        self.jitted.clear_cache()  # type: ignore[attr-defined]  # (jax's JitWrapped stub omits it)
        self._out_dtypes.clear()
        self._sentinel_traces.clear()
        if self._exact is not None:
            self._exact.clear()


def _spec_key(x: Any) -> Any:
    """Cache key of one abstract argument: shape and dtype, or the type of a Python number."""
    if isinstance(x, jax.ShapeDtypeStruct):
        return ("spec", x.shape, str(x.dtype))
    if isinstance(x, (int, float, complex, bool)):
        return ("python", type(x).__name__)
    return x


def jit(
    fun: Callable[..., Any] | None = None,
    *,
    restore_dtypes: bool = False,
    integer_policy: str = "error",
    policy: str = "default",
    float_policy: str = "f32",
    target: "str | Target | None" = None,
    **jit_kwargs: Any,
) -> Any:
    """Like :func:`jax.jit`, but 32-bit and 64-bit free whatever ``jax_enable_x64`` says.

    Args:
      fun: The function (``@no64.jit`` and ``@functools.partial(no64.jit, ...)``
        work too).
      restore_dtypes: Return outputs in the dtypes the function returns with
        x64 on for the caller's arguments: an output the x64 program returns
        as float64/int64/uint64/complex128 comes back as a numpy array of that
        dtype (converted on the host; a 64-bit array cannot live on a device
        without 64-bit types).  Other outputs come back as they are.
      integer_policy: What happens to integers outside the 32-bit range that
        are no sentinels -- in arguments, host constants and the module
        (:func:`no64.demote`): ``"error"`` refuses them, ``"saturate"`` and
        ``"wrap"`` narrow them and record it.
      policy: The range policy of :func:`no64.demote` for the call's
        modules.  ``"exact"`` runs the function's *x64* program instead:
        it is traced with x64 on (for the caller's argument dtypes), every
        integer not proven to fit in 32 bits is computed exactly in 32-bit
        word pairs, and the module is compiled and run on the default
        device.  Its 64-bit integer inputs are passed whole: split on the
        host into their shape plus a trailing 2 (low, high words), the form
        in which the converted program takes them, so every int64/uint64
        value (sentinels included) keeps its 64-bit meaning; an emulated
        output comes back in the same form, or, with ``restore_dtypes``,
        joined into an int64/uint64 numpy array.
        Shardings (``in_shardings``, ``out_shardings``, ``device``,
        ``backend``) are refused and donation is not applied.
      float_policy: ``"pairs"`` runs the function's x64 program with every
        float64 value carried as a pair of f32 (:func:`no64.demote`'s
        ``float_policy``), compiled and run by no64 as under
        ``policy="exact"``: float64 arguments are handed over as their
        pairs (about 48 bits of their significand); a float64 output comes
        back as its shape plus a trailing 2 (hi, lo) float32, or, with
        ``restore_dtypes``, joined into a float64 numpy array.
      target: The device profile (:mod:`no64.targets`: ``"neuron"``, ...)
        the call's modules are made exact on and checked against, whatever
        platform they are compiled for (as the compile hook does with
        ``NO64_TARGET``): ops the profile computes inexactly on a narrower
        datapath or refuses, where no64 has an exact form for them, are
        rewritten into it (an int32 ``dot`` into limb dots exact in f32,
        an f32 ``reduce_precision`` into integer ops on its bits); each op
        left that the profile refuses or may compute inexactly is a
        :class:`no64.TargetWarning` at its line under the default policy and
        a :class:`no64.TargetError` under ``"strict"`` and ``"exact"``; its
        native 64-bit types are kept.  ``None``: the profile of the platform
        compiled for.  :meth:`Jitted.lower` returns the module made exact
        and checked the same way.
      **jit_kwargs: Passed to :func:`jax.jit` (``static_argnums``,
        ``in_shardings``, ``donate_argnums``, ...).  Static arguments are
        never converted.

    Each call converts 64-bit inputs to 32 bits on the host with a range check
    (:class:`ArgumentRangeError` names the argument's pytree path and first
    bad index), traces and runs with x64 off in a thread-local scope, and
    compiles every module through :func:`no64.demote` and :func:`no64.check`.
    Use it at the host boundary (outermost: ``no64.jit(jax.grad(f))``).
    Closed-over numpy constants and Python numbers are narrowed on the host
    by the same rules (:mod:`no64.jax.host`; :class:`no64.HostRangeError` for
    integers beyond 32 bits that are no sentinels); closed-over 64-bit
    ``jax.Array`` constants become constants of the module and are narrowed
    by :func:`no64.demote`, whose range check raises
    :class:`no64.ConstantRangeError` likewise.
    """
    if fun is None:
        return functools.partial(jit, restore_dtypes=restore_dtypes, integer_policy=integer_policy,
                                 policy=policy, float_policy=float_policy, target=target, **jit_kwargs)
    return Jitted(fun, restore_dtypes=restore_dtypes, integer_policy=integer_policy,
                  jit_kwargs=jit_kwargs, policy=policy, float_policy=float_policy, target=target)



# ---------------------------------------------------------------------------
# policy="exact": the x64 program, emulated, compiled and run by no64
# ---------------------------------------------------------------------------


def _default_device() -> Any:
    """The device ``no64.jit``'s exact path runs on: JAX's default device."""
    device = jax.config.jax_default_device or jax.devices()[0]  # type: ignore[attr-defined]  # (a flag)
    return jax.devices(device)[0] if isinstance(device, str) else device


class _Abstract(NamedTuple):
    """A call's arguments as shapes and dtypes (statics kept), and their cache key."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    key: Any


@dataclasses.dataclass
class _Executable:
    lowered: "Lowered"
    executable: Any
    device: Any
    in_dtypes: list[np.dtype]
    out_tree: Any
    #: per output: the dtype of the x64 program's output (``None``: not 64-bit)
    out_dtypes: list[np.dtype | None]
    #: outputs that come back as ``S x 2`` words
    words: frozenset[int]
    #: inputs that enter as ``S x 2`` words
    words_in: frozenset[int] = frozenset()
    #: float64 inputs and outputs carried as ``S x 2`` float32 pairs
    pairs_in: frozenset[int] = frozenset()
    pairs_out: frozenset[int] = frozenset()


class _ExactPath:
    """How :func:`jit` runs under ``policy="exact"``.

    JAX's executables return what the module JAX lowered declares, so an
    output that comes back as word pairs cannot go through them: the x64
    program is lowered by JAX (x64 on, every argument kept), demoted with
    ``policy="exact"`` and compiled by no64 on the default device, one
    executable per argument signature."""

    _SHARDING_KWARGS = ("in_shardings", "out_shardings", "device", "backend")

    def __init__(self, fun: Callable[..., Any], jit_kwargs: Mapping[str, Any], config: Any,
                 float_policy: FloatPolicy = FloatPolicy.F32) -> None:
        self.float_policy = FloatPolicy(float_policy)
        what = "float_policy='pairs'" if config.policy is not RangePolicy.EXACT else "policy='exact'"
        bad = [k for k in self._SHARDING_KWARGS if jit_kwargs.get(k) is not None]
        if bad:
            raise ValueError(
                f"no64.jit({what}) runs the program on one device and takes no "
                f"{', '.join(bad)}; use policy='default' for sharded programs"
            )
        kwargs = {k: v for k, v in jit_kwargs.items() if k not in ("donate_argnums", "donate_argnames")}
        kwargs["keep_unused"] = True
        self.jitted = jax.jit(fun, **kwargs)
        self.config = config
        self._cache: dict[Any, _Executable] = {}

    def clear(self) -> None:
        self._cache.clear()
        self.jitted.clear_cache()  # type: ignore[attr-defined]  # (jax's JitWrapped stub omits it)

    def _lower_x64(self, abstract: _Abstract) -> Any:
        with enable_x64(True):
            return self.jitted.lower(*abstract.args, **abstract.kwargs)

    def lowered(self, abstract: _Abstract, name: str) -> "Lowered":
        options = self.config.options.replace(outputs=Outputs.WORDS, float_policy=self.float_policy)
        if self.float_policy is FloatPolicy.PAIRS:
            # pairs built for the f32 arithmetic of the device they run on
            options = options.replace(arithmetic=self.arithmetic(_default_device().platform))
        return Lowered._from_jax(self._lower_x64(abstract), options, name)._for_target(self.config)

    def arithmetic(self, platform: str) -> Arithmetic:
        """The f32 arithmetic pairs are built for on ``platform``: the
        options' own, else the device profile's."""
        given = self.config.options.arithmetic
        return given if given is not None else jaxhook.device_profile(self.config, platform).arithmetic

    def _compiled(self, abstract: _Abstract, name: str) -> _Executable:
        if abstract.key is not None and abstract.key in self._cache:
            return self._cache[abstract.key]
        import jax.extend.backend

        from ._compat import device_list
        from .reference import main_signature

        low = self.lowered(abstract, name)
        if self.config.policy is not RangePolicy.EXACT:
            # what is not proven to fit is narrowed: said at its line, as the hook says it
            intent.warn_unproven(low.report, name)
        if low.report.float_hints:
            # float64 left to f32 (float_policy="f32") changes a result: said at its line
            intent.warn_float_hints(low.report, name)
        jax_lowered = low.jax_lowered
        in_specs, out_specs = main_signature(low.module)
        out_info = jax.tree_util.tree_leaves(
            jax_lowered.out_info, is_leaf=lambda x: hasattr(x, "shape") and hasattr(x, "dtype"))
        if len(in_specs) != jax_lowered.in_tree.num_leaves or len(out_specs) != len(out_info):
            raise No64Error(
                f"no64.jit({name}, policy='exact'): the lowered program has effects (tokens) or "
                "arguments JAX does not pass through; no64 cannot run it itself"
            )
        out_dtypes: list[np.dtype | None] = []
        for info in out_info:
            if jax.dtypes.issubdtype(info.dtype, jax.dtypes.extended):
                raise No64Error(f"no64.jit({name}, policy='exact') cannot return {info.dtype} values")
            d = np.dtype(info.dtype)
            out_dtypes.append(d if d in _WIDENED.values() else None)
        device = _default_device()
        if self.config.target is None:
            # made exact on, and checked against, the device's profile (as the hook does)
            low.module = jaxhook.check_device(low.module, self.config, device.platform, owned=True)
        backend = jax.extend.backend.get_backend(device.platform)
        if self.float_policy is FloatPolicy.PAIRS:
            from .pair_probe import require_pair_arithmetic

            require_pair_arithmetic(backend, device, self.arithmetic(device.platform))
        options = jax.extend.backend.get_compile_options(
            num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object))
        executable = backend.compile_and_load(
            low.module.operation.get_asm(enable_debug_info=True),
            executable_devices=device_list((device,)), compile_options=options)
        compiled = _Executable(low, executable, device, [s.dtype for s in in_specs],
                               jax_lowered.out_tree, out_dtypes, frozenset(low.report.emulated_outputs),
                               frozenset(low.report.emulated_inputs),
                               frozenset(low.report.pair_inputs), frozenset(low.report.pair_outputs))
        if abstract.key is not None:
            if len(self._cache) >= 64:
                self._cache.clear()
            self._cache[abstract.key] = compiled
        return compiled

    def call(self, abstract: _Abstract, leaves: list[Any], restore: bool, name: str,
             originals: list[Any] | None = None) -> Any:
        c = self._compiled(abstract, name)
        arrays = []
        for i, (x, dtype) in enumerate(zip(leaves, c.in_dtypes)):
            if i in c.pairs_in and originals is not None:
                # a float64 input as its pairs, from the caller's float64 values
                pairs_of = np.asarray(originals[i], dtype=np.float64)
                host.check_pair_range(pairs_of, refuse=self.config.policy in (RangePolicy.STRICT, RangePolicy.EXACT),
                                      what=f"argument leaf #{i} of no64.jit({name})")
                with warnings.catch_warnings():  # (just checked, at the caller's line)
                    warnings.simplefilter("ignore", PairRangeWarning)
                    x = split_pairs(pairs_of)
            elif i in c.words_in:
                # the 64-bit value whole, as its words (low, high)
                wide = np.dtype(np.uint64) if np.dtype(dtype) == np.uint32 else np.dtype(np.int64)
                x = split_words(np.asarray(x).astype(wide, copy=False))
            elif _whole_integer(x):
                # a 64-bit input the program proved it needs only 32 bits of
                x = narrow_argument(x, f"argument leaf #{i}", where=f"no64.jit({name})",
                                    integer_policy=self.config.integer_policy,
                                    sentinels=self.config.policy is not RangePolicy.EXACT)
            if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
                x = jax.random.key_data(x)  # a typed PRNG key: its words are the module's input
            if not (isinstance(x, jax.Array) and x.dtype == dtype):
                x = np.asarray(x)
                if x.dtype != dtype:
                    x = x.astype(dtype)  # a Python number or a narrowed value (range-checked)
            arrays.append(jax.device_put(x, c.device))
        results = c.executable.execute_sharded(arrays).disassemble_into_single_device_arrays()
        outs: list[Any] = [per_device[0] for per_device in results]
        if restore:
            for i, (x, want) in enumerate(zip(outs, c.out_dtypes)):
                if i in c.words:
                    outs[i] = join_words(np.asarray(x))
                elif i in c.pairs_out:
                    outs[i] = join_pairs(np.asarray(x))
                elif want is not None and _WIDENED.get(np.dtype(x.dtype)) == want:
                    outs[i] = np.asarray(x).astype(want)
        return jax.tree_util.tree_unflatten(c.out_tree, outs)

# ---------------------------------------------------------------------------
# no64.lower
# ---------------------------------------------------------------------------


class Lowered:
    """A function lowered 32-bit, with every 64-bit value removed.

    Attributes:
      module: The 64-bit-free StableHLO ``ir.Module`` (in no64's own MLIR
        context, with JAX's debug locations and sharding annotations).
      report: The :class:`no64.DemotionReport` of the leftover 64-bit values
        that were narrowed (empty when JAX produced none).
      jax_lowered: JAX's ``Lowered`` of the 32-bit trace (before demotion).
    """

    def __init__(self, module: ir.Module, report: DemotionReport, jax_lowered: Any, name: str) -> None:
        self.module = module
        self.report = report
        self.jax_lowered = jax_lowered
        self.name = name

    @classmethod
    def _from_jax(cls, lowered: Any, options: Options, name: str) -> "Lowered":
        import io

        buf = io.BytesIO()
        lowered.compiler_ir("stablehlo").operation.write_bytecode(file=buf)
        module = no64_io.load(buf.getvalue(), format="mlirbc")
        try:
            report = demote(module, options)
        except No64Error as exc:
            host.name_callers_line(exc, module)
            raise
        if report.kept_native:
            # the device's native 64-bit integers cross the call as word
            # pairs, as emulated ones do (a 32-bit JAX makes no int64 buffer)
            boundary = native_boundary(module.operation, frozenset(report.kept_native))
            if boundary is not None:
                with module.context, ir.Location.unknown():
                    boundary.as_words()
                report.emulated_inputs = sorted({*report.emulated_inputs, *boundary.inputs})
                report.emulated_outputs = sorted({*report.emulated_outputs, *boundary.outputs})
        check(module, keep=report.kept_native)
        return cls(module, report, lowered, name)

    def _for_target(self, config: Any) -> "Lowered":
        """This, its module made exact on and checked against ``config``'s
        target (:func:`no64.jax.hook.check_device`), where it names one."""
        if config.target is not None:
            self.module = jaxhook.check_device(self.module, config, "", owned=True)
        return self

    def as_text(self, *, debug_info: bool = False) -> str:
        """StableHLO text (with source locations when ``debug_info``)."""
        return self.module.operation.get_asm(enable_debug_info=debug_info)

    def as_bytecode(self) -> bytes:
        """MLIR bytecode of the module."""
        return no64_io.dumps(self.module, "mlirbc")

    def as_hlo_proto(self) -> bytes:
        """The module as a serialized XLA ``HloModuleProto``."""
        return no64_io.dumps(self.module, "hlopb")

    def __repr__(self) -> str:
        return f"<no64.Lowered {self.name}: {self.report.summary().splitlines()[0]}>"


def lower(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Lowered:
    """Lower ``fun(*args, **kwargs)`` 32-bit and return the 64-bit-free :class:`Lowered`.

    The same as ``no64.jit(fun).lower(*args, **kwargs)``; use
    ``no64.jit(fun, **jit_kwargs).lower(...)`` for shardings or static
    arguments.  Inputs are converted and range-checked as for a call.
    """
    return jit(fun).lower(*args, **kwargs)
