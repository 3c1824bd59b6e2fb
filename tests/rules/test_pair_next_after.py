"""``jnp.nextafter`` (``chlo.next_after``) on float64 pairs.

The result is the neighbour of ``x`` toward ``y`` among the float64 values
a pair holds (:func:`no64.ir.pairs.next_after`).  Each result is held,
exactly, to a neighbour found by a plain scan: float64 after float64
(``np.nextafter``) from ``x`` toward ``y`` until one is such a value -- its
float32 rounding finite and normal, the rest an f32 that is normal or
zero -- so none lies strictly between.  Its words must be the pair of
that value, and against the x64 program it is the same double wherever
float64's neighbour is one a pair holds, and on the same side of ``x``
everywhere; special values as documented.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

import no64
from no64.ir.pairs import PAIR_LARGEST
from no64.jax.reference import lower_x64, run_module
from support import enable_x64

TINY = 2.0**-126
F32_MAX = float(np.finfo(np.float32).max)
LARGEST = PAIR_LARGEST[0] + PAIR_LARGEST[1]


def _held(w: float) -> bool:
    """Whether the float64 ``w`` is a value a pair holds: finite, its f32
    rounding ``h`` normal (or ``w`` zero), ``w - h`` an f32 normal or zero."""
    if w == 0:
        return True
    if not np.isfinite(w):
        return False
    with np.errstate(over="ignore"):
        h = np.float32(w)
    if not np.isfinite(h) or abs(float(h)) < TINY:
        return False
    rest = w - float(h)  # exact: w and h are within a factor of 2
    lo = np.float32(rest)
    return float(lo) == rest and (lo == 0 or abs(float(lo)) >= TINY)


def _scan(x: float, y: float, limit: int = 64) -> float | None:
    """The first float64 from ``x`` toward ``y`` that a pair holds, by a
    scan of at most ``limit`` doubles (``None`` beyond it)."""
    w = x
    for _ in range(limit):
        w = float(np.nextafter(w, y))
        if abs(w) > LARGEST:
            return float(np.copysign(np.inf, w))
        if _held(w):
            return w
    return None


def _pairs(values: np.ndarray) -> np.ndarray:
    # (the largest pair lies beyond f32's largest value, which split_pairs warns of)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", no64.PairRangeWarning)
        return no64.split_pairs(values)


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    inf, nan = np.inf, np.nan
    cases = [
        # 1.0, powers of two and their negations, both ways
        (1.0, 2.0), (1.0, 0.0), (-1.0, -2.0), (-1.0, 0.0), (0.5, 1.0), (0.5, -1.0),
        (2.0**-60, 1.0), (2.0**-60, 0.0), (2.0**20, inf), (2.0**20, -inf), (2.0**100, 0.0), (-(2.0**127), inf),
        # lo != 0: one bit, 24 bits (1/3, 0.1), a lo on either side of a tie
        (1.0 + 2.0**-30, 2.0), (1.0 + 2.0**-30, 0.0), (1.0 - 2.0**-40, 2.0), (1.0 - 2.0**-40, 0.0),
        (1 / 3, 1.0), (1 / 3, 0.0), (-0.1, 1.0), (-0.1, -1.0), (1e4 / 3, 1e5), (1e4 / 3, -1e5),
        (1.0 + 3 * 2.0**-24, 2.0), (1.0 + 3 * 2.0**-24, 0.0),  # (1 + 2**-22, -2**-24): hi crosses down
        (1.0 + 2.0**-23 + 2.0**-24 - 2.0**-48, 2.0),  # lo at its largest below a tie: hi crosses up
        # huge: f32's largest, the largest pair, beyond
        (F32_MAX, inf), (F32_MAX, 0.0), (LARGEST, inf), (-LARGEST, -inf), (LARGEST, 0.0), (3e38, 3.3e38),
        (inf, 0.0), (-inf, 0.0), (inf, inf), (-inf, 1.0),
        # zeros and the least pair
        (0.0, 1.0), (-0.0, 1.0), (0.0, -1.0), (-0.0, -inf), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0),
        (TINY, 0.0), (-TINY, 1.0), (TINY, 1.0), (-TINY, -1.0),
        # tiny: lo can be at most a few f32 normals, or none
        (2.0**-100, 1.0), (2.0**-100, 0.0), (-(2.0**-110), 0.0), (2.0**-110 * 1.5, 1.0),
        (2.0**-80 * (1 + 2.0**-30), 1.0), (2.0**-80 * (1 + 2.0**-30), 0.0),
        # x == y, NaN
        (1 / 3, 1 / 3), (-2.0, -2.0), (nan, 1.0), (1.0, nan), (-inf, nan),
    ]
    rng = np.random.default_rng(11)
    r = rng.standard_normal(40) * 2.0 ** rng.integers(-60, 61, 40)
    x = np.array([c[0] for c in cases] + list(r))
    y = np.array([c[1] for c in cases] + list(r + rng.choice([-1.0, 1.0], 40) * np.abs(r)))
    # each input exactly the value its pair holds (the converted program sees the pair)
    return no64.join_pairs(_pairs(x)), no64.join_pairs(_pairs(y))


def test_next_after_is_the_neighbour_among_the_pairs_float64_values() -> None:
    x, y = _inputs()

    def fn(a, b):
        r = jnp.nextafter(a, b)
        return r, jnp.nextafter(r, a)

    m = lower_x64(fn, x, y)
    report = no64.demote(m, float_policy="pairs", check=True)
    assert report.pairs_by_op.get("chlo.next_after") == 2
    out, back = run_module(m, [_pairs(x), _pairs(y)])
    got = no64.join_pairs(out)
    with enable_x64(True):
        want = np.asarray(jax.jit(jnp.nextafter)(x, y))

    nan = np.isnan(x) | np.isnan(y)
    np.testing.assert_array_equal(np.isnan(got), nan)
    same = ~nan & (x == y)
    np.testing.assert_array_equal(got[same], y[same])
    np.testing.assert_array_equal(np.signbit(got[same]), np.signbit(y[same]))  # nextafter(0, -0) is -0
    move = ~nan & ~same
    # the words are the pair of the value: hi its f32 rounding, lo the rest, normal or zero
    hi, lo = out[..., 0], out[..., 1]
    fin = np.isfinite(got)
    np.testing.assert_array_equal(hi[fin], got[fin].astype(np.float32))
    assert ((lo[fin] == 0) | (np.abs(lo[fin]) >= TINY)).all()
    assert (lo[~fin] == 0).all()
    scanned = 0
    for i in np.flatnonzero(move):
        xi, yi, gi = float(x[i]), float(y[i]), float(got[i])
        assert (gi > xi) == (yi > xi) and gi != xi, (xi, yi, gi)
        assert np.isinf(gi) or _held(gi), (xi, yi, gi)
        if xi == 0:
            assert gi == np.copysign(TINY, yi - xi)
            continue
        if np.isinf(xi):
            assert gi == np.copysign(LARGEST, xi)
            continue
        if abs(xi) <= 2.0**-102:  # no normal f32 lo fits: the f32 neighbour, flushed below 2**-126
            f = float(np.nextafter(np.float32(xi), np.float32(yi)))
            assert gi == (np.copysign(0.0, xi) if abs(f) < TINY else f), (xi, yi, gi)
            assert np.signbit(gi) == np.signbit(xi)
            continue
        expect = _scan(xi, yi)
        if expect is not None:  # (a scan of 64 doubles reaches every neighbour from 2**-78 up)
            assert gi == expect, (xi, yi, gi, expect)
            scanned += 1
        else:
            assert abs(xi) < 2.0**-78, xi
        # against the x64 program: its double where a pair holds it, the same side always
        wi = float(want[i])
        if _held(wi):
            assert gi == wi, (xi, yi, gi, wi)
        assert np.sign(gi - xi) == np.sign(wi - xi)
    assert scanned > 70
    # stepping back toward x returns x (the values are neighbours both ways)
    b = no64.join_pairs(back)
    np.testing.assert_array_equal(b[move], x[move])
    # not vacuous: these moves are float64's own, which f32 cannot make
    assert (got[move][:6] == want[move][:6]).all() and (got[move][:6].astype(np.float32) == x[move][:6]).any()


def test_a_pair_that_is_no_float64_moves_to_the_nearest_one_beyond_it() -> None:
    """Arithmetic gives pairs whose value no double is (``1 + 2**-100``);
    from one the result is the nearest float64 value a pair holds beyond it,
    found by the scan from the double next to it on the far side."""
    words = np.array([
        (1.0, 2.0**-100), (1.0, -(2.0**-100)), (2.0**120, -(2.0**-60)), (2.0**120, 2.0**-60),
        (-(2.0**120), 2.0**-60), (2.0**-60, 2.0**-120), (3.0, 2.0**-90), (1.0 + 2.0**-23, -(2.0**-80)),
    ], dtype=np.float32)
    x = np.concatenate([words, words])
    toward = np.concatenate([np.full(len(words), np.inf), np.full(len(words), -np.inf)])
    m = lower_x64(jnp.nextafter, toward, toward)
    no64.demote(m, float_policy="pairs", check=True)
    (out,) = run_module(m, [x, _pairs(toward)])
    got = no64.join_pairs(out)
    for (h, lo), t, g in zip(x, toward, got):
        v = Fraction(float(h)) + Fraction(float(lo))
        start = float(v)  # the double nearest v, then the one on the near side of it
        if (Fraction(start) > v) == (t > 0):
            start = float(np.nextafter(start, -t))
        expect = _scan(start, float(t))
        assert expect is not None and (Fraction(expect) > v) == (t > 0)
        assert g == expect, (float(h), float(lo), t, g, expect)


def test_float64_tiny_is_the_pairs_smallest_normal() -> None:
    """``finfo(float64).tiny`` (2**-1022), the smallest positive normal value
    of the type, is a float sentinel as float64's largest is: a module's
    constant and a host argument holding it enter the pairs as float32's
    (2**-126), recorded as a sentinel, not refused as a value below the
    pairs' range.  Equinox's step past a time, ``where(x == 0, tiny,
    nextafter(x, inf))``, keeps its meaning under exact pairs: positive
    where the x64 program's is, and above every such x."""
    f64_tiny = float(np.finfo(np.float64).tiny)

    def step(x: jax.Array) -> jax.Array:
        return jnp.where(x == 0, jnp.finfo(x.dtype).tiny, jnp.nextafter(x, jnp.inf))

    xs = np.array([0.0, -0.0, 1.0, 0.1, 2.0**-100, 3.0e38, -2.0**-100])
    with enable_x64():
        want = np.asarray(jax.jit(step)(xs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pair range warning: a sentinel, mapped
        got = np.asarray(no64.jit(step, policy="exact", float_policy="pairs", restore_dtypes=True)(xs))
    assert got[0] == got[1] == TINY and want[0] == want[1] == f64_tiny
    assert (np.sign(got) == np.sign(want)).all() and (got > xs).all()
    held = [2, 5]  # 1, 3e38: float64's neighbour is held by a pair there (0.1's is not)
    assert (got[held] == want[held]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        echoed = np.asarray(no64.jit(lambda v: v * 1.0, policy="exact", float_policy="pairs",
                                     restore_dtypes=True)(np.array([f64_tiny, -f64_tiny, 2.0])))
    assert echoed.tolist() == [TINY, -TINY, 2.0]
