"""The devices no64 serves, as data: what each compiles natively, what it
refuses, and what it computes on a narrower datapath.

A :class:`Target` declares, with the vendor's documented reason beside each
entry:

* ``native``: the 64-bit element types it has natively, of
  :data:`WIDE_TYPES` (``"f64"``, ``"i64"``, ``"u64"``, ``"c128"``); every
  other is one no64 must remove;
* ``refuses``: op forms (:class:`~no64.kinds.OpForm`, which the op table
  gives each op) it does not compile, each with a condition
  (:class:`Refusal`);
* ``datapaths``: op forms it computes on a narrower datapath, and the
  magnitude below which that is exact (:class:`Datapath`: Neuron computes
  integer ``dot``, combining ``scatter`` and the collectives in f32, exact
  up to 2**24).

:func:`no64.targets.legality.check_target` lists what a module holds that a
target would refuse or compute inexactly, per op and source line
(``no64 check --target``); :func:`no64.transforms.legalize.legalize` first
rewrites what no64 can make exact there (an integer ``dot`` into limb dots,
:mod:`no64.rules.limbs`).  The built-in profiles are in :data:`TARGETS`;
a plugin may add its own with :func:`register` (or the ``no64.targets``
entry point group, loaded by :func:`target`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..ir.types import WIDE_KINDS
from ..kinds import OpForm

__all__ = ["as_target", "BUILT_IN", "Datapath", "F32_EXACT", "I32_MAX", "OpForm", "Refusal", "SEVERAL_INPUTS",
           "TARGETS", "Target",
           "Widening", "profiles", "profiles_table", "register", "target", "target_for_platform"]

#: The element types no64 knows how to remove, by short name
#: (:data:`no64.ir.types.WIDE_KINDS`).
WIDE_TYPES = WIDE_KINDS


#: The refusal conditions that fall on an op for its number of inputs.
SEVERAL_INPUTS = frozenset({"variadic", "variadic-adding", "variadic-dilated", "operands!=2"})


@dataclasses.dataclass(frozen=True)
class Refusal:
    """An op form a target does not compile.

    Attributes:
      form: The op form.
      when: Which ops of that form (see :mod:`no64.targets.legality`):
        ``"always"``, ``"variadic"`` (more than one input),
        ``"variadic-adding"`` (more than one input and an ``add`` in its body),
        ``"variadic-dilated"`` (more than one input and a dilated window), ``"operands!=2"``,
        ``"comparator"`` (a comparison other than LT/LE/GT/GE),
        ``"not-32-bit"`` (elements other than 32 bits wide), ``"integer"``
        (integer elements), ``"algorithm"`` (an RNG algorithm other than the
        default), ``"64-bit-combining"`` (combines 64-bit elements and its
        indices are not declared unique), ``"64-bit-integer"`` (an operand
        or result of 64-bit integer elements), ``"64-bit-float"`` (an operand or result
        of ``float64`` or ``complex128`` elements), ``"float64-int64"`` (bits
        of a ``float64`` taken as a 64-bit integer, or the reverse),
        ``"dynamic-trip-count"`` (a loop whose number of iterations is not
        fixed: see :func:`no64.targets.legality.trip_count`).
      code: The vendor's error code, if it has one.
      reason: The vendor's words, shortened.
      source: Where the vendor says so.
      split_within: Where not 0, the op's form is compiled on 32-bit
        elements, exactly while every value and partial result is at most
        this in magnitude: no64 answers the refusal by splitting the op
        into such ops (Metal's 32-bit atomics: ``2**31 - 1``;
        :mod:`no64.rules.limbs`).
    """

    form: OpForm
    when: str
    code: str
    reason: str
    source: str
    split_within: int = 0


@dataclasses.dataclass(frozen=True)
class Datapath:
    """An op form a target computes on a narrower datapath.

    Attributes:
      form: The op form (its integer ops only).
      computes_in: The datapath (``"f32"``).
      exact_below: Every operand, product and partial result of magnitude
        up to this value is exact there (2**24 for f32).
      code, reason, source: As for :class:`Refusal`.
    """

    form: OpForm
    computes_in: str
    exact_below: int
    code: str
    reason: str
    source: str


@dataclasses.dataclass(frozen=True)
class Widening:
    """An integer element type a target does not have, carried in a wider one.

    Attributes:
      narrow: The type it lacks (``"i16"``, ``"u16"``).
      wide: The type its values are carried in (``"i32"``, ``"u32"``),
        sign- or zero-extended; no64 restores the narrow type's wrap-around
        (:mod:`no64.transforms.widen`).
      reason, source: As for :class:`Refusal`.
    """

    narrow: str
    wide: str
    reason: str
    source: str


@dataclasses.dataclass(frozen=True)
class Target:
    """One device's profile (see the module docstring)."""

    name: str
    description: str
    native: frozenset[str] = frozenset()
    refuses: tuple[Refusal, ...] = ()
    datapaths: tuple[Datapath, ...] = ()
    #: Integer element types it lacks, carried in wider ones (:class:`Widening`).
    widens: tuple[Widening, ...] = ()
    #: The ``jax.devices()`` platform names the profile is for.
    platforms: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def lacks(self, short: str) -> bool:
        """Whether a 64-bit element type (``"i64"``, ... of :data:`WIDE_TYPES`)
        has to be removed for it."""
        return short not in self.native

    def refuses_several_inputs(self, form: OpForm) -> bool:
        """Whether it refuses some op of ``form`` for taking more than one
        input (Neuron's variadic ``reduce`` and EVRF019; IREE's SPIR-V code
        generation on a dilated window of several inputs)."""
        return any(r.form is form and r.when in SEVERAL_INPUTS for r in self.refuses)

    def widened(self, narrow: str) -> str | None:
        """The type a narrow integer type (``"i16"``) is carried in, if the
        target lacks it."""
        return next((w.wide for w in self.widens if w.narrow == narrow), None)


