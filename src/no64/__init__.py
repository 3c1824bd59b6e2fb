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
