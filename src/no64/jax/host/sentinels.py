"""Host sentinels that the program reads as numbers, or meets their 32-bit image: a jaxpr interpreter."""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any, NamedTuple

import numpy as np

from ...errors import HostRangeError, PythonIntRangeError, UnprovenIntegerWarning
from ...ir.locations import SourceLocation
from ...ir.types import I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ...kinds import EventKind
from ..state import STATE
from .narrowing import _PAIRS, _warn_once_at, _warned_sentinels
from .policy import _INT32, _INT64, _OWN_DIR, _UINT32, _UINT64, host_policy
from .records import _library_dirs, _local, _record, _user_frame, user_source

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

#: Primitives whose results hold elements of their operands (moved, selected,
#: or the minimum/maximum of them): a sentinel passes through unchanged.
SENTINEL_MOVES = frozenset(
    "broadcast_in_dim reshape squeeze expand_dims transpose rev slice dynamic_slice "
    "dynamic_update_slice gather concatenate pad select_n copy copy_p device_put min max clamp "
    "reduce_min reduce_max cummin cummax sort scatter optimization_barrier sharding_constraint "
    "mesh_cast reshard split stack unstack tile all_gather all_to_all ppermute pbroadcast pmax "
    "pmin".split()
)
#: Primitives that read their operands only by order or equality, the way
#: the 64-bit program does; their results hold no operand element.
SENTINEL_ORDERS = frozenset("eq ne lt le gt ge eq_to lt_to le_to argmin argmax".split())
#: Primitives whose first results hold operand elements and whose others are indices.
_FIRST_RESULT_MOVES = frozenset({"top_k"})

_NAMES = {int(_I32.max): "INT64_MAX", int(_I32.min): "INT64_MIN", int(_U32.max): "UINT64_MAX"}
_WIDE = {int(_I32.max): int(_I64.max), int(_I32.min): int(_I64.min), int(_U32.max): int(_U64.max)}
_TARGET = {int(_I32.max): "INT32_MAX", int(_I32.min): "INT32_MIN", int(_U32.max): "UINT32_MAX"}


