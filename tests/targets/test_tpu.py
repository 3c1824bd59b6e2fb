"""The ``tpu`` profile: XLA:TPU keeps int64, uint64, float64 and complex128 itself, and
no64 converts only what it refuses.

Each case is an x64 program whose module XLA:TPU refuses.  The module JAX lowers for
the TPU (``jax.export`` with ``platforms=["tpu"]``, which runs on a CPU machine) is
converted for the profile and checked: no refused form is left.  The same conversion
is applied to the module JAX lowers for the CPU (the conversions do not depend on the
platform) and run on the CPU, against the x64 program run by JAX without no64:
integers bit for bit, floats within the bound each case states.  Where the converted
TPU module holds nothing but standard ops, it runs on the CPU too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.cli import main
from no64.jax.reference import run_module
from no64.kinds import OpForm
from no64.targets import I32_MAX, target, target_for_platform
from no64.targets.legality import check_target
from no64.transforms.legalize import Legalized, legalize
from support import enable_x64, ir, make_context, ops_named

TPU = target("tpu")
RNG = np.random.default_rng(43)
I64 = np.iinfo(np.int64)


def tpu_module(f: Callable[..., Any], *args: Any) -> ir.Module:
    """``f``'s x64 module as JAX lowers it for the TPU."""
    with enable_x64(True):
        exported = jax.export.export(jax.jit(f, keep_unused=True), platforms=["tpu"])(*args)
    return ir.Module.parse(exported.mlir_module(), make_context())


def cpu_module(f: Callable[..., Any], *args: Any) -> ir.Module:
    """``f``'s x64 module as JAX lowers it for the CPU."""
    with enable_x64(True):
        text = jax.jit(f, keep_unused=True).lower(*args).as_text(debug_info=True)
    return ir.Module.parse(text, make_context())


def converted(m: ir.Module) -> Legalized:
    """``m`` converted for the profile (in place): nothing refused may be left."""
    report = no64.demote(m, target=TPU)
    assert set(report.kept_native) <= TPU.native and not report.values_emulated
    done = legalize(m, TPU)
    m.operation.verify()
    assert not done.left, [str(x) for x in done.left]
    assert check_target(m, TPU) == [], [str(f) for f in check_target(m, TPU)]
    return done


def x64(f: Callable[..., Any], *args: Any) -> list[np.ndarray]:
    """The x64 program's results on the CPU, without no64."""
    with enable_x64(True):
        return [np.asarray(x) for x in jax.tree.leaves(jax.jit(f)(*args))]


def refused(m: ir.Module) -> list[str]:
    return [f.op for f in check_target(m, TPU) if f.kind == "refused"]


def test_the_profile() -> None:
    assert TPU.native == frozenset({"i64", "u64", "f64", "c128"})
    assert target_for_platform("tpu") is TPU
    forms = {(r.form, r.when) for r in TPU.refuses}
    assert forms == {(OpForm.MATMUL, "64-bit-integer"), (OpForm.CONVOLUTION, "64-bit-integer"),
                     (OpForm.LU, "64-bit-float"), (OpForm.FFT, "64-bit-float"),
                     (OpForm.BITCAST, "float64-int64"), (OpForm.NEXT_AFTER, "64-bit-float")}
    assert all(r.reason and r.source for r in TPU.refuses)
    # XLA:TPU's integer dots are exact on 32-bit elements: the 64-bit ones are split into such
    assert all(r.split_within == I32_MAX for r in TPU.refuses if r.when == "64-bit-integer")


