"""JAX plugin hook for no64: activates it from ``NO64_PLATFORMS``.

JAX imports this module and calls :func:`initialize` when it starts its
backends (it is advertised under the ``jax_plugins`` entry-point group).  It
registers no PJRT backend: with ``NO64_PLATFORMS`` set (e.g.
``NO64_PLATFORMS=neuron`` or ``cpu,neuron``) it installs no64's compilation
hook for those platforms (:mod:`no64.jaxhook`); otherwise it does nothing and
imports nothing beyond :mod:`os`, so an installed but unused no64 costs JAX
nothing.
"""

import os

__all__ = ["initialize"]


def initialize() -> None:
    """Install no64 for the platforms in ``NO64_PLATFORMS``; no-op when unset."""
    if not os.environ.get("NO64_PLATFORMS", "").strip():
        return
    from no64.jaxhook import initialize_from_environment

    initialize_from_environment()
