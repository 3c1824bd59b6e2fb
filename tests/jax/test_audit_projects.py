"""``no64 audit`` on small multi-file projects (tests/audit_projects): it
names every cause by the project's lines and agrees with a run under
``NO64_PLATFORMS=cpu``."""

from __future__ import annotations

import functools
import importlib.metadata
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
from support import with_support

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
    return with_support(env)


def _python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(**env), capture_output=True,
                          text=True, timeout=180)


def _release_neutral(lines: list[str]) -> list[str]:
    """An audit report without what depends on the JAX release: how many of
    JAX's own modules compile, and which JAX functions check an explicitly
    requested dtype (0.7 checks fewer)."""
    out = []
    for text in lines:
        text = re.sub(r"\d+ (modules? compiled|passed through|explicit 64-bit dtypes? became)", r"N \1", text)
        text = re.sub(r"dtypes? became", "dtype(s) became", text)
        out.append(re.sub(r"(requested explicitly at \S+) \(in [^)]*\)", r"\1 (in ...)", text))
    return out


@functools.cache
def _xla_logs_start_up() -> bool:
    """Whether this jaxlib's XLA logs its start-up at INFO level (jaxlib 0.7 logs nothing there)."""
    proc = _python(["-c", "import jax; jax.devices()"], PROJECTS, **_XLA_LOGS)
    return any(_GLOG.match(text) for text in proc.stderr.splitlines())


def _line(project: str, file: str, marker: str) -> int:
    lines = (PROJECTS / project / file).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def _report_lines(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    head = next(i for i, text in enumerate(lines) if text.startswith("no64 audit of "))
    return lines[head:]


def _agree(project: str, script: str, data: dict[str, Any], tmp_path: Path,
           **env: str) -> subprocess.CompletedProcess[str]:
    """The audit's modules and host narrowings are those of a run under the hook."""
    out = tmp_path / "direct.json"
    direct = _python(["-c", _DIRECT, script, str(out)], PROJECTS / project, NO64_PLATFORMS="cpu", **env)
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
        assert not (item["via"] or "").startswith("no64/"), item
    assert "-:" not in json.dumps(data)


# XLA logs its start-up at INFO level (on the CPU devices conftest.py asks for)
_XLA_LOGS = {"TF_CPP_MIN_LOG_LEVEL": "0"}
_X64_WARNING = re.compile(r"^\S+: X64DisabledWarning: ")


def _program_stderr(stderr: str) -> list[str]:
    """Standard error without XLA's time stamps and thread ids, and without
    no64's x64 warning (the audit's report says it instead)."""
    lines = stderr.splitlines()
    for i, text in enumerate(lines):
        if _X64_WARNING.match(text):
            del lines[i:i + 3]  # the warning's two lines and the source line
            break
    # (the audit runs the script by its absolute path, the direct run by the name given)
    projects = f"{PROJECTS}{os.sep}"
    return [re.sub(r"^([IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ", r"\1 ", text)
            .replace(projects + "jnp_optax" + os.sep, "").replace(projects + "flax_eqx" + os.sep, "")
            for text in lines]


def test_jnp_optax_project(tmp_path: Path) -> None:
    project = "jnp_optax"
    out = tmp_path / "audit.json"
    proc = _python(["-m", "no64", "audit", "--json", "-o", str(out), "train.py"], PROJECTS / project,
                   **_XLA_LOGS)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)
    assert data["view"] == "hook" and data["platforms"] == ["cpu"] and data["mode"] == "fix"
    assert data["integer_policy"] == "error" and data["policy"] == "default"
    assert not [m for m in data["modules"] if m["status"] == "refused"]
    rewritten = [m for m in data["modules"] if m["status"] == "rewritten"]
    # what ran is each function's x64 program: its integers exact (a sentinel keeps its
    # meaning), its float64 computed as float32 (the default float policy, reported)
    assert rewritten and all(m["how"] in ("exact", "sentinel", "precision-reduced") for m in rewritten)
    assert any(m["how"] == "exact" for m in rewritten)
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
    # the eager init draw runs in a jit of its own: the x64 program's float64 draw, in f32
    init = draws[("model.py", line("model.py", "INIT LINE"))]
    assert "(jax.random.normal): f64 random floats drawn from 32-bit words" in init
    dropout = draws[("model.py", line("model.py", "DROPOUT LINE"))]
    assert "(jax.random.bernoulli): rbg state rewritten exactly" in dropout
    # the host sentinel and the explicit int64 counter
    sentinel = line("metrics.py", "SENTINEL LINE")
    assert ("host", "metrics.py", sentinel) in kinds
    assert f"host sentinel at metrics.py:{sentinel} mapped INT64_MAX \u2192 INT32_MAX" in "\n".join(messages)
    int64 = line("metrics.py", "INT64 LINE")
    assert f"int64 requested explicitly at metrics.py:{int64}" in "\n".join(messages)
    # no refusal, no "requested explicitly" for values that do not name int64
    assert not any(c["handling"] in ("refused", "blocked") for c in data["causes"])
    for g in data["groups"]:
        if "requested explicitly" in g["hint"]:
            # the int64 sum, and the np.int64 sentinel passed at its line
            assert g["file"] == "metrics.py" and g["line"] in (int64, sentinel), g
    direct = _agree(project, "train.py", data, tmp_path, **_XLA_LOGS)
    assert direct.returncode == 0, direct.stderr
    assert proc.stdout == direct.stdout  # the program computes what it computes under the hook
    # and writes to stderr what it writes there: XLA's start-up log, JAX's warnings at the same lines
    assert (any(_GLOG.match(text) for text in proc.stderr.splitlines())
            or not _xla_logs_start_up()), proc.stderr
    # (JAX 0.7 names the dtype as the class it was given: <class 'jax.numpy.int64'>)
    assert re.search(r"Explicitly requested dtype (int64|<class 'jax\.numpy\.int64'>)", proc.stderr)
    assert _program_stderr(proc.stderr) == _program_stderr(direct.stderr)


