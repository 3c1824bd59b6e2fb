"""Which 32-bit device arrays hold a 64-bit value of the x64 program.

With x64 requested and turned off by no64, ``jax.device_put`` of int64 host
data, or a jitted step returning an int64 counter, gives a 32-bit
``jax.Array``: the x64 program has an int64 array there.  A later call that
takes it is judged, and run, by its x64 meaning only if that meaning knows
the argument is int64 (``a * a`` of it is a 64-bit product).  This module
notes, weakly, the x64 dtype of such arrays (:func:`mark`), for the x64
meaning of the calls they enter (:func:`x64_dtype`; see
:mod:`no64.jax.intent`).

A note lives as long as its array and is dropped with it; an array no64 did
not make (a 32-bit array the user asked for, or one made eagerly from a
canonicalised dtype) has none and is 32-bit in the x64 meaning too.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["any_marked", "assumed", "clear", "known_bounds", "mark", "marked_count", "sentinel_images",
           "x64_dtype"]

#: id(array) -> (a weak reference to it, its dtype in the x64 program, the
#: 32-bit images of host sentinels it holds, the least and greatest of its
#: values where the host knew them when it was made)
_notes: dict[int, tuple[weakref.ref[Any], np.dtype[Any], frozenset[int], tuple[int, int] | None]] = {}
_lock = threading.Lock()
_local = threading.local()


def mark(array: Any, dtype: Any, sentinels: frozenset[int] = frozenset(),
         bounds: tuple[int, int] | None = None) -> None:
    """Note that ``array`` (a 32-bit ``jax.Array``) is of ``dtype`` (64-bit) in
    the x64 program, and that its elements equal to one of ``sentinels``
    (32-bit images: ``INT32_MAX``, ...) are the host sentinels that map to
    them (``INT64_MAX``, ...), no ordinary value among them; ``bounds``: the
    least and greatest of its values, where the host data it was made from
    told them.  An object that allows no weak reference is not noted."""
    key = id(array)

    def dropped(ref: weakref.ref[Any]) -> None:
        with _lock:
            entry = _notes.get(key)
            if entry is not None and entry[0] is ref:
                del _notes[key]

    try:
        ref = weakref.ref(array, dropped)
    except TypeError:
        return
    with _lock:
        _notes[key] = (ref, np.dtype(dtype), frozenset(sentinels), bounds)


def _note_of(x: Any) -> tuple[weakref.ref[Any], np.dtype[Any], frozenset[int], tuple[int, int] | None] | None:
    """The note on the array ``x`` itself (not on another array that had its id)."""
    entry = _notes.get(id(x))
    return entry if entry is not None and entry[0]() is x else None


def sentinel_images(x: Any) -> frozenset[int]:
    """The 32-bit images of host sentinels the noted array ``x`` holds
    (see :func:`mark`)."""
    entry = _note_of(x)
    return entry[2] if entry is not None else frozenset()


def known_bounds(x: Any) -> tuple[int, int] | None:
    """The least and greatest values of the noted array ``x``, where known (see :func:`mark`)."""
    entry = _note_of(x)
    return entry[3] if entry is not None else None


def x64_dtype(x: Any) -> np.dtype[Any] | None:
    """The x64 program's dtype of the array ``x``, where no64 noted one (or
    assumes one in this thread, :func:`assumed`)."""
    entry = _note_of(x)
    if entry is not None:
        return entry[1]
    assumed_here = getattr(_local, "assumed", None)
    if assumed_here:
        return assumed_here.get(id(x))
    return None


@contextmanager
def assumed(dtypes: dict[int, np.dtype[Any]]) -> Iterator[None]:
    """Within the block, in this thread, the arrays of these ids (alive for
    the block) are of these dtypes in the x64 program."""
    if not dtypes:
        yield
        return
    saved = getattr(_local, "assumed", None)
    _local.assumed = {**(saved or {}), **dtypes}
    try:
        yield
    finally:
        _local.assumed = saved


def any_marked(values: Iterable[Any]) -> bool:
    """Whether one of ``values`` has a note."""
    if not _notes and not getattr(_local, "assumed", None):
        return False
    return any(x64_dtype(v) is not None for v in values)


def marked_count() -> int:
    """How many live arrays have a note."""
    return len(_notes)


def clear() -> None:
    """Forget every note (tests)."""
    with _lock:
        _notes.clear()
