"""no64.jit(fun, target=...): the call's modules are made exact on a named device profile
and checked against it, whatever platform they are compiled for (the CPU here stands in
for the device), as the compile hook does with NO64_TARGET: an int32 matmul whose sums
pass 2**24 is split into limb dots exact on Neuron's f32 engine (checked on a CPU
simulation of that engine too), an f32 reduce_precision is rounded on its bits, and what
has no exact form is a TargetWarning at the user's line (a TargetError under strict and
exact)."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from neuron_datapath import on_datapath

import no64
from no64.targets import target
from no64.targets.legality import check_target
from runner import compile_module
from support import enable_x64, ir, make_context

NEURON = target("neuron")
RNG = np.random.default_rng(5)


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    return a @ b


def operands() -> tuple[np.ndarray, np.ndarray]:
    """int32 operands whose products and sums pass 2**24 (and wrap past 2**32)."""
    a = RNG.integers(-(2**31), 2**31, (16, 256), dtype=np.int64).astype(np.int32)
    b = RNG.integers(-(2**31), 2**31, (256, 8), dtype=np.int64).astype(np.int32)
    a[0, :] = np.iinfo(np.int32).min
    b[:, 0] = np.iinfo(np.int32).max
    return a, b


def wrapped(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The int32 matmul: exact products and sums modulo 2**32 (numpy's int64 wraps
    modulo 2**64, which keeps the low 32 bits)."""
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)


def count(m: ir.Module, name: str) -> int:
    return m.operation.get_asm().count(f"{name}(") + m.operation.get_asm().count(f"{name} ")


@pytest.mark.parametrize("policy", ["default", "strict", "exact"])
def test_an_int32_matmul_is_exact_on_the_target(policy: str) -> None:
    a, b = operands()
    jitted = no64.jit(matmul, target="neuron", policy=policy)
    assert jitted.options.target is NEURON
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.TargetWarning)
        got = np.asarray(jitted(a, b))
    want = wrapped(a, b)
    np.testing.assert_array_equal(got, want)
    with enable_x64(True):  # the x64 program, without no64
        np.testing.assert_array_equal(got, np.asarray(jax.jit(matmul)(a, b)))
    # the module no64 compiles: limb dots, nothing Neuron computes inexactly, and exact on a
    # simulation of its f32 engine, where the matmul as JAX wrote it is not
    module = jitted.lower(a, b).module
    assert check_target(module, NEURON) == []
    assert count(module, "stablehlo.dot_general") > 1
    simulated, n = on_datapath(module, NEURON)
    assert n == count(module, "stablehlo.dot_general")
    np.testing.assert_array_equal(compile_module(simulated, strict=False)([a, b])[0], want)
    plain = ir.Module.parse(jax.jit(matmul).lower(a, b).as_text(), make_context())
    assert check_target(plain, NEURON) != []
    inexact = compile_module(on_datapath(plain, NEURON)[0], strict=False)([a, b])[0]
    assert (inexact != want).any()


def test_without_a_target_the_matmul_is_left_as_it_is() -> None:
    """On the CPU's own profile (generic) nothing is split: the target is what asks."""
    a, b = operands()
    module = no64.jit(matmul).lower(a, b).module
    assert count(module, "stablehlo.dot_general") == 1


def test_f32_reduce_precision_is_computed_on_bits() -> None:
    x = np.concatenate([RNG.standard_normal(64) * 1e4, [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40, 65520.0]])
    x = x.astype(np.float32)
    jitted = no64.jit(lambda x: jax.lax.reduce_precision(x, 5, 10), target="neuron", policy="strict")
    got = np.asarray(jitted(x))
    want = np.asarray(jax.jit(lambda x: jax.lax.reduce_precision(x, 5, 10))(x))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert "reduce_precision" not in jitted.lower(x).as_text()


def test_a_refused_op_warns_at_the_users_line() -> None:
    """An int32 top_k has no form Neuron compiles (EVRF013): a TargetWarning at the line
    that wrote it under the default policy, a TargetError under strict and exact."""
    x = np.arange(-4, 4, dtype=np.int32) * 2**28

    def f(x: jax.Array) -> jax.Array:
        return jax.lax.top_k(x, 3)[0]  # REFUSED

    line = f.__code__.co_firstlineno + 1
    with pytest.warns(no64.TargetWarning, match=r"neuron refused \[EVRF013\]: TopK rejects int32") as caught:
        got = no64.jit(f, target="neuron")(x)
    assert [(w.filename, w.lineno) for w in caught if issubclass(w.category, no64.TargetWarning)] == [
        (__file__, line)]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.jit(f)(x)))
    for policy in ("strict", "exact"):
        with pytest.raises(no64.TargetError, match=f"refuses .* for target 'neuron'.*{__file__}:{line}"):
            no64.jit(f, target="neuron", policy=policy)(x)
    with warnings.catch_warnings():  # the CPU's own profile refuses nothing
        warnings.simplefilter("error", no64.TargetWarning)
        no64.jit(f)(x)


def test_an_unknown_target_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        no64.jit(matmul, target="nope")


def _wide_program(x, y, f):
    import jax.numpy as jnp

    h = x * jnp.int64(-7046029254386353131) + (y >> 40)  # wraps in 64 bits
    return (h ^ (h >> 31), jax.lax.population_count(h), jax.lax.clz(x), x // 1_000_000_007,
            jnp.sort(h), f * 3.0 + 1e-9)


@pytest.mark.parametrize("kw", [{"policy": "exact"}, {"float_policy": "pairs"},
                                {"policy": "exact", "float_policy": "pairs"}])
def test_native_integers_through_jit_under_exact_and_pairs(kw) -> None:
    """On a device with native int64 (mtl), no64.jit under policy="exact" or float
    pairs keeps the x64 program's integers: they cross the boundary as word pairs
    (joined back with restore_dtypes) and are computed as int64 inside; bit for bit
    the x64 program on full 64-bit values, float64 within the pairs' bound."""
    i64 = np.iinfo(np.int64)
    x = np.array([0, 1, -1, i64.max, i64.min, 2**40 + 3, -(2**33), 1234567890123], np.int64)
    y = np.array([i64.min, i64.max, 5, -5, 2**62, -(2**62), 0, 77], np.int64)
    f = np.linspace(-1e3, 1e3, 8)
    with enable_x64():
        want = jax.jit(_wide_program)(x, y, f)
        want = [np.asarray(w) for w in want]
    jitted = no64.jit(_wide_program, target="mtl", restore_dtypes=True, **kw)
    got = jitted(x, y, f)
    for g, w in zip(got[:5], want[:5]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    if kw.get("float_policy") == "pairs":
        assert got[5].dtype == np.float64
        np.testing.assert_allclose(got[5], want[5], rtol=2.0**-44)
    low = no64.jit(_wide_program, target="mtl", **kw).lower(x, y, f)
    text = low.as_text()
    assert "xi64>" in text and low.report.ops_emulated == 0 and "f64" not in text
    assert low.report.kept_native == ["i64", "u64"]
