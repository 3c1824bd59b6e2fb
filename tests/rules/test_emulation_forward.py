"""Packed words forwarded across private functions, and sorts of words
whose operands are computed (:mod:`no64.transforms.forward`,
:func:`no64.rules.wide.sort`).

A private function that takes or returns 64-bit values on words is inlined
once the module is converted, and the concatenate that packed an argument
meets the slice that unpacks it: both go.  Each program is compared bit for
bit with the 64-bit program on the CPU, on inputs over the whole int64
range (64-bit inputs enter as words).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import compare_with_reference

I64 = np.iinfo(np.int64)
X = np.array([0, 1, -1, 2**31 - 1, -(2**31), 2**32, -(2**32) - 1, I64.max, I64.min, I64.max - 1,
              I64.min + 1, 0x0123456789ABCDEF, -0x0123456789ABCDEF, 3_000_000_007], dtype=np.int64)
Y = np.roll(X, 5)


def _walk_ops(module) -> list:
    out = []

    def walk(op) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    out.append(inner.operation)
                    walk(inner.operation)

    walk(module.operation)
    return out


def _ops(module) -> list[str]:
    return [op.name for op in _walk_ops(module)]


@jax.jit
def _twice(a, b):
    return a * 3 - b


PROGRAMS = {
    # jnp.where is a private function: its select runs in the caller
    "where": (lambda x, y: jnp.where(x < y, x * 3, y - x), (X, Y)),
    "where_unsigned": (lambda x, y: jnp.where(x.astype(jnp.uint64) > y.astype(jnp.uint64), x ^ y, x + y),
                       (X, Y)),
    # one private function called twice (a copy inlined, then the body)
    "called_twice": (lambda x, y: _twice(x, y) + _twice(y, x), (X, Y)),
    # nested private functions
    "nested": (lambda x, y: jnp.clip(jnp.where(x > 0, x, y), -(2**40), 2**40), (X, Y)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_private_functions_on_words_are_inlined_and_bit_exact(name: str) -> None:
    fn, args = PROGRAMS[name]
    result = compare_with_reference(fn, list(args), policy="exact")
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    ops = _ops(result.demoted)
    assert "func.call" not in ops
    assert ops.count("func.func") == 1
    # the entry's words are sliced out once per input and word; nothing is
    # packed again but the result
    assert "stablehlo.concatenate" not in ops
    assert ops.count("stablehlo.slice") == 2 * len(args)


def test_a_loop_still_carries_its_words_packed() -> None:
    """Forwarding stays inside a block: a loop's carried words cross its
    boundary as one tensor, packed and unpacked on each side."""
    fn = lambda x: lax.fori_loop(0, 3, lambda i, acc: acc * 3 + x, x)  # noqa: E731
    result = compare_with_reference(fn, [X], policy="exact")
    assert all(o.ok for o in result.outputs)
    ops = _ops(result.demoted)
    assert "stablehlo.while" in ops and "stablehlo.concatenate" in ops


@pytest.mark.parametrize("key", ["signed", "unsigned"])
def test_a_sort_of_words_sorts_computed_operands(key: str) -> None:
    """The sorted words are complemented first (not a slice of the
    input, which IREE's Vulkan code generation refuses to sort), and the
    order is the 64-bit one, ties (a stable sort's payload) included."""
    x = np.concatenate([X, X[:4]])
    if key == "unsigned":
        fn = lambda v: lax.sort((v.astype(jnp.uint64), jnp.arange(v.shape[0])), num_keys=1)  # noqa: E731
    else:
        fn = lambda v: lax.sort((v, jnp.arange(v.shape[0])), num_keys=1, is_stable=True)  # noqa: E731
    result = compare_with_reference(fn, [x], policy="exact")
    assert all(o.ok for o in result.outputs)
    sorts = [op for op in _walk_ops(result.demoted) if op.name == "stablehlo.sort"]
    assert len(sorts) == 1
    words = list(sorts[0].operands)[:2]
    assert [w.owner.name for w in words] == ["stablehlo.not", "stablehlo.not"]

