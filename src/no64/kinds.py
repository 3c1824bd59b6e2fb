"""The vocabularies no64 shares between its modules, as string enums.

Each member equals its string (``Verdict.UNPROVEN == "unproven"``), so JSON
output, ``--json`` reports and comparisons with plain strings are unchanged;
the enums give one definition of each word and of the sets derived from it.
"""

from __future__ import annotations

import enum
from typing import Self

__all__ = [
    "EXACT_VERDICTS",
    "LOSSY_EVENTS",
    "ElementKind",
    "EventKind",
    "FailOn",
    "FloatPolicy",
    "Handling",
    "IntegerPolicy",
    "Mode",
    "OpForm",
    "Outputs",
    "RangePolicy",
    "SentinelUse",
    "Verdict",
    "View",
    "HintKind",
]


class _Vocabulary(enum.StrEnum):
    """A closed set of words; :meth:`parse` turns user input into a member."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The words, as plain strings, in definition order."""
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls, value: object, what: str) -> Self:
        """``value`` as a member, or ``ValueError("<what> must be one of (...), not ...")``."""
        if isinstance(value, str):  # (any other object is no member either)
            try:
                return cls(value)
            except ValueError:
                pass
        raise ValueError(f"{what} must be one of {cls.values()}, not {value!r}") from None


class Verdict(_Vocabulary):
    """How a narrowed value relates to its 64-bit original (``DemotionReport.verdicts``)."""

    #: Same value in 32 bits (proven in range, or an f64 constant f32 holds exactly).
    EXACT = "exact"
    #: A 64-bit extreme mapped to the 32-bit extreme, keeping its meaning.
    SENTINEL = "sentinel"
    #: Carried exactly as a pair of 32-bit words (see :mod:`no64.transforms.emulate`).
    EMULATED = "emulated"
    #: An out-of-range integer constant clipped (``integer_policy="saturate"``).
    SATURATED = "saturated"
    #: An out-of-range integer constant wrapped (``integer_policy="wrap"``).
    WRAPPED = "wrapped"
    #: Computed with fewer bits (f64 as f32, rounded f64 constants, rules).
    PRECISION_REDUCED = "precision-reduced"
    #: An integer that may not fit in 32 bits: exact only if it does.
    UNPROVEN = "unproven"
    #: A value that never fits in 32 bits.
    OVERFLOW = "overflow"

    @property
    def lossy(self) -> bool:
        """Whether the narrowed value may differ from the 64-bit one."""
        return self not in EXACT_VERDICTS


#: Verdicts that keep every value (a sentinel keeps its meaning).
EXACT_VERDICTS: frozenset[Verdict] = frozenset({Verdict.EXACT, Verdict.SENTINEL, Verdict.EMULATED})


class EventKind(_Vocabulary):
    """The kind of a :class:`no64.report.Event`."""

    #: An integer or float extreme mapped to the 32-bit extreme.
    SENTINEL = "sentinel"
    #: Out-of-range integer constant(s) clipped (``integer_policy="saturate"``).
    SATURATED = "saturated"
    #: Out-of-range integer constant(s) wrapped (``integer_policy="wrap"``).
    WRAPPED = "wrapped"
    #: f64 constant(s) rounded to the nearest f32.
    FLOAT_INEXACT = "float-inexact"
    #: Finite f64 constant(s) beyond f32's range, now ``inf``.
    FLOAT_OVERFLOW = "float-overflow"
    #: Under ``float_policy="pairs"``: a float64 value that may leave f32
    #: pairs' range there (beyond 3.4e38, or too small for its pair to keep
    #: 48 bits once subnormals flush): a constant, or an op the magnitude
    #: analysis cannot bound (:mod:`no64.analysis.pair_range`).
    PAIR_RANGE = "pair-range"
    #: An op replaced by an exact 32-bit equivalent.
    REWRITE = "rewrite"
    #: An op computed exactly on 64-bit integers carried as 32-bit word pairs.
    EMULATED = "emulated"
    #: An op replaced by a 32-bit equivalent that computes with fewer bits.
    PRECISION_REDUCED = "precision-reduced"
    #: An integer value the pass cannot prove fits in 32 bits.
    UNPROVEN = "unproven"
    #: An integer value that never fits in 32 bits (``policy="permissive"``).
    OVERFLOW = "overflow"

    @property
    def lossy(self) -> bool:
        """Whether an event of this kind means a value may have changed.

        Kinds named after a verdict are lossy exactly when the verdict is.
        """
        if self in (EventKind.FLOAT_INEXACT, EventKind.FLOAT_OVERFLOW, EventKind.PAIR_RANGE):
            return True
        if self in (EventKind.REWRITE, EventKind.EMULATED):
            return False
        return Verdict(self.value).lossy


