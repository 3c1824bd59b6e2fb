"""Every exception and warning no64 raises on purpose.

Each error derives from :class:`No64Error`, so callers (and the CLI) can tell
a refused or malformed program from a bug.  Errors about one op carry its
location as a :class:`~no64.SourceLocation`.

Where no64 refuses what JAX with x64 off refuses too, its error is also an
instance of the exception JAX raises there (:class:`PythonIntRangeError`
an ``OverflowError``, :class:`Boundary64BitError` a ``ValueError``), so code
and tests that catch JAX's error catch no64's.  An error raised where JAX
would not refuse derives from no builtin exception for that reason (a
``HostRangeError`` about numpy data, which JAX truncates, is no
``OverflowError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ir.locations import SourceLocation
from .kinds import Verdict
from .report import Finding, Narrowing

__all__ = [
    "ArgumentRangeError",
    "Boundary64BitError",
    "ConfigurationError",
    "ConstantRangeError",
    "FloatPrecisionWarning",
    "HostRangeError",
    "InputError",
    "InputRangeError",
    "InvalidModuleError",
    "NarrowingError",
    "No64Error",
    "NoX64MeaningError",
    "NoX64MeaningWarning",
    "OutputError",
    "OutputRangeError",
    "PairArithmeticError",
    "PairRangeError",
    "PairRangeWarning",
    "PythonIntRangeError",
    "Remaining64BitError",
    "TargetError",
    "TargetWarning",
    "TracedArgumentError",
    "UnprovenIntegerWarning",
    "UnsupportedOpError",
    "X64DisabledWarning",
]


class No64Error(Exception):
    """Base class: a module that cannot be made, or is not, 64-bit free.

    ``findings`` lists the 64-bit values involved, when there are any.
    """

    def __init__(self, message: str, findings: Sequence["Finding"] = ()) -> None:
        super().__init__(message)
        self.findings: tuple["Finding", ...] = tuple(findings)


class Remaining64BitError(No64Error):
    """Raised by :func:`no64.check` when 64-bit values remain in a module."""


class UnsupportedOpError(No64Error):
    """An op whose meaning depends on bit width, which no rule narrows exactly.

    Attributes ``op`` (the op name), ``location`` (its
    :class:`~no64.SourceLocation`) and ``reason``.
    """

    def __init__(self, op: str, location: SourceLocation, reason: str) -> None:
        super().__init__(f"{op} at {location}: {reason}")
        self.op = op
        self.location = location
        self.reason = reason


class ConstantRangeError(No64Error):
    """A 64-bit integer constant that does not fit in 32 bits and is no sentinel.

    Attributes ``op``, ``location`` (a :class:`~no64.SourceLocation`) and ``detail``.
    """

    def __init__(self, op: str, location: SourceLocation, detail: str) -> None:
        super().__init__(
            f"{op} at {location}: {detail}; the 'saturate' or 'wrap' integer policy "
            "narrows it anyway (the report records each such constant)"
        )
        self.op = op
        self.location = location
        self.detail = detail


class NarrowingError(No64Error):
    """A narrowed integer value that the range analysis shows may not fit in
    32 bits (``verdict="unproven"``, refused under ``policy="strict"``) or
    never fits (``verdict="overflow"``, refused unless
    ``policy="permissive"``).

    Attributes ``op``, ``location`` (a :class:`~no64.SourceLocation`),
    ``verdict``, ``interval`` (the value's range in the 64-bit program) and
    ``narrowing`` (the value's :class:`~no64.report.Narrowing` record:
    which result or argument of the op, when the pass gives one).
    """

    def __init__(
        self,
        op: str,
        location: SourceLocation,
        verdict: Verdict,
        interval: tuple[int, int],
        policy: str,
        *,
        narrowing: Narrowing | None = None,
        reason: str | None = None,
        hint: str | None = None,
    ) -> None:
        verdict = Verdict(verdict)
        given_hint = hint
        hint = "declare input ranges if the inputs are smaller than their type allows"
        if reason is not None:
            what = reason
        elif verdict is Verdict.OVERFLOW:
            what = f"a 64-bit integer in [{interval[0]}, {interval[1]}] is certain to leave the 32-bit range"
            hint = "the 32-bit program would compute other values"
        else:
            what = f"a 64-bit integer in [{interval[0]}, {interval[1]}] may not fit in 32 bits"
        hint = given_hint or hint
        super().__init__(f"{op} at {location}: {what} ({verdict}; refused by policy {str(policy)!r}); {hint}")
        self.op = op
        self.location = location
        self.verdict = verdict
        self.interval = interval
        self.narrowing = narrowing


class InputRangeError(No64Error):
    """Declared input ranges that do not match the entry function's arguments."""


class InputError(No64Error):
    """Bad input: unreadable, empty, malformed or of an unknown format.

    The message names the file (or ``<memory>``) and, where the parser gave
    one, the location inside it.
    """


class InvalidModuleError(No64Error):
    """The module failed MLIR verification (before or after the pass)."""


class OutputError(No64Error):
    """A module could not be written: unknown format, existing file, I/O error."""


class ArgumentRangeError(No64Error, ValueError):
    """A 64-bit input value that its 32-bit type cannot hold (:func:`no64.jit`).

    Attributes:
      path: The argument's pytree path (``"params['w']"``, ``"batch[1]"``).
      index: Index of the first offending element (``()`` for scalars).
      value: That element.
      dtype: The input's dtype (or Python type name).
      target: The 32-bit dtype it would have become.
    """

    def __init__(self, message: str, *, path: str, index: tuple[int, ...], value: Any,
                 dtype: str, target: str) -> None:
        super().__init__(message)
        self.path = path
        self.index = index
        self.value = value
        self.dtype = dtype
        self.target = target


class TracedArgumentError(No64Error, TypeError):
    """A 64-bit *traced* argument: :func:`no64.jit` was called inside another transformation.

    Traced values cannot be range-checked on the host, so :func:`no64.jit` must be
    applied outermost (``no64.jit(jax.grad(f))``, not ``jax.grad(no64.jit(f))``).
    """


class Boundary64BitError(No64Error, ValueError):
    """A computation for a platform without 64-bit types takes or returns 64-bit arrays.

    A ``ValueError``, as JAX's own refusal of a 64-bit dtype with x64 off is
    (``jax.random.bits(key, dtype=jnp.uint64)`` under
    ``jax_explicit_x64_dtypes="error"``), so code catching JAX's error
    catches no64's.

    No rewrite of the module can help: JAX would hand the executable 64-bit
    buffers, and such arrays cannot exist on the platform.  The message says
    how the 64-bit values got there (``jax_enable_x64`` on, a computation
    traced before no64 turned it off, a 64-bit ``jax.Array`` created while it
    was on, ``jax_explicit_x64_dtypes="allow"``) and what to do.
    """


class PairArithmeticError(No64Error):
    """``float_policy="pairs"`` on a backend whose f32 arithmetic lacks a
    property the pair algorithms rest on, as its device profile declares
    that arithmetic (:class:`no64.targets.Arithmetic`): sums or products not
    rounded to nearest (a stochastic rounding), TwoSum or TwoProduct not
    exact (fast-math), a quotient or root further off than declared, a
    product fused into a sum or subnormals kept or flushed where the
    profile says otherwise, or the pair operations beyond their bounds.
    The message names the backend, what failed first and an example."""


class PairRangeError(No64Error, ValueError):
    """Under ``float_policy="pairs"`` with ``policy="strict"`` or
    ``"exact"``, a float64 value entering f32 pairs outside their range (a
    module's constant, a host argument): finite beyond float32's largest
    value (it would become ``inf``), or nonzero and so small that the pair,
    once f32 subnormals are flushed, is further from it than ``2**-48`` of
    its magnitude (its low word, or the value itself, is lost).  The
    default policy records it (``pair-range`` in the report) or warns
    (:class:`PairRangeWarning`) instead.  A ``ValueError``, like
    :class:`ArgumentRangeError`.

    Attributes ``op`` (the op name, or ``"host value"``), ``location`` (the
    op's or the caller's :class:`~no64.SourceLocation`), ``value`` (the
    first such element), ``index`` (its index, ``()`` for scalars) and
    ``count`` (how many elements).
    """

    def __init__(self, message: str, *, op: str, location: SourceLocation, value: float,
                 index: tuple[int, ...] = (), count: int = 1) -> None:
        super().__init__(message)
        self.op = op
        self.location = location
        self.value = value
        self.index = index
        self.count = count


class PairRangeWarning(UserWarning):
    """Under ``float_policy="pairs"`` and the default policy, float64 data
    entering f32 pairs outside their range (see :class:`PairRangeError`,
    which ``policy="strict"`` and ``"exact"`` raise instead): host arguments
    of :func:`no64.jit` and of programs under the compile hook, and values
    handed to :func:`no64.split_pairs`.  Given once per source line."""


class X64DisabledWarning(UserWarning):
    """no64 turned ``jax_enable_x64`` off for a platform without 64-bit types."""


class UnprovenIntegerWarning(UserWarning):
    """The x64 program computes a 64-bit integer that is not proven to fit in
    32 bits, and no64 computes it as a 32-bit value there (on a target with
    native 64-bit integers: returns it clipped to the 32-bit array JAX
    returns), which may differ from the x64 program's (given once per
    source line; ``-W error`` turns it into a failure)."""


class ConfigurationError(No64Error, ValueError):
    """An unknown value of a no64 environment variable (``NO64_POLICY=exakt``):
    raised at the first compile, naming the variable, the value and the
    choices, rather than running under another setting than the one meant."""


class NoX64MeaningWarning(UnprovenIntegerWarning):
    """A program that asked for x64 has no x64 meaning no64 can compute here
    (its x64 trace failed, differs from the 32-bit one in its signature, or
    has effects other than host callbacks): under the default policy JAX's 32-bit
    program runs, and its integers may differ from the x64 program's (given
    once per source line).  ``strict`` and ``exact`` refuse it instead
    (:class:`NoX64MeaningError`)."""


class TargetWarning(UnprovenIntegerWarning):
    """A compiled module holds what its device's profile
    (:mod:`no64.targets`) says the device refuses, or computes on a narrower
    datapath without a proof that it is exact there (an integer ``dot`` whose
    products may pass 2**24 on Neuron's f32 engine); given once per source
    line under the default policy."""


class TargetError(No64Error):
    """Under ``strict`` or ``exact``, what :class:`TargetWarning` says: the
    module is refused at the op's line, with the vendor's reason."""


class NoX64MeaningError(No64Error):
    """Under ``strict`` or ``exact``, a program that asked for x64 has no x64
    meaning no64 can compute (see :class:`NoX64MeaningWarning`): refused
    rather than run as JAX's 32-bit program, which may compute other
    numbers."""


class FloatPrecisionWarning(UserWarning):
    """Under the default float policy, the x64 program computes a float64
    value whose f32 rounding demonstrably changes the result (a tolerance
    f32 cannot resolve, a cancellation, a long sum, a value beyond f32's
    exponent range, a float sentinel computed with); given once per source
    line, naming ``float_policy="pairs"`` where it fixes it."""


class OutputRangeError(No64Error):
    """Under ``NO64_POLICY=exact``, the x64 program returns a 64-bit integer
    that does not fit in the 32-bit array JAX returns under the compile hook
    (checked by its value when the program runs, where the analysis cannot
    prove it fits).

    ``narrowings`` lists the outputs (:class:`no64.Narrowing`, with their
    source locations).
    """

    def __init__(self, message: str, narrowings: Sequence["Narrowing"] = ()) -> None:
        super().__init__(message)
        self.narrowings = tuple(narrowings)


class HostRangeError(ConstantRangeError):
    """A 64-bit host value (numpy data, a Python int) that does not fit in 32
    bits and is no sentinel, refused under the ``"error"`` integer policy in a
    program that asked for x64 (one that did not gets JAX's x64-off
    truncation, recorded).

    No ``OverflowError`` in itself: with x64 off JAX truncates numpy data
    without a word, and converts a Python int to an explicit 32-bit type
    (``lax.convert_element_type(2**32, "int32")``, ``jnp.full``) by
    truncating it too.  Where JAX refuses the value, no64 raises
    :class:`PythonIntRangeError`.

    Attributes:
      value: The first offending element.
      dtype: Its 64-bit type (``"int64"``, ``"uint64"``, ``"int"``).
      index: Its index in the array (``()`` for scalars).
      source: The user's source line (a :class:`no64.SourceLocation`).
    """

    def __init__(self, message: str, *, value: int, dtype: str, index: tuple[int, ...],
                 source: SourceLocation) -> None:
        No64Error.__init__(self, message)
        self.op = "host value"
        self.location = source
        self.value = value
        self.dtype = dtype
        self.index = index
        self.source = source


class PythonIntRangeError(HostRangeError, OverflowError):
    """A :class:`HostRangeError` for an integer that JAX with x64 off refuses
    too, with an ``OverflowError``: a Python int outside the 32-bit range
    where JAX checks its range (a ``jit`` argument or an operand, ``jnp.array``
    and ``jnp.asarray`` of Python ints or of a list holding one,
    ``device_put``).  So ``except OverflowError`` and
    ``pytest.raises(OverflowError)`` written for JAX catch it; the message is
    no64's, naming the value, the 32-bit type and the user's line.
    """
