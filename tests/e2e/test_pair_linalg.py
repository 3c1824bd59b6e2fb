"""LAPACK's LU factorization and triangular solve under
``float_policy="pairs"``: written out as StableHLO and computed on pairs
(:mod:`no64.rules.linalg`), compared with the x64 program run without
no64 on the CPU backend and with the exact solution (mpmath).

The ill-conditioned solve is the one of the table that motivates pairs: a
50 x 50 system of condition 1e8, which f32 solves to tens of percent.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from test_pair_programs import reference, rel, run_pairs

import no64
from no64.jax.reference import lower_x64
from support import load_benchmark

#: The solve benchmark: its matrices of a given condition, its exact solutions (mpmath).
SOLVES = load_benchmark("bench_pairs_solve")
conditioned = SOLVES.conditioned


def test_solve_of_condition_1e8_within_1e_6_of_x64():
    a = conditioned(50, 1e8, 0)
    b = np.random.default_rng(1).standard_normal(50)
    assert 0.9e8 < np.linalg.cond(a) < 1.1e8
    (ref,) = reference(jnp.linalg.solve, a, b)
    (got,) = run_pairs(jnp.linalg.solve, a, b)
    (f32,) = run_pairs(jnp.linalg.solve, a, b, float_policy="f32")
    exact = SOLVES.exact_solve(a, b[:, None])[:, 0]
    assert rel(got, ref) < 1e-6, rel(got, ref)
    # about cond * 2**-48 from the truth, as a backward-stable solve in
    # pairs' precision is; f32 loses the answer
    assert rel(got, exact) < 1e8 * 2.0**-44, rel(got, exact)
    assert rel(f32, ref) > 1e-2


def test_lapack_calls_are_written_out_not_narrowed():
    # the determinant's LU is written out; the solve's is refined from
    # LAPACK's f32 LU, its fallback written out in float64 ops
    a = conditioned(6, 10.0, 2)
    b = np.ones(6)
    m = lower_x64(lambda a, b: (jnp.linalg.solve(a, b), jnp.linalg.det(a)), a, b)
    report = no64.demote(m, float_policy="pairs", check=True)
    text = str(m)
    assert "lapack_d" not in text and "f64" not in text
    assert sorted(re.findall(r"custom_call @(\w+)", text)) == ["lapack_sgetrf_ffi"] + ["lapack_strsm_ffi"] * 4
    written = sorted(e.detail.split()[0] for e in report.events if "written out as StableHLO" in e.detail)
    assert written == ["lapack_dgetrf_ffi"]
    refined = [e for e in report.events if e.detail.startswith("float64 solve refined")]
    assert len(refined) == 1 and "lapack_sgetrf_ffi" in refined[0].detail
    assert not [n for n in report.narrowings if n.verdict == "precision-reduced"]


def test_lu_factor_pivots_and_factors_match_lapack():
    # pivots chosen as LAPACK chooses them: the first entry of largest
    # magnitude, ties included (integer matrix with repeated magnitudes)
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (9, 9)).astype(np.float64)
    a[:, 0] = [2, -3, 3, 1, -3, 0, 2, 3, -1]

    def lu(a):
        return jsl.lu_factor(a)

    ref_lu, ref_piv = reference(lu, a)
    m = lower_x64(lu, a)
    report = no64.demote(m, float_policy="pairs", check=True)
    from no64.jax.reference import run_module

    got_lu, got_piv = run_module(m, [no64.split_pairs(a)])
    np.testing.assert_array_equal(np.asarray(got_piv), ref_piv.astype(np.int32))
    assert rel(no64.join_pairs(got_lu), ref_lu) < 1e-13
    assert report.pair_outputs == [0]


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solves_with_several_right_hand_sides(lower: bool, unit: bool):
    rng = np.random.default_rng(4)
    t = rng.uniform(-1, 1, (12, 12)) + np.diag(rng.uniform(2, 3, 12))
    # the other triangle holds garbage the solve must not read
    other = ~np.tri(12, dtype=bool) if lower else np.tri(12, k=-1, dtype=bool)
    t = t + np.where(other, 1e30, 0)
    b = rng.standard_normal((12, 5)) * np.array([1e-20, 1e-3, 1, 1e3, 1e20])

    def solve(t, b):
        return jsl.solve_triangular(t, b, lower=lower, unit_diagonal=unit)

    (ref,) = reference(solve, t, b)
    (got,) = run_pairs(solve, t, b)
    for j in range(5):  # each column on its own scale
        assert rel(got[:, j], ref[:, j]) < 1e-12, (j, rel(got[:, j], ref[:, j]))


def test_singular_matrix_keeps_lapacks_info_and_values():
    # an exactly singular matrix: LAPACK's info > 0 does not turn the
    # factors into nan; the solve then divides by the zero pivot (inf/nan)
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    (ref,) = reference(jnp.linalg.solve, a, b)
    (got,) = run_pairs(jnp.linalg.solve, a, b)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


def test_inverse_and_determinant():
    a = conditioned(20, 1e6, 5)

    def inv_det(a):
        return jnp.linalg.inv(a), jnp.linalg.slogdet(a)[1]

    ref_inv, ref_logdet = reference(inv_det, a)
    got_inv, got_logdet = run_pairs(inv_det, a)
    assert rel(got_inv, ref_inv) < 1e-8, rel(got_inv, ref_inv)
    # log is computed in f32 from the pair (recorded as precision-reduced)
    assert abs(got_logdet - ref_logdet) < 1e-5 * abs(ref_logdet) + 1e-5


def test_batched_solve_is_computed_in_f32_and_recorded():
    # num_batch_dims > 0 is not written out: the f32 sibling, per op and line
    a = np.stack([conditioned(4, 10.0, s) for s in range(3)])
    b = np.ones((3, 4, 1))
    # (traced afresh: jax 0.7 would otherwise keep the line of whichever
    # call traced the library's jitted solve first)
    jax.clear_caches()
    m = lower_x64(lambda a, b: jnp.linalg.solve(a, b), a, b)
    report = no64.demote(m, float_policy="pairs", check=True)
    reduced = [n for n in report.narrowings if n.verdict == "precision-reduced"]
    assert reduced and all(n.op == "stablehlo.custom_call" for n in reduced)
    # named by JAX's primitive (and, where JAX's lowering keeps it, this line)
    assert sorted(str(n.location).split(" at ")[0] for n in reduced) == ["lu", "triangular_solve",
                                                                         "triangular_solve"]
    assert all(n.location.file in (None, __file__) for n in reduced)


def test_no64_jit_solves_on_pairs():
    a = conditioned(50, 1e8, 6)
    b = np.random.default_rng(7).standard_normal(50)
    (ref,) = reference(jnp.linalg.solve, a, b)
    got = no64.jit(jnp.linalg.solve, float_policy="pairs", restore_dtypes=True)(a, b)
    assert got.dtype == np.float64
    assert rel(got, ref) < 1e-6, rel(got, ref)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_and_cho_solve(lower: bool):
    # symmetric positive definite, condition 1e8; the other triangle of the
    # input is not read by LAPACK, nor by the written-out factorization
    c = conditioned(30, 1e4, 8)
    a = c @ c.T
    b = np.random.default_rng(9).standard_normal(30)

    def solve(a, b):
        factor = jsl.cho_factor(a, lower=lower)
        return jsl.cho_solve(factor, b), jnp.linalg.cholesky(a)

    ref = reference(solve, a, b)
    got = run_pairs(solve, a, b)
    f32 = run_pairs(solve, a, b, float_policy="f32")
    assert rel(got[0], ref[0]) < 1e-6, rel(got[0], ref[0])
    assert rel(got[1], ref[1]) < 1e-10, rel(got[1], ref[1])
    assert not rel(f32[0], ref[0]) < 1e-3
    m = lower_x64(solve, a, b)
    report = no64.demote(m, float_policy="pairs", check=True)
    written = sorted(e.detail.split()[0] for e in report.events if "written out as StableHLO" in e.detail)
    assert written == ["lapack_dpotrf_ffi", "lapack_dpotrf_ffi", "lapack_dtrsm_ffi", "lapack_dtrsm_ffi"]


def test_cholesky_of_a_matrix_that_is_not_positive_definite():
    a = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 5.0], [0.0, 5.0, 1.0]])
    (ref,) = reference(jnp.linalg.cholesky, a)
    (got,) = run_pairs(jnp.linalg.cholesky, a)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(ref).any()


def test_transposed_triangular_solve():
    rng = np.random.default_rng(10)
    t = np.tril(rng.uniform(-1, 1, (10, 10))) + np.diag(rng.uniform(2, 3, 10))
    b = rng.standard_normal((10, 3))

    def solve(t, b):
        return jsl.solve_triangular(t, b, lower=True, trans=1)

    (ref,) = reference(solve, t, b)
    (got,) = run_pairs(solve, t, b)
    assert rel(got, ref) < 1e-12, rel(got, ref)
