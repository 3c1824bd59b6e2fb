"""Exceptions raised by no64.

Every error no64 raises on purpose derives from :class:`No64Error`, so callers
(and the CLI) can tell a refused or malformed program from a bug.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core.scan import Finding


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

    Attributes ``op`` (the op name) and ``location`` (a readable location).
    """

    def __init__(self, op: str, location: str, reason: str) -> None:
        super().__init__(f"{op} at {location}: {reason}")
        self.op = op
        self.location = location
        self.reason = reason


class ConstantRangeError(No64Error):
    """A 64-bit integer constant that does not fit in 32 bits and is no sentinel."""

    def __init__(self, op: str, location: str, detail: str) -> None:
        super().__init__(
            f"{op} at {location}: {detail}; the 'saturate' or 'wrap' integer policy "
            "narrows it anyway (the report records each such constant)"
        )
        self.op = op
        self.location = location


class NarrowingError(No64Error):
    """A narrowed integer value that the range analysis shows may not fit in
    32 bits (``verdict="unproven"``, refused under ``policy="strict"``) or
    never fits (``verdict="overflow"``, refused unless
    ``policy="permissive"``).

    Attributes ``op``, ``location``, ``verdict`` and ``interval`` (the
    value's range in the 64-bit program).
    """

    def __init__(
        self,
        op: str,
        location: str,
        verdict: str,
        interval: tuple[int, int],
        policy: str,
        reason: str | None = None,
    ) -> None:
        hint = "declare input ranges if the inputs are smaller than their type allows"
        if reason is not None:
            what = reason
        elif verdict == "overflow":
            what = f"a 64-bit integer in [{interval[0]}, {interval[1]}] is certain to leave the 32-bit range"
            hint = "the 32-bit program would compute other values"
        else:
            what = f"a 64-bit integer in [{interval[0]}, {interval[1]}] may not fit in 32 bits"
        super().__init__(f"{op} at {location}: {what} ({verdict}; refused by policy {policy!r}); {hint}")
        self.op = op
        self.location = location
        self.verdict = verdict
        self.interval = interval


class InputRangeError(No64Error):
    """Declared input ranges that do not match the entry function's arguments."""


class InputError(No64Error):
    """Bad input: unreadable, empty, malformed or of an unknown format.

    The message names the file (or ``<memory>``) and, where the parser gave
    one, the location inside it.
    """


class InvalidModuleError(No64Error):
    """The module failed MLIR verification (before or after the pass)."""
