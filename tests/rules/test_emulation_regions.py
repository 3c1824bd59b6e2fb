"""Emulated 64-bit integers through ops with regions and through carried
values: reductions, cumulative sums, sorts, scatters, loops, branches and
calls, and the ops that move elements (gathers, slices, pads).

Each program is JAX's own x64 program, converted under ``policy="exact"``
and compared bit for bit with the 64-bit program on the CPU backend
(:func:`no64.jax.reference.compare_with_reference`), on inputs over the
whole int32 range: the extremes, 0, +-1, and values whose squares, sums and
products leave the 32-bit range.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax.reference import compare_with_reference

I32 = np.iinfo(np.int32)
X = np.array(
    [0, 1, -1, 2, -2, I32.max, I32.min, I32.max - 1, I32.min + 1, 12345, -99999, 65535, 65536, 46341],
    dtype=np.int32,
)


def wide(x):
    return x.astype(jnp.int64)


def uwide(x):
    return x.astype(jnp.uint64)


PROGRAMS = {
    # reductions
    "sum_of_squares": lambda x: (wide(x) ** 2).sum(),
    "sum_unsigned": lambda x: (uwide(x) * uwide(x)).sum(),
    "min_max": lambda x: ((wide(x) * x).min(), (wide(x) * 3_000_000_000).max()),
    "max_unsigned": lambda x: (uwide(x) << 20).max(),
    "argmax_argmin": lambda x: (jnp.argmax(wide(x) * 5_000_000_000), jnp.argmin(wide(x) * -3)),
    "row_sums": lambda x: (wide(x).reshape(2, 7) * 2**33).sum(axis=1),
    # cumulative sums (reduce_window)
    "cumsum_of_squares": lambda x: jnp.cumsum(wide(x) ** 2),
    "cummax": lambda x: lax.cummax(wide(x) * 2**33),
    # sorts with an emulated key
    "sort": lambda x: jnp.sort(wide(x) * 3_000_000_001),
    "argsort": lambda x: jnp.argsort(wide(x) * -3_000_000_001),
    "sort_payload": lambda x: lax.sort((wide(x) * 2**32 + x, wide(x) * 7), num_keys=1),
    "top_k_like": lambda x: lax.sort(-(uwide(x) * 2**31))[:3],
    # scatters
    "scatter_add": lambda x: jnp.zeros(4, jnp.int64).at[jnp.abs(x) % 4].add(wide(x) * 2**33),
    "scatter_set": lambda x: jnp.zeros(4, jnp.int64).at[jnp.abs(x) % 4].set(wide(x) * 2**33),
    "scatter_max": lambda x: jnp.full(4, -(2**62), jnp.int64).at[jnp.abs(x) % 4].max(wide(x) * 2**31),
    "segment_sum": lambda x: jax.ops.segment_sum(wide(x) ** 2, jnp.abs(x) % 3, num_segments=3),
    # carried values
    "fori_loop": lambda x: lax.fori_loop(0, 5, lambda i, acc: acc * 3 + wide(x) ** 2, jnp.zeros_like(x, jnp.int64)),
    "while_loop": lambda x: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 7 + 2**35), (0, wide(x))
    )[1],
    "scan": lambda x: lax.scan(lambda c, v: (c * 31 + v, c), jnp.int64(7), wide(x))[0],
    "cond": lambda x: lax.cond(x[0] > 0, lambda: wide(x) * 2**40, lambda: wide(x) - 2**40),
    "switch": lambda x: lax.switch(
        jnp.abs(x[1]) % 3, [lambda: wide(x) * 2**33, lambda: -wide(x), lambda: wide(x) ** 2]
    ),
    # sentinels meeting emulated values keep their 64-bit meaning
    "masked_min_sentinel": lambda x: jnp.min(jnp.where(x > 0, wide(x) * wide(x), np.iinfo(np.int64).max)),
    "masked_min_nothing_left": lambda x: jnp.min(jnp.where(x > 2**31 - 1, wide(x) ** 2, np.iinfo(np.int64).max)),
    "calls": lambda x: jnp.where(x > 0, wide(x) * 2**33, jnp.int64(-(2**40))),
    # integer dot products (8-bit limbs contracted in 32 bits)
    "dot": lambda x: jnp.dot(wide(x)[:12].reshape(3, 4) * 3_000_000_007, wide(x)[:12].reshape(4, 3)),
    "vdot_sum_of_squares": lambda x: jnp.vdot(wide(x), wide(x)),
    "dot_unsigned": lambda x: jnp.dot(uwide(x).reshape(2, 7), uwide(x).reshape(7, 2) << 20),
    "einsum_batched": lambda x: jnp.einsum("bij,bjk->bik", wide(x)[:12].reshape(2, 2, 3) ** 2,
                                          wide(x)[:12].reshape(2, 3, 2)),
    "dot_preferred_int64": lambda x: lax.dot(x.reshape(2, 7), x.reshape(7, 2), preferred_element_type=jnp.int64),
    "optimization_barrier": lambda x: sum(lax.optimization_barrier((wide(x) * 2**33, x, wide(x) ** 2))[::2]),
    # moved elements
    "gather": lambda x: (wide(x) * 2**33)[jnp.abs(x) % 13],
    "dynamic_slice": lambda x: lax.dynamic_slice(wide(x) * 2**33, (x[0] % 5,), (4,)),
    "dynamic_update_slice": lambda x: lax.dynamic_update_slice(wide(x), wide(x[:3]) * 2**40, (x[1] % 5,)),
    "concatenate_pad": lambda x: jnp.pad(jnp.concatenate([wide(x) * 2**33, wide(x)]), 2, constant_values=2**40),
    "reverse_transpose": lambda x: (wide(x).reshape(2, 7) * 2**33)[::-1].T,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_program_matches_the_64bit_program(name: str) -> None:
    result = compare_with_reference(PROGRAMS[name], [X], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert no64.find_64bit(result.demoted) == []
    assert result.report.ops_emulated > 0, result.report.summary()


def test_reductions_and_sorts_are_rebuilt_on_words() -> None:
    for name, op in [("sum_of_squares", "stablehlo.reduce"), ("cumsum_of_squares", "stablehlo.reduce_window"),
                     ("sort", "stablehlo.sort"), ("scatter_add", "stablehlo.scatter"),
                     ("optimization_barrier", "stablehlo.optimization_barrier"), ("dot", "stablehlo.dot_general")]:
        report = compare_with_reference(PROGRAMS[name], [X], policy="exact").report
        assert report.emulated_by_op.get(op) == 1, (name, report.emulated_by_op)


def test_a_zero_initialised_scatter_keeps_both_words() -> None:
    """Equal low and high words of a scatter's input (zeros) must not be
    merged into one buffer, which XLA's CPU backend updates wrongly."""
    x = np.array([5, -7, 9], np.int32)
    result = compare_with_reference(lambda v: jnp.zeros(4, jnp.int64).at[jnp.array([0, 1, 3])].add(wide(v) * 2**33 + 1),
                                    [x], policy="exact")
    assert result.outputs[0].ok