_NEURON_NOTES = "aws-neuron/aws-neuron-sdk release-notes/components/jax.rst (known issues, 2.26)"
_NEURON_CODES = "aws-neuron/aws-neuron-sdk compiler/error-codes/"
#: Every integer of magnitude up to this is an f32 (its significand has 24
#: bits): an f32 sum or product of integers is exact while every operand,
#: product and partial sum stays within it.
F32_EXACT = 2**24
#: The largest magnitude a signed 32-bit integer holds: a 32-bit sum is
#: exact while every partial sum stays within it.
I32_MAX = 2**31 - 1


def _neuron_datapaths() -> tuple[Datapath, ...]:
    return (
        Datapath(OpForm.MATMUL, "f32", F32_EXACT, "EVRF035",
                 "the matrix-multiplication engine computes in f32 and has no integer datapath: "
                 "values beyond 2**24 lose precision", _NEURON_CODES + "EVRF035"),
        Datapath(OpForm.SCATTER, "f32", F32_EXACT, "EVRF060",
                 "scatter with a combiner (scatter-add, index_add, embedding backward) is emulated "
                 "on an engine that computes in f32", _NEURON_CODES + "EVRF060"),
        Datapath(OpForm.COLLECTIVE, "f32", F32_EXACT, "EVRF061/EVRF063",
                 "all-reduce and reduce-scatter compute their reduction in f32",
                 _NEURON_CODES + "EVRF061, EVRF063"),
    )


_TORCH_XLA_DTYPE = ("pytorch/xla torch_xla/csrc/dtype.cpp, MaybeDowncastToXlaDeviceType: on a Neuron device "
                    "S16 -> S32 and U16 -> U32")


def _neuron_widens() -> tuple[Widening, ...]:
    why = "no 16-bit integer datapath: 16-bit integers are computed as 32-bit ones"
    return (Widening("i16", "i32", why, _TORCH_XLA_DTYPE), Widening("u16", "u32", why, _TORCH_XLA_DTYPE))


def _neuron_refusals() -> tuple[Refusal, ...]:
    return (
        Refusal(OpForm.REDUCE, "variadic", "", "variadic reductions are not supported", _NEURON_NOTES),
        Refusal(OpForm.REDUCE_PRECISION, "always", "", "jax.lax.reduce_precision is not supported",
                _NEURON_NOTES),
        Refusal(OpForm.SORT, "comparator", "",
                "jax.lax.sort only supports comparators with LE, GE, LT and GT", _NEURON_NOTES),
        Refusal(OpForm.SHIFT_RIGHT_ARITHMETIC, "not-32-bit", "EVRF022",
                "shift-right-arithmetic on non 32-bit inputs is not supported", _NEURON_CODES + "EVRF022"),
        Refusal(OpForm.TOP_K, "integer", "EVRF013", "TopK rejects int32 and int64 inputs",
                _NEURON_CODES + "EVRF013"),
        Refusal(OpForm.REDUCE_WINDOW, "operands!=2", "EVRF019", "reduce-window must have exactly 2 operands",
                _NEURON_CODES + "EVRF019"),
        Refusal(OpForm.RNG_BIT_GENERATOR, "algorithm", "EVRF006",
                "RngBitGenerator with an algorithm other than RNG_DEFAULT is rejected",
                _NEURON_CODES + "EVRF006"),
        Refusal(OpForm.BRANCH, "always", "", "jax.lax.cond is not supported", _NEURON_NOTES),
        Refusal(OpForm.LOOP, "dynamic-trip-count", "", "Dynamic loops are not supported for jax.lax.while_loop",
                _NEURON_NOTES),
    )


TARGETS: dict[str, Target] = {}


