"""``no64.numerics``: float32's error measured on the program's own data,
against the x64 program, named by the line that introduces it.

Each program has a known error source at a marked line; the report must
name that line (and no other), with the error measured independently here
in numpy within a factor of 2, and nothing on programs that float32
computes well.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax import numerics as numerics_module
from support import enable_x64

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning")


def _line(fn, marker: str) -> int:
    """The line of ``fn``'s source that holds ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _lines(report) -> list[tuple[int, str]]:
    return [(x.location.line, x.kind) for x in report.lines]


def cancellation(x):
    a = x + 1e8
    b = a - 1e8  # CANCELS
    return b * 2.0


def test_cancellation_is_introduced_where_it_cancels():
    x = np.array([0.123, 0.456, 1.5, -3.25])
    report = no64.numerics(cancellation, x)
    assert _lines(report) == [(_line(cancellation, "CANCELS"), "introduces")]
    assert report.lines[0].location.file == __file__
    # the error float32 makes there, measured here
    with np.errstate(all="ignore"):
        b32 = (x.astype(np.float32) + np.float32(1e8)) - np.float32(1e8)
        b64 = (x + 1e8) - 1e8
    measured = np.max(np.abs(b32 - b64)) / np.max(np.abs(b64))  # normwise
    assert measured / 2 <= report.lines[0].error <= measured * 2
    assert report.output_error >= 0.5
    # pairs: measured by running the function under float_policy="pairs"
    assert report.pairs_error is not None and report.pairs_error < 1e-5
    text = str(report)
    assert f"{__file__}:{_line(cancellation, 'CANCELS')}: introduces (sub)" in text
    assert "float_policy='pairs'" in text


def overflowing(x):
    y = jnp.exp(x)  # OVERFLOWS
    return y / 2.0 + 1.0


def test_overflow_is_named_where_it_happens_not_where_it_is_carried():
    report = no64.numerics(overflowing, np.array([1.0, 100.0]))
    assert _lines(report) == [(_line(overflowing, "OVERFLOWS"), "inf/nan")]
    line = report.lines[0]
    assert line.got == np.inf and line.index == (1,) and line.reference == pytest.approx(np.exp(100.0))
    # pairs have float32's exponent range: no fix
    assert report.pairs_error == np.inf


def long_sum(x):
    total = lax.fori_loop(0, x.shape[0], lambda i, s: s + x[i], jnp.zeros((), x.dtype))  # SUMS
    return total


def test_a_long_sum_is_named_with_its_measured_error():
    x = np.full(20_000, 0.1)
    report = no64.numerics(long_sum, x, tol=1e-5)
    assert _lines(report) == [(_line(long_sum, "SUMS"), "introduces")]
    s = np.float32(0.0)
    for v in x.astype(np.float32):  # the same sum, one element after another, in float32
        s = np.float32(s + v)
    exact = 0.1 * 20_000
    measured = abs(float(s) - exact) / exact
    assert measured / 2 <= report.lines[0].error <= measured * 2
    # and the default tolerance lets it be
    assert no64.numerics(long_sum, x, pairs=False).lines == []


def ill_conditioned(a, b):
    x = jnp.linalg.solve(a, b)  # SOLVES
    return x


def test_an_ill_conditioned_solve_is_named_at_the_call():
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    a = q @ np.diag(np.logspace(0, -9, 12)) @ q.T  # condition number 1e9
    b = rng.standard_normal(12)
    report = no64.numerics(ill_conditioned, a, b)
    assert report.lines and {x.location.line for x in report.lines} == {_line(ill_conditioned, "SOLVES")}
    assert report.output_error > 1e-2


def stalls(x):
    def cond(c):
        k, _, cur = c
        return (k < 200) & (jnp.abs(cur * cur - x) > 1e-12 * x)  # a residual float32 cannot reach

    def body(c):
        k, _, cur = c
        return k + 1, cur, 0.5 * (cur + x / cur)  # Newton's square root

    k, _, root = lax.while_loop(cond, body, (0, jnp.zeros_like(x), x))  # ITERATES
    return k, root


def test_a_solver_that_stalls_in_float32_differs_in_its_trip_count():
    report = no64.numerics(stalls, np.float64(2.0))
    got = {x.location.line: x for x in report.lines}
    line = got[_line(stalls, "ITERATES")]
    assert line.kind == "differs"  # x64 stops after a few steps; float32 never meets 1e-12
    assert line.got == 200 and line.reference < 10
    assert len(report.lines) == 1


def benign(x, w):
    h = jnp.tanh(x @ w)
    h = (h - h.mean(-1, keepdims=True)) / jnp.sqrt(h.var(-1, keepdims=True) + 1e-5)
    return jax.nn.softmax(h, axis=-1), jnp.sum(h**2)


