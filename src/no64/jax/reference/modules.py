"""Modules on the CPU backend: parsed, their entry signature, compiled, run (sharded where they ask
for several partitions), and JAX functions lowered with x64 on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend.backend
import numpy as np

from ...errors import InputError
from ...ir._mlir import ir, make_context
from ...spec.walk import entry_function, functions, is_public
from ...transforms.scan import check
from .._compat import device_list, enable_x64, sharding_for

# MLIR element type spelling -> numpy dtype name.  bfloat16 and the small
# float types come from ml_dtypes (a jax dependency) through jax.numpy.
_ELEMENT_DTYPES: Mapping[str, str] = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "si8": "int8",
    "si16": "int16",
    "si32": "int32",
    "si64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
}


# --------------------------------------------------------------------------
# Module access
# --------------------------------------------------------------------------


def parse_module(module_or_text: ir.Module | str | bytes) -> ir.Module:
    """Return ``module_or_text`` as an ``ir.Module``.

    Text (or bytecode) is parsed into a fresh context from
    :func:`no64._mlir.make_context`; an ``ir.Module`` is returned unchanged.

    Raises:
      no64.InputError: the text does not parse.
    """
    if isinstance(module_or_text, ir.Module):
        return module_or_text
    with make_context():
        try:
            return ir.Module.parse(module_or_text)
        except ir.MLIRError as err:
            raise InputError(f"<memory>: the module does not parse: {err}") from None


def _module_text(module: ir.Module) -> str:
    """Print ``module`` with its debug locations, the form XLA compiles."""
    return module.operation.get_asm(enable_debug_info=True)


def _main_function(module: ir.Module) -> ir.Operation:
    """Return the entry function (:func:`no64.spec.walk.entry_function`),
    refusing a guess among several public functions."""
    main = entry_function(module.operation, strict=True)
    if main is not None:
        return main
    public = [fn for fn in functions(module.operation) if is_public(fn)]
    raise ValueError(
        "module has no @main function and "
        f"{'no' if not public else 'more than one'} public function to run"
    )


@dataclass(frozen=True)
class ArraySpec:
    """Shape, dtype and name of one argument or result of a module's entry."""

    shape: tuple[int, ...]
    dtype: np.dtype
    name: str


def _element_dtype(element_type: ir.Type) -> np.dtype:
    spelling = str(element_type)
    try:
        return np.dtype(getattr(jax.numpy, _ELEMENT_DTYPES[spelling]))
    except KeyError:
        raise ValueError(f"no numpy dtype for element type {spelling}") from None


def _array_spec(t: ir.Type, name: str) -> ArraySpec:
    if not isinstance(t, ir.RankedTensorType):
        raise ValueError(f"{name} has type {t}; only ranked tensors can be run")
    tensor = t
    if not tensor.has_static_shape:
        raise ValueError(f"{name} has dynamic shape {t}; only static shapes can be run")
    return ArraySpec(tuple(tensor.shape), _element_dtype(tensor.element_type), name)


def main_signature(module: ir.Module) -> tuple[list[ArraySpec], list[ArraySpec]]:
    """Return the argument and result specs of the module's entry function.

    Result names come from JAX's ``jax.result_info`` attribute where present
    (e.g. ``"[1]['w']"``), else ``"result #i"``.
    """
    main = _main_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    result_attrs = (
        ir.ArrayAttr(main.attributes["res_attrs"]) if "res_attrs" in main.attributes else None
    )
    ins = [_array_spec(t, f"argument #{i}") for i, t in enumerate(ftype.inputs)]
    outs = []
    for i, t in enumerate(ftype.results):
        name = f"result #{i}"
        if result_attrs is not None:
            attrs = ir.DictAttr(result_attrs[i])
            if "jax.result_info" in attrs:
                info = ir.StringAttr(attrs["jax.result_info"]).value
                name = f"result #{i} {info!r}" if info else name
        outs.append(_array_spec(t, name))
    return ins, outs


def _python_callbacks(module: ir.Module) -> list[str]:
    """Targets of ``custom_call`` ops that call back into Python.

    ``jax.debug.print``, ``pure_callback`` and ``io_callback`` lower to such
    calls; the Python functions they name live only in the process that
    lowered the module, so the module cannot run from its text.
    """
    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if "call_target_name" in op.attributes:  # a custom call
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if "callback" in target:
                found.append(target)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _int_module_attr(module: ir.Module, name: str) -> int | None:
    attrs = module.operation.attributes
    if name not in attrs:
        return None
    return ir.IntegerAttr(attrs[name]).value


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def _cpu_backend() -> Any:
    return jax.extend.backend.get_backend("cpu")


def compile_module(module_or_text: ir.Module | str, device: Any = None) -> Any:
    """Compile a StableHLO module (or its text) for one device, the first
    CPU device by default, as it is: no64 does not convert it.  Returns the
    backend's loaded executable (``execute(arguments)`` runs it on arrays
    placed on ``device``); the benchmarks time it this way."""
    if device is None:
        device = _cpu_backend().devices()[0]
    text = module_or_text if isinstance(module_or_text, str) else _module_text(module_or_text)
    backend = jax.extend.backend.get_backend(device.platform)
    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object))
    return backend.compile_and_load(text, executable_devices=device_list((device,)), compile_options=options)


def _check_args(args: Sequence[Any], specs: Sequence[ArraySpec]) -> list[np.ndarray]:
    if len(args) != len(specs):
        raise ValueError(f"module takes {len(specs)} arguments, got {len(args)}")
    arrays = []
    for spec, arg in zip(specs, args):
        a = np.asarray(arg)
        if a.shape != spec.shape or a.dtype != spec.dtype:
            raise ValueError(
                f"{spec.name}: module expects {spec.dtype}{list(spec.shape)}, "
                f"got {a.dtype}{list(a.shape)}"
            )
        arrays.append(a)
    return arrays


