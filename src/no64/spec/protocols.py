"""What the op schema's functions are typed against.

A transfer function, a fold, a rule and an emulation rule are declared in the
op table and called by layers above it (the range analysis, the pass, the
emulation step).  They receive those layers' objects through the protocols
here, so that the schema (:mod:`no64.spec.registry`) names no class of a
layer above it: :class:`~no64.analysis.ranges.RangeAnalysis` implements
:class:`RangeQuery`, :class:`~no64.transforms.emulate.Emulation` implements
:class:`WordContext`.  A refusal check returns a :class:`Refusal` (or
``None``) and raises nothing: the pass decides what becomes of a refused op
(computed on words where a rule can, else raised with its location).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NoReturn, Protocol, TypeVar, Union

import numpy as np

from ..errors import ConstantRangeError, No64Error, UnsupportedOpError
from ..ir import pairs as P, words as W
from ..ir._mlir import ir
from ..ir.locations import SourceLocation
from ..kinds import OpForm
from .intervals import Interval, Range

__all__ = [
    "Refusal",
    "RangeQuery",
    "CarrierContext",
    "WordContext",
    "Results",
    "Transfer",
    "ArgTransfer",
    "Fold",
    "Out",
    "EmulateRule",
    "PairRule",
    "WidenContext",
    "WidenRule",
    "WidenWhyNot",
    "Legalization",
    "LegalizeRule",
    "UnfoldRule",
]


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why an op cannot be narrowed, as a refusal check returns it (a check
    returns ``None`` where the op narrows as it is).

    The check raises nothing: the pass computes the op on 32-bit words where
    an emulation rule can, and otherwise raises :meth:`error` with the op's
    name and location.
    """

    reason: str
    #: What is refused is a value beyond the 32-bit range (raised as a
    #: :class:`~no64.errors.ConstantRangeError`, and not handed to the
    #: emulation step), not the op's meaning on 32-bit types (an
    #: :class:`~no64.errors.UnsupportedOpError`).
    out_of_range: bool = False

    def error(self, op: str, location: SourceLocation) -> No64Error:
        """The error that refuses op ``op`` at ``location`` for this reason."""
        if self.out_of_range:
            return ConstantRangeError(op, location, self.reason)
        return UnsupportedOpError(op, location, self.reason)


class RangeQuery(Protocol):
    """The range analysis as transfer functions and rules ask it."""

    def of(self, v: ir.Value) -> Range | None:
        """The range of ``v`` (``None``: not an integer)."""
        ...

    def full(self, v: ir.Value) -> Interval | None:
        """The full range of ``v``'s integer type."""
        ...

    def range(self, v: ir.Value) -> Range | None:
        """The range of ``v``, computed on demand."""
        ...

    def constant(self, v: ir.Value) -> list[int] | None:
        """The elements of ``v`` if it is computed from constants alone."""
        ...

    def fold(self, v: ir.Value, sentinels: bool = False) -> np.ndarray | None:
        """The exact elements of an input-free ``v``."""
        ...

    def constant_range(self, op: ir.Operation) -> Range | None:
        """The range of a constant op's elements."""
        ...

    def moved(self, result: ir.Value, sources: Sequence[ir.Value]) -> Range | None:
        """The range of a result whose elements are moved from ``sources``."""
        ...

    def range_given(self, v: ir.Value, pred: ir.Value, truth: bool) -> Range | None:
        """The range of ``v`` in the elements where ``pred`` is ``truth``."""
        ...

    def call_results(self, op: ir.Operation) -> list[Range | None]:
        """The ranges of a call's results, evaluated for this call site."""
        ...

    def function_argument(self, fn: ir.Operation, i: int) -> Range | None:
        """The range of argument ``i`` of function ``fn``."""
        ...

    def loop_state(self, op: ir.Operation) -> list[Range | None]:
        """The ranges of the values a ``while`` loop carries."""
        ...

    def reduction_state(self, op: ir.Operation) -> tuple[list[Range | None], list[Range | None]]:
        """The ranges of a reduction's accumulators and its body's arguments."""
        ...


R = TypeVar("R")
T = TypeVar("T")


