"""The pair probe: the CPU backend has every property the pair algorithms
rest on; a device whose f32 does not -- simulated on the CPU
(``simulated_device``): a stochastic rounding, a division or root further
off than its profile declares, a product fused into a sum or subnormals
kept where the profile says otherwise -- is refused with what failed and an
example, and so are outputs that break TwoSum, TwoProduct or a pair
operation's bound."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import no64
from no64.jax import pair_probe as R
from no64.jax.reference import run_module
from no64.targets import IEEE_ARITHMETIC, NEURON_ARITHMETIC, TPU_V5E_ARITHMETIC, Arithmetic, Target
from no64.transforms import pair_probe as Q
from support import ir, make_context

sys.path.insert(0, str(Path(__file__).parents[1] / "rules"))
from simulated_device import simulate  # noqa: E402


def _probe_on(arithmetic: Arithmetic, **device) -> str | None:
    """The probe's verdict on ``arithmetic`` where the CPU computes as the
    simulated ``device`` does."""
    with make_context():
        m = ir.Module.parse(Q.probe_text(arithmetic))
        simulate(m, **device)
        return Q.check(run_module(m, Q.probe_inputs(), strict=False), arithmetic)


def test_cpu_backend_passes():
    assert Q.check(run_module(Q.probe_text(), Q.probe_inputs())) is None
    device = jax.devices("cpu")[0]
    assert R.probe_result(jax.extend.backend.get_backend("cpu"), device) is None


def test_the_tpu_profile_passes_on_a_simulated_tpu():
    """Division within 2 ulps, square root within 3, subnormals flushed, no
    contraction: what the TPU v5e's f32 was measured to do."""
    assert _probe_on(TPU_V5E_ARITHMETIC, divide_ulp=2, sqrt_ulp=3, fma=False) is None


@pytest.mark.parametrize("arithmetic, device, said", [
    (TPU_V5E_ARITHMETIC, dict(divide_ulp=2, sqrt_ulp=3, fma=False, stochastic=True),
     "f32 addition does not round to nearest (stochastic rounding?): "),
    (NEURON_ARITHMETIC, dict(stochastic=True), "NEURON_RT_STOCHASTIC_ROUNDING_EN=0 keeps RNE"),
    (TPU_V5E_ARITHMETIC, dict(divide_ulp=100, sqrt_ulp=3, fma=False), "f32 division is 100 ulp off: "),
    (TPU_V5E_ARITHMETIC, dict(divide_ulp=2, sqrt_ulp=6, fma=False), "f32 square root is 6 ulp off: "),
    (TPU_V5E_ARITHMETIC, dict(divide_ulp=2, sqrt_ulp=3, fma=True),
     "a*b + c is contracted into a fused multiply-add: "),
    (IEEE_ARITHMETIC, dict(divide_ulp=2), "f32 division is 2 ulp off: "),
    (Arithmetic(flushes_subnormals=False), {}, "subnormal results are flushed, where the device's profile "
     "declares them kept: "),
], ids=["stochastic", "neuron-stochastic", "divide-100-ulp", "sqrt-6-ulp", "fma", "ieee-profile-2-ulp",
        "subnormals-declared-kept"])
def test_a_device_without_a_property_is_refused_with_an_example(arithmetic, device, said):
    problem = _probe_on(arithmetic, **device)
    assert problem is not None and said in problem, problem
    assert " gave " in problem  # the example
    assert "\n" not in problem


@pytest.mark.parametrize("output, said", [
    (1, "TwoSum is not exact: "),
    (3, "TwoProduct (Dekker's, from exact half-products) is not exact: "),
    (14, "pair divide of element 5 is "),
])
def test_outputs_breaking_an_error_free_transformation_or_a_bound_are_refused(output, said):
    outs = run_module(Q.probe_text(), Q.probe_inputs())
    outs[output] = outs[output].copy()
    i = 60 if output < 9 else 5
    outs[output][i] = np.nextafter(outs[output][i], np.float32(np.inf)) if output < 9 else outs[output][i] * 4
    problem = Q.check(outs)
    assert problem is not None and problem.startswith(said), problem


def test_a_declared_stochastic_rounding_is_refused_without_running():
    class NoBackend:
        def compile_and_load(self, *args, **kwargs):
            raise AssertionError("the probe ran")

    problem = R.probe_result(NoBackend(), jax.devices("cpu")[0], Arithmetic(rounding="stochastic"))
    assert problem == "its f32 rounds stochastically, which breaks TwoSum"


def test_jit_refuses_pairs_on_a_device_unlike_its_profile():
    """The CPU flushes subnormal results; a profile declaring them kept is
    refused at the first call, in one line naming the backend and what
    failed."""
    kept = Target("cpu-keeping-subnormals", "the CPU, declared to keep subnormals",
                  arithmetic=Arithmetic(flushes_subnormals=False))
    with pytest.raises(no64.PairArithmeticError) as exc:
        no64.jit(lambda x: x * 3.0, float_policy="pairs", target=kept)(np.arange(4.0))
    said = str(exc.value)
    assert "\n" not in said and "the 'cpu' backend does not give it: subnormal results are flushed" in said
