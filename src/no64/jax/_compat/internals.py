"""JAX-internal functions no64 calls or wraps by a name of its own, what the backend client
receives, and devices and shardings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .base import missing, optional_module
from .patching import replace_attribute

# ---------------------------------------------------------------------------
# What the backend client receives
# ---------------------------------------------------------------------------

def backend_module_text(computation: Any, *, debug_info: bool = False) -> str:
    """The text of a module as handed to ``Client.compile_and_load``: an
    ``ir.Module`` from 0.8, MLIR bytecode (``bytes``) on 0.7, or text."""
    if isinstance(computation, str):
        return computation
    if isinstance(computation, (bytes, bytearray)):
        from jax._src.interpreters import mlir as jax_mlir

        from ...ir._mlir import ir

        computation = ir.Module.parse(bytes(computation), context=jax_mlir.make_ir_context())
    return computation.operation.get_asm(enable_debug_info=debug_info)


# ---------------------------------------------------------------------------
# Internals the same on every supported release
# ---------------------------------------------------------------------------
# Each is reached here, by a name of no64's own, so that a release that drops
# or renames one is found (and handled) in this one file.

#: JAX-internal functions no64 calls or wraps, by the name no64 gives them:
#: (module, attribute path in it).  Looked up anew on each call of
#: :func:`internal_function` (no64 and JAX both replace some of them).
_INTERNAL_FUNCTIONS: dict[str, tuple[str, str]] = {
    # jit lowering compiles through it; no64's hook and the audit's observer wrap it
    "compile_or_get_cached": ("jax._src.compiler", "compile_or_get_cached"),
    # the conversion of host operands inside lax (Python scalars, numpy data)
    "lax_convert": ("jax._src.lax.lax", "_convert_element_type"),
    # a Python scalar made a numpy array under JAX's dtype rules
    "coerce_to_array": ("jax._src.dtypes", "coerce_to_array"),
    "canonicalize_dtype": ("jax._src.dtypes", "canonicalize_dtype"),
    "check_valid_dtype": ("jax._src.dtypes", "check_valid_dtype"),
    # jnp.array / jnp.asarray / jnp.arange where they are defined
    "array": ("jax._src.numpy.array_constructors", "array"),
    "asarray": ("jax._src.numpy.array_constructors", "asarray"),
    "arange": ("jax._src.numpy.lax_numpy", "arange"),
    # the C++ fast path of an AOT-compiled call, and the Python call it falls back on
    "create_cpp_call": ("jax._src.interpreters.pxla", "MeshExecutable.create_cpp_call"),
    "compiled_call": ("jax._src.stages", "Compiled.call"),
}


def _internal_owner(name: str) -> tuple[Any, str]:
    """The object that holds internal function ``name``, and its attribute there."""
    try:
        module_name, path = _INTERNAL_FUNCTIONS[name]
    except KeyError:
        raise ValueError(f"no64 names no JAX internal {name!r}") from None
    *owners, attr = path.split(".")
    owner = optional_module(module_name)
    for part in owners:
        owner = getattr(owner, part, None)
    if owner is None or not callable(getattr(owner, attr, None)):
        raise missing(f"{module_name}.{path}")
    return owner, attr


def internal_function(name: str) -> Callable[..., Any]:
    """The JAX-internal function no64 calls ``name`` (:data:`_INTERNAL_FUNCTIONS`
    says which), as it is now."""
    owner, attr = _internal_owner(name)
    return getattr(owner, attr)


def replace_internal_function(name: str, new: Callable[..., Any]) -> None:
    """Put ``new`` in place of the JAX-internal function ``name`` where it is
    defined (callers that bound it elsewhere are seen to by the caller, see
    :func:`numpy_modules`)."""
    owner, attr = _internal_owner(name)
    replace_attribute(owner, attr, new)


def device_list(devices: Sequence[Any]) -> Any:
    """The devices an executable is compiled for, as the backend client takes
    them (``xla_client.DeviceList``)."""
    from jax._src.lib import xla_client

    return xla_client.DeviceList(tuple(devices))


def sharding_for(devices: Sequence[Any], op_sharding: Any) -> Any:
    """A JAX sharding for a parameter or output sharding XLA reports
    (``None`` or one device: a ``SingleDeviceSharding``; else a
    ``GSPMDSharding`` of ``op_sharding`` over ``devices``)."""
    from jax._src.sharding_impls import GSPMDSharding, SingleDeviceSharding

    if op_sharding is None or len(devices) == 1:
        return SingleDeviceSharding(devices[0])
    return GSPMDSharding(device_list(devices), op_sharding)


# ---------------------------------------------------------------------------
# Host callbacks handed to the compiler
# ---------------------------------------------------------------------------

def with_host_callbacks(compile_fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any],
                        callbacks: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments (after the backend and the module) of a call of
    ``compile_or_get_cached`` (``compile_fn``) with its host callbacks (the
    objects a lowering registers for the Python callbacks its module calls,
    by index or channel) replaced by ``callbacks``: its parameter
    ``host_callbacks`` (0.7-0.12), found by name in its signature."""
    import inspect

    params = list(inspect.signature(compile_fn).parameters)
    if "host_callbacks" not in params:
        raise missing("jax._src.compiler.compile_or_get_cached(..., host_callbacks, ...)")
    if "host_callbacks" in kwargs:
        return tuple(args), {**kwargs, "host_callbacks": list(callbacks)}
    i = params.index("host_callbacks") - 2  # after the backend and the module
    if not 0 <= i < len(args):
        raise missing("jax._src.compiler.compile_or_get_cached(..., host_callbacks, ...)")
    out = list(args)
    out[i] = list(callbacks)
    return tuple(out), dict(kwargs)
