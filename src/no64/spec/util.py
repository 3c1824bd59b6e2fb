"""Small IR builders and edits shared by the rules."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..ir._compat import insertion_after
from ..ir._mlir import defining_op, int_attr, ir, stablehlo
from .registry import spec_of

__all__ = ["splat", "compare", "after", "erase_dead", "install_function", "int_array", "padding", "cumulative_window",
           "doubling_windows", "single_element_windows"]


def splat(t: ir.RankedTensorType, value: int) -> ir.Value:
    """A constant of integer tensor type ``t`` with every element ``value``
    (built at the current insertion point)."""
    return stablehlo.ConstantOp(
        ir.DenseElementsAttr.get_splat(t, int_attr(t.element_type, value))
    ).result


def compare(a: ir.Value, b: ir.Value, direction: str, compare_type: str) -> ir.Value:
    """``stablehlo.compare`` of ``a`` and ``b`` at the current insertion point."""
    return stablehlo.CompareOp(
        a,
        b,
        stablehlo.ComparisonDirectionAttr.get(direction),
        compare_type=stablehlo.ComparisonTypeAttr.get(compare_type),
    ).result


def int_array(op: ir.Operation, name: str, n: int, default: int) -> list[int]:
    """``op``'s integer array attribute ``name`` (``array<i64: ...>``), or
    ``n`` times ``default`` where it has none (a window's strides, dilations)."""
    if name not in op.attributes:
        return [default] * n
    return [int(v) for v in ir.DenseI64ArrayAttr(op.attributes[name])]


def padding(op: ir.Operation, n: int) -> list[list[int]]:
    """``op``'s ``padding`` (``[low, high]`` per dimension of ``n``), zeros
    where it has none."""
    if "padding" not in op.attributes:
        return [[0, 0] for _ in range(n)]
    return [[int(lo), int(hi)] for lo, hi in
            np.asarray(ir.DenseIntElementsAttr(op.attributes["padding"])).reshape(n, 2).tolist()]


def cumulative_window(op: ir.Operation, shape: list[int]) -> tuple[int, int, bool] | None:
    """``(axis, length, reverse)`` where the ``reduce_window`` ``op`` over an
    operand of ``shape`` is cumulative along one axis (``jnp.cumsum``,
    ``lax.cummax``, ...): one window as long as that axis, padded by one
    less in front -- or behind, for a reverse one --, every other window a
    single element, unit strides and dilations, nothing else padded; else
    ``None``.  (What it combines is the caller's to check.)"""
    rank = len(shape)
    window = int_array(op, "window_dimensions", rank, 1)
    if any(int_array(op, a, rank, 1) != [1] * rank for a in ("window_strides", "base_dilations", "window_dilations")):
        return None
    axes = [i for i, w in enumerate(window) if w != 1]
    if len(axes) != 1 or window[axes[0]] != shape[axes[0]]:
        return None
    axis, length = axes[0], shape[axes[0]]
    pad = padding(op, rank)
    if any(p != [0, 0] for i, p in enumerate(pad) if i != axis) or pad[axis] not in ([length - 1, 0], [0, length - 1]):
        return None
    return axis, length, pad[axis][0] == 0


def doubling_windows(rank: int, axis: int, length: int, reverse: bool) -> Iterator[dict[str, ir.Attribute]]:
    """The attributes of the ``ceil(log2(length))`` two-element
    ``reduce_window``s that compute a cumulative one (:func:`cumulative_window`)
    by doubling, in order: the step with distance ``d = 1, 2, 4, ...`` pads
    by ``d`` in front (behind, for a reverse one) with the initial value and
    combines each element with the one ``d`` away, so that after it each
    element combines the ``2d`` elements up to it."""
    i64 = ir.IntegerType.get_signless(64)
    d = 1
    while d < length:
        window = [1] * rank
        window[axis] = 2
        dilation = [1] * rank
        dilation[axis] = d
        pad = np.zeros((rank, 2), dtype=np.int64)
        pad[axis] = (0, d) if reverse else (d, 0)
        yield {
            "window_dimensions": ir.DenseI64ArrayAttr.get(window),
            "window_strides": ir.DenseI64ArrayAttr.get([1] * rank),
            "base_dilations": ir.DenseI64ArrayAttr.get([1] * rank),
            "window_dilations": ir.DenseI64ArrayAttr.get(dilation),
            "padding": ir.DenseIntElementsAttr.get(pad, type=ir.RankedTensorType.get([rank, 2], i64)),
        }
        d *= 2


def single_element_windows(op: ir.Operation, shape: list[int]) -> bool:
    """Whether every window of the ``reduce_window`` ``op`` over an operand
    of ``shape`` is one element of it, each element its own (window
    dimensions, strides and base dilations 1, nothing padded): its result
    is its operand, combined with the init."""
    rank = len(shape)
    return (all(int_array(op, a, rank, 1) == [1] * rank
                for a in ("window_dimensions", "window_strides", "base_dilations"))
            and all(p == [0, 0] for p in padding(op, rank)))


def after(op: ir.Operation) -> ir.InsertionPoint:
    """An insertion point right after ``op``."""
    return insertion_after(op)


def erase_dead(op: ir.Operation | None) -> None:
    """Erase ``op`` if none of its results is used, then, transitively, the
    producers of its operands that became unused.  Ops with regions,
    functions, calls and terminators are left alone."""
    work = [op]
    while work:
        cur = work.pop()
        if cur is None or len(cur.regions):
            continue
        spec = spec_of(cur.name)
        if spec.function or spec.call or spec.terminator:
            continue
        if any(True for r in cur.results for _ in r.uses):
            continue
        producers = [defining_op(v) for v in cur.operands]
        cur.erase()
        work.extend(producers)


def _module_block(op: ir.Operation) -> ir.Block:
    """The body of the module that holds ``op``."""
    cur = op.parent
    while cur is not None and cur.name != "builtin.module":
        cur = cur.parent
    assert cur is not None, "op outside a module"
    return cur.regions[0].blocks[0]


def install_function(op: ir.Operation, text: str, symbol: str) -> tuple[str, list[ir.Type]]:
    """The symbol and result types of a helper function in ``op``'s module:
    the one function of module ``text``, appended under ``symbol`` unless
    the module has it already.

    A function of that name and type is taken to be the helper (made by an
    earlier rewrite); on a clash with anything else the name gets a numeric
    suffix.
    """
    parsed = ir.Module.parse(text, op.context)  # owns new_fn until moved
    new_fn = parsed.body.operations[0].operation
    ftype = ir.FunctionType(ir.TypeAttr(new_fn.attributes["function_type"]).value)
    block = _module_block(op)
    taken: dict[str, ir.Operation] = {}
    for other in block.operations:
        other = other.operation
        if "sym_name" in other.attributes:
            taken[ir.StringAttr(other.attributes["sym_name"]).value] = other
    name, suffix = symbol, 0
    while name in taken:
        existing = taken[name]
        if (spec_of(existing.name).function
                and ir.TypeAttr(existing.attributes["function_type"]).value == ftype):
            return name, list(ftype.results)
        suffix += 1
        name = f"{symbol}.{suffix}"
    new_fn.attributes["sym_name"] = ir.StringAttr.get(name)
    new_fn.detach_from_parent()
    block.append(new_fn)
    return name, list(ftype.results)
