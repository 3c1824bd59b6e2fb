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
  up to 2**24);
* ``arithmetic``: how it computes f32 elementwise, as far as float64 pairs
  rest on it (:class:`Arithmetic`: which ops round correctly, how far its
  division and square root may be off, subnormals, FMA contraction, the
  rounding mode); the pair probe (:mod:`no64.transforms.pair_probe`)
  checks a device against it before it runs pairs there.
* ``matmul``: the matrix engine's exact datapath, on which a float64
  ``dot_general`` on pairs computes its slice products
  (:class:`Matmul`: ``int8 x int8 -> int32`` on a TPU, ``bf16 x bf16 ->
  f32`` on Neuron, f32 products elsewhere; :mod:`no64.rules.pair_dot`).

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
import math
from collections.abc import Mapping

from ..ir.types import WIDE_KINDS
from ..kinds import OpForm

__all__ = ["Arithmetic", "as_target", "BUILT_IN", "Datapath", "F32_EXACT", "F32_MATMUL", "I32_MAX",
           "IEEE_ARITHMETIC", "Matmul", "NEURON_ARITHMETIC", "NEURON_MATMUL", "OpForm", "Refusal", "SEVERAL_INPUTS",
           "TARGETS", "TPU_MATMUL", "TPU_V5E_ARITHMETIC", "Target",
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


#: Every integer of magnitude up to this is an f32 (its significand has 24
#: bits): an f32 sum or product of integers is exact while every operand,
#: product and partial sum stays within it.
F32_EXACT = 2**24
#: The largest magnitude a signed 32-bit integer holds: a 32-bit sum is
#: exact while every partial sum stays within it.
I32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class Matmul:
    """The matrix engine's datapath that float64 ``dot_general`` on pairs
    computes its exact slice products on (:mod:`no64.rules.pair_dot`).

    Attributes:
      operands: The element type of the slices: ``"i8"`` (integers up to
        127 in magnitude), ``"bf16"`` (integers up to 256) or ``"f32"``
        (computed at ``HIGHEST`` precision).
      accumulates: The type its products are summed in (``"i32"`` or
        ``"f32"``), exactly while every partial sum is at most
        ``exact_below`` in magnitude.
      exact_below: See ``accumulates``.
      one_pass: The float type the engine multiplies in one pass
        (``"bf16"`` or ``"f32"``): the type of the dot no64 estimates
        ``|A| |B|`` with, from which it chooses the slice count at run time.
      branches: Whether the device runs a ``case`` whose branch depends on
        the data: the slices beyond the fewest are then computed only where
        the data need them (else always).
      reason, source: As for :class:`Refusal`.
      residues: Whether a product by residues (Ozaki scheme II,
        :mod:`no64.rules.pair_dot`) pays on this device where it needs
        fewer integer products than the levels: it trades about 20 of the
        engine's ``n**3`` products for elementwise residue and Garner work
        of ``n**2`` times the moduli, which wins only where the engine is
        fast enough against the vector unit.  Off unless measured.
    """

    operands: str
    accumulates: str
    exact_below: int
    one_pass: str
    branches: bool
    reason: str
    source: str
    residues: bool = False


#: f32 products at ``HIGHEST`` precision, summed in f32 (a CPU, a GPU, a
#: device no64 knows nothing of).
F32_MATMUL = Matmul("f32", "f32", F32_EXACT, "f32", True,
                    "f32 products at HIGHEST precision (no backend computes them in bf16 or TF32), summed in f32",
                    "StableHLO precision_config")
#: A TPU's matrix unit: ``int8 x int8 -> int32``, exact (twice the rate of
#: its one-pass ``bf16 x bf16 -> f32``; an f32 product at ``HIGHEST`` is
#: six bf16 passes).
#: Residues off: on a TPU v5e (JAX 0.10.2) they took 7.73 / 33.3 ms against
#: the levels' 1.26 / 7.78 ms at n = 1024 / 2048 (docs/devices.md).
TPU_MATMUL = Matmul("i8", "i32", I32_MAX, "bf16", True,
                    "the MXU multiplies int8 x int8 -> int32 exactly (393 TOPS on a v5e, 197 TFLOPS bf16); "
                    "bf16 x bf16 -> f32 is one pass, an f32 product at HIGHEST six",
                    "docs.cloud.google.com/tpu/docs/v5e; jax-ml/jax docs/201/precision.md")
#: Neuron's tensor engine: ``bf16``/``fp8`` products accumulated in f32, no
#: integer datapath; an f32 product is two passes at a quarter of bf16's
#: rate; no ``lax.cond``.
NEURON_MATMUL = Matmul("bf16", "f32", F32_EXACT, "bf16", False,
                       "the tensor engine takes bf16/fp8/fp32 (fp32 as two FP32_LO_HI passes at a quarter of "
                       "bf16's rate), no int8, and accumulates in f32; jax.lax.cond is not supported",
                       "aws-neuron/aws-neuron-sdk nki/api/nki/isa (nc_matmul), tools/neuron-explorer/"
                       "profile-schema-reference.rst, release-notes/components/jax.rst")


@dataclasses.dataclass(frozen=True)
class Arithmetic:
    """How a device computes f32 elementwise, as far as float64 pairs
    (:mod:`no64.ir.pairs`) rest on it.

    The pair algorithms need exact error-free transformations -- TwoSum
    (sums rounded to nearest) and TwoProduct (products rounded to nearest,
    from Dekker's exact half-products) -- and a quotient or square root
    only close to the exact one: its residual is computed exactly and the
    correction is what carries the low word.  The defaults are IEEE 754's.

    Attributes:
      add_rounded: ``add`` and ``subtract`` round correctly (to nearest).
      multiply_rounded: ``multiply`` rounds correctly (to nearest; results
        below ``2**-126`` aside where the device flushes them).
      divide_ulp: The largest error of f32 ``divide``, in ulps of the exact
        quotient (0.5: correctly rounded).  The pairs' division refines its
        quotient with an exact residual, and its bound follows this
        (:func:`no64.ir.pairs.error_bounds`).
      sqrt_ulp: The same for f32 ``sqrt``.
      flushes_subnormals: ``True``: subnormal results (and operands) are 0;
        ``False``: kept, as IEEE's gradual underflow; ``None``: not stated
        (either).  Pairs are built for flushing either way: their range
        (:data:`no64.ir.pairs.PAIR_FULL_MIN`) assumes it.
      contracts_fma: ``True``: the compiler may contract a product and a
        sum into a fused multiply-add; ``False``: it never does; ``None``:
        not stated.  Pairs hold either way (their products are built from
        exact half-products): a device that contracts where its profile
        says it does not is refused as computing otherwise than declared.
      rounding: ``"nearest"`` (ties to even) or ``"stochastic"``
        (a rounding that picks either neighbour at random, which breaks
        TwoSum: pairs are refused).
      rounding_switch: How the rounding may be switched away from
        ``rounding`` at run time (said when the probe finds it so).
      transcendental_ulp: The largest errors of the device's f32
        transcendentals where stated, in ulps (``("log", 4030.5)``, ...):
        pair transcendentals are built from ``+``, ``-``, ``*`` and range
        reduction, and do not rest on them.
      source: Where these values are stated or measured.
    """

    add_rounded: bool = True
    multiply_rounded: bool = True
    divide_ulp: float = 0.5
    sqrt_ulp: float = 0.5
    flushes_subnormals: bool | None = None
    contracts_fma: bool | None = None
    rounding: str = "nearest"
    rounding_switch: str = ""
    transcendental_ulp: tuple[tuple[str, float], ...] = ()
    source: str = "IEEE 754-2008: basic operations and sqrt correctly rounded, round to nearest, ties to even"

    def __post_init__(self) -> None:
        if self.rounding not in ("nearest", "stochastic"):
            raise ValueError(f"Arithmetic.rounding must be 'nearest' or 'stochastic', not {self.rounding!r}")
        for name in ("divide_ulp", "sqrt_ulp"):
            if not getattr(self, name) >= 0.5:
                raise ValueError(f"Arithmetic.{name} must be at least 0.5 (correctly rounded), "
                                 f"not {getattr(self, name)!r}")

    @property
    def ieee_quotients(self) -> bool:
        """Whether f32 ``divide`` and ``sqrt`` round correctly (the pairs'
        division and root then take their IEEE forms)."""
        return self.divide_ulp == 0.5 and self.sqrt_ulp == 0.5

    def describe(self) -> str:
        """One line for people: what differs from IEEE f32."""
        said = []
        if not self.add_rounded:
            said.append("add/subtract not correctly rounded")
        if not self.multiply_rounded:
            said.append("multiply not correctly rounded")
        for op, ulp in (("divide", self.divide_ulp), ("sqrt", self.sqrt_ulp)):
            said.append(f"{op} correctly rounded" if ulp == 0.5 else f"{op} within {ulp:g} ulp")
        if self.flushes_subnormals is not None:
            said.append("subnormals flushed to 0" if self.flushes_subnormals else "subnormals kept")
        if self.contracts_fma is not None:
            said.append("may contract a*b+c into an FMA" if self.contracts_fma else "no FMA contraction")
        said.append(("rounds to nearest" if self.rounding == "nearest" else "rounds stochastically")
                    + (f" ({self.rounding_switch})" if self.rounding_switch else ""))
        if self.transcendental_ulp:
            said.append("f32 transcendentals off by up to " + ", ".join(
                f"{op} {ulp:g}" for op, ulp in self.transcendental_ulp) + " ulp")
        return "; ".join(said)


#: IEEE 754's f32: every profile's arithmetic unless it says otherwise.
IEEE_ARITHMETIC = Arithmetic()

_TPU_MEASURED = ("measured on one TPU v5e chip (JAX 0.10.2, libtpu): 1M random operands with exponents within "
                 "+-60 per op: add, sub 0 wrong; mul 29 results below 2**-126 flushed; div 362,311 not correctly "
                 "rounded, <= 2 ulp; sqrt 414,179, <= 3 ulp; a*b - (a*b) never contracted; Dekker's TwoProduct "
                 "exact 1M of 1M")
_JAX_ACCURACY = ("jax-ml/jax docs/accuracy.md: f32 max error on TPU v2-v5e; 'subnormal floating-point inputs and "
                 "outputs are typically flushed to zero by default'")

#: The TPU v5e's f32 (measured), for the ``tpu`` profile: add, subtract and
#: multiply round correctly (multiply flushes results below 2**-126),
#: division is within 2 ulps and the square root within 3, subnormals are
#: flushed, no product is contracted into an FMA; its f32 transcendentals
#: are far from correctly rounded.
TPU_V5E_ARITHMETIC = Arithmetic(
    divide_ulp=2.0, sqrt_ulp=3.0, flushes_subnormals=True, contracts_fma=False,
    transcendental_ulp=(("log", 4030.5), ("log1p", 4034.0), ("tanh", 1365.5), ("reciprocal", 198.0),
                        ("exp", 116.0)),
    source=f"{_TPU_MEASURED}; {_JAX_ACCURACY}")

#: Neuron's f32: round to nearest, ties to even, on every NeuronCore; from
#: NeuronCore-v2 on the runtime can switch it to stochastic rounding, which
#: the pair probe detects.
NEURON_ARITHMETIC = Arithmetic(
    rounding_switch="NEURON_RT_STOCHASTIC_ROUNDING_EN=1 selects stochastic rounding (NeuronCore-v2 on), "
    "on by default in PyTorch-Neuron with XLA_USE_BF16=1; NEURON_RT_STOCHASTIC_ROUNDING_EN=0 keeps RNE",
    source="aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-features/rounding-modes.rst: 'All NeuronCore "
           "generations support the RNE rounding scheme'; stochastic rounding selectable from NeuronCore-v2; "
           "the accuracy of f32 division and square root is not documented: taken as correctly rounded, "
           "which the pair probe checks")


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
    #: The matrix engine's exact datapath for float64 dots on pairs (:class:`Matmul`).
    matmul: Matmul = F32_MATMUL
    sources: tuple[str, ...] = ()
    #: How it computes f32 elementwise (:class:`Arithmetic`; IEEE's unless said).
    arithmetic: Arithmetic = IEEE_ARITHMETIC

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
    arithmetic=NEURON_ARITHMETIC, matmul=NEURON_MATMUL,
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
    datapaths=_neuron_datapaths()[1:], widens=_neuron_widens(), arithmetic=NEURON_ARITHMETIC,
    matmul=NEURON_MATMUL,
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
_TPU_X64_MEASURED = ("measured on one TPU v5e chip (JAX 0.10.2 and its libtpu): the x64 program compiled by XLA:TPU, "
                     "its results against the same program on the CPU")
_TPU_X64 = ("UNIMPLEMENTED: While rewriting computation to not contain X{64|128} element types, XLA encountered "
            "an HLO for which this rewriting is not implemented: ")


def _tpu_refusals() -> tuple[Refusal, ...]:
    return (
        Refusal(OpForm.MATMUL, "64-bit-integer", "", _TPU_X64 + "dot", _TPU_X64_MEASURED, split_within=I32_MAX),
        Refusal(OpForm.CONVOLUTION, "64-bit-integer", "", _TPU_X64 + "convolution", _TPU_X64_MEASURED,
                split_within=I32_MAX),
        Refusal(OpForm.LU, "64-bit-float", "", "Only F32 and C64 types are implemented in LuDecomposition",
                _TPU_X64_MEASURED),
        Refusal(OpForm.FFT, "64-bit-float", "", "Unexpected operand type for FFT: c128 (f64 for a real "
                "transform)", _TPU_X64_MEASURED),
        Refusal(OpForm.BITCAST, "float64-int64", "",
                "XLA:TPU's float64 is a pair of f32: the bits bitcast_convert gives between f64 and s64 are not "
                "the IEEE double's (and nextafter fails to compile: 'Binary op and with different element types')",
                "jax-ml/jax PR #21108 (nextafter skipped on TPU); " + _TPU_X64_MEASURED),
        Refusal(OpForm.NEXT_AFTER, "64-bit-float", "",
                "XLA:TPU expands a float64 nextafter on s64 bits and fails: 'Binary op and with different element "
                "types: s32 and u32'", _TPU_X64_MEASURED),
    )


register(Target(
    "tpu", "Google TPUs through XLA:TPU, which emulates 64-bit types itself: int64, uint64, float64 (a pair of "
    "f32, with f32's exponent range) and complex128 kept; what it refuses converted",
    native=frozenset({"i64", "u64", "f64", "c128"}), refuses=_tpu_refusals(), platforms=("tpu",),
    arithmetic=TPU_V5E_ARITHMETIC, matmul=TPU_MATMUL,
    sources=("XLA:TPU's own 64-bit emulation (libtpu's X64 rewriter), " + _TPU_X64_MEASURED,)))

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
    native 64-bit types, platforms, matrix engine datapath, sources, and
    every refusal and datapath entry with the vendor's code and source."""
    out: list[str] = []
    for name in names if names is not None else BUILT_IN:
        t = target(name)
        out.append(f"### `{t.name}`\n\n{t.description}.\n")
        native = ", ".join(f"`{k}`" for k in sorted(t.native)) or "none"
        platforms = ", ".join(f"`{p}`" for p in t.platforms) or "none (named with `--target` / `NO64_TARGET`)"
        out.append(f"* Native 64-bit types: {native}\n* JAX platforms: {platforms}")
        m = t.matmul
        out.append(f"* Float64 dots on pairs (matrix engine): `{m.operands}` slices, summed in `{m.accumulates}` "
                   f"(exact within 2**{round(math.log2(m.exact_below + 1))}), "
                   f"one-pass estimate in `{m.one_pass}`, "
                   + ("slices the data need chosen at run time" if m.branches else "every slice always (no branches)")
                   + f": {m.reason} ({m.source})")
        out.extend(f"* Source: {s}" for s in t.sources)
        if t.arithmetic != IEEE_ARITHMETIC:
            out.append(f"* f32 arithmetic: {t.arithmetic.describe()} (source: {t.arithmetic.source})")
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
