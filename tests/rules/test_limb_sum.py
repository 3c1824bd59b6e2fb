"""Sums of words written with one input, for a device that refuses a
reduction of several (Neuron; IREE's Vulkan code): the low word's 16-bit
halves and the high word stacked and summed in i32, joined with their
carries (``no64.rules.wide._limb_sum``).

Each program runs as the x64 program and as converted for the profile, bit
for bit, on inputs at the extremes (every partial sum wrapping), at random
64-bit values, and at the most terms the halves hold within 32 bits
(65,536 and an initial value) and one more, where the general form is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.targets import target
from no64.transforms.legalize import legalize
from support import ops_named

I64 = np.iinfo(np.int64)
EXTREMES = np.array([I64.max, I64.min, -1, 0, 1, 2**31 - 1, -(2**31), 2**32 - 1, 2**32, -(2**32), 2**62],
                    dtype=np.int64)


def _inputs(shape: tuple[int, ...], unsigned: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(shape))
    full = rng.integers(I64.min, I64.max, size=shape, dtype=np.int64, endpoint=True)
    full.reshape(-1)[: EXTREMES.size] = EXTREMES[: full.size]
    top = np.full(shape, -1 if unsigned else I64.max, dtype=np.int64)
    low = np.full(shape, 0xFFFFFFFF, dtype=np.int64)  # every low-word sum carries
    out = [full, top, low]
    return [x.view(np.uint64) for x in out] if unsigned else out


CASES: dict[str, tuple[Callable, tuple[int, ...], bool]] = {
    "cumsum": (lambda x: jnp.cumsum(x, axis=-1), (4, 257), False),
    "short cumsum": (lambda x: jnp.cumsum(x, axis=-1), (4, 5), False),
    "reverse cumsum": (lambda x: lax.cumsum(x, axis=0, reverse=True), (300, 3), False),
    "unsigned cumsum": (lambda x: jnp.cumsum(x), (600,), True),
    "row sum": (lambda x: jnp.sum(x, axis=1), (7, 1000), False),
    "column sum": (lambda x: jnp.sum(x, axis=0), (1000, 7), False),
    "sum of all": (lambda x: jnp.sum(x), (33, 40), False),
    "initial value": (lambda x: lax.reduce(x, np.int64(-(2**40) + 3), lax.add, (0,)), (9, 5), False),
    "strided padded window": (lambda x: lax.reduce_window(x, np.int64(0), lax.add, (3,), (2,), "SAME"), (101,),
                              False),
    "window, initial value": (lambda x: lax.reduce_window(x, np.int64(5), lax.add, (3,), (1,), "VALID"), (101,),
                              False),
    # rows along a first dimension of single-element windows are merged
    # with the three limbs (a 2-d scan); padded or reduced there, they are not
    "cumsum of a 3-d value": (lambda x: jnp.cumsum(x, axis=-1), (2, 3, 257), False),
    "sum of a 3-d value": (lambda x: jnp.sum(x, axis=(1, 2)), (5, 3, 4), False),
    "window padded along rows": (lambda x: lax.reduce_window(x, np.int64(0), lax.add, (1, 3), (1, 1),
                                                             ((1, 2), (1, 1))), (4, 9), False),
    "65,536 terms": (lambda x: jnp.sum(x, axis=0, dtype=jnp.uint64), (65536, 2), True),
    "65,537 terms": (lambda x: jnp.sum(x, axis=0, dtype=jnp.uint64), (65537, 2), True),
}


def _one_input(module, name: str) -> list[int]:
    """The number of inputs of each ``name`` op in ``module``."""
    return [len(op.results) for op in ops_named(module, name)]


@pytest.mark.parametrize("profile", ["neuron", "iree-vulkan"])
@pytest.mark.parametrize("case", list(CASES))
def test_sums_of_words_with_one_input(case: str, profile: str) -> None:
    fn, shape, unsigned = CASES[case]
    t = target(profile)
    for x in _inputs(shape, unsigned):
        module = lower_x64(fn, x)
        (want,) = run_module(module, [x], strict=False)
        name = "stablehlo.reduce_window" if "window" in case or "cumsum" in case else "stablehlo.reduce"
        no64.demote(module, policy="exact", target=t)
        inputs = _one_input(module, name)
        if case == "65,537 terms":
            assert inputs == [2]  # more than the halves hold: the general form (unfolded for the device)
        else:
            assert inputs == [1], inputs
        assert not legalize(module, t).left
        (got,) = run_module(module, [no64.split_words(x)])
        np.testing.assert_array_equal(no64.join_words(got).view(want.dtype), want)


def test_a_device_that_takes_several_inputs_keeps_the_word_pair() -> None:
    """Without such a refusal (XLA's CPU), a sum of words stays one reduce of
    the two words, and a long cumsum is doubled."""
    x = _inputs((7, 1000), False)[0]
    module = lower_x64(lambda v: jnp.sum(v, axis=1), x)
    no64.demote(module, policy="exact")
    assert _one_input(module, "stablehlo.reduce") == [2]
