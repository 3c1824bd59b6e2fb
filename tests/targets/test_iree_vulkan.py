"""The ``iree-vulkan`` profile: IREE's SPIR-V code generation fails on a
``reduce_window`` of several inputs with a dilated window, which is what
no64's doubled cumulative sums of words are; legalizing for the profile
unfolds them into their bodies on slices, bit for bit the same."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize

X = np.random.default_rng(7).integers(-(2**63), 2**63, size=(3, 300), dtype=np.int64)
X[0, :6] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1, 2**32, 2**31, -(2**31)]


def _windows(module) -> list:
    found = []

    def walk(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name == "stablehlo.reduce_window":
                        found.append(inner.operation)
                    walk(inner.operation)

    walk(module.operation)
    return found


def test_doubled_cumsum_of_words_is_unfolded_and_bit_exact() -> None:
    module = lower_x64(lambda v: jnp.cumsum(v, axis=-1), X)
    no64.demote(module, policy="exact", target="iree-vulkan")
    profile = target("iree-vulkan")
    assert len(_windows(module)) == 9  # two words, windows 1, 2, 4, ... 256 apart
    refused = [f for f in check_target(module, profile) if f.kind == "refused"]
    assert len(refused) == 8  # what IREE would fail on: all but the first, not dilated
    done = legalize(module, profile)
    assert len(done.rewritten) == 8 and not done.left
    assert len(_windows(module)) == 1
    (got,) = run_module(module, [no64.split_words(X)])
    np.testing.assert_array_equal(no64.join_words(got), np.cumsum(X, axis=-1))


def test_a_window_that_is_not_dilated_is_kept() -> None:
    """A reduce_window of words whose window is not dilated (a short
    cumulative maximum: one window as long as the row) compiles: kept."""
    module = lower_x64(lambda v: lax.cummax(v[:, :100], axis=1), X)
    no64.demote(module, policy="exact", target="iree-vulkan")
    assert len(_windows(module)) == 1
    done = legalize(module, target("iree-vulkan"))
    assert not done.rewritten and len(_windows(module)) == 1
    (got,) = run_module(module, [no64.split_words(X)])
    np.testing.assert_array_equal(no64.join_words(got), np.maximum.accumulate(X[:, :100], axis=1))
