"""Host sentinels followed through a traced program: a jaxpr interpreter
that finds the primitives reading one as a number, or where one meets values
that may be its 32-bit image (:func:`sentinel_reads`).  What each primitive
does with a sentinel is the primitive table's (:mod:`no64.jax.primitives`);
a primitive it does not know reads it."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...ir.locations import SourceLocation
from ...ir.types import U32 as _U32
from ...kinds import SentinelUse
from ..primitives import LoopOperands, PrimitiveSpec, Results, Role, primitive
from .policy import INT32, UINT32
from .records import library_dirs, user_frame_at, user_source


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


#: A host sentinel mapped to its 32-bit image: ``(image, file, line, offset)``,
#: where the user's code was (``offset``: the instruction running in its frame,
#: which tells two expressions of a line apart; ``None`` where unknown).
MappedImage = tuple[int, str | None, int | None, int | None]


class _Where(NamedTuple):
    """The user's line of an equation, and the instruction of it."""

    source: SourceLocation
    offset: int | None


#: Where an equation was traced, where known (``None``: not known).
_Site = _Where | None


def sentinel_reads(jaxpr: Any, seeds: dict[int, frozenset[int]],
                   images: frozenset[MappedImage]) -> list[SentinelRead]:
    """The primitives of ``jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``) that read
    a host sentinel as a number, or where one meets values that may be its
    32-bit image (the ranges of other values are known from constants,
    iotas, narrow integer types and the ops that move them; anything else
    may be any value of its type).

    Args:
      seeds: Input positions holding host sentinels -> their 32-bit images
        (the input holds no other element equal to one: host narrowing
        refuses such an array).
      images: ``(image, file, line, offset)``: a host sentinel became
        ``image`` while ``jaxpr`` was traced, at that user's expression: a
        constant or literal holding ``image`` used by an equation traced
        there may be that sentinel (an ``INT32_MAX`` of another expression,
        or a library's own elsewhere, is not).
    """
    return sentinel_walk(jaxpr, seeds, images)[0]


def sentinel_walk(jaxpr: Any, seeds: dict[int, frozenset[int]],
                  images: frozenset[MappedImage]) -> tuple[list[SentinelRead], list[frozenset[int]]]:
    """:func:`sentinel_reads`, and for each result of ``jaxpr`` the 32-bit
    images that, where it holds them, are certainly host sentinels (its
    ordinary values are known to exclude them)."""
    from .._compat import open_jaxpr

    walk = _Walk(images)
    outs = walk.closed(jaxpr, _entry_facts(open_jaxpr(jaxpr)[0], seeds))
    return walk.found, [_certain(f) for f in outs]


def _certain(f: _Fact) -> frozenset[int]:
    """The images of the sentinels ``f`` may hold that none of its ordinary values equals."""
    if not f.taint or f.lo is None or f.hi is None:
        return frozenset()
    return frozenset(i for i in f.taint if not f.lo <= i <= f.hi)


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

    def __init__(self, images: frozenset[MappedImage]) -> None:
        from .._compat import jaxpr_classes, jaxpr_literal_type

        self.images = images
        self.image_set = frozenset(i for i, *_ in images)
        self.jaxprs = jaxpr_classes()
        self.literal: Any = jaxpr_literal_type()
        self.inside = library_dirs()
        self.found: list[SentinelRead] = []
        self.seen: set[tuple[str, str | None, int | None, bool]] = set()
        #: the closed-over constants met so far, by their variables
        self.consts_of: dict[Any, Any] = {}

    # -- values
    def images_at(self, here: _Site) -> frozenset[int]:
        """The images host sentinels became at the user's expression ``here``
        (its line, and its instruction where both are known)."""
        if here is None:
            return self.image_set
        at, offset = here.source, here.offset
        return frozenset(i for i, f, ln, off in self.images
                         if (f, ln) == (at.file, at.line) and (off is None or offset is None or off == offset))

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
        here = user_frame_at(tb, self.inside) if tb is not None else None
        return _Where(*here) if here is not None else site

    def report(self, eqn: Any, t: frozenset[int], site: _Site, meets: bool) -> None:
        here = self.where(eqn, site)
        # while JAX traces: the line that called the function
        source = here.source if here is not None else user_source()
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
