"""``policy="exact"`` and ``float_policy="pairs"``: the x64 program,
emulated, compiled and run by no64 on the default device."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import numpy as np

from ...errors import No64Error
from ...kinds import FloatPolicy, Outputs, RangePolicy
from ...targets import Arithmetic
from ...transforms.emulate import join_words, split_words
from ...transforms.pairs import join_pairs
from .. import hook as jaxhook, host, intent
from .._compat import enable_x64
from .arguments import WIDENED, narrow_argument, whole_float, whole_integer
from .lowered import Lowered


def _default_device() -> Any:
    """The device ``no64.jit``'s exact path runs on: JAX's default device."""
    device = jax.config.jax_default_device or jax.devices()[0]  # type: ignore[attr-defined]  # (a flag)
    return jax.devices(device)[0] if isinstance(device, str) else device


class Abstract(NamedTuple):
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


class ExactPath:
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

    def _lower_x64(self, abstract: Abstract) -> Any:
        with enable_x64(True):
            return self.jitted.lower(*abstract.args, **abstract.kwargs)

    def lowered(self, abstract: Abstract, name: str) -> "Lowered":
        platform = _default_device().platform
        # converted for the device's profile, as the hook converts (what it keeps
        # natively, e.g. XLA:TPU's 64-bit types; its matrix engine for float64 dots)
        options = self.config.options.replace(outputs=Outputs.WORDS, float_policy=self.float_policy,
                                              target=jaxhook.device_profile(self.config, platform))
        if self.float_policy is FloatPolicy.PAIRS:
            # pairs built for the f32 arithmetic of the device they run on
            options = options.replace(arithmetic=self.arithmetic(platform))
        return Lowered._from_jax(self._lower_x64(abstract), options, name)._for_target(self.config)

    def arithmetic(self, platform: str) -> Arithmetic:
        """The f32 arithmetic pairs are built for on ``platform``: the
        options' own, else the device profile's."""
        given = self.config.options.arithmetic
        return given if given is not None else jaxhook.device_profile(self.config, platform).arithmetic

    def _compiled(self, abstract: Abstract, name: str) -> _Executable:
        if abstract.key is not None and abstract.key in self._cache:
            return self._cache[abstract.key]
        import jax.extend.backend

        from .._compat import device_list
        from ..reference import main_signature

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
            out_dtypes.append(d if d in WIDENED.values() else None)
        device = _default_device()
        if self.config.target is None:
            # made exact on, and checked against, the device's profile (as the hook does)
            low.module = jaxhook.check_device(low.module, self.config, device.platform, owned=True)
        backend = jax.extend.backend.get_backend(device.platform)
        if self.float_policy is FloatPolicy.PAIRS:
            from ..pair_probe import require_pair_arithmetic

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

    def call(self, abstract: Abstract, leaves: list[Any], restore: bool, name: str,
             originals: list[Any] | None = None) -> Any:
        c = self._compiled(abstract, name)
        arrays = []
        for i, (x, dtype) in enumerate(zip(leaves, c.in_dtypes)):
            if i in c.pairs_in and originals is not None:
                # a float64 input as its pairs, from the caller's float64 values
                # (float64's largest and its negation to float32's, as sentinels)
                x = host.host_pairs(np.asarray(originals[i], dtype=np.float64), self.config.integer_policy,
                                    f"argument leaf #{i} of no64.jit({name})",
                                    refuse=self.config.policy in (RangePolicy.STRICT, RangePolicy.EXACT),
                                    op=f"no64.jit({name}) argument leaf #{i}")
            elif i in c.words_in:
                # the 64-bit value whole, as its words (low, high)
                wide = np.dtype(np.uint64) if np.dtype(dtype) == np.uint32 else np.dtype(np.int64)
                x = split_words(np.asarray(x).astype(wide, copy=False))
            elif whole_integer(x) or whole_float(x):
                # a 64-bit input the program proved it needs only 32 bits of,
                # or a float64 one it takes as float32
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
                elif want is not None and WIDENED.get(np.dtype(x.dtype)) == want:
                    outs[i] = np.asarray(x).astype(want)
        return jax.tree_util.tree_unflatten(c.out_tree, outs)
