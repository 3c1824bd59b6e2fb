"""Programs that turn x64 on because their integers need 64 bits, under the
compile hook (``NO64_PLATFORMS=cpu JAX_ENABLE_X64=1``), against the same
programs run with x64 on and without no64.

Every program gives the x64 value, or a no64 error naming its line, or --
under the default policy -- an ``UnprovenIntegerWarning`` at its line; never
a different number without one.  ``strict`` refuses what is not proven,
``exact`` computes it exactly and refuses an output that does not fit in the
32-bit array JAX returns.  Programs whose integers are proven to fit give
the same values with no warning under every policy.  The children run in
parallel, once each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "intent_programs"
SCRIPT = HERE / "programs.py"
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
POLICIES = ("default", "strict", "exact")

#: the programs whose 32-bit value differs from the x64 one on these inputs
WRAPPING = ("cumsum", "upcast_sum", "square", "scan_counter", "fori_int64", "bincount_weights",
            "argmax_products", "cumsum_mod")
#: their x64 results fit in 32 bits: policy "exact" returns them exactly
EXACT_FITS = ("argmax_products", "cumsum_mod", "hash_mod")
FITS = ("fits_count", "fits_index", "fits_argmax")
#: width-dependent ops (shifts by 32 or more, popcnt/clz, 64-bit random bits, an int64
#: seed, composite sort keys): JAX's 32-bit program computes other numbers, the x64
#: program converted by no64 -- what runs under every policy -- the x64 ones
WIDTH = ("composite_keys", "popcnt", "clz", "shift40_mod", "uint64_bits", "int64_seed")

EQX_CONFTEST = "import jax\nimport jax.numpy as jnp\n"
EQX_TEST = """
import jax
import jax.numpy as jnp


def test_add():
    assert int(jax.jit(lambda a: a + 1)(jnp.int32(2))) == 3
