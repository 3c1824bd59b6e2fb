"""Words handed over packed, forwarded where both ends are in one block.

The word emulation (:mod:`no64.transforms.emulate`) carries a 64-bit value
across a function boundary packed, as one ``S x 2`` tensor: the caller
concatenates the two words, the callee slices them out again.  A compiler
that forms kernels around elementwise ops (IREE's dispatch regions) stops a
kernel at each concatenate and each slice: an ``S x 2`` value handed to a
private function costs a copy kernel on each side, and the elementwise
computation on either side can no longer be fused into one kernel (a
compare-and-select through ``jnp.where``, whose select JAX writes as a
private function, ran as 8 kernels where the 64-bit program runs as 1).

This step, run once the module holds no 64-bit type, undoes that where it
can, without changing what the module computes:

* each call of a private function that takes or returns packed words is
  inlined (its body moved, or copied where the function has other callers,
  in place of the call; a function no longer called is erased);
* then, in every block, a ``slice`` that takes exactly one operand of a
  ``concatenate`` back is that operand, a ``reshape`` or ``bitcast_convert``
  of a value of the result type is that value, and two in a row are one;
  the ops nothing reads any more are erased.

Every rule is an identity on the values (the same elements, in the same
order), so the module computes bit for bit what it computed before.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..ir._mlir import as_operation as _as_op, defining_op, ir
from ..spec.registry import spec_of
from ..spec.walk import functions as _functions, is_public as _is_public, symbol_name as _sym

__all__ = ["forward_words"]


def forward_words(root: ir.Operation, carried: Iterable[str]) -> int:
    """Inline the calls of the private functions named in ``carried`` (those
    whose signature carries packed words) and forward the packs and unpacks
    that then meet; returns the number of ops taken out of the module."""
    funcs = {_sym(fn): fn for fn in _functions(root)}
    inlined = [funcs[name] for name in carried if name in funcs and not _is_public(funcs[name])]
    targets = {_sym(fn) for fn in inlined if _inlinable(fn)}
    before = _count(root)
    if targets:
        _inline_calls(root, targets, funcs)
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


def _inlinable(fn: ir.Operation) -> bool:
    """A function of one block (what StableHLO's functions are)."""
    return len(fn.regions) == 1 and len(list(fn.regions[0].blocks)) == 1


def _calls(root: ir.Operation, targets: set[str]) -> list[ir.Operation]:
    """The calls of ``targets``, outside those functions themselves."""
    out = []
    for fn in _functions(root):
        if _sym(fn) in targets:
            continue
        stack = [fn]
        while stack:
            cur = stack.pop()
            for region in cur.regions:
                for block in region.blocks:
                    for op in block.operations:
                        op = _as_op(op)
                        if spec_of(op.name).call and _callee(op) in targets:
                            out.append(op)
                        stack.append(op)
    return out


def _callee(call: ir.Operation) -> str | None:
    if "callee" not in call.attributes:
        return None
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def _inline_calls(root: ir.Operation, targets: set[str], funcs: dict[str, ir.Operation]) -> None:
    # A callee may call another target: inline until no call is left (each
    # round moves calls one level up; functions do not recurse).
    for _ in range(len(targets) + 1):
        calls = _calls(root, targets)
        if not calls:
            break
        remaining = {name: sum(1 for c in calls if _callee(c) == name) for name in targets}
        for call in calls:
            name = _callee(call)
            assert name is not None
            remaining[name] -= 1
            fn = funcs[name]
            # the last call takes the body itself, the others a copy
            body_of = fn if remaining[name] == 0 else fn.clone()
            _inline(call, body_of)
            if body_of is not fn:
                body_of.erase()
    for name in targets:
        if not _calls(root, {name}) and not _called_anywhere(root, name):
            funcs[name].erase()


def _called_anywhere(root: ir.Operation, name: str) -> bool:
    stack = [root]
    while stack:
        cur = stack.pop()
        for region in cur.regions:
            for block in region.blocks:
                for op in block.operations:
                    op = _as_op(op)
                    if spec_of(op.name).call and _callee(op) == name:
                        return True
                    stack.append(op)
    return False


def _inline(call: ir.Operation, fn: ir.Operation) -> None:
    """Move the body of ``fn`` in place of ``call`` (``fn`` is left empty of
    ops but for its terminator)."""
    block = fn.regions[0].blocks[0]
    ops = [_as_op(op) for op in block.operations]
    ret = ops[-1]
    for arg, operand in zip(block.arguments, call.operands):
        arg.replace_all_uses_with(operand)
    site = call.location
    for op in ops[:-1]:
        op.move_before(call)
        _at_call_site(op, site)
    for result, value in zip(call.results, ret.operands):
        result.replace_all_uses_with(value)
    call.erase()


def _at_call_site(op: ir.Operation, site: ir.Location) -> None:
    """Give ``op`` and the ops in its regions their location as called from
    ``site`` (as MLIR's inliner does): a report or a named scope of the
    caller still finds them."""
    stack = [op]
    while stack:
        cur = stack.pop()
        cur.location = ir.Location.callsite(cur.location, [site])
        for region in cur.regions:
            for block in region.blocks:
                stack.extend(_as_op(inner) for inner in block.operations)


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
