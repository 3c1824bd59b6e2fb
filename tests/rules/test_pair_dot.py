"""``dot_general`` on float64 pairs by exact slices (``no64.rules.pair_dot``).

Each converted program's outputs are held to the exact dot of its pair
inputs (rationals of ``hi + lo``) within the bound the module states --
``TAU + SUM_ACCURACY`` (about ``2**-45.2``) of ``(|A| |B|)_ij`` where the
levels computed at run time reach it, else ``k phi(slices)`` of the rows'
scalings -- on adversarial inputs, on each matrix engine datapath a
profile may name (int8 as on a TPU, bf16 as on Neuron, f32), all of which
the CPU computes exactly as those devices do; and compared with the x64
program through ``no64.demote`` and ``no64.jit``.  On the int8 datapath the
residues (Ozaki scheme II) compute the data of the span they cover and the
levels the rest: a test tells which ran by poisoning the other's branch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
import no64.rules.pair_dot as pair_dot
import no64.rules.pair_rules as pair_rules
from no64.jax.reference import lower_x64, run_module
from no64.rules.pair_dot import SUM_ACCURACY, TAU, plan
from no64.rules.pair_rules import DOT_SPLIT_MIN
from no64.targets import F32_MATMUL, I32_MAX, NEURON_MATMUL, TPU_MATMUL, Matmul, target
from support import enable_x64, split_dot_bound

RNG = np.random.default_rng(11)
#: A TPU's int8 datapath with products by residues on where they need fewer
#: products (the ``tpu`` profile's own has them off: measured slower there).
INT8 = dataclasses.replace(TPU_MATMUL, residues=True)

PATHS = {"i8": INT8, "bf16": NEURON_MATMUL, "f32": F32_MATMUL}


def _profile(path: Matmul) -> no64.targets.Target:
    """The generic profile with ``path`` as its matrix engine (a TPU's,
    Neuron's): the CPU computes each exactly as the device does."""
    return dataclasses.replace(target("generic"), name=f"generic-{path.operands}", matmul=path)


def _convert(fn: Callable, *args: np.ndarray, path: Matmul = F32_MATMUL) -> tuple[str, list[np.ndarray], np.ndarray]:
    """The converted module's text, its inputs (pairs for float64) and its output joined."""
    m = lower_x64(fn, *args)
    report = no64.demote(m, float_policy="pairs", check=True, target=_profile(path))
    ins = [no64.split_pairs(a) if i in report.pair_inputs else np.asarray(a) for i, a in enumerate(args)]
    (out,) = run_module(m, ins)
    return str(m), ins, no64.join_pairs(out)


def _exact(x: np.ndarray) -> np.ndarray:
    """Rationals of a pair (``S x 2``) or of an f32 array."""
    if x.dtype == np.float32 and x.ndim and x.shape[-1] == 2:
        join = np.vectorize(lambda h, lo: Fraction(float(h)) + Fraction(float(lo)), otypes=[object])
        return join(x[..., 0], x[..., 1])
    return np.vectorize(lambda v: Fraction(float(v)), otypes=[object])(x)


def _hi(x: np.ndarray) -> np.ndarray:
    return np.abs(x[..., 0] if x.dtype == np.float32 and x.ndim and x.shape[-1] == 2 else x).astype(np.float64)


def _check_matmul(a_in: np.ndarray, b_in: np.ndarray, got: np.ndarray, path: Matmul = F32_MATMUL) -> float:
    """``got`` (``M x N``) against the exact product of ``a_in`` (``M x K``)
    and ``b_in`` (``K x N``) within the stated bound; the worst error
    relative to ``(|A| |B|)_ij``."""
    a, b = _exact(a_in), _exact(b_in)
    ha, hb = _hi(a_in), _hi(b_in)
    worst = 0.0
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            exact = sum((x * y for x, y in zip(a[i], b[:, j])), Fraction(0))
            p = sum((abs(x * y) for x, y in zip(a[i], b[:, j])), Fraction(0))
            err = abs(Fraction(float(got[i, j])) - exact)
            bound = split_dot_bound(a[i], b[:, j], float(ha[i].max()), float(hb[:, j].max()), path)
            assert err <= bound, (i, j, float(err), float(bound))
            if p:
                worst = max(worst, float(err / p))
    return worst


def _adversarial(k: int, m: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of every kind the bound must hold on: normal;
    spanning ``2**+-20`` and ``2**+-60``; zero; one huge element; signed
    zeros; a cancelling dot; a row whose largest element meets a zero of
    the column (``(|A| |B|)_ij`` ``2**40`` below ``k max|A_i:| max|B_:j|``);
    rows and columns from ``2**-40`` to ``2**30`` apart."""
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    a[1] *= 2.0 ** rng.integers(-20, 21, k)
    a[2] *= 2.0 ** rng.integers(-60, 61, k)
    a[3] = 0.0
    a[4, 7] = 2.0**40
    a[5, ::2] = -0.0
    b[:, 1] *= 2.0 ** rng.integers(-20, 21, k)
    b[:, 2] = -np.abs(b[:, 2]) * 2.0 ** rng.integers(-60, 1, k)
    b[7, 3] = 0.0  # meets a[4]'s huge element
    b[-1, 0] = 0.0
    b[-1, 0] = -float(a[0, :-1] @ b[:-1, 0]) / a[0, -1]  # a[0] . b[:, 0] cancels
    # rows and columns apart (those spanning 2**+-60 themselves left, so
    # that every element stays within the pairs' range)
    a *= np.where(np.arange(m)[:, None] == 2, 1.0, 2.0 ** rng.integers(-40, 31, (m, 1)))
    b *= np.where(np.arange(n)[None, :] == 2, 1.0, 2.0 ** rng.integers(-40, 31, (1, n)))
    return a, b


@pytest.mark.parametrize("name", list(PATHS))
def test_plan_keeps_every_dot_and_sum_exact(name: str) -> None:
    """Every digit within the operand type's exact integers, every dot's
    partial sums within the accumulator's exact range, every level's sum
    over a chunk within ``2**30`` and the carried sum within ``i32``; the
    fewest levels reach the bound on data of about 48 bits."""
    path = PATHS[name]
    exact_digit = {"i8": 127, "bf16": 256, "f32": 2**24}[path.operands]
    for k in (DOT_SPLIT_MIN, 100, 256, 600, 4096, 5000, 10**5):
        p = plan(k, path)
        d, r = p.digit_bounds
        assert p.chunk * p.chunks >= k and p.chunk <= k
        assert max(d) <= exact_digit and len(d) == p.slices
        assert all(r[i] < p.grid(i + 1) for i in range(p.slices))  # the remainder within its digit's unit
        for lv in p.levels:
            assert sorted(pr for g in p.groups(lv) for pr in g) == p.products(lv)
            for g in p.groups(lv):
                assert p.chunk * sum(d[i - 1] * d[j - 1] for i, j in g) <= path.exact_below
            assert p.level_bound(lv) <= 2**30
        assert p.carries < I32_MAX
        assert [i for ph in p.phases for i in ph] == list(range(1, p.slices + 1))
        assert all((ph[-1] - ph[0] + 1) * p.beta <= 22 for ph in p.phases)
        # phi decreases with the digits; the fewest reach TAU where (|A||B|)_ij is k / 4
        phis = [p.phi(s) for s in range(p.fewest, p.slices + 1)]
        assert phis == sorted(phis, reverse=True) and phis[0] <= TAU / 16
        # (|A||B|)_ij in scaled units is at most 4k, k max|A_i:| max|B_:j| at least k
        span = pair_dot.SPAN_BITS if path.branches else pair_dot.STATIC_SPAN_BITS
        assert p.cap >= p.slack * 2.0 ** (span - 2)
    assert plan(512, INT8).chunks == 1 and plan(10**5, INT8).chunks > 1
    assert plan(5000, NEURON_MATMUL).chunks > 1


@pytest.mark.parametrize("name", list(PATHS))
def test_adversarial_magnitudes_against_exact_on_each_datapath(name: str) -> None:
    """Normal rows; rows spanning 2**+-20 and 2**+-60; zeros; one huge
    element meeting a zero; signed zeros; cancellation: within the bound on
    each datapath, and relative to ``(|A| |B|)_ij`` wherever the levels
    reach it -- Neuron's (no ``case``, every level always) covers less
    span."""
    path = PATHS[name]
    a, b = _adversarial(100, 7, 5, np.random.default_rng(7))
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=path)
    assert "f64" not in text
    worst = _check_matmul(ins[0], ins[1], got, path)
    assert worst > 0  # not vacuous: the digits do round
    assert (got[3] == 0).all()
    if path.branches:
        # every output is within its relative bound (the huge element
        # against a zero needs the levels computed at run time)
        assert worst <= TAU + 2 * SUM_ACCURACY


def test_the_levels_computed_at_run_time_are_what_wide_data_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the fewest levels only, an output whose ``(|A| |B|)_ij`` is far
    below ``k max|A_i:| max|B_:j|`` (a row's largest element meets a zero)
    misses its relative bound; with the levels the data need, it holds."""
    k = 64
    a = RNG.standard_normal((2, k))
    b = RNG.standard_normal((k, 2))
    a[0, 3] = 2.0**30
    b[3, 0] = 0.0

    def rel_error() -> float:
        _, ins, got = _convert(lambda x, y: x @ y, a, b, path=INT8)
        ea, eb = _exact(ins[0]), _exact(ins[1])
        exact = sum((x * y for x, y in zip(ea[0], eb[:, 0])), Fraction(0))
        p = sum((abs(x * y) for x, y in zip(ea[0], eb[:, 0])), Fraction(0))
        return float(abs(Fraction(float(got[0, 0])) - exact) / p)

    assert rel_error() <= TAU + 2 * SUM_ACCURACY
    monkeypatch.setattr(pair_dot, "SPAN_BITS", 0)
    assert plan(k, INT8).slices == plan(k, INT8).fewest
    assert rel_error() > TAU + 2 * SUM_ACCURACY


def _dots(text: str) -> list[tuple[str, str, int]]:
    """Each ``dot_general``'s operand element types and its lhs contraction length."""
    out = []
    for line in text.splitlines():
        if "stablehlo.dot_general" not in line:
            continue
        lhs, rhs = re.findall(r"tensor<([0-9x]+)x(i8|bf16|f32|i32)>", line.split(":")[-1])[:2]
        contracting = int(re.search(r"contracting_dims = \[(\d+)\]", line).group(1))
        out.append((lhs[1], rhs[1], int(lhs[0].split("x")[contracting])))
    return out


def test_the_tpu_module_holds_int8_dots_and_one_pass_bf16_ones() -> None:
    """On a TPU's datapath the products are int8 dots (into i32): no f32
    dot at HIGHEST (six bf16 passes); the estimate of ``|A| |B|`` (shared
    by the choice of the residues and of the levels) and the dot of signs
    for inf and NaN are single bf16 passes."""
    a, b = RNG.standard_normal((8, 300)), RNG.standard_normal((300, 6))
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=INT8)
    dots = _dots(text)
    assert "HIGHEST" not in text and "f64" not in text
    assert {(x, y) for x, y, _ in dots} == {("i8", "i8"), ("bf16", "bf16")}
    assert sum(x == "bf16" for x, _, _ in dots) == 2
    assert "stablehlo.while" in text  # the levels the data need
    # the residues: one int8 dot batched over the moduli, beside the levels in a case
    cp = pair_dot.scheme(300, INT8)
    assert cp is not None and "stablehlo.case" in text
    assert len(re.findall(rf"tensor<{len(cp.moduli)}x1x8x300xi8>, tensor<{len(cp.moduli)}x1x300x6xi8>", text)) == 1
    _check_matmul(ins[0], ins[1], got, INT8)


def test_the_neuron_module_holds_bf16_dots_whose_sums_stay_below_2_pow_24() -> None:
    """On Neuron's datapath every dot is bf16 x bf16 -> f32, each a group of
    digit products whose partial sums stay integers below 2**24 (the
    contraction chunked), with no ``case`` or ``while`` (Neuron has no
    ``lax.cond``)."""
    k = 700
    a, b = RNG.standard_normal((4, k)), RNG.standard_normal((k, 3))
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=NEURON_MATMUL)
    p = plan(k, NEURON_MATMUL)
    d, _ = p.digit_bounds
    allowed: dict[int, int] = {}  # a dot's contraction length: its group's largest partial sum
    for lv in p.levels:
        for g in p.groups(lv):
            c = p.chunk * len(g)
            allowed[c] = max(allowed.get(c, 0), p.chunk * sum(d[i - 1] * d[j - 1] for i, j in g))
    dots = _dots(text)
    assert all(x == y == "bf16" for x, y, _ in dots)
    assert "stablehlo.case" not in text and "stablehlo.while" not in text and "HIGHEST" not in text
    for _, _, c in dots:
        if c == k:
            continue  # the dot of signs (-1, 0, 1): sums within k
        assert c in allowed and allowed[c] < 2**24
    _check_matmul(ins[0], ins[1], got, NEURON_MATMUL)


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