"""


def _lines() -> dict[str, int]:
    out = {}
    for i, text in enumerate(SCRIPT.read_text().splitlines(), 1):
        if "# LINE " in text:
            out[text.rsplit("# LINE ", 1)[1].strip()] = i
    return out


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
    env.update(XLA_FLAGS=FAST_COMPILE, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    env.update(extra)
    return env


def _start(args: list[str], cwd: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *args], env=_env(**extra), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every child, started at once: the reference, each policy, the audit, a pytest suite."""
    suite = tmp_path_factory.mktemp("suite")
    (suite / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (suite / "conftest.py").write_text(EQX_CONFTEST)
    (suite / "test_add.py").write_text(EQX_TEST)
    procs = {"ref": _start([str(SCRIPT)], HERE), "plain32": _start([str(SCRIPT)], HERE, JAX_ENABLE_X64="0")}
    for policy in POLICIES:
        procs[policy] = _start([str(SCRIPT), "--records"], HERE, NO64_PLATFORMS="cpu", NO64_POLICY=policy)
    procs["audit"] = _start(["-m", "no64", "audit", "--fail-on", "unproven", "--json", str(SCRIPT)], HERE)
    procs["suite"] = _start(["-m", "pytest", "-p", "no:cacheprovider", str(suite)], suite,
                            NO64_PLATFORMS="cpu")
    out: dict[str, Any] = {}
    for tag, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        out[tag] = (proc.returncode, stdout, stderr)
    return out


def _results(runs: dict[str, Any], tag: str) -> dict[str, Any]:
    rc, stdout, stderr = runs[tag]
    assert rc == 0, stderr[-4000:]
    return json.loads(stdout.strip().splitlines()[-1])


def _warned_at(got: dict[str, Any], line: int) -> bool:
    return ["UnprovenIntegerWarning", line] in got["warnings"]


def _error_at(got: dict[str, Any], line: int) -> bool:
    return "error" in got and got["module"].startswith("no64") and f"programs.py:{line}" in got["message"]


def test_never_a_silent_wrap(runs: dict[str, Any]) -> None:
    """Under every policy each program gives the x64 value, a no64 error naming its
    line, or (default policy) a warning at its line."""
    ref = _results(runs, "ref")
    lines = _lines()
    problems = []
    for policy in POLICIES:
        got = _results(runs, policy)
        for name, line in lines.items():
            g, r = got[name], ref[name]
            same = "value" in g and g["value"] == r["value"]
            if not (same or _error_at(g, line) or (policy == "default" and _warned_at(g, line))):
                problems.append(f"{policy}/{name}: {g} (x64: {r['value']})")
    assert not problems, "\n".join(problems)


def test_each_policy(runs: dict[str, Any]) -> None:
    ref = _results(runs, "ref")
    lines = _lines()
    default, strict, exact = (_results(runs, p) for p in POLICIES)
    for name in WRAPPING:
        assert ref[name]["value"] != default[name]["value"], name  # the 32-bit program does wrap
        assert _warned_at(default[name], lines[name]), (name, default[name])
        assert strict[name].get("error") == "NarrowingError" and _error_at(strict[name], lines[name]), (
            name, strict[name])
    for name in EXACT_FITS:
        assert exact[name]["value"] == ref[name]["value"], (name, exact[name])
        assert exact[name]["warnings"] == []
    for name in ("cumsum", "upcast_sum", "square"):
        assert exact[name].get("error") == "OutputRangeError", (name, exact[name])
        assert _error_at(exact[name], lines[name])
        assert 'no64.jit(..., policy="exact", restore_dtypes=True)' in exact[name]["message"]
    # a Python int beyond int32 in the function (a hash multiplier), which the 32-bit trace
    # cannot hold: the x64 program, which holds it exactly, is what runs under every policy
    for got in (default, strict, exact):
        assert got["hash_mod"]["value"] == ref["hash_mod"]["value"], got["hash_mod"]
    assert exact["arange_across"].get("error") == "OutputRangeError", exact["arange_across"]
    # the compile records say which modules are not exact
    assert [False] == sorted({exact for name, exact in default["records"] if not exact})


def test_width_dependent_ops_give_the_x64_value(runs: dict[str, Any]) -> None:
    """What runs is what was judged: under every policy the module compiled is the x64
    program converted by the pass, so the ops it computes on words give the x64 value,
    with no warning (they are exact), where JAX's own 32-bit program differs."""
    ref = _results(runs, "ref")
    problems = []
    for policy in POLICIES:
        got = _results(runs, policy)
        for name in WIDTH:
            g = got[name]
            if g.get("value") != ref[name]["value"] or g["warnings"]:
                problems.append(f"{policy}/{name}: {g} (x64: {ref[name]['value']})")
    assert not problems, "\n".join(problems)
    # not vacuous: the 32-bit program JAX traces computes other numbers for each
    plain32 = _results(runs, "plain32")
    assert all(plain32[name]["value"] != ref[name]["value"] for name in WIDTH), plain32


def test_programs_that_fit_are_unchanged(runs: dict[str, Any]) -> None:
    ref = _results(runs, "ref")
    for policy in POLICIES:
        got = _results(runs, policy)
        for name in FITS:
            assert got[name]["value"] == ref[name]["value"] and got[name]["warnings"] == [], (
                policy, name, got[name])


def test_audit_names_the_lines(runs: dict[str, Any]) -> None:
    """The audit's hook view (default policy): a cause per line the 32-bit program may compute
    differently, and --fail-on unproven fails."""
    rc, _, stderr = runs["audit"]
    assert rc == 1, stderr[-3000:]
    report = json.loads(stderr[stderr.index('{\n  "version"'):])
    lines = _lines()
    unproven = {c["line"] for c in report["causes"] if c["handling"] in ("unproven", "overflow")}
    missing = [name for name in WRAPPING if lines[name] not in unproven]
    assert not missing, (missing, report["causes"])
    assert all(lines[name] not in unproven for name in FITS)


def test_suite_with_warnings_as_errors_starts(runs: dict[str, Any]) -> None:
    """A pytest suite configured `filterwarnings = error` whose conftest imports jax runs under
    NO64_PLATFORMS with x64 on; the plugin reports the x64 switch instead."""
    rc, stdout, stderr = runs["suite"]
    assert rc == 0, stdout[-3000:] + stderr[-3000:]
    assert "1 passed" in stdout
    note = "no64: no64 turned jax_enable_x64 off (NO64_PLATFORMS=cpu)"
    header, summary = stdout.split("collected", 1)
    assert note in header and note in summary, stdout


def test_no64_jit_default_policy_reports_the_line() -> None:
    """no64.jit's default policy judges the call by its x64 meaning (the caller's int64
    argument): the square that wraps in 32 bits is an UnprovenIntegerWarning at its line,
    which -W error turns into an error; a program that fits gives no warning."""
    import warnings

    import numpy as np

    import no64
    from no64.jax import intent

    intent.clear_warned()
    square = no64.jit(lambda a: a * a)  # SQUARE LINE
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if t.endswith("# SQUARE LINE"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.UnprovenIntegerWarning)
        with pytest.raises(no64.UnprovenIntegerWarning, match=f"test_intent.py:{line} "):
            square(np.array([3, 70_000], np.int64))
        count = no64.jit(lambda a: (a > 5).sum())
        assert int(count(np.array([3, 70_000], np.int64))) == 1


@pytest.mark.parametrize("policy", ["default", "strict"])
def test_meaning_judged_at_compile_without_keeping_data(policy: str) -> None:
    """The user's function is traced once, when JAX traces it (its x64
    program, which JAX's 32-bit program is replayed from), and its x64
    module is lowered and judged only when the module is compiled, without
    keeping the caller's data alive.  The judgement finishes before
    ``compile`` returns (one warning, at the line of the cumsum, not of the
    compile call; ``strict`` refuses), and a program whose x64 version holds
    no 64-bit value is not judged."""
    script = HERE / "deferred.py"
    proc = _start([str(script)], HERE, NO64_PLATFORMS="cpu", NO64_POLICY=policy)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-4000:]
    got = json.loads(stdout.strip().splitlines()[-1])
    cumsum_line = next(i for i, t in enumerate(script.read_text().splitlines(), 1)
                       if "jnp.cumsum(a)[-1]" in t)
    assert got["calls_after_trace"] == 1 and got["calls_after_lower"] == 1
    assert got["data_alive_before_compile"] is False
    assert got["calls_after_compile"] == 1
    if policy == "default":
        assert got["value"] == -1094967296  # the 32-bit program runs, and is reported
        assert got["warnings"] == [cumsum_line]
        assert got["meanings"] == [True, False]
    else:
        assert got["error"] == "NarrowingError" and "value" not in got
        assert got["warnings"] == []


