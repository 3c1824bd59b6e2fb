"""Runs the pair probe (:mod:`no64.transforms.pair_probe`) once per platform
and declared arithmetic."""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from ..errors import PairArithmeticError
from ..targets import IEEE_ARITHMETIC, Arithmetic
from ..transforms import pair_probe as Q

__all__ = ["require_pair_arithmetic", "probe_result"]

_lock = threading.Lock()
#: (platform, arithmetic) -> None (the pairs' properties hold) or what failed
_results: dict[tuple[str, Arithmetic], str | None] = {}


def probe_result(backend: Any, device: Any, arithmetic: Arithmetic = IEEE_ARITHMETIC) -> str | None:
    """Run the probe on ``device`` of ``backend`` against ``arithmetic``
    (once per platform and arithmetic).  On the CPU, warn if XLA's compiler
    may take minutes on pairs there
    (:func:`no64.jax._compat.late_cpu_guard_warning`)."""
    platform = device.platform
    key = (platform, arithmetic)
    with _lock:
        if key in _results:
            return _results[key]
    declared = Q.declared_problem(arithmetic)
    if declared is not None:
        with _lock:
            _results[key] = declared
        return declared
    from ._compat import late_cpu_guard_warning

    slow = late_cpu_guard_warning() if platform == "cpu" else None
    if slow is not None:
        warnings.warn(f"no64: {slow}", RuntimeWarning, stacklevel=2)
    import jax
    import jax.extend.backend

    from ._compat import device_list

    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object))
    exe = backend.compile_and_load(Q.probe_text(arithmetic), executable_devices=device_list((device,)),
                                   compile_options=options)
    args = [jax.device_put(a, device) for a in Q.probe_inputs()]
    outs = [np.asarray(o) for o in exe.execute(args)]
    result = Q.check(outs, arithmetic)
    with _lock:
        _results[key] = result
    return result


def require_pair_arithmetic(backend: Any, device: Any, arithmetic: Arithmetic = IEEE_ARITHMETIC) -> None:
    """Raise :class:`~no64.PairArithmeticError` if ``device``'s f32 lacks a
    property the pair algorithms rest on, as its profile declares its
    arithmetic (``arithmetic``)."""
    problem = probe_result(backend, device, arithmetic)
    if problem is not None:
        raise PairArithmeticError(
            f"float_policy='pairs' needs f32 arithmetic the pair algorithms rest on (TwoSum and TwoProduct "
            f"exact, quotients and roots within the declared ulps), and the '{device.platform}' backend "
            f"does not give it: {problem}; use float_policy='f32' there"
        )
