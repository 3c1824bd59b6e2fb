"""What the compile hook did with each module: a :class:`CompileRecord`
per module, the latest kept in the hook's state."""

from __future__ import annotations

import dataclasses

from ...kinds import Mode
from ...report import DemotionReport
from .. import intent
from ..state import STATE


def is_exact(report: DemotionReport | None) -> bool:
    """Whether a demotion kept every value: no lossy event, only exact or sentinel verdicts."""
    return report is None or report.exact


@dataclasses.dataclass(frozen=True)
class CompileRecord:
    """One module that went through the hook.

    ``report`` is ``None`` when the module held no 64-bit value (it then
    reached the backend unchanged).
    """

    module: str
    platform: str
    mode: Mode
    report: DemotionReport | None
    #: The report of the module's x64 meaning, judged under the default,
    #: strict or permissive policy (see :func:`judge_meaning`; it is then
    #: also ``report``); ``None`` when the program did not ask for x64, or
    #: under ``exact``, whose ``report`` is that of the x64 program.
    meaning: DemotionReport | None = None

    @property
    def changed(self) -> bool:
        """Whether the backend got a rewritten module."""
        return self.report is not None and self.report.changed

    @property
    def exact(self) -> bool:
        """Whether every narrowing kept its value (see :func:`is_exact`) and,
        for a program that asked for x64, every integer its x64 program
        computes in 64 bits is proven to fit."""
        return is_exact(self.report) and (self.meaning is None or not intent.unproven(self.meaning))


def record(name: str, platform: str, mode: Mode, report: DemotionReport | None) -> None:
    meaning = STATE.thread.meaning
    STATE.thread.meaning = None
    record = CompileRecord(name, platform, mode, report, meaning)
    STATE.records.append(record)
    if STATE.listeners:
        STATE.tell.on_compile(record)


def compile_records() -> list[CompileRecord]:
    """The most recent modules (up to 1024) that went through the hook, oldest first."""
    return list(STATE.records)


def clear_compile_records() -> None:
    """Forget the records returned by :func:`compile_records`."""
    STATE.records.clear()
