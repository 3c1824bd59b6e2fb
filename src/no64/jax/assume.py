"""``no64.assume``: a range stated in the program, where the user knows it.

``no64.assume(x, lo, hi)`` returns ``x`` and declares that every element of
the integer array ``x`` lies in ``[lo, hi]`` (token ids below the vocabulary
size, a count bounded by a batch).  It lowers to an identity
(``stablehlo.optimization_barrier``) inside the name scope
``no64.assume[lo,hi]``, which every path carries in the module's locations
-- the compile hook, :func:`no64.jit`, ``jax.export`` and so the offline
``no64 convert`` -- so the pass reads the range there, bounds the value by
it, and erases the identity (:mod:`no64.ir.locations`,
:func:`no64.analysis.transfer.barrier`).  Without no64 the identity is all
there is: the program computes what it computes without the call (the
barrier only keeps XLA from fusing across it).

The range is the user's promise, as ``input_ranges`` is: inside a traced
function no64 cannot see the data.  A concrete array (outside ``jit``) is
checked on the host: an element outside the range is a
:class:`no64.HostRangeError` at the caller's line.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import HostRangeError
from ..ir.locations import assume_scope
from . import host

__all__ = ["assume"]


def assume(x: Any, lo: int, hi: int) -> Any:
    """``x``, with every element declared to lie in ``[lo, hi]`` for no64's
    range analysis (see the module docstring).

    Args:
      x: An integer array (a ``jax.Array``, a tracer, numpy data).
      lo: The inclusive lower bound (a Python int, ``lo <= hi``).
      hi: The inclusive upper bound (a Python int).

    Raises:
      TypeError: ``x`` is not an integer array, or a bound is not an integer.
      ValueError: ``lo > hi``.
      no64.HostRangeError: ``x`` is concrete and an element lies outside.
    """
    import jax
    from jax import lax

    lo, hi = operator.index(lo), operator.index(hi)
    if lo > hi:
        raise ValueError(f"no64.assume: lo ({lo}) > hi ({hi})")
    dtype = np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"no64.assume takes an integer array, not {dtype}")
    if not isinstance(x, jax.core.Tracer):
        _check(np.asarray(x), lo, hi)
    with jax.named_scope(assume_scope(lo, hi)):
        return lax.optimization_barrier(x)


def _check(a: np.ndarray, lo: int, hi: int) -> None:
    if a.size == 0:
        return
    bad = np.flatnonzero((a < lo) | (a > hi))
    if not bad.size:
        return
    index = tuple(int(i) for i in np.unravel_index(int(bad[0]), a.shape))
    value = int(a.reshape(-1)[bad[0]])
    source = host.user_source()
    raise HostRangeError(
        f"no64: an {a.dtype}{list(a.shape)} array at {source} holds {value} at index {index}, "
        f"outside the range [{lo}, {hi}] no64.assume declares for it",
        value=value, dtype=str(a.dtype), index=index, source=source)
