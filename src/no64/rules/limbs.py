"""An integer ``dot_general`` as limb dots a narrower datapath computes exactly.

Neuron's matrix engine computes an integer dot in f32 (EVRF035): exact while
every operand, product and partial sum is at most 2**24 in magnitude.  An
integer dot whose sums the range analysis does not bound so is rewritten
here (:func:`dot_general`, the op table's ``legalize`` rule of
``dot_general``):

* each operand, as a 32-bit integer (a narrower one converted; a ``ui32``
  one that may pass ``INT32_MAX`` read as the ``i32`` of its bits, equal to
  it modulo 2**32), is split into limbs: low limbs of ``w`` bits, unsigned
  (``(x >> k*w) & (2**w - 1)``), and a top limb ``x >> L*w`` with every bit
  left, arithmetic where the operand may be negative (so it carries the
  sign);
* each limb pair whose bit offsets sum below the result's width is
  contracted by a dot with the op's own dimension numbers: a sum of ``K``
  products of at most ``m_a * m_b`` in magnitude (``K`` the contraction's
  length, ``m`` a limb's largest magnitude), so ``K * m_a * m_b <= bound``
  holds every partial sum, in any order of accumulation, within the
  datapath's exact range -- computed as an ``i32`` dot (which the target
  check then proves exact from the limbs' ranges) or as an ``f32`` dot of the
  limbs converted to f32 (what the engine computes; no integer dot left);
* the limb dots' results, integers of at most ``bound`` in magnitude, are
  shifted to their offsets and added in ``i32`` -- modulo 2**32, the
  two's-complement sum the 32-bit dot means -- and narrowed to the result's
  type.

The widths (:func:`plan`): one width per operand for all its limbs but the
top one; of all pairs of widths whose contracted limb pairs meet the bound,
the one with the fewest limb dots (then the fewest limbs, then the most even
widths).  An operand's range decides how many bits it has, so a narrow one
needs few limbs or none: a dot of 4-bit values is one dot and is left alone
where the datapath computes it exactly as it is.  Full-range ``int32``
operands take 14 limb dots for ``K = 512`` (8- and 7-bit limbs) and 20 for
``K = 4096``.

A contraction of more than ``bound`` elements has no such split (1-bit
limbs already sum to ``K``): :func:`dot_general` says so, and the op is left
as it is.

Neuron also computes a combining ``scatter`` (EVRF060) and the collectives
``all_reduce`` and ``reduce_scatter`` (EVRF061, EVRF063) in f32.  One whose
body adds (``.at[].add``, ``segment_sum``, ``psum``) is split the same way
(:func:`combining`, the ``legalize`` rule of those ops): its operand and
updates, as 32-bit integers, into limbs of one split (a sum adds limbs of
equal offsets), one op of its kind per limb, each summing at most ``N``
limbs -- for a scatter the operand's and every update's (``N`` is one more
than the number of update elements, the range analysis's bound), for a
collective one per replica of a group -- so ``N * m <= bound`` keeps every
partial sum exact in any order; the limb sums are shifted to their offsets
and added in ``i32`` modulo 2**32, the wrap-around of the 32-bit sum.  A
collective's limb ops each communicate on a channel of their own: the first
keeps the op's ``channel_handle``, the others take handles of its type that
no op of the module holds.

One whose body takes the maximum or minimum (``.at[].max``,
``segment_max``, ``pmax``, ``pmin``) sums nothing, but its values pass
2**24 too: it is split into parts compared from the top down
(:func:`order_split`): a signed top part ``v >> (L*w)`` and ``L`` unsigned
low parts of ``w`` bits, each within the bound, with the fewest parts (a
full-range 32-bit value: a top part of 25 bits and a low part of 7; a
64-bit one, which Trn2 keeps: 24, 20 and 20 bits, taken with logical shifts,
the top part sign-extended in ``i32``, as Trn2 refuses a 64-bit arithmetic
shift).  An unsigned value that may pass the signed maximum has its top bit
flipped first (so its bits order as signed integers as the values do) and
back at the end.  The top parts are combined by an op of the kind; each
next part is combined with every element masked to the sentinel ``-1``
(maximum) or ``2**w`` (minimum) unless its part above (itself masked) is
the one taken -- for a scatter, the taken part is gathered back at each
update's index (a ``gather`` of the scatter's indices and dual dimension
numbers); for a ``reduce_scatter``, whose result holds only its shard, the
part above is also taken whole by an ``all_reduce`` on a channel of its
own.  Some element always has the parts taken, so no sentinel is ever
taken; the parts are shifted back to their offsets and joined with ``or``.

A 64-bit sum (Trn2 keeps int64; Metal refuses a scatter combining 64-bit
elements, for its 32-bit atomics, and its profile gives the bound its
32-bit scatters are exact within, ``2**31 - 1``) is split the same way, its
limbs taken from the ``i64`` of its value (or bits) and summed as ``i32``,
the sums shifted and added in ``i64`` modulo 2**64.  No limb is taken with a
64-bit arithmetic shift (Trn2 refuses it): a signed top limb of fewer than
32 bits is shifted down logically and sign-extended in ``i32``, a wider
one is the value plus 2**63 shifted logically, less ``2**(63 - offset)``.

A body that does neither (``.at[].mul``), an op of several operands or of
more than ``bound`` terms is left as it is, with why.
"""

