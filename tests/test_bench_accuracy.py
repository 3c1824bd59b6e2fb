"""``benchmarks/accuracy.py`` on the CPU, on few operands: its ulp measure,
the CPU's own float64 (IEEE: 0 ulp where numpy's is correctly rounded) and
the pairs within the float-pairs guide's bounds, so that the table the
device lane publishes cannot rot."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from support import load_benchmark

acc = load_benchmark("accuracy")

#: u = 2**-24; a pair op's bound c u**2 |x| is at most 32 c ulps of float64
#: at x, and each operand's rounding to 48 bits (2**-48) adds up to 16 more
#: per operand where nothing cancels.
PAIR_ULPS = {"add": 32 * 3 + 32, "mul": 32 * 7 + 32, "div": 32 * 15 + 32, "sqrt": 32 * 4 + 16}


@pytest.fixture(scope="module")
def table() -> dict:
    return acc.measure(2048, 48, jax.devices("cpu")[0], ["add", "mul", "div", "sqrt", "exp", "sum", "matmul"])


def test_ulps_counts_in_float64_spacing() -> None:
    ref = np.array([1.0, 1.0, 2.0**-30, np.inf, np.nan, 0.0, 3.0, 3.0])
    got = np.array([1.0 + 2**-52, 1.0 - 2**-53, 2.0**-30, np.inf, np.nan, 1e-300, np.inf, np.nan])
    u = acc.ulps(got, ref)
    assert list(u[:5]) == [1, 0.5, 0, 0, 0] and u[5] > 1e20 and u[6] == u[7] == np.inf


def test_the_cpus_float64_is_ieee(table: dict) -> None:
    for op in ("add", "mul", "div", "sqrt", "sum"):
        assert table[op]["device f64"].max == 0, (op, table[op]["device f64"])
    assert table["exp"]["device f64"].max <= 2


@pytest.mark.parametrize("op", sorted(PAIR_ULPS))
def test_pairs_within_the_guides_bounds(table: dict, op: str) -> None:
    for col in ("pairs", "pairs, module"):
        s = table[op][col]
        assert not s.refused and 0 < s.max <= PAIR_ULPS[op], (op, col, s)


def test_transcendentals_on_pairs_hold_their_bound_and_the_table_says_so(table: dict) -> None:
    # exp is computed on the pairs (no64.ir.pair_math, 10u^2: 320 float64 ulps);
    # the operand's rounding to 48 bits moves exp(x) by up to |x| 2**-48 (x in
    # (-20, 20): 640 ulps) -- in f32 it was about 2**29 ulps
    assert 0 < table["exp"]["pairs"].max <= 320 + 640
    text = acc.markdown(table, "header", 48)
    assert "| exp | U(-20,20) |" in text and "| matmul | 48×48 N(0,1)" in text
