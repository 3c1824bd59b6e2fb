"""Find every 64-bit value in a module, and the strict check built on it.

Every SSA value is either an op result or a block argument, so a walk over
op results and region block arguments sees each value once, at its
definition.  ``func.func`` signatures are reported from the function type
(covering external declarations, which have no body) and the entry block
arguments of a function are not repeated.  Attributes are not values:
those that are 64-bit by definition (``array<i64: ...>``, ``dimension = 0 : i64``, dense index and
padding attributes) are not values and never count.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Collection, Iterator

from ..errors import Remaining64BitError
from ..ir._compat import as_attribute
from ..ir._mlir import ir
from ..ir.locations import SourceLocation, decode_location
from ..ir.types import TypeConverter
from ..report import Finding, counted
from ..spec.registry import names_where
from ..spec.walk import all_ops, enclosing_function, module_op

# The names other modules import from here.
_module_op = module_op

__all__ = ["Finding", "find_64bit", "has_64bit", "check", "all_ops", "scan_ops"]


def _result_name(func_op: ir.Operation, i: int) -> str:
    """`` (name)`` from JAX's ``jax.result_info`` result attribute, if present."""
    attrs = as_attribute(func_op.attributes["res_attrs"], ir.ArrayAttr) if "res_attrs" in func_op.attributes else None
    result = as_attribute(attrs[i], ir.DictAttr) if attrs is not None and i < len(attrs) else None
    info = as_attribute(result["jax.result_info"], ir.StringAttr) if result and "jax.result_info" in result else None
    return f" ({info.value})" if info is not None else ""


_MISS = object()

def region_free_ops() -> frozenset[str]:
    """Ops that never carry regions (walks skip the region lookup for them),
    from the op registry."""
    return names_where(lambda spec: spec.region_free)


Emit = Callable[[ir.Operation, str, ir.Type, ir.Location, "tuple[str, int] | None"], None]


def scan_ops(
    ops: list[ir.Operation], holds: Callable[[ir.Type], bool], emit: Emit, uses: bool = False
) -> None:
    """Call ``emit`` for every 64-bit value defined (or, with ``uses``, used) by ``ops``."""
    functions = names_where(lambda spec: spec.function)
    for op in ops:
        name = op.name
        is_function = name in functions
        if is_function:
            ftype = ir.TypeAttr(op.attributes["function_type"]).value
            if holds(ftype):
                ft = ir.FunctionType(ftype)
                body = op.regions[0].blocks
                args = list(body[0].arguments) if len(body) else []
                for i, t in enumerate(ft.inputs):
                    if holds(t):
                        loc = args[i].location if i < len(args) else op.location
                        emit(op, f"function argument #{i}", t, loc, ("argument", i))
                for i, t in enumerate(ft.results):
                    if holds(t):
                        emit(op, f"function result #{i}{_result_name(op, i)}", t, op.location, None)
        else:
            for i, r in enumerate(op.results):
                t = r.type
                if holds(t):
                    emit(op, f"result #{i}", t, op.location, ("result", i))
            if uses:
                for i, v in enumerate(op.operands):
                    t = v.type
                    if holds(t):
                        emit(op, f"operand #{i}", t, op.location, None)
        if len(op.regions):
            for ri, region in enumerate(op.regions):
                for bi, block in enumerate(region.blocks):
                    if is_function and ri == 0 and bi == 0:
                        continue
                    for ai, arg in enumerate(block.arguments):
                        t = arg.type
                        if holds(t):
                            emit(op, f"region {ri} block {bi} argument #{ai}", t, arg.location, ("argument", ai))


def find_64bit(module: ir.Module | ir.Operation, *, uses: bool = False,
               keep: Collection[str] = ()) -> list[Finding]:
    """Return every value in ``module`` whose type holds a 64-bit element type.

    Args:
      module: An ``ir.Module`` (or its operation) from jaxlib's MLIR bindings.
      uses: Also list each operand that consumes a 64-bit value (the same
        value is then reported at its definition and at every use).
      keep: 64-bit element types the device has natively (``"i64"``,
        ``"u64"``, ... of :data:`no64.ir.types.WIDE_KINDS`): not listed.

    Returns:
      Findings in walk order; empty when the module is 64-bit free.
    """
    root = _module_op(module)
    out: list[Finding] = []

    # Locations and types are uniqued by MLIR and shared by many values:
    # decode and print each once (keyed by the uniqued attribute / type).
    locs: dict[ir.Attribute, SourceLocation] = {}
    types: dict[ir.Type, str] = {}

    def emit(
        op: ir.Operation, role: str, t: ir.Type, loc: ir.Location, value: tuple[str, int] | None
    ) -> None:
        key = loc.attr
        where = locs.get(key)
        if where is None:
            where = locs[key] = decode_location(loc)
        text = types.get(t)
        if text is None:
            text = types[t] = str(t)
        out.append(Finding(op.name, role, text, where, enclosing_function(op), value))

    with root.context, ir.Location.unknown(), gc_paused():
        scan_ops(all_ops(root), TypeConverter(frozenset(keep)).holds_64bit, emit, uses)
    return out


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the duration of a walk.

    A walk allocates a few Python objects per op; in a process holding a
    large heap (JAX's caches, a model) those allocations trigger full
    collections that cost more than the walk itself.  The walk creates no
    reference cycles of its own, so nothing is lost by collecting after it.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def has_64bit(module: ir.Module | ir.Operation, keep: Collection[str] = ()) -> bool:
    """True if any value of ``module`` holds a 64-bit type other than those
    in ``keep`` (the fast path of :func:`check`: one walk, cached type
    classification, no location decoding)."""
    root = _module_op(module)
    conv = TypeConverter(frozenset(keep))
    cache = conv._holds
    holds = conv.holds_64bit
    miss = _MISS
    found = False
    advance = ir.WalkResult.ADVANCE
    interrupt = ir.WalkResult.INTERRUPT
    no_regions = region_free_ops()
    functions = names_where(lambda spec: spec.function)

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        for t in op.results.types:
            hit = cache.get(t, miss)
            if hit is miss:
                hit = holds(t)
            if hit:
                found = True
                return interrupt
        if op.name not in no_regions and len(op.regions):
            if op.name in functions and holds(ir.TypeAttr(op.attributes["function_type"]).value):
                found = True
                return interrupt
            for region in op.regions:
                for block in region.blocks:
                    for t in block.arguments.types:
                        if holds(t):
                            found = True
                            return interrupt
        return advance

    with root.context, ir.Location.unknown(), gc_paused():
        root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def check(module: ir.Module | ir.Operation, keep: Collection[str] = ()) -> None:
    """Raise :class:`~no64.errors.Remaining64BitError` if any 64-bit value remains.

    This is what a device without 64-bit types does with the module (one
    with the types of ``keep`` natively: a target's profile's ``native``,
    :mod:`no64.targets`).  A clean module costs one walk with cached type
    lookups (:func:`has_64bit`); locations are decoded only to describe
    what remains.
    """
    if not has_64bit(module, keep):
        return
    findings = find_64bit(module, keep=keep)
    shown = "\n  ".join(str(f) for f in findings[:20])
    more = f"\n  ... and {len(findings) - 20} more" if len(findings) > 20 else ""
    raise Remaining64BitError(
        f"{counted(len(findings), '64-bit value')} {'remains' if len(findings) == 1 else 'remain'} in the "
        f"module:\n  {shown}{more}", findings
    )
