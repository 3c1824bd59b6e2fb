"""The ``iree-vulkan`` profile: IREE 3.13's Vulkan code (valhall, run on
Mesa's lavapipe) computes some reductions of several inputs wrong -- a
``reduce_window`` of any body, a ``reduce`` whose body adds -- and fails on
a ``reduce_window`` of several inputs with a dilated window.  So no64
writes sums of words there with one input (16-bit limbs,
:func:`no64.rules.wide.reduction`), cumulative reductions of words of other
bodies by doubling, and legalizing for the profile unfolds what is left of
several inputs into elementwise bodies: bit for bit the x64 program."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from support import ops_named

X = np.random.default_rng(7).integers(-(2**63), 2**63, size=(3, 300), dtype=np.int64)
X[0, :6] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1, 2**32, 2**31, -(2**31)]
X[1] = np.iinfo(np.int64).max  # every partial sum wraps


def _converted(fn, x):
    module = lower_x64(fn, x)
    (want,) = run_module(module, [x], strict=False)
    no64.demote(module, policy="exact", target="iree-vulkan")
    return module, want


def _run(module, x) -> np.ndarray:
    (got,) = run_module(module, [no64.split_words(x)])
    return no64.join_words(got)


def test_cumsum_of_words_is_one_window_of_one_input() -> None:
    module, want = _converted(lambda v: jnp.cumsum(v, axis=-1), X)
    (window,) = ops_named(module, "stablehlo.reduce_window")
    assert len(window.results) == 1  # the limbs stacked, summed in i32
    assert not check_target(module, target("iree-vulkan"))
    np.testing.assert_array_equal(_run(module, X), want)


def test_sum_of_words_is_one_reduce_of_one_input() -> None:
    module, want = _converted(lambda v: jnp.sum(v, axis=1), X)
    (reduce,) = ops_named(module, "stablehlo.reduce")
    assert len(reduce.results) == 1
    assert not check_target(module, target("iree-vulkan"))
    np.testing.assert_array_equal(_run(module, X), want)


def test_cumulative_maximum_is_doubled_and_unfolded() -> None:
    """A cumulative maximum of words (IREE computed one over rows of 200
    wrong) is doubled, whatever its length, and its two-element windows
    unfolded: no reduce_window is left."""
    module, want = _converted(lambda v: lax.cummax(v[:, :100], axis=1), X)
    refused = [f for f in check_target(module, target("iree-vulkan")) if f.kind == "refused"]
    assert len(refused) == 7  # windows 1, 2, ... 64 apart
    done = legalize(module, target("iree-vulkan"))
    assert len(done.rewritten) == 7 and not done.left
    assert not ops_named(module, "stablehlo.reduce_window")
    np.testing.assert_array_equal(_run(module, X), want)


def test_a_reduce_of_several_inputs_is_refused_only_where_it_adds() -> None:
    """JAX's own argmax (a reduce of value and index that compares) is kept;
    a reduce of two sums is unfolded, with its results."""
    profile = target("iree-vulkan")
    f = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    argmax = lower_x64(lambda v: jnp.argmax(v, axis=1).astype(jnp.int32), f)
    assert not [f for f in check_target(argmax, profile) if f.kind == "refused"]
    a = np.random.default_rng(2).integers(-(2**31), 2**31, size=(64, 64), dtype=np.int32)

    def two_sums(x, y):
        return lax.reduce((x, y), (np.int32(0), np.int32(0)), lambda p, q: (p[0] + q[0], p[1] + q[1]), (1,))

    module = lower_x64(two_sums, a, a[::-1])
    want = run_module(module, [a, a[::-1]], strict=False)
    (finding,) = check_target(module, profile)
    assert finding.op == "stablehlo.reduce" and "2 inputs" in finding.detail
    assert not legalize(module, profile).left and not check_target(module, profile)
    for got, w in zip(run_module(module, [a, a[::-1]]), want):
        np.testing.assert_array_equal(got, w)
    assert not ops_named(module, "stablehlo.reduce")