def _images_in(x: Any, images: frozenset[int]) -> frozenset[int]:
    """Which of ``images`` the 32-bit integer value ``x`` holds."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        if type(x) is int:
            return frozenset(i for i in images if x == i)
        return frozenset()
    try:
        dt = np.dtype(dt)
    except TypeError:
        return frozenset()
    if dt == _INT32:
        wanted = [i for i in images if i != _U32.max]
    elif dt == _UINT32:
        wanted = [i for i in images if i == _U32.max]
    else:
        return frozenset()
    if not wanted:
        return frozenset()
    a = np.asarray(x)
    return frozenset(i for i in wanted if (a == np.array(i, dt)).any())


def _sentinel_images(x: Any) -> frozenset[int]:
    """The 32-bit images of the sentinels a 64-bit host value holds."""
    t = type(x)
    if t is int:
        if x == _I64.max or x == _I64.min:
            return frozenset({int(_I32.max) if x > 0 else int(_I32.min)})
        return frozenset()
    dt = getattr(x, "dtype", None)
    if t is not np.ndarray and not isinstance(x, np.generic) and dt is not None:
        # a 64-bit jax.Array given to no64.jit (fetched there already)
        try:
            wide = np.dtype(dt) in (_INT64, _UINT64)
        except TypeError:
            wide = False
        if not wide or isinstance(x, _tracer_type()):
            return frozenset()
        x = np.asarray(x)
        t = np.ndarray
    if (t is np.ndarray or isinstance(x, np.generic)) and x.dtype in (_INT64, _UINT64):
        unsigned = x.dtype == _UINT64
        return frozenset(image for sentinel, _, image, _ in _PAIRS[unsigned]
                         if (x == np.array(sentinel, x.dtype)).any())
    return frozenset()


def _tracer_type() -> type:
    from .._compat import tracer_type

    return tracer_type()


class SentinelRead(NamedTuple):
    """A primitive that reads a host sentinel as a number (``meets=False``), or
    where one meets values that may be its 32-bit image (``meets=True``)."""

    primitive: str
    images: frozenset[int]
    source: SourceLocation
    meets: bool = False


class _Fact(NamedTuple):
    """What the walk knows of a value: the 32-bit images of the host
    sentinels it may hold, and the range ``[lo, hi]`` of its other elements
    (``None``: its type's range; ``lo > hi``: none)."""

    taint: frozenset[int] = frozenset()
    lo: int | None = None
    hi: int | None = None


_UNKNOWN = _Fact()


def _dtype_range(dtype: Any) -> tuple[int, int] | None:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt == np.bool_:
        return (0, 1)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return (int(info.min), int(info.max))
    return None


def _join(facts: list[_Fact]) -> _Fact:
    taint = frozenset().union(*(f.taint for f in facts)) if facts else frozenset()
    lo = hi = None
    known = True
    for f in facts:
        if f.lo is None or f.hi is None:
            known = False
            break
        if f.lo > f.hi:
            continue
        lo = f.lo if lo is None else min(lo, f.lo)
        hi = f.hi if hi is None else max(hi, f.hi)
    if not known:
        return _Fact(taint)
    return _Fact(taint, 1, 0) if lo is None else _Fact(taint, lo, hi)


def _sub_jaxpr(params: dict[str, Any], n_in: int, n_out: int) -> Any:
    """The one sub-jaxpr of a call-like primitive whose inputs and outputs are
    the equation's, one for one (``jit``, ``closed_call``, ``remat``,
    ``custom_jvp_call``, ...), or ``None``."""
    from .._compat import jaxprs_in_params

    subs = jaxprs_in_params(params)
    if len(subs) != 1:
        return None
    sub = subs[0]
    if len(sub.invars) != n_in or len(sub.outvars) != n_out:
        return None
    return sub


#: Data operands that meet (are selected among, ordered or compared with one
#: another) in each primitive that combines several: ``None`` is all of them.
_MEETING: dict[str, slice | tuple[int, ...] | None] = {
    **{name: None for name in "min max clamp concatenate pad pmax pmin stack".split()},
    **{name: None for name in SENTINEL_ORDERS if name not in ("argmin", "argmax")},
    "select_n": slice(1, None),
    "dynamic_update_slice": (0, 1),
    "scatter": (0, 2),
}


def sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                   images: frozenset[tuple[int, str | None, int | None]]) -> list[SentinelRead]:
    """The primitives of ``jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``) that read
    a host sentinel as a number, or where one meets values that may be its
    32-bit image (the ranges of other values are known from constants,
    iotas, narrow integer types and the ops that move them; anything else
    may be any value of its type).

    Args:
      seeds: Input positions holding host sentinels -> their 32-bit images
        (the input holds no other element equal to one: host narrowing
        refuses such an array).
      images: ``(image, file, line)``: a host sentinel became ``image``
        while ``jaxpr`` was traced, at that user's line: a constant or
        literal holding ``image`` used by an equation of that line may be
        that sentinel (a library's own ``INT32_MAX`` elsewhere is not).
    """
    from .._compat import jaxpr_classes, jaxpr_literal_type, jaxprs_in_params, open_jaxpr, scan_layout

    literal: Any = jaxpr_literal_type()
    image_set = frozenset(i for i, _, _ in images)
    jaxprs = jaxpr_classes()

    inside = _library_dirs()
    found: list[SentinelRead] = []
    seen: set[tuple[str, str | None, int | None, bool]] = set()
    consts_of: dict[Any, Any] = {}

    def images_at(here: SourceLocation | None) -> frozenset[int]:
        if here is None:
            return image_set
        return frozenset(i for i, f, ln in images if (f, ln) == (here.file, here.line))

    def constant_fact(val: Any, here: SourceLocation | None) -> _Fact:
        if _dtype_range(getattr(val, "dtype", type(val))) is None and type(val) is not int:
            return _UNKNOWN
        a = np.asarray(val)
        if a.dtype.kind not in "iub" or a.size == 0 or a.size > 1 << 20:
            return _UNKNOWN
        wanted = images_at(here) if images else frozenset()
        taint = _images_in(val, wanted) if wanted else frozenset()
        if taint:
            a = a[~np.isin(a, np.array(sorted(taint), dtype=np.int64).astype(a.dtype))]
        if a.size == 0:
            return _Fact(taint, 1, 0)
        return _Fact(taint, int(a.min()), int(a.max()))

    def fact_of(v: Any, env: dict[Any, _Fact], here: SourceLocation | None = None) -> _Fact:
        if isinstance(v, literal):
            return constant_fact(v.val, here)
        f = env.get(v)
        if f is None and v in consts_of:
            return constant_fact(consts_of[v], here)  # a closed-over constant, where it is used
        return _UNKNOWN if f is None else f

    def bounds(f: _Fact, v: Any) -> tuple[int, int] | None:
        if f.lo is not None and f.hi is not None:
            return (f.lo, f.hi)
        return _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))

    def where(eqn: Any, site: SourceLocation | None) -> SourceLocation | None:
        """The user's line of ``eqn``; inside a library's own jitted function
        (``jnp.floor_divide``) its equations have none: the call's line."""
        tb = getattr(eqn.source_info, "traceback", None)
        here = _user_frame(tb, inside) if tb is not None else None
        return here if here is not None else site

    def report(eqn: Any, t: frozenset[int], site: SourceLocation | None, meets: bool) -> None:
        source = where(eqn, site)
        if source is None:
            source = user_source()  # while JAX traces: the line that called the function
        key = (eqn.primitive.name, source.file, source.line, meets)
        if key not in seen:
            seen.add(key)
            found.append(SentinelRead(eqn.primitive.name, t, source, meets))

    def meeting(eqn: Any, fs: list[_Fact]) -> frozenset[int]:
        """The images of sentinels that meet, in ``eqn``, other values that may equal them."""
        which = _MEETING.get(eqn.primitive.name, False)
        if which is False:
            return frozenset()
        idx = list(range(len(fs)))
        if isinstance(which, slice):
            idx = idx[which]
        elif isinstance(which, tuple):
            idx = [i for i in which if i < len(fs)]
        return meets_among([fs[i] for i in idx], [eqn.invars[i] for i in idx])

    def meets_among(fs: list[_Fact], vs: list[Any]) -> frozenset[int]:
        """The images of sentinels among ``fs`` that another of ``fs`` may hold
        as an ordinary value (``vs``: the values, for their types)."""
        hit: set[int] = set()
        for i, f in enumerate(fs):
            if not f.taint:
                continue
            for j, (g, v) in enumerate(zip(fs, vs)):
                if j == i:
                    continue
                b = bounds(g, v)
                if b is not None:
                    hit.update(image for image in f.taint if b[0] <= image <= b[1])
        return frozenset(hit)

    def widened(f: _Fact, v: Any) -> _Fact:
        """``f`` with its ordinary values anywhere in their type but at the
        images of the sentinels it may hold (each join was checked for them)."""
        r = _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))
        if r is None or not f.taint:
            return _Fact(f.taint)
        lo = r[0] + 1 if r[0] in f.taint else r[0]
        hi = r[1] - 1 if r[1] in f.taint else r[1]
        return _Fact(f.taint, lo, hi)

    def run(jx: Any, ins: list[_Fact], consts: Any = (),
            site: SourceLocation | None = None) -> list[_Fact]:
        env: dict[Any, _Fact] = {}
        for var, c in zip(jx.constvars, consts):
            consts_of[var] = c
        for var, f in zip(jx.invars, ins):
            env[var] = f
        for eqn in jx.eqns:
            # The user's line (a walk of the equation's traceback) only where
            # it matters: constants that may be sentinels, and sub-programs.
            if (images and any(isinstance(v, literal) or v in consts_of
                               for v in eqn.invars)) or any(
                    isinstance(p, jaxprs) or (
                        type(p) is tuple and p and isinstance(p[0], jaxprs))
                    for p in eqn.params.values()):
                here = where(eqn, site)
            else:
                here = site
            fs = [fact_of(v, env, here) for v in eqn.invars]
            t_all = frozenset().union(*(f.taint for f in fs)) if fs else frozenset()
            met = meeting(eqn, fs) if t_all else frozenset()
            if met:
                report(eqn, met, site, True)
            outs = _step(eqn, fs, t_all, here)
            if outs is None:
                report(eqn, t_all, site, False)
                continue
            for var, f in zip(eqn.outvars, outs):
                env[var] = f
        return [fact_of(v, env, site) for v in jx.outvars]

    def closed(cj: Any, ins: list[_Fact], site: SourceLocation | None = None) -> list[_Fact]:
        inner, consts = open_jaxpr(cj)
        return run(inner, ins, consts, site)

    def loop(eqn: Any, body: Any, consts: list[_Fact], carry: list[_Fact], rest: list[_Fact],
             n_out_extra: int, site: SourceLocation | None) -> list[_Fact]:
        """A carried loop body to a fixpoint: a carried range that changes is
        widened, and taint only grows.  A carried value joins what each trip
        computes: a sentinel meeting values that may be its image there is
        reported at the loop."""
        outs: list[_Fact] = []
        carried = eqn.outvars[:len(carry)]
        for _ in range(2 * len(carry) + 2):
            outs = closed(body, consts + carry + rest, site)
            new = []
            for c, o, v in zip(carry, outs[:len(carry)], carried):
                met = meets_among([c, o], [v, v])
                if met:
                    report(eqn, met, site, True)
                j = _join([c, o])
                new.append(j if (j.lo, j.hi) == (c.lo, c.hi) and j.taint == c.taint
                           else widened(j, v))
            if new == carry:
                break
            carry = new
        return carry + outs[len(carry):len(carry) + n_out_extra]

    def _step(eqn: Any, fs: list[_Fact], t_all: frozenset[int],
              site: SourceLocation | None) -> list[_Fact] | None:
        """The facts of ``eqn``'s results, or ``None`` if it reads a sentinel as a number."""
        name = eqn.primitive.name
        params = eqn.params
        n_out = len(eqn.outvars)
        if name in SENTINEL_MOVES:
            moved = fs
            if name == "select_n":
                if fs and fs[0].taint:
                    return None  # a sentinel as the case index
                moved = fs[1:]
            elif name == "scatter" and fs:
                if len(fs) > 1 and fs[1].taint:
                    return None  # a sentinel used as an index
                moved = [fs[0]] + fs[2:3]
            elif name in ("gather", "dynamic_slice", "dynamic_update_slice") and fs:
                n = 2 if name == "dynamic_update_slice" else 1
                if any(f.taint for f in fs[n:]):
                    return None  # a sentinel used as an index
                moved = fs[:n]
            elif name in ("sort", "split", "unstack") and len(fs) == n_out:
                return list(fs)  # result i holds elements of operand i
            elif name == "sort":
                return [_join(fs)] * n_out
            return [_join(moved)] * n_out
        if name in _FIRST_RESULT_MOVES:
            return [_join(fs[:1])] + [_UNKNOWN] * (n_out - 1)
        if name in SENTINEL_ORDERS:
            return [_UNKNOWN] * n_out
        if name == "iota":
            size = params["shape"][params["dimension"]]
            return [_Fact(frozenset(), 0, max(int(size) - 1, 0))]
        if name == "convert_element_type":
            src = eqn.invars[0].aval.dtype
            new = params["new_dtype"]
            if np.dtype(new) == np.dtype(src):
                return [fs[0]] * n_out
            if fs[0].taint:
                return None
            b, target = bounds(fs[0], eqn.invars[0]), _dtype_range(new)
            if b is not None and target is not None and target[0] <= b[0] and b[1] <= target[1]:
                return [_Fact(frozenset(), b[0], b[1])] * n_out
            return [_UNKNOWN] * n_out
        if name == "while":
            nc, nb = params["cond_nconsts"], params["body_nconsts"]
            carry = loop(eqn, params["body_jaxpr"], fs[nc:nc + nb], fs[nc + nb:], [], 0, site)
            closed(params["cond_jaxpr"], fs[:nc] + carry, site)
            return carry
        if name == "cond":
            if fs and fs[0].taint:
                return None  # a sentinel as the branch index
            results = [closed(branch, fs[1:], site) for branch in params["branches"]]
            outs = []
            for k, v in enumerate(eqn.outvars):
                per_branch = [r[k] for r in results]
                met = meets_among(per_branch, [v] * len(per_branch))
                if met:
                    report(eqn, met, site, True)  # the branches' results meet in the result
                outs.append(_join(per_branch))
            return outs
        if name == "scan":
            nc, ncarry = scan_layout(params, len(fs))
            consts, carry, xs = fs[:nc], fs[nc:nc + ncarry], fs[nc + ncarry:]
            return loop(eqn, params["jaxpr"], consts, carry, xs, n_out - ncarry, site)
        sub = _sub_jaxpr(params, len(fs), n_out)
        if sub is not None:
            return closed(sub, fs, site)
        if t_all:
            return None
        if images:  # constants of sub-jaxprs may be sentinels: look into them
            for sub_jaxpr in jaxprs_in_params(params):
                run(sub_jaxpr, [_UNKNOWN] * len(sub_jaxpr.invars), (), site)
        return [_UNKNOWN] * n_out

    inner, _ = open_jaxpr(jaxpr)
    ins = []
    for i, var in enumerate(inner.invars):
        taint = seeds.get(i, frozenset())
        if taint:
            # The input holds no ordinary element equal to the images of the
            # sentinels it holds (refused otherwise), and they are extremes.
            r = _dtype_range(var.aval.dtype) or (0, 0)
            lo = r[0] + 1 if r[0] in taint else r[0]
            hi = r[1] - 1 if r[1] in taint else r[1]
            ins.append(_Fact(taint, lo, hi))
        else:
            ins.append(_UNKNOWN)
    closed(jaxpr, ins)
    return found


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
        _record(EventKind.UNPROVEN, r.primitive, f"{what}: {why}", 1, source=r.source)
        if policy is RangePolicy.DEFAULT:
            _warn_sentinel(r.source, f"{what}: {why}. {way}, or use policy 'exact'")


