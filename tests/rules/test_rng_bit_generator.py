"""The exact rewrite of ``rng_bit_generator`` with a ``ui64`` state.

Every program is run twice on the CPU backend: unconverted (XLA expands the
op itself, from its 64-bit state) and after :func:`no64.demote` (no 64-bit
type left).  Random bits and new states must agree bit for bit.  Many
states go through one compiled program (``jax.lax.map``), since compiling
is what costs time here.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.errors import UnsupportedOpError
from no64.jax.reference import lower_x64, parse_module, run_module
from support import enable_x64, ir, make_context

ALG = jax.lax.RandomAlgorithm
M32 = 0xFFFFFFFF


def _words(*values: int) -> list[int]:
    """64-bit state words as the 32-bit words JAX keeps (low word first)."""
    return [w for v in values for w in (v & M32, v >> 32)]


#: rbg states (ui32[4] = key, counter): random ones and ones whose counter
#: (or, for Philox with two words, key:counter) carries across 32/64 bits.
STATES = np.array(
    [
        [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
        [0xA4093822, 0x299F31D0, 0x082EFA98, 0xEC4E6C89],
        [0, 0, 0, 0],
        _words(0x0123456789ABCDEF, 0xFFFFFFFF_FFFFFFFE),  # 64-bit counter wraps
        _words(0x0F1E2D3C4B5A6978, 0x00000005_FFFFFFF0),  # low word carries into high
        _words(0xFFFFFFFF_FFFFFFFF, 0xFFFFFFFF_FFFFFFFF),  # Philox's 128-bit counter wraps
    ],
    dtype=np.uint32,
)

#: ThreeFry's layout depends on the shape (which dimension is halved: the
#: first even one, else the largest, the first on ties); Philox's only on the
#: element count.
THREEFRY_SHAPES = [(), (1,), (3, 5), (5, 3), (3, 3), (3, 4), (7,), (2, 3, 4), (1023,), (0,)]
PHILOX_SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (1023,), (0,)]
NARROW = [(s, d) for s in [(3, 5), (7,)] for d in (jnp.uint8, jnp.uint16)]
CASES = (
    [(ALG.RNG_THREE_FRY, s, jnp.uint32) for s in THREEFRY_SHAPES]
    + [(ALG.RNG_PHILOX, s, jnp.uint32) for s in PHILOX_SHAPES]
    + [(alg, s, d) for alg in (ALG.RNG_THREE_FRY, ALG.RNG_PHILOX) for s, d in NARROW]
    # DEFAULT is resolved by the backend: a few cases show it is Philox on CPU.
    + [(ALG.RNG_DEFAULT, s, d) for s, d in [((3, 5), jnp.uint8), ((2, 3, 4), jnp.uint16),
                                           ((1023,), jnp.uint32)]]
)


def lower_x32(fn, *args) -> ir.Module:
    """``fn`` lowered with 64-bit types off, as a no64 module."""
    with enable_x64(False):
        text = jax.jit(fn).lower(*args).as_text(debug_info=True)
    return parse_module(text)


def demoted_matches_reference(m: ir.Module, args: list[np.ndarray]) -> no64.DemotionReport:
    """Run ``m`` before and after demotion; assert identical outputs."""
    ref = run_module(m, args, strict=False)
    report = no64.demote(m)
    assert no64.find_64bit(m) == []
    got = run_module(m, args)
    assert len(ref) == len(got)
    for i, (r, g) in enumerate(zip(ref, got)):
        assert r.dtype == g.dtype and r.shape == g.shape, i
        np.testing.assert_array_equal(g, r, err_msg=f"output #{i}")
    return report


def test_all_algorithms_shapes_and_widths_bit_identical() -> None:
    def draw(state):
        out = []
        for alg, shape, dtype in CASES:
            new_state, bits = jax.lax.rng_bit_generator(state, shape, dtype, algorithm=alg)
            out += [new_state, bits]
        return out

    # The premise of the carry state: ThreeFry's 7 outputs take 4 counters
    # from 2**64 - 2, so the counter wraps to 2.
    with enable_x64(False):
        advanced, _ = jax.jit(jax.lax.rng_bit_generator, static_argnums=(1, 2, 3))(
            STATES[3], (7,), jnp.uint32, ALG.RNG_THREE_FRY
        )
    assert np.asarray(advanced).tolist() == STATES[3, :2].tolist() + [2, 0]

    m = lower_x32(lambda states: jax.lax.map(draw, states), STATES)
    report = demoted_matches_reference(m, [STATES])

    rewrites = [e for e in report.events if e.op == "stablehlo.rng_bit_generator"]
    assert len(rewrites) == len(CASES)
    assert any("DEFAULT is Philox" in e.detail for e in rewrites)
    # One helper per algorithm (DEFAULT shares Philox's), shape and width.
    text = str(m)
    helpers = set(re.findall(r"func\.func private @\"?(no64\.rng_bit_generator\.[\w.]+)", text))
    kinds = {(a == ALG.RNG_THREE_FRY, shape, dtype) for a, shape, dtype in CASES}
    assert len(helpers) == len(kinds)
    assert "ui64" not in text


def test_jax_random_with_rbg_keys_bit_identical() -> None:
    def sample(data):
        out = []
        for impl in ("rbg", "unsafe_rbg"):
            key = jax.random.wrap_key_data(data, impl=impl)
            k1, k2 = jax.random.split(key)
            out += [
                jax.random.bits(key, (3, 5), jnp.uint8),
                jax.random.uniform(k1, (3, 5)),
                jax.random.normal(k2, (7,)),
                jax.random.randint(key, (1023,), -5, 100),
                jax.random.key_data(jax.random.split(key, 3)),
                jax.random.key_data(jax.random.fold_in(key, 7)),
            ]
        return out

    m = lower_x32(lambda keys: jax.lax.map(sample, keys), STATES)
    demoted_matches_reference(m, [STATES])


def test_constant_state_and_chained_generators_with_x64() -> None:
    def chain():
        state = jnp.array([0x0123456789ABCDEF, 0xFFFFFFFF_FFFFFFFE], jnp.uint64)
        s1, b1 = jax.lax.rng_bit_generator(state, (7,), jnp.uint32, algorithm=ALG.RNG_THREE_FRY)
        s2, b2 = jax.lax.rng_bit_generator(s1, (3, 5), jnp.uint8)
        splat = np.full(2, 0xC0FFEE_00000001, np.uint64)  # a splat constant
        _, b3 = jax.lax.rng_bit_generator(splat, (2, 3), jnp.uint16, algorithm=ALG.RNG_THREE_FRY)
        return b1, b2, b3, jax.lax.bitcast_convert_type(s2, jnp.uint32)

    m = lower_x64(chain)
    assert "dense<54324593195745281> : tensor<2xui64>" in str(m)
    demoted_matches_reference(m, [])


#: Philox with a 3-word state (key, 128-bit counter), which JAX never makes;
#: generators chained on the 64-bit state or sharing it, words read back as
#: ui32 and i32.
PHILOX3 = """
func.func public @main(%w: tensor<3x2xui32>) -> (tensor<7xui32>, tensor<3x5xui8>,
    tensor<1023xui16>, tensor<ui32>, tensor<3x2xui32>, tensor<3x2xi32>) {
  %s = stablehlo.bitcast_convert %w : (tensor<3x2xui32>) -> tensor<3xui64>
  %s1, %b1 = stablehlo.rng_bit_generator %s, algorithm = PHILOX
    : (tensor<3xui64>) -> (tensor<3xui64>, tensor<7xui32>)
  %s2, %b2 = stablehlo.rng_bit_generator %s1, algorithm = DEFAULT
    : (tensor<3xui64>) -> (tensor<3xui64>, tensor<3x5xui8>)
  %s3, %b3 = stablehlo.rng_bit_generator %s2, algorithm = PHILOX
    : (tensor<3xui64>) -> (tensor<3xui64>, tensor<1023xui16>)
  %s4, %b4 = stablehlo.rng_bit_generator %s, algorithm = PHILOX
    : (tensor<3xui64>) -> (tensor<3xui64>, tensor<ui32>)
  %w2 = stablehlo.bitcast_convert %s2 : (tensor<3xui64>) -> tensor<3x2xui32>
  %w3 = stablehlo.bitcast_convert %s3 : (tensor<3xui64>) -> tensor<3x2xi32>
  return %b1, %b2, %b3, %b4, %w2, %w3 : tensor<7xui32>, tensor<3x5xui8>, tensor<1023xui16>,
    tensor<ui32>, tensor<3x2xui32>, tensor<3x2xi32>
}
"""


@pytest.mark.parametrize(
    "state",
    [
        # counter carries from word 1 into word 2 and on into word 2's high half
        _words(0x9E3779B97F4A7C15, 0xFFFFFFFF_FFFFFFFF, 0x00000001_FFFFFFFF),
        # the whole 128-bit counter wraps
        _words(0xFFFFFFFF_FFFFFFFF, 0xFFFFFFFF_FFFFFFF0, 0xFFFFFFFF_FFFFFFFF),
    ],
)
def test_philox_with_three_state_words(state: list[int]) -> None:
    words = np.array(state, np.uint32).reshape(3, 2)
    demoted_matches_reference(parse_module(PHILOX3), [words])


CONST_STATE = np.array([1, 2], np.uint64)


@pytest.mark.parametrize(
    "fn, args, reason",
    [
        (lambda: jax.lax.rng_bit_generator(jnp.asarray(CONST_STATE), (3,), jnp.uint64)[1], (),
         "ui64 random numbers"),
        (lambda s: jax.lax.rng_bit_generator(s, (3,), jnp.uint32)[1], (CONST_STATE,),
         "state comes from a block argument"),
        (lambda: jax.lax.rng_bit_generator(jnp.asarray(CONST_STATE), (3,), jnp.uint32), (),
         "new 64-bit state is used by func.return"),
    ],
    ids=["u64-output", "state-argument", "state-returned"],
)
def test_unsupported_patterns_are_refused(fn, args, reason: str) -> None:
    m = lower_x64(fn, *args)
    before = str(m)
    with pytest.raises(UnsupportedOpError) as err:
        no64.demote(m)
    assert str(m) == before  # left unchanged
    assert str(err.value).startswith("stablehlo.rng_bit_generator at ")
    assert reason in str(err.value)


def test_rewrite_is_deterministic() -> None:
    draw = lambda s: jax.lax.rng_bit_generator(s, (3, 5), jnp.uint8)[1]  # noqa: E731
    text = lower_x32(draw, STATES[0]).operation.get_asm()
    outputs = []
    for _ in range(2):
        m = ir.Module.parse(text, make_context())
        no64.demote(m)
        outputs.append(m.operation.get_asm(enable_debug_info=True))
    assert outputs[0] == outputs[1]