def run_module(
    module_or_text: ir.Module | str | bytes,
    args: Sequence[Any],
    *,
    num_partitions: int | None = None,
    devices: Sequence[Any] | None = None,
    strict: bool = True,
    keep: Sequence[str] = (),
) -> list[np.ndarray]:
    """Compile a StableHLO module on the JAX CPU backend and run it.

    Args:
      module_or_text: an ``ir.Module`` or its text/bytecode.
      args: one array per argument of the entry function; shapes and dtypes
        must match the entry signature exactly (no implicit casts).
      num_partitions: SPMD partitions to compile for.  Defaults to
        ``len(devices)`` when devices are given, else the module's
        ``mhlo.num_partitions`` attribute, else 1.
      devices: the CPU devices to run on (default: the first
        ``num_partitions`` CPU devices).  More than one needs
        ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX
        initialises its CPU backend.
      strict: call :func:`no64.check` first, as a device without 64-bit
        types would, so a module that still holds a 64-bit value is refused
        with :class:`no64.Remaining64BitError`.
      keep: 64-bit element types the device has natively (``"i64"``, ...:
        a target's ``native``), allowed by that check.

    Returns:
      One numpy array per result, each the global (unsharded) value.
    """
    module = parse_module(module_or_text)
    if strict:
        check(module, keep=keep)
    in_specs, out_specs = main_signature(module)
    arrays = _check_args(args, in_specs)
    callbacks = _python_callbacks(module)
    if callbacks:
        raise ValueError(
            f"the module calls back into Python ({', '.join(sorted(set(callbacks)))}, from "
            "jax.debug.print, pure_callback or io_callback); those callbacks exist only in "
            "the process that lowered it, so it cannot be run from its text"
        )

    num_replicas = _int_module_attr(module, "mhlo.num_replicas") or 1
    if num_replicas != 1:
        raise ValueError(f"modules with {num_replicas} replicas are not supported; use partitions")
    if devices is not None:
        devices = list(devices)
        if num_partitions is not None and num_partitions != len(devices):
            raise ValueError(f"num_partitions={num_partitions} but {len(devices)} devices given")
        num_partitions = len(devices)
    if num_partitions is None:
        num_partitions = _int_module_attr(module, "mhlo.num_partitions") or 1
    backend = _cpu_backend()
    if devices is None:
        available = backend.devices()
        if num_partitions > len(available):
            raise ValueError(
                f"module needs {num_partitions} devices but the CPU backend has "
                f"{len(available)}; set XLA_FLAGS=--xla_force_host_platform_device_count="
                f"{num_partitions} before importing jax"
            )
        devices = available[:num_partitions]

    options = jax.extend.backend.get_compile_options(
        num_replicas=1,
        num_partitions=num_partitions,
        device_assignment=np.array(devices, dtype=object).reshape(1, num_partitions),
    )
    executable = backend.compile_and_load(
        _module_text(module),
        executable_devices=device_list(devices),
        compile_options=options,
    )

    in_shardings = executable.get_parameter_shardings() or [None] * len(arrays)
    out_shardings = executable.get_output_shardings() or [None] * len(out_specs)
    with enable_x64(True):  # keep 64-bit inputs 64-bit on the device
        inputs = [
            jax.device_put(a, sharding_for(devices, s)) for a, s in zip(arrays, in_shardings)
        ]
        results = executable.execute_sharded(inputs)
        shards = results.disassemble_into_single_device_arrays()
        outputs = []
        for spec, per_device, s in zip(out_specs, shards, out_shardings):
            if len(per_device) == 1:
                outputs.append(np.asarray(per_device[0]))
                continue
            whole = jax.make_array_from_single_device_arrays(
                spec.shape, sharding_for(devices, s), per_device
            )
            outputs.append(np.asarray(whole))
    for spec, out in zip(out_specs, outputs):
        if out.shape != spec.shape or out.dtype != spec.dtype:
            raise AssertionError(
                f"{spec.name}: module declares {spec.dtype}{list(spec.shape)} "
                f"but execution returned {out.dtype}{list(out.shape)}"
            )
    return outputs


# --------------------------------------------------------------------------
# Lowering
# --------------------------------------------------------------------------


def lower_jit_x64(fn: Callable[..., Any], args: Sequence[Any], jit_kwargs: Mapping[str, Any]) -> Any:
    kwargs = {"keep_unused": True, **jit_kwargs}
    with enable_x64(True):
        lowered = jax.jit(fn, **kwargs).lower(*args)
    return lowered


def reparse(module: ir.Module) -> ir.Module:
    """Copy a module (with debug locations) into a fresh no64 context."""
    return parse_module(_module_text(module))


def lower_x64(fn: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> ir.Module:
    """Lower ``fn`` with 64-bit types enabled to a StableHLO module.

    ``args`` are example arguments (arrays or pytrees of arrays); ``jit_kwargs``
    go to :func:`jax.jit` (e.g. ``in_shardings``).  Unused arguments are kept
    (``keep_unused=True`` unless overridden) so the module takes exactly the
    flattened arguments.  The module carries JAX's debug locations and lives in
    its own context from :func:`no64._mlir.make_context`, so no64 can rewrite
    it without touching JAX's.
    """
    return reparse(lower_jit_x64(fn, args, jit_kwargs).compiler_ir("stablehlo"))
