"""Where a 64-bit sentinel is read: the uses the narrowed program could get wrong.

The pass narrows ``INT64_MAX``, ``INT64_MIN`` and ``UINT64_MAX`` to the
32-bit extremes.  That keeps the program's meaning only where the sentinel
stands for itself: where an op moves, selects or orders it into its results
(the range analysis carries it there), or compares it with values that never
reach its 32-bit extreme.  The op table says which is which, per operand
(:class:`~no64.kinds.SentinelUse`); this module lists, for values the
analysis says may hold a sentinel, every use by an op that does not carry it:

* ``COMPARES`` -- the pass checks that no ordinary value the sentinel meets
  can equal its 32-bit extreme (else the value is ``unproven``);
* ``READS`` -- the op computes with the 64-bit number the sentinel is
  (``INT64_MAX % 1000``, ``clz``, ``>> 33``, a convert to float, ...): the
  emulation step computes the op on 32-bit words, the sentinel entering with
  its 64-bit value; where it cannot, the value is ``unproven``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..ir._mlir import as_operation as _as_op, ir
from ..kinds import SentinelUse
from .ranges import RangeAnalysis

__all__ = ["SentinelReading", "sentinel_readings", "sentinel_names"]

_NAMES = {2**63 - 1: "INT64_MAX", -(2**63): "INT64_MIN", 2**64 - 1: "UINT64_MAX"}


def sentinel_names(sentinels: Iterable[int]) -> str:
    """``"INT64_MAX/INT64_MIN"``: the sentinels by name."""
    return "/".join(_NAMES[s] for s in sorted(sentinels))


@dataclasses.dataclass(frozen=True)
class SentinelReading:
    """Operand ``operand`` of ``op`` is ``value``, which may hold ``sentinels``,
    and ``op`` does not carry it (``use`` is ``COMPARES`` or ``READS``)."""

    op: ir.Operation
    operand: int
    value: ir.Value
    use: SentinelUse
    sentinels: frozenset[int]


def sentinel_readings(analysis: RangeAnalysis, values: Iterable[ir.Value]) -> list[SentinelReading]:
    """Every use of one of ``values`` that may hold a sentinel by an op that
    compares or reads it, in the order of ``values`` and their uses."""
    from ..spec.registry import spec_of

    out: list[SentinelReading] = []
    for v in values:
        r = analysis.range(v)
        if r is None or not r.sentinels:
            continue
        for use in v.uses:
            op = _as_op(use.owner)
            i = use.operand_number
            how = spec_of(op.name).sentinel_use(op, i)
            if how is not SentinelUse.CARRIES:
                out.append(SentinelReading(op, i, v, how, r.sentinels))
    return out
