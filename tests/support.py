"""The one place the tests reach into no64's private modules.

The MLIR bindings (:mod:`no64.ir._mlir`) and the compatibility seams
(:mod:`no64.ir._compat` for the bindings, :mod:`no64.jax._compat` for JAX)
are private: the package's users never need them.  The tests do: they parse
and build modules in no64's MLIR context, trace in an x64 scope the same way
on every supported JAX release, read what the backend client receives, and
test the seams themselves.  They import those names from here, so that what
the tests depend on of no64's insides is listed in one file
(``tests/test_layers.py`` checks that no other test imports a private
module).  Programs the tests run in a child process import it too: the
tests put this folder on the child's ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from no64.ir import _compat as ir_compat
from no64.ir._mlir import ir, make_context, stablehlo
from no64.jax import _compat as jax_compat
from no64.jax._compat import backend_module_text, enable_x64
from no64.spec.walk import all_ops

__all__ = [
    # the MLIR bindings, and a context with every dialect a program may use
    "ir",
    "make_context",
    "stablehlo",
    # JAX: an x64 scope on every supported release; the text the backend compiles
    "enable_x64",
    "backend_module_text",
    # the seams themselves, for their own tests
    "ir_compat",
    "jax_compat",
    # the modules the XLA client compiles, as text
    "Intercept",
    # a benchmark script, as a module
    "load_benchmark",
    # the ops of a module, at any depth
    "ops_named",
    "op_names",
    # for a child process that imports this module
    "with_support",
]


def with_support(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this module's folder first on ``PYTHONPATH``, for a
    child process whose program imports it."""
    here = str(Path(__file__).parent)
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    return env


class Intercept:
    """Records, as text, every module the XLA client compiles in this process
    while it is active."""

    def __init__(self) -> None:
        self.modules: list[str] = []

    def __enter__(self) -> "Intercept":
        from jaxlib import _jax

        self._original = original = _jax.Client.compile_and_load
        modules = self.modules

        def compile_and_load(client: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
            modules.append(backend_module_text(computation))
            return original(client, computation, *args, **kwargs)

        _jax.Client.compile_and_load = compile_and_load
        return self

    def __exit__(self, *exc: Any) -> None:
        from jaxlib import _jax

        _jax.Client.compile_and_load = self._original


def ops_named(module: Any, name: str) -> list[Any]:
    """Every op called ``name`` in ``module``, at any depth, in order."""
    return [op for op in all_ops(module.operation) if op.name == name]


def op_names(module: Any) -> list[str]:
    """The name of every op in ``module``, at any depth, in order."""
    return [op.name for op in all_ops(module.operation)]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module (registered under ``name``, where
    dataclasses look their module up)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def split_dot_bound(row: Any, col: Any, row_hi_max: float, col_hi_max: float, path: Any = None) -> Any:
    """The bound ``no64.rules.pair_dot`` states for one output of a dot by
    exact slices: ``row`` and ``col`` the exact (``Fraction``) elements of
    a row of the lhs and a column of the rhs, ``*_hi_max`` the largest
    magnitude of their hi words (f32), ``path`` the datapath (f32 products
    if ``None``)::

        (1 + SUM_ACCURACY) max(TAU P, k phi(slices) 2**(a + b)) + SUM_ACCURACY P + 2**-125

    with ``P = (|A| |B|)_ij`` and ``2**a``, ``2**b`` the row's and column's
    scalings back."""
    import math
    from fractions import Fraction

    from no64.rules.pair_dot import SUM_ACCURACY, TAU, plan
    from no64.targets import F32_MATMUL

    pl = plan(len(row), path or F32_MATMUL)

    def exponent(top: float) -> int:
        return math.frexp(top)[1] - 1 if top >= 2.0**-126 else 0

    p = sum((abs(x * y) for x, y in zip(row, col)), Fraction(0))
    always = Fraction(len(row) * pl.phi(pl.slices)) * Fraction(2) ** (exponent(row_hi_max) + exponent(col_hi_max))
    worst = max(Fraction(TAU) * p, always)
    return (1 + Fraction(SUM_ACCURACY)) * worst + Fraction(SUM_ACCURACY) * p + Fraction(2) ** -125


def simulate_f32_lu(module: Any) -> int:
    """Each f32 ``LuDecomposition`` (XLA:TPU's own LU, which the CPU backend
    cannot run) of ``module`` replaced by a call of the same factorization
    written out in f32 StableHLO ops -- partial pivoting by the first
    largest magnitude, the factors, the 0-based pivots and the permutation
    they make -- so that a module converted for the TPU runs on the CPU
    with a simulated device f32 LU.  Returns how many were replaced."""
    from no64.ir._mlir import func
    from no64.rules import linalg
    from no64.spec.util import install_function

    done = 0
    with module.context:
        done = _simulate_f32_lu(module, func, linalg, install_function)
    return done


def _simulate_f32_lu(module: Any, func: Any, linalg: Any, install_function: Any) -> int:
    done = 0
    for op in ops_named(module, "stablehlo.custom_call"):
        t = ir.RankedTensorType(op.operands[0].type)
        if ir.StringAttr(op.attributes["call_target_name"]).value != "LuDecomposition" \
                or not isinstance(t.element_type, ir.F32Type):
            continue
        n = t.shape[-1]
        text = (linalg._getrf_text(n, tpu=True).replace("xf64>", "xf32>").replace("tensor<f64>", "tensor<f32>")
                .replace("0xFFF0000000000000", "0xFF800000"))
        name, _ = install_function(op, text, f"simulated.lu32.{n}")
        with ir.InsertionPoint(op), op.location:
            call = func.CallOp([r.type for r in op.results], ir.FlatSymbolRefAttr.get(name), list(op.operands))
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()
        done += 1
    return done


def without_solve_refinement() -> Any:
    """A context in which ``float_policy="pairs"`` computes a float64 solve
    by the float64 LU written out, as it does where the refinement fails
    (the refinement's fallback alone: the reference its run-time choice is
    checked against)."""
    import contextlib

    from no64.transforms import demote

    @contextlib.contextmanager
    def scope() -> Any:
        saved = demote.refine_solves
        demote.refine_solves = lambda root: []
        try:
            yield
        finally:
            demote.refine_solves = saved

    return scope()
