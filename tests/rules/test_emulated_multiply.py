"""64-bit multiplies on words, bit for bit against the 64-bit program.

The low word of a product is the 32-bit product of the low words; the high
word sums the 16-bit partial products (``words.mul_wide32``), and where one
factor is a constant its halves are constants, so the emulation writes
fewer ops (``no64.ir.fold``; a constant below ``2**16`` has no high half at
all).  Every path is run here: full-range products of two values, and
products by constants at the edges of each shortcut (0, 1, below and at
``2**16``, ``2**32 - 1``, beyond 32 bits, negative), with the constant
first and second.  The operands are 64-bit values given word by word over
the whole range, carrying into every half: all ones, ``INT64_MIN``,
``0xFFFF`` patterns and random bits.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from no64.jax.reference import compare_with_reference

CONSTANTS = [0, 1, 3, 0xFFFF, 0x10000, 0x10001, 0xFFFFFFFF, 2**32, 2**32 + 3, 0x9E3779B97F4A7C15 - 2**64,
             -1, -3, -(2**63)]


def _operands(rng: np.random.Generator) -> np.ndarray:
    edges = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, 0xFFFF, 0xFFFF_FFFF, 0xFFFF_0000_FFFF_0000, 0x0000_FFFF_0000_FFFF,
             0xFFFF_FFFF_0000_0000, 2**32, 2**48 - 1, 0x8000_8000_8000_8000]
    return np.concatenate([np.array(edges, np.uint64), rng.integers(0, 2**64 - 1, 51, dtype=np.uint64, endpoint=True)])


def _words(v: np.ndarray) -> list[np.ndarray]:
    return [(v >> np.uint64(32)).astype(np.uint32).view(np.int32),
            (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)]


def _joined(hi, lo, dtype):
    return (hi.astype(dtype) << 32) | lo.astype(jnp.uint32).astype(dtype)


@pytest.mark.parametrize("dtype", [jnp.int64, jnp.uint64], ids=["signed", "unsigned"])
def test_products_of_constants_either_side_and_of_two_values(dtype, rng: np.random.Generator) -> None:
    x = _operands(rng)
    y = np.roll(x, 7) ^ rng.integers(0, 2**64 - 1, x.size, dtype=np.uint64, endpoint=True)

    def fn(xh, xl, yh, yl):
        a, b = _joined(xh, xl, dtype), _joined(yh, yl, dtype)
        out = [a * b]
        for c in CONSTANTS:
            k = jnp.asarray(np.array(c % 2**64, np.uint64).view(np.int64) if dtype == jnp.int64 else c % 2**64, dtype)
            out += [a * k, lax.mul(k, a)]
        return out

    result = compare_with_reference(fn, [*_words(x), *_words(y)], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert len(result.outputs) == 1 + 2 * len(CONSTANTS)
    assert result.report.emulated_by_op.get("stablehlo.multiply", 0) >= len(result.outputs) - 2
