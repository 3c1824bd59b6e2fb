"""``convolution`` on float64 pairs (``no64.rules.pair_rules.convolution``):
the contraction of the input's patches with the kernel, as ``dot_general``
on pairs computes it (exact f32 slices from 32 elements on).

Each converted program's outputs are held to the exact convolution of its
pair inputs (rationals of ``hi + lo``) within the bound of the dot it
becomes (``support.split_dot_bound``, the patch as the row) -- on inputs
spanning ``2**-60`` to ``2**60`` with cancelling terms, through padding,
strides, input and window dilation and every layout; inf and NaN where the
x64 program has them; and grouped (feature or batch groups, depthwise)
convolutions, a contraction per group.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import lower_x64, run_module
from no64.rules.pair_rules import DOT_SPLIT_MIN
from support import ir, make_context, split_dot_bound

RNG = np.random.default_rng(5)


def _convert(fn: Callable, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The x64 program's output, the converted one's (joined), and the pair inputs."""
    m = lower_x64(fn, x, w)
    (want,) = run_module(m, [x, w], strict=False)
    no64.demote(m, float_policy="pairs", check=True)
    px, pw = no64.split_pairs(x), no64.split_pairs(w)
    (out,) = run_module(m, [px, pw])
    return want, no64.join_pairs(out), px, pw


def _exact(p: np.ndarray) -> np.ndarray:
    join = np.vectorize(lambda h, lo: Fraction(float(h)) + Fraction(float(lo)), otypes=[object])
    return join(p[..., 0], p[..., 1])


