"""no64: make StableHLO and HLO programs free of 64-bit types, exactly.

Accelerators such as AWS Neuron/Trainium reject ``f64``, ``i64``/``si64``,
``ui64`` and ``complex<f64>``.  no64 finds every such value in a module
(:func:`find_64bit`), rewrites the module to 32-bit types in place with a
report of every narrowing that is not provably exact (:func:`demote`), and
checks the result as a 64-bit-free device would (:func:`check`).

The modules form layers, bottom first: vocabularies and IR helpers
(:mod:`no64.kinds`, the type converter, locations, :mod:`no64.spec.walk`),
the report, :mod:`no64.errors`, the op schema (:mod:`no64.spec.registry`),
the range analysis (:mod:`no64.analysis`), the rules and the op table
(:mod:`no64.rules.ops`), the transforms (scan/check, constants, emulation,
the pass), this package's face, :mod:`no64.io`, the JAX layer
(:mod:`no64.jax`: compile hook, ``jit``/``lower``, audit, reference runner)
and :mod:`no64.cli`.  Nothing below :mod:`no64.io` imports JAX.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import errors as _errors  # errors.__all__: every error and warning, re-exported below
from .errors import (
    ArgumentRangeError as ArgumentRangeError,
    Boundary64BitError as Boundary64BitError,
    ConfigurationError as ConfigurationError,
    ConstantRangeError as ConstantRangeError,
    FloatPrecisionWarning as FloatPrecisionWarning,
    HostRangeError as HostRangeError,
    InputError as InputError,
    InputRangeError as InputRangeError,
    InvalidModuleError as InvalidModuleError,
    NarrowingError as NarrowingError,
    No64Error as No64Error,
    NoX64MeaningError as NoX64MeaningError,
    NoX64MeaningWarning as NoX64MeaningWarning,
    OutputError as OutputError,
    OutputRangeError as OutputRangeError,
    PairArithmeticError as PairArithmeticError,
    PairRangeError as PairRangeError,
    PairRangeWarning as PairRangeWarning,
    PythonIntRangeError as PythonIntRangeError,
    Remaining64BitError as Remaining64BitError,
    TargetError as TargetError,
    TargetWarning as TargetWarning,
    TracedArgumentError as TracedArgumentError,
    UnprovenIntegerWarning as UnprovenIntegerWarning,
    UnsupportedOpError as UnsupportedOpError,
    X64DisabledWarning as X64DisabledWarning,
)
from .ir.locations import SourceLocation, decode_location
from .options import Options
from .report import DemotionReport, Narrowing
from .rules import ops as _table  # noqa: F401  (fills the op registry every layer reads)
from .spec.registry import check_reachable as _check_reachable
from .transforms.demote import demote
from .transforms.emulate import join_words, split_words
from .transforms.pairs import join_pairs, split_pairs
from .transforms.scan import Finding, check, find_64bit

__version__ = "0.1.0"

_check_reachable()

# The JAX layer imports JAX, so its names are loaded on first use:
# ``import no64`` stays as cheap as the core.
_LAZY_EXPORTS = {
    "install": "jax.hook",
    "uninstall": "jax.hook",
    "active_config": "jax.hook",
    "compile_records": "jax.hook",
    "host_records": "jax.host",
    "clear_host_records": "jax.host",
    "jit": "jax.jit",
    "lower": "jax.jit",
    "Lowered": "jax.jit",
    "audit": "jax.audit",
    "AuditReport": "jax.audit",
    "assume": "jax.assume",
    "numerics": "jax.numerics",
    "NumericsReport": "jax.numerics",
}

__all__ = [
    # core
    "DemotionReport",
    "Finding",
    "Narrowing",
    "Options",
    "SourceLocation",
    "check",
    "decode_location",
    "demote",
    "find_64bit",
    "join_words",
    "split_words",
    "join_pairs",
    "split_pairs",
    # the JAX layer (loaded on first use)
    "AuditReport",
    "Lowered",
    "active_config",
    "assume",
    "audit",
    "clear_host_records",
    "compile_records",
    "host_records",
    "install",
    "jit",
    "lower",
    "numerics",
    "NumericsReport",
    "uninstall",
]
__all__ += _errors.__all__


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'no64' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))
