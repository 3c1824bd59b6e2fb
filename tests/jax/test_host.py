"""Host values: no64, not JAX, narrows 64-bit host data (sentinels, big
integers, the integer policy, records), compared with the x64 program run
without no64.

The programs are in ``host_cases.py``.  Under ``NO64_PLATFORMS=cpu`` with
``JAX_ENABLE_X64=1`` they run in one child process, and the reference (the
same script with ``JAX_ENABLE_X64=1`` and no no64) in another, started
together.  Under ``no64.jit`` they run in-process, against the x64 program
traced in-process with x64 on (no64 inactive).  The expected result of a
case is the reference narrowed by the pass's own rules
(:mod:`no64.transforms.constants`): a sentinel maps to the 32-bit extreme, other
integers outside the 32-bit range are refused at the case's line or follow
the integer policy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import host_cases as hc
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from no64.jax import host
from no64.transforms import constants as C
from support import enable_x64, with_support

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.jax.hook.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

CASES_FILE = str(Path(hc.__file__).resolve())
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
_WIDE = {np.dtype(np.int64), np.dtype(np.uint64)}


def narrowed(ref: dict[str, Any], policy: str = "error") -> np.ndarray | None:
    """The reference result narrowed by no64's rules (``None``: refused)."""
    v = np.array(ref["value"], dtype=np.dtype(ref["dtype"])).reshape(ref["shape"])
    if v.dtype in _WIDE:
        res = C.narrow_integers(v.reshape(-1), v.dtype == np.uint64, policy)
        return None if res.values is None else res.values.reshape(v.shape)
    if v.dtype in (np.float64, np.complex128):
        return C.narrow_floats(v.reshape(-1)).values.reshape(v.shape)
    return v


def encoded(x: Any) -> dict[str, Any]:
    v = np.asarray(x)
    return {"dtype": str(v.dtype), "shape": list(v.shape), "value": v.reshape(-1).tolist()}


def same(got: dict[str, Any], want: np.ndarray, *, close: bool = False) -> str | None:
    """A description of the difference, or ``None``."""
    if "error" in got:
        return f"raised {got['error']}: {got['message'][:300]}"
    a = np.array(got["value"], dtype=np.dtype(got["dtype"])).reshape(got["shape"])
    if a.dtype != want.dtype or a.shape != want.shape:
        return f"{a.dtype}{list(a.shape)} instead of {want.dtype}{list(want.shape)}"
    if close:
        ok = np.allclose(a, want, rtol=1e-5, atol=1e-6)
    else:
        ok = np.array_equal(a, want, equal_nan=True)
    return None if ok else f"{a.tolist()} instead of {want.tolist()}"


def refused_at(got: dict[str, Any], line: int) -> str | None:
    if "error" not in got:
        return f"not refused: {got['value']}"
    if "HostRangeError" not in got["mro"] or "No64Error" not in got["mro"]:
        return f"{got['error']} is not a no64.HostRangeError: {got['message'][:300]}"
    if f"{CASES_FILE}:{line}" not in got["message"]:
        return f"does not name {Path(CASES_FILE).name}:{line}: {got['message'][:300]}"
    return None


# --------------------------------------------------------------------------
# NO64_PLATFORMS=cpu with JAX_ENABLE_X64=1, against the x64 program without no64
# --------------------------------------------------------------------------