# ------------------------------------------------------------ 64-bit integer dots
def _full_range(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    flat[: 4] = [info.min, info.max, 0, info.max if dtype == np.uint64 else -1][: flat.size]
    return x


DOTS = [
    pytest.param(lambda a, b: a @ b, (5, 64), (64, 3), np.int64, id="matmul"),
    pytest.param(lambda a, b: a @ b, (5, 300), (300, 2), np.uint64, id="uint64"),
    pytest.param(lambda a, b: jnp.einsum("bik,bkj->bji", a, b), (2, 3, 40), (2, 40, 4), np.int64,
                 id="batched"),
    pytest.param(lambda a, b: jnp.dot(a, b), (7,), (7,), np.int64, id="vector"),
    pytest.param(lambda a, b: jnp.dot(a.astype(jnp.int32), b.astype(jnp.int32),
                                      preferred_element_type=jnp.int64), (4, 9), (9, 4), np.int64, id="i32-to-i64"),
]


@pytest.mark.parametrize("f, sa, sb, dtype", DOTS)
def test_integer_dots_on_64_bits(f: Callable[..., Any], sa: tuple[int, ...], sb: tuple[int, ...], dtype: Any) -> None:
    a, b = _full_range(sa, dtype), _full_range(sb, dtype)
    on_tpu = tpu_module(f, a, b)
    assert refused(on_tpu) == ["stablehlo.dot_general"]
    done = converted(on_tpu)
    assert [r.op for r in done.rewritten] == ["stablehlo.dot_general"]
    assert "refuses it: UNIMPLEMENTED" in done.rewritten[0].why
    # every dot left is a 32-bit one, and its limbs' sums stay within int32
    assert all(ir.RankedTensorType(d.results[0].type).element_type == ir.IntegerType.get_signless(32, d.context)
               for d in ops_named(on_tpu, "stablehlo.dot_general"))
    [got] = run_module(on_tpu, [a, b], strict=False)
    [want] = x64(f, a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    on_cpu = cpu_module(f, a, b)
    converted(on_cpu)
    assert np.array_equal(run_module(on_cpu, [a, b], strict=False)[0], want)


def test_32_bit_dots_are_left_alone() -> None:
    a = RNG.integers(-2**31, 2**31, size=(4, 8)).astype(np.int32)
    m = tpu_module(lambda a, b: a @ b, a, a.T)
    before = str(m)
    assert refused(m) == [] and not legalize(m, TPU).rewritten and str(m) == before


def test_an_integer_convolution_on_64_bits() -> None:
    def f(x: jax.Array, k: jax.Array) -> jax.Array:
        return lax.conv_general_dilated(x, k, (1,), [(1, 2)], rhs_dilation=(2,))

    x, k = _full_range((2, 3, 10), np.int64), _full_range((4, 3, 3), np.int64)
    m = tpu_module(f, x, k)
    assert refused(m) == ["stablehlo.convolution"]
    converted(m)
    assert np.array_equal(run_module(m, [x, k], strict=False)[0], x64(f, x, k)[0])


# ---------------------------------------------------------------- float64 LU
def _well_conditioned(*shape: int) -> np.ndarray:
    n = shape[-1]
    return RNG.normal(size=shape) + n * np.eye(n) * RNG.choice([-1.0, 1.0], size=(n, 1))


LU_PROGRAMS = [
    pytest.param(lambda a, b: jnp.linalg.solve(a, b), (6,), id="solve"),
    pytest.param(lambda a, b: jnp.linalg.inv(a) @ b, (6,), id="inv"),
    pytest.param(lambda a, b: jnp.linalg.det(a) * b, (6,), id="det"),
    pytest.param(lambda a, b: jnp.linalg.slogdet(a), (6,), id="slogdet"),
    pytest.param(lambda a, b: jnp.linalg.solve(a, b[..., None])[..., 0], (2, 3, 6), id="batched-solve"),
    pytest.param(lambda a, b: lax.linalg.lu(a), (3, 6), id="lu"),
]
#: The bound of a float64 result against LAPACK's (x64 on the CPU): both factor with the
#: same pivots, by LAPACK's unblocked algorithm and its blocked one, so they differ by
#: rounding only -- for these matrices (condition below 10) within a few hundred ulp of
#: the largest element.
LU_BOUND = 256 * np.finfo(np.float64).eps


@pytest.mark.parametrize("f, batch", LU_PROGRAMS)
def test_float64_lu(f: Callable[..., Any], batch: tuple[int, ...]) -> None:
    a, b = _well_conditioned(*batch[:-1], 6, 6), RNG.normal(size=batch)
    want = x64(f, a, b)
    for m in (tpu_module(f, a, b), cpu_module(f, a, b)):
        if "LuDecomposition" in str(m):
            assert refused(m) == ["stablehlo.custom_call"]
        done = converted(m)
        assert [r.op for r in done.rewritten] == ["stablehlo.custom_call"]
        assert "written out in float64 ops: a loop over the 6 columns" in done.rewritten[0].detail
        assert not ops_named(m, "stablehlo.custom_call") or "lapack_dtrsm" in str(m)
        # the TPU's module holds standard ops only now: it runs on the CPU as well
        got = run_module(m, [a, b], strict=False)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            if w.dtype.kind == "f":
                assert np.max(np.abs(g - w)) <= LU_BOUND * max(1.0, float(np.max(np.abs(w)))), (g, w)
            else:  # pivots and permutations: LAPACK's
                assert np.array_equal(g, w)


def test_a_singular_matrix_factors_as_lapack_does() -> None:
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    f = lax.linalg.lu
    m = tpu_module(f, a)
    converted(m)
    for g, w in zip(run_module(m, [a], strict=False), x64(f, a)):
        assert np.allclose(g, w, rtol=0, atol=1e-15) if w.dtype.kind == "f" else np.array_equal(g, w)


def test_convert_names_what_it_converted_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`no64 convert --target tpu` on the TPU's modules: each op XLA:TPU refuses is named
    with what it became and XLA:TPU's words; `no64 check --target tpu` then accepts it."""
    a = _well_conditioned(4, 4)
    src, out = tmp_path / "solve.mlir", tmp_path / "out.mlir"
    src.write_text(str(tpu_module(lambda a, i: (jnp.linalg.solve(a, a[0]), i @ i), a, np.ones((2, 2), np.int64))))
    assert main(["check", "--target", "tpu", str(src)]) == 1
    checked = capsys.readouterr().out
    assert "Only F32 and C64 types are implemented in LuDecomposition" in checked
    assert "this rewriting is not implemented: dot" in checked
    assert main(["convert", str(src), "-o", str(out), "--target", "tpu"]) == 0
    printed = capsys.readouterr().out
    assert "target tpu: 2 ops rewritten" in printed
    assert re.search(r"stablehlo.custom_call at .*: written out in float64 ops: a loop over the 4 columns "
                     r"\(no64.lu.4\) \(the target: refuses it: Only F32 and C64 types are implemented in "
                     r"LuDecomposition \(f64\)\)", printed), printed
    assert re.search(r"stablehlo.dot_general at .*limb dots? of .* in i32 \(the target: refuses it: "
                     r"UNIMPLEMENTED: While rewriting", printed), printed
    assert main(["check", "--target", "tpu", str(out)]) == 0


# ------------------------------------------------------- the bits of a float64
SMALLEST_NORMAL = float(np.finfo(np.float64).smallest_normal)


def _doubles() -> np.ndarray:
    """Specials, the extremes of the normal range, and doubles of random bits (the
    subnormals and NaNs of random payloads among them kept apart: see the cases)."""
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, SMALLEST_NORMAL, -SMALLEST_NORMAL,
                float(np.finfo(np.float64).max), -float(np.finfo(np.float64).max), 1.0, 1.0 + 2**-52,
                2.0 - 2**-52, 0.1, 1e-300, 3e38, 1.2e-38, 2.0**1023, 2.0**-1022 * 3]
    random = RNG.integers(I64.min, I64.max, size=3000, dtype=np.int64, endpoint=True).view(np.float64)
    random = random[np.isfinite(random) & (np.abs(random) >= SMALLEST_NORMAL)]
    return np.concatenate([np.array(specials), random])


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where two float64 arrays differ in their bits (NaNs of any payload alike)."""
    return (got.view(np.int64) != want.view(np.int64)) & ~(np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_float64_bits_as_integers(dtype: Any) -> None:
    x = _doubles()

    def f(v: jax.Array) -> jax.Array:
        return lax.bitcast_convert_type(v, dtype)

    want = x64(f, x)[0]
    for m in (tpu_module(f, x), cpu_module(f, x)):
        assert refused(m) == ["stablehlo.bitcast_convert"]
        converted(m)
        assert not ops_named(m, "stablehlo.bitcast_convert") or all(
            "f64" not in str(op.operands[0].type) and "f64" not in str(op.results[0].type)
            for op in ops_named(m, "stablehlo.bitcast_convert"))
        got = run_module(m, [x], strict=False)[0]
        assert got.dtype == want.dtype
        # NaN: the quiet NaN of its sign, which is what JAX's NaN constants hold
        assert np.array_equal(got, want), x[got != want][:5]
    # a subnormal is a zero of its sign, as XLA's arithmetic flushes it
    tiny = np.array([5e-324, -5e-324, SMALLEST_NORMAL / 3])
    m = cpu_module(f, tiny)
    converted(m)
    assert np.array_equal(run_module(m, [tiny], strict=False)[0], np.array([0.0, -0.0, 0.0]).view(dtype))


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integers_as_float64_bits(dtype: Any) -> None:
    bits = RNG.integers(I64.min, I64.max, size=3000, dtype=np.int64, endpoint=True)
    bits = np.concatenate([_doubles().view(np.int64), bits, [0, I64.min, I64.max, -1, 1, 0x7FF0000000000001]])
    bits = bits.astype(np.int64).view(dtype)

    def f(v: jax.Array) -> jax.Array:
        return lax.bitcast_convert_type(v, jnp.float64)

    want = x64(f, bits)[0]
    subnormal = (want != 0) & (np.abs(want) < SMALLEST_NORMAL)
    assert subnormal.any() and np.isnan(want).sum() > 2
    for m in (tpu_module(f, bits), cpu_module(f, bits)):
        assert refused(m) == ["stablehlo.bitcast_convert"]
        converted(m)
        got = run_module(m, [bits], strict=False)[0]
        assert not _same_bits(got, want)[~subnormal].any()
        assert np.array_equal(got[subnormal], np.copysign(0.0, want[subnormal]))


def test_nextafter() -> None:
    x = _doubles()[:800]
    y = np.concatenate([x[1:], x[:1]])
    y[:40] = x[:40]  # equal pairs
    y[40:80] = -y[40:80]
    x[100:102], y[100:102] = [0.0, SMALLEST_NORMAL], [1.0, 0.0]  # answers below the normal range
    want = x64(jnp.nextafter, x, y)[0]
    # where a subnormal is the answer (the step below the smallest normal, up from zero),
    # the arithmetic gives a zero of its sign
    subnormal = (want != 0) & (np.abs(want) < SMALLEST_NORMAL)
    assert 0 < subnormal.sum() <= 4
    # JAX lowers it for the TPU on bits (bitcast_convert), for the CPU as chlo.next_after,
    # which XLA expands on bits itself (XLA:TPU then fails on it)
    for m, form in ((tpu_module(jnp.nextafter, x, y), "stablehlo.bitcast_convert"),
                    (cpu_module(jnp.nextafter, x, y), "chlo.next_after")):
        assert set(refused(m)) == {form}
        converted(m)
        assert not ops_named(m, "chlo.next_after")
        got = run_module(m, [x, y], strict=False)[0]
        assert not _same_bits(got, want)[~subnormal].any()
        assert np.array_equal(got[subnormal], np.copysign(0.0, want[subnormal]))


# ------------------------------------------------------ complex128 Fourier transforms
def _complex(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape) + 1j * RNG.normal(size=shape)


FFTS = [  # (program, its numpy form, input, the product of its lengths, whether inverse)
    pytest.param(jnp.fft.fft, np.fft.fft, _complex(3, 100), 100, False, id="fft-four-step"),
    pytest.param(jnp.fft.fft, np.fft.fft, _complex(2, 97), 97, False, id="fft-prime"),
    pytest.param(jnp.fft.ifft, np.fft.ifft, _complex(60), 60, True, id="ifft"),
    pytest.param(jnp.fft.rfft, np.fft.rfft, RNG.normal(size=(2, 9)), 9, False, id="rfft-odd"),
    pytest.param(lambda z: jnp.fft.irfft(z, 10), lambda z: np.fft.irfft(z, 10), _complex(6), 10, True,
                 id="irfft-even"),
    pytest.param(jnp.fft.fft2, np.fft.fft2, _complex(2, 12, 20), 240, False, id="fft2"),
    pytest.param(lambda z: jnp.fft.irfftn(z, (4, 6, 10)), lambda z: np.fft.irfftn(z, (4, 6, 10), axes=(0, 1, 2)),
                 _complex(4, 6, 6), 240, True, id="irfftn-3-axes"),
]


@pytest.mark.parametrize("f, exact, x, length, inverse", FFTS)
def test_complex128_fft(f: Callable[..., Any], exact: Callable[..., Any], x: np.ndarray, length: int,
                        inverse: bool) -> None:
    """Each output within 4 eps log2(N) ||x||_2 (an inverse's divided by N) of numpy's
    transform in extended precision -- the bound XLA's own float64 FFT meets on the CPU."""
    want = x64(f, x)[0]
    reference = exact(x.astype(np.clongdouble if np.iscomplexobj(x) else np.longdouble))
    scale = float(np.sqrt(np.sum(np.abs(x.astype(np.clongdouble)) ** 2)))
    bound = 4 * np.finfo(np.float64).eps * np.log2(length) * scale / (length if inverse else 1)
    assert float(np.max(np.abs(want - reference))) <= bound  # XLA's own
    for m in (tpu_module(f, x), cpu_module(f, x)):
        assert refused(m) == ["stablehlo.fft"]
        done = converted(m)
        assert "as float64 dot_general ops on its real and imaginary parts" in done.rewritten[0].detail
        assert "Unexpected operand type for FFT" in done.rewritten[0].why
        got = run_module(m, [x], strict=False)[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        assert float(np.max(np.abs(got - reference))) <= bound


def test_a_large_prime_length_is_left_with_why() -> None:
    x = _complex(1031)
    m = tpu_module(jnp.fft.fft, x)
    no64.demote(m, target=TPU)
    done = legalize(m, TPU)
    assert [x.detail for x in done.left] == ["a length with the prime factor 1031 (no64 transforms prime lengths "
                                             "up to 512)"]
    assert refused(m) == ["stablehlo.fft"]
