"""JAX's own contracts with x64 off hold under the compile hook: where no64
refuses what JAX refuses too, its error is an instance of the exception JAX
raises there, so code and tests that catch JAX's errors keep working.

Each case runs twice in this process with x64 off: once as plain JAX (no64
uninstalled), for the reference outcome, and once with ``no64.install("cpu")``.
The cases are those of JAX's own tests that check an exception type: a
Python int seed beyond int32 given to a jitted ``PRNGKey`` (``OverflowError``),
``uint64`` random bits under ``jax_explicit_x64_dtypes="error"``
(``ValueError``), and the other places JAX checks a Python int's range.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import config as jax_config, dispatch

import no64

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

#: A Python int just beyond int32 (JAX's own test uses INT32_MAX + 100).
BIG = int(np.iinfo(np.int32).max) + 100


def _outcome(fn: Callable[[], Any]) -> Any:
    """What ``fn()`` gives: its value as numpy data, or the exception it raises."""
    try:
        return np.asarray(fn())
    except Exception as exc:  # noqa: BLE001 -- the outcome under test
        return exc


def _plain_and_no64(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """``fn``'s outcome as plain JAX with x64 off, then under the compile hook."""
    jax.config.update("jax_enable_x64", False)
    no64.uninstall()
    plain = _outcome(fn)
    no64.install("cpu")
    return plain, _outcome(fn)


