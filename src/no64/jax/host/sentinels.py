"""Host sentinels found and acted on: the arguments of a jit call and the
constants of its trace that hold one (the 32-bit images they map to), each
traced program followed from them (``pjit._infer_params`` wrapped, the walk
itself :mod:`no64.jax.host.sentinel_walk`), and what the walk finds refused,
recorded or warned of by the range policy."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from ...errors import HostRangeError, PythonIntRangeError, UnprovenIntegerWarning
from ...ir.locations import SourceLocation
from ...ir.types import I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ...kinds import EventKind
from ..state import STATE
from .narrowing import warn_once_at, warned_sentinels
from .policy import OWN_DIR, host_policy
from .records import local_state, record_event
from .sentinel_walk import MappedImage, SentinelRead, sentinel_walk
from .x64_dtypes import sentinel_images_of

# A host sentinel becomes the 32-bit extreme before JAX traces the program,
# so the 32-bit program holds INT32_MAX where the 64-bit one holds INT64_MAX.
# That is the same program only while the value is moved, selected, ordered
# or compared: arithmetic, bit operations and conversions read the number
# itself and compute with INT32_MAX (``INT64_MAX - x`` becomes
# ``INT32_MAX - x``).  Each traced program is therefore followed from the
# values that came from host sentinels -- its arguments that held one, and,
# when host sentinels were mapped while it was traced, its constants holding
# their 32-bit images -- and every primitive that reads one as a number is
# reported (``unproven`` in host_records() at the user's line) or, under the
# range policies that refuse unproven values (``strict``, ``exact``), refused.
# The walk is :mod:`no64.jax.host.sentinel_walk`.

_NAMES = {int(_I32.max): "INT64_MAX", int(_I32.min): "INT64_MIN", int(_U32.max): "UINT64_MAX"}
_WIDE = {int(_I32.max): int(_I64.max), int(_I32.min): int(_I64.min), int(_U32.max): int(_U64.max)}
_TARGET = {int(_I32.max): "INT32_MAX", int(_I32.min): "INT32_MIN", int(_U32.max): "UINT32_MAX"}

def _describe_images(images: frozenset[int]) -> str:
    return " / ".join(f"{_NAMES[i]} ({_WIDE[i]}) \u2192 {_TARGET[i]}" for i in sorted(images))


def act_on_sentinel_reads(reads: list[SentinelRead]) -> None:
    """Refuse (range policies ``strict`` and ``exact``) or record as
    ``unproven`` (``default``, ``permissive``) each read of a host sentinel
    as a number."""
    if not reads:
        return
    from ...kinds import RangePolicy

    config = STATE.active_config()
    policy = config.policy if config is not None else RangePolicy.DEFAULT
    for r in reads:
        image = min(r.images)
        sentinel = _describe_images(r.images)
        if r.meets:
            what = (f"the host sentinel {sentinel} meets, in {r.primitive}, values that may be "
                    f"{' / '.join(_TARGET[i] for i in sorted(r.images))} themselves")
            why = "the 32-bit program could not tell them apart"
            way = ("Declare a value range that excludes it (a narrower type, a clip), use "
                   "another \"no value\" marker")
        else:
            what = f"the host sentinel {sentinel} is read as a number by {r.primitive}"
            why = (f"the 32-bit program would compute with {_TARGET[image]} where the 64-bit "
                   f"one computes with {_WIDE[image]}")
            way = "Keep sentinels to moves, selections, min/max, sorting and comparisons"
        if policy in (RangePolicy.STRICT, RangePolicy.EXACT):
            raise HostRangeError(
                f"no64: {what} at {r.source.source or r.source.raw}: {why} (policy "
                f"{policy.value!r} refuses it). {way}, or use no64.jit(..., policy='exact'), "
                "which computes with the 64-bit values",
                value=_WIDE[image], dtype="uint64" if image == _U32.max else "int64", index=(),
                source=r.source,
            )
        record_event(EventKind.UNPROVEN, r.primitive, f"{what}: {why}", 1, source=r.source)
        if policy is RangePolicy.DEFAULT:
            _warn_sentinel(r.source, f"{what}: {why}. {way}, or use policy 'exact'")


def _warn_sentinel(source: SourceLocation, message: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line where a host
    sentinel is read as a number or meets values that may be its image (the
    default policy computes with the image there: never silently)."""
    if not warn_once_at(source, f"no64: {message}", UnprovenIntegerWarning, warned_sentinels):
        warnings.warn(f"no64: {message}", UnprovenIntegerWarning, stacklevel=2)


#: per traced program (weakly): (seeds, images) -> what sentinel_walk found
_reads_cache: "weakref.WeakKeyDictionary[Any, dict[Any, tuple[list[SentinelRead], list[frozenset[int]]]]]" = (
    weakref.WeakKeyDictionary())
_reads_lock = threading.Lock()
#: per traced program (weakly): the host sentinels mapped while it was traced
_trace_images: "weakref.WeakKeyDictionary[Any, frozenset[MappedImage]]" = weakref.WeakKeyDictionary()