MEANING_OFF = """
import json, sys
import jax, jax.numpy as jnp, numpy as np
import no64
from no64.jax import intent

def last(a):
    return jnp.cumsum(a)[-1]

data = np.full(200, 16_000_000, np.int64)
out = {}
try:
    jax.jit(last)(data)
except no64.No64Error as exc:
    out["on"] = type(exc).__name__
intent.set_x64_meaning(False)
out["off"] = int(jax.jit(lambda a: jnp.cumsum(a)[-1] + 0)(data))
out["meanings"] = [r.meaning is not None for r in no64.compile_records()]
print(json.dumps(out))
"""


def test_x64_meaning_can_be_turned_off() -> None:
    """``intent.set_x64_meaning(False)`` (what ``benchmarks/bench_hook.py``
    measures by): a trace that starts then has no x64 meaning, so ``strict``
    no longer refuses the cumsum that wraps in 32 bits; it runs as the
    32-bit program."""
    proc = _start(["-c", MEANING_OFF], HERE, NO64_PLATFORMS="cpu", NO64_POLICY="strict")
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-4000:]
    got = json.loads(stdout.strip().splitlines()[-1])
    assert got["on"] == "NarrowingError"
    assert got["off"] == -1094967296  # 200 * 16e6 wrapped to 32 bits
    assert got["meanings"][-1] is False


def test_the_users_python_runs_once_per_trace() -> None:
    """A program that asked for x64 is traced once under every policy: the x64
    program, which JAX's 32-bit program is replayed from (Equinox's
    ``test_num_traces``: a counter in the jitted function is 1 after one call;
    the same for a 64-bit sum, a closed-over int64 constant beyond 32 bits, a
    scan of a custom-derivative function over float64 data, and a nested jit
    with a sentinel).  Each gives the x64 value or a no64 error."""
    script = HERE / "traces.py"
    procs = {"ref": _start([str(script)], HERE)}
    for policy in POLICIES:
        procs[policy] = _start([str(script)], HERE, NO64_PLATFORMS="cpu", NO64_POLICY=policy)
    got = {}
    for tag, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-4000:]
        got[tag] = json.loads(stdout.strip().splitlines()[-1])
    ref = got["ref"]
    assert all(r["traces"] == 1 and "value" in r for r in ref.values()), ref
    for policy in POLICIES:
        for name, r in got[policy].items():
            assert r["traces"] == 1, (policy, name, r)
            if "error" in r:
                assert r["error"].split(":")[0] in ("NarrowingError", "HostRangeError"), (policy, name, r)
            elif policy == "exact" or name in ("plain", "closure_mod", "scan_relu"):
                assert r["value"] == ref[name]["value"], (policy, name, r)
    assert got["exact"]["cumsum_mod"]["value"] == ref["cumsum_mod"]["value"]
    assert got["exact"]["closure_mod"]["value"] == ref["closure_mod"]["value"]


NO_MEANING = """
import json, warnings
import jax, numpy as np
warnings.simplefilter("ignore")
draw = jax.jit(lambda k: jax.random.bernoulli(k, 0.9, (8, 4)))
print(json.dumps(np.asarray(draw(jax.random.key(1, impl="rbg"))).astype(int).tolist()))
"""


def test_without_an_x64_meaning_jax_s_own_32bit_program_runs() -> None:
    """Where the x64 module cannot be had when it is compiled (an rbg key's
    uint64 draw has no 32-bit form), what runs under the default policy is
    JAX's own 32-bit program -- the user's function traced with x64 off --
    not the 32-bit replay of the x64 trace, which keeps the x64 program's
    choices by dtype (float64's mantissa width in the uniform draw)."""
    procs = {"jax32": _start(["-c", NO_MEANING], HERE, JAX_ENABLE_X64="0"),
             "hook": _start(["-c", NO_MEANING], HERE, NO64_PLATFORMS="cpu")}
    got = {}
    for tag, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-4000:]
        got[tag] = json.loads(stdout.strip().splitlines()[-1])
    assert 0 < sum(map(sum, got["jax32"])) < 32  # not vacuous: some dropped
    assert got["hook"] == got["jax32"]
