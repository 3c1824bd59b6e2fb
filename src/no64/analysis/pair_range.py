"""Where a float64 value computed as f32 pairs may leave their range.

Under ``float_policy="pairs"`` every float64 value is a pair of f32 (see
:mod:`no64.transforms.pairs`): about 48 bits of significand, f32's exponent
range.  A value beyond 3.4e38 becomes ``inf`` and one below 2**-78 may keep
fewer than 48 bits (below 2**-126 none), where float64 keeps it.  Constants
and host data are checked by value where they enter
(:func:`no64.ir.pairs.range_check`); this module names, on the 64-bit module
before the rewrite, the ops that may take a value out of the range *from
operands within it*, each once per source line and only where it first
arises (not at the ops downstream of it):

* a product, quotient, square or dot whose result the magnitude analysis
  (:mod:`no64.analysis.float_hints`'s intervals) bounds beyond 3.4e38, or
  away from zero below 2**-78;
* the same of values of unknown magnitude (inputs, loop-carried values,
  transcendentals' results), each such value taken to be within
  ``2**±64`` in magnitude -- half f32's exponent range on either side: so
  a product or a dot of two of them, a quotient by one of them, or a
  product with a constant beyond 2**64 is named, a sum of them or a
  product with an ordinary constant is not;
* an op the op table declares ``amplifies`` (``exp``, ``expm1``,
  ``power``, ``sinh``, ``cosh``) on an operand not known to be within
  ``[-16, 16]``.

Adds, subtracts and sums are named only where the bounds show they may
pass 3.4e38.  The records are ``pair-range`` events in the report, at the
op's line: a value so named may still stay in range when the program runs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..ir._mlir import ir
from ..ir.locations import SourceLocation
from ..ir.pairs import PAIR_FULL_MIN, PAIR_MAX
from ..kinds import HintKind
from ..spec.registry import Computes, OpSpec
from .float_hints import Interval, _constant_floats, _Hints, _is_f64, _is_sum, _mag_hi, _mag_lo, _moves

__all__ = ["PairRange", "pair_range"]

#: The magnitude taken for a float64 value the analysis cannot bound.
_NOMINAL_EXP = 64
_NOMINAL: Interval = (-(2.0**_NOMINAL_EXP), 2.0**_NOMINAL_EXP)
#: An ``amplifies`` op is not named where its operands are within this.
_SMALL_OPERAND = 16.0
_PRODUCTS = frozenset({Computes.MULTIPLY, Computes.DIVIDE})
_SUMS = frozenset({Computes.ADD, Computes.SUBTRACT})


@dataclasses.dataclass(frozen=True)
class PairRange:
    """One op that may take a float64 value out of f32 pairs' range.

    Attributes:
      op: The op's name.
      detail: Why, for people.
      location: The op's :class:`~no64.SourceLocation`.
    """

    op: str
    detail: str
    location: SourceLocation


class _PairRanges(_Hints):
    """The float hints' interval walk, with values of unknown magnitude
    taken within ``2**±64`` and its own judgment at each op."""

    every_op = True  # unknown values have the nominal magnitude

    def __init__(self) -> None:
        super().__init__()
        self.records: list[PairRange] = []
        self.named: set[SourceLocation] = set()
        #: values the analysis bounds only through the nominal magnitude
        self.assumed: set[ir.Value] = set()

    def add(self, kind: HintKind, op: ir.Operation, detail: str, where: ir.Operation | None = None) -> None:
        """(The f32 policy's hints are not for pairs.)"""

    def get(self, v: ir.Value) -> Interval | None:
        iv = self.iv.get(v)
        if iv is None and _is_f64(v.type):
            return _NOMINAL
        return iv

    def _constant(self, op: ir.Operation) -> None:
        super()._constant(op)
        r = op.results[0]
        if r in self.iv or r in self.sentinel or not _is_f64(r.type):
            return
        # inf and NaN enter pairs exactly: the finite elements' range
        vals = _constant_floats(op)
        if vals is not None:
            finite = vals[np.isfinite(vals)]
            self.iv[r] = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)

    def _known(self, v: ir.Value) -> Interval | None:
        return None if v in self.assumed else self.iv.get(v)

    def _name(self, op: ir.Operation, detail: str) -> None:
        loc = self.where(op)
        if loc in self.named:
            return
        self.named.add(loc)
        self.records.append(PairRange(op.name, detail, loc))

    def _range(self, op: ir.Operation, spec: OpSpec, operands: list[ir.Value], results: list[ir.Value]) -> None:
        if not results or not _is_f64(results[0].type) or _moves(spec):
            return
        r = results[0]
        unknown = [v for v in operands if _is_f64(v.type) and self._known(v) is None]
        if unknown:
            self.assumed.add(r)
        ins = [self.iv.get(v) for v in operands]
        if any(i is not None and _mag_hi(i) > PAIR_MAX for i in ins):
            self.assumed.discard(r)  # named upstream: not again downstream
            self.iv[r] = (-float("inf"), float("inf"))
            return
        computes = spec.computes
        of = "values of unknown magnitude (taken within 2**±64)" if unknown else "the values it is given"
        if spec.amplifies:
            if not all((iv := self._known(v)) is not None and _mag_hi(iv) <= _SMALL_OPERAND
                       for v in operands if _is_f64(v.type)):
                self._name(op, f"computed on {of}, it may pass f32's largest value (3.4e38) and become "
                           "inf, or fall below 2**-78 and lose bits, where float64 keeps them")
                self.iv[r] = (-float("inf"), float("inf"))
            return
        if computes not in _PRODUCTS and computes not in _SUMS and not _is_sum(spec, op):
            return
        iv = self.iv.get(r)
        if iv is None:
            if computes is Computes.DIVIDE:
                self._name(op, f"a quotient of {of} by a divisor that may be 0 or tiny: it may pass "
                           "f32's largest value (3.4e38) and become inf, where float64 keeps it")
                self.iv[r] = (-float("inf"), float("inf"))
            return
        if _mag_hi(iv) > PAIR_MAX:
            what = "a quotient" if computes is Computes.DIVIDE else "a product" if computes is Computes.MULTIPLY \
                else "a sum"
            top = math.log2(_mag_hi(iv))
            self._name(op, f"{what} of {of}: values up to about 2**{top:.0f} may be computed here, beyond "
                       "f32's largest value (3.4e38): pairs give inf, where float64 keeps them")
        elif 0 < _mag_lo(iv) < PAIR_FULL_MIN:
            low = math.log2(_mag_lo(iv))
            self._name(op, f"values of magnitude down to about 2**{low:.0f} are computed here, below 2**-78: "
                       "their pairs keep fewer than 48 bits (none below 2**-126, where f32 flushes), "
                       "where float64 keeps them")


def pair_range(module: ir.Module | ir.Operation) -> list[PairRange]:
    """The ops of a 64-bit module that may take a float64 value out of f32
    pairs' range (see the module docstring), in program order, at most one
    per source line."""
    from ..ir._mlir import as_operation

    root = module.operation if isinstance(module, ir.Module) else as_operation(module)
    walk = _PairRanges()
    walk.run(root)
    return walk.records