def _start(tmp_path: Path, tag: str, *args: str, **extra: str
           ) -> tuple[subprocess.Popen[str], Path]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
    env.update(XLA_FLAGS=FAST_COMPILE, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1", **extra)
    with_support(env)
    out = tmp_path / f"{tag}.json"
    proc = subprocess.Popen([sys.executable, CASES_FILE, str(out), *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


def _finish(proc: subprocess.Popen[str], out: Path) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"child failed ({proc.returncode}):\n{stdout[-3000:]}\n{stderr[-6000:]}")
    return json.loads(out.read_text())


def test_environment_host_values_against_x64_reference(tmp_path: Path) -> None:
    """Every case under NO64_PLATFORMS=cpu + JAX_ENABLE_X64=1, eagerly and under jax.jit:
    sentinels give the x64 result narrowed by no64's rules; big integers are refused at the
    case's line (constants) or the call's line (jit and AOT-compiled arguments, also once a
    C++ fast path exists, made by 64-bit or by 32-bit numpy data); under the "wrap" policy
    they give the x64 result's low 32 bits; the Flax/Optax step's metrics match;
    host_records() names the lines."""
    ref_proc, ref_out = _start(tmp_path, "ref")
    got_proc, got_out = _start(tmp_path, "no64", NO64_PLATFORMS="cpu")
    ref = _finish(ref_proc, ref_out)
    got = _finish(got_proc, got_out)
    problems: list[str] = []
    lines = hc.lines_of({**hc.SENTINELS, **hc.BIG_CONSTANTS})
    arg_line = next(i for i, text in enumerate(Path(CASES_FILE).read_text().splitlines(), 1)
                    if "# ARGUMENT LINE" in text)
    for mode in ("eager", "jit"):
        for name in hc.SENTINELS:
            key = f"{mode}/{name}"
            if "error" in ref[key]:  # the x64 program fails too (a Python int beyond int64)
                if "error" not in got[key]:
                    problems.append(f"{key}: the reference raised {ref[key]['error']}, no64 did not")
                continue
            if (p := same(got[key], narrowed(ref[key]))) is not None:
                problems.append(f"{key}: {p}")
        for name in hc.BIG_CONSTANTS:
            key = f"{mode}/{name}"
            if (p := refused_at(got[key], lines[name])) is not None:
                problems.append(f"{key}: {p}")
            if (p := same(got[f"wrap/{key}"], narrowed(ref[key], "wrap"))) is not None:
                problems.append(f"wrap/{key}: {p}")
    aot_line = next(i for i, text in enumerate(Path(CASES_FILE).read_text().splitlines(), 1)
                    if "# AOT LINE" in text)
    arg32_line = next(i for i, text in enumerate(Path(CASES_FILE).read_text().splitlines(), 1)
                      if "# ARGUMENT32 LINE" in text)
    for name in hc.BIG_ARGUMENTS:
        for key, line in ((f"arg/{name}", arg_line), (f"aot/{name}", aot_line),
                          (f"arg32/{name}", arg32_line)):
            if (p := refused_at(got[key], line)) is not None:
                problems.append(f"{key}: {p}")
            if (p := same(got[f"wrap/{key}"], narrowed(ref[key], "wrap"))) is not None:
                problems.append(f"wrap/{key}: {p}")
    for key in (k for k in ref if k.startswith("train/")):
        if (p := same(got[key], narrowed(ref[key]), close="loss" in key)) is not None:
            problems.append(f"{key}: {p}")
    assert not problems, "\n".join(problems)
    assert narrowed(ref["train/first_negative_label0"]) == np.iinfo(np.int32).max

    records = {(r["kind"], r["location"]["line"]) for r in got["records"]
               if r["location"]["file"] == CASES_FILE}
    for name in ("np_scalar", "jnp_full", "initial", "u_full", "f_closed_vector", "f_initial"):
        assert ("sentinel", lines[name]) in records, (name, sorted(records))
    assert ("float-inexact", lines["f_closed_vector"]) not in records  # 1.5 is exact


# --------------------------------------------------------------------------
# no64.jit, against the x64 program traced in-process with x64 on
# --------------------------------------------------------------------------


def _reference(f: Any, *args: Any) -> dict[str, Any]:
    assert jax.config.jax_enable_x64 and host.host_policy() is None
    return encoded(jax.jit(f)(*args))


@pytest.mark.parametrize("name", sorted(hc.SENTINELS))
def test_jit_sentinels(name: str) -> None:
    f = hc.SENTINELS[name]
    x = np.arange(3)
    try:
        ref = _reference(f, x)
    except OverflowError:  # the x64 program fails too (a Python int beyond int64)
        with pytest.raises(OverflowError):
            no64.jit(f)(x)
        return
    host.clear_host_records()
    got = encoded(no64.jit(f)(x))
    assert same(got, narrowed(ref)) is None, (got, ref)
    if name == "lax_reduce":
        # the x64 program, traced once, holds no host sentinel: JAX takes
        # INT64_MAX as min's identity there and reduces without it
        return
    line = hc.lines_of(hc.SENTINELS)[name]
    kinds = {e.kind for e in host.host_records() if e.location.file == CASES_FILE
             and e.location.line == line}
    assert "sentinel" in kinds


@pytest.mark.parametrize("name", sorted(hc.BIG_CONSTANTS))
def test_jit_big_constants(name: str) -> None:
    f = hc.BIG_CONSTANTS[name]
    x = np.arange(3)
    ref = _reference(f, x)
    line = hc.lines_of(hc.BIG_CONSTANTS)[name]
    with pytest.raises(no64.HostRangeError) as err:
        no64.jit(f)(x)
    assert isinstance(err.value, no64.ConstantRangeError) and isinstance(err.value, no64.No64Error)
    assert f"{CASES_FILE}:{line}" in str(err.value) and "no sentinel" in str(err.value)
    assert err.value.source.line == line
    host.clear_host_records()
    got = encoded(no64.jit(f, integer_policy="wrap")(x))
    assert same(got, narrowed(ref, "wrap")) is None, (got, ref)
    if name in hc.BIG_VALUES:
        got = encoded(no64.jit(f, integer_policy="saturate")(x))
        assert same(got, narrowed(ref, "saturate")) is None, (got, ref)
    kinds = {e.kind for e in host.host_records() if e.location.line == line}
    assert "wrapped" in kinds


@pytest.mark.parametrize("name", sorted(hc.BIG_ARGUMENTS))
def test_jit_big_arguments(name: str) -> None:
    arg = hc.BIG_ARGUMENTS[name]
    ref = _reference(hc.plus_one, arg)
    with pytest.raises(no64.ArgumentRangeError, match=rf"no sentinel.*\(at {__file__}:\d+\)"):
        no64.jit(hc.plus_one)(arg)
    got = encoded(no64.jit(hc.plus_one, integer_policy="wrap")(arg))
    assert same(got, narrowed(ref, "wrap")) is None, (got, ref)


def test_jit_sentinel_arguments() -> None:
    """Sentinels passed as arguments map to the 32-bit extremes, as constants do."""
    i64, u64, f64 = np.iinfo(np.int64), np.iinfo(np.uint64), np.finfo(np.float64).max
    args = (np.array([i64.max, 3, i64.min]), np.uint64(u64.max), np.array([-f64, 1.0]),
            int(i64.max), float(f64))

    def f(a, b, c, d, e):
        return jnp.min(a), b, jnp.max(c), jnp.minimum(d, 5), jnp.minimum(e, 2.0)

    got = no64.jit(f)(*args)
    ref = jax.jit(f)(*args)
    for g, r in zip(got, ref):
        assert same(encoded(g), narrowed(encoded(r))) is None, (g, r)


def test_jit_training_step_with_sentinel_metrics() -> None:
    """A Flax/Optax step whose metrics use INT64_MAX for "no such example"."""
    ref = hc.run_training(jax.jit)
    got = hc.run_training(no64.jit)
    for k, r in ref.items():
        want = narrowed(encoded(r))
        assert same(encoded(got[k]), want, close=k.startswith("loss")) is None, (k, got[k], r)
    assert int(got["first_negative_label0"]) == np.iinfo(np.int32).max


def test_host_narrowing_only_while_no64_narrows() -> None:
    """Outside no64.jit (x64 on here) JAX's own conversion applies: nothing narrowed or
    recorded."""
    host.clear_host_records()
    big = np.array([2**40])
    assert int(jnp.asarray(big)[0]) == 2**40
    assert jax.jit(lambda a: a + big)(np.int64(1)).dtype == np.int64
    with enable_x64(False):  # x64 off by the user, no64 not active: JAX's rules
        assert host.host_policy() is None
        assert jnp.asarray(np.array([3], np.int64)).dtype == np.int32
    assert not host.host_records()


def test_records_are_aggregated_per_line() -> None:
    host.clear_host_records()
    f = no64.jit(lambda x, c: jnp.where(x > 0, x, c))
    for _ in range(3):
        f(np.arange(4.0), np.array([0.1, 0.2, 0.3, 0.4]))  # ARGS LINE
    events = [e for e in host.host_records() if e.location.file == __file__]
    # arange(4.0) is exact in float32; 0.1 ... 0.4 are not: one event, 4 elements a call.
    assert [(e.kind, e.count) for e in events] == [("float-inexact", 12)]
    assert "argument c" in events[0].op
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "# ARGS LINE" in t and "next(" not in t)
    assert events[0].location.line == line


# --------------------------------------------------------------------------
# Messages a person reads
# --------------------------------------------------------------------------

MESSAGE_SCRIPT = """
import warnings
warnings.simplefilter("always")
import jax
import numpy as np
print("x64", jax.config.jax_enable_x64)
print("sum", int(jax.jit(lambda a: a.sum())(np.arange(3))))
"""


def _run_script(tmp_path: Path, tag: str, **extra: str) -> subprocess.Popen[str]:
    script = tmp_path / f"{tag}.py"
    script.write_text(MESSAGE_SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NO64_") and k not in ("JAX_ENABLE_X64", "JAX_PLATFORMS")}
    env.update(XLA_FLAGS=FAST_COMPILE, JAX_ENABLE_X64="1", **extra)
    return subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _messages(stderr: str) -> list[str]:
    """The no64 lines of a child's standard error (JAX's and XLA's own left out)."""
    return [line for line in stderr.splitlines()
            if "no64" in line or "X64DisabledWarning" in line or line.startswith(("JAX ", "32-bit"))]


def test_messages(tmp_path: Path) -> None:
    """A bad NO64_MODE / NO64_INTEGER_POLICY / NO64_POLICY fails closed: ``import jax``
    works, and the first compile raises no64.ConfigurationError, whose one line names each
    variable, its value and the choices (nothing runs under a setting not meant); the
    X64DisabledWarning is two short lines; with NO64_PLATFORMS=neuron where the default
    backend is cpu the warning says so."""
    bad = _run_script(tmp_path, "bad", NO64_PLATFORMS="cpu", NO64_MODE="bogus",
                      NO64_INTEGER_POLICY="saturat", NO64_POLICY="exakt", JAX_PLATFORMS="cpu")
    neuron = _run_script(tmp_path, "neuron", NO64_PLATFORMS="neuron")
    pinned = _run_script(tmp_path, "pinned", NO64_PLATFORMS="neuron", JAX_PLATFORMS="cpu")
    outs = {tag: p.communicate(timeout=300) + (p.returncode,)
            for tag, p in (("bad", bad), ("neuron", neuron), ("pinned", pinned))}
    for tag, (stdout, stderr, rc) in outs.items():
        if tag == "bad":
            continue
        assert rc == 0 and "Traceback" not in stderr, (tag, stderr[-3000:])
        assert "sum 3" in stdout, (tag, stdout)

    stdout, stderr, rc = outs["bad"]
    assert rc == 1 and "sum" not in stdout and "x64 False" in stdout, (stdout, stderr[-3000:])
    last = next(line for line in stderr.splitlines() if line.startswith("no64.errors.ConfigurationError"))
    assert last == (
        "no64.errors.ConfigurationError: no64: NO64_MODE='bogus' is not one of fix, check, off; "
        "NO64_INTEGER_POLICY='saturat' is not one of error, saturate, wrap; "
        "NO64_POLICY='exakt' is not one of default, strict, permissive, exact; no64 refuses to "
        "compile for 'cpu' under another setting than the one meant"), last
    warning = stderr[stderr.index("X64DisabledWarning"):].splitlines()
    assert warning[0].endswith("no64 turned jax_enable_x64 off (NO64_PLATFORMS=cpu): "
                               "the default backend (cpu) is a no64 platform.")
    assert warning[1].startswith("JAX computes in 32 bits: float64 as float32 (NO64_FLOAT_POLICY=pairs for pairs)")
    assert len(warning[0]) + len(warning[1]) < 260, warning
    assert "bad.py:7: X64DisabledWarning" in stderr  # the user's line that compiles first
    assert len(warning) >= 2

    stdout, stderr, _ = outs["neuron"]
    assert "x64 False" in stdout
    assert "a no64 platform (neuron) may be the default backend" in stderr
    assert ("no64 turned jax_enable_x64 off for neuron before JAX started its backends, but "
            "the default backend is cpu, not a no64 platform.") in stderr, stderr[-3000:]
    assert "lacks" not in stderr and "without 64-bit types" not in stderr

    stdout, stderr, _ = outs["pinned"]
    assert "x64 True" in stdout
    assert ("jax_enable_x64 stays on for the default backend (cpu), which is not a no64 "
            "platform (neuron; NO64_PLATFORMS=neuron).") in stderr, stderr[-3000:]


def test_jax_dtype_warnings_name_the_users_line() -> None:
    """no64's wrapper of jnp.array is not where JAX's warning about a 64-bit
    dtype points; under no64.jit the user's function is traced once, as its
    x64 program, where int64 is no truncated request (no such warning)."""
    def f(x):
        return x + jnp.array([1, 2], dtype=jnp.int64)

    def requested(caught: list[Any]) -> list[Any]:
        # JAX 0.7 names the dtype as the class it was given (<class 'jax.numpy.int64'>)
        return [w for w in caught if re.search(r"requested dtype (int64|<class 'jax\.numpy\.int64'>) "
                                               r"requested in array", str(w.message))]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert no64.jit(f)(np.ones(2, np.int32)).tolist() == [2, 3]
    assert requested(caught) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with enable_x64(False):
            jnp.array([1, 2], dtype=jnp.int64)  # WARN LINE
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "# WARN LINE" in t and "next(" not in t)
    found = requested(caught)
    assert found and all((w.filename, w.lineno) == (__file__, line) for w in found), [
        (w.filename, w.lineno) for w in found]


# --------------------------------------------------------------------------
# Host sentinels next to their 32-bit images, and read as numbers
# --------------------------------------------------------------------------

_IMAGES = {"INT64_MAX": "INT32_MAX", "INT64_MIN": "INT32_MIN", "UINT64_MAX": "UINT32_MAX"}


def _line_of(marker: str) -> int:
    return next(i for i, text in enumerate(Path(CASES_FILE).read_text().splitlines(), 1)
                if marker in text)


def _collision_problem(got: dict[str, Any], line: int) -> str | None:
    if (p := refused_at(got, line)) is not None:
        return p
    message = got["message"]
    if not any(f"the sentinel {s} (" in message and f"and {i} (" in message
               for s, i in _IMAGES.items()):
        return f"does not name both values: {message[:300]}"
    return None


def _sentinel_judged(policy: str, got: dict[str, Any], ref: dict[str, Any], line: int,
                     unproven: set[int]) -> str | None:
    """A host sentinel read as a number or meeting its image, in a program that asked
    for x64 (its x64 module runs, holding the sentinel constants exactly; an argument's
    sentinel is followed by the host, or taken back at the module's entry under exact):
    the x64 result narrowed, or said at the case's line -- reported under default (a
    host "unproven" record or an UnprovenIntegerWarning), refused under strict and exact
    (the host's HostRangeError, the pass's NarrowingError, or the OutputRangeError of
    an x64 output the 32-bit array cannot hold) -- never another value silently."""
    want = narrowed(ref)  # None: the x64 result has no 32-bit form
    if "error" not in got and want is not None and same(got, want) is None:
        return None
    if policy == "default":
        if "error" in got:
            return f"raised {got['message'][:300]}"
        if line not in unproven and line not in got.get("warned", ()):
            return f"{got['value']} (x64: {ref['value']}), and not said at line {line}"
        return None
    if "error" not in got:
        return f"not refused: {got['value']} (x64: {ref['value']})"
    if not {"HostRangeError", "NarrowingError", "OutputRangeError"} & set(got["mro"]):
        return f"{got['error']} is no refusal of a value: {got['message'][:300]}"
    if f"{CASES_FILE}:{line}" not in got["message"]:
        return f"does not name {Path(CASES_FILE).name}:{line}: {got['message'][:300]}"
    return None


def test_environment_sentinel_collisions_and_reads(tmp_path: Path) -> None:
    """Under NO64_PLATFORMS=cpu (JAX_ENABLE_X64=1), jax.jit, every range policy: a host
    array holding a sentinel and its 32-bit image is refused at the user's line naming
    both; a host sentinel read as a number (arithmetic, division as dividend or divisor,
    clz, a conversion to float, a loop counter, a jit argument, a Python int argument)
    or meeting its image gives the x64 result narrowed, or is said at its line -- reported
    under the default policy, refused under strict and exact (see _sentinel_judged); a
    sentinel that is only moved gives the x64 result; a refusal of an op inside
    jnp.where's own function names the user's line, never no64's."""
    procs = {
        "ref": _start(tmp_path, "ref_s", "sentinels"),
        "default": _start(tmp_path, "default_s", "sentinels", NO64_PLATFORMS="cpu"),
        "strict": _start(tmp_path, "strict_s", "sentinels", NO64_PLATFORMS="cpu",
                         NO64_POLICY="strict"),
        "exact": _start(tmp_path, "exact_s", "sentinels", NO64_PLATFORMS="cpu",
                        NO64_POLICY="exact"),
    }
    out = {tag: _finish(*p) for tag, p in procs.items()}
    ref = out["ref"]
    lines = hc.lines_of({**hc.COLLISIONS, **hc.READS, **hc.MEETS, **hc.PROVEN})
    arg_line = _line_of("# SENTINEL ARGUMENT LINE")
    problems: list[str] = []
    for policy in ("default", "strict", "exact"):
        got = out[policy]
        unproven = {r["location"]["line"] for r in got.get("records", [])
                    if r["kind"] == "unproven" and r["location"]["file"] == CASES_FILE}
        for name in hc.COLLISIONS:
            if (p := _collision_problem(got[f"jit/{name}"], lines[name])) is not None:
                problems.append(f"{policy} jit/{name}: {p}")
        for name in ("collide_argument", "collide_argument_u"):
            if (p := _collision_problem(got[f"arg/{name}"], arg_line)) is not None:
                problems.append(f"{policy} arg/{name}: {p}")
        read_lines = {**{f"jit/{n}": lines[n] for n in hc.READS},
                      "arg/read_argument": hc.read_argument.__code__.co_firstlineno + 1,
                      "arg/read_argument_int": hc.read_argument.__code__.co_firstlineno + 1}
        meet_lines = {f"jit/{n}": lines[n] for n in hc.MEETS}
        for key, line in {**read_lines, **meet_lines}.items():
            if (p := _sentinel_judged(policy, got[key], ref[key], line, unproven)) is not None:
                problems.append(f"{policy} {key}: {p}")
        for name in hc.PROVEN:
            key = f"jit/{name}"
            if (p := same(got[key], narrowed(ref[key]))) is not None:
                problems.append(f"{policy} {key}: {p}")
            if lines[name] in unproven:
                problems.append(f"{policy} {key}: recorded unproven")
        if (p := same(got["arg/move_argument"], narrowed(ref["arg/move_argument"]))) is not None:
            problems.append(f"{policy} arg/move_argument: {p}")
    # The 32-bit program holds INT32_MAX for the sentinel (INT32_MAX % 1000 = 647);
    # what runs under the default policy is the x64 program, whose remainder of
    # INT64_MAX (807) the pass proves inside 32 bits.
    assert ref["jit/read_rem"]["value"] == [807, 807, 807]
    assert (2**31 - 1) % 1000 == 647
    assert same(out["default"]["jit/read_rem"], narrowed(ref["jit/read_rem"])) is None
    # A 64-bit jax.Array sentinel meeting an argument in jnp.where: the pass's verdict.
    key, line = "jit/jax_array_where", _line_of("# JAX ARRAY LINE")
    if (p := same(out["default"][key], narrowed(ref[key]))) is not None:
        problems.append(f"default {key}: {p}")
    refused = out["strict"][key]
    if "error" not in refused or "NarrowingError" not in refused["mro"]:
        problems.append(f"strict {key}: not refused: {refused}")
    elif f"{CASES_FILE}:{line}:" not in refused["message"] or "no64/jax/" in refused["message"]:
        problems.append(f"strict {key}: does not name the user's line: {refused['message'][:300]}")
    # the same select beside values the host knows lie within 2**15: proven under every policy
    key = "jit/jax_array_where_small"
    for policy in ("default", "strict"):
        if (p := same(out[policy][key], narrowed(ref[key]))) is not None:
            problems.append(f"{policy} {key}: {p}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(hc.COLLISIONS))
def test_jit_sentinel_collisions(name: str) -> None:
    f = hc.COLLISIONS[name]
    x = np.arange(3)
    _reference(f, x)  # the x64 program runs
    for policy in ("default", "strict"):
        with pytest.raises(no64.HostRangeError) as err:
            no64.jit(f, policy=policy)(x)
        got = {"error": "HostRangeError", "message": str(err.value),
               "mro": [c.__name__ for c in type(err.value).__mro__]}
        assert _collision_problem(got, hc.lines_of(hc.COLLISIONS)[name]) is None, str(err.value)
        assert err.value.source.file == CASES_FILE


@pytest.mark.parametrize("name", ["collide_argument", "collide_argument_u"])
def test_jit_sentinel_collision_arguments(name: str) -> None:
    f, arg = hc.ARGUMENT_CASES[name]
    _reference(f, arg)
    with pytest.raises(no64.HostRangeError) as err:
        no64.jit(f)(arg)  # COLLISION CALL LINE
    assert "argument a" in str(err.value)
    assert err.value.source.file == __file__
    assert "holds both the sentinel" in str(err.value)


@pytest.mark.parametrize("name", sorted(hc.READS))
def test_jit_sentinel_reads(name: str) -> None:
    """Default: the x64 result narrowed, or an "unproven" record at the case's line;
    strict: refused at that line."""
    f = hc.READS[name]
    x = np.arange(3)
    ref = _reference(f, x)
    line = hc.lines_of(hc.READS)[name]
    host.clear_host_records()
    got = encoded(no64.jit(f)(x))
    unproven = [e for e in host.host_records()
                if e.kind == "unproven" and (e.location.file, e.location.line) == (CASES_FILE, line)]
    assert unproven, (got, ref, host.host_records())
    assert "is read as a number" in unproven[0].detail
    with pytest.raises(no64.HostRangeError) as err:
        no64.jit(f, policy="strict")(x)
    assert f"{CASES_FILE}:{line}" in str(err.value) and "read as a number" in str(err.value)
    assert "no64.jit(..., policy='exact')" in str(err.value)  # the way out
    assert err.value.source.line == line


def test_jit_sentinel_argument_reads() -> None:
    f, arg = hc.ARGUMENT_CASES["read_argument"]
    ref = _reference(f, arg)
    line = hc.read_argument.__code__.co_firstlineno + 1
    host.clear_host_records()
    got = encoded(no64.jit(f)(arg))
    want = narrowed(ref)  # INT64_MAX - 1: not a sentinel, beyond 32 bits
    assert want is None or same(got, want) is not None
    assert any(e.kind == "unproven" and e.location.line == line for e in host.host_records())
    with pytest.raises(no64.HostRangeError, match="read as a number by sub"):
        no64.jit(f, policy="strict")(arg)
    g, moved = hc.ARGUMENT_CASES["move_argument"]
    assert same(encoded(no64.jit(g, policy="strict")(moved)), narrowed(_reference(g, moved))) is None


def test_refusal_inside_a_library_function_names_the_users_line() -> None:
    """jnp.where's own jitted function holds the refused convert; the refusal names this
    file's line, not no64's wrapper of JAX's convert (nor any no64 frame)."""
    wide = jnp.array([2**40, 5])  # x64 is on here: int64, and no sentinel

    def f(a):
        return jnp.where(a > 0, a, wide)  # REFUSED LINE

    with pytest.raises(no64.NarrowingError) as err:
        no64.jit(f, policy="strict")(np.arange(2))
    line = next(i for i, t in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "# REFUSED LINE" in t and "next(" not in t)
    assert err.value.location.file == __file__ and err.value.location.line == line
    assert f"{__file__}:{line}:" in str(err.value) and "no64/jax/" not in str(err.value)


@pytest.mark.parametrize("name", sorted(hc.MEETS))
def test_jit_sentinel_meets(name: str) -> None:
    """x may hold INT32_MAX: recorded "unproven" when traced (the result is right for
    these inputs), refused under strict; with x holding it, x == INT64_MAX differs from
    the x64 program's."""
    f = hc.MEETS[name]
    line = hc.lines_of(hc.MEETS)[name]
    x = np.array([0, 3, 7])
    host.clear_host_records()
    assert same(encoded(no64.jit(f)(x)), narrowed(_reference(f, x))) is None
    assert any(e.kind == "unproven" and e.location.line == line for e in host.host_records())
    with pytest.raises(no64.HostRangeError, match="values that may be"):
        no64.jit(f, policy="strict")(x)
    if name == "meet_eq":  # what the record warns of: x holding INT32_MAX
        edge = np.array([np.iinfo(np.int32).max, 7])
        assert same(encoded(no64.jit(f)(edge)), narrowed(_reference(f, edge))) is not None


@pytest.mark.parametrize("name", sorted(hc.PROVEN))
def test_jit_sentinel_proven(name: str) -> None:
    f = hc.PROVEN[name]
    x = np.array([np.iinfo(np.int32).max, 0, np.iinfo(np.int32).min])
    host.clear_host_records()
    got = encoded(no64.jit(f, policy="strict")(x))
    assert same(got, narrowed(_reference(f, x))) is None
    assert not [e for e in host.host_records() if e.kind == "unproven"]


def test_jit_sentinel_in_a_64bit_jax_array_argument() -> None:
    """A 64-bit jax.Array argument holding a sentinel is followed like a numpy one."""
    arg = jnp.array([np.iinfo(np.int64).max, 2, 3])  # x64 is on here
    host.clear_host_records()
    no64.jit(hc.read_argument)(arg)
    line = hc.read_argument.__code__.co_firstlineno + 1
    assert any(e.kind == "unproven" and e.location.line == line for e in host.host_records())
    with pytest.raises(no64.HostRangeError, match="read as a number by sub"):
        no64.jit(hc.read_argument, policy="strict")(arg)


def test_jit_training_step_under_strict() -> None:
    """The Flax/Optax step's sentinels meet only an iota: proven under strict. Optax's own
    INT32_MAX (its step counter's bound) on another line is no host sentinel."""
    import functools

    ref = hc.run_training(jax.jit)
    host.clear_host_records()
    got = hc.run_training(functools.partial(no64.jit, policy="strict"))
    for k, r in ref.items():
        assert same(encoded(got[k]), narrowed(encoded(r)), close=k.startswith("loss")) is None, k
    assert not [e for e in host.host_records() if e.kind == "unproven"]