class CarrierContext(Protocol[R]):
    """What every emulation step offers its rules, whatever its
    representation ``R`` of a carried value (words, pairs): see
    :class:`no64.transforms.carry.Carrier`."""

    def type(self, v: ir.Value) -> ir.Type:
        """The type ``v`` has in the 64-bit program."""
        ...

    def value(self, v: ir.Value) -> ir.Value:
        """The value that stands for ``v`` now."""
        ...

    def bind(self, old: ir.Value, new: ir.Value) -> None:
        """Let ``new`` stand for ``old``."""
        ...

    def bind_rep(self, old: ir.Value, rep: R) -> None:
        """Let ``rep`` represent carried ``old``."""
        ...

    def rep(self, v: ir.Value) -> R:
        """The representation of carried operand ``v``."""
        ...

    def copy_block(self, block: ir.Block, returned: Callable[[R], R] | None = None) -> None:
        """Copy a region's block to the insertion point, on the representation."""
        ...

    def split(self, values: Sequence[ir.Value], carried: Sequence[bool]) -> list[ir.Value]:
        """Operands of a rebuilt op, each carried one as its parts."""
        ...

    def split_types(self, types: Sequence[ir.Type], carried: Sequence[bool]) -> list[ir.Type]:
        """Types of a rebuilt op, each carried one as its parts' types."""
        ...

    def joined(self, values: Sequence[ir.Value], types: Sequence[ir.Type],
               carried: Sequence[bool]) -> list[Any]:
        """A rebuilt op's values per slot: a representation where carried."""
        ...

    def rebuild(self, op: ir.Operation, operands: Sequence[ir.Value], result_types: Sequence[ir.Type],
                args_carried: Sequence[bool], *, attributes: dict[str, ir.Attribute] | None = None,
                enter: Callable[[R], R] | None = None, returned: Callable[[R], R] | None = None,
                arg_types: Sequence[ir.Type] | None = None) -> ir.Operation:
        """``op`` rebuilt with new operands and result types, its body on the representation."""
        ...

    def rebuild_carried(self, op: ir.Operation) -> list[Any]:
        """``op`` rebuilt with every value of a carried type as its parts."""
        ...

    def rebuild_sort(self, op: ir.Operation, carried: Sequence[bool],
                     through: Callable[[ir.Value], ir.Value] | None = None) -> list[Any]:
        """``sort`` rebuilt with each carried operand as its parts (each
        part sorted through the involution ``through``, if given)."""
        ...

    def refuse(self, op: ir.Operation, reason: str) -> NoReturn:
        """Raise :class:`~no64.errors.UnsupportedOpError` for ``op``."""
        ...


class WordContext(CarrierContext[W.Words], Protocol):
    """The integer word step as emulation rules use it (``em``)."""

    @property
    def analysis(self) -> RangeQuery:
        """The range analysis of the 64-bit program (read only: an
        implementation may hold a subtype of :class:`RangeQuery`)."""
        ...

    @property
    def one_input(self) -> frozenset[OpForm]:
        """Op forms the device refuses with several inputs (a reduction of
        words is then written with one)."""
        ...

    def is_wide(self, v: ir.Value) -> bool:
        """Whether ``v`` is emulated (carried as words)."""
        ...

    def words(self, v: ir.Value, unsigned: bool | None = None) -> W.Words:
        """The words of operand ``v``."""
        ...

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, emitted once per ``key`` in the block being written:
        a later op of that block asking for the same key reuses it (a
        ``divide`` and a ``remainder`` of the same operands share one
        division)."""
        ...


#: One range per result (``None``: not an integer).
Results = list["Range | None"]
#: ``transfer(q, op) -> one range per result``.
Transfer = Callable[[RangeQuery, ir.Operation], Results]
#: ``arguments(q, arg, op)``: the range of a block argument of ``op``'s regions.
ArgTransfer = Callable[[RangeQuery, ir.BlockArgument, ir.Operation], "Range | None"]
#: ``fold(op, elements, result_type)``: the op evaluated on constant elements
#: (called with integer operands and a statically shaped integer result;
#: ``None`` where it cannot be evaluated -- it raises nothing).
Fold = Callable[[ir.Operation, list[np.ndarray], ir.Type], "np.ndarray | None"]
#: What an emulation rule gives for one result: words, a plain value, or nothing.
Out = Union[W.Words, ir.Value, None]
#: ``rule(op, em) -> one entry per result``.
EmulateRule = Callable[[ir.Operation, WordContext], list[Out]]
class PairContext(CarrierContext[P.Pair], Protocol):
    """The float pair step as pair rules use it (``em``; see
    :class:`no64.transforms.pairs.PairEmulation`)."""

    #: How many ulps the device's f32 division may be off (0.5: correctly
    #: rounded; :attr:`no64.targets.Arithmetic.divide_ulp`).
    divide_ulp: float
    #: The same for its f32 square root.
    sqrt_ulp: float

    def is_pair(self, v: ir.Value) -> bool:
        """Whether ``v`` is float64 (carried as a pair)."""
        ...

    @property
    def matmul(self) -> Any:
        """The device's matrix engine datapath (a :class:`no64.targets.Matmul`)
        that float64 dots compute their exact slice products on."""
        ...

    def pair(self, v: ir.Value) -> P.Pair:
        """The pair of float64 operand ``v``."""
        ...

    def reduced(self, op: ir.Operation, detail: str) -> None:
        """Record that ``op`` is computed with less precision than float64."""
        ...

    def event(self, op: ir.Operation, kind: str, detail: str, count: int = 1) -> None:
        """Record an event of ``kind`` at ``op``."""
        ...

    def out_of_range(self, op: ir.Operation, values: np.ndarray) -> None:
        """Refuse or record a constant's elements that pairs cannot hold."""
        ...

    def constant_elements(self, op: ir.Operation) -> np.ndarray:
        """The float64 elements of a constant op (flat)."""
        ...

    def constant_value(self, v: ir.Value) -> np.ndarray | None:
        """The elements of ``v`` if a constant defines it (through broadcasts
        and reshapes), else ``None``."""
        ...

    def rebuild_scatter(self, op: ir.Operation) -> list[Any]:
        """``scatter`` rebuilt on pairs."""
        ...


