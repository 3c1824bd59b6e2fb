"""no64.install(..., target=...): the compile hook makes modules exact on a named
device profile where it can, and checks them against it, in this process."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64


@pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning")
def test_install_takes_a_target(restore_global: None) -> None:
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        no64.install("cpu", target="nope")
    config = no64.install("cpu", target="neuron")
    assert config.target == "neuron"
    a = np.arange(8 * 64, dtype=np.int32).reshape(8, 64) * 40_000
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.TargetWarning)
        # an int32 matmul whose sums pass 2**24: split into limb dots, exact on the f32 engine
        got = jax.jit(lambda a: a @ a.T)(a)
        np.testing.assert_array_equal(np.asarray(got),
                                      (a.astype(np.int64) @ a.T.astype(np.int64)).astype(np.int32))
        # argmax's variadic reduce, unfolded into its body on halves: the same indices
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: jnp.argmax(a % 7, axis=1))(a)),
                                      np.argmax(a % 7, axis=1))
        # reduce_precision of f32, rounded on its bits with integer ops: 40_001 to bf16
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: jax.lax.reduce_precision(a + 40_001.0, 8, 7))(a)),
                                      (a + 40_001.0).astype(jnp.bfloat16).astype(np.float32))
    # an int32 top_k has no form Neuron compiles (EVRF013): a warning at its line
    with pytest.warns(no64.TargetWarning, match=r"neuron refused \[EVRF013\]: TopK rejects int32") as caught:
        jax.jit(lambda a: jax.lax.top_k(a, 2))(a)
    assert any(w.filename == __file__ for w in caught)
    no64.install("cpu", target="neuron", policy="strict")
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: a @ a.T + 1)(a)),
                                  (a.astype(np.int64) @ a.T.astype(np.int64) + 1).astype(np.int32))
    with pytest.raises(no64.TargetError, match="refuses .* for target 'neuron'"):
        jax.jit(lambda a: jax.lax.top_k(a * 2, 2))(a)
    no64.install("cpu")  # the platform's profile: generic, which refuses nothing here
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.TargetWarning)
        jax.jit(lambda a: jax.lax.top_k(a * 3, 2))(a)
