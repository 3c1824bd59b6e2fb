"""Version gate for the jax/jaxlib pair whose MLIR bindings no64 uses.

no64 reads and writes modules through the MLIR Python bindings that ship
inside ``jaxlib`` so that its dialect versions always match the JAX that
produced the module.  Those bindings are not a stable API, so the tested
range is pinned here and anything outside it fails at import with a clear
message instead of a confusing error deep inside a rewrite.
"""

from __future__ import annotations

import os

#: Inclusive lower bound and exclusive upper bound of the tested jaxlib range.
MIN_JAXLIB = (0, 10, 2)
MAX_JAXLIB = (0, 11, 0)

_SKIP_ENV = "NO64_SKIP_VERSION_CHECK"


def _parse(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def _fmt(v: tuple[int, ...]) -> str:
    return ".".join(str(x) for x in v)


def check_jaxlib_version() -> str:
    """Return the installed jaxlib version, or raise ImportError outside the tested range."""
    try:
        import jaxlib.version as jv
    except ImportError as exc:  # pragma: no cover - exercised only without jaxlib
        raise ImportError(
            "no64 needs jaxlib (its MLIR bindings read and write StableHLO); "
            f"install jax/jaxlib >={_fmt(MIN_JAXLIB)},<{_fmt(MAX_JAXLIB)}"
        ) from exc
    version: str = jv.__version__
    if os.environ.get(_SKIP_ENV):
        return version
    parsed = _parse(version)
    if not (MIN_JAXLIB <= parsed < MAX_JAXLIB):
        raise ImportError(
            f"no64 is tested with jaxlib >={_fmt(MIN_JAXLIB)},<{_fmt(MAX_JAXLIB)} "
            f"but jaxlib {version} is installed; its MLIR bindings may differ. "
            f"Install a tested version, or set {_SKIP_ENV}=1 to try anyway."
        )
    return version