def _walked(jaxpr: Any, seeds: dict[int, frozenset[int]],
            images: frozenset[MappedImage]) -> tuple[list[SentinelRead], list[frozenset[int]]]:
    """:func:`sentinel_walk`, cached per jaxpr, seeds and images."""
    key = (tuple(sorted(seeds.items())), images)
    with _reads_lock:
        try:
            per = _reads_cache.get(jaxpr)
        except TypeError:
            per = None
        found = per.get(key) if per is not None else None
    if found is None:
        found = sentinel_walk(jaxpr, seeds, images)
        with _reads_lock:
            try:
                _reads_cache.setdefault(jaxpr, {})[key] = found
            except TypeError:
                pass
    return found


def check_sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                         images: frozenset[MappedImage]) -> None:
    """:func:`sentinel_reads` (cached per jaxpr, seeds and images), then
    :func:`act_on_sentinel_reads`."""
    act_on_sentinel_reads(_walked(jaxpr, seeds, images)[0])


def result_sentinels(jaxpr: Any, args_flat: list[Any]) -> list[frozenset[int]] | None:
    """For each result of a call of the traced program ``jaxpr`` with
    ``args_flat``, the 32-bit images it may hold that are certainly host
    sentinels (``jnp.full(3, INT64_MAX)``'s result, an argument's sentinel
    passed through), for the call it enters next (noted on it,
    :mod:`no64.jax.x64_arrays`); ``None`` where the program holds none."""
    try:
        images = _trace_images.get(jaxpr, frozenset())
    except TypeError:
        return None
    seeds = argument_seeds(args_flat)
    if not images and not seeds:
        return None
    outs = _walked(jaxpr, seeds, images)[1]
    return outs if any(outs) else None


def argument_seeds(leaves: list[Any], offset: int = 0) -> dict[int, frozenset[int]]:
    """Positions (plus ``offset``) of the host values among ``leaves`` that
    hold sentinels, and the 32-bit images they map to."""
    seeds: dict[int, frozenset[int]] = {}
    for i, x in enumerate(leaves):
        images = sentinel_images_of(x)
        if images:
            seeds[i + offset] = images
    return seeds


#: who judges a traced program by its x64 module (:func:`judged_by_x64_module`)
_x64_judge: "Callable[[Any, Callable[[], None]], bool] | None" = None


def judged_by_x64_module(judge: "Callable[[Any, Callable[[], None]], bool]") -> None:
    """Let ``judge(jaxpr, check)`` take the sentinel check of a traced
    program whose x64 module is what runs and computes with the sentinels
    themselves (:mod:`no64.jax.intent`, under ``exact``); ``check()``
    follows them and acts on what it finds, should the 32-bit program run
    after all.  ``judge`` returns whether it took the check."""
    global _x64_judge
    _x64_judge = judge


def install_sentinel_reads() -> None:
    """Wrap ``pjit._infer_params`` (the Python path of every ``jit`` call,
    ``.trace()`` and ``.lower()``: a call with a 64-bit numpy argument always
    takes it, see ``install_fastpath_guard``): the host sentinels mapped
    while it traces, and the arguments holding sentinels, are followed
    through the traced program (:func:`sentinel_reads`)."""
    from .._compat import at_top_level, jit_function, replace_jit_function

    _exclude_from_source_locations()
    original = jit_function("_infer_params")
    if getattr(original, "__no64__", False):
        return

    def _infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        try:
            return _following(fun, ji, args, kwargs)
        except OverflowError as exc:
            own = exc.__context__
            if not isinstance(own, PythonIntRangeError) or own is exc:
                raise
            # JAX's argument parsing replaced no64's refusal (an OverflowError)
            # with its own: the refusal, with JAX's words as a note.
            own.add_note(str(exc))
            raise own from None

    def _following(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        if host_policy() is None:
            return original(fun, ji, args, kwargs)
        if not at_top_level():
            # Traced inside another function (jnp.where's own jit): its
            # operands are known only there, whose trace is followed whole.
            return original(fun, ji, args, kwargs)
        # A top-level trace: what host sentinels become while it runs (nested
        # library traces included) is noted afresh, and forgotten after.
        local_state.images = set()
        try:
            p, args_flat = original(fun, ji, args, kwargs)
            images = frozenset(local_state.images)
        finally:
            local_state.images = set()
        seeds = argument_seeds(args_flat)
        if images or seeds:
            jaxpr = p.params["jaxpr"]
            if images:
                try:
                    _trace_images[jaxpr] = images
                except TypeError:
                    pass

            def check() -> None:
                check_sentinel_reads(jaxpr, seeds, images)

            judge = _x64_judge
            if judge is None or not judge(jaxpr, check):
                check()
        return p, args_flat

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)


def _exclude_from_source_locations() -> None:
    """No frame of no64 is the user's frame in JAX's source locations (the
    locations of a module's ops, which the pass's reports and refusals name)."""
    from .._compat import hide_from_source_locations

    hide_from_source_locations(OWN_DIR)
