"""What every part of the seam shares: the error naming a missing feature, optional imports."""

from __future__ import annotations

import importlib
from typing import Any

from ...ir._compat import UnsupportedJaxlibError


def missing(what: str) -> UnsupportedJaxlibError:
    return UnsupportedJaxlibError(f"no64 cannot use this JAX: it has no {what}")


def optional_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
