"""``dot_general`` on float64 pairs by exact slices (``no64.rules.pair_dot``).

Each converted program's outputs are held to the exact dot of its pair
inputs (rationals of ``hi + lo``) within the bound the module states,
``eps(k) * k * max_l |A_il| * max_l |B_lj| + 2**-125``, on adversarial inputs; and
compared with the x64 program through ``no64.demote`` and ``no64.jit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.rules.pair_dot import plan
from no64.rules.pair_rules import DOT_SPLIT_MIN
from support import enable_x64

RNG = np.random.default_rng(11)


def _convert(fn: Callable, *args: np.ndarray) -> tuple[str, list[np.ndarray], np.ndarray]:
    """The converted module's text, its inputs (pairs for float64) and its output joined."""
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy="pairs", check=True)
    ins = [no64.split_pairs(a) if i in report.pair_inputs else np.asarray(a) for i, a in enumerate(args)]
    (out,) = run_module(m, ins)
    return str(m), ins, no64.join_pairs(out)


def _exact(x: np.ndarray) -> np.ndarray:
    """Rationals of a pair (``S x 2``) or of an f32 array."""
    if x.dtype == np.float32 and x.ndim and x.shape[-1] == 2:
        join = np.vectorize(lambda h, lo: Fraction(float(h)) + Fraction(float(lo)), otypes=[object])
        return join(x[..., 0], x[..., 1])
    return np.vectorize(lambda v: Fraction(float(v)), otypes=[object])(x)


def _check_matmul(a_in: np.ndarray, b_in: np.ndarray, got: np.ndarray, slack: float = 1.0) -> float:
    """``got`` (``M x N``) against the exact product of ``a_in`` (``M x K``)
    and ``b_in`` (``K x N``) within the stated bound; the worst error
    relative to ``k max|A_i:| max|B_:j|``."""
    a, b = _exact(a_in), _exact(b_in)
    k = a.shape[1]
    eps = plan(k).eps
    worst = 0.0
    for i in range(a.shape[0]):
        amax = max(abs(v) for v in a[i])
        for j in range(b.shape[1]):
            exact = sum((x * y for x, y in zip(a[i], b[:, j])), Fraction(0))
            scale = k * amax * max(abs(v) for v in b[:, j])
            err = abs(Fraction(float(got[i, j])) - exact)
            if scale == 0:
                assert err == 0
                continue
            # 2**-125: f32's range (a result below about 2**-102 loses its lo word)
            assert err <= Fraction(eps * slack) * scale + Fraction(2.0**-125), (i, j, float(err / scale), eps)
            rel = float(err / scale)
            worst = max(worst, rel)
    return worst


def test_plan_keeps_every_f32_dot_exact_and_about_48_bits() -> None:
    for k in (DOT_SPLIT_MIN, 100, 255, 256, 257, 600, 1000, 4096, 5000, 10**5):
        p = plan(k)
        assert p.chunk * p.chunks >= k and p.chunk <= k
        assert 2 * p.beta + math.ceil(math.log2(p.chunk)) <= 24
        assert (p.slices + 1) * 2.0 ** (2 - p.slices * p.beta) <= 2.0**-48
        assert p.eps < 2.0**-46.5
        # every product i + j <= s + 1 once, in a group of its level whose
        # largest partial sum is within 2**24 units of the level's grid
        seen = sorted(pr for g in p.groups for pr in g.products)
        assert seen == sorted((i, j) for i in range(1, p.slices + 1) for j in range(1, p.slices + 2 - i))
        for g in p.groups:
            assert all(i + j == g.level for i, j in g.products)
            largest = sum(2 ** (p.beta - (i > 1)) * 2 ** (p.beta - (j > 1)) for i, j in g.products)
            assert largest * p.chunk <= 2**24
        # a phase's slices round its remainder (below 2**(2 + beta - start*beta)) to
        # grids at most 2**22 finer
        for phase in p.phases:
            assert (phase[-1] - phase[0] + 1) * p.beta <= 22
        assert [i for ph in p.phases for i in ph] == list(range(1, p.slices + 1))
    assert plan(512).chunks == 1 and plan(5000).chunks > 1


def test_no_variadic_reduce_and_no_pair_additions_on_the_dots() -> None:
    """The split dot's sums are plain f32 adds, TwoSums and (over chunks)
    one-input reduces: no variadic ``reduce`` (which Neuron refuses)."""
    for k in (64, 5000):
        a = RNG.standard_normal((3, k))
        b = RNG.standard_normal((k, 2))
        text, ins, got = _convert(lambda x, y: x @ y, a, b)
        assert '"stablehlo.reduce"' not in text  # a reduce with a body of its own
        reduces = [line for line in text.splitlines() if "stablehlo.reduce(" in line]
        assert reduces and all(line.count("init:") == 1 for line in reduces)
        _check_matmul(ins[0], ins[1], got)


