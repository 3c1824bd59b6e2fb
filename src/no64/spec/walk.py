"""IR helpers every layer uses: definitions, functions, calls and walks.

It knows MLIR's structure (modules, function symbols, regions); which op
is a function it reads from the op table's roles, and it knows nothing of
the analysis or the pass.
"""

from __future__ import annotations

from typing import Any

from ..ir._compat import as_attribute
from ..ir._mlir import as_operation, defining_op, ir
from .registry import Computes, spec_of

__all__ = [
    "module_op",
    "defining_op",
    "all_ops",
    "is_public",
    "symbol_name",
    "functions",
    "ENTRY_NAME",
    "entry_function",
    "entry_name",
    "callee_of",
    "enclosing_function",
    "combiner",
    "extremum",
]


def module_op(module: ir.Module | ir.Operation | Any) -> ir.Operation:
    """The operation of ``module`` (a module, an operation or an op view)."""
    if isinstance(module, ir.Module):
        return module.operation
    if isinstance(module, ir.Operation):
        return module
    op = getattr(module, "operation", None)
    if isinstance(op, ir.Operation):
        return op
    raise TypeError(f"expected an MLIR Module or Operation, got {type(module).__name__}")


def all_ops(root: ir.Operation) -> list[ir.Operation]:
    """Every op nested under ``root`` (not ``root`` itself), in pre-order.

    Uses the C++ walker, which hands back plain ``ir.Operation`` objects
    (no Python op-class construction): the fastest traversal the bindings
    offer.
    """
    ops: list[ir.Operation] = []
    append = ops.append
    advance = ir.WalkResult.ADVANCE

    def visit(op: ir.Operation) -> ir.WalkResult:
        append(op)
        return advance

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ops[1:] if ops and ops[0] == root else ops


def is_public(fn: ir.Operation) -> bool:
    """Whether the function ``fn`` is public (no visibility means public)."""
    if "sym_visibility" not in fn.attributes:
        return True
    return ir.StringAttr(fn.attributes["sym_visibility"]).value == "public"


def symbol_name(fn: ir.Operation) -> str:
    """The symbol name of ``fn``."""
    return ir.StringAttr(fn.attributes["sym_name"]).value


def functions(root: ir.Operation) -> list[ir.Operation]:
    """The functions at the top level of the module ``root``."""
    out = []
    for top in root.regions[0].blocks[0].operations:
        top = as_operation(top)
        if spec_of(top.name).function:
            out.append(top)
    return out


ENTRY_NAME = "main"


def entry_function(root: ir.Operation, *, strict: bool = False) -> ir.Operation | None:
    """The entry function of the module ``root``: the public function named
    ``main``, else the first public function; ``None`` when none is public.

    This is the one rule for a module's entry; a private ``main`` is not
    it.  ``strict``: ``None`` too when no public function is named ``main``
    and several are public (a caller that must not guess, such as one that
    runs the module).
    """
    first = None
    public = 0
    for fn in functions(root):
        if not is_public(fn):
            continue
        if symbol_name(fn) == ENTRY_NAME:
            return fn
        public += 1
        first = first or fn
    if strict and public > 1:
        return None
    return first


def entry_name(root: ir.Operation) -> str | None:
    """The symbol name of the entry function of ``root`` (see
    :func:`entry_function`); ``None`` when it has none."""
    fn = entry_function(root)
    return symbol_name(fn) if fn is not None else None


def callee_of(call: ir.Operation) -> ir.Operation | None:
    """The function a call calls, looked up in the module that holds the
    call; ``None`` if there is none."""
    sym = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    module = call
    while module.parent is not None:
        module = as_operation(module.parent)
    for fn in functions(module):
        if symbol_name(fn) == sym:
            return fn
    return None


def enclosing_function(op: ir.Operation) -> str | None:
    """Symbol name of the function that contains ``op`` (or is ``op``)."""
    cur: Any = op
    for _ in range(256):
        if cur is None:
            return None
        if spec_of(cur.name).function:
            name = as_attribute(cur.attributes["sym_name"], ir.StringAttr) if "sym_name" in cur.attributes else None
            return name.value if name is not None else None
        parent = cur.parent
        cur = parent.operation if parent is not None else None
    return None


def combiner(op: ir.Operation) -> Computes | None:
    """What ``op``'s body computes where it returns one op of its two
    arguments (a reduction's, a scatter's or a collective's combiner:
    ``Computes.ADD``, ``Computes.MAXIMUM``, ...), else ``None``."""
    if not len(op.regions) or not len(op.regions[0].blocks):
        return None
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    ret = list(block.operations)[-1]
    if len(args) != 2 or len(ret.operands) != 1:
        return None
    owner = ret.operands[0].owner
    if isinstance(owner, ir.Block):
        return None
    inner = owner.operation
    if len(inner.operands) != 2 or {inner.operands[0], inner.operands[1]} != set(args):
        return None
    return spec_of(inner.name).computes


def extremum(op: ir.Operation) -> str | None:
    """``"maximum"`` or ``"minimum"`` where ``op``'s body (one result) returns
    that of its two arguments, else ``None``."""
    computes = combiner(op)
    if computes is Computes.MAXIMUM:
        return "maximum"
    return "minimum" if computes is Computes.MINIMUM else None
