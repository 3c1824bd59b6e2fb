"""A float64 solve under ``float_policy="pairs"`` refined from the device's
own f32 LU (:func:`no64.rules.linalg.refine_solves`), against the exact
solution (mpmath, 40 digits) and the x64 program run without no64.

The bound: the refinement stops on a normwise backward error of at most
``2**-44`` (the residual computed within ``2**-45.2`` of ``|A||x|``), so a
refined solve is within ``cond_inf(A) * 2**-43`` of the exact one in the
infinity norm, column by column -- as a backward-stable float64 solve is
within ``cond(A)`` times its unit roundoff. Where the f32 LU does not
contract the error (``cond(A)`` near ``2**24`` and beyond) the run-time
``case`` takes the float64 LU written out, whose result is today's.
"""

from __future__ import annotations

import jax
import jax.export
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from test_pair_linalg import conditioned
from test_pair_programs import reference, run_pairs

import no64
from no64.jax.reference import compile_module, lower_x64, run_module
from support import enable_x64, ir, make_context, simulate_f32_lu, without_solve_refinement

#: What a refined solve is held to: ``cond_inf(A)`` times this.
BOUND = 2.0**-43


def exact_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} B`` to 40 digits, rounded to float64 (``B`` a vector or columns)."""
    cols = b.reshape(len(b), -1)
    with mpmath.workdps(40):
        am = mpmath.matrix(a.tolist())
        x = [mpmath.lu_solve(am, mpmath.matrix(cols[:, j].tolist())) for j in range(cols.shape[1])]
        return np.array([[float(xj[i]) for xj in x] for i in range(len(b))]).reshape(b.shape)


def column_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.max(np.abs(got - exact), axis=0) / np.max(np.abs(exact), axis=0)


def converted(fn, *args: np.ndarray) -> tuple[object, no64.DemotionReport]:
    m = lower_x64(fn, *args)
    return m, no64.demote(m, float_policy="pairs", check=True)


def run(executable, *args: np.ndarray) -> list[np.ndarray]:
    device = jax.devices("cpu")[0]
    outs = executable.execute([jax.device_put(no64.split_pairs(a), device) for a in args])
    return [no64.join_pairs(np.asarray(o)) for o in outs]


N = 32
#: Right-hand sides of several magnitudes, one a zero column.
SCALES = np.array([1.0, 1e-20, 1e20, 0.0])
CONDITIONS = [1e2, 1e4, 1e6, 1e8, 1e10]


def test_refined_solves_hold_the_bound_and_fall_back_where_f32_cannot_converge():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((N, len(SCALES))) * SCALES
    m, report = converted(jnp.linalg.solve, conditioned(N, 10.0, 1), b)
    refined = [e for e in report.events if e.detail.startswith("float64 solve refined")]
    assert len(refined) == 1 and f"no64.refine.lapack.{N}x{len(SCALES)}" in refined[0].detail
    with without_solve_refinement():
        m_lu, _ = converted(jnp.linalg.solve, conditioned(N, 10.0, 1), b)
    assert "lapack_sgetrf_ffi" in str(m) and "lapack_sgetrf_ffi" not in str(m_lu)
    refine, written_out = compile_module(m), compile_module(m_lu)
    for seed, cond in enumerate(CONDITIONS):
        a = conditioned(N, cond, 10 + seed)
        (got,) = run(refine, a, b)
        (old,) = run(written_out, a, b)
        (x64,) = reference(jnp.linalg.solve, a, b)
        exact = exact_solve(a, b)
        live = SCALES != 0
        assert np.array_equal(got[:, ~live], exact[:, ~live])  # zeros, exactly
        err = column_errors(got[:, live], exact[:, live])
        kappa = np.linalg.cond(a, np.inf)
        assert np.all(err <= kappa * BOUND) or cond > 1e8, (cond, err, kappa * BOUND)
        # the run-time choice: refined up to 1e6 at least (these matrices: up
        # to 1e8), as accurate as x64 to a few units of pairs' precision;
        # beyond, the float64 LU's result
        refined = not np.array_equal(got, old)
        assert refined or cond > 1e6
        if refined:
            x64_err = column_errors(x64[:, live], exact[:, live])
            assert np.all(err <= np.maximum(16 * x64_err, cond * 2.0**-46)), (cond, err, x64_err)
        assert refined == (cond < 1e10)


def tpu_module(fn, *args: np.ndarray):
    """``fn``'s x64 module as JAX lowers it for the TPU (``LuDecomposition``,
    ``triangular_solve``)."""
    with enable_x64(True):
        exported = jax.export.export(jax.jit(fn), platforms=["tpu"])(*args)
    return ir.Module.parse(exported.mlir_module(), make_context())


def test_tpu_form_refines_xla_tpus_f32_lu_simulated_on_the_cpu():
    # converted for the tpu profile: XLA:TPU's f32 LU and triangular solves
    # only, no float64 LU left (today's pairs refuse its float64 LU); the
    # f32 LU then simulated in f32 ops to run on the CPU
    rng = np.random.default_rng(2)
    b = rng.standard_normal((16, 2))
    for cond in (1e4, 1e10):
        a = conditioned(16, cond, 3)
        m = tpu_module(jnp.linalg.solve, a, b)
        report = no64.demote(m, float_policy="pairs", target="tpu", check=True)
        assert [e.op for e in report.events if e.detail.startswith("float64 solve refined")] \
            == ["stablehlo.triangular_solve"]
        text = str(m)
        assert "f64" not in text and text.count("@LuDecomposition") == 1
        assert simulate_f32_lu(m) == 1
        (got,) = run_module(m, [no64.split_pairs(a), no64.split_pairs(b)])
        got = no64.join_pairs(got)
        exact = exact_solve(a, b)
        err = column_errors(got, exact)
        assert np.all(err <= np.linalg.cond(a, np.inf) * BOUND), (cond, err)
        # refined (1e4): as accurate as x64 to a few units of pairs'
        # precision; at 1e10 the float64 LU written out (cond * n * 2**-48)
        (x64,) = reference(jnp.linalg.solve, a, b)
        x64_err = column_errors(x64, exact)
        if cond < 1e10:
            assert np.all(err <= np.maximum(16 * x64_err, cond * 2.0**-46)), (err, x64_err)
        else:
            assert np.all(err > 4 * x64_err) and np.all(err <= cond * 16 * 2.0**-48), (err, x64_err)


@pytest.mark.parametrize("a, b", [
    pytest.param(np.array([[3.0]]), np.array([2.0]), id="1x1"),
    pytest.param(np.array([[0.0]]), np.array([2.0]), id="1x1-zero"),
    pytest.param(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]), np.array([1.0, 2.0, 3.0]),
                 id="singular"),
    pytest.param(np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[1.0, 0.0], [2.0, 0.0]]), id="singular-consistent"),
    pytest.param(np.array([[np.nan, 1.0], [1.0, 1.0]]), np.array([1.0, 1.0]), id="nan"),
    pytest.param(np.array([[1e-20, 1.0], [1.0, 1.0]]), np.array([1.0, 2.0]), id="tiny-pivot"),
])
def test_adversarial_solves_give_what_x64_gives(a: np.ndarray, b: np.ndarray):
    # an exactly singular matrix divides by LAPACK's zero pivot (inf, nan),
    # where the f32 LU fails too: the float64 LU gives x64's pattern
    (ref,) = reference(jnp.linalg.solve, a, b)
    (got,) = run_pairs(jnp.linalg.solve, a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    np.testing.assert_array_equal(np.signbit(got[np.isinf(got)]), np.signbit(ref[np.isinf(ref)]))
    fin = np.isfinite(ref)
    if fin.any():
        assert np.max(np.abs(got[fin] - ref[fin])) <= 2.0**-44 * max(1.0, np.max(np.abs(ref[fin])))


def test_batched_and_shared_factors_keep_their_paths():
    # a batched LU (num_batch_dims > 0) is not refined (computed in f32, as
    # recorded); an LU whose factors also give a determinant is written out,
    # and its solve with it: only the LU whose factors serve solves alone is
    # refined, each of its solves (inverse: B the identity)
    a = np.stack([conditioned(4, 10.0, s) for s in range(3)])
    _, report = converted(lambda a: jnp.linalg.solve(a, np.ones((3, 4, 1))), a)
    assert not [e for e in report.events if e.detail.startswith("float64 solve refined")]
    a = conditioned(8, 1e3, 4)

    def shared(a):
        lu, piv = jax.scipy.linalg.lu_factor(a)
        return jax.scipy.linalg.lu_solve((lu, piv), a[0]), jnp.prod(jnp.diag(lu))

    _, report = converted(shared, a)
    assert not [e for e in report.events if e.detail.startswith("float64 solve refined")]
    m, report = converted(lambda a: (jnp.linalg.inv(a), jnp.linalg.solve(a, a[:, :3])), a)
    assert len([e for e in report.events if e.detail.startswith("float64 solve refined")]) == 2
    got = [no64.join_pairs(o) for o in run_module(m, [no64.split_pairs(a)])]
    ref = reference(lambda a: (jnp.linalg.inv(a), jnp.linalg.solve(a, a[:, :3])), a)
    for g, r in zip(got, ref):
        assert np.max(np.abs(g - r)) <= 1e3 * 2.0**-40 * np.max(np.abs(r))