from __future__ import annotations

import dataclasses
import functools
import math

from ..ir import words as W
from ..ir._compat import attribute_dict, replica_group_size
from ..ir._mlir import ir, stablehlo
from ..report import counted
from ..spec.intervals import Interval
from ..spec.protocols import Legalization, RangeQuery
from ..spec.registry import Computes, Reduction, spec_of
from ..spec.walk import all_ops, combiner, extremum

__all__ = ["Limb", "Split", "LimbPlan", "split", "plan", "contraction", "dot_general", "sum_split", "combining",
           "OrderSplit", "order_split"]

#: The integers the limbs are taken from and the limb dots' results summed in.
_BITS = 32


@dataclasses.dataclass(frozen=True)
class Limb:
    """One limb of an operand: its bits from ``offset`` on, ``width`` of them
    (``None``: the top limb, every bit from ``offset`` up), and the largest
    magnitude it takes."""

    offset: int
    width: int | None
    magnitude: int


@dataclasses.dataclass(frozen=True)
class Split:
    """An operand's limbs, lowest first.

    Attributes:
      bits: How many bits the operand's range needs (two's complement when
        ``signed``).
      signed: The operand may be negative: its top limb carries the sign.
      limbs: The limbs; every one but the last has a ``width``.
    """

    bits: int
    signed: bool
    limbs: tuple[Limb, ...]

    @property
    def widths(self) -> tuple[int, ...]:
        """The bits each limb spans (the top limb: up to the operand's top bit)."""
        return tuple(limb.width if limb.width is not None else self.bits - limb.offset for limb in self.limbs)


@dataclasses.dataclass(frozen=True)
class LimbPlan:
    """How one integer dot is split (see the module docstring).

    Attributes:
      contraction: The number of products each result element sums (``K``).
      bound: The magnitude every operand, product and partial sum of a limb
        dot stays within.
      result_bits: The result's width: limb pairs at an offset of this many
        bits or more add nothing modulo ``2**result_bits`` and are left out.
      lhs, rhs: The operands' limbs.
      pairs: The limb pairs contracted (lhs limb, rhs limb), by offset.
    """

    contraction: int
    bound: int
    result_bits: int
    lhs: Split
    rhs: Split
    pairs: tuple[tuple[int, int], ...]

    @property
    def dots(self) -> int:
        """How many limb dots the split computes."""
        return len(self.pairs)

    def shift(self, pair: tuple[int, int]) -> int:
        """The bit offset of a limb pair's dot in the result."""
        return self.lhs.limbs[pair[0]].offset + self.rhs.limbs[pair[1]].offset

    def largest_sum(self, pair: tuple[int, int]) -> int:
        """The largest magnitude of a product or partial sum of a limb pair's dot."""
        return self.contraction * self.lhs.limbs[pair[0]].magnitude * self.rhs.limbs[pair[1]].magnitude

    def describe(self) -> str:
        a, b = (",".join(map(str, s.widths)) for s in (self.lhs, self.rhs))
        return f"{counted(self.dots, 'limb dot')} of {a} x {b}-bit limbs over {self.contraction} terms"


def _bits(interval: Interval) -> int:
    """The bits an integer of ``interval`` needs (two's complement if it may be negative)."""
    lo, hi = interval
    if lo < 0:
        return max((-lo - 1).bit_length(), max(hi, 0).bit_length()) + 1
    return max(hi.bit_length(), 1)


def split(interval: Interval, width: int) -> Split:
    """The limbs of an integer of ``interval`` with low limbs of ``width`` bits."""
    lo, hi = interval
    bits = _bits(interval)
    low = max(math.ceil(bits / width) - 1, 0)
    limbs = [Limb(k * width, width, (1 << width) - 1) for k in range(low)]
    top = low * width
    limbs.append(Limb(top, None, max(abs(lo >> top), abs(hi >> top))))
    return Split(bits, lo < 0, tuple(limbs))


