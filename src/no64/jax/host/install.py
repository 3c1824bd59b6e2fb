"""Putting no64 at every point where JAX converts host data."""

from __future__ import annotations

from ..interception import install
from .canonical import install_canonicalize_handlers, install_int_aval, install_traced_constants
from .conversions import install_arange, install_array, install_coerce_to_array, install_convert_element_type
from .guards import install_aot_guard, install_fastpath_guard, install_warning_levels
from .sentinels import install_sentinel_reads
from .x64_dtypes import install_device_put, install_x64_creations


def install_hooks() -> None:
    """Put no64 at every point where JAX converts host data (idempotent): the
    points of the group ``host`` of :data:`no64.jax.interception.POINTS`, in
    its order."""
    install("host", {
        "canonicalize-handlers": install_canonicalize_handlers,
        "traced-constants": install_traced_constants,
        "int-aval": install_int_aval,
        "convert-element-type": install_convert_element_type,
        "coerce-to-array": install_coerce_to_array,
        "array": install_array,
        "device-put": install_device_put,
        "arange": install_arange,
        "x64-creations": install_x64_creations,
        "fastpath-guard": install_fastpath_guard,
        "aot-guard": install_aot_guard,
        "sentinel-reads": install_sentinel_reads,
        "warning-levels": install_warning_levels,
    })
