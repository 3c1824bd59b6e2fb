"""The op table: one entry per op no64 knows, in one place.

Each entry names the op's range transfer function (one range per result),
the function for its regions' arguments, its constant folding, and -- for
ops whose meaning depends on bit width -- the exact rewrites tried before
retyping, the refusal check when none applies, and the fix-up after
retyping.  Ops not listed are retyped plainly and get the full range of
their types.

Each entry also says what the op does with a 64-bit sentinel (``INT64_MAX``,
``INT64_MIN``, ``UINT64_MAX``) in each operand (``sentinels``): ``CARRIES``
(it is moved, selected or ordered into the results unchanged, so it may stand
for itself as its 32-bit extreme), ``COMPARES`` (``compare``: its order
against the other operands), or ``READS`` (every other op, the default: the
op computes with the 64-bit number it is).  This is the one place that
decides where a sentinel may pass through unchanged; the range analysis, the
pass's verdicts and the emulation plan all read it.

Adding support for an op is one entry here (plus its functions, in
:mod:`no64.analysis.transfer` or a rule module) and one test.
"""

from __future__ import annotations

from ..analysis import transfer as T
from ..core._mlir import ir
from ..kinds import SentinelUse
from . import bits, checks, custom_call, floats, rng_bit_generator
from . import wide as E
from .registry import declare

_SH = "stablehlo."

#: What an op does with a sentinel operand (see the module docstring).
CARRIES, COMPARES, READS = SentinelUse.CARRIES, SentinelUse.COMPARES, SentinelUse.READS
#: Operand 0 carries (the elements moved); the others are indices or shapes, read.
FIRST_CARRIES = (CARRIES,)


def _convert_use(op: ir.Operation, i: int) -> SentinelUse:
    """A convert to the same element type is a no-op: it carries a sentinel.
    A 64-bit to 32-bit integer convert of the same signedness is how JAX
    writes a 64-bit value entering a program traced with x64 off: the
    sentinel meets its own 32-bit image there, as in a compare (exact only
    where policy 'exact' computes it on words).  To any other type (float,
    narrower integer, other signedness) it reads it."""
    src = ir.ShapedType(op.operands[0].type).element_type
    dst = ir.ShapedType(op.results[0].type).element_type
    if src == dst:
        return CARRIES
    if (isinstance(src, ir.IntegerType) and isinstance(dst, ir.IntegerType) and src.width == 64
            and dst.width == 32 and src.is_unsigned == dst.is_unsigned):
        return COMPARES
    return READS


def _scatter_use(op: ir.Operation, i: int) -> SentinelUse:
    """Inputs and updates carry; the indices (operand ``n``, after the ``n``
    inputs) are read."""
    return READS if i == len(op.results) else CARRIES

# ----------------------------------------------------- constants and shapes
for _name in ("stablehlo.constant", "chlo.constant", "mhlo.constant"):
    declare(_name, transfer=T.constant, constant=True, region_free=True)
declare(_SH + "iota", transfer=T.iota, refuse=checks.iota_fits, region_free=True)

# Results hold elements of operand 0 (rearranged, repeated or dropped).
for _op in (
    "broadcast dynamic_broadcast_in_dim slice dynamic_slice real_dynamic_slice reverse transpose "
    "gather dynamic_reshape"
).split():
    declare(_SH + _op, transfer=T.same_as_first, emulate=E.moved, region_free=True, sentinels=FIRST_CARRIES)
declare(_SH + "broadcast_in_dim", transfer=T.same_as_first, fold=T.fold_broadcast, emulate=E.moved,
        region_free=True, sentinels=FIRST_CARRIES)
declare(_SH + "reshape", transfer=T.same_as_first, fold=T.fold_reshape, emulate=E.moved, region_free=True,
        sentinels=FIRST_CARRIES)

# Result i holds elements of operand i.
declare(_SH + "copy", transfer=T.same_as_operands, emulate=E.moved, region_free=True, sentinels=CARRIES)
declare(_SH + "optimization_barrier", transfer=T.same_as_operands, emulate=E.per_operand, region_free=True,
        sentinels=CARRIES)