def _warn_sentinel(source: SourceLocation, message: str) -> None:
    """One :class:`no64.UnprovenIntegerWarning` per user line where a host
    sentinel is read as a number or meets values that may be its image (the
    default policy computes with the image there: never silently)."""
    if not _warn_once_at(source, f"no64: {message}", UnprovenIntegerWarning, _warned_sentinels):
        warnings.warn(f"no64: {message}", UnprovenIntegerWarning, stacklevel=2)


#: per traced program (weakly): (seeds, images) -> what sentinel_reads found
_reads_cache: "weakref.WeakKeyDictionary[Any, dict[Any, list[SentinelRead]]]" = (
    weakref.WeakKeyDictionary())
_reads_lock = threading.Lock()


def check_sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                         images: frozenset[tuple[int, str | None, int | None]]) -> None:
    """:func:`sentinel_reads` (cached per jaxpr, seeds and images), then
    :func:`act_on_sentinel_reads`."""
    key = (tuple(sorted(seeds.items())), images)
    with _reads_lock:
        try:
            per = _reads_cache.get(jaxpr)
        except TypeError:
            per = None
        reads = per.get(key) if per is not None else None
    if reads is None:
        reads = sentinel_reads(jaxpr, seeds, images)
        with _reads_lock:
            try:
                _reads_cache.setdefault(jaxpr, {})[key] = reads
            except TypeError:
                pass
    act_on_sentinel_reads(reads)


