"""Words handed over packed, forwarded where both ends are in one block.

The word emulation (:mod:`no64.transforms.emulate`) carries a 64-bit value
handed to a loop or a branch packed, as one ``S x 2`` tensor: a
concatenate of the two words, sliced out again where they are read.  A
compiler that forms kernels around elementwise ops (IREE's dispatch
regions) stops a kernel at each concatenate and each slice, and the
elementwise computation on either side can no longer be fused into one
kernel.  (Calls that would carry words are inlined before the emulation:
:mod:`no64.transforms.inline`; a compare-and-select through ``jnp.where``,
whose select JAX writes as a private function, ran as 8 kernels on IREE's
Vulkan target where the 64-bit program runs as 1.)

This step, run once the module holds no 64-bit type, undoes that where it
can, without changing what the module computes: in every block, a
``slice`` that takes exactly one operand of a
  ``concatenate`` back is that operand, a ``reshape`` or ``bitcast_convert``
  of a value of the result type is that value, and two in a row are one;
  the ops nothing reads any more are erased.

Every rule is an identity on the values (the same elements, in the same
order), so the module computes bit for bit what it computed before.
"""

from __future__ import annotations

from ..ir._mlir import as_operation as _as_op, defining_op, ir
from ..spec.registry import spec_of
from ..spec.walk import functions as _functions

__all__ = ["forward_words"]


def forward_words(root: ir.Operation) -> int:
    """Forward the packs and unpacks that meet in one block; returns the
    number of ops taken out of the module."""
    before = _count(root)
    for fn in _functions(root):
        _forward(fn)
    return before - _count(root)


def _count(root: ir.Operation) -> int:
    n = 0
    stack = [root]
    while stack:
        cur = stack.pop()
        for region in cur.regions:
            for block in region.blocks:
                for op in block.operations:
                    n += 1
                    stack.append(_as_op(op))
    return n


# ------------------------------------------------------------- forwarding
def _forward(fn: ir.Operation) -> None:
    """Forward the identities of the module docstring in every block of
    ``fn``, then erase the pure ops nothing reads."""
    blocks = []
    stack = [fn]
    while stack:
        cur = stack.pop()
        for region in cur.regions:
            for block in region.blocks:
                blocks.append(block)
                for op in block.operations:
                    stack.append(_as_op(op))
    for block in blocks:
        for op in list(block.operations):
            op = _as_op(op)
            if len(op.results) != 1:
                continue
            same = _same_as(op)
            if same is not None and same.type == op.results[0].type:
                op.results[0].replace_all_uses_with(same)
    for block in reversed(blocks):
        for op in reversed(list(block.operations)):
            op = _as_op(op)
            if len(op.regions) or not spec_of(op.name).pure or not len(op.results):
                continue
            if all(not any(True for _ in r.uses) for r in op.results):
                op.erase()


def _same_as(op: ir.Operation) -> ir.Value | None:
    """A value with the elements of ``op``'s result, read from what it reads
    (``None``: none found)."""
    name = op.name.rsplit(".", 1)[-1]
    if name in ("reshape", "bitcast_convert"):
        src = op.operands[0]
        if src.type == op.results[0].type:
            return src
        inner = defining_op(src)
        if inner is not None and _as_op(inner).name == op.name:
            first = _as_op(inner).operands[0]
            if first.type == op.results[0].type:
                return first
        return None
    if name == "slice":
        return _slice_of_concatenate(op)
    return None


def _slice_of_concatenate(op: ir.Operation) -> ir.Value | None:
    """The operand of a ``concatenate`` that a unit-stride ``slice`` takes
    back whole."""
    src = defining_op(op.operands[0])
    if src is None or _as_op(src).name.rsplit(".", 1)[-1] != "concatenate":
        return None
    cat = _as_op(src)
    dim = ir.IntegerAttr(cat.attributes["dimension"]).value
    start = list(ir.DenseI64ArrayAttr(op.attributes["start_indices"]))
    limit = list(ir.DenseI64ArrayAttr(op.attributes["limit_indices"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["strides"]))
    if any(s != 1 for s in strides):
        return None
    shape = list(ir.RankedTensorType(cat.results[0].type).shape)
    for d, (a, b) in enumerate(zip(start, limit)):
        if d != dim and (a != 0 or b != shape[d]):
            return None
    offset = 0
    for operand in cat.operands:
        extent = ir.RankedTensorType(operand.type).shape[dim]
        if start[dim] == offset and limit[dim] == offset + extent:
            return operand
        offset += extent
    return None
