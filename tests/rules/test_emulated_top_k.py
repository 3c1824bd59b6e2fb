"""``chlo.top_k`` of 64-bit keys carried as words (``policy="exact"``),
compared bit for bit with the 64-bit program on XLA's CPU backend: values
and indices, ties included."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax.reference import compare_with_reference


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_top_k_on_words_is_the_x64_programs(dtype: type) -> None:
    """``lax.top_k`` of 64-bit keys that need both words: values and
    indices as the 64-bit program gives them, ties in index order."""
    info = np.iinfo(dtype)
    rows = [
        [5, 2**40, 5, 2**40, 2**40 + 1, 2**32, 2**32 - 1, 0],  # ties, high word decides, low word decides
        [info.max, info.min, info.max, info.min, 1, 0, info.max - 1, info.min + 1],  # extremes, tied
        [-1, -(2**32), -(2**32) - 1, 2**31, -(2**31), 2**31 - 1, -1, 7],  # sign bit per word
        [3, 3, 3, 3, 3, 3, 3, 3],  # all tied
    ]
    x = np.array([[v % 2**64 for v in r] for r in rows], np.uint64).view(dtype)
    for k in (1, 3, 8):
        result = compare_with_reference(lambda v, k=k: jax.lax.top_k(v, k), [x], policy="exact")
        assert all(o.ok for o in result.outputs)
        assert result.report.emulated_by_op.get("chlo.top_k") == 1
        assert no64.find_64bit(result.demoted) == []
    # on a computed key (not an input): its words come from the op computing it
    result = compare_with_reference(lambda v: jax.lax.top_k(v * jnp.asarray(3, dtype) + v, 4)[1], [x],
                                    policy="exact")
    assert all(o.ok for o in result.outputs) and result.report.emulated_by_op.get("chlo.top_k") == 1
