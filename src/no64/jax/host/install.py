"""Putting no64 at every point where JAX converts host data."""

from __future__ import annotations

import threading

from .patches import (
    _install_aot_guard,
    _install_arange,
    _install_array,
    _install_canonicalize_handlers,
    _install_coerce_to_array,
    _install_convert_element_type,
    _install_device_put,
    _install_fastpath_guard,
    _install_int_aval,
    _install_traced_constants,
    _install_warning_levels,
    _install_x64_creations,
)
from .sentinels import _install_sentinel_reads

_installed = False
_install_lock = threading.Lock()


def install_hooks() -> None:
    """Put no64 at every point where JAX converts host data (idempotent)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        _install_canonicalize_handlers()
        _install_traced_constants()
        _install_int_aval()
        _install_convert_element_type()
        _install_coerce_to_array()
        _install_array()
        _install_device_put()
        _install_arange()
        _install_x64_creations()
        _install_fastpath_guard()
        _install_aot_guard()
        _install_sentinel_reads()
        _install_warning_levels()
        _installed = True