def register(t: Target) -> Target:
    """Add a profile (a plugin's own); a name is declared once."""
    if t.name in TARGETS:
        raise ValueError(f"target {t.name!r} is declared twice")
    TARGETS[t.name] = t
    return t


register(Target("generic", "a device without any 64-bit type (no64's default for an unknown platform)"))
register(Target(
    "neuron", "AWS Trainium 1 / Inferentia 2 (NeuronCore v2): no 64-bit types; integer dot, combining "
    "scatter and collectives through f32",
    refuses=_neuron_refusals(), datapaths=_neuron_datapaths(), widens=_neuron_widens(), platforms=("neuron",),
    sources=("aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-features/data-types.rst: FP32, TF32, BF16, "
             "FP16, FP8, UINT8; 'Trn1: 64-bit integers are always auto-converted to 32-bit'",
             _NEURON_NOTES, _NEURON_CODES)))
register(Target(
    "neuron-trn2", "AWS Trainium 2/3 with --native-int64: native int64/uint64; integer dot refused, "
    "combining scatter and collectives through f32",
    native=frozenset({"i64", "u64"}),
    refuses=(*_neuron_refusals(),
             Refusal(OpForm.MATMUL, "integer", "EVRF035",
                     "an integer dot is an error on Trn2 and later (no integer datapath)",
                     _NEURON_CODES + "EVRF035")),
    datapaths=_neuron_datapaths()[1:], widens=_neuron_widens(),
    sources=("aws-neuron/aws-neuron-sdk v2.32.0 release-notes/components/compiler: '--native-int64=enabled "
             "runs int64 ops natively without precision loss on trn2 and later'", _NEURON_CODES)))
register(Target(
    "mtl", "Apple GPUs through dfm/metal-pjrt-plugin: native 64-bit integers, no float64",
    native=frozenset({"i64", "u64"}),
    refuses=(Refusal(OpForm.SCATTER, "64-bit-combining", "",
                     "a scatter that combines 64-bit elements needs 64-bit atomics, which Metal does not "
                     "have", "dfm/metal-pjrt-plugin docs/faq.md", split_within=I32_MAX),),
    platforms=("mtl",),
    sources=("dfm/metal-pjrt-plugin README.md, docs/faq.md, docs/op-coverage.md",)))
register(Target(
    "mps", "Apple GPUs through tillahoffmann/jax-mps (MLX): no float64",
    platforms=("mps",), sources=("tillahoffmann/jax-mps README.md: MLX only supports float32",)))
#: Where the iree-vulkan profile's refusals were measured.
_IREE_MEASURED = ("iree-compile 3.13 --iree-hal-target-device=vulkan --iree-vulkan-target=valhall, run on Mesa's "
                  "lavapipe (benchmarks/bench_iree_vulkan.py)")
register(Target(
    "iree-vulkan", "Vulkan GPUs through IREE (Mali Valhall, Adreno): no Int64 or Float64 capability",
    refuses=(Refusal(OpForm.REDUCE, "variadic-adding", "",
                     "IREE's Vulkan code computes some reductions of several inputs that add wrong (two int32 "
                     "sums over rows of 64: every row; a sum of words over rows of 200: half the rows)",
                     _IREE_MEASURED),
             Refusal(OpForm.REDUCE_WINDOW, "variadic", "",
                     "IREE's Vulkan code computes some reduce_windows of several inputs wrong (a cumulative "
                     "maximum of words over rows of 200: 13% of the elements) and fails on a dilated one "
                     "('write affecting operations on global resources are restricted to workgroup "
                     "distributed contexts')", _IREE_MEASURED),),
    sources=("IREE SPIR-V target capabilities (valhall, adreno): no Int64, Float64",)))
register(Target("coreml", "Core ML through stablehlo-coreml: no 64-bit types",
                sources=("stablehlo-coreml: every held-out program of the suite converted",)))
register(Target("litert", "LiteRT through litert-converter: no 64-bit types",
                sources=("litert-converter: every held-out program of the suite converted",)))
register(Target(
    "tt", "Tenstorrent through tt-xla: no 64-bit types on the device",
    platforms=("tt",),
    sources=("tenstorrent/tt-mlir PR #7431: 'We don't support f64/i64/i1 tensors on device'",)))

#: Where the tpu profile's refusals were measured.
_TPU_MEASURED = ("measured on one TPU v5e chip (JAX 0.10.2 and its libtpu): the x64 program compiled by XLA:TPU, "
                 "its results against the same program on the CPU")
_TPU_X64 = ("UNIMPLEMENTED: While rewriting computation to not contain X{64|128} element types, XLA encountered "
            "an HLO for which this rewriting is not implemented: ")