@pytest.mark.parametrize("name", ["f32", "bf16"])
def test_a_contraction_over_the_chunk_limit_against_exact(name: str) -> None:
    k = 5000
    path = PATHS[name]
    assert plan(k, path).chunks > 1
    a = RNG.standard_normal((2, k)) * 2.0 ** RNG.integers(-40, 40, k)
    b = RNG.standard_normal((k, 2))
    b[:, 1] = -b[:, 1] * 2.0**70
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=path)
    _check_matmul(ins[0], ins[1], got, path)


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
    scale = np.abs(a).max(1)[:, None] * np.abs(b).max(0)[None, :] * a.shape[1] * 4
    # the inputs enter rounded to pairs (2**-48 relative each)
    tol = (TAU + SUM_ACCURACY + 2.0**-46) * np.abs(a) @ np.abs(b) + plan(96).phi(plan(96).slices) * scale
    assert (np.abs(got - ref) <= tol).all()
    fn = no64.jit(lambda x, y: jnp.einsum("ik,kj->ij", x, y), float_policy="pairs", restore_dtypes=True)
    got_jit = np.asarray(fn(a, b))
    assert got_jit.dtype == np.float64
    assert (np.abs(got_jit - ref) <= tol).all()
    f32 = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    assert np.abs(f32 - ref).max() > 1e3 * np.abs(got - ref).max()


