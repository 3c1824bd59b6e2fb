"""The value domain of the range analysis: integer intervals that know about sentinels.

A :class:`Range` bounds the values an integer takes in the *original*
(64-bit) program: the ordinary values lie in ``[lo, hi]`` and, besides them,
the value may hold some 64-bit *sentinels* (``INT64_MAX``, ``INT64_MIN``,
``UINT64_MAX``), which the pass narrows to the 32-bit extremes.

A sentinel keeps its meaning after narrowing only while it cannot be
confused with an ordinary value: ops that move, select or order values
(broadcast, select, min/max, sort, reductions by min/max, ...) carry it
along, and the verdict checks that no ordinary value reaches the 32-bit
extreme the sentinel becomes.  Arithmetic sees a sentinel as the 64-bit
number it is (:meth:`Range.plain`), so ``INT64_MAX + 1`` is an overflow,
not a sentinel.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..kinds import Verdict

__all__ = [
    "Range",
    "Interval",
    "INT32",
    "UINT32",
    "INT64",
    "UINT64",
    "SENTINELS",
    "verdict",
    "verdict_of",
    "join",
    "fit",
]

Interval = tuple[int, int]

INT32: Interval = (-(2**31), 2**31 - 1)
UINT32: Interval = (0, 2**32 - 1)
INT64: Interval = (-(2**63), 2**63 - 1)
UINT64: Interval = (0, 2**64 - 1)

#: 64-bit sentinels and the 32-bit extremes they are narrowed to.
SENTINELS: dict[int, int] = {
    2**63 - 1: 2**31 - 1,
    -(2**63): -(2**31),
    2**64 - 1: 2**32 - 1,
}

_NONE: frozenset[int] = frozenset()


class Range(NamedTuple):
    """Ordinary values in ``[lo, hi]`` (none when ``lo > hi``), plus the
    sentinels the value may also hold."""

    lo: int
    hi: int
    sentinels: frozenset[int] = _NONE

    @property
    def empty(self) -> bool:
        """No ordinary value (a sentinel constant, or no value at all)."""
        return self.lo > self.hi

    @property
    def interval(self) -> Interval:
        """Every value as one interval, sentinels at their 64-bit values."""
        p = self.plain()
        return (p.lo, p.hi)

    def plain(self) -> Range:
        """The sentinels as the 64-bit numbers they are (for arithmetic)."""
        if not self.sentinels:
            return self
        lo, hi = self.lo, self.hi
        for s in self.sentinels:
            lo, hi = (s, s) if lo > hi else (min(lo, s), max(hi, s))
        return Range(lo, hi)

    def as_32bit(self) -> Interval:
        """Every value the narrowed program sees: sentinels at their 32-bit images."""
        lo, hi = self.lo, self.hi
        for s in self.sentinels:
            t = SENTINELS[s]
            lo, hi = (t, t) if lo > hi else (min(lo, t), max(hi, t))
        return (lo, hi)


def join(ranges: Iterable[Range]) -> Range:
    """The smallest range holding every value of ``ranges`` (sentinels kept)."""
    lo: int | None = None
    hi = 0
    sent: frozenset[int] = _NONE
    for r in ranges:
        if r.sentinels:
            sent = sent | r.sentinels
        if r.lo > r.hi:
            continue
        if lo is None:
            lo, hi = r.lo, r.hi
        else:
            lo, hi = min(lo, r.lo), max(hi, r.hi)
    if lo is None:
        return Range(1, 0, sent)
    return Range(lo, hi, sent)


def fit(lo: int, hi: int, full: Interval) -> Range:
    """``[lo, hi]`` if the type holds it; else the type's full range (the op wrapped)."""
    if full[0] <= lo and hi <= full[1]:
        return Range(lo, hi)
    return Range(*full)


def verdict(iv: Interval, unsigned: bool) -> Verdict:
    """``exact``, ``unproven`` or ``overflow`` for narrowing ``iv`` to 32 bits."""
    lo32, hi32 = UINT32 if unsigned else INT32
    lo, hi = iv
    if lo32 <= lo and hi <= hi32:
        return Verdict.EXACT
    if hi < lo32 or lo > hi32:
        return Verdict.OVERFLOW
    return Verdict.UNPROVEN


def collides(r: Range, sentinels: frozenset[int]) -> bool:
    """Whether an ordinary value of ``r`` can equal the 32-bit image of one of
    ``sentinels`` (so that the narrowed program could not tell them apart)."""
    if r.lo > r.hi:
        return False
    return any(r.lo <= SENTINELS[s] <= r.hi for s in sentinels)


def sentinel_collision(r: Range, unsigned: bool) -> bool:
    """Whether ``r`` is unproven only because it may hold a sentinel whose
    32-bit image its ordinary values (which fit 32 bits) may reach."""
    if not r.sentinels:
        return False
    if r.lo <= r.hi and verdict((r.lo, r.hi), unsigned) is not Verdict.EXACT:
        return False
    return collides(r, r.sentinels)


def verdict_of(r: Range, unsigned: bool) -> Verdict:
    """The verdict for narrowing a value of range ``r`` to 32 bits.

    ``"exact"`` or ``"overflow"``/``"unproven"`` as :func:`verdict` for its
    ordinary values; a value that may hold a sentinel is ``"sentinel"`` when
    its ordinary values are exact and never reach the sentinel's 32-bit
    image, else ``"unproven"``.
    """
    if r.lo <= r.hi:
        v = verdict((r.lo, r.hi), unsigned)
        if v is not Verdict.EXACT:
            return v
    if not r.sentinels:
        return Verdict.EXACT
    return Verdict.UNPROVEN if collides(r, r.sentinels) else Verdict.SENTINEL