def _pairs(a: Split, b: Split, result_bits: int) -> list[tuple[int, int]]:
    pairs = [(i, j) for i, x in enumerate(a.limbs) for j, y in enumerate(b.limbs)
             if x.offset + y.offset < result_bits]
    return sorted(pairs, key=lambda p: (a.limbs[p[0]].offset + b.limbs[p[1]].offset, p))


@functools.lru_cache(maxsize=512)
def plan(contraction: int, lhs: Interval, rhs: Interval, result_bits: int, bound: int) -> LimbPlan | None:
    """The split of a dot of ``contraction`` terms of operands in ``lhs`` and
    ``rhs`` (as the 32-bit integers their limbs are taken from) with the
    fewest limb dots whose every operand, product and partial sum is at most
    ``bound`` in magnitude; ``None`` if there is none (``contraction >
    bound``)."""
    best: LimbPlan | None = None
    best_key: tuple[int, ...] | None = None
    splits_b = [split(rhs, w) for w in range(1, _bits(rhs) + 1)]
    for wa in range(1, _bits(lhs) + 1):
        a = split(lhs, wa)
        for wb, b in enumerate(splits_b, 1):
            pairs = _pairs(a, b, result_bits)
            key = (len(pairs), len(a.limbs) + len(b.limbs), abs(wa - wb), -wa)
            if best_key is not None and key >= best_key:
                continue
            if all(max(a.limbs[i].magnitude, b.limbs[j].magnitude) <= bound
                   and contraction * a.limbs[i].magnitude * b.limbs[j].magnitude <= bound for i, j in pairs):
                best, best_key = LimbPlan(contraction, bound, result_bits, a, b, tuple(pairs)), key
    return best


def contraction(op: ir.Operation) -> int:
    """The number of products each element of a static ``dot_general`` sums
    (of a ``convolution``: at most its kernel's input features times its
    window's elements)."""
    if "dot_dimension_numbers" not in op.attributes:
        kernel = ir.RankedTensorType(op.operands[1].type)
        conv = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        return math.prod(kernel.shape[i] for i in (conv.kernel_input_feature_dimension,
                                                   *conv.kernel_spatial_dimensions))
    t = ir.RankedTensorType(op.operands[0].type)
    dims = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    return math.prod(t.shape[i] for i in dims.lhs_contracting_dimensions)


def _int_element(t: ir.Type) -> ir.IntegerType | None:
    e = ir.ShapedType(t).element_type if isinstance(t, ir.ShapedType) else t
    return ir.IntegerType(e) if isinstance(e, ir.IntegerType) else None


def _unsupported(op: ir.Operation) -> str | None:
    """Why the split does not apply to ``op`` (``None``: it does)."""
    what = op.name.split(".")[-1]
    for v in (*op.operands, op.results[0]):
        if not (isinstance(v.type, ir.RankedTensorType) and ir.RankedTensorType(v.type).has_static_shape):
            return f"a {what} of dynamic shape"
        e = _int_element(v.type)
        if e is None:
            return f"not an integer {what}"
        if not 2 <= e.width <= 64:
            return f"a {what} of {e} values (the split takes integers of 2 to 64 bits)"
    return None


def _carrier(v: ir.Value, q: RangeQuery) -> tuple[str, Interval]:
    """How operand ``v`` becomes the ``i32`` its limbs are taken from
    (``"same"``, ``"convert"``: value for value, ``"bitcast"``: its bits) and
    the values that ``i32`` takes."""
    e = _int_element(v.type)
    assert e is not None
    full = q.full(v)
    r = q.range(v)
    assert full is not None
    lo, hi = r.interval if r is not None else full
    lo, hi = max(lo, full[0]), min(hi, full[1])
    if lo > hi:  # no value (unreachable code): any bounds are sound
        lo = hi = 0
    bits = _carrier_bits(e)
    if e.is_unsigned and e.width == bits:
        top = (1 << (bits - 1)) - 1
        return ("convert", (lo, hi)) if hi <= top else ("bitcast", (-top - 1, top))
    return ("convert" if e.width < bits else "same"), (lo, hi)


def _carrier_bits(e: ir.IntegerType) -> int:
    """The width of the signless integer a value of type ``e`` is taken as
    (for its limbs, its sums): 32 bits, 64 for a 64-bit one."""
    return 64 if e.width > _BITS else _BITS


def _bound_text(bound: int) -> str:
    return f"2**{bound.bit_length() - 1}" if bound & (bound - 1) == 0 else str(bound)


