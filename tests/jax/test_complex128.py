"""complex128 constants under the default policy, against the x64 program.

A jitted function closing over complex128 constants -- an array of distinct
elements, a splat, a scalar -- beside float64 values drawn from random bits
(whose rewrite rules leave the module unverified while the constants are
narrowed: their elements are read from their printed form then), run by
``no64.jit`` and by the compile hook with x64 on, gives the x64 program's
complex results within complex64's precision.  (Float pairs do not compute
complex128: they refuse it with its line, ``tests/e2e/test_pair_programs.py``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import no64
from support import enable_x64

pytestmark = pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning")

PROGRAM = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp

    ARRAY = np.array([1.5 - 2j, 3 + 0.25j, -1e-3 + 7j, 1e12 - 1e-30j])
    SPLAT = np.full(4, 2.5 - 1j)
    SCALAR = np.complex128(0.5 + 2j)

    def program(key, x):
        u = jax.random.uniform(jax.random.wrap_key_data(key), (4,), jnp.float64)
        return x * ARRAY + SPLAT * u + SCALAR, jnp.abs(x * ARRAY) + u, jnp.sum(ARRAY * SCALAR) * x
""")

KEY = np.array([0, 42], np.uint32)
X = np.array([1 + 1j, 2.0, -3j, 1e-6 + 1e6j])


def _program() -> Any:
    namespace: dict[str, Any] = {}
    exec(PROGRAM, namespace)
    return namespace["program"]


def _x64() -> list[np.ndarray]:
    with enable_x64(True):
        return [np.asarray(r) for r in jax.jit(_program())(KEY, X)]


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype.itemsize * 2 == w.dtype.itemsize, (g.dtype, w.dtype)  # complex64, float32
        np.testing.assert_allclose(g, w, rtol=2.0**-21, atol=0)  # a few f32 roundings


def test_no64_jit_narrows_complex128_constants() -> None:
    _close([np.asarray(r) for r in no64.jit(_program())(KEY, X)], _x64())


def test_the_hook_narrows_complex128_constants(tmp_path: Path) -> None:
    script = tmp_path / "c128.py"
    script.write_text(PROGRAM + textwrap.dedent(f"""
        import json
        out = jax.jit(program)(np.array({KEY.tolist()}, np.uint32), np.array({X.tolist()!r}))
        print(json.dumps([[str(np.asarray(r).dtype), np.asarray(r).real.tolist(), np.asarray(r).imag.tolist()]
                          for r in out]))
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "NoX64MeaningWarning" not in proc.stderr, proc.stderr
    got = [(np.array(re) + 1j * np.array(im) if dtype.startswith("complex") else np.array(re)).astype(dtype)
           for dtype, re, im in json.loads(proc.stdout.strip().splitlines()[-1])]
    _close(got, _x64())
