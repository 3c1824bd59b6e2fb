"""The carrier's driver: one head for every carried representation.

The walk, the hand-off of packed values to loops, branches and calls and
back, the application of an op's rule and the erasure of what it replaced
are written once, on :class:`~no64.transforms.carry.Carrier`; a
representation supplies hooks only.  The emitted modules themselves are
held by the golden cases (``test_golden.py``) and the programs run
against x64.
"""

from __future__ import annotations

import dataclasses

import pytest

from no64.kinds import Outputs
from no64.spec.registry import REGISTRY, OpSpec
from no64.transforms.carry import Carrier, Leave
from no64.transforms.emulate import Emulation
from no64.transforms.pairs import PairEmulation, emulate_pairs
from support import ir, make_context

REPRESENTATIONS = [Emulation, PairEmulation]

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
