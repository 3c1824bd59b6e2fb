"""``no64 audit`` on small multi-file projects (tests/audit_projects): it
names every cause by the project's lines and agrees with a run under
``NO64_PLATFORMS=cpu``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from no64.jax.audit import AUDIT_JSON_SCHEMA

PROJECTS = Path(__file__).parents[1] / "audit_projects"
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ ")

# Runs a script as `NO64_PLATFORMS=cpu python SCRIPT` does, then writes what
# the hook did (compile records, host records) to the file named by argv[2].
_DIRECT = """
import json, os, runpy, sys
import no64
script, out = sys.argv[1], sys.argv[2]
sys.argv = [script]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    runpy.run_path(script, run_name="__main__")
finally:
    with open(out, "w") as f:
        json.dump({
            "rewritten": sorted({r.module for r in no64.compile_records() if r.report is not None}),
            "host": sorted([e.kind, os.path.basename(e.location.file), e.location.line, e.count]
                           for e in no64.host_records()),
        }, f)
"""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("JAX_ENABLE_X64", "NO64_PLATFORMS", "NO64_MODE", "NO64_INTEGER_POLICY"):
        env.pop(name, None)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return env


def _python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(**env), capture_output=True,
                          text=True, timeout=180)


def _line(project: str, file: str, marker: str) -> int:
    lines = (PROJECTS / project / file).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def _report_lines(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    head = next(i for i, text in enumerate(lines) if text.startswith("no64 audit of "))
    return lines[head:]


def _agree(project: str, script: str, data: dict[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The audit's modules and host narrowings are those of a run under the hook."""
    out = tmp_path / "direct.json"
    direct = _python(["-c", _DIRECT, script, str(out)], PROJECTS / project, NO64_PLATFORMS="cpu")
    hook = json.loads(out.read_text())
    rewritten = sorted({m["name"] for m in data["modules"] if m["status"] == "rewritten"})
    assert rewritten == hook["rewritten"]
    host = sorted([h["kind"], os.path.basename(h["file"]), h["line"], h["count"]] for h in data["host"])
    assert host == hook["host"]
    return direct


def _check_sites(data: dict[str, Any], project: str) -> None:
    """Every cause and value names a file of the project, or says it has none;
    never a line of no64's parsed copy ("-") nor a file of no64."""
    files = {p.name for p in (PROJECTS / project).glob("*.py")}
    for item in data["causes"] + data["groups"]:
        if item["file"] is not None:
            assert item["file"] in files, item
    assert "-:" not in json.dumps(data)


