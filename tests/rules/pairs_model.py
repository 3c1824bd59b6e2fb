"""A numpy model of no64's double-f32 algorithms, step by step in IEEE f32.

Each function mirrors the op sequence :mod:`no64.ir.pairs` emits, one f32
operation per step, with subnormal inputs and results flushed to zero as
XLA's CPU runtime does; the tests compare the compiled module's words with
these bit for bit.
"""

from __future__ import annotations

import numpy as np

F = np.float32
_TINY = np.float32(np.finfo(np.float32).tiny)


#: Set to a boolean array to record the elements where some step flushed a
#: nonzero subnormal (there a backend that contracts a product into an FMA
#: -- which does not flush the product -- may give another result).
FLUSHED: np.ndarray | None = None


def ftz(x: np.ndarray) -> np.ndarray:
    global FLUSHED
    x = np.asarray(x, dtype=F)
    if FLUSHED is not None and x.shape == FLUSHED.shape:
        FLUSHED |= (x != 0) & (np.abs(x) < _TINY)
    return np.where(np.abs(x) < _TINY, np.copysign(F(0), x), x).astype(F)


def _op(fn):
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return ftz(fn(*(ftz(a) for a in args)))
    return wrapped


fadd = _op(lambda a, b: (a + b).astype(F))
fsub = _op(lambda a, b: (a - b).astype(F))
fmul = _op(lambda a, b: (a * b).astype(F))
fdiv = _op(lambda a, b: (a / b).astype(F))
fsqrt = _op(lambda a: np.sqrt(a).astype(F))
def run(fn, *args):
    """``fn(*args)`` and the elements where a step flushed a subnormal."""
    global FLUSHED
    FLUSHED = np.zeros(np.shape(args[0]), bool)
    try:
        return fn(*args), FLUSHED
    finally:
        FLUSHED = None


fneg = lambda a: (-np.asarray(a, dtype=F)).astype(F)  # noqa: E731


def two_sum(a, b, negated=False):
    s = fadd(a, b)
    bb = fsub(s, a)
    if negated:
        return s, fadd(fsub(fsub(s, bb), a), fsub(bb, b))
    return s, fadd(fsub(a, fsub(s, bb)), fsub(b, bb))


def fast_two_sum(a, b):
    s = fadd(a, b)
    return s, fsub(b, fsub(s, a))


def fast_two_diff(a, nb):
    s = fsub(a, nb)
    return s, fsub(fsub(a, s), nb)


def halves(a):
    a = ftz(a)
    ah = (a.view(np.uint32) & np.uint32(0xFFFFF000)).view(F)
    return ah, fsub(a, ah)


def rprod(a, b):
    ah, al = halves(a)
    bh, bl = halves(b)
    return fadd(fadd(fadd(fmul(al, bl), fmul(al, bh)), fmul(ah, bl)), fmul(ah, bh))


def two_prod(a, b, negated=False):
    p = fmul(a, b)
    ah, al = halves(a)
    bh, bl = halves(b)
    if negated:
        t = fsub(fsub(fsub(p, fmul(ah, bh)), fmul(ah, bl)), fmul(al, bh))
        return p, fsub(t, fmul(al, bl))
    t = fsub(fmul(ah, bh), p)
    t = fadd(t, fmul(ah, bl))
    t = fadd(t, fmul(al, bh))
    return p, fadd(t, fmul(al, bl))


def finish(h, l):
    return h, np.where(np.isfinite(h), l, F(0)).astype(F)


def guard(z, plain):
    fin = np.isfinite(plain)
    return np.where(fin, z[0], plain).astype(F), np.where(fin, z[1], F(0)).astype(F)


def add(xh, xl, yh, yl):
    sh, nsl = two_sum(xh, yh, negated=True)
    th, ntl = two_sum(xl, yl, negated=True)
    nc = fsub(nsl, th)
    vh, vl = fast_two_diff(sh, nc)
    nw = fsub(ntl, vl)
    return finish(*guard(fast_two_diff(vh, nw), sh))


def sub(xh, xl, yh, yl):
    return add(xh, xl, fneg(yh), fneg(yl))


def scale(p, q, f):
    return fmul(p, f), fmul(q, f)


def pick(p, a, q, b):
    return np.where(p, F(a), np.where(q, F(b), F(1))).astype(F)


LOW, MID = F(2.0**-70), F(2.0**-38)


def mul(xh, xl, yh, yl):
    ax, ay = np.abs(ftz(xh)), np.abs(ftz(yh))
    up_x = (ax < LOW) & (ay >= MID)
    up_y = (ay < LOW) & (ax >= MID)
    xh, xl = scale(xh, xl, pick(up_x, 2.0**32, up_y, 2.0**-32))
    yh, yl = scale(yh, yl, pick(up_x, 2.0**-32, up_y, 2.0**32))
    ch, ncl1 = two_prod(xh, yh, negated=True)
    cl2 = fadd(rprod(xh, yl), rprod(xl, yh))
    ncl3 = fsub(ncl1, cl2)
    return finish(*guard(fast_two_diff(ch, ncl3), ch))


def times_float(xh, xl, y):
    ch, cl1 = two_prod(xh, y)
    cl2 = rprod(xl, y)
    th, tl = fast_two_sum(ch, cl2)
    return fast_two_sum(th, fadd(tl, cl1))


def div(xh, xl, yh, yl):
    f = np.where(np.abs(ftz(yh)) < LOW, F(2.0**32), F(1)).astype(F)
    xh, xl = scale(xh, xl, f)
    yh, yl = scale(yh, yl, f)
    up = np.abs(ftz(xh)) < LOW
    xh, xl = scale(xh, xl, np.where(up, F(2.0**32), F(1)).astype(F))
    back = np.where(up, F(2.0**-32), F(1)).astype(F)
    th = fdiv(xh, yh)
    rh, rl = times_float(yh, yl, th)
    ph, pl = two_sum(xh, fneg(rh))
    dh = fsub(pl, rl)
    dl = fadd(dh, xl)
    d = fadd(ph, dl)
    tl = fdiv(d, yh)
    zh, zl = fast_two_sum(th, tl)
    fin = np.isfinite(zh) & (zh != 0)
    return finish(*scale(np.where(fin, zh, th).astype(F), np.where(fin, zl, F(0)).astype(F), back))


def sqrt(xh, xl):
    small = ftz(xh) < LOW
    xh, xl = scale(xh, xl, np.where(small, F(2.0**64), F(1)).astype(F))
    down = np.where(small, F(2.0**-32), F(1)).astype(F)
    s = fsqrt(xh)
    ph, pl = two_prod(s, s)
    r = fadd(fsub(fsub(xh, ph), pl), xl)
    t = fdiv(r, fadd(s, s))
    zh, zl = fast_two_sum(s, t)
    ok = np.isfinite(s) & (s != 0)
    return finish(*scale(np.where(ok, zh, s).astype(F), np.where(ok, zl, F(0)).astype(F), down))
