"""The x64 programs XLA:TPU refuses, run through the compile hook on the device JAX sees.

An int64 matmul, a float64 solve/inv/det, a complex128 FFT and float64 ``nextafter``:
XLA:TPU refuses each (an s64 dot, its f64 LU, a c128 FFT, an f64 <-> s64 bitcast), and
the ``tpu`` profile converts what it refuses.  Each program is run through the hook as
the environment installs it -- on a TPU ``NO64_PLATFORMS=tpu`` (the platform's profile,
``tpu``), on a machine without one ``NO64_PLATFORMS=cpu`` with ``NO64_TARGET=tpu`` (the
same conversions, computed by the CPU) -- and compared with the same x64 program run by
JAX on the CPU without no64: integers bit for bit; floats within the rounding to the
32-bit arrays the hook returns (one f32 ulp of the largest element: the device's own
float64 error is far below it).  The module the device compiled must hold none of the
forms the profile refuses.

The inputs are 32-bit values (what a program traced with x64 off takes from the host),
widened inside the programs; every integer output fits 32 bits.  Run alone
(``python tests/device/test_tpu_profile.py``), it prints one line per program.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

f64, i64 = jnp.float64, jnp.int64


def int64_matmul(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    c = a.astype(i64) @ b.astype(i64)
    return c % 1000003, c >> 40


def float64_linalg(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    m = a.astype(f64) + 8 * jnp.eye(a.shape[0], dtype=f64)
    return jnp.linalg.solve(m, b.astype(f64)), jnp.linalg.inv(m), jnp.linalg.det(m)


def complex128_fft(re: jax.Array, im: jax.Array) -> tuple[jax.Array, ...]:
    z = lax.complex(re.astype(f64), im.astype(f64))
    return (jnp.fft.fft(z),)


def float64_nextafter(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
    x, y = x.astype(f64), y.astype(f64)
    bits = lax.bitcast_convert_type(jnp.nextafter(x, y), i64)
    step = bits - lax.bitcast_convert_type(x, i64)
    return step.astype(jnp.int32), (bits >> 32).astype(jnp.int32), bits & 0xFFFF


def _inputs(name: str) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(7)
    i32 = np.iinfo(np.int32)
    if name == "int64_matmul":
        a = rng.integers(i32.min, i32.max, size=(8, 96), dtype=np.int64, endpoint=True).astype(np.int32)
        b = rng.integers(i32.min, i32.max, size=(96, 5), dtype=np.int64, endpoint=True).astype(np.int32)
        a[0, :], b[:, 0] = i32.min, i32.max
        return a, b
    if name == "float64_linalg":
        return rng.normal(size=(6, 6)).astype(np.float32), rng.normal(size=6).astype(np.float32)
    if name == "complex128_fft":
        return rng.normal(size=(3, 96)).astype(np.float32), rng.normal(size=(3, 96)).astype(np.float32)
    # normal f32 values, far from f32's (and XLA:TPU's float64's) range ends
    x = (rng.normal(size=64) * 10.0 ** rng.integers(-20, 20, 64)).astype(np.float32)
    y = np.concatenate([x[1:], x[:1]])
    y[:8] = x[:8]
    y[8:16] = -x[8:16]
    return x, y


PROGRAMS: dict[str, Callable[..., tuple[jax.Array, ...]]] = {
    "int64_matmul": int64_matmul, "float64_linalg": float64_linalg, "complex128_fft": complex128_fft,
    "float64_nextafter": float64_nextafter}


def environment() -> dict[str, str]:
    """The hook's environment for the device JAX sees."""
    if jax.default_backend() == "tpu":
        return {"NO64_PLATFORMS": "tpu"}
    return {"NO64_PLATFORMS": "cpu", "NO64_TARGET": "tpu"}


def reference(name: str) -> list[np.ndarray]:
    """The x64 program's results on the CPU, without no64."""
    from no64.jax.hook import active_config

    assert active_config() is None and jax.config.jax_enable_x64
    with jax.default_device(jax.devices("cpu")[0]):
        return [np.asarray(x) for x in jax.jit(PROGRAMS[name])(*_inputs(name))]


def under_hook(name: str) -> tuple[list[np.ndarray], list[str]]:
    """The program's results through the hook (installed by the caller), and the
    modules the device compiled for it."""
    from support import Intercept

    jax.clear_caches()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Explicitly requested dtype", UserWarning)
        with Intercept() as seen:
            got = [np.asarray(x) for x in jax.jit(PROGRAMS[name])(*_inputs(name))]
    return got, seen.modules


def compare(name: str, got: list[np.ndarray], want: list[np.ndarray]) -> list[str]:
    """What differs beyond the stated bound (empty: the program matches)."""
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            bad.append(f"{name} #{i}: shape {g.shape}, x64 {w.shape}")
        elif np.issubdtype(w.dtype, np.integer):
            if not np.array_equal(g.astype(w.dtype), w):
                bad.append(f"{name} #{i}: {int(np.sum(g.astype(w.dtype) != w))} integers differ")
        else:
            err = float(np.max(np.abs(g.astype(w.dtype) - w)))
            bound = 2.0**-23 * float(np.max(np.abs(w)))
            if not err <= bound:
                bad.append(f"{name} #{i}: error {err:.3g} > {bound:.3g}")
    return bad


def refused_forms(modules: list[str]) -> list[str]:
    """The ops the tpu profile refuses in the modules the device compiled."""
    from no64.targets import target
    from no64.targets.legality import check_target
    from support import ir, make_context

    found = []
    for text in modules:
        m = ir.Module.parse(text, make_context())
        found += [str(f) for f in check_target(m, target("tpu"), types=False)]
    return found


@pytest.fixture
def hook_from_environment(restore_global: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The hook as the environment installs it, the program asking for x64."""
    import no64
    from no64.jax import hook

    no64.uninstall()
    env = environment()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("NO64_POLICY", raising=False)
    monkeypatch.setattr(hook.STATE, "explicit", False)
    jax.config.update("jax_enable_x64", True)
    yield env


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning")
def test_a_program_xla_tpu_refuses_runs_and_matches(name: str, hook_from_environment: dict[str, str]) -> None:
    from no64.jax import hook

    want = reference(name)
    config = hook.initialize_from_environment(strict=True)
    assert config is not None and hook.device_profile(config, jax.default_backend()).name == "tpu"
    got, modules = under_hook(name)
    assert modules, "no module compiled"
    assert refused_forms(modules) == []
    assert compare(name, got, want) == []


def main() -> int:
    """Each program through the hook, from the environment :func:`environment` sets."""
    from no64.jax import hook

    os.environ.update(environment())
    wants = {}
    jax.config.update("jax_enable_x64", True)
    for name in PROGRAMS:
        wants[name] = reference(name)
    hook.initialize_from_environment(strict=True)
    failed = 0
    for name in PROGRAMS:
        got, modules = under_hook(name)
        bad = refused_forms(modules) + compare(name, got, wants[name])
        failed += bool(bad)
        print(f"{name}: {jax.default_backend()} {'; '.join(bad) or 'matches the x64 program'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
