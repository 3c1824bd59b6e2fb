"""Host sentinels that the program reads as numbers, or meets their 32-bit image: a jaxpr interpreter."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ...errors import HostRangeError, PythonIntRangeError, UnprovenIntegerWarning
from ...ir.locations import SourceLocation
from ...ir.types import I32 as _I32, I64 as _I64, U32 as _U32, U64 as _U64
from ...kinds import EventKind, SentinelUse
from ..primitives import LoopOperands, PrimitiveSpec, Results, Role, primitive
from ..state import STATE
from .narrowing import PAIRS, warn_once_at, warned_sentinels
from .policy import INT32, INT64, OWN_DIR, UINT32, UINT64, host_policy
from .records import library_dirs, local_state, record_event, user_frame, user_source

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
# What each primitive does with a sentinel is the primitive table's
# (:mod:`no64.jax.primitives`); a primitive it does not know reads it.

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
    if dt == INT32:
        wanted = [i for i in images if i != _U32.max]
    elif dt == UINT32:
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
            wide = np.dtype(dt) in (INT64, UINT64)
        except TypeError:
            wide = False
        if not wide or isinstance(x, _tracer_type()):
            return frozenset()
        x = np.asarray(x)
        t = np.ndarray
    if (t is np.ndarray or isinstance(x, np.generic)) and x.dtype in (INT64, UINT64):
        unsigned = x.dtype == UINT64
        return frozenset(image for sentinel, _, image, _ in PAIRS[unsigned]
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


#: The user's line of an equation, where known (``None``: not known).
_Site = SourceLocation | None


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
    from .._compat import open_jaxpr

    walk = _Walk(images)
    walk.closed(jaxpr, _entry_facts(open_jaxpr(jaxpr)[0], seeds))
    return walk.found


def _entry_facts(inner: Any, seeds: dict[int, frozenset[int]]) -> list[_Fact]:
    """The facts of an open jaxpr's inputs: those holding host sentinels hold
    no ordinary element equal to their images (refused otherwise), and the
    images are their type's extremes."""
    ins = []
    for i, var in enumerate(inner.invars):
        taint = seeds.get(i, frozenset())
        if taint:
            r = _dtype_range(var.aval.dtype) or (0, 0)
            lo = r[0] + 1 if r[0] in taint else r[0]
            hi = r[1] - 1 if r[1] in taint else r[1]
            ins.append(_Fact(taint, lo, hi))
        else:
            ins.append(_UNKNOWN)
    return ins


def _bounds(f: _Fact, v: Any) -> tuple[int, int] | None:
    """The range of ``f``'s ordinary values (``v``: the value, for its type's)."""
    if f.lo is not None and f.hi is not None:
        return (f.lo, f.hi)
    return _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))


def _meets_among(fs: list[_Fact], vs: list[Any]) -> frozenset[int]:
    """The images of sentinels among ``fs`` that another of ``fs`` may hold
    as an ordinary value (``vs``: the values, for their types)."""
    hit: set[int] = set()
    for i, f in enumerate(fs):
        if not f.taint:
            continue
        for j, (g, v) in enumerate(zip(fs, vs)):
            if j == i:
                continue
            b = _bounds(g, v)
            if b is not None:
                hit.update(image for image in f.taint if b[0] <= image <= b[1])
    return frozenset(hit)


def _widened(f: _Fact, v: Any) -> _Fact:
    """``f`` with its ordinary values anywhere in their type but at the
    images of the sentinels it may hold (each join was checked for them)."""
    r = _dtype_range(getattr(getattr(v, "aval", None), "dtype", None))
    if r is None or not f.taint:
        return _Fact(f.taint)
    lo = r[0] + 1 if r[0] in f.taint else r[0]
    hi = r[1] - 1 if r[1] in f.taint else r[1]
    return _Fact(f.taint, lo, hi)


def _moved(spec: PrimitiveSpec, eqn: Any, fs: list[_Fact]) -> list[_Fact] | None:
    """The facts of the results of a primitive that moves its carried
    operands' elements, or ``None`` if it reads a sentinel (an index, a shape)."""
    uses = [spec.sentinel_use(i) for i in range(len(fs))]
    if any(f.taint for f, use in zip(fs, uses) if use is SentinelUse.READS):
        return None  # a sentinel used as an index
    n_out = len(eqn.outvars)
    if spec.results is Results.EACH and len(fs) == n_out:
        return list(fs)  # result i holds elements of operand i
    carried = _join([f for f, use in zip(fs, uses) if use is SentinelUse.CARRIES])
    if spec.results is Results.FIRST:
        return [carried] + [_UNKNOWN] * (n_out - 1)
    return [carried] * n_out


def _iota(eqn: Any) -> list[_Fact]:
    """The indices an iota holds: ``[0, size)`` along its dimension."""
    params = eqn.params
    size = params["shape"][params["dimension"]]
    return [_Fact(frozenset(), 0, max(int(size) - 1, 0))]


