"""XLA's CPU compiler made without LLVM's loop hash recognition, whose time
is exponential in the size of the loop bodies float pairs make
(``no64.jax._compat.guard_cpu_compiler``, called by no64's JAX plugin as
JAX makes its backends where no64 is imported): the option is set where the
binding's LLVM has it -- through ``XLA_FLAGS`` only while JAX makes its CPU
backend, restored after -- and never where it does not (LLVM would end the
process); a user's LLVM flags are kept; where JAX started its backends
before no64, compiling pairs on the CPU says how to avoid a long compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import jax
import numpy as np
import pytest

import no64
from no64.jax import pair_probe
from support import jax_compat as seam, with_support

_CHILD = """
import json, os, sys
before = os.environ.get("XLA_FLAGS")
import no64  # only the package: its JAX plugin guards the compiler as JAX makes its backends
import jax
x = jax.jit(lambda v: v * 2.0 + 1.0)(3.0)  # JAX makes its backends here
from support import jax_compat as seam
print(json.dumps({"guard": seam.cpu_compiler._guard[0],
                  "has": seam.cpu_compiler._binding_has(seam.HASH_RECOGNIZE_OFF),
                  "before": before, "after": os.environ.get("XLA_FLAGS"), "x": float(x)}))
"""


def _child(flags: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if flags is not None:
        env["XLA_FLAGS"] = flags
    run = subprocess.run([sys.executable, "-c", _CHILD], env=with_support(env), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_option_is_set_while_the_cpu_backend_is_made_and_only_where_llvm_has_it() -> None:
    got = _child(None)
    assert got["x"] == 7.0  # the process lives: no option LLVM does not know reached it
    assert got["guard"] == ("applied" if got["has"] else "absent")
    assert got["after"] is None  # restored: a process started later does not inherit it


def test_a_users_flags_are_kept() -> None:
    flags = "--xla_cpu_enable_fast_math=false"
    got = _child(flags)
    assert got["after"] == flags and got["guard"] in ("applied", "absent")
    if got["has"]:  # LLVM options of the user's own: left as they are
        own = f"--xla_backend_extra_options={seam.HASH_RECOGNIZE_OFF}"
        got = _child(own)
        assert got["guard"] == "user" and got["after"] == own


def test_pairs_compiled_after_the_backends_started_say_how_to_avoid_a_long_compile(monkeypatch) -> None:
    """Where JAX made its CPU backend before no64 could wrap it, the first
    compile of float pairs on the CPU warns where the binding's LLVM has the
    pass, and not where it has none."""
    jax.devices()  # started before
    monkeypatch.setattr(seam.cpu_compiler, "_guard", ["late"])
    monkeypatch.setattr(pair_probe, "_results", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = no64.jit(lambda v: v * 3.0, float_policy="pairs", restore_dtypes=True)
        np.testing.assert_array_equal(np.asarray(f(np.arange(4.0))), np.arange(4.0) * 3.0)
    said = [str(w.message) for w in caught if "loop hash recognition" in str(w.message)]
    if seam.cpu_compiler._binding_has(seam.HASH_RECOGNIZE_OFF):
        assert len(said) == 1 and seam.HASH_RECOGNIZE_OFF in said[0]
    else:
        assert not said


@pytest.mark.parametrize("state", ["applied", "absent", "user", "installed"])
def test_no_warning_where_no64_came_in_time(state: str, monkeypatch) -> None:
    monkeypatch.setattr(seam.cpu_compiler, "_guard", [state])
    assert seam.late_cpu_guard_warning() is None