def dot_general(op: ir.Operation, q: RangeQuery, bound: int, in_f32: bool) -> Legalization | str:
    """``op``, an integer ``dot_general`` (or ``convolution``), as limb dots
    (convolutions) whose every operand, product and partial sum is at most
    ``bound`` in magnitude (``in_f32``: each an f32 op of the limbs converted
    to f32), or why it cannot be."""
    why = _unsupported(op)
    if why is not None:
        return why
    (how_a, lhs), (how_b, rhs) = _carrier(op.operands[0], q), _carrier(op.operands[1], q)
    k = contraction(op)
    result = _int_element(op.results[0].type)
    assert result is not None
    p = plan(k, lhs, rhs, result.width, bound)
    if p is None:
        return (f"a contraction over {k} elements: even 1-bit limbs may sum past {_bound_text(bound)}, "
                f"so no limb split is exact")
    return _LimbDots(op, p, (how_a, how_b), in_f32)


class _LimbDots:
    """A planned limb split of one ``dot_general`` (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation, p: LimbPlan, carriers: tuple[str, str], in_f32: bool) -> None:
        self.op, self.plan, self.carriers, self.in_f32 = op, p, carriers, in_f32

    @property
    def summary(self) -> str:
        return self.plan.describe() + (" in f32" if self.in_f32 else " in i32")

    @property
    def ops(self) -> int:
        return self.plan.dots

    def apply(self) -> None:
        op, p = self.op, self.plan
        with ir.InsertionPoint(op), op.location:
            i32, f32 = W.i32(), ir.F32Type.get()
            result = _int_element(op.results[0].type)
            assert result is not None
            wide = ir.IntegerType.get_signless(_carrier_bits(result))
            shape = list(ir.RankedTensorType(op.results[0].type).shape)
            values = [_limbs(x, how, s, {pair[n] for pair in p.pairs})
                      for n, (x, how, s) in enumerate(zip(op.operands, self.carriers, (p.lhs, p.rhs)))]
            attrs = attribute_dict(op)
            if self.in_f32:
                values = [{i: W.convert(v, f32) for i, v in limbs.items()} for limbs in values]
                attrs.pop("algorithm", None)
                attrs["precision_config"] = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
            dot_type = ir.RankedTensorType.get(shape, f32 if self.in_f32 else i32)
            by_shift: dict[int, list[ir.Value]] = {}
            for pair in p.pairs:
                d = ir.Operation.create(op.name, results=[dot_type], operands=[values[0][pair[0]], values[1][pair[1]]],
                                        attributes=attrs).results[0]
                by_shift.setdefault(p.shift(pair), []).append(W.convert(W.convert(d, i32), wide))
            total: ir.Value | None = None
            for s in sorted(by_shift):
                part = by_shift[s][0]
                for d in by_shift[s][1:]:
                    part = W.make("add", [part, d], part.type)
                if s:
                    part = W.make("shift_left", [part, W.splat(part, s)], part.type)
                total = part if total is None else W.make("add", [total, part], part.type)
            assert total is not None
            out = _narrow(total, op.results[0].type)
        op.results[0].replace_all_uses_with(out)
        op.erase()


def _limbs(x: ir.Value, how: str, s: Split, used: set[int]) -> dict[int, ir.Value]:
    """The ``i32`` limbs ``used`` of operand ``x``, by index (taken from the
    ``i32`` -- or, for a 64-bit operand, the ``i64`` -- of its value or bits)."""
    e = _int_element(x.type)
    assert e is not None
    bits = _carrier_bits(e)
    wide = ir.IntegerType.get_signless(bits)
    c = (W.bitcast(x, wide) if how == "bitcast" else W.convert(x, wide))
    out = {}
    for i in sorted(used):
        limb = s.limbs[i]
        v = c
        if limb.offset and limb.width is None and s.signed and bits > _BITS:
            # ``v >> offset``, arithmetic, without a 64-bit arithmetic shift (which Trn2
            # refuses): the bits above ``offset`` (fewer than 32) sign-extended in i32
            # -- or, for a lower offset, the value plus 2**63 shifted logically, less
            # 2**(63 - offset)
            if bits - limb.offset < _BITS:
                v = W.convert(W.make("shift_right_logical", [v, W.splat(v, limb.offset)], v.type), W.i32())
                up = _BITS - (bits - limb.offset)
                v = W.make("shift_left", [v, W.splat(v, up)], v.type)
                v = W.make("shift_right_arithmetic", [v, W.splat(v, up)], v.type)
            else:
                v = W.make("xor", [v, W.splat(v, -(1 << (bits - 1)))], v.type)
                v = W.make("shift_right_logical", [v, W.splat(v, limb.offset)], v.type)
                v = W.make("add", [v, W.splat(v, -(1 << (bits - 1 - limb.offset)))], v.type)
        elif limb.offset:
            shift = "shift_right_arithmetic" if limb.width is None and s.signed else "shift_right_logical"
            v = W.make(shift, [v, W.splat(v, limb.offset)], v.type)
        if limb.width is not None:
            v = W.make("and", [v, W.splat(v, (1 << limb.width) - 1)], v.type)
        out[i] = W.convert(v, W.i32())
    return out


def _narrow(total: ir.Value, result_type: ir.Type) -> ir.Value:
    """The ``i32`` (or, for a 64-bit result, ``i64``) sum as the result's
    type: its low bits, as two's complement or unsigned."""
    e = _int_element(result_type)
    assert e is not None
    t = _int_element(total.type)
    assert t is not None
    if e.width != t.width and e.is_unsigned:
        total = W.make("and", [total, W.splat(total, (1 << e.width) - 1)], total.type)
    elif e.width != t.width:
        up = W.make("shift_left", [total, W.splat(total, _BITS - e.width)], total.type)
        total = W.make("shift_right_arithmetic", [up, W.splat(up, _BITS - e.width)], up.type)
    return _narrow_to(total, result_type)


