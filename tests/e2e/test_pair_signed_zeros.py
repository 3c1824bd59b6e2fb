"""Signed zeros under ``float_policy="pairs"``, op by op, against the x64
program run without no64 on the CPU backend.

Every op that reads or gives a zero is run on every combination of signed
zeros, ones, infinities and values whose pairs have a nonzero lo word (a
value just below 1, just above -1, just above -0.5), and must give the
x64 program's result with its sign: a zero sum is +0 unless both operands
are -0, ``(-a) * 0`` and ``0 / -b`` are -0, ``1 / ((-1) * 0)`` is -inf,
a rounding keeps its operand's sign, ``maximum``/``minimum`` order -0
below +0, and the conversion to f32 keeps a -0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from test_pair_programs import reference

import no64
from no64.jax.reference import lower_x64, parse_module, run_module

VALUES = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf,
                   1 - 2.0**-40, -1 + 2.0**-40, -0.5 + 2.0**-40, 0.3, -0.3, -0.5])
#: Every (x, y) of VALUES.
X = np.repeat(VALUES, len(VALUES))
Y = np.tile(VALUES, len(VALUES))


def run_pairs(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy="pairs", check=True)
    assert report.pair_inputs == list(range(len(args)))
    outs = run_module(m, [no64.split_pairs(a) for a in args])
    return [no64.join_pairs(o) if i in report.pair_outputs else np.asarray(o, dtype=np.float64)
            for i, o in enumerate(outs)]


def assert_as_x64(fn: Callable[..., Any], *args: np.ndarray) -> None:
    """``fn`` through pairs gives the x64 program's zeros and infinities
    (signs included) and NaNs where it does, and its other values within
    the pairs' precision."""
    for k, (got, ref) in enumerate(zip(run_pairs(fn, *args), reference(fn, *args))):
        assert got.shape == ref.shape, (k, got.shape, ref.shape)
        got, ref = got.reshape(-1), ref.reshape(-1)
        nan = np.isnan(ref)
        assert (np.isnan(got) == nan).all(), (k, np.nonzero(np.isnan(got) != nan)[0])
        exact = ~nan & ((ref == 0) | np.isinf(ref))
        bad = exact & ((got != ref) | (np.signbit(got) != np.signbit(ref)))
        where = np.nonzero(bad)[0]
        assert not bad.any(), [(k, *(a[i].tolist() if len(a) == len(ref) else "" for a in args),
                                float(got[i]), float(ref[i])) for i in where[:8]]
        close = ~nan & ~exact
        assert (np.abs(got[close] - ref[close]) <= 2.0**-44 * np.abs(ref[close])).all(), k


