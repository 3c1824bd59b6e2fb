"""Float64 on the ``tpu`` profile under the f32 float policy, and every narrowed
float64 dot.

XLA:TPU keeps float64 itself, so the profile keeps it: the x64 program's float64
computes on the device's own float64 while the caller -- ``no64.jit`` or the compile
hook behind the signature JAX lowered with x64 off -- hands float32 buffers and
takes float32 back.  The kept float64 arguments enter as float32 and are widened
inside (exact), the results are rounded once on the way out.  The CPU stands in for
the TPU (it has float64 too); checked against the x64 program on the CPU: the
variance of values near 1e4, which f32 arithmetic gets wrong by 900 %, is right to
f32's rounding of the inputs.

A float64 dot narrowed to f32 (the f32 policy on a device without float64) asks for
``HIGHEST`` precision: f32 products, where ``DEFAULT`` is one bfloat16 pass on a
TPU and TF32 on a recent GPU (a 512 x 512 matmul then off by 2.6e-3 on a TPU v5e).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from support import enable_x64, ir, make_context

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore::no64.FloatPrecisionWarning"),
]

RNG = np.random.default_rng(7)
X = 1e4 + RNG.standard_normal(4096)
Z = (RNG.standard_normal(64) + 1j * RNG.standard_normal(64)) * 1e3 + 5e4


def variance(x: jax.Array) -> jax.Array:
    return jnp.mean(x * x) - jnp.mean(x) ** 2


def complex_spread(z: jax.Array) -> jax.Array:
    return jnp.mean(z * z) - jnp.mean(z) ** 2


def _x64(f: Any, *args: Any) -> np.ndarray:
    """``f`` on the x64 program, the CPU, without no64, on the inputs as f32 holds them."""
    with enable_x64(True):
        return np.asarray(jax.jit(f)(*[a.astype(np.complex64 if np.iscomplexobj(a) else np.float32)
                                       .astype(a.dtype) for a in args]))


@pytest.mark.parametrize("kw", [{}, {"restore_dtypes": True}, {"policy": "exact", "restore_dtypes": True}],
                         ids=["default", "restore", "exact"])
@pytest.mark.parametrize("f,arg", [(variance, X), (complex_spread, Z)], ids=["variance", "complex"])
def test_float64_kept_crosses_the_jit_boundary_as_f32(f: Any, arg: np.ndarray, kw: dict[str, Any]) -> None:
    want = _x64(f, arg)
    got = no64.jit(f, target="tpu", **kw)(arg)
    assert np.asarray(got).dtype == (want.dtype if kw else np.dtype(np.complex64 if np.iscomplexobj(arg)
                                                                     else np.float32))
    # the device's float64 in between: f32's rounding of the result, not f32 arithmetic
    # (in f32 the variance is off by about 9, i.e. 900 %)
    np.testing.assert_allclose(got, want, rtol=2.0**-22)
    with enable_x64(True):
        f32_body = np.asarray(jax.jit(f)(arg.astype(np.complex64 if np.iscomplexobj(arg) else np.float32)))
    assert abs(complex(f32_body) - complex(want)) > 1e3 * abs(complex(got) - complex(want))


def test_float64_kept_under_the_hook(x64_requested: None) -> None:
    want = _x64(variance, X)
    no64.install("cpu", target="tpu")
    jax.clear_caches()
    got = jax.jit(variance)(X)
    assert np.asarray(got).dtype == np.float32     # the 32-bit signature JAX lowered
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2.0**-22)


def _module(f: Any, *args: Any) -> ir.Module:
    with enable_x64(True):
        text = jax.jit(f).lower(*args).as_text()
    return ir.Module.parse(text, make_context())


def _precisions(m: ir.Module, op: str) -> list[tuple[str, str]]:
    return re.findall(rf"stablehlo\.{op}[ (].*?precision(?:_config)? = \[(?:#stablehlo<precision )?(\w+)>?, "
                      rf"(?:#stablehlo<precision )?(\w+)>?\]", str(m))


def test_a_narrowed_float64_dot_asks_for_f32_products() -> None:
    a = RNG.standard_normal((8, 8))
    img, ker = RNG.standard_normal((1, 1, 8, 8)), RNG.standard_normal((1, 1, 3, 3))
    m = _module(lambda a, b, img, ker: (a @ b, jax.lax.conv(img, ker, (1, 1), "SAME")), a, a, img, ker)
    assert _precisions(m, "dot_general") == _precisions(m, "convolution") == [("DEFAULT", "DEFAULT")]
    report = no64.demote(m)
    assert report.retyped_by_type == {"f64": report.values_retyped}
    assert _precisions(m, "dot_general") == [("HIGHEST", "HIGHEST")]
    assert _precisions(m, "convolution") == [("HIGHEST", "HIGHEST")]


def test_other_dots_keep_their_precision() -> None:
    """An integer dot narrowed to 32 bits, the program's own f32 dot, and a
    float64 dot kept (``tpu``) or carried on pairs keep what the program said."""
    i = np.arange(16, dtype=np.int64).reshape(4, 4)
    f = np.ones((4, 4), np.float32)
    d = np.ones((4, 4))
    m = _module(lambda i, f: (i @ i, f @ f), i, f)
    no64.demote(m)
    assert _precisions(m, "dot_general") == [("DEFAULT", "DEFAULT")] * 2
    for kw in ({"target": "tpu"}, {"float_policy": "pairs"}):
        m = _module(lambda d: d @ d, d)
        no64.demote(m, **kw)
        assert ("HIGHEST", "HIGHEST") not in _precisions(m, "dot_general"), kw


def test_the_exact_path_converts_for_the_devices_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """``no64.jit(policy="exact")`` without a target converts for the profile
    of the platform it compiles for, as the hook does: on a TPU (the CPU's
    platform given the ``tpu`` profile here) its float64 is XLA:TPU's own,
    its int64 too, and both cross the call as the hook's do."""
    import no64.jax.hook.prepare as prepare

    monkeypatch.setattr(prepare, "target_for_platform", lambda platform: no64.targets.target("tpu"))
    i = np.array([2**40 + 1, -(2**62), np.iinfo(np.int64).min, 7], np.int64)
    f = no64.jit(lambda x, i: (variance(x), i * 3 + 1), policy="exact", restore_dtypes=True)
    got_v, got_i = f(X, i)
    with enable_x64(True):
        want_i = np.asarray(jax.jit(lambda i: i * 3 + 1)(i))
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_allclose(got_v, _x64(variance, X), rtol=2.0**-22)
    report = f.lower(X, i).report
    assert report.target == "tpu" and "f64" in report.kept_native