#: Event kinds whose narrowing may change a value.
LOSSY_EVENTS: frozenset[EventKind] = frozenset(k for k in EventKind if k.lossy)


class SentinelUse(_Vocabulary):
    """What an op does with a 64-bit sentinel (``INT64_MAX``, ``INT64_MIN``,
    ``UINT64_MAX``) in one of its operands: declared per op in the op table
    (:mod:`no64.rules.ops`), the one place that decides where a sentinel may
    stand for itself as its 32-bit extreme."""

    #: Moves, selects or orders it into its results (or its regions'
    #: arguments) unchanged: broadcasts, slices, gathers, select, min/max,
    #: clamp, sorts, reductions, loops, branches, calls and returns.
    CARRIES = "carries"
    #: Only its order against the other operands matters (``compare``): the
    #: narrowed program keeps the outcome where no ordinary value can equal
    #: the sentinel's 32-bit extreme.
    COMPARES = "compares"
    #: Computes with the 64-bit number it is: arithmetic, division,
    #: remainder, shifts, bit counts, bitwise ops, converts to another type,
    #: indices, and every op the table does not declare otherwise.
    READS = "reads"


class RangePolicy(_Vocabulary):
    """Which verdicts of the range analysis :func:`no64.demote` refuses."""

    #: Refuses ``overflow``, reports ``unproven``.
    DEFAULT = "default"
    #: Refuses ``overflow`` and ``unproven``.
    STRICT = "strict"
    #: Refuses nothing; reports both.
    PERMISSIVE = "permissive"
    #: Emulates every integer not proven to fit (exact 64-bit results in
    #: 32-bit words); refuses what is left unproven, like ``strict``.
    EXACT = "exact"

    @property
    def refuses(self) -> frozenset[Verdict]:
        """The verdicts refused with :class:`no64.NarrowingError`."""
        return _REFUSES[self]


_REFUSES: dict[RangePolicy, frozenset[Verdict]] = {
    RangePolicy.DEFAULT: frozenset({Verdict.OVERFLOW}),
    RangePolicy.STRICT: frozenset({Verdict.OVERFLOW, Verdict.UNPROVEN}),
    RangePolicy.PERMISSIVE: frozenset(),
    RangePolicy.EXACT: frozenset({Verdict.OVERFLOW, Verdict.UNPROVEN}),
}


class FloatPolicy(_Vocabulary):
    """How :func:`no64.demote` computes float64 values."""

    #: Narrowed to f32 (``precision-reduced``).
    F32 = "f32"
    #: Carried as normalized pairs of f32 (hi, lo).
    PAIRS = "pairs"


class IntegerPolicy(_Vocabulary):
    """What :func:`no64.demote` does with an out-of-range 64-bit integer constant."""

    #: Refuse it with :class:`no64.ConstantRangeError`.
    ERROR = "error"
    #: Clip it to the 32-bit range.
    SATURATE = "saturate"
    #: Keep its low 32 bits.
    WRAP = "wrap"

    @property
    def verdict(self) -> Verdict | None:
        """The verdict of a constant narrowed by this policy (``None``: refused)."""
        return _POLICY_VERDICT[self]


_POLICY_VERDICT: dict[IntegerPolicy, Verdict | None] = {
    IntegerPolicy.ERROR: None,
    IntegerPolicy.SATURATE: Verdict.SATURATED,
    IntegerPolicy.WRAP: Verdict.WRAPPED,
}


class Outputs(_Vocabulary):
    """How the entry function's 64-bit values cross its signature once
    computed in 32-bit parts (:func:`no64.demote`'s ``outputs``)."""

    #: In their parts: an emulated 64-bit integer as ``S x 2`` 32-bit words
    #: (low, high), a float64 under ``float_policy="pairs"`` as ``S x 2`` f32
    #: (hi, lo).
    WORDS = "words"
    #: Narrowed to one 32-bit value each, the signature's types kept 32-bit
    #: (for a runtime that fixes them, such as JAX's compile hook).
    NARROW = "narrow"
    #: As ``NARROW``; under ``policy="exact"`` a value not proven to fit is
    #: not refused but checked by its value when the module runs: the entry
    #: function returns one more result, a scalar ``i1`` that is true when
    #: every such value fits in 32 bits (the runtime must read it and refuse
    #: the results otherwise; :attr:`no64.DemotionReport.checked_outputs`).
    CHECKED = "checked"


