"""no64: make StableHLO and HLO programs free of 64-bit types, exactly.

Accelerators such as AWS Neuron/Trainium reject ``f64``, ``i64``/``si64``,
``ui64`` and ``complex<f64>``.  no64 finds every such value in a module
(:func:`find_64bit`), rewrites the module to 32-bit types in place with a
report of every narrowing that is not provably exact (:func:`demote`), and
checks the result as a 64-bit-free device would (:func:`check`).

The core works on any StableHLO module (an ``ir.Module`` from the MLIR
bindings that ship in jaxlib) and knows nothing of JAX tracing.  File formats
live in :mod:`no64.io`, the command line in :mod:`no64.cli`.
"""

from __future__ import annotations

from .errors import (
    ConstantRangeError,
    InputError,
    InputRangeError,
    InvalidModuleError,
    NarrowingError,
    No64Error,
    Remaining64BitError,
    UnsupportedOpError,
)
from .locations import SourceLocation, decode_location
from .scan import Finding, check, find_64bit
from .demote import demote
from .report import DemotionReport

__version__ = "0.1.0"

# The JAX integration (no64.jaxhook, no64.api) imports JAX, so its names are
# loaded on first use: ``import no64`` stays as cheap as the core.
_LAZY_EXPORTS = {
    "install": "jaxhook",
    "uninstall": "jaxhook",
    "active_config": "jaxhook",
    "compile_records": "jaxhook",
    "Boundary64BitError": "jaxhook",
    "X64DisabledWarning": "jaxhook",
    "jit": "api",
    "lower": "api",
    "Lowered": "api",
    "ArgumentRangeError": "api",
    "TracedArgumentError": "api",
    "audit": "audit",
    "AuditReport": "audit",
}


def __getattr__(name: str):
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'no64' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))

__all__ = [
    "ConstantRangeError",
    "DemotionReport",
    "Finding",
    "InputError",
    "InputRangeError",
    "InvalidModuleError",
    "NarrowingError",
    "No64Error",
    "Remaining64BitError",
    "SourceLocation",
    "UnsupportedOpError",
    "check",
    "decode_location",
    "demote",
    "find_64bit",
]
