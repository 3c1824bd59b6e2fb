"""When no64 narrows host values (the policy in force), and the dtypes it narrows."""

from __future__ import annotations

import os

import numpy as np

from ...ir.types import NARROWED_DTYPES as NARROWED
from ...kinds import Mode
from .._compat import backends_started, x64_state
from ..state import ALL_PLATFORMS, STATE, default_platform

INT64 = np.dtype(np.int64)
UINT64 = np.dtype(np.uint64)
FLOAT64 = np.dtype(np.float64)
COMPLEX128 = np.dtype(np.complex128)
INT32 = np.dtype(np.int32)
UINT32 = np.dtype(np.uint32)
FLOAT32 = np.dtype(np.float32)
COMPLEX64 = np.dtype(np.complex64)

#: the 32-bit dtypes no64 gives 64-bit ones (NARROWED: 64-bit dtype -> its 32-bit one)
NARROWED_IMAGES = frozenset(np.dtype(d) for d in NARROWED.values())
#: numpy dtypes whose arguments must not get jaxlib's C++ fast path: the
#: 64-bit ones and their 32-bit images (jaxlib keys its C++ cache by the
#: canonical dtype, so an int64 array would be served -- and cast in C++,
#: unchecked -- by the entry an int32 array made).
NO_FAST_PATH = frozenset(NARROWED) | NARROWED_IMAGES


def host_policy() -> str | None:
    """The integer policy for host values in this thread, or ``None`` when
    no64 does not narrow them (x64 on, or no64 inactive for the default
    backend and outside :func:`no64.jit`).

    While the x64 meaning of a program whose 32-bit trace refused a host
    integer is taken (:mod:`no64.jax.intent`), the policy it forces
    (``STATE.thread.host_policy``) replaces a policy that is not ``None``.
    """
    policy = _host_policy()
    forced = STATE.thread.host_policy
    return forced if forced is not None and policy is not None else policy


def _host_policy() -> str | None:
    if x64_state().value:
        return None
    config = STATE.active_config()
    if config is None or config.mode is Mode.OFF:
        return None
    if ALL_PLATFORMS in config.platforms or STATE.x64_off_by_no64:
        return config.integer_policy
    covered = STATE.default_covered.get(config)
    if covered is None:
        started = backends_started()
        default = default_platform(started)
        # Before the backends start, no64 turned x64 off on the assumption
        # that a listed platform may become the default.
        covered = True if default is None else config.applies_to(default)
        if started:
            STATE.default_covered[config] = covered
    return config.integer_policy if covered else None


#: no64's own package directory (its frames are not the user's)
OWN_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
