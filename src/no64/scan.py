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

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from ._mlir import ir
from .errors import Remaining64BitError
from .locations import SourceLocation, decode_location
from .types import TypeConverter

__all__ = ["Finding", "find_64bit", "check", "walk_ops"]


@dataclasses.dataclass(frozen=True)
class Finding:
    """One 64-bit value (or type attribute) in a module.

    Attributes:
      op: Name of the op that defines the value (``"stablehlo.add"``,
        ``"func.func"`` for signatures).
      role: Which value of the op: ``"result #0"``, ``"function argument #1"``,
        ``"function result #0"``, ``"region 0 block 0 argument #2"``,
        or ``"operand #1"`` (only with ``uses=True``).
      type: The value's type as MLIR prints it.
      location: The decoded location of the op (or block argument).
      function: Symbol name of the enclosing ``func.func``, if any.
    """

    op: str
    role: str
    type: str
    location: SourceLocation
    function: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["location"] = self.location.to_dict()
        d["location"]["text"] = str(self.location)
        return d

    def __str__(self) -> str:
        fn = f" in @{self.function}" if self.function else ""
        return f"{self.op} {self.role}: {self.type}{fn} ({self.location})"


def _module_op(module: ir.Module | ir.Operation | Any) -> ir.Operation:
    if isinstance(module, ir.Module):
        return module.operation
    if isinstance(module, ir.Operation):
        return module
    op = getattr(module, "operation", None)
    if isinstance(op, ir.Operation):
        return op
    raise TypeError(f"expected an MLIR Module or Operation, got {type(module).__name__}")


def walk_ops(root: ir.Operation) -> Iterator[ir.Operation]:
    """Yield every op nested under ``root`` (not ``root`` itself), pre-order."""
    stack: list[Any] = [iter(root.regions)]
    while stack:
        try:
            region = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        for block in region.blocks:
            for op in block.operations:
                yield op.operation if not isinstance(op, ir.Operation) else op
                if len(op.regions):
                    # Depth-first into the op's regions happens after its
                    # siblings; order within the walk is irrelevant here.
                    stack.append(iter(op.regions))


def _symbol(op: ir.Operation) -> str | None:
    try:
        return ir.StringAttr(op.attributes["sym_name"]).value
    except (KeyError, ValueError):
        return None


def _scan(
    root: ir.Operation,
    conv: TypeConverter,
    emit: Callable[[ir.Operation, str, ir.Type, ir.Location, str | None], None],
    uses: bool,
) -> None:
    holds = conv.holds_64bit
    # Iterate top-level ops of the module so each function's name is known.
    for region in root.regions:
        for block in region.blocks:
            for top in block.operations:
                top = top.operation
                fn_name = _symbol(top) if top.name == "func.func" else None
                _scan_op(top, conv, holds, emit, uses, fn_name, top_level=True)


def _scan_op(
    top: ir.Operation,
    conv: TypeConverter,
    holds: Callable[[ir.Type], bool],
    emit: Callable[[ir.Operation, str, ir.Type, ir.Location, str | None], None],
    uses: bool,
    fn_name: str | None,
    top_level: bool = False,
) -> None:
    work: list[ir.Operation] = [top]
    while work:
        op = work.pop()
        name = op.name
        if name == "func.func":
            ftype = ir.TypeAttr(op.attributes["function_type"]).value
            if holds(ftype):
                ft = ir.FunctionType(ftype)
                for i, t in enumerate(ft.inputs):
                    if holds(t):
                        emit(op, f"function argument #{i}", t, op.location, fn_name)
                for i, t in enumerate(ft.results):
                    if holds(t):
                        emit(op, f"function result #{i}", t, op.location, fn_name)
        else:
            for i, r in enumerate(op.results):
                t = r.type
                if holds(t):
                    emit(op, f"result #{i}", t, op.location, fn_name)
            if uses:
                for i, v in enumerate(op.operands):
                    t = v.type
                    if holds(t):
                        emit(op, f"operand #{i}", t, op.location, fn_name)
        for ri, region in enumerate(op.regions):
            for bi, block in enumerate(region.blocks):
                if not (name == "func.func" and ri == 0 and bi == 0):
                    for ai, arg in enumerate(block.arguments):
                        t = arg.type
                        if holds(t):
                            emit(op, f"region {ri} block {bi} argument #{ai}", t, arg.location, fn_name)
                for inner in block.operations:
                    work.append(inner.operation)


def find_64bit(module: ir.Module | ir.Operation, *, uses: bool = False) -> list[Finding]:
    """Return every value in ``module`` whose type holds a 64-bit element type.

    Args:
      module: An ``ir.Module`` (or its operation) from jaxlib's MLIR bindings.
      uses: Also list each operand that consumes a 64-bit value (the same
        value is then reported at its definition and at every use).

    Returns:
      Findings in walk order; empty when the module is 64-bit free.
    """
    root = _module_op(module)
    conv = TypeConverter()
    out: list[Finding] = []

    def emit(op: ir.Operation, role: str, t: ir.Type, loc: ir.Location, fn: str | None) -> None:
        out.append(Finding(op.name, role, str(t), decode_location(loc), fn))

    with root.context:
        _scan(root, conv, emit, uses)
    return out


def check(module: ir.Module | ir.Operation) -> None:
    """Raise :class:`~no64.errors.Remaining64BitError` if any 64-bit value remains.

    This is what a device without 64-bit types does with the module; it is a
    single walk with cached type lookups, cheap enough for every compile.
    """
    findings = find_64bit(module)
    if findings:
        shown = "\n  ".join(str(f) for f in findings[:20])
        more = f"\n  ... and {len(findings) - 20} more" if len(findings) > 20 else ""
        raise Remaining64BitError(
            f"{len(findings)} 64-bit value(s) remain in the module:\n  {shown}{more}", findings
        )
