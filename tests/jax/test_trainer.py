"""A multi-file Flax/optax trainer that turns x64 on (tests/jax/trainer: int64 token
ids through Embed and the loss, a 0/1 int64 mask counted, an int64 step counter
carried from step to step), its ranges stated in the program with no64.assume:
under the compile hook it runs under the default, strict and exact policies and
gives the x64 program's integers bit for bit and its losses; without the stated
counter range the default policy says so at the counter's line, strict refuses it
there, and exact checks the counter by value when each step runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent / "trainer"
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
POLICIES = ("default", "strict", "exact")
COUNTER = "counter = no64.assume(counter, 0, 1 << 30) + 1"


def _start(cwd: Path, policy: str | None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
    env.update(XLA_FLAGS=FAST_COMPILE, JAX_PLATFORMS="cpu", PYTHONWARNINGS="default")
    if policy is not None:
        env.update(NO64_PLATFORMS="cpu", NO64_POLICY=policy)
    return subprocess.Popen([sys.executable, "train.py"], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def _no64_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "Warning: no64" in line and "X64DisabledWarning" not in line]


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, str, str]]:
    procs = {tag: _start(PROJECT, None if tag == "ref" else tag) for tag in ("ref", *POLICIES)}
    return {tag: _finish(proc) for tag, proc in procs.items()}


def test_the_trainer_runs_as_the_x64_program_under_every_policy(runs: dict[str, tuple[int, str, str]]) -> None:
    code, out, err = runs["ref"]
    assert code == 0, err[-2000:]
    ref = json.loads(out.strip().splitlines()[-1])
    assert [s["counter"] for s in ref] == [1, 2, 3] and ref[0]["counter_dtype"] == "int64"
    assert all(s["counted"] > 0 and s["id_sum"] > 0 for s in ref)
    for policy in POLICIES:
        code, out, err = runs[policy]
        assert code == 0, (policy, err[-3000:])
        got = json.loads(out.strip().splitlines()[-1])
        for want, step in zip(ref, got, strict=True):
            for key in ("counted", "id_sum", "hits", "counter"):
                assert step[key] == want[key], (policy, key, step, want)
            assert abs(step["loss"] - want["loss"]) <= 1e-5 * abs(want["loss"]), (policy, step, want)
            assert step["counter_dtype"] == "int32"  # what JAX holds under the hook
        assert not _no64_warnings(err), (policy, _no64_warnings(err))


@pytest.mark.parametrize("policy", POLICIES)
def test_without_the_counter_range_the_policy_says_so_at_its_line(policy: str, tmp_path: Path) -> None:
    for f in PROJECT.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    train = tmp_path / "train.py"
    text = train.read_text()
    assert COUNTER in text
    train.write_text(text.replace(COUNTER, "counter = counter + 1"))
    line = next(i for i, t in enumerate(train.read_text().splitlines(), 1) if "counter = counter + 1" in t)
    code, out, err = _finish(_start(tmp_path, policy))
    where = f"train.py:{line}"
    if policy == "default":
        assert code == 0, err[-2000:]
        assert any("UnprovenIntegerWarning" in w and where in w for w in _no64_warnings(err)), err[-3000:]
    elif policy == "strict":
        assert code != 0
        last = [t for t in err.splitlines() if t.startswith("no64.errors.")][-1]
        assert last.startswith("no64.errors.NarrowingError"), last
        assert where in last and "no64.assume" in err, err[-3000:]
    else:
        # exact computes the counter on words and checks it by value when each step
        # runs: it fits, so the steps run as the x64 program's
        assert code == 0, err[-3000:]
        got = json.loads(out.strip().splitlines()[-1])
        assert [s["counter"] for s in got] == [1, 2, 3], got
