"""``float_policy="pairs"``: each kind of op on float64 pairs, in JAX's own
x64 programs, compared with the x64 program on the CPU backend.

Every program is converted with ``check=True`` (no 64-bit type remains) and
its float64 outputs are compared with the x64 results within ``1e-13``
relative to the output's largest magnitude (ops computed on pairs), or bit
for bit where the op only moves, selects or compares values.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
import no64.io
from no64.cli import main
from no64.jax.reference import lower_x64, run_module
from runner import pair_inputs
from support import enable_x64

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 8)) * 1e3 + 1e4 / 3
Y = RNG.standard_normal((6, 8))
V = RNG.standard_normal(50)
I = RNG.integers(-(2**31), 2**31 - 1, (6, 8)).astype(np.int32)


def converted(fn, *args, **kw):
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy="pairs", check=True, **kw)
    return m, report


def run(fn, *args):
    m, report = converted(fn, *args)
    outs = run_module(m, pair_inputs(args, report.pair_inputs))
    with enable_x64(True):
        ref = jax.jit(fn)(*args)
    ref = ref if isinstance(ref, (tuple, list)) else [ref]
    got = [no64.join_pairs(o) if i in report.pair_outputs else o for i, o in enumerate(outs)]
    return got, [np.asarray(r) for r in ref], report


def close(got, ref, tol=1e-13):
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        if r.dtype.kind == "f":
            scale = np.max(np.abs(r[np.isfinite(r)])) if np.isfinite(r).any() else 1.0
            same = (np.abs(g - r) <= tol * scale) | (np.isnan(g) & np.isnan(r)) | (g == r)
            assert same.all(), (g[~same][:4], r[~same][:4])
        else:
            assert (g == r).all(), (g, r)


PROGRAMS = {
    "arith": lambda x, y: (x + y) * (x - y) / (y * y + 1.0) - jnp.sqrt(jnp.abs(x)),
    "minmax_clamp_sign": lambda x, y: jnp.clip(x, 1e4 / 3 - 100.0, 1e4 / 3 + 100.0) + jnp.maximum(x, y) * jnp.sign(y),
    "compare_select": lambda x, y: jnp.where(x > 1e4 / 3, x, -y),
    "moves": lambda x, y: jnp.concatenate([x.T.reshape(-1), jnp.flip(y[1:4, ::2]).ravel(), jnp.pad(x[0], 2)]),
    "gather_dynamic": lambda x, y: x[jnp.array([3, 1, 1]), 2:5] + lax.dynamic_slice(y, (1, 2), (3, 3)),
    "dynamic_update": lambda x, y: lax.dynamic_update_slice(x, y[:2, :3], (2, 4)),
    "reductions": lambda x, y: (jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(y), jnp.mean(x)),
    "argmax_argsort": lambda x, y: (jnp.argmax(x, axis=1), jnp.sort(y, axis=1), jnp.argsort(x[0])),
    "matmul": lambda x, y: x @ y.T,
    "einsum_batched": lambda x, y: jnp.einsum("bi,bj->bij", x[:, :3], y[:, :4]),
    "cumsum_axis": lambda x, y: jnp.cumsum(x, axis=1) + jnp.cumsum(y[:, ::-1], axis=0),
    "floor_round": lambda x, y: (jnp.floor(x / 7.0), jnp.ceil(y * 3), jnp.round(x / 10.0)),
    "scatter_set": lambda x, y: x.at[jnp.array([0, 2]), 1].set(y[:2, 0]),
    "int_converts": lambda x, y: (
        (x * 1e3).astype(jnp.int32), (x * 1e5).astype(jnp.int64), jnp.arange(48.0).reshape(6, 8) + x
    ),
    "rsqrt_is_finite": lambda x, y: (lax.rsqrt(jnp.abs(y) + 1.0), jnp.isfinite(x / (y - y[0, 0]))),
    "int64_to_pair": lambda x, y: (
        (jnp.arange(48, dtype=jnp.int64).reshape(6, 8) * 3_000_000_007).astype(jnp.float64) + x
    ),
    # a combining scatter (an embedding's gradient): repeated indices into a
    # zero accumulator, whose hi and lo words are equal
    "scatter_add": lambda x, y: (
        jnp.zeros((6, 8)).at[jnp.array([0, 2, 0, 5, 0])].add(x[:5] * 1e-9 + y[:5]),
        x.at[jnp.array([1, 1]), 3].add(y[:2, 0] * 1e-12),
        x.at[jnp.array([4, 4, 1]), 2].max(y[:3, 1] + 1e4 / 3),
    ),
    # jnp.square lowers to chlo.square (jax 0.10 on)
    "square": lambda x, y: (jnp.square(x) + jnp.square(y), jnp.square(y / 3.0)),
    "f32_mix": lambda x, y: x.astype(jnp.float32) * 2 + (y * 3).astype(jnp.float16).astype(jnp.float64),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program(name):
    got, ref, report = run(PROGRAMS[name], X, Y)
    assert report.ops_on_pairs > 0
    close(got, ref)


def test_int32_inputs_exact_as_pairs():
    got, ref, _ = run(lambda i: i.astype(jnp.float64) * 2.0 + 0.5, I)
    close(got, ref, tol=0)


def test_loops_branches_and_calls_carry_packed_pairs():
    def fn(x, y):
        @jax.jit
        def helper(a):
            return a * 1.0000001 + 1e-9

        def body(i, s):
            return helper(s) + lax.cond(i % 2 == 0, lambda v: v * 2.0, lambda v: v / 3.0, s)

        out = lax.fori_loop(0, 5, body, x)
        n = lax.while_loop(lambda c: c[0] < 1e5, lambda c: (c[0] * 1.5 + y[0, 0], c[1] + 1), (x[0, 0], 0))
        return out, n[0], n[1]

    got, ref, report = run(fn, X, Y)
    close(got, ref)
    assert report.pairs_by_op.get("stablehlo.while", 0) >= 2


def test_other_transcendentals_are_f32_and_reported_at_their_line():
    got, ref, report = run(lambda x, y: jnp.tan(y) + jnp.cbrt(x), X, Y)
    reduced = sorted(n.op for n in report.narrowings if n.verdict == "precision-reduced")
    assert reduced == ["stablehlo.cbrt", "stablehlo.tan"]
    close(got, ref, tol=1e-6)  # f32 accuracy, not more
    assert report.count("precision-reduced") == 2


def test_exp_log_sin_tanh_pow_are_computed_on_pairs():
    # no64.ir.pair_math: nothing computed in f32 (tests/rules/test_pair_math.py
    # holds each to its bound)
    got, ref, report = run(lambda x, y: jnp.tanh(y) + jnp.log(x) + jnp.exp(y) * jnp.sin(x) + x ** y, X, Y)
    assert not any(n.verdict == "precision-reduced" for n in report.narrowings)
    close(got, ref, tol=1e-12)


def test_linear_solve_computed_on_pairs():
    # LAPACK's LU and triangular solves written out as StableHLO (more in
    # tests/e2e/test_pair_linalg.py)
    a = RNG.standard_normal((5, 5)) + 5 * np.eye(5)
    b = RNG.standard_normal(5)
    got, ref, report = run(jnp.linalg.solve, a, b)
    assert not any(n.verdict == "precision-reduced" for n in report.narrowings)
    close(got, ref, tol=1e-12)


def test_hook_boundary_rounds_outputs_once():
    m, report = converted(lambda x, y: x * y + 1e-9, X, Y, outputs="narrow")
    assert report.pair_inputs == [] and report.pair_outputs == []
    (out,) = run_module(m, [X.astype(np.float32), Y.astype(np.float32)])
    want = (X.astype(np.float32).astype(np.float64) * Y.astype(np.float32) + 1e-9).astype(np.float32)
    assert out.dtype == np.float32 and (out == want).all()


def test_unsupported_op_refused_with_its_line():
    # a double's bits: a pair is no double
    m = lower_x64(lambda x: lax.bitcast_convert_type(x, jnp.int64), V)
    with pytest.raises(no64.UnsupportedOpError) as exc:
        no64.demote(m, float_policy="pairs")
    assert "bitcast_convert" in str(exc.value) and "test_pairs_pass.py" in str(exc.value)


def test_unknown_float_policy():
    m = lower_x64(lambda x: x + 1.0, V)
    with pytest.raises(ValueError, match="float_policy"):
        no64.demote(m, float_policy="double")


def test_split_and_join_pairs_round_trip():
    v = np.array([1.0 / 3.0, -1e30, 0.0, -0.0, np.inf, np.nan, 1.7e9 + 1e-4])
    p = no64.split_pairs(v)
    assert p.shape == (7, 2) and p.dtype == np.float32
    j = no64.join_pairs(p)
    assert np.abs(j[:2] - v[:2]).max() <= 2.0**-48 * 1e30
    assert np.signbit(j[3]) and np.isinf(j[4]) and np.isnan(j[5])
    with pytest.raises(ValueError):
        no64.join_pairs(np.zeros((3, 3), np.float32))


def test_cli_float_policy_pairs(tmp_path, capsys):
    src = tmp_path / "m.mlir"
    out = tmp_path / "o.mlir"
    m = lower_x64(lambda x: jnp.sum(x * x) - 1e-10, V)
    no64.io.save(m, str(src))
    assert main(["convert", str(src), "-o", str(out), "--float-policy", "pairs", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["float_policy"] == "pairs" and rep["pair_inputs"] == [0] and rep["pair_outputs"] == [0]
    (got,) = run_module(no64.io.load(str(out)), [no64.split_pairs(V)])
    assert abs(no64.join_pairs(got) - (np.sum(V * V) - 1e-10)) < 1e-13 * np.sum(V * V)
    assert main(["convert", str(src), "-o", str(out), "--float-policy", "quad", "--force"]) == 2


def test_dot_general_over_a_long_contraction_in_chunks():
    # 150 = 3 chunks of 50, batched
    a = RNG.standard_normal((2, 5, 150)) * 1e3
    b = RNG.standard_normal((2, 150, 3))
    got, ref, _ = run(lambda a, b: jnp.einsum("bik,bkj->bij", a, b), a, b)
    close(got, ref)


def test_remainder_on_pairs_against_exact_fmod():
    """``jnp.fmod`` (``stablehlo.remainder``) on pairs against IEEE's fmod of
    the float64 inputs, which is exact: within the published ``2**-44 * |x|``
    (the inputs enter as pairs, about 48 bits), the sign of ``x`` kept, zero
    results signed as ``x``; NaN for a zero divisor or an infinite dividend,
    ``x`` for an infinite divisor."""
    big = np.array([2.0**20 + 1 / 3, -(2.0**20) - 0.7, 1e4 / 3, -1e4 / 3, 7.0, -7.0, 6.0, -6.0])
    rng = np.random.default_rng(3)
    x = np.concatenate([big, rng.standard_normal(40) * 10.0 ** rng.integers(-3, 7, 40),
                        [0.0, -0.0, 5.5, -5.5, 1e-3, 3.0, 9.0, np.inf, -np.inf, np.nan, 2.5, 1.0]])
    y = np.concatenate([[3.0, 3.0, 0.1, -0.1, 7.0, 7.0, -3.0, 3.0],
                        rng.standard_normal(40) * 10.0 ** rng.integers(-2, 3, 40),
                        [2.0, 2.0, 2.75, -2.75, 7.0, 0.0, 3.0, 2.0, 2.0, 2.0, np.inf, np.nan]])
    got, ref, report = run(lambda a, b: jnp.fmod(a, b), x, y)
    assert report.pairs_by_op.get("stablehlo.remainder", 0) == 1
    with np.errstate(invalid="ignore"):
        exact = np.fmod(x, y)
        f32 = np.fmod(x.astype(np.float32), y.astype(np.float32)).astype(np.float64)
    g = got[0]
    np.testing.assert_array_equal(np.isnan(g), np.isnan(exact))
    fin = ~np.isnan(exact)
    assert (np.abs(g[fin] - exact[fin]) <= 2.0**-44 * np.abs(x[fin])).all(), (x[fin], g[fin] - exact[fin])
    assert (np.signbit(g[fin]) == np.signbit(exact[fin])).all()
    # not vacuous: float32 computes other remainders
    assert (np.abs(f32[fin] - exact[fin]) > 2.0**-44 * np.abs(x[fin])).sum() > 10


def test_top_k_on_pairs_is_the_x64_programs():
    """``lax.top_k`` of float64 on pairs: the values (bit for bit, zeros
    signed) and indices the x64 program gives, in IEEE's total order as
    XLA's: NaN first and -NaN last, +0 before -0, ties in index order, and
    values only their lo words tell apart (each input exactly a pair)."""
    lo = 2.0**-30  # below f32's precision at 1: the lo word alone differs
    x = np.array([
        [1.0, 1.0 + lo, 1.0 - lo, 1.0, -0.0, 0.0, np.nan, np.inf],
        [-np.inf, -0.0, 0.0, -0.0, 3.0, 3.0 + 4 * lo, -np.nan, 2.0**100],
        [-1.0 - lo, -1.0, -1.0 + lo, -1.0 - lo, -(2.0**-100), 2.0**-100, -5.0, -1.0],
        [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0],
    ])
    for k in (1, 3, 8):
        got, ref, report = run(lambda v, k=k: lax.top_k(v, k), x)
        assert report.pairs_by_op.get("chlo.top_k") == 1
        np.testing.assert_array_equal(got[0], ref[0])
        assert (np.signbit(got[0]) == np.signbit(ref[0])).all()
        np.testing.assert_array_equal(got[1], ref[1])
    # on a computed operand (exact in float64 too): its pair comes from the op computing it
    got, ref, _ = run(lambda v: lax.top_k(-2.0 * v, 5), x)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
