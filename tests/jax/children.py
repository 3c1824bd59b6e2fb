"""The hook's tests run a script in child processes, one per setting of
no64's environment (the reference without no64 among them), at once, and
read what each printed last as JSON (:mod:`child_report`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

#: XLA's cheapest compile: the children compile many small programs
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"

#: The compile hook on the CPU, under the default policies.
_HOOK = {"NO64_PLATFORMS": "cpu"}
#: The settings a script runs under, by tag: the x64 program without no64
#: (the reference), JAX's own 32-bit program, and the compile hook under
#: each policy ("default" and "f32" are the same run, named for what a test
#: looks at: the policies, or the float policy).
SETTINGS: dict[str, dict[str, str]] = {
    "ref": {},
    "jax32": {"JAX_ENABLE_X64": "0"},
    "default": _HOOK,
    "f32": _HOOK,
    "pairs": {**_HOOK, "NO64_FLOAT_POLICY": "pairs"},
    "strict": {**_HOOK, "NO64_POLICY": "strict"},
    "exact": {**_HOOK, "NO64_POLICY": "exact"},
    "exact_pairs": {**_HOOK, "NO64_POLICY": "exact", "NO64_FLOAT_POLICY": "pairs"},
}


def run_children(script: Path, settings: dict[str, dict[str, str]], *, x64: bool = True) -> dict[str, Any]:
    """``script`` run once per setting (``tag -> environment added``), on the
    CPU, with none of the caller's ``NO64_`` variables and, where ``x64``,
    ``JAX_ENABLE_X64=1``; each run's last line of output, by tag."""
    procs = {}
    for tag, extra in settings.items():
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
        env.update(XLA_FLAGS=FAST_COMPILE, JAX_PLATFORMS="cpu")
        if x64:
            env["JAX_ENABLE_X64"] = "1"
        env.update(extra)
        procs[tag] = subprocess.Popen([sys.executable, str(script)], env=env, cwd=script.parent,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for tag, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, (tag, stderr[-3000:])
        out[tag] = json.loads(stdout.strip().splitlines()[-1])
    return out


def marked_line(script: Path, tag: str) -> int:
    """The line of ``script`` that ends with ``# LINE tag``."""
    return next(i for i, t in enumerate(script.read_text().splitlines(), 1) if t.endswith(f"# LINE {tag}"))


def runs_fixture(script: Path, tags: Sequence[str], *, x64: bool = True) -> Any:
    """A module-scoped fixture: ``script`` run once under each setting of
    :data:`SETTINGS` named in ``tags`` (:func:`run_children`), what each run
    printed by tag."""

    @pytest.fixture(scope="module")
    def runs() -> dict[str, Any]:
        return run_children(script, {tag: SETTINGS[tag] for tag in tags}, x64=x64)

    return runs