def test_jnp_optax_project(tmp_path: Path) -> None:
    project = "jnp_optax"
    out = tmp_path / "audit.json"
    proc = _python(["-m", "no64", "audit", "--json", "-o", str(out), "train.py"], PROJECTS / project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)
    assert data["view"] == "hook" and data["platforms"] == ["cpu"] and data["mode"] == "fix"
    assert not [m for m in data["modules"] if m["status"] == "refused"]
    _check_sites(data, project)
    messages = [c["message"] for c in data["causes"]]
    kinds = {(c["kind"], c["file"], c["line"]) for c in data["causes"]}

    def line(file: str, marker: str) -> int:
        return _line(project, file, marker)

    # x64 turned on in the settings module, first
    assert data["causes"][0]["kind"] == "x64"
    assert messages[0].startswith(f"x64 turned on at settings.py:{line('settings.py', 'X64 LINE')} "
                                  "(no64 turned it off: ")
    # random draws: threefry shuffle and init, rbg dropout, each by its line
    draws = {(c["file"], c["line"]): c["message"] for c in data["causes"] if c["kind"] == "random"}
    shuffle = draws[("data.py", line("data.py", "SHUFFLE LINE"))]
    assert "(jax.random.permutation): counters rewritten exactly" in shuffle
    assert "(jax.random.normal): counters rewritten exactly" in draws[("model.py", line("model.py", "INIT LINE"))]
    dropout = draws[("model.py", line("model.py", "DROPOUT LINE"))]
    assert "(jax.random.bernoulli): rbg state rewritten exactly" in dropout
    # the host sentinel and the explicit int64 counter
    sentinel = line("metrics.py", "SENTINEL LINE")
    assert ("host", "metrics.py", sentinel) in kinds
    assert f"host sentinel at metrics.py:{sentinel} mapped INT64_MAX \u2192 INT32_MAX" in "\n".join(messages)
    int64 = line("metrics.py", "INT64 LINE")
    assert ("explicit-dtype", "metrics.py", int64) in kinds
    assert f"int64 requested explicitly at metrics.py:{int64} (in sum" in "\n".join(messages)
    # no refusal, no "requested explicitly" for values that do not name int64
    assert not any(c["handling"] in ("refused", "blocked") for c in data["causes"])
    for g in data["groups"]:
        if "requested explicitly" in g["hint"]:
            assert g["file"] == "metrics.py" and g["line"] == int64, g
    direct = _agree(project, "train.py", data, tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert proc.stdout == direct.stdout  # the program computes what it computes under the hook


def test_text_report_and_fail_on() -> None:
    cwd = PROJECTS / "jnp_optax"
    proc = _python(["-m", "no64", "audit", "train.py"], cwd)
    assert proc.returncode == 0, proc.stderr  # the default --fail-on refused: nothing refused
    assert proc.stdout.count("epoch ") == 2  # the program's output, untouched
    report = _report_lines(proc.stderr)
    assert report[0].startswith("no64 audit of train.py as NO64_PLATFORMS=cpu runs it: ")
    assert 3 < len(report) <= 20, report  # fits on a screen
    assert not any(_GLOG.match(text) for text in report)  # no XLA log lines inside the report
    assert report[1].startswith("  x64 turned on at settings.py:")
    assert "X64DisabledWarning" not in proc.stderr  # the report says it instead
    strict = _python(["-m", "no64", "audit", "-v", "--fail-on", "any", "train.py"], cwd)
    assert strict.returncode == 1, strict.stderr  # random counters and host values are 64-bit
    assert strict.stdout == proc.stdout
    verbose = _report_lines(strict.stderr)
    assert "values, per primitive, line and handling:" in verbose and "modules:" in verbose


def test_refused_module_fails_the_run(tmp_path: Path) -> None:
    cwd = PROJECTS / "jnp_optax"
    out = tmp_path / "refused.json"
    proc = _python(["-m", "no64", "audit", "--json", "-o", str(out), "refused.py"], cwd)
    direct = _python(["refused.py"], cwd, NO64_PLATFORMS="cpu")
    assert proc.returncode == direct.returncode == 1  # the program's failure
    assert proc.stdout == direct.stdout == "before\n"
    assert "Boundary64BitError" in proc.stderr and "Boundary64BitError" in direct.stderr
    assert "no64/jax/audit.py" not in proc.stderr  # the traceback of a plain run
    data = json.loads(out.read_text())
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)
    (refused,) = [c for c in data["causes"] if c["kind"] == "refused"]
    line = _line("jnp_optax", "refused.py", "REFUSED LINE")
    assert (refused["file"], refused["line"], refused["handling"]) == ("refused.py", line, "refused")
    assert "way out:" in refused["message"] and "64-bit arrays" in refused["message"]
    assert [m["status"] for m in data["modules"]] == ["refused"]


@pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("flax", "equinox")), reason="needs flax and equinox"
)
def test_flax_equinox_project(tmp_path: Path) -> None:
    project = "flax_eqx"
    out = tmp_path / "audit.json"
    proc = _python(["-m", "no64", "audit", "--json", "-o", str(out), "train.py"], PROJECTS / project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)
    _check_sites(data, project)
    assert data["causes"][0]["message"].startswith(
        f"x64 turned on at config.py:{_line(project, 'config.py', 'X64 LINE')} (no64 turned it off")
    draws = {(c["file"], c["line"]): c for c in data["causes"] if c["kind"] == "random"}
    dense = draws[("models.py", _line(project, "models.py", "nn.Dense(8)"))]
    assert dense["via"].startswith("flax/linen/") and "counters rewritten exactly" in dense["message"]
    dropout = draws[("models.py", _line(project, "models.py", "nn.Dropout"))]
    assert dropout["via"].startswith("flax/linen/stochastic.py")
    assert draws[("models.py", _line(project, "models.py", "NNX INIT LINE"))]["via"].startswith("flax/nnx/")
    assert draws[("models.py", _line(project, "models.py", "EQX INIT LINE"))]["via"].startswith("equinox/")
    assert all(c["handling"] in ("exact", "rewritten") for c in data["causes"])
    direct = _agree(project, "train.py", data, tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert proc.stdout == direct.stdout
