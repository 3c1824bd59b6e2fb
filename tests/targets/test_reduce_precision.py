"""no64.rules.rounding through no64.transforms.legalize: reduce_precision, which Neuron
refuses, computed from the f32 operand's bits with integer ops -- checked bit for bit
against XLA's own reduce_precision on the CPU (the module as it was), over every special
value, ties at the kept mantissa bit, values about the narrower type's largest and
smallest exponents, f32 subnormals and random bit patterns; and against the target
check, which must find nothing left."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from no64.targets import target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from runner import compile_module
from support import ir, make_context, op_names

NEURON = target("neuron")
RNG = np.random.default_rng(11)
#: (exponent_bits, mantissa_bits): bf16, f16, f32 itself, an fp8 like e4m3, and corners
PAIRS = [(8, 7), (5, 10), (8, 23), (4, 3), (5, 2), (3, 0), (1, 1), (8, 0), (7, 22), (2, 5)]
#: what the rewrite may write: integer ops and the bitcasts to and from them
INTEGER_OPS = {"stablehlo.bitcast_convert", "stablehlo.and", "stablehlo.or", "stablehlo.add",
               "stablehlo.shift_right_logical", "stablehlo.compare", "stablehlo.select", "stablehlo.constant"}


def lowered(f: Any, *args: Any) -> ir.Module:
    return ir.Module.parse(jax.jit(f).lower(*args).as_text(), make_context())


def adversarial(e: int, m: int) -> np.ndarray:
    """f32 bit patterns where reduce_precision(e, m) decides: specials, ties, the
    narrower type's extremes, subnormals, random bits; each with both signs."""
    drop = 23 - m
    bits: list[int] = [0, 1, 0x7FFFFF, 0x400000, 0x800000, 0x7F7FFFFF, 0x7F800000,  # 0, subnormals, max, inf
                       0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x7FC00001,  # quiet and signalling NaNs
                       0x3F800000, 0x3F800001, 0x3FFFFFFF]
    if drop > 0:
        half = 1 << (drop - 1)
        for base in (0x3F800000, 0x3F800000 | (1 << drop), 0x00000000, 0x00800000 | (1 << drop), 0x7F000000,
                     0x7F7FFFFF & ~((1 << drop) - 1)):
            bits += [base + half - 1, base + half, base + half + 1]  # below, at and above the tie
            bits += [base + (1 << drop) - 1, base + (1 << drop)]
    bias = 127
    reduced = (1 << (e - 1)) - 1
    for exponent in (bias + reduced - 1, bias + reduced, bias + reduced + 1,
                     bias - reduced - 1, bias - reduced, bias - reduced + 1, bias - reduced + 2):
        if 0 <= exponent <= 255:
            top = exponent << 23
            bits += [top, top | 1, top | 0x7FFFFF, top | (0x7FFFFF & ~((1 << drop) - 1)),
                     top | ((1 << drop) >> 1) if drop else top]
    bits += [int(b) for b in RNG.integers(0, 1 << 31, 256)]
    bits += [int(b) for b in RNG.integers(0, 1 << 23, 32)]  # subnormals
    patterns = np.array([b & 0x7FFFFFFF for b in bits], dtype=np.uint32)
    patterns = np.concatenate([patterns, patterns | np.uint32(0x80000000)])
    return patterns.view(np.float32)


@pytest.mark.parametrize("e,m", PAIRS)
def test_reduce_precision_on_bits_bit_for_bit(e: int, m: int) -> None:
    x = adversarial(e, m)
    original = lowered(lambda x: jax.lax.reduce_precision(x, e, m), x)
    rewritten = ir.Module.parse(str(original), make_context())
    refused = [f for f in check_target(rewritten, NEURON) if f.kind == "refused"]
    assert [f.op for f in refused] == ["stablehlo.reduce_precision"], "not vacuous: Neuron refuses it"
    done = legalize(rewritten, NEURON)
    assert not done.left and len(done.rewritten) == 1, done.to_dict()
    assert check_target(rewritten, NEURON) == []
    body = [n for n in op_names(rewritten) if n not in ("func.func", "func.return")]
    assert set(body) <= INTEGER_OPS, sorted(set(body) - INTEGER_OPS)
    want = compile_module(original, strict=False)([x])[0]
    got = compile_module(rewritten, strict=False)([x])[0]
    assert got.dtype == np.float32
    same = got.view(np.uint32) == want.view(np.uint32)
    if m == 0:
        # a NaN with no mantissa bits left: XLA's MLIR lowering (the CPU of jax 0.10)
        # keeps the operand, as the rewrite does; its older LLVM emitter (jax 0.7) gave +inf
        nan = np.isnan(x)
        assert (got.view(np.uint32)[nan] == x.view(np.uint32)[nan]).all()
        same |= nan & (want.view(np.uint32) == np.uint32(0x7F800000))
    mismatch = np.flatnonzero(~same)
    assert mismatch.size == 0, [(hex(int(x.view(np.uint32)[i])), hex(int(got.view(np.uint32)[i])),
                                 hex(int(want.view(np.uint32)[i]))) for i in mismatch[:8]]


def test_reduce_precision_changes_values() -> None:
    """Not vacuous: rounding to bf16 and to e4m3 changes most values, flushes small ones to
    zero and sends large ones to infinity."""
    x = adversarial(4, 3)
    run = compile_module(lowered(lambda x: jax.lax.reduce_precision(x, 4, 3), x), strict=False)
    y = run([x])[0]
    finite = np.isfinite(x)
    assert (y[finite] != x[finite]).mean() > 0.5
    assert np.isinf(y[finite]).any() and (y[finite] == 0).sum() > (x[finite] == 0).sum()


