"""``jax.export`` artifacts (``Exported.serialize()``): the portable
artifact inside one, with its calling convention.

JAX itself reads them (``jax.export.deserialize``), imported only when an
artifact is read; a module read from one remembers it
(:func:`exported_of`), so that it can be written back with its calling
convention narrowed to 32 bits.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import weakref
from typing import Any

from ..errors import InputError, OutputError
from ..ir._mlir import ir
from ..ir.types import DTYPE_KINDS, NARROWED_DTYPE_NAMES as _NARROWED_DTYPES, wide_kind
from .formats import BYTECODE_MAGIC
from .mlir import dump_vhlo, load_vhlo


def jax_exported(data: bytes) -> Any | None:
    """``data`` read as a ``jax.export`` artifact, or None when it is not one.

    The artifact is a flatbuffer without a file identifier; it is one when
    ``jax.export.deserialize`` reads it and the module inside is MLIR
    bytecode.
    """
    if importlib.util.find_spec("flatbuffers") is None:
        return None
    try:
        from jax import export as jax_export

        exported = jax_export.deserialize(bytearray(data))
        payload = bytes(exported.mlir_module_serialized)
    except Exception:  # noqa: BLE001 - any failure means "not a jax.export artifact"
        return None
    return exported if payload.startswith(BYTECODE_MAGIC) else None


#: The jax.export artifact each module read from one came from (its calling
#: convention, needed to write one back).
_EXPORTED: "weakref.WeakKeyDictionary[ir.Module, Any]" = weakref.WeakKeyDictionary()


def load_jaxexport(data: bytes, path: str | None, name: str, ctx: ir.Context) -> ir.Module:
    if importlib.util.find_spec("flatbuffers") is None:
        raise InputError(f"{name}: reading a jax.export artifact needs the flatbuffers package "
                         "(a dependency of no64: pip install flatbuffers)")
    exported = jax_exported(data)
    if exported is None:
        raise InputError(f"{name}: not a jax.export artifact (Exported.serialize()) this jax can read")
    module = load_vhlo(bytes(exported.mlir_module_serialized), None, name, ctx)
    _EXPORTED[module] = exported
    return module


def exported_of(module: ir.Module) -> Any | None:
    """The ``jax.export.Exported`` that ``module`` was read from, or None."""
    return _EXPORTED.get(module)


def _entry_types(module: ir.Module) -> tuple[list[ir.Type], list[ir.Type]] | None:
    """The argument and result types of the module's public entry function."""
    from ..spec.walk import entry_function

    with module.context:
        fn = entry_function(module.operation)
        if fn is None:
            return None
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        return list(ftype.inputs), list(ftype.results)


#: The short name of each 64-bit element type by its numpy dtype's name.
_KINDS = {str(dtype): kind for dtype, kind in DTYPE_KINDS.items()}


def dump_jaxexport(module: ir.Module) -> bytes:
    """A ``jax.export`` artifact: the calling convention of the one ``module``
    was read from, with every 64-bit aval as the entry function now takes or
    returns it -- narrowed to 32 bits, as word or float pairs (a trailing 2),
    or kept 64-bit where a target with that type natively kept it (an
    argument JAX dropped as unused is kept when the entry keeps its element
    type elsewhere) -- and the module as a portable artifact.  A VJP the
    input carried is not kept (it would be 64-bit)."""
    exported = _EXPORTED.get(module)
    if exported is None:
        raise OutputError(
            "writing a jax.export artifact needs the calling convention of one: "
            "the module must be read from a jax.export artifact (Exported.serialize())"
        )
    import numpy as np

    def narrow(aval: Any) -> Any:
        name = _NARROWED_DTYPES.get(str(getattr(aval, "dtype", "")))
        return aval.update(dtype=np.dtype(name)) if name else aval

    types = _entry_types(module)
    # the 64-bit element types the entry keeps (a target's native ones)
    kept = {wide_kind(t.element_type) for t in (types[0] + types[1] if types else [])
            if isinstance(t, ir.RankedTensorType)} - {None}

    def avals(old: Any, new_types: list[ir.Type] | None, shardings: Any, what: str, verb: str,
              positions: Any = None) -> tuple[Any, ...]:
        out = []
        for i, aval in enumerate(old):
            # the module's position of this aval (JAX drops unused arguments)
            j = positions[i] if positions is not None else i
            t = new_types[j] if new_types is not None and j is not None and j < len(new_types) else None
            kind = _KINDS.get(str(getattr(aval, "dtype", "")))
            if kind is not None and (wide_kind(t.element_type) == kind if isinstance(t, ir.RankedTensorType)
                                     else t is None and kind in kept):
                out.append(aval)  # kept 64-bit: the target has the type
                continue
            aval = narrow(aval)
            if (isinstance(t, ir.RankedTensorType) and t.rank == len(aval.shape) + 1
                    and t.shape[-1] == 2 and str(aval.dtype) in ("int32", "uint32", "float32")):
                # emulated in 32-bit words (low, high), or a float64 carried
                # as an f32 pair (hi, lo): shape S x 2
                pairs = "an f32 pair" if str(aval.dtype) == "float32" else "32-bit word pairs"
                sharding = shardings[i] if i < len(shardings) else None
                if sharding is not None and not sharding.is_replicated():
                    raise OutputError(
                        f"{what} #{i} {verb} as {pairs} but is sharded ({sharding}); "
                        "a jax.export artifact cannot say how its pairs are sharded"
                    )
                aval = aval.update(shape=(*aval.shape, 2))
            out.append(aval)
        return tuple(out)

    # the module's arguments: platform index, dimension variables and tokens
    # first, then the arguments JAX kept
    kept_vars = list(exported.module_kept_var_idx)
    first = max(len(types[0]) - len(kept_vars), 0) if types else 0
    in_positions = [first + kept_vars.index(i) if i in kept_vars else None for i in range(len(exported.in_avals))]
    new = dataclasses.replace(
        exported,
        in_avals=avals(exported.in_avals, types[0] if types else None, exported.in_shardings_hlo,
                       "input", "enters", in_positions),
        out_avals=avals(exported.out_avals, types[1] if types else None, exported.out_shardings_hlo,
                        "output", "comes back"),
        mlir_module_serialized=dump_vhlo(module),
        _get_vjp=None,
    )
    return bytes(new.serialize())
