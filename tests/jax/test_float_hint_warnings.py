"""Under the compile hook and ``no64.jit``, each float hint is a
:class:`no64.FloatPrecisionWarning` at the user's line, once per line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax import intent
from support import enable_x64


def tiny_ratio(x):
    return (x * 1e-300) / 1e-300  # RATIO


def line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, t in enumerate(f, 1) if t.rstrip().endswith(marker))


def test_no64_jit_warns_once_per_line():
    intent.clear_warned()
    g = no64.jit(tiny_ratio)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = g(np.ones(3))
        g(np.ones(4))  # another shape, another compile: the line was warned about
    hints = [w for w in got if issubclass(w.category, no64.FloatPrecisionWarning)]
    assert len(hints) == 1, [str(w.message) for w in got]
    assert hints[0].filename == __file__ and hints[0].lineno == line_of("# RATIO")
    assert "[underflow]" in str(hints[0].message) and "does not help" in str(hints[0].message)
    assert not np.any(np.isclose(np.asarray(out), 1.0))  # the value the warning is about


def newton_sqrt(x):
    def cond(state):
        y, i = state
        return jnp.any(jnp.abs(y * y - x) > 1e-12 * x) & (i < 60)  # TOLERANCE

    return lax.while_loop(cond, lambda s: (0.5 * (s[0] + x / s[0]), s[1] + 1), (x, jnp.int32(0)))  # LOOP


def jax_line_of_the_condition() -> int:
    """The line JAX's own x64 lowering gives the loop condition's compare:
    its own (JAX 0.8 on), or the ``while_loop`` call's (0.7 locates a
    loop's body at the loop)."""
    with enable_x64(True):
        text = jax.jit(newton_sqrt).lower(np.ones(3)).as_text(debug_info=True)
    here = os.path.basename(__file__)
    own = f'{here}":{line_of("# TOLERANCE")}:'
    return line_of("# TOLERANCE") if own in text else line_of("# LOOP")


def test_policy_exact_warns_where_its_f32_floats_change_the_result():
    """``policy="exact"`` makes the integers exact and leaves float64 to
    f32: a tolerance f32 cannot reach is named at its line there too (the
    loop then runs to its cap, where the x64 program stops after a few
    steps)."""
    intent.clear_warned()
    x = np.array([2.0, 10.0, 12345.0])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        y, steps = no64.jit(newton_sqrt, policy="exact", restore_dtypes=True)(x)
    hints = [w for w in got if issubclass(w.category, no64.FloatPrecisionWarning)]
    assert len(hints) == 1, [str(w.message) for w in got]
    assert hints[0].filename == __file__ and hints[0].lineno == jax_line_of_the_condition()
    assert "[tolerance]" in str(hints[0].message)
    assert int(steps) == 60  # what the warning is about
    with enable_x64(True):
        assert int(jax.jit(newton_sqrt)(x)[1]) < 60


def test_error_filter_turns_it_into_a_failure_and_benign_programs_are_quiet():
    intent.clear_warned()
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.FloatPrecisionWarning)
        with pytest.raises(no64.FloatPrecisionWarning, match="test_float_hint_warnings.py:"):
            no64.jit(tiny_ratio)(np.ones(2))
        out = no64.jit(lambda x: jnp.mean((x - jnp.mean(x)) ** 2))(np.linspace(0.9, 1.1, 8))
        assert float(out) == pytest.approx(np.var(np.linspace(0.9, 1.1, 8)), rel=1e-5)


