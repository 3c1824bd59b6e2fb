"""The user's source line of a host value, and the records of what was narrowed there."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ...ir.locations import SourceLocation
from ...kinds import EventKind
from ...report import Event
from ..state import STATE

_LIBRARIES = ("no64", "jax", "jaxlib", "numpy", "ml_dtypes", "flax", "optax", "chex",
              "equinox", "haiku", "opt_einsum", "jax_plugins")


def library_dirs() -> tuple[str, ...]:
    """Directories whose frames are not the user's: the standard library and
    the libraries above that are loaded (computed when a record is made, so
    libraries imported later count too)."""
    dirs = [os.path.dirname(os.__file__) + os.sep]
    for name in _LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)


def user_frame(traceback: Any, inside: tuple[str, ...]) -> SourceLocation | None:
    """The innermost frame of a JAX ``Traceback`` outside ``inside``."""
    found = user_frame_at(traceback, inside)
    return None if found is None else found[0]


def user_frame_at(traceback: Any, inside: tuple[str, ...]) -> tuple[SourceLocation, int] | None:
    """:func:`user_frame`, and the offset of the instruction it was running
    (two expressions of one line have different ones)."""
    from .._compat import frame_line, traceback_frames

    codes, lastis = traceback_frames(traceback)
    for code, lasti in zip(codes, lastis):
        filename = code.co_filename
        if not (filename.startswith(inside) or filename.startswith("<frozen")):
            line = frame_line(code, lasti)
            return SourceLocation(None, code.co_name, filename, line, None, f"{filename}:{line}"), lasti
    return None


def user_source() -> SourceLocation:
    """The innermost frame outside no64, JAX, numpy, common JAX libraries
    and the standard library: the user's line.

    While JAX lowers or re-traces an equation it sets the equation's own
    traceback (from when the user's code traced it) as the current one;
    that traceback is used then, since the Python stack holds only JAX.
    """
    return user_source_at()[0]


def user_source_at() -> tuple[SourceLocation, int | None]:
    """:func:`user_source`, and the offset of the instruction the user's
    frame is running (``None`` where unknown)."""
    inside = library_dirs()
    from .._compat import current_traceback

    traceback = current_traceback()
    if traceback is not None:
        found = user_frame_at(traceback, inside)
        if found is not None:
            return found
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(inside) or filename.startswith("<frozen")):
            raw = f"{filename}:{frame.f_lineno}"
            return SourceLocation(None, frame.f_code.co_name, filename, frame.f_lineno, None, raw), frame.f_lasti
        frame = frame.f_back
    return SourceLocation(None, None, None, None, None, "<unknown>"), None


local_state = threading.local()


def mapped_sentinels() -> set[tuple[int, str | None, int | None, int | None]]:
    """The 32-bit extremes that host sentinels were mapped to in this thread
    (with the user's file, line and instruction offset where each was)
    since the innermost trace being watched began (see :func:`~no64.jax.host.sentinels.install_sentinel_reads`)."""
    images = getattr(local_state, "images", None)
    if images is None:
        images = local_state.images = set()
    return images


_MAX_SITES = 1024


def record_event(kind: EventKind, op: str, detail: str, count: int,
                 source: SourceLocation | None = None) -> None:
    """Add ``count`` elements to the host record of ``kind`` at ``source``
    (the user's line), kept in ``STATE.host_records``."""
    if source is None:
        source = user_source()
    key = (kind, op, source.file, source.line)
    records = STATE.host_records
    with STATE.host_lock:
        event = records.get(key)
        if event is not None:
            event.count += count
        else:
            if len(records) >= _MAX_SITES:
                records.pop(next(iter(records)))
            event = records[key] = Event(kind, op, source, detail, count)
    if STATE.listeners:
        STATE.tell.on_host_event(event, count)


def host_records() -> list[Event]:
    """The host narrowings that were not exact, one :class:`no64.report.Event`
    per kind and source line (``count`` sums the elements over all calls),
    oldest first; the kinds are those of the pass's report."""
    with STATE.host_lock:
        return list(STATE.host_records.values())


def clear_host_records() -> None:
    """Forget the records returned by :func:`host_records`."""
    with STATE.host_lock:
        STATE.host_records.clear()




def library_function(func_src_info: str | None) -> bool:
    """Whether a traced function's source (JAX's ``func_src_info``,
    ``"name at file:line"``) lies in JAX or another library (a ``jnp``
    function's own ``jit``), not in the user's code."""
    if not func_src_info or " at " not in func_src_info:
        return False
    path = func_src_info.rsplit(" at ", 1)[1].rsplit(":", 1)[0]
    return path.startswith(library_dirs())


@contextmanager
def library_constants() -> Iterator[None]:
    """Within the block, 64-bit host constants narrowed are a library's own
    (an ``iinfo(int64)`` bound a ``jnp`` function made because the x64
    program has int64 data, where a trace with x64 off makes int32's): mapped
    and kept in range as they would be, but no host record, no sentinel to
    follow and no refusal of the user's (out-of-range integers keep their
    low 32 bits)."""
    saved_images = set(mapped_sentinels())
    saved_policy = STATE.thread.host_policy
    with STATE.host_records_kept():
        STATE.thread.host_policy = "wrap"
        try:
            yield
        finally:
            STATE.thread.host_policy = saved_policy
            images = mapped_sentinels()
            images.clear()
            images.update(saved_images)


def eqn_source(eqn: Any) -> SourceLocation | None:
    """The user's line that traced a jaxpr equation (``None`` when its
    traceback holds none)."""
    tb = getattr(eqn.source_info, "traceback", None)
    return user_frame(tb, library_dirs()) if tb is not None else None
