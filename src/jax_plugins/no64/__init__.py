"""JAX plugin hook for no64: activates it from ``NO64_PLATFORMS``.

no64 is activated from the environment at the earliest of two moments:

* **When JAX is imported** (:func:`start`).  The installed
  ``no64-startup.pth`` file calls :func:`start` at interpreter start-up when
  ``NO64_PLATFORMS`` is set; it only registers an import hook, and once
  ``jax`` has been imported no64 is activated -- before anything is traced,
  so a program whose environment turns x64 on (``JAX_ENABLE_X64=1``) traces
  its very first computation 32-bit already.
* **When JAX starts its backends** (:func:`initialize`; this module is
  advertised under the ``jax_plugins`` entry-point group).  This is the path
  when the start-up file is not in use (e.g. an editable install).

It registers no PJRT backend.  With ``NO64_PLATFORMS`` unset both are
no-ops that import nothing beyond :mod:`os` and :mod:`sys`, so an installed
but unused no64 costs JAX nothing -- except where no64 is imported already:
then :func:`initialize` has XLA's CPU compiler made without LLVM's loop hash
recognition (:func:`no64.jax._compat.guard_cpu_compiler`), which must
happen before JAX makes its backends.
"""

import os
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["initialize", "start"]


def _wanted() -> bool:
    return bool(os.environ.get("NO64_PLATFORMS", "").strip())


_told = False


def initialize() -> None:
    """Install no64 for the platforms in ``NO64_PLATFORMS``; no-op when unset.

    Where no64 cannot be imported (e.g. a jaxlib outside the supported
    range) JAX still starts: this says once, on stderr, why no64 is inactive.
    """
    global _told
    if "no64" in sys.modules:
        # no64 is in use: XLA's CPU compiler made without LLVM's loop hash
        # recognition (JAX makes its backends right after this); where no64's
        # JAX layer cannot be imported, the hook below says why
        try:
            from no64.jax._compat import guard_cpu_compiler
        except ImportError:
            pass
        else:
            guard_cpu_compiler()
    if not _wanted():
        return
    try:
        from no64.jax.hook import initialize_from_environment
    except ImportError as exc:
        if not _told:
            _told = True
            print(f"no64: NO64_PLATFORMS is set but no64 is inactive: {exc}", file=sys.stderr)
        return
    initialize_from_environment()


def start() -> None:
    """Activate no64 as soon as ``jax`` has been imported (now, if it already is)."""
    if not _wanted():
        return
    if "jax" in sys.modules:
        initialize()
        return
    if not any(isinstance(f, _AfterJaxImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterJaxImport())


class _AfterJaxImport:
    """A meta path finder that lets the normal finders locate ``jax`` and runs
    :func:`initialize` right after the ``jax`` package has executed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "jax":
            return None
        sys.meta_path.remove(self)  # one shot; also keeps the lookup below from recursing
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = cast("Loader", _Loader(spec.loader))  # a loader by its methods
        return spec


class _Loader:
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        initialize()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