BINARY = {
    "add": lambda x, y: x + y,
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: x / y,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "clamp": lambda x, y: lax.clamp(y, x, jnp.abs(y)),
}
UNARY = {
    "negate": lambda x: -x,
    "abs": jnp.abs,
    "sign": jnp.sign,
    "sqrt": jnp.sqrt,
    "floor": jnp.floor,
    "ceil": jnp.ceil,
    "round_nearest_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "round_nearest_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
    "convert to f32": lambda x: x.astype(jnp.float32),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ops_sign_zeros_as_x64(name: str):
    assert_as_x64(BINARY[name], X, Y)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops_sign_zeros_as_x64(name: str):
    assert_as_x64(UNARY[name], VALUES)


def test_a_zero_sign_reaches_an_infinity():
    # 1/((-1)*0), 1/(0/-2), 1/(-0 + -0), 1/(x - x), 1/f32(-0)
    def fn(x, y):
        return (1 / (-x * 0), 1 / (0 / (-2 * x)), 1 / (-0.0 * x + -0.0 * x), 1 / (x - x),
                1 / (-0.0 * x).astype(jnp.float32))

    x = np.array([1.0, 3.0, 1 + 2.0**-40])
    assert_as_x64(fn, x, x)
    got = run_pairs(fn, x, x)
    assert [float(g[0]) for g in got] == [-np.inf, -np.inf, -np.inf, np.inf, -np.inf]



def _dot(x: Any, y: Any) -> Any:
    """Row by row: ``x`` and ``y`` (``n x k``) contracted over ``k`` (a batched dot_general)."""
    return lax.dot_general(x, y, (([1], [1]), ([0], [0])))


#: Every (x, y) of VALUES as the rows of one argument (XLA computes a sum
#: of values stacked inside the program as their plain sum, without the
#: reduce's init: the rows are the program's input).
XY = np.stack([X, Y], axis=1)

#: Reductions and scans over one element (XLA computes such a reduce as its
#: operand: the init is not applied) and over two (the init, +0, is: a sum
#: of two -0s is +0), on each row of XY.
REDUCTIONS = {
    "sum of one": lambda xy: jnp.sum(xy[:, :1], axis=1),
    "sum of two": lambda xy: jnp.sum(xy, axis=1),
    "sum of one, kept dims": lambda xy: jnp.sum(xy[:, :1, None], axis=(1, 2), keepdims=True),
    "sum of one, a generic body": lambda xy: lax.reduce(xy[:, 1:], 0.0, lambda a, b: a + b * 1.0, (1,)),
    "mean of one": lambda xy: jnp.mean(xy[:, 1:], axis=1),
    "mean of two": lambda xy: jnp.mean(xy, axis=1),
    "cumsum of one": lambda xy: jnp.cumsum(xy[:, :1], axis=1),
    "cumsum of two": lambda xy: jnp.cumsum(xy, axis=1),
    "reverse cumsum of two": lambda xy: lax.cumsum(xy, axis=1, reverse=True),
    "windows of one": lambda xy: lax.reduce_window(xy, 0.0, lax.add, (1, 1), (1, 1), "VALID"),
    "prod of one": lambda xy: jnp.prod(xy[:, :1], axis=1),
    "prod of two": lambda xy: jnp.prod(xy, axis=1),
    "cumprod of two": lambda xy: jnp.cumprod(xy, axis=1),
    "max of one": lambda xy: jnp.max(xy[:, 1:], axis=1),
    "dot of one term": lambda xy: _dot(xy[:, :1], xy[:, 1:]),
    "dot of two terms": lambda xy: _dot(xy, xy[:, ::-1]),
    "outer product": lambda xy: jnp.outer(xy[:, 0], xy[:, 1]),
}


def xla_dot_sums_from_zero() -> bool:
    """Whether the x64 program's dot of two ``-0`` products is ``+0`` (XLA:CPU
    from jaxlib 0.10 sums a dot's products from +0; 0.7-0.9 from the first)."""
    out = reference(REDUCTIONS["dot of two terms"], XY)[0]
    return not np.signbit(out[(XY[:, 0] == 0) & (XY[:, 1] == 0)]).any()


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_and_scans_sign_zeros_as_x64(name: str):
    if name == "dot of two terms" and not xla_dot_sums_from_zero():
        # the pairs' rule, a sum from +0 (IEEE's, in numpy), where this XLA differs
        got = run_pairs(REDUCTIONS[name], XY)[0]
        want = (0.0 + XY[:, 0] * XY[:, 1]) + XY[:, 1] * XY[:, 0]
        zero = want == 0
        assert zero.sum() > 10 and (np.signbit(got[zero]) == np.signbit(want[zero])).all()
        assert np.allclose(got, want, rtol=2.0**-44, equal_nan=True)
        return
    assert_as_x64(REDUCTIONS[name], XY)


def test_a_sum_of_one_negative_zero_is_negative():
    """``1 / jnp.sum([-0.0])`` is -inf in the x64 program (XLA computes a
    reduce over one element as that element), and so through pairs: sums,
    means, running sums, products and a dot of one term, whole-array."""
    def fn(x):
        return (1 / jnp.sum(x), 1 / jnp.mean(x), 1 / jnp.cumsum(x), 1 / jnp.prod(x), 1 / jnp.dot(x, x * 0 + 1),
                1 / jnp.sum(x.reshape(1, 1)), 1 / (x @ (x * 0 + 1).reshape(1, 1)))

    x = np.array([-0.0])
    assert_as_x64(fn, x)
    assert [float(np.asarray(g).reshape(-1)[0]) for g in run_pairs(fn, x)] == [-np.inf] * 7


#: A sum and a running sum whose init is -0 (JAX writes +0; another
#: producer may write -0, the identity of IEEE addition): a sum of -0s is -0.
NEGATIVE_ZERO_INIT = """
func.func public @main(%x: tensor<7x3xf64>) -> (tensor<7xf64>, tensor<7x3xf64>) {
  %z = stablehlo.constant dense<-0.0> : tensor<f64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
       : (tensor<7x3xf64>, tensor<f64>) -> tensor<7xf64>
  %c = "stablehlo.reduce_window"(%x, %z) ({
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %t = stablehlo.add %a, %b : tensor<f64>
      stablehlo.return %t : tensor<f64>
  }) {window_dimensions = array<i64: 1, 3>, padding = dense<[[0, 0], [2, 0]]> : tensor<2x2xi64>}
     : (tensor<7x3xf64>, tensor<f64>) -> tensor<7x3xf64>
  return %s, %c : tensor<7xf64>, tensor<7x3xf64>
}
"""


def test_a_negative_zero_init_keeps_a_sum_of_negative_zeros_negative():
    x = np.array([[-0.0, -0.0, -0.0], [0.0, -0.0, -0.0], [-0.0, 0.0, -0.0], [-0.0, -0.0, 0.0],
                  [1.0, -1.0, -0.0], [-0.5 + 2.0**-40, 0.5 - 2.0**-40, -0.0], [2.5, -0.0, -2.5]])
    ref = run_module(parse_module(NEGATIVE_ZERO_INIT), [x], strict=False)
    m = parse_module(NEGATIVE_ZERO_INIT)
    report = no64.demote(m, float_policy="pairs", check=True)
    got = [no64.join_pairs(o) for o in run_module(m, [no64.split_pairs(x)])]
    assert report.pair_outputs == [0, 1]
    for g, r in zip(got, ref, strict=True):
        r = np.asarray(r)
        assert np.array_equal(g, r) and np.array_equal(np.signbit(g), np.signbit(r)), (g, r)
    assert np.signbit(ref[0][0]) and np.signbit(ref[1][0]).all(), "not vacuous: x64 keeps the -0"
