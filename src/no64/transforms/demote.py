"""The demotion pass: rewrite a StableHLO module to 32-bit types, in place.

The pass runs in two phases, so that a refused program is left untouched:

1. **Plan.**  One walk over every op of every function and region collects
   the values to retype, the constants to narrow (computing the narrowed
   elements, applying the sentinel rules and the integer policy), the
   ``func.func`` signatures to change and the ops that need an exact
   rewrite.  Ops whose meaning depends on bit width and that no rule handles
   raise :class:`~no64.errors.UnsupportedOpError` here, and out-of-range
   integer constants raise :class:`~no64.errors.ConstantRangeError` under
   the default policy -- before anything is changed.
2. **Apply.**  Types are changed with ``set_type`` (results, block
   arguments of every region, function types), constants get their new
   attributes, exact rewrites are inserted, the module is verified and
   converts that became no-ops are erased.

If anything fails once the module has changed, the module is put back as it
was: plain retyping is taken back from the pass's undo log (every value's old
type, every constant's and signature's old attribute, recorded while
planning, so undoing costs nothing until it is needed); a module that a rule
rewrites is cloned before the rule runs.

What the pass knows about each op comes from the op registry
(:mod:`no64.rules`): which ops are constants, converts and calls, and which
are width-dependent -- those are handed to their exact rewrites, refused by
their check when no rewrite applies, or fixed up after retyping.

The plan is :mod:`no64.transforms.plan`'s, the rewrite
:mod:`no64.transforms.rewrite`'s; this module drives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.float_hints import float_hints
from ..analysis.pair_range import PairRange, pair_range
from ..analysis.ranges import RangeAnalysis, resolve_input_ranges
from ..errors import InputRangeError, InvalidModuleError
from ..ir._mlir import ir
from ..ir.types import is_int64_tensor
from ..kinds import EventKind, FloatPolicy, IntegerPolicy, Outputs, RangePolicy, Verdict
from ..options import Options
from ..report import DemotionReport
from ..rules.linalg import expand_lapack, refinable, refine_solves
from ..rules.pair_rules import is_f64
from ..spec.walk import all_ops
from ..targets import F32_MATMUL, Arithmetic, Matmul, Target
from . import rewrite
from .boundary import NativeBoundary, native_boundary
from .forward import forward_words
from .inline import crosses_calls, inline_calls
from .plan import Plan, Planner, Settings, collision_only
from .scan import _module_op, gc_paused
from .widen import holds_narrow, widen

__all__ = ["demote"]

#: Range policies: which verdicts of the range analysis are refused (see
#: :class:`no64.kinds.RangePolicy`).
RANGE_POLICIES = {p.value: p.refuses for p in RangePolicy}


def demote(
    module: ir.Module | ir.Operation,
    options: Options | None = None,
    *,
    policy: RangePolicy | str | None = None,
    integer_policy: IntegerPolicy | str | None = None,
    input_ranges: Mapping[int | str, tuple[int, int]] | None = None,
    verify: bool | None = None,
    check: bool | None = None,
    outputs: Outputs | str | None = None,
    float_policy: FloatPolicy | str | None = None,
    target: str | Target | None = None,
    float_hints: bool | None = None,
    arithmetic: Arithmetic | None = None,
) -> DemotionReport:
    """Rewrite ``module`` in place so that it holds no 64-bit type.

    Every narrowed integer value gets a verdict from the range analysis
    (:mod:`no64.analysis.ranges`): ``exact`` (proven within the 32-bit range),
    ``sentinel`` (an extreme mapped to the 32-bit extreme), ``unproven``
    (might leave the range) or ``overflow`` (proven to leave it); float
    values are ``exact`` (constants that f32 holds exactly) or
    ``precision-reduced``.  The report counts them and records every
    unproven or overflow value with its location.

    The options come as one :class:`~no64.options.Options` object
    (``options``), as keyword arguments, or both: each keyword argument
    given (not ``None``) replaces that field of ``options``, and a field
    given neither way has the default below.  ``demote(m, policy="strict")``
    is ``demote(m, Options(policy="strict"))``.

    Args:
      module: An ``ir.Module`` (or its operation) from jaxlib's MLIR bindings.
      options: The options as one object (default: ``Options()``).
      policy: Which verdicts are refused with
        :class:`~no64.errors.NarrowingError`: ``"default"`` (default) refuses
        ``overflow`` and reports ``unproven``; ``"strict"`` refuses both;
        ``"permissive"`` reports both; ``"exact"`` computes every 64-bit
        integer value the analysis cannot prove inside the 32-bit range
        exactly as a pair of 32-bit words (:mod:`no64.transforms.emulate`) -- an
        entry function's 64-bit integer input without a declared range
        included, which then enters as words (``report.emulated_inputs``) --
        and refuses what it cannot compute so.  Under every policy, ops with no
        32-bit form (a 64-bit shift by 32 or more, an out-of-range constant
        that is not a sentinel) are emulated the same way.
      input_ranges: Declared inclusive ranges ``(lo, hi)`` of the public
        entry function's integer arguments, by position or by name (the
        name JAX gives the argument, e.g. ``"tokens"``): token ids below the
        vocabulary size, a step counter below 2**31, ...
      integer_policy: What to do with a 64-bit integer constant outside the
        32-bit range that is not a sentinel: ``"error"`` (default) raises
        :class:`~no64.errors.ConstantRangeError`; ``"saturate"`` clips it
        to the 32-bit extremes; ``"wrap"`` keeps its low 32 bits.  Every such
        constant is recorded in the report.
      check: Run the strict check on the rewritten module (default: no) (as
        :func:`~no64.check` does, reading every type again, over the ops the
        pass has at hand instead of a second walk) and raise
        :class:`~no64.errors.Remaining64BitError`, leaving the module as it
        was, if any 64-bit value remains.  ``demote(m, check=True)`` is
        ``demote(m); check(m)`` at a lower cost.
      outputs: What becomes of a 64-bit integer result of the entry function
        that is emulated (see :mod:`no64.transforms.emulate`): ``"words"``
        (default) returns it as ``S x 2`` words, ``[..., 0]`` the low and
        ``[..., 1]`` the high 32 bits (``report.emulated_outputs`` lists
        them); ``"narrow"`` keeps the signature and returns it clipped to the
        32-bit range (sentinels become the 32-bit extremes), judged like any
        narrowed value (``unproven``/``overflow``, refused
        as ``policy`` says) -- for callers whose runtime fixes the
        signature's types, such as JAX's compile hook.  Under
        ``policy="exact"``, ``"words"`` also takes the 64-bit integer inputs
        not proven to fit as words (``report.emulated_inputs``), and
        ``"narrow"`` takes them as 32-bit values, each without a declared
        range ``unproven`` (refused).  With a ``target`` that keeps 64-bit
        integers, ``"narrow"`` and ``"checked"`` give the entry the same
        32-bit signature: its kept ``int64``/``uint64`` arguments take
        32-bit types and are widened inside, its kept results are narrowed
        on the way out and judged so (``report.widened_inputs``,
        ``report.narrowed_outputs``; :mod:`no64.transforms.boundary`);
        ``"words"`` leaves them 64-bit.
      float_policy: How float64 values are computed: ``"f32"`` (default)
        narrows them to f32 (``precision-reduced``); ``"pairs"`` carries
        every float64 value as a normalized pair of f32 (hi, lo) -- about
        48 bits of significand, f32's exponent range -- computed by the
        double-word algorithms of :mod:`no64.ir.pairs`
        (:mod:`no64.transforms.pairs`).  Transcendentals and LAPACK calls are
        then computed in f32 from the rounded pair and recorded per op as
        ``precision-reduced``; an op with no pair rule is refused.  Float64
        arguments and results of the entry function become ``S x 2``
        float32 pairs (``report.pair_inputs``/``pair_outputs``), or, with
        ``outputs="narrow"`` or ``"checked"``, stay float64 (narrowed to
        f32: taken as exact pairs, results rounded once).
      target: The device the module is for (a :class:`~no64.targets.Target`
        or its name, :mod:`no64.targets`): the 64-bit element types it has
        natively (``neuron-trn2`` and ``mtl``: 64-bit integers) are kept as
        they are -- computed by the device, so neither narrowed nor
        emulated -- and only the others are removed (at the entry's
        boundary too, unless ``outputs`` fixes a 32-bit signature there);
        the strict check (``check=True``) allows them.  ``None`` (default): a device with no
        64-bit type.  The ops the target computes on a narrower datapath or
        refuses are made exact by :func:`no64.transforms.legalize.legalize`
        after the pass (``no64 convert --target`` runs both).  On a target
        without 16-bit integers (``neuron``, ``neuron-trn2``: the profile's
        ``widens``) the pass also carries every ``i16``/``ui16`` value as a
        32-bit one, the 16-bit wrap-around kept exact, the entry's
        signature kept (:mod:`no64.transforms.widen`).
      arithmetic: Under ``float_policy="pairs"``, the device's f32
        arithmetic the pairs are built for (:class:`~no64.targets.Arithmetic`;
        default: the target's, else IEEE's): where its division or square
        root is not correctly rounded, the pair division and root refine
        their f32 quotients with exact residuals
        (:func:`no64.ir.pairs.error_bounds` gives the bounds).
      float_hints: Under ``float_policy="f32"``, look for the float64
        results that f32 demonstrably changes, each named at its line in
        ``report.float_hints`` (:mod:`no64.analysis.float_hints`; default:
        yes).  The analysis costs about as much as the rest of the pass; the
        compile hook skips it unless ``NO64_FLOAT_HINTS=on``.
      verify: Verify the whole module after the rewrite (default).  A
        failure raises :class:`~no64.errors.InvalidModuleError` and leaves
        the module as it was.  A caller that hands the module straight to a
        compiler which verifies what it receives (as every XLA backend and
        PJRT plugin does) may pass ``False`` to skip the second
        verification; the JAX compile hook does, and turns a backend's
        verification error into the same ``InvalidModuleError``.

    Returns:
      A :class:`~no64.DemotionReport`.

    Raises:
      UnsupportedOpError: An op whose meaning depends on bit width (64-bit
        ``bitcast_convert``, ``rng_bit_generator``, ``custom_call`` with
        64-bit operands, ``reduce_precision`` beyond f32, shifts whose amount
        may reach 32, host transfers of 64-bit data, ...).  The module is
        left unchanged.
      ConstantRangeError: An out-of-range integer constant under the
        ``"error"`` policy.  The module is left unchanged.
      NarrowingError: A value whose verdict ``policy`` refuses.  The module
        is left unchanged.
      Remaining64BitError: ``check=True`` and a 64-bit value remains.  The
        module is left unchanged.
      InvalidModuleError: ``verify=True`` and the rewritten module does not
        verify (a no64 bug).  The module is left unchanged.
    """
    given = {name: value for name, value in (
        ("policy", policy), ("integer_policy", integer_policy), ("input_ranges", input_ranges),
        ("verify", verify), ("check", check), ("outputs", outputs), ("float_policy", float_policy),
        ("target", target), ("float_hints", float_hints), ("arithmetic", arithmetic)) if value is not None}
    if options is not None and not isinstance(options, Options):
        raise TypeError(f"demote()'s options must be a no64.Options, not {type(options).__name__}; "
                        "give the options as keywords (policy=...) or as Options(...)")
    return _Demotion(module, (options if options is not None else Options()).replace(**given)).run()


class _Demotion:
    """One run of the pass over one module: its steps in order
    (:meth:`run`), each a method, and the one place that undoes them when a
    step fails.

    Plain retyping is taken back from the plan's undo log; the steps that
    insert and erase ops (exact rewrite rules, float pairs, word emulation,
    a plan that needs it) first take a backup, a clone of the module, once.
    """

    def __init__(self, module: ir.Module | ir.Operation, options: Options) -> None:
        self.root = _module_op(module)
        if self.root.name != "builtin.module":
            raise TypeError(
                f"demote() takes a module (builtin.module), not a {self.root.name} op; "
                "pass the module that holds it"
            )
        self.options = options
        declared = options.declared_ranges
        if declared:
            try:
                resolve_input_ranges(self.root, declared)
            except ValueError as exc:
                raise InputRangeError(f"input ranges: {exc}") from None
        #: A clone of the module as it was, once a step needs one.
        self.backup: ir.Operation | None = None
        #: The plan being applied (its undo log takes plain retyping back).
        self.changing: Plan | None = None
        #: Ops the exact rewrite rules replaced.
        self.rewrites = 0
        #: The LAPACK calls written out (float pairs).
        self.expanded: list[tuple[str, str, Any, str]] = []
        #: The float64 solves refined from an f32 LU (float pairs).
        self.refined: list[tuple[str, Any, str, str]] = []

    def run(self) -> DemotionReport:
        """Every step, in order; the module is left as it was if one fails."""
        with self.root.context, ir.Location.unknown(), gc_paused():
            try:
                return self._steps()
            except Exception as exc:
                self._undo()
                if isinstance(exc, ir.MLIRError):
                    raise InvalidModuleError(
                        "the rewritten module does not verify, so the module was left unchanged "
                        f"(please report this as a no64 bug, with the input module): {exc}"
                    ) from None
                raise
            finally:
                if self.backup is not None:
                    self.backup.erase()

    def _steps(self) -> DemotionReport:
        pairs = self.options.float_policy is FloatPolicy.PAIRS
        boundary = self._native_boundary()
        settings = Settings.of(self.options, self.root)
        if pairs:
            self._expand_lapack()
        p = self._planner(settings)
        if boundary is not None:
            self._narrow_native_outputs(p, boundary)
        # on the 64-bit module, before anything is narrowed
        hints = float_hints(self.root) if not pairs and self.options.float_hints else []
        ranges = pair_range(self.root) if pairs else []
        p.judge_assumed_inputs()
        p.walk(settle=False)
        p = self._rules(p)
        if pairs:
            p = self._pairs(p, ranges)
        p = self._emulate(p)
        self._judge(p, hints)
        report = self._apply(p)
        self._widen(report)
        return report

    def _widen(self, report: DemotionReport) -> None:
        """On a target without 16-bit integers (Neuron), every ``i16``/``ui16``
        value carried as a 32-bit one, the 16-bit wrap-around kept
        (:mod:`no64.transforms.widen`)."""
        t = self.options.target
        if t is None or not t.widens or not holds_narrow(self.root, t):
            return
        self._back_up()
        for name, where, detail in widen(self.root, t).fixed:
            report.add(EventKind.REWRITE, name, where, f"16-bit integers carried in 32 bits: {detail}")
        if self.options.verify:
            self.root.verify()

    def _back_up(self) -> None:
        if self.backup is None:
            self.backup = self.root.clone()

    def _undo(self) -> None:
        if self.backup is not None:
            _restore(self.root, self.backup)
        elif self.changing is not None:
            rewrite.undo(self.changing)

    def _expand_lapack(self) -> None:
        """Float64 solves by an LU refined from the device's f32 LU, and the
        LAPACK calls left written out, before anything reads the module (the
        rewrite rules would narrow them to their f32 siblings).  A module
        with such an LU has its private float64 functions inlined first, so
        that the LU, its solves, ``A`` and ``B`` meet in one body.  Not on
        a device that runs no data-dependent branch or loop (Neuron: the
        refinement stops, and falls back, at run time)."""
        self._back_up()
        target = self.options.target
        if (target is None or target.matmul.branches) and any(refinable(op) for op in all_ops(self.root)):
            inline_calls(self.root, is_f64)
            self.refined = refine_solves(self.root)
        self.expanded = expand_lapack(self.root)

    def _planner(self, settings: Settings) -> Planner:
        p = Planner(self.root, settings)
        if self.options.target is not None:
            p.report.target = self.options.target.name
            p.report.kept_native = sorted(settings.keep)
        return p

    def _native_boundary(self) -> NativeBoundary | None:
        """Under ``outputs="narrow"``/``"checked"`` (a caller that fixes a
        32-bit signature), the entry's 64-bit integer arguments and results
        the target keeps (:mod:`no64.transforms.boundary`): the arguments
        take their 32-bit types and are widened inside, before the module is
        planned; the results are narrowed once judged
        (:meth:`_narrow_native_outputs`)."""
        if self.options.outputs is Outputs.WORDS or not self.options.native:
            return None
        boundary = native_boundary(self.root, self.options.native)
        if boundary is None:
            return None
        self._back_up()
        boundary.widen_inputs()
        return boundary

    def _narrow_native_outputs(self, p: Planner, boundary: NativeBoundary) -> None:
        """The kept 64-bit integer results, judged as every narrowed output
        is (:meth:`_judge_outputs`), then narrowed (clipped to 32 bits;
        those checked by value tell the flag the entry returns last)."""
        analysis = RangeAnalysis(self.root, p.settings.input_ranges)
        checked = self._judge_outputs(p, boundary.values(), analysis)
        boundary.narrow_outputs(checked)
        p.report.widened_inputs = list(boundary.inputs)
        p.report.narrowed_outputs = list(boundary.outputs)

    def _rules(self, p: Planner) -> Planner:
        """The exact rewrite rules (they insert and erase ops, which the undo
        log cannot take back: the module is backed up first)."""
        if not p.plan.candidates:
            return p
        self._back_up()
        self.rewrites = rewrite.run_rules(p.plan, p)
        return p.replan(settle=False)

    def _pairs(self, p: Planner, ranges: list[PairRange]) -> Planner:
        """Every float64 value as a pair of f32 (a constant outside their
        range refused under the strict and exact policies)."""
        self._back_up()
        _float_pairs(p, self.root, self.options.outputs, self.expanded, self.refined, ranges,
                     refuse_range=self.options.policy in (RangePolicy.STRICT, RangePolicy.EXACT),
                     arithmetic=self.options.pair_arithmetic,
                     matmul=self.options.target.matmul if self.options.target is not None else F32_MATMUL)
        return p.replan(settle=False)

    def _emulate(self, p: Planner) -> Planner:
        """Values that may not fit (under policy "exact") and ops with no
        32-bit form, computed exactly in 32-bit word pairs; with none, the
        plan is settled (refusals raise there, before anything changes)."""
        everything, words_out = self.options.policy is RangePolicy.EXACT, self.options.outputs is Outputs.WORDS
        em = p.emulation(everything=everything, words_out=words_out)
        if em is not None and crosses_calls(em.wide):
            # calls that would carry word pairs, inlined first: XLA does not
            # see through the packing at a call, and each call site's
            # constants (a divisor) stay its own
            inline_calls(self.root, is_int64_tensor, before=self._back_up)
            p = p.replan(settle=False)
            em = p.emulation(everything=everything, words_out=words_out)
        if em is None:
            p.settle()
            return p
        self._judge_narrowed(p, em)
        self._back_up()
        # one record per emulated value, taken before the ops change
        records = [p.record(v, Verdict.EMULATED, None, "computed exactly as a pair of 32-bit words",
                            keep=False) for v in em.wide]
        records.sort(key=lambda n: (str(n._loc), n.op, n.role, n.index))
        rep = p.report
        rep.narrowings.extend(records)
        rep.ops_emulated, rep.emulated_by_op = em.apply()
        rep.values_emulated = len(em.wide)
        rep.emulated_outputs = list(em.outputs)
        rep.emulated_inputs = list(em.inputs)
        p.known_ranges = em.known_ranges
        return p.replan()

    def _judge_narrowed(self, p: Planner, em: Any) -> None:
        """The values the emulation leaves narrowed (:meth:`_judge_outputs`)."""
        em.checked.update(self._judge_outputs(p, em.narrowed, em.analysis))

    def _judge_outputs(self, p: Planner, values: list[ir.Value], analysis: RangeAnalysis) -> set[ir.Value]:
        """Exact 64-bit results the entry returns narrowed to 32 bits: each
        not proven to fit (nor a sentinel) judged as the policy says, or
        (``outputs="checked"`` under ``exact``) checked by value -- the
        values returned, to be checked."""
        refused = self.options.policy.refuses
        by_value = self.options.outputs is Outputs.CHECKED and self.options.policy is RangePolicy.EXACT
        checked: set[ir.Value] = set()
        for value in values:
            verdict, r = analysis.verdict(value)
            if verdict in (Verdict.EXACT, Verdict.SENTINEL):
                continue
            if by_value:
                # computed exactly; returned in 32 bits where it fits,
                # which the module's last result tells when it runs
                checked.add(value)
                p.report.checked_outputs.append(p.record(
                    value, Verdict.EMULATED, r.interval,
                    "returned in 32 bits, checked by value when it runs", keep=False))
            else:
                p.record_range(value, verdict, r.interval, refused, collision=collision_only(r, value.type))
        return checked

    def _judge(self, p: Planner, hints: list[Any]) -> None:
        p.judge()
        rep = p.report
        rep.float_hints = hints
        if rep.values_emulated:
            rep.verdicts[Verdict.EMULATED] = rep.values_emulated
        rep.ops_rewritten = self.rewrites

    def _apply(self, p: Planner) -> DemotionReport:
        """The plan applied: types changed, constants replaced, the module
        verified and checked as asked, converts that became no-ops erased."""
        plan = p.plan
        if not (plan.values or plan.funcs or self.rewrites or p.report.ops_emulated):
            if self.options.check:
                rewrite.check(plan)
            rewrite.drop_assumptions(plan)
            return p.report
        if plan.needs_backup:
            self._back_up()
        self.changing = plan
        rewrite.apply(plan, p)
        if self.options.verify:
            self.root.verify()
        if self.options.check:
            rewrite.check(plan)
        p.report.converts_removed = rewrite.finish(plan)
        if p.report.ops_emulated:
            forward_words(self.root)
        rewrite.drop_assumptions(plan)
        return p.report


#: The ``float_policy`` values of :func:`demote`.
FLOAT_POLICIES = FloatPolicy.values()


def _float_pairs(p: Planner, root: ir.Operation, outputs: Outputs,
                 expanded: list[tuple[str, str, Any, str]], refined: list[tuple[str, Any, str, str]],
                 ranges: list[PairRange],
                 refuse_range: bool, arithmetic: Arithmetic, matmul: Matmul = F32_MATMUL) -> None:
    """Every float64 value as a pair of f32 (:mod:`no64.transforms.pairs`),
    for a device whose f32 computes as ``arithmetic`` says,
    recorded in the pass's report with the LAPACK calls written out before
    (``expanded``, from :func:`no64.rules.linalg.expand_lapack`) and
    the ops that may leave the pairs' range (``ranges``, from
    :func:`no64.analysis.pair_range.pair_range`); ``refuse_range``: a
    constant outside it is refused; float64 dots on the target's matrix
    engine datapath ``matmul``."""
    from .pairs import emulate_pairs

    em = emulate_pairs(root, outputs, refuse_range, arithmetic, matmul)
    rep = p.report
    for name, loc, helper, lu in refined:
        rep.add(EventKind.REWRITE, name, loc, f"float64 solve refined from the f32 LU {lu} with float64-pair "
                f"residuals ({helper}); where it does not converge (cond(A) near 2**24 or above), the float64 "
                "LU written out")
    for name, target, loc, helper in expanded:
        rep.add(EventKind.REWRITE, name, loc, f"{target} written out as StableHLO ({helper}) "
                "and computed on float64 pairs")
    rep.float_policy = FloatPolicy.PAIRS
    rep.values_on_pairs = em.values
    rep.ops_on_pairs = sum(em.by_op.values())
    rep.pairs_by_op = dict(sorted(em.by_op.items()))
    rep.pair_inputs = list(em.inputs)
    rep.pair_outputs = list(em.outputs)
    for kind, op, loc, detail, count in em.events:
        rep.add(kind, op, loc, detail, count)
    for op, loc, detail in em.reduced_ops:
        rep.add(EventKind.PRECISION_REDUCED, op, loc, detail)
        rep.add_narrowing(op, "result", 0, loc, Verdict.PRECISION_REDUCED, None, detail)
    for r in ranges:
        rep.add(EventKind.PAIR_RANGE, r.op, r.location, r.detail)


def _restore(root: ir.Operation, backup: ir.Operation) -> None:
    """Put the body of ``backup`` (a clone of ``root``) back into ``root``."""
    for region, saved in zip(root.regions, backup.regions):
        for block, saved_block in zip(region.blocks, saved.blocks):
            for op in list(block.operations):
                op.operation.erase()
            for op in list(saved_block.operations):
                op = op.operation
                op.detach_from_parent()
                block.append(op)
