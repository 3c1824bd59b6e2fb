"""Runs the pair probe (:mod:`no64.transforms.pair_probe`) once per platform."""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np

from ..errors import PairArithmeticError
from ..transforms import pair_probe as Q

__all__ = ["require_ieee_f32", "probe_result"]

_lock = threading.Lock()
#: platform -> None (IEEE) or where the probe differed
_results: dict[str, str | None] = {}


def probe_result(backend: Any, device: Any) -> str | None:
    """Run the probe on ``device`` of ``backend`` (once per platform).  On
    the CPU, warn if XLA's compiler may take minutes on pairs there
    (:func:`no64.jax._compat.late_cpu_guard_warning`)."""
    platform = device.platform
    with _lock:
        if platform in _results:
            return _results[platform]
    from ._compat import late_cpu_guard_warning

    slow = late_cpu_guard_warning() if platform == "cpu" else None
    if slow is not None:
        warnings.warn(f"no64: {slow}", RuntimeWarning, stacklevel=2)
    import jax
    import jax.extend.backend

    from ._compat import device_list

    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object))
    exe = backend.compile_and_load(Q.probe_text(), executable_devices=device_list((device,)),
                                   compile_options=options)
    args = [jax.device_put(a, device) for a in Q.probe_inputs()]
    outs = [np.asarray(o) for o in exe.execute(args)]
    result = Q.check_words(outs)
    with _lock:
        _results[platform] = result
    return result


def require_ieee_f32(backend: Any, device: Any) -> None:
    """Raise :class:`~no64.PairArithmeticError` if the probe's words differ
    from IEEE f32's on ``device``'s platform."""
    problem = probe_result(backend, device)
    if problem is not None:
        raise PairArithmeticError(
            f"float_policy='pairs' needs IEEE f32 arithmetic step by step, and the "
            f"'{device.platform}' backend does not keep it (fast-math?): {problem}; "
            "use float_policy='f32' there"
        )