def test_a_float32_benign_program_reports_nothing():
    rng = np.random.default_rng(0)
    report = no64.numerics(benign, rng.standard_normal((16, 32)), rng.standard_normal((32, 32)) / 5)
    assert report.lines == [] and report.output_error < 1e-5
    assert report.equations > 10  # the equations were compared one by one
    assert "0 lines beyond it" in str(report)


@jax.jit
def _inner(a):
    return (a + 1e8) - 1e8  # INNER


def nested(x):
    return _inner(x) * 3.0


def test_lines_inside_a_nested_jit_are_named():
    report = no64.numerics(nested, np.array([0.25, 0.5]), pairs=False)
    assert _lines(report) == [(_line(_inner, "INNER"), "introduces")]
    assert report.pairs_error is None


def test_an_integer_argument_beyond_32_bits_is_one_clear_error():
    with pytest.raises(ValueError, match="does not fit in 32 bits"):
        no64.numerics(lambda i: i * 2, np.array([2**40]))


def washes_out(x):
    lost = (x + 1e8) - 1e8  # LOST: float32 cancels it away
    return jnp.sqrt(jnp.mean(x * x)) + 0.0 * lost


def test_an_intermediate_error_that_does_not_reach_the_outputs_is_not_listed():
    rng = np.random.default_rng(5)
    report = no64.numerics(washes_out, rng.standard_normal(1000) + 3.0, pairs=False)
    assert report.output_error < 1e-5 and report.lines == []
    assert report.washed_out == 1 and "1 line with a larger intermediate error" in str(report)
    # with the outputs as the tolerance's judge gone (a tolerance they miss), it is listed
    strict = no64.numerics(washes_out, rng.standard_normal(1000) + 3.0, tol=1e-12, pairs=False)
    assert _line(washes_out, "LOST") in {x.location.line for x in strict.lines}


def deviations(x):
    d = x - jnp.mean(x)
    noise = jnp.sum(d)  # NOISE: zero in exact arithmetic, rounding noise in x64 and in float32
    return noise, jnp.sqrt(jnp.mean(d * d))


def test_a_sum_that_is_zero_but_for_rounding_is_not_measured_against_its_noise():
    """The x64 sum of deviations is float64's rounding noise (1e-13 for terms
    of size 1): float32's noise is 1e8 times it, which says nothing of the
    line; it is not listed even at a tolerance every other line meets."""
    x = np.random.default_rng(5).standard_normal(1000) + 3.0
    report = no64.numerics(deviations, x, tol=1e-5, pairs=False)
    ref = float(np.sum(x - np.mean(x)))
    assert abs(ref) < 1e-12 and report.output_error > 1e5  # the noise output, measured against itself
    assert report.lines == [] and report.washed_out == 0


def test_the_reference_is_the_x64_program_under_the_hook_too(restore_global):
    """With no64 installed for the CPU, the reference still runs the x64
    program as JAX does (not the hook's conversion of it)."""
    no64.install("cpu")
    x = np.array([0.123, 0.456])
    report = no64.numerics(cancellation, x, pairs=False)
    assert _lines(report) == [(_line(cancellation, "CANCELS"), "introduces")]
    line = report.lines[0]
    assert line.reference == pytest.approx((x[line.index] + 1e8) - 1e8, rel=1e-12) and line.got == 0.0


def test_a_function_with_effects_is_refused_before_it_runs_again(capsys: pytest.CaptureFixture[str]) -> None:
    """Evaluating a function with effects equation by equation would repeat
    them (print twice more): numerics says so instead."""
    def noisy(x: Any) -> Any:
        jax.debug.print("noisy {}", x[0])
        return x * 2.0

    with pytest.raises(ValueError, match=r"noisy has effects \(DebugEffect\)"):
        no64.numerics(noisy, np.ones(3))
    assert "noisy" not in capsys.readouterr().out


def test_pairs_listed_measures_the_fix_only_where_a_line_is_listed():
    rng = np.random.default_rng(0)
    quiet = no64.numerics(benign, rng.standard_normal((16, 32)), rng.standard_normal((32, 32)) / 5,
                          pairs="listed")
    assert quiet.lines == [] and quiet.pairs_error is None and quiet.pairs_refusal is None
    loud = no64.numerics(nested, np.array([0.25, 0.5]), pairs="listed")
    assert loud.lines and loud.pairs_error is not None and loud.pairs_error < 1e-6
    with pytest.raises(ValueError, match="pairs must be True, False or 'listed'"):
        no64.numerics(nested, np.array([0.25]), pairs="always")


