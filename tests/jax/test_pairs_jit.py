"""``no64.jit(..., float_policy="pairs")``: the x64 program with float64
carried as f32 pairs, compiled and run by no64, against ``jax.jit`` with
x64 on."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import no64
from support import enable_x64, with_support


def f(x, n):
    # the variance by E[x^2] - E[x]^2 and a count: f64 and int64 outputs
    return jnp.mean(x * x) - jnp.mean(x) ** 2, jnp.sum(x > 1e4) + n


X = 1e4 + np.random.default_rng(3).standard_normal(10_000)


def test_restore_dtypes_returns_float64_at_pair_precision():
    with enable_x64(True):
        ref_v, ref_n = jax.jit(f)(X, np.int64(3))
    v, n = no64.jit(f, float_policy="pairs", restore_dtypes=True)(X, np.int64(3))
    assert isinstance(v, np.ndarray) and v.dtype == np.float64
    # (cancellation by a factor 1e8: the pairs' 2**-48 leave about 1e-7)
    assert abs(v - float(ref_v)) <= 1e-6 * abs(float(ref_v))
    assert n.dtype == np.int64 and int(n) == int(ref_n)
    # f32 alone loses the variance entirely
    v32, _ = no64.jit(f, restore_dtypes=True)(X, np.int64(3))
    assert abs(v32 - float(ref_v)) > 1e-2 * abs(float(ref_v))


def test_without_restore_outputs_are_packed_pairs():
    v, _ = no64.jit(f, float_policy="pairs")(X, np.int64(3))
    assert v.shape == (2,) and v.dtype == np.float32
    assert abs(no64.join_pairs(np.asarray(v)) - np.var(X)) <= 1e-6 * np.var(X)


def test_lower_reports_pairs():
    low = no64.jit(f, float_policy="pairs").lower(X, np.int64(3))
    assert low.report.float_policy == "pairs"
    assert low.report.pair_inputs == [0] and low.report.pair_outputs == [0]
    no64.check(low.module)


def test_unknown_float_policy():
    with pytest.raises(ValueError, match="float_policy"):
        no64.jit(f, float_policy="f64")


HOOK_SCRIPT = r'''
import jax, jax.numpy as jnp, numpy as np
import no64
from support import enable_x64

@jax.jit
def f(x):
    # float64 inside the program only (traced with x64 on): its result is
    # rounded to f32 at the end
    y = x.astype(jnp.float64)
    return ((y * 1e8 + 1.0) - y * 1e8).astype(jnp.float32)

with enable_x64(True):
    out = f(np.array([1.5, 3.25, 7.0, 0.1], dtype=np.float32))
print(no64.active_config().describe())
print(np.asarray(out).tolist())
'''


@pytest.mark.parametrize("policy, want", [("pairs", [1.0] * 4), ("f32", None)])
def test_hook_float_policy_from_environment(tmp_path, policy, want):
    import os
    import subprocess
    import sys

    script = tmp_path / "hook.py"
    script.write_text(HOOK_SCRIPT)
    env = with_support(dict(os.environ, NO64_PLATFORMS="cpu", NO64_FLOAT_POLICY=policy, JAX_PLATFORMS="cpu"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    described, values = r.stdout.strip().splitlines()[-2:]
    got = eval(values)  # noqa: S307 (a list of floats printed by the child)
    if want is not None:
        assert "float policy 'pairs'" in described
        assert got == want
    else:
        assert got != [1.0] * 4  # f32 loses the 1 next to 1e8


def test_hook_bad_float_policy_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, NO64_PLATFORMS="cpu", NO64_FLOAT_POLICY="double", JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", "import jax; jax.numpy.zeros(1)"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1
    assert [line for line in r.stderr.splitlines() if line.startswith("no64.errors.")] == [
        "no64.errors.ConfigurationError: no64: NO64_FLOAT_POLICY='double' is not one of f32, "
        "pairs; no64 refuses to compile for 'cpu' under another setting than the one meant"]


def test_hook_refuses_pairs_where_the_probe_differs(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "refuse.py"
    script.write_text(HOOK_SCRIPT.replace(
        "import no64\n",
        "import no64\nimport no64.jax.pair_probe as R\nimport no64.targets as T\n"
        "R._results[('cpu', T.IEEE_ARITHMETIC)] = 'TwoSum is not exact: 1.0 + 2.0 gave 3.0 and error 1.0'\n"))
    env = with_support(dict(os.environ, NO64_PLATFORMS="cpu", NO64_FLOAT_POLICY="pairs", JAX_PLATFORMS="cpu"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "PairArithmeticError: float_policy='pairs' needs f32 arithmetic the pair algorithms rest on" in r.stderr
    assert "the 'cpu' backend does not give it: TwoSum is not exact" in r.stderr


def _double(x):
    return x * 2.0


def test_host_values_outside_the_pairs_range_warn_at_the_call_line():
    x = np.array([1.0, 1e-40, 0.0, -0.0, np.inf, np.nan, 2.0**-100])
    with pytest.warns(no64.PairRangeWarning) as w:
        line = inspect.currentframe().f_lineno + 1
        got = no64.jit(_double, float_policy="pairs", restore_dtypes=True)(x)
    recs = [r for r in w if r.category is no64.PairRangeWarning]
    assert len(recs) == 1, [str(r.message) for r in recs]
    rec = recs[0]
    assert rec.filename == __file__ and rec.lineno == line
    assert "1e-40" in str(rec.message) and "index (1,)" in str(rec.message)
    with enable_x64(True):
        ref = np.asarray(jax.jit(_double)(x))
    ok = [0, 2, 3, 4, 5, 6]  # zeros, inf and NaN enter exactly, with their signs
    assert np.array_equal(got[ok], ref[ok], equal_nan=True)
    assert (np.signbit(got[ok]) == np.signbit(ref[ok])).all()
    assert got[1] == 0 and ref[1] == 2e-40  # what the warning said


@pytest.mark.parametrize("policy", ["strict", "exact"])
def test_host_values_outside_the_pairs_range_refused_under_strict_and_exact(policy):
    f = no64.jit(_double, float_policy="pairs", policy=policy)
    with pytest.raises(no64.PairRangeError) as e:
        line = inspect.currentframe().f_lineno + 1
        f(np.array([1.0, 2.0**-79 + 0.75 * 2.0**-126]))
    assert e.value.location.line == line and e.value.index == (1,)
    assert "fewer than 48 bits" in str(e.value)


def test_host_values_in_range_pass_silently():
    import warnings

    x = np.array([np.finfo(np.float32).max, 2.0**-78, 2.0**-126, -0.0, np.inf, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.PairRangeWarning)
        no64.jit(_double, float_policy="pairs", policy="strict")(x)


def test_split_pairs_warns_or_refuses():
    with pytest.warns(no64.PairRangeWarning, match="beyond float32's range"):
        no64.split_pairs(np.array([1e39]))
    with pytest.raises(no64.PairRangeError):
        no64.split_pairs(2.0**-149, strict=True)
    assert no64.split_pairs(np.array([0.0, np.inf]), strict=True).shape == (2, 2)


TINY_SCRIPT = r'''
import warnings
import jax, jax.numpy as jnp, numpy as np
warnings.simplefilter("always")

@jax.jit
def scale(x):
    return x * 2.0

print(float(scale(np.array([1e-40, 1.0]))[0]))  # TINY CALL
'''


@pytest.mark.parametrize("policy", ["default", "strict"])
def test_hook_names_host_data_pairs_cannot_hold(tmp_path, policy):
    """Under NO64_FLOAT_POLICY=pairs a float64 host value below f32's
    smallest normal (its pair would flush) is warned of at the call's line,
    or refused under the strict policy."""
    import os
    import subprocess
    import sys

    script = tmp_path / "tiny.py"
    script.write_text(TINY_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", NO64_FLOAT_POLICY="pairs", NO64_POLICY=policy, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    line = next(i for i, t in enumerate(TINY_SCRIPT.splitlines(), 1) if t.endswith("# TINY CALL"))
    if policy == "strict":
        assert r.returncode == 1, r.stderr[-2000:]
        assert "PairRangeError" in r.stderr and f"{script}:{line}" in r.stderr, r.stderr[-2000:]
    else:
        assert r.returncode == 0, r.stderr[-2000:]
        assert f"{script}:{line}: PairRangeWarning" in r.stderr, r.stderr[-2000:]


#: float64 values at and beyond the 64-bit integer bounds: negatives, the largest
#: doubles below 2**63 and 2**64, 2**63 and 2**64 themselves and beyond, fractions
#: beside 2**52 and 2**32, NaN and the infinities
F64_TO_INT = np.array([-1.0, -0.5, -0.0, 0.75, 2.0**52 + 1.5, 2.0**53 + 2, -(2.0**53) - 2, 2.0**32 + 0.5,
                       2.0**63 - 1024, 2.0**63, 2.0**63 + 2048, 2.0**64 - 2048, 2.0**64, 2.0**65, 1.5e19,
                       -(2.0**63), -(2.0**63) - 2048, -(2.0**64), 3e38, -3e38, np.nan, np.inf, -np.inf])


@pytest.mark.parametrize("dtype", [jnp.uint64, jnp.int64])
def test_float64_to_64bit_integers_on_pairs(dtype):
    """float64 -> uint64 / int64 on pairs is the x64 program's convert bit for bit:
    truncated toward zero, saturated beyond the type's range (2**64 - 1 for uint64,
    a constant the bindings take only as its bits read signed), NaN to 0."""
    def to_int(v):
        return v.astype(dtype), (v.astype(dtype) // 3).astype(dtype)

    with enable_x64(True):
        want = [np.asarray(w) for w in jax.jit(to_int)(F64_TO_INT)]
    got = no64.jit(to_int, float_policy="pairs", policy="exact", restore_dtypes=True)(F64_TO_INT)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tolist() == w.tolist()
    # not vacuous: saturation at both ends is in the values
    assert int(want[0].max()) == np.iinfo(dtype).max and int(want[0].min()) == np.iinfo(dtype).min


#: float64 values f32 cannot tell apart (it spaces values 8 apart near 1e8):
#: the differences from 1e8 are exact in pairs (48 bits resolve 2**-21 there)
CLOSE = np.array([1e8 + 0.5, 1e8 + 2.0**-20, 1e8 - 0.25, 1e8])


def _minus_1e8(v):
    return v - 1e8


def _resolution_events():
    return [e for e in no64.host_records() if e.kind == "float-inexact" and e.location.file == __file__]


@pytest.mark.parametrize("float_policy", ["pairs", "f32"])
def test_jit_warns_of_lost_resolution_only_where_f32_loses_it(float_policy):
    """float64 arguments enter pairs from their float64 values: no64.jit
    warns that f32 loses their differences, and records their rounding to
    float32, under float_policy="f32" only."""
    import warnings

    from no64.jax import host

    host.clear_host_records()
    host.clear_warned()
    f = no64.jit(_minus_1e8, float_policy=float_policy, restore_dtypes=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        got = f(CLOSE)
    lost = [r for r in w if issubclass(r.category, no64.FloatPrecisionWarning)]
    with enable_x64(True):
        ref = np.asarray(jax.jit(_minus_1e8)(CLOSE))
    assert got.dtype == np.float64
    if float_policy == "pairs":
        assert not lost, [str(r.message) for r in lost]
        assert not _resolution_events(), no64.host_records()
        # within the pairs' bound: the inputs' 2**-48 relative rounding (here exact)
        assert np.all(np.abs(got - ref) <= 2.0**-48 * 1e8), (got, ref)
        assert got.tolist() == ref.tolist() == [0.5, 2.0**-20, -0.25, 0.0]
    else:
        assert [(r.filename, r.lineno) for r in lost] == [(__file__, line)]
        assert "f32 spaces values there 8 apart" in str(lost[0].message)
        assert [e.location.line for e in _resolution_events()] == [line]
        assert got.tolist() != ref.tolist()  # what the warning said


def _times_one(v):
    return v * 1.0


def test_jit_pairs_maps_float64_sentinels_as_f32_does():
    """float64's largest finite value and its negation entering pairs map to
    float32's, as under float_policy="f32" and the compile hook, recorded."""
    from no64.jax import host

    big = np.finfo(np.float64).max
    x = np.array([big, -big, 2.0**-20 + 1.0, -0.0])
    host.clear_host_records()
    got = no64.jit(_times_one, float_policy="pairs", restore_dtypes=True)(x)
    want = no64.jit(_times_one, restore_dtypes=True)(x)
    f32max = float(np.finfo(np.float32).max)
    assert got[:2].tolist() == want[:2].tolist() == [f32max, -f32max]
    with enable_x64(True):
        ref = np.asarray(jax.jit(_times_one)(x))
    assert got[2] == ref[2] and np.signbit(got[3]) and got[3] == 0
    kinds = {e.kind for e in host.host_records() if e.location.file == __file__}
    assert kinds == {"sentinel"}, host.host_records()


