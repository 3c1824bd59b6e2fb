"""The one list of what no64 replaces in JAX (:mod:`no64.jax.interception`)
against what the seam's journal says was replaced, and ``uninstall()``
against JAX's own objects: the list names every change no64 makes (by its
point and what it replaces), every point of the groups a run installs is in
place, and uninstalling puts back the very objects JAX had (the next
activation installs everything again, and narrows as before).  The run is a
child process: uninstalling JAX's wrappers in the test process would take
no64 away from the tests after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from no64.jax import interception
from support import jax_compat, with_support

_CHILD = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
import jax.random

# JAX's own objects, before no64 is active (its seam is loaded: the CPU
# compiler's guard is in place from its import)
import no64
from no64.jax import interception
from no64.jax.audit import measure
from support import jax_compat

PUBLIC = {"jnp.array": (jnp, "array"), "jnp.arange": (jnp, "arange"), "jnp.zeros": (jnp, "zeros"),
          "jax.random.normal": (jax.random, "normal")}
before = {k: getattr(o, a) for k, (o, a) in PUBLIC.items()}


def functions():
    # every function of JAX's modules and of the classes they define, by dotted name
    out = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "jax" or name.startswith("jax.")):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and not isinstance(value, type):
                out[f"{name}.{attr}"] = value
            elif isinstance(value, type) and value.__module__ == name:
                for a, v in list(vars(value).items()):
                    if callable(v):
                        out[f"{name}.{value.__qualname__}.{a}"] = v
    return out


def changed(since):
    now = functions()
    return sorted(k for k, v in since.items() if now.get(k) is not v)


jax_own = functions()

def wide_sum():
    return int(jax.jit(lambda v: v.sum())(np.arange(4, dtype=np.int64)))

no64.install(platforms=["cpu"])
first = wide_sum()
measure.install()
measure.uninstall()

out = {"first": first, "groups": sorted(interception.installed()), "unlisted": interception.unlisted()}
changes = jax_compat.changes()
targets = {c.target for c in changes}
out["changed_off_journal"] = [k for k in changed(jax_own) if k not in targets]
out["changed"] = len(changed(jax_own))
out["points"] = sorted({p.name for c in changes if (p := interception.point_of(c)) is not None})
out["noted"] = sorted({c.point for c in changes if c.point is not None})
out["replaced"] = sorted(k for k, (o, a) in PUBLIC.items() if getattr(o, a) is not before[k])
# the object JAX had at each place before no64's first change there
firsts = {}
for c in changes:
    if c.kind in ("attribute", "item"):
        firsts.setdefault((id(c.owner), repr(c.key)), c)
out["in_place"] = sum(1 for c in changes if c.kind != "permanent")
out["permanent"] = sorted(c.target for c in changes if c.kind == "permanent")

no64.uninstall()
undone = interception.uninstall()
out["undone"] = len(undone)
out["not_restored"] = sorted(c.target for c in firsts.values() if c.current() is not c.original)
out["public_restored"] = sorted(k for k, (o, a) in PUBLIC.items() if getattr(o, a) is before[k])
out["changed_after"] = changed(jax_own)
out["left"] = sorted(c.target for c in jax_compat.changes() if c.kind != "permanent")
out["groups_after"] = sorted(interception.installed())

no64.install(platforms=["cpu"])  # installs everything again
out["again"] = wide_sum()
out["replaced_again"] = sorted(k for k, (o, a) in PUBLIC.items() if getattr(o, a) is not before[k])
out["unlisted_again"] = interception.unlisted()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def child() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    run = subprocess.run([sys.executable, "-c", _CHILD], env=with_support(env), capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_every_change_no64_makes_in_jax_is_on_the_list(child: dict) -> None:
    assert child["unlisted"] == [] and child["unlisted_again"] == []
    # and in the journal: every function of JAX's that is not JAX's own any more
    assert child["changed"] > 30 and child["changed_off_journal"] == []


def test_every_point_of_what_a_run_installs_is_in_place(child: dict) -> None:
    assert child["groups"] == ["hook", "host", "intent", "measure"]
    wanted = {p.name for p in interception.POINTS
              if p.group in ("seam", "host", "intent", "hook", "measure") and not p.optional}
    assert wanted <= set(child["points"]), sorted(wanted - set(child["points"]))
    assert child["replaced"] == ["jax.random.normal", "jnp.arange", "jnp.array", "jnp.zeros"]


def test_the_hook_installs_its_points_through_the_list(child: dict) -> None:
    # each change of the hook's is noted under its point, as the installers' are
    hook = {p.name for p in interception.POINTS if p.group == "hook" and not p.optional}
    assert hook == {"x64-update-hook", "compile"} and hook <= set(child["noted"])


def test_uninstall_puts_back_jaxs_own_objects(child: dict) -> None:
    assert child["undone"] >= child["in_place"] > 30
    assert child["not_restored"] == [] and child["left"] == []
    assert child["changed_after"] == []  # every function of JAX's modules is JAX's own again
    assert child["public_restored"] == ["jax.random.normal", "jnp.arange", "jnp.array", "jnp.zeros"]
    assert child["groups_after"] == []
    # only what the list says stays: jaxlib's C++ registry of handlers (from
    # 0.10.2), the trace context's code (0.7)
    staying = {"jax._src.dtypes.canonicalize_value_handlers[": "canonicalize-handlers",
               "jax._src.config.trace_context.__code__": "trace-context"}
    for target in child["permanent"]:
        name = next((n for prefix, n in staying.items() if target.startswith(prefix)), None)
        assert name is not None, target
        assert "stay" in next(p for p in interception.POINTS if p.name == name).removed_by


def test_the_next_activation_installs_everything_again(child: dict) -> None:
    assert child["first"] == child["again"] == 6  # computed as the x64 program does
    assert child["replaced_again"] == ["jax.random.normal", "jnp.arange", "jnp.array", "jnp.zeros"]


def test_the_list_names_each_point_once_and_each_group() -> None:
    names = [p.name for p in interception.POINTS]
    assert len(names) == len(set(names))
    assert {p.group for p in interception.POINTS} == set(interception.GROUPS)


def test_a_group_installs_only_with_an_installer_for_each_of_its_points() -> None:
    host = [p.name for p in interception.POINTS if p.group == "host"]
    with pytest.raises(ValueError, match="its points are"):
        interception.install("host", {name: (lambda: None) for name in host[1:]})
    with pytest.raises(ValueError):  # the audit installs its own
        interception.install("audit", {p.name: (lambda: None) for p in interception.POINTS if p.group == "audit"})


def test_a_change_off_the_list_is_seen_and_one_undone_leaves_the_journal() -> None:
    module = types.ModuleType("not_jax")
    module.f = original = object()
    jax_compat.replace_attribute(module, "f", object())
    try:
        assert "not_jax.f (noted under None)" in interception.unlisted()
    finally:
        jax_compat.replace_attribute(module, "f", original)  # undoes it
    assert module.f is original
    assert not [c for c in jax_compat.changes() if c.target == "not_jax.f"]


def test_the_architecture_page_holds_the_list() -> None:
    page = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    assert interception.points_table() in page