def run_under_hook(script: Any, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` as NO64_PLATFORMS=cpu runs it, with x64 on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NO64_")}
    env.update(NO64_PLATFORMS="cpu", JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu", **extra)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_under_no64_platforms_the_user_sees_the_line(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import warnings
        import jax, jax.numpy as jnp, numpy as np
        warnings.simplefilter("always")

        @jax.jit
        def intervals(x):
            t = 1.7e9 + jnp.arange(256) * 1e-4
            return (t[1:] - t[:-1]) * x

        print(intervals(np.ones(255))[0])
    """))
    proc = run_under_hook(script, NO64_FLOAT_HINTS="on")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{script}:9: FloatPrecisionWarning" in proc.stderr, proc.stderr[-3000:]
    assert "[cancellation]" in proc.stderr and 'float_policy="pairs"' in proc.stderr
    # off by default under the hook (the analysis costs about as much as the pass)
    quiet = run_under_hook(script)
    assert quiet.returncode == 0 and quiet.stdout == proc.stdout, quiet.stderr[-3000:]
    assert "FloatPrecisionWarning" not in quiet.stderr, quiet.stderr[-3000:]


#: Seconds since 1970, 0.1 ms apart: f32 holds them 128 s apart.
STAMPS = 1712345678.9 + np.arange(4096) * 1e-4


def test_float64_inputs_f32_cannot_tell_apart_are_named_at_the_call():
    intent.clear_warned()
    intervals = no64.jit(jnp.diff)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        for stamps in (STAMPS, STAMPS + 1.0):  # twice from one line: one warning
            out = intervals(stamps)  # STAMPS CALL
        # values f32 resolves: nothing to say
        no64.jit(jnp.diff)(np.linspace(0.0, 1.0, 4096))
        no64.jit(jnp.diff)(np.array([1712345678.9, 1712345678.9]))
    hints = [w for w in got if issubclass(w.category, no64.FloatPrecisionWarning)]
    assert len(hints) == 1, [str(w.message) for w in got]
    assert hints[0].filename == __file__ and hints[0].lineno == line_of("# STAMPS CALL")
    msg = str(hints[0].message)
    assert "argument a" in msg and "128 apart" in msg and 'float_policy="pairs"' in msg
    assert np.all(np.asarray(out) == 0.0)  # what the warning is about: every interval lost
    # the host record says it too (the audit and no64.host_records() show it)
    events = [e for e in no64.host_records() if "differences are lost" in e.detail]
    assert events and events[0].location.line == line_of("# STAMPS CALL")


def test_complex128_inputs_are_judged_part_by_part_without_numpy_warnings():
    """A complex128 argument's real and imaginary parts are judged as float64
    data, each on its own; numpy's ComplexWarning (an error under
    ``filterwarnings = error``) is not raised by no64's judgment."""
    intent.clear_warned()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        warnings.simplefilter("always", no64.FloatPrecisionWarning)
        quiet = no64.jit(jnp.diff)(np.array([0.1 + 0.2j, 0.3 - 0.7j, 0.5 + 0.25j]))
        no64.jit(jnp.diff)(1j * STAMPS)  # STAMPS IMAGINARY CALL
    np.testing.assert_allclose(np.asarray(quiet), [0.2 - 0.9j, 0.2 + 0.95j], rtol=1e-6)
    hints = [w for w in got if issubclass(w.category, no64.FloatPrecisionWarning)]
    assert len(hints) == 1, [str(w.message) for w in got]
    assert hints[0].lineno == line_of("# STAMPS IMAGINARY CALL")


def test_under_no64_platforms_float64_inputs_f32_cannot_tell_apart_are_named(tmp_path):
    script = tmp_path / "stamps.py"
    script.write_text(textwrap.dedent("""
        import warnings
        import jax, jax.numpy as jnp, numpy as np
        warnings.simplefilter("always")

        intervals = jax.jit(jnp.diff)
        stamps = 1712345678.9 + np.arange(4096) * 1e-4
        out = intervals(stamps)
        print(float(out.max()))
    """))
    proc = run_under_hook(script)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{script}:8: FloatPrecisionWarning" in proc.stderr, proc.stderr[-3000:]
    assert "differences are lost" in proc.stderr and 'float_policy="pairs"' in proc.stderr
    assert proc.stdout.strip() == "0.0"  # every interval lost in f32
