"""Ops folded as they are built (``no64.ir.fold``) compute what the op computes.

Each case is an op of the word emulation's 32-bit vocabulary, built twice
in one module: as the op itself (``words.build``, never folded) and by
``words.make``, which builds what ``fold`` answers for it.  XLA's CPU backend runs the module and every
folded result must equal its op's, bit for bit:

* every binary op on every pair of splat constants drawn from the edges of
  ``ui32``, ``i32`` and ``i1`` (0, 1, the sign bit, all ones, the shift
  widths 31/32/33 and 63/64, 16-bit halves) -- the constant is computed here;
* every compare direction, with the element type's compare type and without
  one (the other type, which StableHLO leaves undefined, is not folded);
* the converts between ``ui32`` and ``i32`` and from ``i1``, and the
  bitcasts (a convert to ``i1``, where XLA releases differ, is not folded);
* each identity with one constant operand (``x + 0``, ``x & ~0``,
  ``x << 32``, ...) and a select by a constant predicate, on inputs that
  hold those edges -- the folded value is the other operand or a constant.

The test also counts the folds, so that it fails if nothing was folded.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from no64.ir import words as W
from no64.ir.fold import fold, splat_int
from runner import compile_module
from support import ir, make_context

EDGES = [0, 1, 2, 31, 32, 33, 63, 64, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]
BINARY = ["add", "subtract", "multiply", "and", "or", "xor", "shift_left", "shift_right_logical",
          "shift_right_arithmetic", "minimum", "maximum"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]
N = len(EDGES)


def _elem(name: str) -> ir.Type:
    return {"ui32": W.u32(), "i32": W.i32(), "i1": ir.IntegerType.get_signless(1)}[name]


def _tensor(elem: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([N], elem)


def _splat(elem: ir.Type, bits: int) -> ir.Value:
    t = _tensor(elem)
    width = ir.IntegerType(elem).width
    value = bits if ir.IntegerType(elem).is_unsigned or width == 1 else bits - ((bits >> (width - 1)) << width)
    return W.build("constant", [], [t], value=ir.DenseElementsAttr.get_splat(
        t, ir.IntegerAttr.get(elem, value))).results[0]


def _compare_attrs(direction: str, kind: str | None) -> dict[str, ir.Attribute]:
    attrs = {"comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>")}
    if kind is not None:
        attrs["compare_type"] = ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>")
    return attrs


class Cases:
    """The module under construction: each case adds the op's result and the
    folded one as two results of the entry function."""

    def __init__(self) -> None:
        self.results: list[tuple[ir.Value, ir.Value]] = []
        self.names: list[str] = []
        self.folded = 0

    def add(self, what: str, name: str, operands: list[ir.Value], result: ir.Type,
            attrs: dict[str, ir.Attribute] | None = None, must_fold: bool = False) -> None:
        attrs = attrs or {}
        built = W.build(name, operands, [result], **attrs).results[0]
        if fold(name, operands, result, attrs) is None:
            assert not must_fold, what
            return
        self.folded += 1
        self.results.append((built, W.make(name, operands, result, **attrs)))
        self.names.append(what)


def _module(build: Callable[[Cases, list[ir.Value]], None]) -> tuple[ir.Module, Cases]:
    ctx = make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(
            f"func.func @main(%x: tensor<{N}xui32>, %y: tensor<{N}xi32>, %p: tensor<{N}xi1>) {{\n  return\n}}")
        fn = module.body.operations[0]
        block = fn.regions[0].blocks[0]
        ret = block.operations[0]
        cases = Cases()
        with ir.InsertionPoint(ret):
            build(cases, list(block.arguments))
            flat = [v for pair in cases.results for v in pair]
            ir.Operation.create("func.return", operands=flat)
        ret.erase()
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in flat]))
        assert module.operation.verify()
    return module, cases


def _run(module: ir.Module, cases: Cases) -> None:
    x = np.array(EDGES, np.uint32)
    inputs = [x, x.view(np.int32), (x & 1).astype(np.bool_)]
    outs = compile_module(module, strict=False)(inputs)
    assert len(outs) == 2 * len(cases.names)
    for k, what in enumerate(cases.names):
        np.testing.assert_array_equal(outs[2 * k + 1], outs[2 * k], err_msg=what)


@pytest.mark.parametrize("elem_name", ["ui32", "i32"])
def test_constants_fold_as_the_ops_compute(elem_name: str) -> None:
    def build(cases: Cases, args: list[ir.Value]) -> None:
        elem = _elem(elem_name)
        t = _tensor(elem)
        for a, b in itertools.product(EDGES, EDGES):
            ca, cb = _splat(elem, a), _splat(elem, b)
            for name in BINARY:
                cases.add(f"{name} {elem_name} {a:#x} {b:#x}", name, [ca, cb], t, must_fold=True)
            bool_t = _tensor(_elem("i1"))
            own, other = ("SIGNED", "UNSIGNED") if elem_name == "i32" else ("UNSIGNED", "SIGNED")
            for direction, kind in itertools.product(DIRECTIONS, [own, None]):
                cases.add(f"compare {direction} {kind} {elem_name} {a:#x} {b:#x}", "compare", [ca, cb], bool_t,
                          _compare_attrs(direction, kind), must_fold=True)
            # the other type is not the elements' (StableHLO's C3): not folded
            assert fold("compare", [ca, cb], bool_t, _compare_attrs("LT", other)) is None
        for a in EDGES:
            ca = _splat(elem, a)
            for name in ("not", "negate"):
                cases.add(f"{name} {elem_name} {a:#x}", name, [ca], t, must_fold=True)
            for to in ("ui32", "i32"):
                if to != elem_name:
                    cases.add(f"convert {elem_name}->{to} {a:#x}", "convert", [ca], _tensor(_elem(to)),
                              must_fold=True)
            # to i1 (nonzero is true in StableHLO, the low bit in older XLA): not folded
            assert fold("convert", [ca], _tensor(_elem("i1")), {}) is None
            other = "i32" if elem_name == "ui32" else "ui32"
            cases.add(f"bitcast {elem_name}->{other} {a:#x}", "bitcast_convert", [ca], _tensor(_elem(other)),
                      must_fold=True)

    module, cases = _module(build)
    assert cases.folded > 3000
    _run(module, cases)


def test_booleans_fold_as_the_ops_compute() -> None:
    def build(cases: Cases, args: list[ir.Value]) -> None:
        i1 = _elem("i1")
        t = _tensor(i1)
        for a, b in itertools.product([0, 1], [0, 1]):
            ca, cb = _splat(i1, a), _splat(i1, b)
            for name in ("and", "or", "xor", "minimum", "maximum"):
                cases.add(f"{name} i1 {a} {b}", name, [ca, cb], t, must_fold=True)
            for direction, kind in itertools.product(DIRECTIONS, ["UNSIGNED", None]):
                cases.add(f"compare {direction} {kind} i1 {a} {b}", "compare", [ca, cb], t,
                          _compare_attrs(direction, kind), must_fold=True)
            cases.add(f"not i1 {a}", "not", [ca], t, must_fold=True)
            for to in ("ui32", "i32"):
                cases.add(f"convert i1->{to} {a}", "convert", [ca], _tensor(_elem(to)), must_fold=True)

    module, cases = _module(build)
    _run(module, cases)


def test_identities_take_the_other_operand() -> None:
    """One constant operand: an identity folds to the other operand or a
    constant; a select by a constant predicate to the operand it picks."""
    identities = {"add": [0], "subtract": [0], "multiply": [0, 1], "and": [0, 0xFFFFFFFF], "or": [0, 0xFFFFFFFF],
                  "xor": [0], "shift_left": [0, 32, 33, 0xFFFFFFFF], "shift_right_logical": [0, 32, 64],
                  "shift_right_arithmetic": [0]}

    def build(cases: Cases, args: list[ir.Value]) -> None:
        x, y, p = args
        for v in (x, y):
            elem = ir.RankedTensorType(v.type).element_type
            for name, constants in identities.items():
                for c in constants:
                    cv = _splat(elem, c)
                    cases.add(f"{name} x {c:#x} ({elem})", name, [v, cv], v.type, must_fold=True)
                    if name in ("add", "multiply", "and", "or", "xor"):
                        cases.add(f"{name} {c:#x} x ({elem})", name, [cv, v], v.type, must_fold=True)
            for c in (0, 1):
                cases.add(f"select {c} ({elem})", "select", [_splat(_elem("i1"), c), v, W.make("not", [v], v.type)],
                          v.type, must_fold=True)
        cases.add("select p x x", "select", [p, x, x], x.type, must_fold=True)
        # not identities: left to the op
        kept = [("subtract", [_splat(W.u32(), 0), x]), ("shift_right_arithmetic", [y, _splat(W.i32(), 40)]),
                ("shift_left", [_splat(W.u32(), 0), x]), ("add", [x, _splat(W.u32(), 1)]),
                ("select", [p, x, W.make("not", [x], x.type)])]
        for name, operands in kept:
            assert fold(name, operands, operands[-1].type, {}) is None, name

    module, cases = _module(build)
    _run(module, cases)


def test_splat_constants_are_read_through_broadcasts_reshapes_and_bitcasts() -> None:
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(f"func.func @main(%x: tensor<{N}xui32>) {{\n  return\n}}")
        fn = module.body.operations[0]
        block = fn.regions[0].blocks[0]
        with ir.InsertionPoint(block.operations[0]):
            t0 = ir.RankedTensorType.get([], W.u32())
            attr = ir.DenseElementsAttr.get_splat(t0, ir.IntegerAttr.get(W.u32(), 0xFFFFFFFF))
            scalar = W.build("constant", [], [t0], value=attr).results[0]
            wide = W.build("broadcast_in_dim", [scalar], [ir.RankedTensorType.get([2, 4], W.u32())],
                           broadcast_dimensions=ir.DenseI64ArrayAttr.get([])).results[0]
            flat = W.build("reshape", [wide], [ir.RankedTensorType.get([8], W.u32())]).results[0]
            dense = W.const([2], np.array([1, 2], np.uint32))
            assert splat_int(scalar) == splat_int(wide) == splat_int(flat) == 0xFFFFFFFF
            assert splat_int(dense) is None and splat_int(block.arguments[0]) is None
            as_i32 = W.build("bitcast_convert", [flat], [ir.RankedTensorType.get([8], W.i32())]).results[0]
            assert fold("negate", [as_i32], as_i32.type, {}) == 1
            assert splat_int(W.make("negate", [as_i32], as_i32.type)) == 1
