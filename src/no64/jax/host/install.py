"""Putting no64 at every point where JAX converts host data."""

from __future__ import annotations

import threading

from .patches import (
    install_aot_guard,
    install_arange,
    install_array,
    install_canonicalize_handlers,
    install_coerce_to_array,
    install_convert_element_type,
    install_device_put,
    install_fastpath_guard,
    install_int_aval,
    install_traced_constants,
    install_warning_levels,
    install_x64_creations,
)
from .sentinels import install_sentinel_reads

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
        install_canonicalize_handlers()
        install_traced_constants()
        install_int_aval()
        install_convert_element_type()
        install_coerce_to_array()
        install_array()
        install_device_put()
        install_arange()
        install_x64_creations()
        install_fastpath_guard()
        install_aot_guard()
        install_sentinel_reads()
        install_warning_levels()
        _installed = True
