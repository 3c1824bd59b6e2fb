"""The pair probe: its expected words are IEEE f32's (the step-by-step model
of the algorithms), the CPU backend gives them, and a backend that gives
other words is refused with one line."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import no64
from no64.ir import pairs as P
from no64.jax import pair_probe as R
from no64.jax.reference import run_module
from no64.transforms import pair_probe as Q

sys.path.insert(0, str(Path(__file__).parents[1] / "rules"))
import pairs_model as M  # noqa: E402


def test_expected_words_are_the_models():
    xh, xl, yh, yl = Q.probe_inputs()
    n = len(xh)
    ch, cl = (np.full(n, v, np.float32) for v in P.split_f64(np.array([Q.PROBE_C])))
    ah, al = np.abs(xh), np.where(xh < 0, -xl, xl).astype(np.float32)
    outs = [*M.add(xh, xl, ch, cl), *M.mul(xh, xl, yh, yl), *M.div(xh, xl, ch, cl), *M.sqrt(ah, al)]
    want = np.stack([np.asarray(o, np.float32) for o in outs]).view(np.uint32)
    assert (Q.expected_words() == want).all()


def test_cpu_backend_passes():
    assert Q.check_words(run_module(Q.probe_text(), Q.probe_inputs())) is None
    device = jax.devices("cpu")[0]
    assert R.probe_result(jax.extend.backend.get_backend("cpu"), device) is None


def test_other_words_are_refused_with_one_line(monkeypatch):
    outs = run_module(Q.probe_text(), Q.probe_inputs())
    outs[3] = outs[3].copy()
    outs[3][5] = np.nextafter(outs[3][5], np.float32(1))  # a multiply's error term off by one ulp
    problem = Q.check_words(outs)
    assert problem is not None and problem.startswith("multiply lo of element 5")
    device = jax.devices("cpu")[0]
    monkeypatch.setitem(R._results, device.platform, problem)
    with pytest.raises(no64.PairArithmeticError) as exc:
        no64.jit(lambda x: x * 3.0, float_policy="pairs")(np.arange(4.0))
    assert "\n" not in str(exc.value) and "'cpu' backend" in str(exc.value)
