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
from no64.jax.reference import lower_x64, run_module

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
        nan = np.isnan(ref)
        assert (np.isnan(got) == nan).all(), (k, np.nonzero(np.isnan(got) != nan)[0])
        exact = ~nan & ((ref == 0) | np.isinf(ref))
        bad = exact & ((got != ref) | (np.signbit(got) != np.signbit(ref)))
        where = np.nonzero(bad)[0]
        assert not bad.any(), [(k, *(float(a[i]) for a in args), float(got[i]), float(ref[i])) for i in where[:8]]
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