class ElementKind(_Vocabulary):
    """What the elements of a (converted) type are, as the narrowing pass
    judges its values."""

    #: Signless or signed integers.
    INT = "int"
    #: Unsigned integers.
    UINT = "uint"
    #: Floats or complex numbers.
    FLOAT = "float"
    #: Not a tensor of those (tuples and other aggregates).
    OTHER = "other"

    @property
    def integer(self) -> bool:
        """Whether the elements are integers (signed or not)."""
        return self in (ElementKind.INT, ElementKind.UINT)


class Mode(_Vocabulary):
    """What the compile hook does with a module for a protected platform."""

    #: Demote, then check.
    FIX = "fix"
    #: Refuse any 64-bit value.
    CHECK = "check"
    #: Pass modules through.
    OFF = "off"


class Handling(_Vocabulary):
    """What no64 does with one 64-bit value found by the audit, from harmless
    to blocking (members are in that order; see :mod:`no64.jax.audit`)."""

    EXACT = "exact"
    SENTINEL = "sentinel"
    REWRITTEN = "rewritten"
    EMULATED = "emulated"
    FLOAT32 = "float32"
    ROUNDED = "rounded"
    PRECISION_REDUCED = "precision-reduced"
    UNPROVEN = "unproven"
    OVERFLOW = "overflow"
    REFUSED = "refused"
    BLOCKED = "blocked"

    @property
    def rank(self) -> int:
        """Severity: a higher rank is worse."""
        return _RANK[self]

    @property
    def removable(self) -> bool:
        """Whether no64 removes the value exactly or with a known loss of
        precision (the pytest plugin fails a test on the others)."""
        return self not in _NOT_REMOVABLE

    @property
    def sarif_level(self) -> str:
        """The SARIF result level: ``note``, ``warning`` or ``error``."""
        if self.rank >= Handling.OVERFLOW.rank:
            return "error"
        if self.rank >= Handling.PRECISION_REDUCED.rank:
            return "warning"
        return "note"

    @classmethod
    def of_verdict(cls, verdict: Verdict) -> "Handling":
        """The handling of a value with ``verdict``."""
        return _OF_VERDICT[verdict]

    @classmethod
    def of_event(cls, kind: EventKind) -> "Handling":
        """The handling of a value whose op has an event of ``kind``."""
        return _OF_EVENT[kind]


_RANK: dict[Handling, int] = {h: i for i, h in enumerate(Handling)}
_NOT_REMOVABLE = frozenset({Handling.REFUSED, Handling.BLOCKED, Handling.UNPROVEN, Handling.OVERFLOW})
_OF_VERDICT: dict[Verdict, Handling] = {
    Verdict.EXACT: Handling.EXACT,
    Verdict.SENTINEL: Handling.SENTINEL,
    Verdict.EMULATED: Handling.EMULATED,
    Verdict.SATURATED: Handling.OVERFLOW,
    Verdict.WRAPPED: Handling.OVERFLOW,
    Verdict.PRECISION_REDUCED: Handling.PRECISION_REDUCED,
    Verdict.UNPROVEN: Handling.UNPROVEN,
    Verdict.OVERFLOW: Handling.OVERFLOW,
}
_OF_EVENT: dict[EventKind, Handling] = {
    EventKind.REWRITE: Handling.REWRITTEN,
    EventKind.EMULATED: Handling.EMULATED,
    EventKind.SENTINEL: Handling.SENTINEL,
    EventKind.FLOAT_INEXACT: Handling.ROUNDED,
    EventKind.SATURATED: Handling.OVERFLOW,
    EventKind.WRAPPED: Handling.OVERFLOW,
    EventKind.PRECISION_REDUCED: Handling.PRECISION_REDUCED,
    EventKind.UNPROVEN: Handling.UNPROVEN,
    EventKind.FLOAT_OVERFLOW: Handling.OVERFLOW,
    EventKind.PAIR_RANGE: Handling.PRECISION_REDUCED,
    EventKind.OVERFLOW: Handling.OVERFLOW,
}


