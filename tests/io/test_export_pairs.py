"""A jax.export artifact converted with ``--float-policy pairs`` declares its
float64 inputs and outputs as float32 pairs (shape plus a trailing 2) and
runs with ``jax.export.deserialize(...).call(...)``."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.export  # noqa: F401 - JAX 0.7 loads the submodule only when it is imported
import jax.numpy as jnp
import numpy as np

import no64
import no64.io
from no64 import cli


def stats(x, n):
    return jnp.mean(x * x) - jnp.mean(x) ** 2, jnp.sum(n)


def test_pair_inputs_and_outputs_in_the_artifact(tmp_path: Path) -> None:
    x = 1e4 + np.random.default_rng(0).standard_normal(1000)
    n = np.arange(5, dtype=np.int64)
    exp = jax.export.export(jax.jit(stats), platforms=["cpu"])(
        jax.ShapeDtypeStruct(x.shape, np.float64), jax.ShapeDtypeStruct(n.shape, np.int64))
    src = tmp_path / "stats.jaxexport"
    src.write_bytes(bytes(exp.serialize()))
    dest = tmp_path / "stats32.jaxexport"
    assert cli.main(["convert", str(src), "-o", str(dest), "--float-policy", "pairs"]) == 0
    exp32 = jax.export.deserialize(bytearray(dest.read_bytes()))
    assert [(a.shape, str(a.dtype)) for a in exp32.in_avals] == [((1000, 2), "float32"), ((5,), "int32")]
    assert [(a.shape, str(a.dtype)) for a in exp32.out_avals] == [((2,), "float32"), ((), "int32")]
    var, total = exp32.call(no64.split_pairs(x), n.astype(np.int32))
    ref_var, ref_total = exp.call(x, n)
    assert abs(no64.join_pairs(np.asarray(var)) - float(ref_var)) <= 1e-6 * float(ref_var)
    assert int(total) == int(ref_total)
    assert not no64.find_64bit(no64.io.load(dest.read_bytes()))