#: (exponent_bits, mantissa_bits) for the 16-bit formats: their own widths, wider ones
#: (nothing to do), narrower exponents and mantissas, and corners
NARROW_PAIRS = [(5, 10), (8, 7), (8, 23), (5, 2), (4, 3), (3, 0), (1, 1), (8, 0), (2, 5), (5, 9), (4, 10), (7, 6)]
#: the 16-bit operand is paired with itself and bitcast to and from i32 (no 16-bit integer)
MOVES = {"stablehlo.reshape", "stablehlo.concatenate", "stablehlo.slice", "stablehlo.shift_left"}


@pytest.mark.parametrize("e,m", NARROW_PAIRS)
@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16], ids=["f16", "bf16"])
def test_16_bit_operands_bit_for_bit_on_every_pattern(dtype: Any, e: int, m: int) -> None:
    """An f16 or bf16 reduce_precision, rounded at its own width, on every one of the
    65536 bit patterns (every NaN payload, signalling ones too, both zeros, every
    subnormal): bit for bit XLA's own op on the CPU, with integer ops on i32 only (a
    bf16 NaN: the operand, or the canonical NaN where XLA's CPU gives that)."""
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    original = lowered(lambda x: jax.lax.reduce_precision(x, e, m), x)
    rewritten = ir.Module.parse(str(original), make_context())
    assert [f.op for f in check_target(rewritten, NEURON)] == ["stablehlo.reduce_precision"]
    done = legalize(rewritten, NEURON)
    assert not done.left and len(done.rewritten) == 1, done.to_dict()
    assert check_target(rewritten, NEURON) == []
    body = set(op_names(rewritten)) - {"func.func", "func.return"}
    assert body <= INTEGER_OPS | MOVES, sorted(body - INTEGER_OPS - MOVES)
    assert "i16" not in str(rewritten) and "ui16" not in str(rewritten)
    want = compile_module(original, strict=False)([x])[0].view(np.uint16)
    got = compile_module(rewritten, strict=False)([x])[0]
    assert got.dtype == x.dtype
    got_bits, x_bits = got.view(np.uint16), x.view(np.uint16)
    nan = np.isnan(x.astype(np.float32))
    same = got_bits == want
    kept = [v == x_bits for v in (got_bits, want)]
    if dtype == jnp.bfloat16:
        # XLA's CPU computes bf16 through f32, and some releases give a bf16 NaN back as
        # the canonical one of its sign, in its own op and in the rewrite's moves alike;
        # either side is the operand or that NaN
        canonical = (x_bits & np.uint16(0x8000)) | np.uint16(0x7FC0)
        kept = [k | (v == canonical) for k, v in zip(kept, (got_bits, want))]
        same |= nan & kept[0] & kept[1]
    if m == 0:  # as for f32: jax 0.7's emitter gave +inf for a NaN rounded to no mantissa bits
        inf = np.uint16(0x7F80 if dtype == jnp.bfloat16 else 0x7C00)
        same |= nan & (want == inf) & kept[0]
    mismatch = np.flatnonzero(~same)
    assert mismatch.size == 0, [(hex(i), hex(int(got_bits[i])), hex(int(want[i]))) for i in mismatch[:8]]
    assert (got_bits[~nan] == want[~nan]).all()


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16], ids=["f16", "bf16"])
def test_16_bit_rounding_changes_values(dtype: Any) -> None:
    """Not vacuous: to e4m3 most finite 16-bit values change, small ones are flushed
    and large ones become infinite."""
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    y = compile_module(lowered(lambda x: jax.lax.reduce_precision(x, 4, 3), x), strict=False)([x])[0]
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    finite = np.isfinite(xf)
    assert (yf[finite] != xf[finite]).mean() > 0.5
    assert np.isinf(yf[finite]).any() and (yf[finite] == 0).sum() > (xf[finite] == 0).sum()


@pytest.mark.parametrize("e,m", [(5, 10), (4, 3)])
def test_an_f16_signalling_nan_keeps_its_payload(e: int, m: int) -> None:
    """An f16 NaN is the operand as it was, signalling ones too, in XLA's op and in the
    rewrite (which converts no float: an f16 to f32 conversion would quiet it)."""
    signalling = np.array([0x7C01, 0xFD55, 0x7E01], np.uint16).view(jnp.float16)
    m_ = lowered(lambda x: jax.lax.reduce_precision(x, e, m), signalling)
    np.testing.assert_array_equal(compile_module(m_, strict=False)([signalling])[0].view(np.uint16),
                                  signalling.view(np.uint16))
    legalize(m_, NEURON)
    assert "convert" not in " ".join(op_names(m_)).replace("bitcast_convert", "")
    np.testing.assert_array_equal(compile_module(m_, strict=False)([signalling])[0].view(np.uint16),
                                  signalling.view(np.uint16))


def test_other_operands_are_left_with_why() -> None:
    """An f64 reduce_precision (kept where a device has f64) has no rewrite: left as it
    is and still reported, with why."""
    text = """func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {
      %0 = stablehlo.reduce_precision %x, format = e5m2 : tensor<4xf64>
      return %0 : tensor<4xf64>
    }"""
    m = ir.Module.parse(text, make_context())
    done = legalize(m, NEURON)
    assert not done.rewritten and len(done.left) == 1
    assert "only f32, f16 and bf16 are rounded on their bits" in done.left[0].detail
    assert [f.op for f in check_target(m, NEURON, types=False)] == ["stablehlo.reduce_precision"]
