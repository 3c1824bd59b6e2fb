"""Source locations and tracebacks: an equation's frames, locations made from them, JAX's own
frames hidden, the folders of JAX's code."""

from __future__ import annotations

import os
import threading
from contextlib import AbstractContextManager
from typing import Any

from .base import missing
from .patching import note_exclusion, replace_attribute


def traceback_context(traceback: Any) -> AbstractContextManager[Any]:
    """JAX's current traceback set to ``traceback`` (``source_info_util.user_context``)."""
    from jax._src import source_info_util

    return source_info_util.user_context(traceback)


# ---------------------------------------------------------------------------
# The frames of an equation's traceback
# ---------------------------------------------------------------------------

_TRACE_STARTS = frozenset({"trace_to_jaxpr_dynamic", "trace_to_jaxpr"})


def traceback_frames(traceback: Any) -> tuple[list[Any], list[int]]:
    """The code objects and last instructions of a JAX ``Traceback`` (an
    equation's), innermost first, up to where the trace that made it began.

    From 0.9 jaxlib records only those frames: an equation inside a jitted
    function (a library's ``jnp.where``) names no line of the code that
    called it, whose trace JAX caches and reuses for later callers.  0.7-0.8
    record the whole Python stack; it is cut here at the innermost frame of
    ``partial_eval.trace_to_jaxpr_dynamic`` (or ``trace_to_jaxpr``), where
    the trace began.
    """
    codes, lastis = traceback.raw_frames()
    for i, code in enumerate(codes):
        if code.co_name in _TRACE_STARTS and code.co_filename.endswith("partial_eval.py"):
            return list(codes[:i]), list(lastis[:i])
    return list(codes), list(lastis)


class _TraceFrames:
    """A ``Traceback`` as JAX from 0.9 lowers it: its own trace's frames
    (:func:`traceback_frames`), then the context's -- the enclosing
    equation's traceback while a nested function is lowered, else the Python
    stack where the lowering was asked for (the call's line)."""

    __slots__ = ("traceback", "context")

    def __init__(self, traceback: Any, context: Any) -> None:
        self.traceback = traceback
        self.context = context

    def raw_frames(self) -> tuple[list[Any], list[int]]:
        codes, lastis = traceback_frames(self.traceback)
        if self.context is not None:  # a _TraceFrames
            more_codes, more_lastis = self.context.raw_frames()
            codes, lastis = codes + list(more_codes), lastis + list(more_lastis)
        return codes, lastis


def locate_by_trace_frames() -> None:
    """Have JAX's lowering locate an equation by the frames of its own trace
    (:func:`traceback_frames`) and the context it is lowered in, as JAX does
    from 0.9 (jaxlib's ``_jax.TracebackScope`` starts each trace's
    tracebacks afresh): then this does nothing.  On 0.7-0.8 an equation of a
    jitted library function whose trace JAX reuses would otherwise carry, in
    the module's locations, the line of whichever call traced it first:
    ``mlir._traceback_to_location(ctx, tb)`` (Python on 0.7, jaxlib's
    ``TracebackToLocationCache`` on 0.8, which takes only a ``Traceback``) is
    wrapped to build the location of :class:`_TraceFrames` (the context:
    ``source_info_util.current()``) as 0.7 builds one, where those frames
    are not the traceback's own."""
    from jax._src.lib import _jax

    if hasattr(_jax, "TracebackScope"):
        return
    from jax._src import source_info_util
    from jax._src.interpreters import mlir

    original = getattr(mlir, "_traceback_to_location", None)
    if original is None:
        raise missing("per-trace tracebacks (_jax.TracebackScope or mlir._traceback_to_location)")
    if getattr(original, "__no64__", False):
        return

    local = threading.local()

    def located(seen: dict[int, tuple[Any, Any]], tb: Any) -> Any:
        known = seen.get(id(tb))
        return known[1] if known is not None and known[0] is tb else None

    def _traceback_to_location(ctx: Any, tb: Any) -> Any:
        seen = getattr(local, "seen", None)
        if seen is None:
            seen = local.seen = {}
        context = source_info_util.current().traceback
        if context is tb or context == tb:
            # the equation's own rule, lowering it: where it was located
            frames = located(seen, tb) or _TraceFrames(tb, None)
        else:
            # the enclosing equation as it was located, or the Python stack
            outer = located(seen, context) or _TraceFrames(context, None)
            frames = _TraceFrames(tb, outer)
            if len(seen) > 4096:
                seen.clear()
            seen[id(tb)] = (tb, frames)
        codes, lastis = frames.raw_frames()
        own, _ = tb.raw_frames()
        if len(codes) == len(own) and all(a is b for a, b in zip(codes, own)):
            return original(ctx, tb)
        return _frames_location(ctx, codes, lastis)

    _traceback_to_location.__wrapped__ = original  # type: ignore[attr-defined]
    _traceback_to_location.__no64__ = True  # type: ignore[attr-defined]
    replace_attribute(mlir, "_traceback_to_location", _traceback_to_location)