def argument_seeds(leaves: list[Any], offset: int = 0) -> dict[int, frozenset[int]]:
    """Positions (plus ``offset``) of the host values among ``leaves`` that
    hold sentinels, and the 32-bit images they map to."""
    seeds: dict[int, frozenset[int]] = {}
    for i, x in enumerate(leaves):
        images = _sentinel_images(x)
        if images:
            seeds[i + offset] = images
    return seeds


def _install_sentinel_reads() -> None:
    """Wrap ``pjit._infer_params`` (the Python path of every ``jit`` call,
    ``.trace()`` and ``.lower()``: a call with a 64-bit numpy argument always
    takes it, see ``_install_fastpath_guard``): the host sentinels mapped
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
        _local.images = set()
        try:
            p, args_flat = original(fun, ji, args, kwargs)
            images = frozenset(_local.images)
        finally:
            _local.images = set()
        seeds = argument_seeds(args_flat)
        if images or seeds:
            check_sentinel_reads(p.params["jaxpr"], seeds, images)
        return p, args_flat

    _infer_params.__wrapped__ = original  # type: ignore[attr-defined]
    _infer_params.__no64__ = True  # type: ignore[attr-defined]
    replace_jit_function("_infer_params", _infer_params)


def _exclude_from_source_locations() -> None:
    """No frame of no64 is the user's frame in JAX's source locations (the
    locations of a module's ops, which the pass's reports and refusals name)."""
    from .._compat import hide_from_source_locations

    hide_from_source_locations(_OWN_DIR)


