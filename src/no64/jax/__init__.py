"""no64's JAX layer: everything that imports JAX.

JAX is imported here, before any module of the layer runs: where
``NO64_PLATFORMS`` is set, no64's start-up file activates no64 as soon as the
``jax`` package has been imported (:mod:`jax_plugins.no64`), which imports
:mod:`no64.jax.hook` and the modules below it.  Were JAX first imported from
inside one of them (the seam, :mod:`no64.jax._compat`, wraps JAX's CPU
backend factory as it loads), that activation would meet it half imported
-- a circular import, and no64 inactive until JAX started its backends.
"""

import jax  # noqa: F401  (first: see above)
