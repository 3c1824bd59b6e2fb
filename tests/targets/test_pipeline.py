"""no64.transforms.pipeline: demote -> legalize -> target check, composed once for
``no64 convert`` and the compile hook, under one Options: the declared input ranges
reach every step, a copy is legalized only where something is to be rewritten, and
the policy decides whether what the target still refuses is refused."""

from __future__ import annotations

import numpy as np
import pytest
from test_legalize import TOO_LONG, dots
from test_targets import lowered

import no64
from no64.kinds import Verdict
from no64.options import Options
from no64.targets import target
from no64.transforms.pipeline import Pipeline, constrains
from runner import compare_on_adversarial_inputs
from support import ir, make_context

NEURON = target("neuron")
#: Operands within +-1000: 512 products sum within int32, beyond f32's 2**24.
SMALL = {0: (-1000, 1000), 1: (-1000, 1000)}


def _matmul(x64: bool) -> ir.Module:
    dtype = np.int64 if x64 else np.int32
    return lowered(lambda a, b: a @ b, np.zeros((4, 512), dtype), np.zeros((512, 3), dtype), x64=x64)


def test_run_demotes_legalizes_and_checks_under_the_declared_ranges() -> None:
    """An int64 matmul with declared operand ranges: demoted to int32 (proven to fit),
    its dot split into limb dots exact on Neuron's f32 engine, nothing left for the
    target check; the converted program gives the x64 program's results on the
    ranges' extremes."""
    original = _matmul(x64=True)
    m = ir.Module.parse(str(original), make_context())
    done = Pipeline(Options(target="neuron", input_ranges=SMALL)).run(m)
    assert done.module is m and done.report.verdicts.get(Verdict.UNPROVEN, 0) == 0
    assert done.target is not None and done.target.findings == [] and not done.target.refused
    (rewritten,) = done.target.legalized.rewritten
    assert rewritten.ops == len(dots(m)) > 1
    compare_on_adversarial_inputs(original, m, SMALL, "pipeline on neuron")


def test_the_declared_ranges_reach_the_target_step() -> None:
    """Operands declared within [-8, 7]: the 32-bit dot is proven exact on Neuron's
    datapath and left; without the declaration it is split."""
    ranged = Pipeline(Options(target="neuron", input_ranges={0: (-8, 7), 1: (-8, 7)}))
    m = _matmul(x64=False)
    checked = ranged.check_target(m)
    assert not checked.legalized.changed and checked.findings == [] and len(dots(m)) == 1
    checked = Pipeline(Options(target="neuron")).check_target(m)
    assert checked.legalized.changed and len(dots(m)) > 1


def test_a_copy_is_legalized_only_where_something_may_be_rewritten() -> None:
    """With ``copy``, the module given is left as it was: the copy is the one
    legalized and returned; a copy in which nothing was rewritten (a dot proven
    exact) is dropped, and a module with nothing to rewrite is not copied."""
    copies: list[ir.Module] = []

    def copy(m: ir.Module) -> ir.Module:
        copies.append(ir.Module.parse(str(m), m.context))
        return copies[-1]

    pipeline = Pipeline(Options(target="neuron"))
    m = _matmul(x64=False)
    before = str(m)
    checked = pipeline.check_target(m, copy=copy)
    assert str(m) == before and checked.module is copies[0] and len(dots(checked.module)) > 1
    a, b = np.zeros((4, 128), np.int32), np.zeros((128, 3), np.int32)
    masked = lowered(lambda a, b: (a & 15) @ (b & 15), a, b)
    checked = pipeline.check_target(masked, copy=copy)
    assert checked.module is masked and len(copies) == 2 and checked.findings == []
    plain = lowered(lambda a, b: a + 1, a, b)
    assert pipeline.check_target(plain, copy=copy).module is plain and len(copies) == 2


def test_the_policy_decides_a_refusal() -> None:
    """A dot with no exact form (over 2**24 terms) is a finding: under the default
    policy the chain returns it, under strict it refuses with the first finding in
    words, why no64 left it, and how many more."""
    m = ir.Module.parse(TOO_LONG, make_context())
    done = Pipeline(Options(target="neuron")).run(m)
    assert done.target is not None and not done.target.refused
    (finding,) = done.target.findings
    assert "no64 cannot make it exact: a contraction over 16777217" in done.target.explain(finding)
    m = ir.Module.parse(TOO_LONG, make_context())
    with pytest.raises(no64.TargetError, match=r"^target neuron \(policy strict\): stablehlo.dot_general at .*"
                       "no64 cannot make it exact"):
        Pipeline(Options(target="neuron", policy="strict")).run(m)
    assert done.target.refusal("subject", source=True).args[0].endswith(f"; source: {finding.source}")


def test_a_profile_that_constrains_nothing_is_not_walked() -> None:
    """``generic`` refuses, narrows and widens nothing: the target step returns the
    module as it is, with nothing rewritten and nothing found; without a target the
    chain is the pass alone."""
    generic = target("generic")
    assert not constrains(generic) and constrains(NEURON)
    m = ir.Module.parse(TOO_LONG, make_context())
    checked = Pipeline(Options()).check_target(m, generic)
    assert checked.module is m and checked.findings == [] and not checked.legalized.rewritten
    assert Pipeline(Options()).run(m).target is None
    with pytest.raises(ValueError, match="needs a profile"):
        Pipeline(Options()).check_target(m)