def _patches(x: np.ndarray, window: tuple[int, ...], strides: tuple[int, ...], pads: list[tuple[int, int]],
             lhs_dil: tuple[int, ...], rhs_dil: tuple[int, ...]) -> np.ndarray:
    """``[N, out..., window..., C]`` of an ``[N, spatial..., C]`` array of rationals."""
    r = len(window)
    shape = [(x.shape[1 + i] - 1) * lhs_dil[i] + 1 + pads[i][0] + pads[i][1] for i in range(r)]
    full = np.full((x.shape[0], *shape, x.shape[-1]), Fraction(0), dtype=object)
    for idx in product(*(range(n) for n in x.shape[1:-1])):
        at = tuple(idx[i] * lhs_dil[i] + pads[i][0] for i in range(r))
        if all(0 <= at[i] < shape[i] for i in range(r)):
            full[(slice(None), *at, slice(None))] = x[(slice(None), *idx, slice(None))]
    outs = [(shape[i] - ((window[i] - 1) * rhs_dil[i] + 1)) // strides[i] + 1 for i in range(r)]
    res = np.empty((x.shape[0], *outs, *window, x.shape[-1]), dtype=object)
    for o in product(*(range(n) for n in outs)):
        for k in product(*(range(n) for n in window)):
            at = tuple(o[i] * strides[i] + k[i] * rhs_dil[i] for i in range(r))
            res[(slice(None), *o, *k, slice(None))] = full[(slice(None), *at, slice(None))]
    return res


def _check(got: np.ndarray, px: np.ndarray, pw: np.ndarray, window: tuple[int, ...], strides: tuple[int, ...],
           pads: list[tuple[int, int]], lhs_dil: tuple[int, ...], rhs_dil: tuple[int, ...]) -> float:
    """``got`` (``[N, out..., O]``) against the exact convolution of the pair
    inputs (``x`` NHWC, ``w`` HWIO) within the dot's bound; the worst error
    relative to it."""
    p = _patches(_exact(px), window, strides, pads, lhs_dil, rhs_dil)
    hi = _patches(np.vectorize(Fraction, otypes=[object])(np.abs(px[..., 0]).astype(np.float64)),
                  window, strides, pads, lhs_dil, rhs_dil)
    k = int(np.prod(window)) * p.shape[-1]
    rows = p.reshape(-1, k)
    row_hi = hi.reshape(-1, k)
    cols = _exact(pw).reshape(k, -1)
    col_hi = np.abs(pw[..., 0]).astype(np.float64).reshape(k, -1)
    flat = got.reshape(rows.shape[0], cols.shape[1])
    worst = 0.0
    for i in range(rows.shape[0]):
        rmax = max(abs(v) for v in rows[i])
        for j in range(cols.shape[1]):
            exact = sum((a * b for a, b in zip(rows[i], cols[:, j])), Fraction(0))
            if k >= DOT_SPLIT_MIN:
                bound = split_dot_bound(rows[i], cols[:, j], float(max(row_hi[i])), float(col_hi[:, j].max()))
            else:
                bound = 2.0**-45 * k * rmax * max(abs(v) for v in cols[:, j]) + Fraction(2) ** -125
            err = abs(Fraction(float(flat[i, j])) - exact)
            assert err <= bound, (i, j, float(err), float(bound))
            if bound:
                worst = max(worst, float(err / bound))
    return worst


def _adversarial(shape: tuple[int, ...]) -> np.ndarray:
    x = RNG.standard_normal(shape) * np.exp2(RNG.integers(-60, 61, size=shape))
    flat = x.reshape(-1)
    flat[1::7] = -flat[0:-1:7][: flat[1::7].size]  # cancelling neighbours
    return x


CASES = [
    # window, strides, padding, lhs dilation, rhs dilation, input, kernel (NHWC / HWIO)
    ((3, 3), (1, 1), [(1, 1), (1, 1)], (1, 1), (1, 1), (2, 7, 6, 3), 4),  # k = 27: elementwise dot
    ((3, 3), (2, 1), [(0, 0), (2, 1)], (1, 1), (1, 2), (1, 9, 8, 4), 3),  # k = 36: exact slices
    ((2, 3), (1, 2), [(1, 2), (0, 1)], (2, 1), (1, 1), (2, 5, 7, 6), 2),  # input dilation
    ((5,), (1,), [(2, 2)], (1,), (1,), (2, 40, 16), 3),  # 1-d, k = 80
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_convolution_within_the_dots_bound(case: int) -> None:
    window, strides, pads, lhs_dil, rhs_dil, xshape, o = CASES[case]
    r = len(window)
    spec = ("NHWC", "HWIO", "NHWC") if r == 2 else ("NWC", "WIO", "NWC")
    x = _adversarial(xshape)
    w = _adversarial((*window, xshape[-1], o))

    def conv(a, b):
        return lax.conv_general_dilated(a, b, strides, pads, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
                                        dimension_numbers=spec)

    want, got, px, pw = _convert(conv, x, w)
    assert got.shape == want.shape
    _check(got, px, pw, window, strides, pads, lhs_dil, rhs_dil)


def test_other_layouts_and_a_reversed_window() -> None:
    """NCHW/OIHW in, and a transposed convolution (JAX reverses its kernel):
    the same values as the NHWC program, within the x64 program's error
    plus the pairs' (2**-44 of the contraction's magnitudes)."""
    x = RNG.standard_normal((2, 3, 8, 7))
    w = RNG.standard_normal((4, 3, 3, 2))
    for fn in (lambda a, b: lax.conv(a, b, (1, 2), "SAME"),
               lambda a, b: lax.conv_transpose(a, b, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))):
        want, got, _, _ = _convert(fn, x, w)
        scale = np.max(np.abs(x)) * np.max(np.abs(w)) * w[0].size
        assert got.shape == want.shape and np.max(np.abs(got - want)) <= 2.0**-44 * scale


def test_inf_and_nan_as_in_the_x64_program() -> None:
    x = RNG.standard_normal((1, 2, 6, 6))
    w = RNG.standard_normal((2, 2, 3, 3))
    x[0, 0, 2, 2], x[0, 1, 4, 4], x[0, 0, 0, 5] = np.inf, -np.inf, np.nan
    want, got, _, _ = _convert(lambda a, b: lax.conv(a, b, (1, 1), "SAME"), x, w)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    assert np.max(np.abs(got[finite] - want[finite])) <= 2.0**-44 * np.max(np.abs(x[np.isfinite(x)])) * 18 * 3


GROUPED = [
    # input (NHWC), kernel (HWIO), feature groups, batch groups
    ((2, 6, 5, 4), (3, 3, 2, 6), 2, 1),  # two groups
    ((2, 7, 6, 4), (3, 3, 1, 8), 4, 1),  # depthwise: a group per input feature, two outputs each
    ((1, 6, 5, 8), (3, 3, 4, 4), 2, 1),  # groups of 36 elements: exact slices
    ((4, 6, 5, 3), (3, 3, 3, 4), 1, 2),  # two batch groups
]


@pytest.mark.parametrize("spec", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")])
@pytest.mark.parametrize("case", range(len(GROUPED)))
def test_grouped_convolution_as_in_the_x64_program(case: int, spec: tuple[str, str, str]) -> None:
    """``feature_group_count`` / ``batch_group_count`` above 1 (a grouped, a
    depthwise convolution): each group's output within the dot's bound of
    the exact convolution of its slices, and the whole within 2**-44 of
    the contractions' magnitudes of the x64 program, in either layout."""
    xshape, wshape, fg, bg = GROUPED[case]
    x, w = _adversarial(xshape), _adversarial(wshape)
    pads = [(1, 1), (1, 1)]

    def conv(a, b):
        return lax.conv_general_dilated(a, b, (1, 1), pads, dimension_numbers=spec,
                                        feature_group_count=fg, batch_group_count=bg)

    to_spec = {"NHWC": (0, 1, 2, 3), "NCHW": (0, 3, 1, 2)}
    xt, wt = (x, w) if spec[0] == "NHWC" else (x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1))
    want, got, _, _ = _convert(conv, xt, wt)
    assert got.shape == want.shape
    got, want = got.transpose(np.argsort(to_spec[spec[0]])), want.transpose(np.argsort(to_spec[spec[0]]))
    px, pw = no64.split_pairs(x), no64.split_pairs(w)
    groups, o = fg * bg, wshape[-1] // (fg * bg)
    nb, c = xshape[0] // bg, xshape[-1] // fg
    for g in range(groups):
        xs = px[g * nb:(g + 1) * nb] if bg > 1 else px[..., g * c:(g + 1) * c, :]
        _check(got[..., g * o:(g + 1) * o], xs, pw[..., g * o:(g + 1) * o, :], (3, 3), (1, 1), pads, (1, 1), (1, 1))
    scale = np.max(np.abs(x)) * np.max(np.abs(w)) * 9 * c
    assert np.max(np.abs(got - want)) <= 2.0**-44 * scale


def test_a_reversed_window_as_in_the_x64_program() -> None:
    """``window_reversal`` (which JAX does not write, a StableHLO producer
    may): the kernel reversed along those dimensions."""
    x = RNG.standard_normal((1, 2, 6, 5))
    w = RNG.standard_normal((3, 2, 3, 2))
    text = lower_x64(lambda a, b: lax.conv(a, b, (1, 1), "SAME"), x, w).operation.get_asm()
    assert "reverse = [false, false]" in text
    reversed_text = text.replace("reverse = [false, false]", "reverse = [true, false]")
    (plain,) = run_module(text, [x, w], strict=False)
    (want,) = run_module(reversed_text, [x, w], strict=False)
    assert not np.allclose(plain, want)
    m = ir.Module.parse(reversed_text, make_context())
    no64.demote(m, float_policy="pairs", check=True)
    (out,) = run_module(m, [no64.split_pairs(x), no64.split_pairs(w)])
    got = no64.join_pairs(out)
    assert np.max(np.abs(got - want)) <= 2.0**-44 * np.max(np.abs(x)) * np.max(np.abs(w)) * w[0].size