def remainder(x, y):
    return jnp.fmod(x, y)  # ZERO IN X64: x is 3 y exactly


def test_where_x64_gives_zero_the_error_is_absolute_and_said_so():
    """No relative error exists where the x64 result is 0 throughout: the
    difference itself is measured, against the same tolerance, and the
    report says it is absolute (not a relative error of 1e300)."""
    def measured(scale):
        y = np.array([scale * (1 + 2.0**-23), 2.0])  # float32 holds y; 3 y needs one bit more
        x = 3 * y  # exact in float64: the remainder is 0 there
        got32 = np.fmod(x.astype(np.float32), y.astype(np.float32)).astype(np.float64)
        return float(np.max(np.abs(got32))), no64.numerics(remainder, x, y, pairs=False)

    # 2**-23 off: below the tolerance, not listed
    small, report = measured(1.0)
    assert 0.0 < small < 1e-3
    assert report.lines == [] and report.output_absolute and report.output_error == pytest.approx(small)
    assert f"within {small:.2g} of x64 (absolute error: x64 gives 0 there; tolerance 0.001)" in str(report)
    # 2**20 times as large, 0.125 off: listed, as an absolute error
    large, report = measured(2.0**20)
    assert large == 0.125
    (line,) = report.lines
    assert (line.location.line, line.kind) == (_line(remainder, "ZERO IN X64"), "introduces")
    assert line.absolute and line.reference == 0.0 and line.error == pytest.approx(large)
    assert "absolute error 0.12 where x64 is 0" in str(line)
    assert report.output_absolute and report.output_error == pytest.approx(large)
    # a relative error is not called absolute
    assert not no64.numerics(cancellation, np.array([0.123, 0.456]), pairs=False).lines[0].absolute


def test_a_compiled_program_that_differs_from_a_zero_reference_is_measured_absolutely():
    """``(x + 1e8) - 1e8`` on float32 data: the x64 program computes it in
    float32 too, and gives 0; the pairs program, compiled, gives what XLA
    makes of it.  Its error is that difference, not a difference over
    float64's smallest number."""
    x = np.array([0.123, 0.456, 1.5, -3.25], np.float32)
    report = no64.numerics(cancellation_f32, x)
    assert report.output_error == 0.0 and report.lines == []
    compiled = float(np.max(np.abs(np.asarray(jax.jit(cancellation_f32)(x), np.float64))))
    assert report.pairs_error == pytest.approx(compiled)
    assert report.pairs_absolute == (compiled > 0.0)
    assert report.pairs_error <= float(np.max(np.abs(x)))
    if compiled:
        assert "(absolute error: x64 gives 0 there)" in str(report)


def cancellation_f32(x):
    return (x + 1e8) - 1e8


def unpaired(x):
    y = x * 2.0
    if x.dtype == jnp.float64:  # the x64 trace has an equation the 32-bit one has not
        y = jnp.sin(y)
    return jnp.sum(y * y) + _inner(y)[0]


class _Recorded(numerics_module.walk.Walk):
    """The walk evaluating one op at a time, keeping every value it computes."""

    def __init__(self, tol: float) -> None:
        super().__init__(tol)
        self.got: tuple[list[Any], list[Any]] = ([], [])

    def _apply(self, side, eqn, operands):
        out = super()._apply(side, eqn, operands)
        self.got[side].extend(out)
        return out

    def _whole(self, side, jaxpr, consts, args):
        out = super()._whole(side, jaxpr, consts, args)
        self.got[side].extend(out)
        return out


@pytest.mark.parametrize("program", ["cancellation", "benign", "nested", "stalls", "deviations", "unpaired"])
def test_the_compiled_programs_compute_what_each_op_computes_alone(program: str) -> None:
    """Each program is compiled once, each equation a computation of its own:
    every value equals, bit for bit, the op's evaluated alone (what JAX's
    dispatch compiles for it).  XLA simplifies ``(x + 1e8) - 1e8`` to ``x``
    within one computation, and fuses a square into the sum that reads it
    (rounding otherwise), optimization barriers notwithstanding."""
    rng = np.random.default_rng(3)
    fn, args = {
        "cancellation": (cancellation, (np.array([0.123, 0.456, 1.5, -3.25]),)),
        "benign": (benign, (rng.standard_normal((16, 32)), rng.standard_normal((32, 32)) / 5)),
        "nested": (nested, (np.array([0.25, 0.5]),)),
        "stalls": (stalls, (np.float64(2.0),)),
        "deviations": (deviations, (rng.standard_normal(1000) + 3.0,)),
        # the traces differ: compared as wholes
        "unpaired": (unpaired, (rng.standard_normal(64),)),
    }[program]
    with enable_x64(True):
        j64 = jax.make_jaxpr(fn)(*args)
    args32 = tuple(a.astype(np.float32) for a in args)
    with enable_x64(False):
        j32 = jax.make_jaxpr(fn)(*args32)
    with enable_x64(True):
        alone = _Recorded(1e-3)
        alone.run(j64, j32, list(args), list(args32))
        compiled = numerics_module.run._replayed(1e-3, j64, j32, list(args), list(args32))
    for side in (0, 1):
        assert len(compiled[side]) == len(alone.got[side]) > 0
        for want, got in zip(alone.got[side], compiled[side]):
            want, got = np.asarray(want), np.asarray(got)
            assert (want.dtype, want.shape) == (got.dtype, got.shape)
            assert want.tobytes() == got.tobytes()