def _frames_location(ctx: Any, codes: list[Any], lastis: list[int]) -> Any:
    """The MLIR location of frames (innermost first), as JAX 0.7's
    ``mlir._traceback_to_location`` builds one: a call-site chain of the user
    frames, named by function, at most ``jax_traceback_in_locations_limit``
    of them; cached per module being lowered."""
    import re

    from jax._src import config as jax_config, source_info_util
    from jax._src.lib.mlir import ir

    caches = ctx.traceback_caches
    store = getattr(caches, "_no64_locations", None)
    if store is None:
        store = {}
        caches._no64_locations = store
    key = (tuple(codes), tuple(lastis))
    loc = store.get(key)
    if loc is not None:
        return loc
    limit = jax_config.traceback_in_locations_limit.value
    limit = limit if limit >= 0 else 1000
    pattern = jax_config.hlo_source_file_canonicalization_regex.value
    frame_locs: list[Any] = []
    for code, lasti in zip(codes, lastis):
        if len(frame_locs) >= limit:
            break
        if not source_info_util.is_user_filename(code.co_filename):
            continue
        frame = source_info_util.raw_frame_to_frame(code, lasti)
        file_name = re.sub(pattern, "", frame.file_name) if pattern else frame.file_name
        file_loc = ir.Location.file(file_name, frame.start_line, frame.start_column,
                                    frame.end_line, frame.end_column)
        frame_locs.append(ir.Location.name(frame.function_name, childLoc=file_loc))
    if not frame_locs:
        loc = ir.Location.unknown()
    elif len(frame_locs) == 1:
        loc = frame_locs[0]
    else:
        loc = ir.Location.callsite(frame_locs[0], frame_locs[1:])
    store[key] = loc
    return loc


# -- tracebacks and source locations ------------------------------------------

def hide_from_tracebacks(path: str) -> None:
    """Leave frames of files under ``path`` out of the tracebacks JAX filters
    (``traceback_util.register_exclusion``)."""
    from jax._src import traceback_util

    traceback_util.register_exclusion(path)
    paths = getattr(traceback_util, "_exclude_paths", None)
    if isinstance(paths, list):
        note_exclusion(paths, path, where="jax._src.traceback_util._exclude_paths")


def hide_from_source_locations(path: str) -> None:
    """No frame of a file under ``path`` is the user's frame in JAX's source
    locations (``source_info_util.register_exclusion``, once)."""
    from jax._src import source_info_util

    if path not in getattr(source_info_util, "_exclude_paths", ()):
        source_info_util.register_exclusion(path)
        paths = getattr(source_info_util, "_exclude_paths", None)
        if isinstance(paths, list):
            note_exclusion(paths, path, where="jax._src.source_info_util._exclude_paths")


def frame_line(code: Any, lasti: int) -> int:
    """The line a frame of a JAX traceback (its code and last instruction) is at."""
    from jax._src import source_info_util

    return source_info_util.raw_frame_to_frame(code, lasti).start_line


def current_traceback() -> Any:
    """The traceback JAX holds as the current one (an equation's own while it
    is lowered or re-traced), or ``None``."""
    from jax._src import source_info_util

    return source_info_util._source_info_context.context.traceback


def jax_code_folders() -> tuple[str, ...]:
    """The folders of JAX's and jaxlib's own code (``jax``, ``jaxlib``), as
    imported and as real paths, each ending in a separator."""
    import jax
    import jaxlib

    out: set[str] = set()
    for module in (jax, jaxlib):
        folder = os.path.dirname(module.__file__ or "")
        out |= {folder + os.sep, os.path.realpath(folder) + os.sep}
    return tuple(sorted(out))
