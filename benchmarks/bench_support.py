"""The one place the benchmarks reach into no64's private modules.

The benchmarks build and walk MLIR modules in no64's context (the MLIR
bindings, :mod:`no64.ir._mlir`) and trace the 64-bit programs they time in
an x64 scope that works the same on every supported JAX release (the JAX
seam, :mod:`no64.jax._compat`).  Users of no64 never need either; everything
else a benchmark uses is no64's public API (compiling a module for a device:
:func:`no64.jax.reference.compile_module`).  A benchmark imports these names
from here, its own folder put on ``sys.path`` first (also when a test loads
it from its file).
"""

from __future__ import annotations

from no64.ir._mlir import ir, make_context
from no64.jax._compat import enable_x64

__all__ = ["enable_x64", "ir", "make_context"]