class View(_Vocabulary):
    """Which modules an audit report describes (see :mod:`no64.jax.audit`)."""

    #: What the compile hook did while the program ran under it.
    HOOK = "hook"
    #: The modules the program compiles on its own, as no64 would handle them.
    AS_IS = "as-is"


class FailOn(_Vocabulary):
    """``no64 audit --fail-on`` levels."""

    #: Every 64-bit value.
    ANY = "any"
    #: Values that may change or block: ``precision-reduced`` and worse.
    LOSSY = "lossy"
    #: Values that may not fit in 32 bits, or block: ``unproven`` and worse.
    UNPROVEN = "unproven"
    #: Refused modules only: ``refused`` and ``blocked`` (the audit's default).
    REFUSED = "refused"
    #: Refused modules, and any line ``--numerics`` measures beyond its tolerance.
    NUMERICS = "numerics"

    @property
    def handlings(self) -> frozenset[Handling]:
        """The handlings this level fails on."""
        floor = {FailOn.ANY: Handling.EXACT, FailOn.LOSSY: Handling.PRECISION_REDUCED,
                 FailOn.UNPROVEN: Handling.UNPROVEN, FailOn.REFUSED: Handling.REFUSED,
                 FailOn.NUMERICS: Handling.REFUSED}[self]
        return frozenset(h for h in Handling if h.rank >= floor.rank)


class HintKind(_Vocabulary):
    """What a float hint says f32 changes (see :mod:`no64.analysis.float_hints`)."""

    #: A constant f32 cannot resolve next to the values it is compared with.
    TOLERANCE = "tolerance"
    #: A large value added and taken away again, or values that cancel.
    CANCELLATION = "cancellation"
    #: A sum over more terms than f32's mantissa counts (2**24).
    LONG_SUM = "long-sum"
    #: Values beyond f32's range.
    OVERFLOW = "overflow"
    #: Values below f32's smallest normal magnitude.
    UNDERFLOW = "underflow"
    #: A float64 sentinel (its largest finite value) used in arithmetic.
    SENTINEL_ARITHMETIC = "sentinel-arithmetic"


class OpForm(_Vocabulary):
    """The forms of op a device may refuse or compute on a narrower datapath
    (:mod:`no64.targets`); the op table gives each op its form."""

    #: An integer or float contraction (``dot_general``).
    MATMUL = "matmul"
    #: A reduction over dimensions (``reduce``).
    REDUCE = "reduce"
    #: A reduction over windows (``reduce_window``).
    REDUCE_WINDOW = "reduce-window"
    #: A scatter (with a combiner in its body).
    SCATTER = "scatter"
    #: A reduction across replicas (``all_reduce``, ``reduce_scatter``).
    COLLECTIVE = "collective"
    #: A sort with a comparator.
    SORT = "sort"
    #: The largest ``k`` elements (``top_k``).
    TOP_K = "top-k"
    #: Rounding floats to fewer bits (``reduce_precision``).
    REDUCE_PRECISION = "reduce-precision"
    #: An arithmetic right shift.
    SHIFT_RIGHT_ARITHMETIC = "shift-right-arithmetic"
    #: Random bits from a key (``rng_bit_generator``).
    RNG_BIT_GENERATOR = "rng-bit-generator"
    #: A convolution (``convolution``).
    CONVOLUTION = "convolution"
    #: An LU factorization a library computes (a ``custom_call``: XLA:TPU's
    #: ``LuDecomposition``, LAPACK's ``getrf``).
    LU = "lu"
    #: A triangular solve ``A X = B`` (``stablehlo.triangular_solve``, or a
    #: ``custom_call`` of LAPACK's ``trsm``).
    TRIANGULAR_SOLVE = "triangular-solve"
    #: A discrete Fourier transform (``fft``).
    FFT = "fft"
    #: A reinterpretation of bits as another type (``bitcast_convert``).
    BITCAST = "bitcast"
    #: The next representable float toward another (``chlo.next_after``).
    NEXT_AFTER = "next-after"
    #: A choice of one region to run by a value (``case``, ``if``: ``lax.cond``,
    #: ``lax.switch``).
    BRANCH = "branch"
    #: A loop (``while``: ``lax.while_loop``, ``fori_loop``, ``scan``).
    LOOP = "loop"

