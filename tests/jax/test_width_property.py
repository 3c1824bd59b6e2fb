"""Property: width-dependent integer ops on the compile hook's path (``no64.jit``
under the default and strict policies, which compile the x64 program converted by
the pass) give the x64 program's result bit for bit, on adversarial int32 data
(the 32-bit extremes, -1, 0, 1, powers of two) widened inside the program: shifts
by 0..63, ``clz``/``population_count``, bit operations reaching the high word,
composite sort keys, sums past 2**32 taken modulo, 64-bit random bits from an
int64 seed.  Each result fits the array JAX returns; ``exact`` computes every
step on words, the default policy computes on words what it must and warns
where it narrows a value it cannot prove (``strict`` refuses there).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import no64
from no64.jax import intent
from no64.jax._compat import enable_x64

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.jax.hook.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

I32 = np.iinfo(np.int32)
N = 5
EDGES = [I32.min, I32.min + 1, -(2**16), -2, -1, 0, 1, 2, 2**16, 2**30, I32.max - 1, I32.max]
int32s = st.one_of(st.sampled_from(EDGES), st.integers(I32.min, I32.max))
arrays = st.lists(int32s, min_size=N, max_size=N).map(lambda v: np.array(v, np.int32))


def _w(a: Any) -> Any:
    return a.astype(jnp.int64)


#: name -> f(a, b, s) on int32 arrays a, b and a shift s in [0, 63]; every result
#: fits in 32 bits (reduced, compared, counted or sorted), the 64-bit steps are inside
PROGRAMS: dict[str, Callable[..., Any]] = {
    "shl_mod": lambda a, b, s: (_w(a) << s) % 1_000_003,
    "shr_arith": lambda a, b, s: ((_w(a) << 32 | _w(b) & 0xFFFFFFFF) >> s).astype(jnp.int32),
    "shr_logical": lambda a, b, s: (jax.lax.shift_right_logical(_w(a) << 32, jnp.int64(s)) & 0x7FFFFFFF),
    "popcnt": lambda a, b, s: jax.lax.population_count(_w(a) << s),
    "clz": lambda a, b, s: jax.lax.clz(_w(a) >> s),
    "high_word_xor": lambda a, b, s: ((_w(a) ^ (_w(b) << 32)) >> 32),
    "composite_argsort": lambda a, b, s: jnp.argsort((_w(a) << 32) + (_w(b) & 0xFFFFFFFF)),
    "sum_mod": lambda a, b, s: jnp.sum(_w(a) * _w(b)) % 999_983,
    "cumsum_mod": lambda a, b, s: jnp.cumsum(_w(a) + (jnp.int64(1) << 40)) % 1000,
    "u64_bits": lambda a, b, s: jax.random.bits(jax.random.PRNGKey(_w(a[0]) << s), (3,),
                                                jnp.uint64) % 997,
}


def _run(fn: Callable[..., Any], policy: str, a: np.ndarray, b: np.ndarray, s: int) -> tuple[Any, str | None]:
    """(result, None), or (None, what no64 said: the warning or the refusal's class)."""
    intent.clear_warned()
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.UnprovenIntegerWarning)
        try:
            return np.asarray(no64.jit(fn, policy=policy, static_argnums=2, restore_dtypes=True)(a, b, s)), None
        except no64.UnprovenIntegerWarning:
            return None, "warned"
        except no64.NarrowingError:
            return None, "refused"


@pytest.mark.compat
@pytest.mark.parametrize("name", sorted(PROGRAMS))
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(a=arrays, b=arrays, s=st.integers(0, 63))
def test_width_dependent_ops_are_the_x64_program(name: str, a: np.ndarray, b: np.ndarray, s: int) -> None:
    """``exact`` gives the x64 result; ``default`` gives it or warns at the line, and
    warns exactly where ``strict`` refuses (one judgement); a result given without a
    word from no64 is the x64 result."""
    fn = PROGRAMS[name]
    with enable_x64(True):
        ref = np.asarray(jax.jit(fn, static_argnums=2)(a, b, s))
    exact, said = _run(fn, "exact", a, b, s)
    assert said is None and np.array_equal(exact.astype(ref.dtype), ref), (name, a, b, s, exact, ref)
    default, warned = _run(fn, "default", a, b, s)
    strict, refused = _run(fn, "strict", a, b, s)
    assert (warned is None) == (refused is None), (name, a, b, s, warned, refused)
    for got in (default, strict):
        if got is not None:
            assert np.array_equal(got.astype(ref.dtype), ref), (name, a, b, s, got, ref)


#: under the default policy these narrow a value the analysis cannot bound (a shift
#: left or a product of unbounded int32 data) and warn; the others compute on words
NARROWED = ("popcnt", "shl_mod", "sum_mod")


def test_default_policy_is_silent_where_it_computes_on_words() -> None:
    """Not vacuous: on the same inputs, the default policy gives the x64 value with no
    warning for every program but those that narrow an unbounded value, which warn."""
    a = np.array([1, -1, 2**30, 0, 5], np.int32)
    b = np.array([3, 0, I32.min, 7, I32.max], np.int32)
    for name, fn in PROGRAMS.items():
        with enable_x64(True):
            ref = np.asarray(jax.jit(fn, static_argnums=2)(a, b, 3))
        got, warned = _run(fn, "default", a, b, 3)
        if name in NARROWED:
            assert warned == "warned", name
        else:
            assert warned is None and np.array_equal(got.astype(ref.dtype), ref), (name, got, ref)
