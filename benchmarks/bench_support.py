"""What the benchmarks share: the one place they reach into no64's private
modules, and how a benchmark reports its run.

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

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from no64.ir._mlir import ir, make_context
from no64.jax._compat import enable_x64

__all__ = ["enable_x64", "ir", "make_context", "report_run"]


def report_run(results: Sequence[Any], table: Callable[[Any, str], None], header: str, *, platform: str,
               repeats: int, json_path: str | None) -> None:
    """Print ``results`` (dataclasses) with ``table``, under ``header``
    followed by how often each program ran and the machine's load; given
    ``json_path``, write the run there as JSON: where and how often it ran,
    the load, and the results."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table(results, f"{header} median of {repeats}, load average {load:.1f} on {os.cpu_count()} CPUs")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"platform": platform, "repeats": repeats, "load_average": load,
                       "results": [asdict(r) for r in results]}, f, indent=2)
