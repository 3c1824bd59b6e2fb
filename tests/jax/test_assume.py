"""no64.assume: a range stated in the program, read by the pass on every path
(no64.jit, jax.export and the offline pass; the compile hook in
test_meaning_runs.py), inert without no64, checked on the host where the data
is concrete; results compared with the x64 program run without no64."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import no64
from runner import compile_module
from support import enable_x64, ir, make_context

VOCAB = 512
#: 0/1 flags and token ids at the extremes of their declared ranges
MASK = (np.arange(4 * 64).reshape(4, 64) % 3 == 0).astype(np.int32)
TOKENS = np.array([[0, VOCAB - 1, 7, VOCAB - 2]], np.int32)


def mask_sum(m):
    return jnp.sum(no64.assume(m, 0, 1).astype(jnp.int64))


def token_offsets(t):
    # int64 position ids: token * 2**20 + position fits in 32 bits for ids < 2**11
    t = no64.assume(t, 0, VOCAB - 1).astype(jnp.int64)
    return t * 2**20 + jnp.arange(t.shape[-1])


def _x64(f, *args):
    with enable_x64(True):
        return np.asarray(jax.jit(f)(*args))


@pytest.mark.parametrize("f,arg", [(mask_sum, MASK), (token_offsets, TOKENS)], ids=["mask_sum", "offsets"])
def test_no64_jit_strict_and_exact_accept_an_assumed_range(f, arg) -> None:
    want = _x64(f, arg)
    for policy in ("strict", "exact"):
        got = np.asarray(no64.jit(f, policy=policy)(arg))
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        assert got.dtype in (np.int32, np.uint32)
    unannotated = lambda m: jnp.sum(m.astype(jnp.int64))  # noqa: E731
    with pytest.raises(no64.NarrowingError, match="unproven"):  # not vacuous
        no64.jit(unannotated, policy="strict")(MASK)


def test_export_carries_the_range_to_the_offline_pass() -> None:
    """Exported without no64 (x64 on), the module holds the identity in the name scope
    no64.assume[0,1]; the offline pass under strict proves the sum, erases the identity,
    and the converted module computes the x64 value."""
    with enable_x64(True):
        exp = export.export(jax.jit(mask_sum))(jax.ShapeDtypeStruct(MASK.shape, np.int32))
        text = exp.mlir_module()
    assert "no64.assume[0,1]" in text and "optimization_barrier" in text
    module = ir.Module.parse(text, make_context())
    report = no64.demote(module, policy="strict")
    assert not [n for n in report.narrowings if n.verdict in ("unproven", "overflow")]
    converted = module.operation.get_asm()
    assert "optimization_barrier" not in converted
    out = compile_module(module, strict=True)([MASK])
    assert int(out[0]) == int(_x64(mask_sum, MASK)) == int(MASK.sum())
    # without the annotation, strict refuses the same program
    with enable_x64(True):
        plain = export.export(jax.jit(lambda m: jnp.sum(m.astype(jnp.int64))))(
            jax.ShapeDtypeStruct(MASK.shape, np.int32)).mlir_module()
    with pytest.raises(no64.NarrowingError, match="unproven"):
        no64.demote(ir.Module.parse(plain, make_context()), policy="strict")


def test_inert_without_no64_and_under_transformations() -> None:
    """Without no64 the program computes what it computes without the call; vmap and
    grad pass through the identity."""
    with enable_x64(True):
        np.testing.assert_array_equal(np.asarray(jax.jit(token_offsets)(TOKENS)),
                                      np.asarray(jax.jit(lambda t: t.astype(jnp.int64) * 2**20
                                                         + jnp.arange(t.shape[-1]))(TOKENS)))
        batched = jax.vmap(lambda m: jnp.sum(no64.assume(m, 0, 1)))(MASK)
        np.testing.assert_array_equal(np.asarray(batched), MASK.sum(axis=1))
        g = jax.grad(lambda x, m: jnp.sum(x * no64.assume(m, 0, 1)))(jnp.ones(MASK.shape), MASK)
        np.testing.assert_array_equal(np.asarray(g), MASK.astype(np.float64))


def test_concrete_data_outside_the_range_is_refused_at_the_line() -> None:
    with pytest.raises(no64.HostRangeError, match=r"holds 3 at index \(3,\), outside the range \[0, 2\]") as err:
        no64.assume(jnp.arange(5), 0, 2)  # ASSUME LINE
    assert err.value.source.file == __file__
    assert np.asarray(no64.assume(np.arange(3), 0, 2)).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="integer array"):
        no64.assume(jnp.ones(3), 0, 1)
    with pytest.raises(ValueError, match="lo"):
        no64.assume(jnp.arange(3), 2, 1)
