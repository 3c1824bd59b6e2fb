"""Scoped use: :func:`jit` and :func:`lower`, 32-bit whatever ``jax_enable_x64`` says.

``no64.jit(fun, **jit_kwargs)`` is shaped like :func:`jax.jit`.  Each call

1. converts 64-bit inputs on the host (numpy arrays and scalars, Python
   numbers, 64-bit ``jax.Array`` arguments) to their 32-bit types by the
   pass's rules: sentinels (``INT64_MAX``, ``INT64_MIN``, ``UINT64_MAX``,
   float64's largest finite value and its negation) map to the 32-bit
   extremes; any other value the 32-bit type cannot hold is refused with
   :class:`ArgumentRangeError`, naming the argument's pytree path, the first
   offending index and the caller's line: integers outside the int32/uint32
   range (never wrapped; ``integer_policy`` ``"saturate"``/``"wrap"``
   narrows them instead) and finite floats beyond float32's largest finite
   value (``inf`` and ``nan`` pass); complex numbers are checked part by
   part;
2. traces, lowers and runs ``fun`` with ``jax_enable_x64`` off (a thread-local
   scope, so the rest of the process keeps its setting), and compiles every
   module of the call through :func:`no64.demote` and :func:`no64.check` on
   whatever platform it runs (leftover 64-bit values from random number
   generation, explicit dtypes or library code are removed or refused);
3. with ``restore_dtypes=True``, returns outputs in the dtypes the function
   returns with x64 on for the caller's arguments.

Every call asks for the x64 meaning: under the default policy the function
is also traced with x64 on for the caller's argument dtypes, and an integer
that x64 program computes in 64 bits and that is not proven to fit is
reported at its line (:class:`no64.UnprovenIntegerWarning`; refused under
``policy="strict"``; see :mod:`no64.jax.intent`).

``no64.lower(fun, *args, **kwargs)`` lowers the same way and returns a
:class:`Lowered` holding the 64-bit-free module and its demotion report, for
offline compilers.

The package, by job (each module imports only those above it):
``arguments`` (the host-side narrowing of the inputs), ``lowered`` (what
:func:`lower` returns), ``exact`` (the x64 program run by no64 under
``policy="exact"`` and ``float_policy="pairs"``) and ``jitted`` (:func:`jit`,
:class:`Jitted` and :func:`lower`); this face re-exports their public names.
"""

from __future__ import annotations

from ...errors import ArgumentRangeError, TracedArgumentError
from .arguments import narrow_argument
from .jitted import Jitted, jit, lower
from .lowered import Lowered

__all__ = [
    "ArgumentRangeError",
    "Jitted",
    "Lowered",
    "TracedArgumentError",
    "jit",
    "lower",
    "narrow_argument",
]
