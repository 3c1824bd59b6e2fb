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
