"""``no64.jit``: :func:`jit`, the :class:`Jitted` it returns, and
:func:`lower`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Iterator

import jax
import numpy as np

from ...errors import ArgumentRangeError
from ...ir.types import I64 as _I64
from ...kinds import FloatPolicy, Mode, Outputs, RangePolicy
from ...options import Options
from ...targets import Target
from .. import hook as jaxhook, host, intent
from .._compat import enable_x64
from .arguments import (
    WIDENED,
    at_user,
    check_argument_range,
    narrow_argument,
    needs_narrowing,
    whole_float,
    whole_integer,
)
from .exact import Abstract, ExactPath
from .lowered import Lowered


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
        self._exact: ExactPath | None = None
        if options.policy is RangePolicy.EXACT or options.float_policy is FloatPolicy.PAIRS:
            self._exact = ExactPath(fun, self._jit_kwargs, self._config, options.float_policy)
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
        donate_names = _name_tuple(jit_kwargs.get("donate_argnames"))
        self._donate_nums = frozenset(_index_tuple(jit_kwargs.get("donate_argnums"))) | frozenset(
            i for i, n in enumerate(self._positional) if n in donate_names)
        self._donate_names = frozenset(donate_names) | frozenset(
            self._positional[i] for i in self._donate_nums if 0 <= i < len(self._positional))
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
        if not any(needs_narrowing(x) for x in leaves):
            return tree
        paths = None
        out = []
        for i, x in enumerate(leaves):
            if self._exact is not None and whole_integer(x):
                # policy="exact": a 64-bit integer input is passed whole (as
                # words where the program may need all 64 bits)
                if isinstance(x, int) and not _I64.min <= x <= _I64.max:
                    if paths is None:
                        paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
                    path = f"argument {name}{jax.tree_util.keystr(paths[i])}"
                    raise ArgumentRangeError(
                        f"{where}: {path} is the Python int {x!r}, outside int64's range "
                        f"[{_I64.min}, {_I64.max}]{at_user()}",
                        path=path, index=(), value=x, dtype="int", target="int64",
                    )
            elif self._exact is not None and self._exact.float_policy is FloatPolicy.PAIRS and whole_float(x):
                # float_policy="pairs": a float64 input enters as its pairs
                # (48 bits), from its float64 values: checked, not rounded here
                if paths is None:
                    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
                check_argument_range(x, f"argument {name}{jax.tree_util.keystr(paths[i])}", where=where,
                                     integer_policy=self._config.integer_policy)
            elif needs_narrowing(x):
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
            out = self._exact.call(self._abstract(args, kwargs), self._dynamic_leaves(nargs, nkwargs),
                                   self._restore, self._name, self._dynamic_leaves(args, kwargs))
            self._delete_donated(args, kwargs)
            return out
        self._check_sentinel_arguments(args, kwargs, nargs, nkwargs)
        with self.scope(), intent.with_x64_arguments(args, kwargs):
            out = self.jitted(*nargs, **nkwargs)
        if self._restore:
            out = self._restore_dtypes(args, kwargs, out)
        return out

    def _delete_donated(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The donated arguments' arrays deleted, as JAX deletes what a call
        was donated (numpy data and Python values are the caller's)."""
        if not (self._donate_nums or self._donate_names):
            return
        n = len(args)
        donated = [a for i, a in enumerate(args) if i in self._donate_nums and not self._is_static(i, n)]
        donated += [v for k, v in kwargs.items() if k in self._donate_names]
        for leaf in jax.tree_util.tree_leaves(donated):
            if isinstance(leaf, jax.Array) and not leaf.is_deleted():
                leaf.delete()

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
            if want is not None and got is not None and WIDENED.get(np.dtype(got)) == want:
                x = np.asarray(x).astype(want)
            restored.append(x)
        return jax.tree_util.tree_unflatten(out_tree, restored)

    def _dynamic_leaves(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The leaves of the non-static arguments, in JAX's order."""
        n = len(args)
        dynamic = (tuple(a for i, a in enumerate(args) if not self._is_static(i, n)),
                   {k: v for k, v in kwargs.items() if k not in self._static_names})
        return jax.tree_util.tree_leaves(dynamic)

    def _abstract(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> "Abstract":
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
        return Abstract(sargs, skwargs, key)

    def _expected_out_dtypes(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
        abstract = self._abstract(args, kwargs)
        sargs, skwargs, key = abstract.args, abstract.kwargs, abstract.key
        if key is not None and key in self._out_dtypes:
            return self._out_dtypes[key]
        with enable_x64(True):
            shapes = self.jitted.eval_shape(*sargs, **skwargs)
        dtypes = [np.dtype(s.dtype) if not jax.dtypes.issubdtype(s.dtype, jax.dtypes.extended) else None
                  for s in jax.tree_util.tree_leaves(shapes)]
        dtypes = [d if d in WIDENED.values() else None for d in dtypes]
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
        ``backend``) are refused.  Donated arguments (``donate_argnums``,
        ``donate_argnames``) are deleted once the call has taken them, as
        JAX deletes donated arrays; their buffers are not reused for the
        results, since the module takes them converted (as words or pairs).
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


def lower(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Lowered:
    """Lower ``fun(*args, **kwargs)`` 32-bit and return the 64-bit-free :class:`Lowered`.

    The same as ``no64.jit(fun).lower(*args, **kwargs)``; use
    ``no64.jit(fun, **jit_kwargs).lower(...)`` for shardings or static
    arguments.  Inputs are converted and range-checked as for a call.
    """
    return jit(fun).lower(*args, **kwargs)