@pytest.mark.parametrize("name", ["f32", "i8"])
def test_inf_and_nan_reach_the_outputs_they_reach_in_float64(name: str) -> None:
    """Rows and columns holding an inf or a NaN, an inf meeting a zero: on
    the int8 datapath the other outputs by residues."""
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
    _, _, got = _convert(lambda x, y: x @ y, a, b, path=PATHS[name])
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


# ------------------------------------------------------------- residues (CRT)
def _f32_mod(x: int, m: int) -> int:
    """The module's reduction of an f32 integer (``x - m round(x fl(1/m))``),
    every step rounded to f32 as the device does."""
    xf = np.float32(x)
    assert int(xf) == x  # exact in f32
    q = np.round(np.float32(xf * np.float32(1 / m)))  # numpy rounds half to even
    return int(np.float32(xf - np.float32(q * np.float32(m))))


def _rebuilt(c: int, cp: pair_dot.CrtPlan) -> int:
    """``c`` through the plan's steps: its balanced residues, Garner's digits
    (each reduction as the module computes it in f32) and their sum."""
    res = [_f32_mod(c % m - m if c % m > m // 2 else c % m, m) for m in cp.moduli]
    v: list[int] = []
    for (inv, ws), m, ci in zip(cp.garner, cp.moduli, res):
        acc = inv * ci - sum(w * vj for w, vj in zip(ws, v))
        assert abs(acc) < 2**22
        v.append(_f32_mod(acc, m) if v else acc)
        assert abs(v[-1]) <= m // 2
    assert all(abs(vi) <= m // 2 for vi, m in zip(v, cp.moduli))
    sums = [sum(vi * (ds[t] if t < len(ds) else 0) for vi, ds in zip(v, cp.positions))
            for t in range(len(cp.positions[-1]))]
    assert max(abs(s) for s in sums) < 2**24  # exact f32 integers
    return sum(s * 2 ** (12 * t) for t, s in enumerate(sums))


@pytest.mark.parametrize("k", [1, 7, 32, 1024, 4096, 140_000])
def test_residue_plan_rebuilds_every_product_exactly(k: int) -> None:
    """The moduli are pairwise coprime odd numbers whose balanced residues
    are int8s; each chunk's int8 dot stays within i32; every integer the
    product ``C'`` can be (up to ``k max|A'| max|B'|``, both signs) comes
    back exactly from its residues through Garner's digits as the module
    reduces them in f32; and the residues' error per term ``phi`` keeps the
    bound for data of the typical span while computing fewer products than
    the levels (36 at 4096: 16)."""
    cp = pair_dot.crt_plan(k, INT8)
    assert cp is not None and pair_dot.scheme(k, INT8) == cp
    assert all(m % 2 and m <= 255 for m in cp.moduli)
    assert all(np.gcd(a, b) == 1 for i, a in enumerate(cp.moduli) for b in cp.moduli[i + 1:])
    assert cp.chunk * 127**2 <= I32_MAX and cp.chunk * cp.chunks >= k
    assert cp.largest == 2**55 and cp.unit == 2.0**-54  # 8 digits of 7 bits: 55 bits and the sign
    for (inv, ws), m, p in zip(cp.garner, cp.moduli, cp.prefixes):
        assert (inv * p) % m == 1 and all((w - q * inv) % m == 0 for w, q in zip(ws, cp.prefixes))
    rng = np.random.default_rng(k)
    top = cp.product_bound
    for c in [top, -top, 0, 1, -1, top // 3, *(int(x) for x in rng.integers(-2**62, 2**62, 4))]:
        assert _rebuilt(c, cp) == c
    reach = sum(m // 2 * q for m, q in zip(cp.moduli, cp.prefixes))
    assert reach >= top  # and one modulus fewer would not reach
    assert sum(m // 2 * q for m, q in zip(cp.moduli[:-1], cp.prefixes[:-1])) < top
    assert cp.phi <= 4 * TAU * 2.0**-pair_dot._TYPICAL_BITS
    counts = pair_dot.products(k, INT8)
    assert counts["residues"] == len(cp.moduli) < counts["levels"]
    if k == 4096:
        assert counts == {"levels": 36, "residues": 16}
    if k == 140_000:
        assert cp.chunks == 2 and len(cp.moduli) == 17
    assert pair_dot.crt_plan(k, NEURON_MATMUL) is None and pair_dot.crt_plan(k, F32_MATMUL) is None


def _poisoned(monkeypatch: pytest.MonkeyPatch, name: str, a: np.ndarray,
              b: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """``a @ b`` on the TPU's datapath with the scheme ``name`` (``_levels``
    or ``_crt``) giving NaN: an output is NaN exactly where that branch
    ran, so a result within its bound shows that the other one ran."""
    original = getattr(pair_dot, name)

    def poisoned(*args: object) -> pair_dot.P.Pair:
        z = original(*args)
        nan = pair_dot._splat(z.hi, float("nan"))
        return pair_dot.P.Pair(pair_dot._bin("multiply", z.hi, nan), z.lo)

    with monkeypatch.context() as mp:
        mp.setattr(pair_dot, name, poisoned)
        text, ins, got = _convert(lambda x, y: x @ y, a, b, path=INT8)
    assert "stablehlo.case" in text
    assert not np.isnan(got).any(), f"the poisoned {name} ran"
    return ins, got


def _cases(k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the kinds the residues take: normal; each row and column
    scaled by ``2**U(-40, 40)`` (exact: the rows' scalings); a cancelling
    dot; a row and a column at the largest magnitude the scaling leaves
    (``|C'|`` at its bound, both signs); a zero row; signed zeros."""
    m, n = 6, 4
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a[1] = np.nextafter(2.0, 0)  # every |A'| at 2**55 once scaled: |C'| at its bound
    b[:, 1] = np.nextafter(2.0, 0)
    b[:, 2] = -np.nextafter(2.0, 0)
    a[2] = 0.0
    a[3, ::2] = -0.0
    if k > 1:
        b[-1, 0] = 0.0
        b[-1, 0] = -float(a[0, :-1] @ b[:-1, 0]) / a[0, -1]  # a[0] . b[:, 0] cancels
    a *= 2.0 ** rng.integers(-40, 41, (m, 1))
    b *= 2.0 ** rng.integers(-40, 41, (1, n))
    return a, b


@pytest.mark.parametrize("k", [1, 7, 1024])
def test_residues_against_exact(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Normal rows, rows and columns ``2**+-40`` apart, a cancelling dot,
    ``|C'|`` at its bound, zeros and signed zeros: computed by residues (the
    levels' branch poisoned, no output changes), every output within the
    bound of ``(|A| |B|)_ij`` against the exact rational dot; contractions
    shorter than ``DOT_SPLIT_MIN`` taken through the same path."""
    monkeypatch.setattr(pair_rules, "DOT_SPLIT_MIN", 1)
    a, b = _cases(k, np.random.default_rng(k))
    ins, got = _poisoned(monkeypatch, "_levels", a, b)
    worst = _check_matmul(ins[0], ins[1], got, INT8)
    assert 0 < worst <= TAU + 2 * SUM_ACCURACY
    assert (got[2] == 0).all()


def test_wide_exponent_data_fall_back_to_the_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Elements of a row spanning ``2**+-40``, its largest meeting a zero
    (``(|A| |B|)_ij`` far below ``k max|A_i:| max|B_:j|``): the residues'
    55 bits do not cover the span, so the levels run (the
    residues' branch poisoned, no output changes) and hold it; without
    the residues (``RESIDUES`` off) the module holds no branch before the
    levels' loop."""
    k = 64
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, k)), rng.standard_normal((k, 2))
    a[0] *= 2.0 ** rng.integers(-40, 41, k)
    b[np.argmax(np.abs(a[0])), 0] = 0.0
    ins, got = _poisoned(monkeypatch, "_crt", a, b)
    assert _check_matmul(ins[0], ins[1], got, INT8) <= TAU + 2 * SUM_ACCURACY
    monkeypatch.setattr(pair_dot, "RESIDUES", False)
    m = lower_x64(lambda x, y: x @ y, a, b)
    no64.demote(m, float_policy="pairs", check=True, target=_profile(INT8))
    text = str(m)
    assert "stablehlo.while" in text and "stablehlo.case" not in text.split("stablehlo.while")[0]
    assert "x64xi8>" in text and not re.search(r"tensor<\d+x1x3x64xi8>", text)


def test_the_residues_of_a_contraction_over_the_chunk_limit_against_exact() -> None:
    """``k = 140000``: the int8 dots of the residues chunked (each chunk's
    sum within i32), reduced and summed over the chunks, 17 moduli (the
    most of any contraction tested): within the relative bound."""
    k = 140_000
    cp = pair_dot.crt_plan(k, INT8)
    assert cp is not None and cp.chunks == 2 and len(cp.moduli) == 17
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, k)), rng.standard_normal((k, 2))
    b[:, 1] = np.nextafter(2.0, 0) * np.sign(a[1])  # no cancellation: |C'| near its bound
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=INT8)
    assert re.search(r"tensor<17x1x2x2x70000xi8>", text)
    assert _check_matmul(ins[0], ins[1], got, INT8) <= TAU + 2 * SUM_ACCURACY


def test_the_tpu_profile_takes_the_levels() -> None:
    """On a TPU v5e the residues were measured 4 to 6 times slower than the
    levels (docs/devices.md): its profile computes a float64 dot by the
    levels alone, with no batched dot over moduli."""
    assert not TPU_MATMUL.residues and target("tpu").matmul is TPU_MATMUL
    assert pair_dot.scheme(1024, TPU_MATMUL) is None and pair_dot.scheme(1024, INT8) is not None
    a, b = RNG.standard_normal((2, 300)), RNG.standard_normal((300, 3))
    text, ins, got = _convert(lambda x, y: x @ y, a, b, path=TPU_MATMUL)
    assert "xi8>) -> tensor<1x2x3xi32>" in text and not re.search(r"tensor<\d+x1x2x300xi8>", text)
    _check_matmul(ins[0], ins[1], got, TPU_MATMUL)
