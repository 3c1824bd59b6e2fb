"""Access to the MLIR bindings bundled with jaxlib, and a ready context.

This and :mod:`._compat` (the seam for what differs between jaxlib releases)
are the only modules that import ``jaxlib.mlir`` directly; everything else
imports ``ir`` and the dialect modules from here.
"""

from __future__ import annotations

from jaxlib.mlir import ir  # noqa: E402
from jaxlib.mlir.dialects import chlo, func, mhlo, sdy, stablehlo  # noqa: E402

# ._compat loads jaxlib first (and sets XLA's logging default before it).
from ._compat import feature  # noqa: E402  (refuses an unsupported jaxlib)

_register_dialects = feature("jaxlib.mlir._mlir_libs._jax_mlir_ext", "register_dialects")
_register_mhlo = feature("jaxlib.mlir.dialects.mhlo", "register_mhlo_dialect")

__all__ = ["ir", "chlo", "func", "mhlo", "sdy", "stablehlo", "make_context", "as_operation", "defining_op",
           "enum_word", "int_attr"]


def as_operation(x: "ir.Operation | ir.OpView") -> ir.Operation:
    """The ``ir.Operation`` of an op (the bindings hand out op views too)."""
    return x if isinstance(x, ir.Operation) else x.operation


def enum_word(attr: ir.Attribute) -> str:
    """The word of a StableHLO enum attribute
    (``#stablehlo<comparison_direction LT>`` -> ``"LT"``)."""
    return str(attr).rstrip(">").split()[-1]


def int_attr(elem: ir.Type, value: int) -> ir.IntegerAttr:
    """The integer attribute of type ``elem`` holding ``value``, any value of
    the type.  The bindings take a signed 64-bit integer, so a ``ui64``
    value from 2**63 on is handed over as the same bits read signed
    (2**64 - 1 as -1), which the attribute keeps as the unsigned value."""
    v = int(value)
    return ir.IntegerAttr.get(elem, v - (1 << 64) if v >= 1 << 63 else v)


def defining_op(v: ir.Value) -> "ir.Operation | None":
    """The op that defines ``v``, or ``None`` for a block argument."""
    owner = v.owner
    if isinstance(owner, ir.Operation):
        return owner
    op = getattr(owner, "operation", None)
    return op if isinstance(op, ir.Operation) else None


def make_context() -> ir.Context:
    """Return a new MLIR context with every dialect a StableHLO program may use.

    Registers builtin, func, stablehlo, chlo, mhlo and sdy (Shardy).  Unknown
    dialects are not allowed, so an op from a dialect no64 does not know is a
    parse error rather than an opaque op that would slip through the pass.
    """
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)
    _register_mhlo(ctx)
    ctx.allow_unregistered_dialects = False
    return ctx
