"""no64.install(..., target=...): the compile hook checks modules against a named
device profile, in this process."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import no64


@pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning")
def test_install_takes_a_target(restore_global: None) -> None:
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        no64.install("cpu", target="nope")
    config = no64.install("cpu", target="neuron")
    assert config.target == "neuron"
    a = np.arange(8 * 64, dtype=np.int32).reshape(8, 64)
    with pytest.warns(no64.TargetWarning, match=r"neuron inexact \[EVRF035\]") as caught:
        got = jax.jit(lambda a: a @ a.T)(a)  # an int32 matmul: sums may pass 2**24
    assert any(w.filename == __file__ for w in caught)
    np.testing.assert_array_equal(np.asarray(got), a.astype(np.int64) @ a.T.astype(np.int64))
    no64.install("cpu", target="neuron", policy="strict")
    with pytest.raises(no64.TargetError, match="refuses .* for target 'neuron'"):
        jax.jit(lambda a: a @ a.T + 1)(a)
    no64.install("cpu")  # the platform's profile: generic, which refuses nothing here
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.TargetWarning)
        jax.jit(lambda a: a @ a.T + 2)(a)
