"""Folding input-free sub-graphs: verdicts of folded values, and folds that
must rearrange elements as the op does.

Each program is compared with the 64-bit program (x64 on, CPU, no no64)
under the default, strict and exact policies: converted exactly, or
refused with a no64 error (never an internal error, never a wrong number).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from test_soundness_regressions import I32, INT32_RANGE, parse, refused_or_exact

import no64
from no64.analysis.ranges import RangeAnalysis
from no64.jax.reference import lower_x64
from no64.kinds import Verdict

POLICIES = ["default", "strict", "exact"]


def constant_product(x):
    return x + jnp.array([1, 2**20], jnp.int64) * jnp.array([2**20, 1], jnp.int64)


def iota_product(x):
    i = jnp.arange(65536, dtype=jnp.int64)
    return x + i * (65535 - i)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "fn, shape",
    [(constant_product, (2,)), (iota_product, (65536,))],
    ids=["constant_product", "iota_product"],
)
def test_a_folded_product_gets_a_verdict(fn, shape, policy: str) -> None:
    """The product folds to values that fit (2**20, and at most 32767 * 32768):
    its verdict comes from the fold.  An earlier pass crashed here
    (``'exact' is not a valid EventKind``): the fold's verdict was a string
    where the judge compared enum members by identity."""
    x = np.zeros(shape, np.int64)
    edges = np.resize(np.array([I32.max - 2**31 + 1, I32.min, 0, -1, I32.max - 2**30], np.int64), shape)
    refused_or_exact(lower_x64(fn, x), [[x], [edges]], input_ranges={0: (-(2**30), 2**30)}, policy=policy)
    if policy != "strict":  # (strict refuses the sum: its range uses the product's interval)
        report = no64.demote(lower_x64(fn, x), input_ranges={0: (-(2**30), 2**30)}, policy=policy)
        assert not report.verdicts.get(Verdict.OVERFLOW)


def test_the_verdict_of_a_folded_value_is_a_verdict() -> None:
    m = lower_x64(lambda: jnp.arange(4, dtype=jnp.int64) * jnp.array([2**40, 1, 1, 1], jnp.int64))
    with m.context:
        analysis = RangeAnalysis(m.operation)
        ret = list(m.body.operations[0].regions[0].blocks[0].operations)[-1]
        verdict, r = analysis.verdict(ret.operands[0])
    assert type(verdict) is Verdict and verdict is Verdict.EXACT, (verdict, r)  # [0, 1, 2, 3]


# broadcast_in_dim with permuted dimensions is a transpose: b[i, j] = c[j, i]
PERMUTED_BROADCAST = """
func.func public @main(%x: tensor<2x2xi64>) -> tensor<2x2xi64> {
  %c = stablehlo.constant dense<[[1, 2], [1099511627776, 3]]> : tensor<2x2xi64>
  %b = stablehlo.broadcast_in_dim %c, dims = [1, 0] : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %k = stablehlo.constant dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>
  %p = stablehlo.multiply %b, %k : tensor<2x2xi64>
  %r = stablehlo.add %p, %x : tensor<2x2xi64>
  return %r : tensor<2x2xi64>
}"""


def test_folding_a_permuted_broadcast_transposes() -> None:
    """``b = transpose(c)`` holds 2**40 at [0, 1], where ``k`` is 1: the
    product holds 2**40.  Folding the broadcast as a reshape put 2**40 at
    [1, 0], where ``k`` is 0, and judged the product to lie in [0, 3]."""
    m = parse(PERMUTED_BROADCAST)
    with m.context:
        analysis = RangeAnalysis(m.operation)
        ops = list(m.body.operations[0].regions[0].blocks[0].operations)
        product = ops[3].results[0]
        folded = analysis.fold(product)
        verdict, _ = analysis.verdict(product)
    assert folded.tolist() == [[1, 2**40], [0, 3]]
    assert verdict is Verdict.OVERFLOW


def test_folding_a_broadcast_into_more_dimensions_with_permuted_dimensions() -> None:
    text = """
func.func public @main() -> tensor<3x2x4xi64> {
  %c = stablehlo.constant dense<[[0, 1, 2, 3], [10, 11, 12, 13]]> : tensor<2x4xi64>
  %b = stablehlo.broadcast_in_dim %c, dims = [1, 2] : (tensor<2x4xi64>) -> tensor<3x2x4xi64>
  %t = stablehlo.constant dense<[[0, 1], [2, 3], [4, 5]]> : tensor<3x2xi64>
  %u = stablehlo.broadcast_in_dim %t, dims = [2, 1] : (tensor<3x2xi64>) -> tensor<2x2x3xi64>
  return %b : tensor<3x2x4xi64>
}"""
    m = parse(text)
    with m.context:
        analysis = RangeAnalysis(m.operation)
        ops = list(m.body.operations[0].regions[0].blocks[0].operations)
        b = analysis.fold(ops[1].results[0])
        u = analysis.fold(ops[3].results[0])
    c = np.array([[0, 1, 2, 3], [10, 11, 12, 13]])
    t = np.array([[0, 1], [2, 3], [4, 5]])
    assert (b == np.broadcast_to(c, (3, 2, 4))).all()
    assert (u == np.broadcast_to(t.T, (2, 2, 3))).all()


@pytest.mark.parametrize("policy", POLICIES)
def test_a_permuted_broadcast_is_converted_exactly_or_refused(policy: str) -> None:
    x = [np.array([[0, 5], [-1, 7]], np.int64), np.array([[I32.max, I32.min], [0, -1]], np.int64)]
    refused_or_exact(parse(PERMUTED_BROADCAST), [[a] for a in x], input_ranges={0: INT32_RANGE}, policy=policy)


def test_a_convert_to_a_boolean_folds_to_whether_nonzero() -> None:
    """StableHLO converts an integer to ``i1`` as ``x != 0``: 2 and -2 fold
    to true (a fold that wrapped to one bit took their low bit, false)."""
    m = parse("""
func.func @main() -> tensor<4xi1> {
  %c = stablehlo.constant dense<[2, -2, 0, 4294967296]> : tensor<4xi64>
  %b = stablehlo.convert %c : (tensor<4xi64>) -> tensor<4xi1>
  return %b : tensor<4xi1>
}""")
    with m.context:
        ret = list(m.body.operations[0].regions[0].blocks[0].operations)[-1]
        folded = RangeAnalysis(m.operation).fold(ret.operands[0])
    assert folded is not None and folded.tolist() == [1, 1, 0, 1]