def _converted(eqn: Any, fs: list[_Fact]) -> list[_Fact] | None:
    """The facts of a conversion's results, or ``None`` if it reads a
    sentinel (converts it to another type)."""
    n_out = len(eqn.outvars)
    src = eqn.invars[0].aval.dtype
    new = eqn.params["new_dtype"]
    if np.dtype(new) == np.dtype(src):
        return [fs[0]] * n_out
    if fs[0].taint:
        return None
    b, target = _bounds(fs[0], eqn.invars[0]), _dtype_range(new)
    if b is not None and target is not None and target[0] <= b[0] and b[1] <= target[1]:
        return [_Fact(frozenset(), b[0], b[1])] * n_out
    return [_UNKNOWN] * n_out


class _Walk:
    """One walk of a traced program (see :func:`sentinel_reads`): what it
    found, and what it knows of the program's constants."""

    def __init__(self, images: frozenset[tuple[int, str | None, int | None]]) -> None:
        from .._compat import jaxpr_classes, jaxpr_literal_type

        self.images = images
        self.image_set = frozenset(i for i, _, _ in images)
        self.jaxprs = jaxpr_classes()
        self.literal: Any = jaxpr_literal_type()
        self.inside = library_dirs()
        self.found: list[SentinelRead] = []
        self.seen: set[tuple[str, str | None, int | None, bool]] = set()
        #: the closed-over constants met so far, by their variables
        self.consts_of: dict[Any, Any] = {}

    # -- values
    def images_at(self, here: _Site) -> frozenset[int]:
        """The images host sentinels became at the user's line ``here``."""
        if here is None:
            return self.image_set
        return frozenset(i for i, f, ln in self.images if (f, ln) == (here.file, here.line))

    def constant_fact(self, val: Any, here: _Site) -> _Fact:
        """What a constant used at ``here`` holds: the images of host
        sentinels mapped there, and the range of its other elements."""
        if _dtype_range(getattr(val, "dtype", type(val))) is None and type(val) is not int:
            return _UNKNOWN
        a = np.asarray(val)
        if a.dtype.kind not in "iub" or a.size == 0 or a.size > 1 << 20:
            return _UNKNOWN
        wanted = self.images_at(here) if self.images else frozenset()
        taint = _images_in(val, wanted) if wanted else frozenset()
        if taint:
            a = a[~np.isin(a, np.array(sorted(taint), dtype=np.int64).astype(a.dtype))]
        if a.size == 0:
            return _Fact(taint, 1, 0)
        return _Fact(taint, int(a.min()), int(a.max()))

    def fact_of(self, v: Any, env: dict[Any, _Fact], here: _Site = None) -> _Fact:
        if isinstance(v, self.literal):
            return self.constant_fact(v.val, here)
        f = env.get(v)
        if f is None and v in self.consts_of:
            return self.constant_fact(self.consts_of[v], here)  # a closed-over constant, where it is used
        return _UNKNOWN if f is None else f

    # -- where, and what was found
    def where(self, eqn: Any, site: _Site) -> _Site:
        """The user's line of ``eqn``; inside a library's own jitted function
        (``jnp.floor_divide``) its equations have none: the call's line."""
        tb = getattr(eqn.source_info, "traceback", None)
        here = user_frame(tb, self.inside) if tb is not None else None
        return here if here is not None else site

    def report(self, eqn: Any, t: frozenset[int], site: _Site, meets: bool) -> None:
        source = self.where(eqn, site)
        if source is None:
            source = user_source()  # while JAX traces: the line that called the function
        key = (eqn.primitive.name, source.file, source.line, meets)
        if key not in self.seen:
            self.seen.add(key)
            self.found.append(SentinelRead(eqn.primitive.name, t, source, meets))

    def meeting(self, eqn: Any, fs: list[_Fact]) -> frozenset[int]:
        """The images of sentinels that meet, in ``eqn``, other values that may equal them."""
        spec = primitive(eqn.primitive.name)
        idx = spec.meeting(len(fs)) if spec is not None else []
        return _meets_among([fs[i] for i in idx], [eqn.invars[i] for i in idx])

    # -- programs
    def line_matters(self, eqn: Any) -> bool:
        """Whether ``eqn``'s own user line is needed (a walk of its traceback):
        for constants that may be sentinels, and for sub-programs."""
        if self.images and any(isinstance(v, self.literal) or v in self.consts_of for v in eqn.invars):
            return True
        return any(isinstance(p, self.jaxprs) or (type(p) is tuple and p and isinstance(p[0], self.jaxprs))
                   for p in eqn.params.values())

    def run(self, jx: Any, ins: list[_Fact], consts: Any = (), site: _Site = None) -> list[_Fact]:
        """The facts of an open jaxpr's results, from its inputs'."""
        env: dict[Any, _Fact] = {}
        for var, c in zip(jx.constvars, consts):
            self.consts_of[var] = c
        for var, f in zip(jx.invars, ins):
            env[var] = f
        for eqn in jx.eqns:
            self.equation(eqn, env, site)
        return [self.fact_of(v, env, site) for v in jx.outvars]

    def equation(self, eqn: Any, env: dict[Any, _Fact], site: _Site) -> None:
        """Follow one equation: report what it reads or where sentinels
        meet, and note its results' facts in ``env``."""
        here = self.where(eqn, site) if self.line_matters(eqn) else site
        fs = [self.fact_of(v, env, here) for v in eqn.invars]
        t_all = frozenset().union(*(f.taint for f in fs)) if fs else frozenset()
        met = self.meeting(eqn, fs) if t_all else frozenset()
        if met:
            self.report(eqn, met, site, True)
        outs = self.step(eqn, fs, t_all, here)
        if outs is None:
            self.report(eqn, t_all, site, False)
            return
        for var, f in zip(eqn.outvars, outs):
            env[var] = f

    def closed(self, cj: Any, ins: list[_Fact], site: _Site = None) -> list[_Fact]:
        from .._compat import open_jaxpr

        inner, consts = open_jaxpr(cj)
        return self.run(inner, ins, consts, site)

    def loop(self, eqn: Any, body: Any, consts: list[_Fact], carry: list[_Fact], rest: list[_Fact],
             n_out_extra: int, site: _Site) -> list[_Fact]:
        """A carried loop body to a fixpoint: a carried range that changes is
        widened, and taint only grows.  A carried value joins what each trip
        computes: a sentinel meeting values that may be its image there is
        reported at the loop."""
        outs: list[_Fact] = []
        carried = eqn.outvars[:len(carry)]
        for _ in range(2 * len(carry) + 2):
            outs = self.closed(body, consts + carry + rest, site)
            new = []
            for c, o, v in zip(carry, outs[:len(carry)], carried):
                met = _meets_among([c, o], [v, v])
                if met:
                    self.report(eqn, met, site, True)
                j = _join([c, o])
                new.append(j if (j.lo, j.hi) == (c.lo, c.hi) and j.taint == c.taint else _widened(j, v))
            if new == carry:
                break
            carry = new
        return carry + outs[len(carry):len(carry) + n_out_extra]

    # -- primitives
    def step(self, eqn: Any, fs: list[_Fact], t_all: frozenset[int], site: _Site) -> list[_Fact] | None:
        """The facts of ``eqn``'s results, or ``None`` if it reads a sentinel as a number."""
        spec = primitive(eqn.primitive.name)
        if spec is None:
            return self.other(eqn, fs, t_all, site)
        role = spec.role
        if role is Role.MOVES:
            return _moved(spec, eqn, fs)
        if role is Role.ORDERS:
            return [_UNKNOWN] * len(eqn.outvars)
        if role is Role.IOTA:
            return _iota(eqn)
        if role is Role.CONVERT:
            return _converted(eqn, fs)
        if role is Role.LOOP:
            return self.scan(eqn, fs, site) if spec.loop is LoopOperands.SCAN else self.while_loop(eqn, fs, site)
        if role is Role.BRANCHES:
            return self.branches(eqn, fs, site)
        return self.other(eqn, fs, t_all, site)

    def while_loop(self, eqn: Any, fs: list[_Fact], site: _Site) -> list[_Fact]:
        params = eqn.params
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        carry = self.loop(eqn, params["body_jaxpr"], fs[nc:nc + nb], fs[nc + nb:], [], 0, site)
        self.closed(params["cond_jaxpr"], fs[:nc] + carry, site)
        return carry

    def scan(self, eqn: Any, fs: list[_Fact], site: _Site) -> list[_Fact]:
        from .._compat import scan_layout

        nc, ncarry = scan_layout(eqn.params, len(fs))
        consts, carry, xs = fs[:nc], fs[nc:nc + ncarry], fs[nc + ncarry:]
        return self.loop(eqn, eqn.params["jaxpr"], consts, carry, xs, len(eqn.outvars) - ncarry, site)

    def branches(self, eqn: Any, fs: list[_Fact], site: _Site) -> list[_Fact] | None:
        """The joined facts of the branches' results (where a sentinel meets
        values that may be its image: reported at the branch)."""
        if fs and fs[0].taint:
            return None  # a sentinel as the branch index
        results = [self.closed(branch, fs[1:], site) for branch in eqn.params["branches"]]
        outs = []
        for k, v in enumerate(eqn.outvars):
            per_branch = [r[k] for r in results]
            met = _meets_among(per_branch, [v] * len(per_branch))
            if met:
                self.report(eqn, met, site, True)  # the branches' results meet in the result
            outs.append(_join(per_branch))
        return outs

    def other(self, eqn: Any, fs: list[_Fact], t_all: frozenset[int], site: _Site) -> list[_Fact] | None:
        """A call of one sub-program (followed into it), or a primitive that
        reads its operands as numbers."""
        from .._compat import jaxprs_in_params

        n_out = len(eqn.outvars)
        sub = _sub_jaxpr(eqn.params, len(fs), n_out)
        if sub is not None:
            return self.closed(sub, fs, site)
        if t_all:
            return None
        if self.images:  # constants of sub-jaxprs may be sentinels: look into them
            for sub_jaxpr in jaxprs_in_params(eqn.params):
                self.run(sub_jaxpr, [_UNKNOWN] * len(sub_jaxpr.invars), (), site)
        return [_UNKNOWN] * n_out


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


