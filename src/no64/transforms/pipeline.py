"""The conversion chain, composed once: demote, then legalize for the
target, then check against the target.

:class:`Pipeline` holds one :class:`~no64.options.Options` and runs the
chain's steps with it, for every way in (``no64 convert``, the compile
hook, :func:`no64.jit`):

1. :meth:`Pipeline.demote`: the pass (:func:`no64.transforms.demote.demote`)
   under the options;
2. :meth:`Pipeline.check_target`: on the options' target (or the profile the
   caller names), the ops it computes inexactly or refuses for their integer
   elements made exact where no64 can
   (:func:`no64.transforms.legalize.legalize`), then what it would still
   refuse or compute inexactly found
   (:func:`no64.targets.legality.check_target`), and judged: a finding is
   refused under the ``strict`` and ``exact`` policies
   (:attr:`TargetCheck.refused`, :meth:`TargetCheck.refusal`) and a warning
   under the others -- each caller says it in its own way (a line on
   stderr, a :class:`no64.TargetWarning` at the user's line);
3. :meth:`Pipeline.run`: both, on a module converted in place -- what
   ``no64 convert`` does -- refusing what the target refuses.

The compile hook runs the steps apart: it demotes only modules that hold a
64-bit value, and checks every module it compiles (the program's own
32-bit integer ops too) against the device's profile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..errors import TargetError
from ..ir._mlir import ir
from ..kinds import RangePolicy
from ..options import Options
from ..report import DemotionReport
from ..targets import Target
from ..targets.legality import TargetFinding, check_target
from .demote import demote
from .legalize import Legalized, legalize, may_legalize

__all__ = ["Conversion", "Pipeline", "TargetCheck", "constrains"]

#: The range policies under which what the target refuses or computes
#: inexactly is refused (under the others, a warning).
REFUSING = frozenset({RangePolicy.STRICT, RangePolicy.EXACT})


def constrains(profile: Target) -> bool:
    """Whether ``profile`` refuses, computes on a narrower datapath or
    widens anything: else the target step has nothing to do."""
    return bool(profile.refuses or profile.datapaths or profile.widens)


@dataclasses.dataclass
class TargetCheck:
    """What the target step did with a module, and what it found."""

    #: The module to compile: the one given, or the legalized copy.
    module: ir.Module
    #: The device profile.
    profile: Target
    #: The range policy the findings are judged under.
    policy: RangePolicy
    #: What :func:`~no64.transforms.legalize.legalize` rewrote and left
    #: (empty where nothing was to be rewritten).
    legalized: Legalized
    #: What the profile would still refuse or compute inexactly.
    findings: list[TargetFinding]

    def explain(self, finding: TargetFinding) -> str:
        """``finding`` in words, with why no64 left its op (where it did)."""
        return self.legalized.explain(finding)

    @property
    def refused(self) -> bool:
        """Whether the policy refuses the module for its findings."""
        return bool(self.findings) and self.policy in REFUSING

    def refusal(self, subject: str, *, source: bool = False) -> TargetError:
        """The error refusing the module: ``subject``, the first finding in
        words and how many more (``source``: and where the profile's entry
        for it comes from)."""
        first = self.findings[0]
        more = f" (and {len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        where = f"; source: {first.source}" if source else ""
        return TargetError(f"{subject}: {self.explain(first)}{more}{where}")


@dataclasses.dataclass
class Conversion:
    """What :meth:`Pipeline.run` did with a module."""

    #: The converted module (the one given, changed in place).
    module: ir.Module
    #: The pass's report.
    report: DemotionReport
    #: The target step's result (``None``: the options name no target).
    target: TargetCheck | None


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """The conversion chain under one :class:`~no64.options.Options`."""

    options: Options

    def demote(self, module: ir.Module) -> DemotionReport:
        """The pass, in place (see :func:`no64.transforms.demote.demote`)."""
        return demote(module, self.options)

    def check_target(self, module: ir.Module, profile: Target | None = None, *,
                     copy: Callable[[ir.Module], ir.Module] | None = None) -> TargetCheck:
        """``module`` made exact on ``profile`` (default: the options' target)
        where no64 can, and checked against it; ``copy`` makes the copy that
        is legalized when something is to be rewritten (``None``: ``module``
        itself, in place).  The declared input ranges bound the module's
        integer inputs."""
        if profile is None:
            profile = self.options.target
            if profile is None:
                raise ValueError("Pipeline.check_target needs a profile: the options name no target")
        done = Legalized(profile.name)
        if not constrains(profile):
            return TargetCheck(module, profile, self.options.policy, done, [])
        ranges = self.options.declared_ranges
        if may_legalize(module, profile):
            work = module if copy is None else copy(module)
            done = legalize(work, profile, input_ranges=ranges)
            if done.changed:
                module = work
        findings = check_target(module, profile, input_ranges=ranges, types=False)
        return TargetCheck(module, profile, self.options.policy, done, findings)

    def run(self, module: ir.Module) -> Conversion:
        """The whole chain on ``module``, in place: demoted, then, when the
        options name a target, legalized and checked against it.

        Raises:
          TargetError: the policy refuses what the target would still
            refuse or compute inexactly (the module is converted).
          no64.No64Error: the pass refused the module (it is unchanged).
        """
        report = self.demote(module)
        checked = self.check_target(module) if self.options.target is not None else None
        if checked is not None and checked.refused:
            raise checked.refusal(f"target {checked.profile.name} (policy {self.options.policy})")
        return Conversion(module, report, checked)