# ------------------------------------------------- sums: scatter and collectives
def sum_split(terms: int, interval: Interval, bound: int) -> Split | None:
    """The split of integers of ``interval`` (as ``i32``) with the fewest limbs
    (then the narrowest largest limb) whose every sum of ``terms`` limbs of one
    offset is at most ``bound`` in magnitude; ``None`` if there is none."""
    best: Split | None = None
    best_key: tuple[int, int] | None = None
    for w in range(1, _bits(interval) + 1):
        s = split(interval, w)
        largest = max(limb.magnitude for limb in s.limbs)
        key = (len(s.limbs), largest)
        if terms * largest <= bound and (best_key is None or key < best_key):
            best, best_key = s, key
    return best


def _adds(op: ir.Operation) -> bool:
    """Whether ``op``'s body (one result) returns the sum of its two arguments."""
    return combiner(op) is Computes.ADD


def _replicas(op: ir.Operation) -> int | None:
    """How many replicas' values a collective sums into each element."""
    return replica_group_size(op)


def combining(op: ir.Operation, q: RangeQuery, bound: int, in_f32: bool) -> Legalization | str:
    """``op``, a ``scatter``, ``all_reduce`` or ``reduce_scatter`` whose body
    adds integers, as one such op per limb whose every partial sum is at most
    ``bound`` in magnitude (``in_f32``: each on the limbs converted to f32),
    or why it cannot be (see the module docstring)."""
    kind = spec_of(op.name).reduction
    if len(op.results) != 1:
        return f"a {op.name.split('.')[-1]} of {len(op.results)} operands"
    for v in (*op.operands, op.results[0]):
        if not (isinstance(v.type, ir.RankedTensorType) and ir.RankedTensorType(v.type).has_static_shape):
            return "its shapes are not static"
    which = extremum(op)
    if which is not None:
        return _high_low(op, q, bound, in_f32, which)
    result = _int_element(op.results[0].type)
    if result is None or not 2 <= result.width <= 64:
        return "not a sum of integers of 2 to 64 bits"
    if not _adds(op):
        return "its body neither adds nor takes the maximum or minimum: limbs split only those"
    if kind is Reduction.SCATTER:
        summed = [op.operands[0], op.operands[2]]
        terms = math.prod(ir.RankedTensorType(op.operands[2].type).shape) + 1
    else:
        summed = [op.operands[0]]
        replicas = _replicas(op)
        if replicas is None:
            return "its replica groups are not known"
        terms = replicas
    carriers = [_carrier(v, q) for v in summed]
    interval = (min(c[1][0] for c in carriers), max(c[1][1] for c in carriers))
    s = sum_split(terms, interval, bound)
    if s is None:
        return (f"a sum of {terms} terms: even 1-bit limbs may sum past {_bound_text(bound)}, "
                f"so no limb split is exact")
    return _LimbSums(op, s, [c[0] for c in carriers], terms, in_f32)


def _fresh_channels(op: ir.Operation, n: int) -> list[ir.Attribute]:
    """``n`` channel handles of ``op``'s channel type that no op of its module
    holds (the first limb collective keeps ``op``'s own): each collective of
    a module communicates on a channel of its own.  None where ``op`` has no
    channel handle."""
    if "channel_handle" not in op.attributes or n <= 0:
        return []
    kind = stablehlo.ChannelHandle(op.attributes["channel_handle"]).channel_type
    top = op
    while top.parent is not None:
        top = top.parent
    used = [stablehlo.ChannelHandle(x.attributes["channel_handle"]).handle
            for x in all_ops(top) if "channel_handle" in x.attributes]
    first = max(used, default=0) + 1
    return [stablehlo.ChannelHandle.get(first + i, kind) for i in range(n)]