def _tpu_refusals() -> tuple[Refusal, ...]:
    return (
        Refusal(OpForm.MATMUL, "64-bit-integer", "", _TPU_X64 + "dot", _TPU_MEASURED, split_within=I32_MAX),
        Refusal(OpForm.CONVOLUTION, "64-bit-integer", "", _TPU_X64 + "convolution", _TPU_MEASURED,
                split_within=I32_MAX),
        Refusal(OpForm.LU, "64-bit-float", "", "Only F32 and C64 types are implemented in LuDecomposition",
                _TPU_MEASURED),
        Refusal(OpForm.FFT, "64-bit-float", "", "Unexpected operand type for FFT: c128 (f64 for a real "
                "transform)", _TPU_MEASURED),
        Refusal(OpForm.BITCAST, "float64-int64", "",
                "XLA:TPU's float64 is a pair of f32: the bits bitcast_convert gives between f64 and s64 are not "
                "the IEEE double's (and nextafter fails to compile: 'Binary op and with different element types')",
                "jax-ml/jax PR #21108 (nextafter skipped on TPU); " + _TPU_MEASURED),
        Refusal(OpForm.NEXT_AFTER, "64-bit-float", "",
                "XLA:TPU expands a float64 nextafter on s64 bits and fails: 'Binary op and with different element "
                "types: s32 and u32'", _TPU_MEASURED),
    )


register(Target(
    "tpu", "Google TPUs through XLA:TPU, which emulates 64-bit types itself: int64, uint64, float64 (a pair of "
    "f32, with f32's exponent range) and complex128 kept; what it refuses converted",
    native=frozenset({"i64", "u64", "f64", "c128"}), refuses=_tpu_refusals(), platforms=("tpu",),
    sources=("XLA:TPU's own 64-bit emulation (libtpu's X64 rewriter), " + _TPU_MEASURED,)))

#: The profiles no64 declares itself, in order.
BUILT_IN: tuple[str, ...] = tuple(TARGETS)


def target(name: str) -> Target:
    """The profile called ``name`` (built in or registered by a plugin through
    the ``no64.targets`` entry point group: a :class:`Target`)."""
    found = TARGETS.get(name)
    if found is None:
        _load_plugins()
        found = TARGETS.get(name)
    if found is None:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(sorted(TARGETS))}")
    return found


def as_target(t: "str | Target") -> Target:
    """A profile given as itself or by name (:func:`target`)."""
    return t if isinstance(t, Target) else target(t)


def target_for_platform(platform: str) -> Target:
    """The profile of a JAX platform name (``"neuron"``; a plugin's profile
    names its own platforms), else ``generic``."""
    _load_plugins()
    for t in TARGETS.values():
        if platform in t.platforms:
            return t
    return TARGETS["generic"]


_loaded = False


def _load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="no64.targets"):
        t = ep.load()
        if isinstance(t, Target) and t.name not in TARGETS:
            register(t)


def profiles() -> Mapping[str, Target]:
    """Every known profile, by name."""
    _load_plugins()
    return dict(TARGETS)


def _when(entry: Refusal) -> str:
    when = "" if entry.when == "always" else f" ({entry.when})"
    if entry.split_within:
        when += f"; no64 splits it into limbs whose sums stay within {entry.split_within:,}"
    return when


def profiles_table(names: "tuple[str, ...] | None" = None) -> str:
    """The built-in profiles (:data:`BUILT_IN`, or those named) in Markdown: per profile its
    native 64-bit types, platforms, sources, and every refusal and datapath
    entry with the vendor's code and source."""
    out: list[str] = []
    for name in names if names is not None else BUILT_IN:
        t = target(name)
        out.append(f"### `{t.name}`\n\n{t.description}.\n")
        native = ", ".join(f"`{k}`" for k in sorted(t.native)) or "none"
        platforms = ", ".join(f"`{p}`" for p in t.platforms) or "none (named with `--target` / `NO64_TARGET`)"
        out.append(f"* Native 64-bit types: {native}\n* JAX platforms: {platforms}")
        out.extend(f"* Source: {s}" for s in t.sources)
        if t.refuses or t.datapaths or t.widens:
            out.append("\n| Entry | Op form | Code | Reason | Source |\n| --- | --- | --- | --- | --- |")
            for r in t.refuses:
                out.append(f"| refuses{_when(r)} | `{r.form.value}` | {r.code or '-'} | {r.reason} | {r.source} |")
            for d in t.datapaths:
                out.append(f"| computes in {d.computes_in}, exact below 2**{d.exact_below.bit_length() - 1} "
                           f"| `{d.form.value}` | {d.code or '-'} | {d.reason} | {d.source} |")
            for w in t.widens:
                out.append(f"| carries `{w.narrow}` as `{w.wide}`; no64 keeps the {w.narrow[1:]}-bit wrap-around "
                           f"| - | - | {w.reason} | {w.source} |")
        out.append("")
    return "\n".join(out)