HOOK_RESOLUTION_SCRIPT = r'''
import warnings
import jax, numpy as np
warnings.simplefilter("always")

@jax.jit
def minus(v):
    return v - 1e8

print(np.asarray(minus(np.array([1e8 + 0.5, 1e8 + 2.0**-20, 1e8 - 0.25, 1e8]))).tolist())  # THE CALL
'''


@pytest.mark.parametrize("policy", ["pairs", "f32"])
def test_hook_warns_of_lost_resolution_only_where_f32_loses_it(tmp_path, policy):
    """The compile hook with x64 asked for: float64 numpy arguments enter
    pairs under NO64_FLOAT_POLICY=pairs, with no warning that f32 loses
    them; under f32 they are rounded and warned of at the call's line."""
    import os
    import subprocess
    import sys

    script = tmp_path / "resolution.py"
    script.write_text(HOOK_RESOLUTION_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", NO64_FLOAT_POLICY=policy, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(i for i, t in enumerate(HOOK_RESOLUTION_SCRIPT.splitlines(), 1) if t.endswith("# THE CALL"))
    got = eval(r.stdout.strip().splitlines()[-1])  # noqa: S307 (a list of floats printed by the child)
    with enable_x64(True):
        ref = np.asarray(jax.jit(_minus_1e8)(CLOSE)).tolist()
    if policy == "pairs":
        assert "FloatPrecisionWarning" not in r.stderr, r.stderr[-2000:]
        # (the output is float32: the pairs' exact differences, rounded once)
        assert got == np.float32(ref).tolist()
    else:
        assert f"{script}:{line}: FloatPrecisionWarning" in r.stderr, r.stderr[-2000:]
        assert got != np.float32(ref).tolist()