for _op in ("all_gather", "all_to_all", "collective_permute", "collective_broadcast"):
    declare(_SH + _op, transfer=T.same_as_operands, region_free=True, sentinels=CARRIES)
for _name in ("sdy.sharding_constraint", "sdy.reshard"):
    declare(_name, transfer=T.same_as_operands, region_free=True, sentinels=CARRIES)
declare(_SH + "concatenate", transfer=T.join_operands, emulate=E.moved_all, region_free=True, sentinels=CARRIES)
declare(_SH + "pad", transfer=T.join_operands, emulate=E.pad, region_free=True, sentinels=(CARRIES, CARRIES))
declare(_SH + "dynamic_pad", transfer=T.join_operands, region_free=True, sentinels=(CARRIES, CARRIES))
declare(_SH + "dynamic_update_slice", transfer=T.dynamic_update_slice, emulate=E.dynamic_update_slice,
        region_free=True, sentinels=(CARRIES, CARRIES))
# select, min/max and clamp pick one of their operands
declare(_SH + "select", transfer=T.select, emulate=E.select, region_free=True, sentinels=CARRIES)
declare(_SH + "clamp", transfer=T.clamp, emulate=E.clamp, region_free=True, sentinels=CARRIES)
declare(_SH + "maximum", transfer=T.minmax("max"), emulate=E.maximum, region_free=True, sentinels=CARRIES)
declare(_SH + "minimum", transfer=T.minmax("min"), emulate=E.minimum, region_free=True, sentinels=CARRIES)

# ------------------------------------------------------------- predicates
declare(_SH + "compare", transfer=T.predicate, emulate=E.compare, region_free=True, sentinels=COMPARES)
declare(_SH + "is_finite", transfer=T.predicate, region_free=True)
declare(_SH + "convert", transfer=T.convert, fold=T.fold_convert, convert=True, sentinels=_convert_use,
        emulate=E.convert, region_free=True)

# ------------------------------------------------------------- arithmetic
declare(_SH + "add", transfer=T.add, fold=T.fold_add, emulate=E.add, region_free=True)
declare(_SH + "subtract", transfer=T.subtract, fold=T.fold_subtract, emulate=E.subtract, region_free=True)
declare(_SH + "multiply", transfer=T.multiply, fold=T.fold_multiply, emulate=E.multiply, region_free=True)
declare(_SH + "negate", transfer=T.negate, fold=T.fold_negate, emulate=E.negate, region_free=True)
declare(_SH + "divide", transfer=T.divide, emulate=E.divide, region_free=True)
declare(_SH + "remainder", transfer=T.remainder, emulate=E.remainder, region_free=True)
declare(_SH + "abs", transfer=T.absolute, emulate=E.absolute, region_free=True)
declare(_SH + "sign", transfer=T.sign, emulate=E.sign, region_free=True)
declare(_SH + "dot_general", transfer=T.dot_general, emulate=E.dot_general, region_free=True)

# ------------------------------------------- width-dependent: bits and words
declare(_SH + "shift_left", transfer=T.shift_left, refuse=bits.shift_amount_below_32, emulate=E.shift, region_free=True)
declare(_SH + "shift_right_arithmetic", transfer=T.shift_right_arithmetic,
        rewrites=(bits.shift_out_of_small_value, bits.high_word_of_sign_extended, bits.unsigned_arithmetic_shift),
        refuse=bits.shift_amount_below_32, emulate=E.shift, region_free=True)
declare(_SH + "shift_right_logical", transfer=T.shift_right_logical,
        rewrites=(bits.shift_out_of_small_value, bits.high_word_of_sign_extended),
        refuse=bits.shift_amount_below_32, emulate=E.shift, region_free=True)