#: ``rule(op, em) -> one entry per result`` for float64 values carried as f32
#: pairs: a pair, a plain value, or nothing.
PairRule = Callable[[ir.Operation, PairContext], list[Any]]


class WidenContext(CarrierContext[ir.Value], Protocol):
    """The 16-bit widening as its rules use it (``wd``; see
    :class:`no64.transforms.widen.Widening`): each 16-bit integer value is
    carried as one 32-bit value, and the op computing it is retyped in place."""

    @property
    def target_name(self) -> str:
        """The target without 16-bit integers (for a refusal's reason)."""
        ...

    def kind(self, v: ir.Value) -> str | None:
        """``"i16"``/``"u16"`` where ``v`` is a 16-bit integer of the program
        carried in 32 bits, else ``None``."""
        ...

    def retype(self, op: ir.Operation) -> None:
        """``op`` made to compute on 32-bit values, in place: its carried
        operands read their 32-bit values, its carried results and the
        carried arguments of its regions are retyped."""
        ...

    def fixed(self, op: ir.Operation, detail: str) -> None:
        """Record that ``op`` was given ``detail`` (a wrap, a mask, ...) to
        keep its 16-bit meaning."""
        ...


#: ``rule(op, wd) -> one entry per result``: the 32-bit value that stands
#: for a carried result where it is not the result itself (retyped in place;
#: ``None`` or a shorter list).
WidenRule = Callable[[ir.Operation, WidenContext], "list[ir.Value | None]"]
#: ``why_not(op, wd)``: why the widening cannot carry ``op``'s 16-bit
#: integers in 32 bits (``None``: it can).
WidenWhyNot = Callable[[ir.Operation, WidenContext], "str | None"]


class Legalization(Protocol):
    """An op's rewrite into a form a device computes exactly, planned (every
    range it needs already read) and not yet applied."""

    @property
    def summary(self) -> str:
        """What the op becomes, in a few words."""
        ...

    @property
    def ops(self) -> int:
        """How many ops of the op's own kind it becomes (limb dots, ...)."""
        ...

    def apply(self) -> None:
        """Build the new form before the op, hand its uses to it, erase the op."""
        ...


#: ``rule(op, q, bound, in_f32)``: ``op`` rewritten so that every operand,
#: product and partial result of the ops of its kind it becomes is at most
#: ``bound`` in magnitude (``in_f32``: those ops computed in f32 on integers
#: converted to f32, no integer op of its kind left), with ranges from
#: ``q``; or why no such form exists (a string).
LegalizeRule = Callable[[ir.Operation, RangeQuery, int, bool], "Legalization | str"]

#: ``rule(op)``: ``op`` rewritten without what a device refuses it for (its
#: several inputs: its body applied to whole tensors; the op itself: the
#: same results from other ops), or why it cannot be (a string).
UnfoldRule = Callable[[ir.Operation], "Legalization | str"]
