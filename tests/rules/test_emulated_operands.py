"""An emulated op reads no value that may be wrong in 32 bits.

Under every policy an op that touches a value beyond the 32-bit range (an
out-of-range constant's product, a shift by 32) is computed on 32-bit words.
A value it reads from the narrowed program must be exact there: a value not
proven to fit is emulated too.  (An earlier pass narrowed the counter of a
loop bounded by an emulated value: under the default policy the counter
overflowed in 32 bits and the converted program never stopped, while the
64-bit one ran 42 times.)

Each program is compared with the 64-bit program (x64 on, CPU, no no64).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from analysis.test_soundness_regressions import I32, parse
from no64.jax.reference import compare_outputs, converted_inputs, lower_x64, word_pair_outputs
from no64.transforms.emulate import join_words
from runner import compile_module


def loop_bounded_by_an_emulated_value(a, b):
    w = a * (2**40 + 3)
    q = w // b
    c = w > b
    _, n = lax.while_loop(lambda s: s[0] < jnp.abs(w), lambda s: (s[0] * 2 + 1, s[1] + 1),
                          (jnp.int64(0), jnp.int64(0)))
    return q, c, n


INPUTS = [(3, 7), (-5, 2), (0, 1), (I32.max, -3), (I32.min, I32.max), (1, I32.min)]


@pytest.mark.parametrize("policy", ["default", "permissive", "exact"])
def test_a_loop_bounded_by_an_emulated_value_stops(policy: str) -> None:
    m = lower_x64(loop_bounded_by_an_emulated_value, np.int64(3), np.int64(7))
    original = parse(str(m))
    report = no64.demote(m, policy=policy)
    assert report.values_emulated
    run_original = compile_module(original, strict=False)
    run_converted = compile_module(m, strict=True)
    wide = word_pair_outputs(original, m)
    for a, b in INPUTS:
        args = [np.array(a, np.int64), np.array(b, np.int64)]
        ref = run_original(args)
        # (under "exact" the unbounded inputs enter as words)
        got = run_converted(converted_inputs(args, report.emulated_inputs))
        for j in wide:
            got[j] = join_words(got[j])
        compare_outputs(ref, got, what=f"converted program on {(a, b)}", wide=wide)
        assert int(got[2]) == int(ref[2]) <= 64


def test_the_loop_counter_is_emulated_not_narrowed() -> None:
    """The counter meets the emulated bound ``abs(w)`` in the loop's
    condition: it is carried as words (its verdict ``emulated``)."""
    m = lower_x64(loop_bounded_by_an_emulated_value, np.int64(3), np.int64(7))
    report = no64.demote(m)
    loop = [n for n in report.narrowings if n.op == "stablehlo.while"]
    assert loop and any(n.verdict == "emulated" for n in loop)


def test_without_an_emulated_bound_the_counter_stays_32bit() -> None:
    """The control: the same loop bounded by a 32-bit value is not emulated."""

    def f(a):
        _, n = lax.while_loop(lambda s: s[0] < jnp.abs(a), lambda s: (s[0] * 2 + 1, s[1] + 1),
                              (jnp.int64(0), jnp.int64(0)))
        return n

    report = no64.demote(lower_x64(f, np.int64(3)))
    assert report.values_emulated == 0