def test_a_function_measured_again_runs_the_programs_compiled_for_it() -> None:
    x = np.array([0.123, 0.456, 1.5, -3.25])
    first = no64.numerics(cancellation, x, pairs=False)
    kept = dict(numerics_module.run._PROGRAMS)
    again = no64.numerics(cancellation, x * 2, pairs=False)
    assert {k: id(v) for k, v in numerics_module.run._PROGRAMS.items() if k in kept} == \
        {k: id(v) for k, v in kept.items()}
    assert len(kept) >= 2 and first.lines and again.lines


def running_total(a):
    return jnp.cumsum(a)  # TOTAL: beyond int32 from element 134


def test_an_integer_result_pairs_cannot_help_says_so_not_within_inf():
    # an int64 cumsum past 2**31: float32 pairs change nothing there, and a
    # report saying "within inf" would say nothing
    data = np.full(200, 16_000_000, np.int64)
    with enable_x64():
        reference = np.asarray(jax.jit(running_total)(data))
    with pytest.warns(no64.UnprovenIntegerWarning):
        report = no64.numerics(running_total, data)
    text = str(report)
    assert reference[-1] == 3_200_000_000 and [x.kind for x in report.lines] == ["differs"]
    assert report.lines[0].location.line == _line(running_total, "TOTAL")
    assert text.startswith("no64 numerics of running_total: 1 equation compared, float32 outputs not finite "
                           "or another value where x64's are not (tolerance 0.001); 1 line beyond it")
    assert "float_policy='pairs' does not bring it closer" in text
    assert "within inf" not in text


def noised(key, x):
    dropped = x * jax.random.bernoulli(key, 0.75, x.shape)  # a float64 draw in the x64 program
    return dropped + jax.random.normal(jax.random.PRNGKey(7), x.shape)


def test_a_function_that_draws_is_measured_against_the_x64_draw_the_hook_runs():
    """PRNG keys, typed and raw, as arguments and inside: the x64 program
    draws 64 random bits for a float64 sample, JAX's 32-bit program 32
    (other numbers); the hook runs the x64 draw, computed in float32.  The
    measurement takes the x64 draw for the 32-bit program, as the hook does:
    its error is the hook's, not that of another draw."""
    x = np.linspace(1.0, 2.0, 64)
    key = jax.random.key(3)
    report = no64.numerics(noised, key, x, pairs=False)
    assert report.lines == [] and report.equations > 0
    with enable_x64(True):
        ref = np.asarray(noised(key, x))
    with enable_x64(False):
        other = np.asarray(noised(key, x.astype(np.float32)), np.float64)
    assert np.max(np.abs(other - ref)) > 0.1  # JAX's own 32-bit program draws other numbers
    hooked = np.asarray(no64.jit(noised)(key, x), np.float64)
    hook_error = np.max(np.abs(hooked - ref)) / np.max(np.abs(ref))
    # both the hook's draw and the measured one are the x64 draw within
    # float32's rounding (of the uniform, amplified by the normal's erf_inv)
    assert hook_error < 1e-5 and report.output_error < 1e-5


def test_host_sentinels_in_the_arguments_are_mapped_as_the_hook_maps_them():
    """INT64_MAX ("no best step yet") as numpy data or a Python int: the
    32-bit program takes INT32_MAX for it, and the result that keeps it
    counts as equal; a value beyond 32 bits that is no sentinel is refused."""
    never = np.iinfo(np.int64).max

    def best(seen, step):
        return jnp.minimum(seen, step)

    for seen in (np.int64(never), never, np.array([never, 3])):
        report = no64.numerics(best, seen, np.array([5, 1]), pairs=False)
        assert report.lines == [] and report.output_error == 0.0, seen
    with pytest.raises(ValueError, match="holds 1099511627776, which does not fit in 32 bits and is no sentinel"):
        no64.numerics(best, np.array([2**40, 1]), np.array([5, 1]))