class _LimbSums:
    """A planned limb split of one combining op (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation, s: Split, carriers: list[str], terms: int, in_f32: bool) -> None:
        self.op, self.split, self.carriers, self.terms, self.in_f32 = op, s, carriers, terms, in_f32

    @property
    def summary(self) -> str:
        widths = ",".join(map(str, self.split.widths))
        return (f"{counted(len(self.split.limbs), 'limb sum')} of {widths}-bit limbs over {self.terms} terms"
                + (" in f32" if self.in_f32 else " in i32"))

    @property
    def ops(self) -> int:
        return len(self.split.limbs)

    def apply(self) -> None:
        op, s = self.op, self.split
        summed = [0, 2] if spec_of(op.name).reduction is Reduction.SCATTER else [0]
        with ir.InsertionPoint(op), op.location:
            i32, f32 = W.i32(), ir.F32Type.get()
            result = _int_element(op.results[0].type)
            assert result is not None
            wide = ir.IntegerType.get_signless(_carrier_bits(result))
            elem = f32 if self.in_f32 else i32
            used = set(range(len(s.limbs)))
            limbs = {i: _limbs(op.operands[i], how, s, used) for i, how in zip(summed, self.carriers)}
            shape = list(ir.RankedTensorType(op.results[0].type).shape)
            scalar = ir.RankedTensorType.get([], elem)
            total: ir.Value | None = None
            channels = _fresh_channels(op, len(s.limbs) - 1)
            for k, limb in enumerate(s.limbs):
                operands = list(op.operands)
                for i in summed:
                    operands[i] = W.convert(limbs[i][k], f32) if self.in_f32 else limbs[i][k]
                attrs = attribute_dict(op)
                if k and channels:
                    attrs["channel_handle"] = channels[k - 1]
                new = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(shape, elem)],
                                          operands=operands, attributes=attrs, regions=1)
                block = new.regions[0].blocks.append(scalar, scalar)
                with ir.InsertionPoint(block):
                    a, b = block.arguments
                    W.build("return", [W.make("add", [a, b], scalar)], [])
                part = new.results[0]
                if self.in_f32:
                    part = W.convert(part, i32)
                part = W.convert(part, wide)
                if limb.offset:
                    part = W.make("shift_left", [part, W.splat(part, limb.offset)], part.type)
                total = part if total is None else W.make("add", [total, part], part.type)
            assert total is not None
            out = _narrow(total, op.results[0].type)
        op.results[0].replace_all_uses_with(out)
        op.erase()


# ------------------------------------------ maximum and minimum: high and low parts
@dataclasses.dataclass(frozen=True)
class OrderSplit:
    """Integers of ``bits`` bits as a signed top part ``v >> (lows * width)``
    and ``lows`` unsigned low parts of ``width`` bits (below them, the mask's
    sentinel ``2**width``), compared from the top part down."""

    bits: int
    lows: int
    width: int

    @property
    def parts(self) -> int:
        return self.lows + 1

    def offsets(self) -> list[int]:
        """Each part's bit offset, the top part's first."""
        return [self.width * k for k in range(self.lows, -1, -1)]


def order_split(interval: Interval, bits: int, bound: int) -> OrderSplit | None:
    """The split of ``bits``-bit integers of ``interval`` (see
    :class:`OrderSplit`) with the fewest parts, then the narrowest low ones,
    every part and sentinel at most ``bound`` in magnitude; ``None`` if there
    is none."""
    lo, hi = interval
    for lows in range(1, bits):
        for w in range(1, (bits - 1) // lows + 1):
            if (1 << w) > bound:
                break
            if max(abs(lo >> (lows * w)), abs(hi >> (lows * w))) <= bound:
                return OrderSplit(bits, lows, w)
    return None


def _order_carrier(v: ir.Value, q: RangeQuery) -> tuple[int, bool, Interval]:
    """The signless integer width (32 or 64) whose bits the parts of operand
    ``v`` are taken from, whether its top bit is flipped (an unsigned one of
    its width that may pass the signed maximum: so flipped, its bits are
    ordered as signed integers as the unsigned values are), and the values
    that integer takes."""
    e = _int_element(v.type)
    assert e is not None
    bits = 64 if e.width > _BITS else _BITS
    full, r = q.full(v), q.range(v)
    assert full is not None
    lo, hi = r.interval if r is not None else full
    lo, hi = max(lo, full[0]), min(hi, full[1])
    if lo > hi:  # no value (unreachable code): any bounds are sound
        lo = hi = 0
    if e.is_unsigned and e.width == bits and hi >= 1 << (bits - 1):
        return bits, True, (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return bits, False, (lo, hi)


def _high_low(op: ir.Operation, q: RangeQuery, bound: int, in_f32: bool, which: str) -> Legalization | str:
    """``op``, a combining op whose body takes the maximum or minimum, as ops
    of its kind on its values' parts (see the module docstring), or why not."""
    result = _int_element(op.results[0].type)
    if result is None or not 2 <= result.width <= 64:
        return "not an order of integers of 2 to 64 bits"
    scatter = spec_of(op.name).reduction is Reduction.SCATTER
    if not scatter and _replicas(op) is None:
        return "its replica groups are not known"
    carriers = [_order_carrier(v, q) for v in ([op.operands[0], op.operands[2]] if scatter else [op.operands[0]])]
    bits, flip = carriers[0][0], any(c[1] for c in carriers)
    interval = (min(c[2][0] for c in carriers), max(c[2][1] for c in carriers))
    if bits > _BITS:  # 64-bit parts are taken with logical shifts only (Trn2 refuses 64-bit arithmetic ones)
        interval = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    s = order_split(interval, bits, bound)
    if s is None or (bits > _BITS and not _BITS < s.offsets()[0] < bits):
        return f"its values have no split into parts within {_bound_text(bound)}"
    return _Ordered(op, which, s, flip, in_f32)