def test_a_dot_beyond_the_word_rule_is_refused_with_its_line() -> None:
    """The limb products of a contraction over more than 66051 elements could overflow
    their 32-bit sums: refused, naming the op, its line and the reason."""
    n = 70_000
    x = np.arange(n, dtype=np.int32)
    with pytest.raises(no64.UnsupportedOpError, match=r"dot_general.*contraction over 70000 elements"):
        compare_with_reference(lambda v: jnp.dot(wide(v) * 3, wide(v)), [x], policy="exact")


LONG = np.resize(X, 1000)
LONG_2D = np.resize(X, (3, 300))

#: Cumulative reductions longer than 256 elements: XLA's CPU compiler aborts on
#: a cumulative reduce_window that long over two operands (the words), so they
#: are computed by doubling.
LONG_PROGRAMS = {
    "cumsum_1000": (lambda x: jnp.cumsum(wide(x) ** 2), LONG),
    "cumsum_unsigned": (lambda x: jnp.cumsum(uwide(x) * np.uint64(2**33 + 1)), LONG),
    "cummax": (lambda x: lax.cummax(wide(x) * 2**33), LONG),
    "cummin_reverse": (lambda x: lax.cummin(wide(x) * -(2**33), reverse=True), LONG),
    "cumsum_reverse_2d": (lambda x: lax.cumsum(wide(x) * 3_000_000_007, axis=1, reverse=True), LONG_2D),
    "cumprod": (lambda x: jnp.cumprod(wide(x) | 1), LONG),
}


@pytest.mark.parametrize("name", sorted(LONG_PROGRAMS))
def test_long_cumulative_reductions(name: str) -> None:
    fn, x = LONG_PROGRAMS[name]
    result = compare_with_reference(fn, [x], policy="exact")
    assert all(o.ok for o in result.outputs)
    assert result.report.emulated_by_op.get("stablehlo.reduce_window") == 1
    windows = [op for op in str(result.demoted).splitlines() if "reduce_window" in op]
    assert len(windows) == 10 if x.ndim == 1 else 9, windows  # ceil(log2(length)) steps


def test_long_whole_axis_window_without_identity_is_refused() -> None:
    """A whole-axis window of more than 256 elements whose initial value is not its
    body's identity cannot be computed by doubling: refused with its line (XLA's CPU
    compiler would abort on the two-word form)."""
    def f(x):
        return lax.reduce_window(wide(x) ** 2, jnp.int64(5), lax.add, (x.size,), (1,), [(x.size - 1, 0)])

    with pytest.raises(no64.UnsupportedOpError, match=r"reduce_window.*whole axis longer than 256"):
        compare_with_reference(f, [LONG], policy="exact")
