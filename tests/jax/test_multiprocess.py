"""Sharded programs under no64: 8 CPU devices in this process, and two processes.

* A ``NamedSharding`` jit and a ``shard_map`` over the 8 CPU devices of the
  test process (``conftest.py``), through :func:`no64.install` and through
  :func:`no64.jit`: the backend gets 64-bit-free modules with their Shardy
  annotations, and the results equal the unconverted program's.
* Two processes joined by ``jax.distributed.initialize`` on loopback, 4 CPU
  devices each, run a sharded training step with ``NO64_PLATFORMS=cpu``.  A
  test-only hook in each worker dumps every module the backend receives;
  both processes must compile byte-identical, 64-bit-free modules, and the
  results must equal the same step run with mode ``"off"`` (no rewriting).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

import no64
import no64.io
from support import backend_module_text, enable_x64, with_support

# no64 turning x64 off (the subject of some tests) and JAX truncating explicit
# 64-bit dtype requests under x64 off are expected here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.jax.hook.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

# --------------------------------------------------------------------------
# 8 devices, one process
# --------------------------------------------------------------------------


class Intercept:
    """Every module the XLA client compiles in this process, as text (test-only)."""

    def __enter__(self) -> "Intercept":
        from jaxlib import _jax

        self.modules: list[str] = []
        self._original = original = _jax.Client.compile_and_load

        def compile_and_load(client: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
            self.modules.append(backend_module_text(computation))
            return original(client, computation, *args, **kwargs)

        _jax.Client.compile_and_load = compile_and_load
        return self

    def __exit__(self, *exc: Any) -> None:
        from jaxlib import _jax

        _jax.Client.compile_and_load = self._original

    def findings(self) -> list[Any]:
        return [f for t in self.modules for f in no64.find_64bit(no64.io.load(t.encode(), format="mlir"))]


def _close_to_x64(got: Any, ref: Any) -> None:
    """``got`` (no64's 32-bit result) is the x64 program's ``ref``: integers bit for bit,
    floats within float32's rounding of the x64 value (a few ulps, f32 arithmetic)."""
    a, b = np.asarray(got), np.asarray(ref)
    assert a.dtype == {np.dtype(np.float64): np.dtype(np.float32),
                       np.dtype(np.int64): np.dtype(np.int32)}.get(b.dtype, b.dtype), (a.dtype, b.dtype)
    if np.issubdtype(b.dtype, np.floating):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(a, b)


def _mesh(cpu_devices: list[Any]) -> jax.sharding.Mesh:
    return jax.sharding.Mesh(np.array(cpu_devices[:8]).reshape(4, 2), ("data", "model"))


def sharded_step(w: jax.Array, x: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A dropout layer and an SGD step; threefry's counters are ui64 even with x64 off."""

    def loss(w):
        h = jnp.tanh(x @ w)
        keep = jax.random.bernoulli(key, 0.75, h.shape)
        return jnp.mean(jnp.where(keep, h / 0.75, 0.0) ** 2)

    value, grad = jax.value_and_grad(loss)(w)
    return w - 0.1 * grad, value


def test_named_sharding_jit_on_8_devices(cpu_devices: list[Any], restore_global: None) -> None:
    mesh = _mesh(cpu_devices)
    w_s, x_s = NamedSharding(mesh, P(None, "model")), NamedSharding(mesh, P("data", None))
    w = jax.device_put(np.linspace(-1, 1, 8 * 6, dtype=np.float32).reshape(8, 6), w_s)
    x = jax.device_put(np.linspace(0, 2, 16 * 8, dtype=np.float32).reshape(16, 8), x_s)
    key = jax.random.key(3)
    kwargs = dict(in_shardings=(w_s, x_s, None), out_shardings=(w_s, NamedSharding(mesh, P())))
    with enable_x64(False):
        lowered_text = jax.jit(sharded_step, **kwargs).lower(w, x, key).as_text()
    assert "ui64" in lowered_text and "sdy.sharding" in lowered_text
    # the program asks for x64 (the test process runs with it on): what no64 runs is its
    # x64 program, checked against that program run on the CPU without no64
    with enable_x64(True):
        ref = jax.jit(sharded_step, **kwargs)(w, x, key)

    no64.install("cpu")
    with Intercept() as seen:
        got = jax.jit(sharded_step, **kwargs)(w, x, key)
    assert seen.modules and not seen.findings()
    main = seen.modules[-1]
    assert "sdy.mesh" in main and "sdy.sharding" in main, "Shardy annotations lost"
    for a, b in zip(got, ref):
        _close_to_x64(a, b)
    assert got[0].sharding.is_equivalent_to(w_s, 2)

    # The same through no64.jit, with the global configuration off.
    no64.uninstall()
    jax.config.update("jax_enable_x64", True)
    with Intercept() as seen:
        scoped = no64.jit(sharded_step, **kwargs)(w, x, key)
    assert seen.modules and not seen.findings()
    for a, b in zip(scoped, ref):
        _close_to_x64(a, b)
    text = no64.jit(sharded_step, **kwargs).lower(w, x, key).as_text()
    assert "sdy.sharding" in text and "ui64" not in text


def test_shard_map_on_8_devices(cpu_devices: list[Any]) -> None:
    mesh = _mesh(cpu_devices)

    def per_shard(x, key):
        noise = jax.random.uniform(jax.random.fold_in(key, jax.lax.axis_index("data")), x.shape)
        local = jnp.sum(x * noise, axis=0, keepdims=True)
        return jax.lax.psum(local, "data"), jnp.argmax(x, axis=1).astype(jnp.int32)[:, None]

    f = jax.shard_map(per_shard, mesh=mesh, in_specs=(P("data", "model"), P()),
                      out_specs=(P(None, "model"), P("data", "model")))
    x = np.arange(16 * 4, dtype=np.float32).reshape(16, 4) % 7
    key = jax.random.key(9)
    with enable_x64(True):
        ref = jax.jit(f)(x, key)
    with Intercept() as seen:
        got = no64.jit(f)(x, key)
    assert seen.modules and not seen.findings()
    assert any("sdy.manual_computation" in t for t in seen.modules)
    for a, b in zip(got, ref):
        _close_to_x64(a, b)
    lowered = no64.jit(f).lower(x, key)
    assert lowered.report.changed and "sdy.manual_computation" in lowered.as_text()


# --------------------------------------------------------------------------
# Two processes
# --------------------------------------------------------------------------

WORKER = '''
import json, os, sys
pid, port, outdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(coordinator_address="127.0.0.1:" + port, num_processes=2,
                           process_id=pid, initialization_timeout=60)

# Test-only hook: dump every module the backend receives, in order.
from jaxlib import _jax
from support import backend_module_text
phase, count = ["fix"], [0]
original = _jax.Client.compile_and_load
def dump(self, module, *args, **kwargs):
    count[0] += 1
    with open(os.path.join(outdir, "p%d_%s_%02d.mlir" % (pid, phase[0], count[0])), "w") as f:
        f.write(backend_module_text(module, debug_info=True))
    return original(self, module, *args, **kwargs)
_jax.Client.compile_and_load = dump

assert jax.device_count() == 8 and jax.local_device_count() == 4
mesh = jax.make_mesh((8,), ("batch",))
rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch"))


@jax.jit
def init(seed):
    k1, k2 = jax.random.split(jax.random.key(seed))
    return {"w1": jax.random.normal(k1, (6, 16)) * 0.5, "w2": jax.random.normal(k2, (16, 3)) * 0.5}


def loss(p, x, y, key):
    h = jax.nn.relu(x @ p["w1"])
    h = jnp.where(jax.random.bernoulli(key, 0.8, h.shape), h / 0.8, 0.0)
    logp = jax.nn.log_softmax(h @ p["w2"])
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@jax.jit
def step(p, x, y, key):
    value, g = jax.value_and_grad(loss)(p, x, y, key)
    p = jax.tree_util.tree_map(lambda a, b: a - 0.2 * b, p, g)
    correct = jnp.sum(jnp.argmax(jax.nn.relu(x @ p["w1"]) @ p["w2"], -1) == y)
    return p, value, correct


rng = np.random.default_rng(pid)
x = jax.make_array_from_process_local_data(rows, rng.normal(size=(16, 6)).astype(np.float32))
y = jax.make_array_from_process_local_data(rows, rng.integers(0, 3, size=(16,)).astype(np.int32))


def run():
    p = jax.jit(init, out_shardings=rep)(0)
    out = {}
    for i in range(3):
        p, value, correct = step(p, x, y, jax.random.fold_in(jax.random.key(1), i))
        out["loss%d" % i] = value.addressable_data(0).tolist()
        out["correct%d" % i] = int(correct.addressable_data(0))
    for name, a in p.items():
        out[name] = np.asarray(a.addressable_data(0)).tolist()
    return out


results = {"fix": run()}
import no64
no64.install("cpu", mode="off")  # the same step without no64 rewriting
phase[0] = "off"
results["off"] = run()
records = [dict(module=r.module, changed=r.changed, exact=r.exact)
           for r in no64.compile_records() if r.mode == "fix"]
with open(os.path.join(outdir, "p%d.json" % pid), "w") as f:
    json.dump({"results": results, "records": records}, f)
jax.distributed.shutdown()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _module_name(text: str) -> str:
    return re.search(r"module @([\w.]+)", text).group(1)


def _partitions(text: str) -> int:
    m = re.search(r"mhlo.num_partitions = (\d+)", text)
    return int(m.group(1)) if m else 1


def _meshes(text: str) -> list[str]:
    return re.findall(r"sdy.mesh @\w+ = <[^\n]*>", text)


def test_two_processes_compile_identical_modules(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
    env.update(
        NO64_PLATFORMS="cpu",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS="--xla_force_host_platform_device_count=4 --xla_backend_optimization_level=0",
    )
    with_support(env)
    port = str(_free_port())
    logs = [open(tmp_path / f"worker{i}.log", "w") for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), str(i), port, str(tmp_path)],
                              env=env, cwd=tmp_path, stdout=logs[i], stderr=subprocess.STDOUT)
             for i in range(2)]
    deadline = time.monotonic() + 120
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    if any(p.returncode != 0 for p in procs):
        output = "\n".join(f"--- worker {i} (exit {p.returncode}):\n"
                           + (tmp_path / f"worker{i}.log").read_text()[-6000:]
                           for i, p in enumerate(procs))
        pytest.fail(f"a worker failed or timed out:\n{output}")

    dumps = {i: {f.name.split("_", 1)[1]: f.read_text()
                 for f in sorted(tmp_path.glob(f"p{i}_*.mlir"))} for i in range(2)}
    fix = {name: text for name, text in dumps[0].items() if name.startswith("fix_")}
    assert fix and dumps[0] == dumps[1], "the two processes compiled different modules"
    off_by_module = {_module_name(t): t for n, t in dumps[0].items() if n.startswith("off_")}
    for name, text in fix.items():
        findings = no64.find_64bit(no64.io.load(text.encode(), format="mlir"))
        assert not findings, f"{name}: " + "; ".join(map(str, findings[:5]))
        # the same program compiled without no64: partitions, mesh and the
        # presence of sharding annotations are kept by the rewrite
        twin = off_by_module[_module_name(text)]
        assert _partitions(text) == _partitions(twin), name
        assert _meshes(text) == _meshes(twin), name
        assert ("sdy.sharding" in text) == ("sdy.sharding" in twin), name
    sharded = {_module_name(t) for t in fix.values() if _partitions(t) == 8 and "sdy.sharding" in t}
    assert {"jit_init", "jit_step"} <= sharded, sharded
    off = [t for n, t in dumps[0].items() if n.startswith("off_")]
    assert any(no64.find_64bit(no64.io.load(t.encode(), format="mlir")) for t in off)

    reports = [json.loads((tmp_path / f"p{i}.json").read_text()) for i in range(2)]
    assert reports[0]["results"] == reports[1]["results"]
    assert any(r["changed"] for r in reports[0]["records"])
    assert all(r["exact"] for r in reports[0]["records"])
    assert reports[0]["results"]["fix"] == reports[0]["results"]["off"]