@pytest.mark.parametrize("k", [64, 256, 257, 600])
def test_rows_spanning_2_pow_60_mixed_signs_zeros_against_exact(k: int) -> None:
    # rows and columns from 2**-60 to 2**40 (every exact result within a
    # pair's range, f32's: beyond it the result is an infinity); inputs of
    # their own, whatever order the tests run in
    rng = np.random.default_rng(1000 + k)
    m, n = 6, 5
    a = rng.standard_normal((m, k)) * 2.0 ** rng.integers(-60, 41, (m, 1))
    a[1] *= 2.0 ** rng.integers(-20, 21, k)  # one row spreads over 2**+-20 itself
    a[2] = 0.0  # a zero row
    a[3, ::3] = 0.0
    b = rng.standard_normal((k, n)) * 2.0 ** rng.integers(-60, 41, (1, n))
    b[:, 4] = -np.abs(b[:, 4])
    text, ins, got = _convert(lambda x, y: x @ y, a, b)
    assert "precision = [HIGHEST, HIGHEST]" in text and "f64" not in text
    worst = _check_matmul(ins[0], ins[1], got)
    assert worst > 0  # not vacuous: the slices do round
    assert (got[2] == 0).all()


def test_cancellation_tiny_exact_dot() -> None:
    """Rows whose exact dot is ``2**-40`` or less of ``|A| |B|``: within the
    bound, and closer than f32 by far."""
    k, m, n = 300, 4, 3
    a = RNG.standard_normal((m, k))
    b = RNG.standard_normal((k, n))
    # make column j of b nearly orthogonal to row i of a: b[:, 0] -= proj
    a[:, -1] = 1.0
    for i in range(m):
        b_i = b[:, i % n].copy()
        b[-1, i % n] = 0.0
        b[-1, i % n] = -float(a[i, :-1] @ b_i[:-1])
    text, ins, got = _convert(lambda x, y: x @ y, a, b)
    _check_matmul(ins[0], ins[1], got)


def test_a_contraction_over_the_chunk_limit_against_exact() -> None:
    k = 5000
    assert plan(k).chunks > 1
    a = RNG.standard_normal((2, k)) * 2.0 ** RNG.integers(-40, 40, k)
    b = RNG.standard_normal((k, 2))
    b[:, 1] = -b[:, 1] * 2.0**70
    text, ins, got = _convert(lambda x, y: x @ y, a, b)
    assert text.count("precision = [HIGHEST, HIGHEST]") >= plan(k).products
    _check_matmul(ins[0], ins[1], got)


def test_batch_and_transposed_contracting_dims_against_exact() -> None:
    k = 100
    a = RNG.standard_normal((k, 2, 3)) * 2.0 ** RNG.integers(-30, 30, (1, 2, 3))  # contracting first
    b = RNG.standard_normal((4, 2, k))  # rhs: free, batch, contracting
    dims = (((0,), (2,)), ((1,), (1,)))
    text, ins, got = _convert(lambda x, y: lax.dot_general(x, y, dims), a, b)
    assert got.shape == (2, 3, 4)
    for bt in range(2):
        # lhs batch bt: k x 3 (x 2 words); rhs batch bt: 4 x k -> k x 4
        _check_matmul(np.swapaxes(ins[0][:, bt], 0, 1), np.swapaxes(ins[1][:, bt], 0, 1), got[bt])


def test_mixed_f64_f32_operands_against_exact() -> None:
    k = 200
    a = RNG.standard_normal((5, k)) * 1e5
    b = RNG.standard_normal((k, 3)).astype(np.float32)
    text, ins, got = _convert(lambda x, y: x @ y, a, b)
    assert "f64" not in text
    _check_matmul(ins[0], ins[1], got)


def test_against_the_x64_program_through_demote_and_jit() -> None:
    a = RNG.standard_normal((48, 96)) * 1e3
    b = RNG.standard_normal((96, 40))
    with enable_x64(True):
        ref = np.asarray(jax.jit(lambda x, y: x @ y)(a, b))
    _, _, got = _convert(lambda x, y: x @ y, a, b)
    scale = np.abs(a).max(1)[:, None] * np.abs(b).max(0)[None, :] * a.shape[1]
    # the inputs enter rounded to pairs (2**-48 relative each)
    tol = (plan(96).eps + 2.0**-46) * scale
    assert (np.abs(got - ref) <= tol).all()
    fn = no64.jit(lambda x, y: jnp.einsum("ik,kj->ij", x, y), float_policy="pairs", restore_dtypes=True)
    got_jit = np.asarray(fn(a, b))
    assert got_jit.dtype == np.float64
    assert (np.abs(got_jit - ref) <= tol).all()
    f32 = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    assert np.abs(f32 - ref).max() > 1e3 * np.abs(got - ref).max()


def test_inf_and_nan_reach_the_outputs_they_reach_in_float64() -> None:
    k = 64
    a = RNG.standard_normal((4, k))
    b = RNG.standard_normal((k, 3))
    a[0, 5] = np.inf
    a[1, 7] = np.nan
    b[:, 2] = np.abs(b[:, 2])
    b[9, 1] = -np.inf
    b[5, 0] = 0.0  # inf * 0 in row 0, column 0
    with enable_x64(True):
        ref = np.asarray(jax.jit(lambda x, y: x @ y)(a, b))
    _, _, got = _convert(lambda x, y: x @ y, a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    assert fin.sum() == 4  # rows 2, 3 against columns 0, 2
    assert np.abs(got[fin] - ref[fin]).max() <= 1e-13 * np.abs(ref[fin]).max() * k


def test_short_contraction_keeps_the_elementwise_form() -> None:
    a = RNG.standard_normal((3, DOT_SPLIT_MIN - 1))
    b = RNG.standard_normal((DOT_SPLIT_MIN - 1, 2))
    text, ins, got = _convert(lambda x, y: x @ y, a, b)
    assert "dot_general" not in text
    _check_matmul(ins[0], ins[1], got)