def _gather_like(source: ir.Value, scatter: ir.Operation) -> ir.Value:
    """The elements of ``source`` (shaped as ``scatter``'s operand) that each
    update of ``scatter`` combines with: a ``gather`` with the scatter's
    indices and dual dimension numbers, shaped as its updates."""
    dims = stablehlo.ScatterDimensionNumbers(scatter.attributes["scatter_dimension_numbers"])
    operand_shape = list(ir.RankedTensorType(source.type).shape)
    updates = ir.RankedTensorType(scatter.operands[2].type)
    kept = set(dims.inserted_window_dims) | set(dims.input_batching_dims)
    window = [d for d in range(len(operand_shape)) if d not in kept]
    sizes = [1] * len(operand_shape)
    for d, u in zip(window, dims.update_window_dims):
        sizes[d] = updates.shape[u]
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(dims.update_window_dims), collapsed_slice_dims=list(dims.inserted_window_dims),
        operand_batching_dims=list(dims.input_batching_dims),
        start_indices_batching_dims=list(dims.scatter_indices_batching_dims),
        start_index_map=list(dims.scattered_dims_to_operand_dims), index_vector_dim=dims.index_vector_dim)
    attrs: dict[str, ir.Attribute] = {"dimension_numbers": numbers, "slice_sizes": ir.DenseI64ArrayAttr.get(sizes)}
    if "indices_are_sorted" in scatter.attributes:
        attrs["indices_are_sorted"] = scatter.attributes["indices_are_sorted"]
    elem = ir.RankedTensorType(source.type).element_type
    return W.make("gather", [source, scatter.operands[1]], ir.RankedTensorType.get(list(updates.shape), elem),
                  **attrs)


