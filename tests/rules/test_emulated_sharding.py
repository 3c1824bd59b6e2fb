"""``sdy.sharding_constraint`` of 64-bit integers carried as words
(``policy="exact"``), run on two CPU devices and compared bit for bit with
the 64-bit program: the constraint applies to each word as it applied to
the 64-bit value."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import no64
from no64.jax.reference import compare_with_reference


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_sharding_constraint_on_words_is_the_x64_programs(dtype: type, cpu_devices: list) -> None:
    """Values that need both words (the extremes, each word's sign bit, a
    carry between the words) through a sharding constraint: the same
    elements as the 64-bit program's, the constraint kept on both words."""
    info = np.iinfo(dtype)
    values = [info.max, info.min, 2**32, 2**32 - 1, 2**31, -(2**31) - 1, -1, 0]
    x = np.array([v % 2**64 for v in values], np.uint64).view(dtype)
    sharding = NamedSharding(Mesh(np.array(cpu_devices[:2]), ("x",)), PartitionSpec("x"))
    three = np.asarray(3, dtype)

    def fn(v: jax.Array) -> jax.Array:
        return lax.with_sharding_constraint(v * three + v, sharding) - v

    result = compare_with_reference(fn, [x], policy="exact")
    assert all(o.ok and o.exact for o in result.outputs)
    assert result.report.emulated_by_op.get("sdy.sharding_constraint") == 1
    text = str(result.demoted)
    assert text.count("sdy.sharding_constraint") == 2 and "mhlo.num_partitions = 2" in text
    assert no64.find_64bit(result.demoted) == []
