"""Neuron's control-flow limits: no ``lax.cond`` and no loop without a static trip count
(aws-neuron/aws-neuron-sdk release-notes/components/jax.rst, known issues).

The user's ``cond``/``switch`` (``stablehlo.case``) and a ``while`` whose trip count is
not fixed are refused at the user's line with the vendor's words -- by ``no64 check
--target``, by ``no64 convert --target`` (a warning, an error under ``--policy
strict``) and by the compile hook (a ``TargetWarning``, a ``TargetError`` under
strict); a loop counted from a constant to a constant (``fori_loop`` with constant
bounds, ``scan``) is allowed, and so are no64's own loops (LAPACK written out), which
are counted so.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from test_targets import lowered

import no64
from no64.cli import main
from no64.jax.reference import run_module
from no64.kinds import OpForm
from no64.targets import target
from no64.targets.legality import check_target, trip_count
from support import enable_x64, ir, make_context, ops_named

pytestmark = pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning")

NEURON, TRN2 = target("neuron"), target("neuron-trn2")
X = np.float32(1.5)
LINE = Path(__file__).name


def fixed_loop(v: jax.Array) -> jax.Array:
    return lax.fori_loop(0, 10, lambda i, v: v * 2 + i, v)


def counted_down(v: jax.Array) -> jax.Array:
    return lax.fori_loop(3, 17, lambda i, v: v + i, v) + lax.scan(lambda c, t: (c + t, c), v, jnp.arange(7.0))[0]


def data_loop(v: jax.Array) -> jax.Array:
    return lax.while_loop(lambda v: v < 100, lambda v: v * 2, v)  # refused: its trip count depends on v


def input_bound(v: jax.Array, n: jax.Array) -> jax.Array:
    return lax.fori_loop(0, n, lambda i, v: v * 2 + i, v)  # refused: bounded by an input


def branch(v: jax.Array) -> jax.Array:
    return lax.cond(v > 0, lambda v: v + 1, lambda v: v - 1, v)  # refused: lax.cond


def switch(v: jax.Array) -> jax.Array:
    return lax.switch(2, [lambda v: v, lambda v: v + 1, lambda v: v * 3], v)  # refused: a case


def _refused(m: ir.Module, t: Any = NEURON) -> list[tuple[str, str, int | None]]:
    return [(f.op, f.detail, f.location.line) for f in check_target(m, t, types=False)]


def _line_of(fn: Callable[..., Any], marker: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def test_the_profiles_declare_the_vendors_limits() -> None:
    for t in (NEURON, TRN2):
        forms = {r.form: r for r in t.refuses}
        assert forms[OpForm.BRANCH].reason == "jax.lax.cond is not supported"
        assert forms[OpForm.LOOP].reason == "Dynamic loops are not supported for jax.lax.while_loop"
        assert forms[OpForm.LOOP].when == "dynamic-trip-count"
        assert all("release-notes/components/jax.rst" in forms[f].source for f in (OpForm.BRANCH, OpForm.LOOP))


@pytest.mark.parametrize("fn", [fixed_loop, counted_down])
def test_a_loop_with_a_static_trip_count_is_allowed(fn: Callable[..., Any]) -> None:
    m = lowered(fn, X)
    assert ops_named(m, "stablehlo.while") and _refused(m) == [] and _refused(m, TRN2) == []


@pytest.mark.parametrize("fn, args, marker, reason", [
    (data_loop, (X,), "lax.while_loop", "Dynamic loops are not supported for jax.lax.while_loop (its trip count is "
                                        "not static)"),
    (input_bound, (X, 5), "lax.fori_loop", "Dynamic loops are not supported for jax.lax.while_loop (its trip "
                                           "count is not static)"),
    (branch, (X,), "lax.cond", "jax.lax.cond is not supported"),
    (switch, (X,), "lax.switch", "jax.lax.cond is not supported"),
])
def test_refused_at_the_users_line(fn: Callable[..., Any], args: tuple[Any, ...], marker: str, reason: str) -> None:
    m = lowered(fn, *args)
    line = _line_of(fn, marker)
    for t in (NEURON, TRN2):
        (finding,) = check_target(m, t, types=False)
        assert finding.kind == "refused" and finding.detail == reason
        assert finding.location.file is not None and finding.location.file.endswith(LINE)
        assert finding.location.line == line
        assert "release-notes/components/jax.rst" in finding.source


def test_a_librarys_loop_is_refused_at_the_call() -> None:
    """jnp.gcd loops until the remainder is 0 (in a private function JAX lowers with no
    user frame): refused at the line that calls it."""
    a = np.array([12, 18, 7], np.int32)
    m = lowered(lambda a, b: jnp.gcd(a, b), a, a[::-1].copy())
    ((op, detail, line),) = _refused(m)
    assert op == "stablehlo.while" and "Dynamic loops" in detail
    assert line is not None and check_target(m, NEURON)[0].location.file.endswith(LINE)


TRIP_COUNTS = """
func.func @main(%x: tensor<f32>) -> tensor<f32> {{
  %start = stablehlo.constant dense<{start}> : tensor<i32>
  %r:2 = stablehlo.while(%k = %start, %v = %x) : tensor<i32>, tensor<f32>
  cond {{
    %n = stablehlo.constant dense<{bound}> : tensor<i32>
    %c = stablehlo.compare {direction}, {lhs}, {rhs}, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }} do {{
    %s = stablehlo.constant dense<{step}> : tensor<i32>
    %k1 = stablehlo.{stepping} %k, %s : tensor<i32>
    %v1 = stablehlo.add %v, %v : tensor<f32>
    stablehlo.return %k1, %v1 : tensor<i32>, tensor<f32>
  }}
  return %r#1 : tensor<f32>
}}
"""


@pytest.mark.parametrize("start, bound, direction, step, stepping, swapped, want", [
    (0, 10, "LT", 1, "add", False, 10),
    (0, 10, "LE", 3, "add", False, 4),       # 0, 3, 6, 9
    (10, 0, "GT", 2, "subtract", False, 5),  # 10, 8, 6, 4, 2
    (10, 0, "GE", -1, "add", False, 11),
    (0, 12, "NE", 4, "add", False, 3),
    (0, 10, "NE", 4, "add", False, None),    # never equal: runs forever
    (0, 10, "GT", 1, "add", True, 10),       # 10 > k
    (5, 3, "LT", 1, "add", False, 0),
    (0, 10, "LT", -1, "add", False, None),   # steps away from the bound
    (0, 10, "EQ", 1, "add", False, None),
])
def test_trip_counts(start: int, bound: int, direction: str, step: int, stepping: str, swapped: bool,
                     want: int | None) -> None:
    lhs, rhs = ("%n", "%k") if swapped else ("%k", "%n")
    text = TRIP_COUNTS.format(start=start, bound=bound, direction=direction, step=step, stepping=stepping,
                              lhs=lhs, rhs=rhs)
    m = ir.Module.parse(text, make_context())
    (loop,) = ops_named(m, "stablehlo.while")
    assert trip_count(loop) == want
    if want is not None:  # the count is what the loop does
        (got,) = run_module(m, [np.float32(1.0)], strict=False)
        assert got == np.float32(2.0**want)
    assert bool(_refused(m)) == (want is None)


def test_a_counter_not_started_by_a_constant_is_not_static() -> None:
    text = TRIP_COUNTS.format(start=0, bound=10, direction="LT", step=1, stepping="add", lhs="%k", rhs="%n")
    text = text.replace("%r:2 = stablehlo.while(%k = %start", "%i = stablehlo.convert %x : (tensor<f32>) -> "
                        "tensor<i32>\n  %r:2 = stablehlo.while(%k = %i")
    m = ir.Module.parse(text, make_context())
    assert trip_count(ops_named(m, "stablehlo.while")[0]) is None


def test_check_and_convert_name_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "cond.mlir", tmp_path / "out.mlir"
    src.write_text(lowered(branch, X).operation.get_asm(enable_debug_info=True))
    assert main(["check", "--target", "neuron", str(src)]) == 1
    said = capsys.readouterr().out
    assert f"{LINE}:{_line_of(branch, 'lax.cond')}" in said and "jax.lax.cond is not supported" in said
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron"]) == 0
    assert "jax.lax.cond is not supported" in capsys.readouterr().err
    out.unlink()
    assert main(["convert", str(src), "-o", str(out), "--target", "neuron", "--policy", "strict"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "jax.lax.cond is not supported" in err[0] and not out.exists()


def test_the_hook_refuses_them_at_the_line(restore_global: None) -> None:
    from no64.jax import hook

    hook.prepare._warned_target.clear()  # each line is warned of once per process
    no64.install("cpu", target="neuron")
    with pytest.warns(no64.TargetWarning, match="jax.lax.cond is not supported") as caught:
        jax.jit(branch)(X)
    assert any(w.filename.endswith(LINE) and w.lineno == _line_of(branch, "lax.cond") for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.TargetWarning)
        jax.jit(fixed_loop)(X)  # a fixed trip count: nothing said
    no64.install("cpu", target="neuron", policy="strict")
    with pytest.raises(no64.TargetError, match="Dynamic loops are not supported for jax.lax.while_loop"):
        jax.jit(data_loop)(X)


def test_no64s_own_loops_are_counted() -> None:
    """float64 LU and triangular solves written out (float_policy="pairs") and a word
    emulation (policy="exact"): no branch and no loop without a static trip count for
    Neuron, however many loops no64 writes."""
    a = np.eye(5) * 4 + np.arange(25.0).reshape(5, 5) / 25
    with enable_x64(True):
        text = jax.jit(lambda a, b, i, j: (jnp.linalg.solve(a, b), i // j, (i * j) >> 40)).lower(
            a, a[0], np.arange(5, dtype=np.int64), np.arange(1, 6, dtype=np.int64)).as_text(debug_info=True)
    pairs = ir.Module.parse(text, make_context())
    no64.demote(pairs, float_policy="pairs", policy="exact", target="neuron")
    loops = ops_named(pairs, "stablehlo.while")
    assert loops and all(trip_count(w) is not None for w in loops)
    assert not ops_named(pairs, "stablehlo.case") and not ops_named(pairs, "stablehlo.if")
    assert [f for f in check_target(pairs, NEURON, types=False) if f.op in ("stablehlo.while", "stablehlo.case")] \
        == []
