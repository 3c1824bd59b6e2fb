"""The carrier's driver: one head for every carried representation.

The walk, the hand-off of packed values to loops, branches and calls and
back, the application of an op's rule and the erasure of what it replaced
are written once, on :class:`~no64.transforms.carry.Carrier`; a
representation supplies hooks only (integer words, float64 pairs, and the
16-bit widening, whose rules retype each op in place).  The emitted modules
themselves are held by the golden cases (``test_golden.py``) and the
programs run against x64 (``tests/targets/test_widen16.py`` for the
widening).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from no64.kinds import Outputs
from no64.spec.registry import REGISTRY, OpSpec
from no64.targets import target
from no64.transforms.carry import Carrier, Leave
from no64.transforms.emulate import Emulation
from no64.transforms.pairs import PairEmulation, emulate_pairs
from no64.transforms.widen import Widening
from runner import compile_module
from support import ir, make_context

REPRESENTATIONS = [Emulation, PairEmulation, Widening]

#: What the driver owns: a representation that writes one of these writes
#: a second head.
DRIVER = ("run", "walk", "visit", "tie", "hand_back", "apply_rule", "compute_copied", "erase_replaced")


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=lambda c: c.__name__)
def test_a_representation_writes_no_driver(cls):
    assert issubclass(cls, Carrier)
    written = [name for name in DRIVER if any(name in k.__dict__ for k in cls.__mro__ if k is not Carrier
                                              and issubclass(k, Carrier))]
    assert written == []


@pytest.mark.parametrize("cls", REPRESENTATIONS, ids=lambda c: c.__name__)
def test_a_representation_names_its_rules_in_the_op_table(cls):
    fields = {f.name for f in dataclasses.fields(OpSpec)}
    assert cls.rule_field in fields
    ruled = [name for name, spec in REGISTRY.items() if getattr(spec, cls.rule_field) is not None]
    assert "stablehlo.add" in ruled
    # the driver hands a loop, branch, call or terminator over packed and
    # calls no rule for it
    assert not [n for n in ruled if REGISTRY[n].ties or REGISTRY[n].terminator]


MODULE = """
func.func private @twice(%x: tensor<3xf64>) -> tensor<3xf64> {
  %y = stablehlo.add %x, %x : tensor<3xf64>
  return %y : tensor<3xf64>
}
func.func public @main(%a: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xi32>) {
  %b = call @twice(%a) : (tensor<3xf64>) -> tensor<3xf64>
  %c = stablehlo.multiply %b, %a : tensor<3xf64>
  %i = stablehlo.iota dim = 0 : tensor<3xi32>
  return %c, %i : tensor<3xf64>, tensor<3xi32>
}
"""


@pytest.mark.parametrize("boundary, entry_leaves, outputs, result", [
    (Outputs.WORDS, Leave.PACKED, [0], "tensor<3x2xf32>"),
    (Outputs.NARROW, Leave.NARROW, [], "tensor<3xf64>"),
])
def test_the_entry_results_leave_as_the_caller_asks(boundary, entry_leaves, outputs, result):
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(MODULE)
        fns = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in m.body.operations}
        em = emulate_pairs(m.operation, boundary)
        assert em.leaves(fns["main"]) is entry_leaves
        assert em.leaves(fns["twice"]) is Leave.PACKED
        assert em.outputs == outputs
        main = ir.FunctionType(ir.TypeAttr(fns["main"].attributes["function_type"]).value)
        assert [str(t) for t in main.results] == [result, "tensor<3xi32>"]
        # the callee's result and the call's, one packed value, unpacked once
        assert str(ir.FunctionType(ir.TypeAttr(fns["twice"].attributes["function_type"]).value)) == \
            "(tensor<3x2xf32>) -> tensor<3x2xf32>"
        assert em.by_op == {"func.call": 1, "stablehlo.add": 1, "stablehlo.multiply": 1}
        assert m.operation.verify()


WIDE_MODULE = """
func.func private @square(%x: tensor<4xi16>) -> tensor<4xi16> {
  %y = stablehlo.multiply %x, %x : tensor<4xi16>
  return %y : tensor<4xi16>
}
func.func public @main(%a: tensor<4xi16>, %n: tensor<i32>) -> (tensor<4xi16>, tensor<i16>) {
  %w:2 = "stablehlo.while"(%n, %a) ({
  ^bb0(%i: tensor<i32>, %v: tensor<4xi16>):
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %p = stablehlo.compare GT, %i, %zero : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }, {
  ^bb0(%i: tensor<i32>, %v: tensor<4xi16>):
    %c = func.call @square(%v) : (tensor<4xi16>) -> tensor<4xi16>
    %s = stablehlo.subtract %c, %a : tensor<4xi16>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.subtract %i, %one : tensor<i32>
    stablehlo.return %j, %s : tensor<i32>, tensor<4xi16>
  }) : (tensor<i32>, tensor<4xi16>) -> (tensor<i32>, tensor<4xi16>)
  %z = stablehlo.constant dense<0> : tensor<i16>
  %r = stablehlo.reduce(%w#1 init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<4xi16>, tensor<i16>) -> tensor<i16>
  return %w#1, %r : tensor<4xi16>, tensor<i16>
}
"""


def test_the_widening_is_a_representation_of_the_driver():
    """The 16-bit widening on the driver: one 32-bit value per 16-bit value,
    handed to the loop and the call as it is, the private function retyped
    whole and the entry's signature kept (its results leave as 16-bit
    values); its rules (the op table's ``widen``) retype each op in place,
    erasing nothing, and wrap back what may leave the 16-bit range -- the
    program's results bit for bit (300 * 300, INT16_MIN * INT16_MIN, sums
    that wrap)."""
    a = np.array([300, -32768, 32767, 181], np.int16)
    n = np.array(3, np.int32)
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(WIDE_MODULE)
        want = compile_module(m, strict=False)([a, n])
        fns = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in m.body.operations}
        ops_before = sum(1 for _ in m.body.operations[1].regions[0].blocks[0].operations)
        wd = Widening(m.operation, target("neuron"))
        wd.run()
        assert wd.leaves(fns["main"]) is Leave.NARROW and wd.leaves(fns["square"]) is Leave.CARRIED
        assert str(ir.FunctionType(ir.TypeAttr(fns["square"].attributes["function_type"]).value)) == \
            "(tensor<4xi32>) -> tensor<4xi32>"
        assert str(ir.FunctionType(ir.TypeAttr(fns["main"].attributes["function_type"]).value)) == \
            "(tensor<4xi16>, tensor<i32>) -> (tensor<4xi16>, tensor<i16>)"
        # every op with a 16-bit value computed by its rule (the loop, the
        # call and the terminators handed over by the driver), none erased:
        # the entry gains its boundary converts, the wraps
        assert wd.by_op == {"stablehlo.multiply": 1, "stablehlo.subtract": 1, "stablehlo.constant": 1,
                            "stablehlo.reduce": 1, "stablehlo.add": 1}
        # (in program order, though the driver walks the loop's body after the reduce)
        assert [(name, detail) for name, _, detail in wd.fixes] == [
            ("stablehlo.multiply", "wrapped to 16 bits"), ("stablehlo.subtract", "wrapped to 16 bits"),
            ("stablehlo.reduce", "its sums wrapped to 16 bits")]
        # @square's argument and product; the loop's result and its regions'
        # arguments; the call's result; the difference; the constant; the
        # reduce's result, its body's arguments and its sum
        assert wd.retyped == 12
        # 16-bit values only at the entry's boundary: its signature, the
        # converts of its argument and results, its return
        narrow = [line.strip() for line in str(m).splitlines() if "i16" in line]
        assert len(narrow) == 5 and [line.split(" ")[0] for line in narrow] == [
            "func.func", "%0", "%5", "%6", "return"], narrow
        assert all("stablehlo.convert" in line for line in narrow[1:4]), narrow
        assert sum(1 for _ in m.body.operations[1].regions[0].blocks[0].operations) > ops_before
        assert m.operation.verify()
        got = compile_module(m, strict=False)([a, n])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype == np.int16
        np.testing.assert_array_equal(g, w)