#: Python ints where JAX with x64 off raises OverflowError, by the place it checks.
OVERFLOWS: dict[str, Callable[[], Any]] = {
    "jit PRNGKey seed": lambda: jax.jit(jax.random.PRNGKey)(BIG),
    "jit argument": lambda: jax.jit(lambda x: x + 1)(BIG),
    "operand": lambda: jnp.int32(1) + BIG,
    "lax operand": lambda: lax.add(jnp.int32(1), BIG),
    "jnp.array": lambda: jnp.array(BIG),
    "jnp.array of a list": lambda: jnp.array([1, BIG]),
    "jnp.asarray int32": lambda: jnp.asarray(BIG, jnp.int32),
    "jnp.uint32": lambda: jnp.uint32(2**32),
    "device_put": lambda: jax.device_put(BIG),
    "where": lambda: jnp.where(jnp.arange(3) > 1, jnp.arange(3), BIG),
    "at set": lambda: jnp.arange(3).at[0].set(BIG),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_python_int_refusal_is_jax_overflow_error(name: str, restore_global: None) -> None:
    """JAX raises OverflowError; no64 raises its PythonIntRangeError, also an
    OverflowError, with its message naming the value, the type and this line."""
    plain, got = _plain_and_no64(OVERFLOWS[name])
    assert type(plain) is OverflowError, plain
    assert isinstance(got, OverflowError), got
    assert isinstance(got, no64.PythonIntRangeError), got
    assert isinstance(got, no64.HostRangeError) and isinstance(got, no64.No64Error)
    message = str(got)
    assert "no64" in message and "int32" in message, message
    assert f"{__file__}:" in message, message
    assert str(got.value) in message and got.source.file == __file__


def test_jit_seed_refusal_before_and_after_a_cache_entry(restore_global: None) -> None:
    """As JAX's test_prng_seeds_and_keys checks: the jitted PRNGKey refuses
    the seed with an OverflowError also once a call with seed 0 has filled
    its cache."""
    jax.config.update("jax_enable_x64", False)
    no64.install("cpu")
    maker = jax.jit(jax.random.PRNGKey)
    with pytest.raises(OverflowError):
        maker(BIG)
    maker(0).block_until_ready()
    with pytest.raises(no64.PythonIntRangeError):
        maker(BIG)


def test_seed_beyond_int64_is_jax_overflow_error(restore_global: None) -> None:
    """A seed beyond int64 is refused by numpy before no64 sees it, with and
    without no64."""
    plain, got = _plain_and_no64(lambda: jax.random.PRNGKey(2**70))
    assert type(plain) is OverflowError and type(got) is OverflowError


#: Conversions JAX itself truncates with x64 off (JAX's test_prng_seeds_and_keys
#: expects the truncated key of a numpy int64 seed and of an eager Python int seed).
TRUNCATED: dict[str, Callable[[], Any]] = {
    "convert_element_type": lambda: lax.convert_element_type(2**32 + 7, "int32"),
    "jnp.full": lambda: jnp.full((2,), BIG),
    "numpy int64 data": lambda: jnp.asarray(np.array([2**40 + 3, -(2**35) - 1])),
    "numpy uint64 data": lambda: jnp.asarray(np.array([2**33 + 5], np.uint64)),
    "numpy int64 seed": lambda: jax.random.key_data(jax.random.PRNGKey(np.int64(BIG))),
    "numpy int64 seed, jit": lambda: jax.random.key_data(
        jax.jit(jax.random.PRNGKey)(np.int64(np.iinfo(np.int32).min - 101))),
    "eager Python int seed": lambda: jax.random.key_data(jax.random.PRNGKey(BIG)),
    "float64 beyond float32": lambda: jnp.asarray(np.array([1e300, 2.0])),
}


@pytest.mark.parametrize("name", sorted(TRUNCATED))
def test_what_jax_truncates_with_x64_off_is_truncated_and_recorded(name: str, restore_global: None) -> None:
    """A program that did not ask for x64 means JAX's 32-bit program, whose
    host conversion keeps an integer's low 32 bits (a float beyond float32
    becomes inf): under the hook it gets JAX's very numbers, and the
    narrowing is recorded against this line for the audit."""
    no64.clear_host_records()
    plain, got = _plain_and_no64(TRUNCATED[name])
    assert isinstance(plain, np.ndarray), plain
    assert isinstance(got, np.ndarray), got
    np.testing.assert_array_equal(got, plain)
    assert got.dtype == plain.dtype
    records = [r for r in no64.host_records() if "as JAX does with x64 off" in r.detail]
    assert records, no64.host_records()
    assert all(r.location is not None and r.location.file == __file__ for r in records), records


@pytest.mark.parametrize("name", sorted(TRUNCATED))
def test_what_jax_truncates_is_refused_when_the_program_asked_for_x64(name: str, restore_global: None) -> None:
    """The same conversions in a program that asked for x64 (no64 turned it
    off): the x64 program holds the 64-bit value, which no 32-bit array can,
    so it is a HostRangeError at this line -- no OverflowError, which code
    catching JAX's errors does not expect here."""
    jax.config.update("jax_enable_x64", False)
    no64.install("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", no64.X64DisabledWarning)
        jax.config.update("jax_enable_x64", True)
    assert not jax.config.jax_enable_x64  # no64 turned it off: x64 requested
    with pytest.raises(no64.HostRangeError) as caught:
        TRUNCATED[name]()
    assert not isinstance(caught.value, (OverflowError, no64.PythonIntRangeError)), type(caught.value).__mro__
    assert f"{__file__}:" in str(caught.value), str(caught.value)


needs_explicit_x64 = pytest.mark.skipif(
    not hasattr(jax_config, "explicit_x64_dtypes"),
    reason="jax_explicit_x64_dtypes is new in JAX 0.8")


@needs_explicit_x64
@pytest.mark.parametrize("impl", ["threefry2x32", "philox4x32"])
def test_uint64_bits_refused_by_jax_as_value_error(impl: str, restore_global: None) -> None:
    """With jax_explicit_x64_dtypes="error", JAX refuses uint64 bits with a
    ValueError, before anything reaches no64: the same error under no64."""
    def bits() -> Any:
        with jax_config.explicit_x64_dtypes("error"):
            key = jax.random.key(1701, impl=impl)
            return jax.random.bits(key, (3,), jnp.uint64)

    plain, got = _plain_and_no64(bits)
    assert type(plain) is ValueError and "Explicitly requested dtype" in str(plain)
    assert type(got) is ValueError and "Explicitly requested dtype" in str(got)


@needs_explicit_x64
def test_uint64_bits_allowed_by_jax_are_refused_naming_the_setting(restore_global: None) -> None:
    """With jax_explicit_x64_dtypes="allow", JAX makes uint64 arrays with x64
    off, which cannot exist on a platform without 64-bit types: no64 refuses
    them with a Boundary64BitError (a ValueError) that names the setting."""
    def bits() -> Any:
        with jax_config.explicit_x64_dtypes("allow"):
            return jax.random.bits(jax.random.key(1701, impl="threefry2x32"), (3,), jnp.uint64)

    plain, got = _plain_and_no64(bits)
    assert isinstance(plain, np.ndarray) and plain.dtype == np.uint64
    assert isinstance(got, no64.Boundary64BitError) and isinstance(got, ValueError), got
    assert "jax_explicit_x64_dtypes is 'allow'" in str(got), str(got)


def test_primitive_callable_keeps_its_cache_interface(restore_global: None) -> None:
    """JAX's tests count the cache misses of the jit an eager primitive runs
    through (``_CompileAndCheck``): under the hook that function still has
    ``cache_info``, and an eager op called again with the same types is a hit."""
    jax.config.update("jax_enable_x64", False)
    no64.install("cpu")
    callable_ = dispatch.xla_primitive_callable
    assert callable(callable_.cache_info) and callable(callable_.cache_clear)
    x = jnp.arange(5, dtype=jnp.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        abs(x) + x
        misses = callable_.cache_info().misses
        abs(x) + x
    assert callable_.cache_info().misses == misses
