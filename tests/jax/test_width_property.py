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
from support import enable_x64

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


#: the programs of PROGRAMS with no widening of their own: on int64 arrays they are
#: the x64 program above, on int32 arrays another one (a shift by 32 or more is 0)
RAW: dict[str, Callable[..., Any]] = {
    "shl_mod": lambda a, b, s: (a << s) % 1_000_003,
    "popcnt": lambda a, b, s: jax.lax.population_count(a << s),
    "clz": lambda a, b, s: jax.lax.clz(a >> s),
    "high_word_xor": lambda a, b, s: (a ^ (b << 32)) >> 32,
    "sum_mod": lambda a, b, s: jnp.sum(a * b) % 999_983,
    "cumsum_mod": lambda a, b, s: jnp.cumsum(a * 3 + 7) % 1000,
}


def _entries(fn: Callable[..., Any], a: np.ndarray, b: np.ndarray, s: int) -> dict[str, Callable[[], Any]]:
    """The hook's entries, in the order they run: a jit called with int32 arrays, then
    (same 32-bit signature, JAX's caches and jaxlib's C++ one) with arrays made by
    device_put of int64 host data; the same function eagerly on those; and a jit fed
    the result of an earlier jit call that is int64 in the x64 program."""
    jf = jax.jit(fn, static_argnums=2)

    def wide() -> tuple[Any, Any]:
        return jax.device_put(a.astype(np.int64)), jax.device_put(b.astype(np.int64))

    return {
        "int32": lambda: jf(jnp.asarray(a), jnp.asarray(b), s),
        "int64 after int32": lambda: jf(*wide(), s),
        "eager": lambda: fn(*wide(), s),
        "threaded": lambda: jf(jax.jit(lambda x: x + 0)(wide()[0]), wide()[1], s),
    }


def _hook_run(run: Callable[[], Any]) -> tuple[Any, str | None]:
    intent.clear_warned()
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.UnprovenIntegerWarning)
        try:
            return np.asarray(run()), None
        except no64.UnprovenIntegerWarning:
            return None, "warned"
        except (no64.NarrowingError, no64.OutputRangeError, no64.NoX64MeaningError):
            return None, "refused"


@pytest.mark.parametrize("name", sorted(RAW))
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(a=arrays, b=arrays, s=st.integers(0, 63))
def test_hook_entries_are_the_x64_program(name: str, a: np.ndarray, b: np.ndarray, s: int,
                                          restore_global: None) -> None:
    """Under the compile hook with x64 requested, each entry gives the x64 program of
    the arrays it is given -- int64 for arrays made from int64 data, int32 for int32
    ones -- or a word from no64: exact gives it on the jit entries, a result without
    a word is it under every policy, and default warns exactly where strict refuses."""
    fn = RAW[name]
    no64.uninstall()  # the reference: the x64 program without no64
    with enable_x64(True):
        ref32 = np.asarray(jax.jit(fn, static_argnums=2)(a, b, s))
        ref64 = np.asarray(jax.jit(fn, static_argnums=2)(a.astype(np.int64), b.astype(np.int64), s))
    want = {"int32": ref32, "int64 after int32": ref64, "eager": ref64, "threaded": ref64}
    said: dict[str, dict[str, str | None]] = {}
    jax.config.update("jax_enable_x64", True)
    for policy in ("exact", "default", "strict"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", no64.X64DisabledWarning)
            no64.install("cpu", policy=policy)
        said[policy] = {}
        for entry, run in _entries(fn, a, b, s).items():
            got, word = _hook_run(run)
            said[policy][entry] = word
            if got is not None:
                assert np.array_equal(got.astype(np.int64), want[entry].astype(np.int64)), (
                    policy, entry, name, a, b, s, got, want[entry])
    for entry in ("int32", "int64 after int32", "threaded"):
        assert said["exact"][entry] is None, (name, entry, said)
        assert (said["default"][entry] is None) == (said["strict"][entry] is None), (name, entry, said)


def test_hook_entries_are_not_vacuous(restore_global: None) -> None:
    """The entries' x64 programs differ by the arrays' dtypes: popcnt of -1 counts 32
    bits for the int32 call and 64 for each jit entry given arrays that are int64 in the
    x64 program, with no word from the default policy (nothing there needs narrowing)."""
    a = np.array([-1, -1, 1, 0, I32.min], np.int32)
    fn = RAW["popcnt"]
    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", no64.X64DisabledWarning)
        no64.install("cpu")
    got = {entry: _hook_run(run) for entry, run in _entries(fn, a, a, 0).items()}
    assert got["int32"][1] is None and got["int32"][0].tolist() == [32, 32, 1, 0, 1]
    for entry in ("int64 after int32", "threaded"):
        assert got[entry][1] is None and got[entry][0].tolist() == [64, 64, 1, 0, 33], (entry, got[entry])
    # eagerly, a << 0 is a program of its own whose shift amount is an argument: its
    # int64 result may not fit the int32 array JAX holds it in, which is said
    assert got["eager"][1] == "warned"