class _Ordered:
    """A planned split into parts of one combining op that takes the maximum
    or minimum (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation, which: str, s: OrderSplit, flip: bool, in_f32: bool) -> None:
        self.op, self.which, self.split, self.flip, self.in_f32 = op, which, s, flip, in_f32

    @property
    def ops(self) -> int:
        n = self.split.parts
        return 2 * n - 1 if spec_of(self.op.name).reduction is Reduction.REPLICAS and self._shards() else n

    def _shards(self) -> bool:
        return "scatter_dimension" in self.op.attributes

    @property
    def summary(self) -> str:
        s = self.split
        return (f"{counted(self.ops, 'op')} taking the {self.which} of the top part, then of each of "
                f"{counted(s.lows, f'{s.width}-bit low part')} where the parts above are the ones taken"
                + (" in f32" if self.in_f32 else " in i32"))

    def _combine(self, name: str, operands: list[ir.Value], attrs: dict[str, ir.Attribute],
                 shape: list[int]) -> ir.Value:
        """``name`` (an op's name, or its name without the dialect) on
        ``operands`` (``i32`` parts; in f32 if asked) with a body taking the
        maximum or minimum; its result as ``i32``."""
        i32, f32 = W.i32(), ir.F32Type.get()
        elem = f32 if self.in_f32 else i32
        scalar = ir.RankedTensorType.get([], elem)
        if self.in_f32:
            indices = 1 if spec_of(name).reduction is Reduction.SCATTER else None
            operands = [v if k == indices else W.convert(v, f32) for k, v in enumerate(operands)]
        new = W.build(name.rsplit(".", 1)[-1], operands, [ir.RankedTensorType.get(shape, elem)], regions=1, **attrs)
        block = new.regions[0].blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            a, b = block.arguments
            W.build("return", [W.make(self.which, [a, b], scalar)], [])
        return W.convert(new.results[0], i32)

    def apply(self) -> None:
        op, s = self.op, self.split
        scatter = spec_of(op.name).reduction is Reduction.SCATTER
        with ir.InsertionPoint(op), op.location:
            i32 = W.i32()
            wide = ir.IntegerType.get_signless(s.bits)
            sign = -(1 << (s.bits - 1))

            def parts(x: ir.Value) -> list[ir.Value]:
                e = _int_element(x.type)
                assert e is not None
                c = W.bitcast(x, wide) if e.width == s.bits else W.convert(x, wide)
                if self.flip:
                    c = W.make("xor", [c, W.splat(c, sign)], c.type)
                out = []
                for k, offset in enumerate(s.offsets()):
                    if s.bits == _BITS or not offset:
                        v = W.make("shift_right_arithmetic", [c, W.splat(c, offset)], c.type) if offset else c
                    else:  # every bit above ``offset``, zero-extended: fewer than 32 of them
                        v = W.make("shift_right_logical", [c, W.splat(c, offset)], c.type)
                    if k:
                        v = W.make("and", [v, W.splat(v, (1 << s.width) - 1)], v.type)
                    v = W.convert(v, i32)
                    if not k and s.bits > _BITS:  # the top part, sign-extended in i32
                        up = _BITS - (s.bits - offset)
                        v = W.make("shift_left", [v, W.splat(v, up)], v.type)
                        v = W.make("shift_right_arithmetic", [v, W.splat(v, up)], v.type)
                    out.append(v)
                return out

            sentinel = -1 if self.which == "maximum" else 1 << s.width

            def masked(above: ir.Value, taken: ir.Value, part: ir.Value) -> ir.Value:
                """``part`` where the (masked) part above is the one taken, else the sentinel."""
                i1 = ir.RankedTensorType.get(list(ir.RankedTensorType(part.type).shape),
                                             ir.IntegerType.get_signless(1))
                same = W.make("compare", [above, taken], i1,
                              comparison_direction=ir.Attribute.parse("#stablehlo<comparison_direction EQ>"),
                              compare_type=ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"))
                return W.make("select", [same, part, W.splat(part, sentinel)], part.type)

            shape = list(ir.RankedTensorType(op.results[0].type).shape)
            attrs = attribute_dict(op)
            xs = parts(op.operands[0])
            taken: list[ir.Value] = []
            if scatter:
                idx = op.operands[1]
                us = parts(op.operands[2])
                x_above = u_above = at = None
                for k in range(s.parts):
                    x, u = xs[k], us[k]
                    if k:
                        assert x_above is not None and u_above is not None and at is not None
                        x, u = masked(x_above, taken[-1], x), masked(u_above, at, u)
                    taken.append(self._combine(op.name, [x, idx, u], attrs, shape))
                    if k + 1 < s.parts:
                        x_above, u_above, at = x, u, _gather_like(taken[-1], op)
            else:
                channels = iter(_fresh_channels(op, self.ops - 1))

                def more(a: dict[str, ir.Attribute], first: bool) -> dict[str, ir.Attribute]:
                    a = dict(a)
                    if not first and "channel_handle" in a:
                        a["channel_handle"] = next(channels)
                    return a

                whole_attrs = {k: v for k, v in attrs.items() if k != "scatter_dimension"}
                operand_shape = list(ir.RankedTensorType(op.operands[0].type).shape)
                above: ir.Value | None = None
                whole: ir.Value | None = None
                for k in range(s.parts):
                    x = xs[k]
                    if k:
                        assert above is not None and whole is not None
                        x = masked(above, whole, x)
                    taken.append(self._combine(op.name, [x], more(attrs, k == 0), shape))
                    if k + 1 < s.parts:
                        whole = (self._combine("all_reduce", [x], more(whole_attrs, False), operand_shape)
                                 if self._shards() else taken[-1])
                        above = x
            total: ir.Value | None = None
            for part, offset in zip(taken, s.offsets()):
                v = W.convert(part, wide)
                if offset:
                    v = W.make("shift_left", [v, W.splat(v, offset)], v.type)
                total = v if total is None else W.make("or", [total, v], v.type)
            assert total is not None
            if self.flip:
                total = W.make("xor", [total, W.splat(total, sign)], total.type)
            out = _narrow_to(total, op.results[0].type)
        op.results[0].replace_all_uses_with(out)
        op.erase()


def _narrow_to(total: ir.Value, result_type: ir.Type) -> ir.Value:
    """A signless integer of the result's value as the result's type."""
    e = _int_element(result_type)
    assert e is not None
    t = _int_element(total.type)
    assert t is not None
    if e.width == t.width:
        return W.bitcast(total, e)
    return W.convert(total, e)