declare(_SH + "and", transfer=T.bit_and, rewrites=(bits.low_word_mask,), emulate=E.bit_and, region_free=True)
declare(_SH + "or", transfer=T.bit_or_xor, emulate=E.bit_or, region_free=True)
declare(_SH + "xor", transfer=T.bit_or_xor, emulate=E.bit_xor, region_free=True)
declare(_SH + "not", transfer=T.bit_not, refuse=bits.unsigned_not, emulate=E.bit_not, region_free=True)
declare(_SH + "count_leading_zeros", transfer=T.bit_count, refuse=bits.static_bit_count,
        fixup=bits.bit_count_fixup, emulate=E.count_leading_zeros, region_free=True)
declare(_SH + "popcnt", transfer=T.bit_count, refuse=bits.static_bit_count, fixup=bits.bit_count_fixup,
        emulate=E.popcnt, region_free=True)
declare(_SH + "bitcast_convert",
        rewrites=(floats.float_from_bits, rng_bit_generator.word_pairs_round_trip),
        refuse=floats.bitcast_is_width_dependent, emulate=E.bitcast_convert, region_free=True)
declare(_SH + "reduce_precision", rewrites=(floats.clamp_reduce_precision,), region_free=True)
declare(_SH + "rng_bit_generator", rewrites=(rng_bit_generator.rng_bit_generator_on_word_pairs,),
        refuse=rng_bit_generator.rng_on_64bit_words, region_free=True,
        hint="rbg keys need a u64 state: no64 rewrites it exactly")
declare(_SH + "custom_call", rewrites=(custom_call.lapack_to_32bit,), refuse=custom_call.opaque_target,
        region_free=True)
for _op in ("infeed", "outfeed", "send", "recv"):
    declare(_SH + _op, refuse=checks.host_transfer, region_free=True)

# ------------------------------------------------- multi-result and regions
# (What a region does with a sentinel its op hands it is up to the ops inside.)
declare(_SH + "sort", transfer=T.sort, arguments=T.sort_arguments, emulate=E.sort, sentinels=CARRIES)
declare("chlo.top_k", transfer=T.top_k, region_free=True, sentinels=CARRIES)
declare(_SH + "while", transfer=T.while_results, arguments=T.while_arguments, sentinels=CARRIES)
declare(_SH + "case", transfer=T.branches, sentinels=CARRIES)
declare(_SH + "if", transfer=T.branches, sentinels=CARRIES)
declare(_SH + "reduce", transfer=T.reduction_results, arguments=T.reduction_arguments,
        emulate=E.reduction, sentinels=CARRIES)
declare(_SH + "reduce_window", transfer=T.reduction_results, arguments=T.reduction_arguments,
        emulate=E.reduction, sentinels=CARRIES)
declare(_SH + "scatter", transfer=T.reduction_results, arguments=T.reduction_arguments, emulate=E.scatter,
        sentinels=_scatter_use)
for _op in ("all_reduce", "reduce_scatter"):
    declare(_SH + _op, transfer=T.reduction_results, arguments=T.reduction_arguments, sentinels=CARRIES)
declare(_SH + "select_and_scatter")
declare("func.func", arguments=T.function_arguments)
declare("func.call", transfer=T.call, call=True, region_free=True, sentinels=CARRIES)
declare("sdy.manual_computation", arguments=T.forwarded_arguments, sentinels=CARRIES)

# ops that never carry regions and need no more than plain retyping
for _op in (
    "exponential log sqrt rsqrt tanh logistic power floor ceil round_nearest_even round_nearest_afz "
    "get_tuple_element tuple real imag complex fft convolution rng cosine sine log_plus_one "
    "exponential_minus_one cbrt atan2 tan get_dimension_size"
).split():
    declare(_SH + _op, region_free=True)
# terminators hand their operands to the results of the op or call they end
for _name in ("stablehlo.return", "func.return", "sdy.return"):
    declare(_name, region_free=True, sentinels=CARRIES)

# float64 as pairs of f32 (float_policy="pairs"): the rules join their ops' entries
from . import pair_rules as _pair_rules  # noqa: E402,F401