def test_text_report_and_fail_on() -> None:
    cwd = PROJECTS / "jnp_optax"
    proc = _python(["-m", "no64", "audit", "train.py"], cwd, **_XLA_LOGS)
    assert proc.returncode == 0, proc.stderr  # the default --fail-on refused: nothing refused
    assert proc.stdout.count("epoch ") == 2  # the program's output, untouched
    before = proc.stderr.split("no64 audit of ", 1)[0].splitlines()
    # XLA's start-up log, with the program's stderr
    assert any(_GLOG.match(text) for text in before) or not _xla_logs_start_up()
    report = _report_lines(proc.stderr)
    assert report[0].startswith("no64 audit of train.py as NO64_PLATFORMS=cpu runs it: ")
    assert re.search(r", \d+ rewritten \(\d+ exact, ", report[0]), report[0]
    assert 3 < len(report) <= 20, report  # fits on a screen
    assert not any(_GLOG.match(text) for text in report)  # no XLA log lines inside the report
    assert report[1].startswith("  x64 turned on at settings.py:")
    assert "X64DisabledWarning" not in proc.stderr  # the report says it instead
    # the audit guide shows this very report, run on the release the releases guide names
    guides = Path(__file__).parents[2] / "docs" / "guides"
    page = (guides / "audit.md").read_text()
    shown = page.split("$ no64 audit train.py\n", 1)[1].split("```", 1)[0]
    verified = re.search(r"installs \(jax (\S+) on Python", (guides / "jax-releases.md").read_text())
    assert verified is not None
    if importlib.metadata.version("jax") == verified.group(1):
        assert shown.splitlines() == proc.stdout.splitlines() + report
    else:  # another release: JAX's own modules and dtype checks differ
        assert _release_neutral(shown.splitlines()) == _release_neutral(proc.stdout.splitlines() + report)
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
    assert "no64/jax/audit/" not in proc.stderr  # the traceback of a plain run
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
    assert "(jax.random.bernoulli via flax/linen/stochastic.py:" in dropout["message"]
    assert draws[("models.py", _line(project, "models.py", "NNX INIT LINE"))]["via"].startswith("flax/nnx/")
    assert draws[("models.py", _line(project, "models.py", "EQX INIT LINE"))]["via"].startswith("equinox/")
    shuffle = draws[("train.py", _line(project, "train.py", "RBG SHUFFLE LINE"))]
    assert "(jax.random.permutation): rbg state rewritten exactly" in shuffle["message"]
    # the host sentinel and the explicit int64 dtypes: JAX's in the metric, no64's for host data
    causes = {(c["kind"], c["file"], c["line"]): c["message"] for c in data["causes"]}
    sentinel = _line(project, "metrics.py", "SENTINEL LINE")
    assert "mapped INT64_MIN \u2192 INT32_MIN" in causes[("host", "metrics.py", sentinel)]
    int64 = _line(project, "metrics.py", "INT64 LINE")
    # traced once, with x64 on: the explicit int64 sum is the x64 program's, narrowed by the pass
    assert f"int64 requested explicitly at metrics.py:{int64}" in causes[("value", "metrics.py", int64)]
    labels = _line(project, "train.py", "LABELS LINE")
    assert causes[("explicit-dtype", "train.py", labels)] == (
        f"int64 requested explicitly at train.py:{labels} (in asarray): "
        "no64 converts the data to int32, each value checked")
    # the sentinel meets labels of unknown range in jnp.where: reported, not proven
    meet = ("host", "metrics.py", _line(project, "metrics.py", "jnp.where(keep, labels, fill)"))
    assert "meets, in select_n, values that may be INT32_MIN themselves" in causes[meet]
    # nothing unproven or refused; float64 computed as float32 is reported as such
    assert all(c["handling"] in ("exact", "sentinel", "rewritten", "precision-reduced", "rounded",
                                 "float32") for c in data["causes"]
               if (c["kind"], c["file"], c["line"]) != meet)
    assert len(data["causes"]) <= 30  # the text report: one line each, after the headline
    direct = _agree(project, "train.py", data, tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert proc.stdout == direct.stdout
