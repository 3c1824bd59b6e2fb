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

Each entry also gives the op's rule for each representation of a value in
32-bit parts: ``emulate`` (64-bit integers as word pairs), ``pairs``
(float64 as f32 pairs) and ``widen`` (16-bit integers carried in 32 bits on
a device without them, with ``widen_why_not`` where it cannot be).

Each entry also gives the op's structural roles (a function, a call, a
terminator, a loop, branches, an op owning its regions, a constant, a
convert, a pure op, an op moving operand 0's elements), what it computes for
the analyses that recognise a computation, and how a reduction's operands
divide: the pass, the analyses and the emulation steps read these, never an
op's name.

Adding support for an op is one entry here (plus its functions, in
:mod:`no64.analysis.transfer` or a rule module) and one test.
"""

from __future__ import annotations

from ..analysis import transfer as T
from ..ir._mlir import ir
from ..kinds import OpForm, SentinelUse
from ..spec.registry import Computes, Reduction, declare
from . import (
    bits,
    checks,
    custom_call,
    fft,
    float_bits,
    floats,
    limbs,
    linalg,
    pair_rules as PR,
    rng_bit_generator,
    rounding,
    unfold,
    wide as E,
    widen_rules as WR,
)

#: What an op does with a sentinel operand (see the module docstring).
CARRIES, COMPARES, READS = SentinelUse.CARRIES, SentinelUse.COMPARES, SentinelUse.READS
#: Operand 0 carries (the elements moved); the others are indices or shapes, read.
FIRST_CARRIES = (CARRIES,)
ADD, SUBTRACT, MULTIPLY, DIVIDE = Computes.ADD, Computes.SUBTRACT, Computes.MULTIPLY, Computes.DIVIDE
MAXIMUM, MINIMUM, NEGATE, ABS, SQRT = Computes.MAXIMUM, Computes.MINIMUM, Computes.NEGATE, Computes.ABS, Computes.SQRT


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
    declare(_name, transfer=T.constant, constant=True, pure=True, region_free=True, pairs=PR.constant,
            widen=WR.constant, widen_why_not=WR.constant_why_not)
declare("stablehlo.iota", transfer=T.iota, fold=T.fold_iota, refuse=checks.iota_fits, pure=True,
        computes=Computes.IOTA, region_free=True, pairs=PR.iota, widen=WR.retyped)

# Results hold elements of operand 0 (rearranged, repeated or dropped).
for _name in ("stablehlo.broadcast", "stablehlo.dynamic_broadcast_in_dim", "stablehlo.real_dynamic_slice",
              "stablehlo.dynamic_slice", "stablehlo.reverse", "stablehlo.dynamic_reshape"):
    declare(_name, transfer=T.same_as_first, emulate=E.moved, moves=True, region_free=True,
            sentinels=FIRST_CARRIES, pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.gather", transfer=T.same_as_first, emulate=E.moved, moves=True, region_free=True,
        sentinels=FIRST_CARRIES, pairs=PR.componentwise, computes=Computes.GATHER, pure=True, widen=WR.retyped)
declare("stablehlo.slice", transfer=T.same_as_first, emulate=E.moved, moves=True, pure=True, region_free=True,
        sentinels=FIRST_CARRIES, pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.transpose", transfer=T.same_as_first, emulate=E.moved, moves=True, pure=True, region_free=True,
        sentinels=FIRST_CARRIES, pairs=PR.componentwise, computes=Computes.TRANSPOSE, widen=WR.retyped)
declare("stablehlo.broadcast_in_dim", transfer=T.same_as_first, fold=T.fold_broadcast, emulate=E.moved,
        moves=True, pure=True, region_free=True, sentinels=FIRST_CARRIES, pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.reshape", transfer=T.same_as_first, fold=T.fold_reshape, emulate=E.moved, moves=True,
        pure=True, region_free=True, sentinels=FIRST_CARRIES, pairs=PR.componentwise, computes=Computes.RESHAPE,
        widen=WR.retyped)
# (ops the widening alone computes)
for _name in ("stablehlo.map", "stablehlo.dynamic_iota", "stablehlo.dynamic_gather"):
    declare(_name, widen=WR.retyped)

# Result i holds elements of operand i.
declare("stablehlo.copy", transfer=T.same_as_operands, emulate=E.moved, moves=True, region_free=True,
        sentinels=CARRIES, pairs=PR.componentwise)
declare("stablehlo.optimization_barrier", elementwise=True, transfer=T.barrier, emulate=E.per_operand, region_free=True,
        sentinels=CARRIES, pairs=PR.per_operand, declares_range=True, widen=WR.retyped)
for _name in ("stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.collective_permute",
              "stablehlo.collective_broadcast"):
    declare(_name, transfer=T.same_as_operands, region_free=True, sentinels=CARRIES, widen=WR.retyped)
declare("sdy.sharding_constraint", transfer=T.same_as_operands, emulate=E.moved, region_free=True, sentinels=CARRIES,
        pairs=PR.componentwise)
declare("sdy.reshard", transfer=T.same_as_operands, region_free=True, sentinels=CARRIES, pairs=PR.componentwise)
declare("stablehlo.concatenate", transfer=T.join_operands, emulate=E.moved_all, computes=Computes.CONCATENATE,
        pure=True, region_free=True, sentinels=CARRIES, pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.pad", transfer=T.join_operands, emulate=E.pad, computes=Computes.PAD, region_free=True,
        sentinels=(CARRIES, CARRIES), pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.dynamic_pad", transfer=T.join_operands, region_free=True, sentinels=(CARRIES, CARRIES),
        pairs=PR.componentwise, widen=WR.retyped)
declare("stablehlo.dynamic_update_slice", transfer=T.dynamic_update_slice, emulate=E.dynamic_update_slice,
        region_free=True, sentinels=(CARRIES, CARRIES), pairs=PR.componentwise, widen=WR.retyped)
# select, min/max and clamp pick one of their operands
declare("stablehlo.select", elementwise=True, transfer=T.select, fold=T.fold_select, emulate=E.select,
        computes=Computes.SELECT, pure=True,
        region_free=True, sentinels=CARRIES, pairs=PR.select, widen=WR.retyped)
declare("stablehlo.clamp", elementwise=True, transfer=T.clamp, emulate=E.clamp, pure=True, region_free=True,
        sentinels=CARRIES, pairs=PR.clamp, widen=WR.retyped)
declare("stablehlo.maximum", elementwise=True, transfer=T.minmax("max"), emulate=E.maximum, computes=MAXIMUM, pure=True,
        region_free=True, sentinels=CARRIES, pairs=PR.maximum, widen=WR.retyped)
declare("stablehlo.minimum", elementwise=True, transfer=T.minmax("min"), emulate=E.minimum, computes=MINIMUM, pure=True,
        region_free=True, sentinels=CARRIES, pairs=PR.minimum, widen=WR.retyped)

# ------------------------------------------------------------- predicates
declare("stablehlo.compare", elementwise=True, transfer=T.predicate, fold=T.fold_compare, emulate=E.compare,
        computes=Computes.COMPARE,
        pure=True,
        region_free=True, sentinels=COMPARES, pairs=PR.compare, widen=WR.retyped)
declare("stablehlo.is_finite", elementwise=True, transfer=T.predicate, region_free=True, pairs=PR.is_finite)
declare("stablehlo.convert", elementwise=True, transfer=T.convert, fold=T.fold_convert, convert=True,
        sentinels=_convert_use,
        emulate=E.convert, pure=True, region_free=True, pairs=PR.convert, widen=WR.convert)

# ------------------------------------------------------------- arithmetic
declare("stablehlo.add", elementwise=True, transfer=T.add, fold=T.fold_add, emulate=E.add, computes=ADD, pure=True,
        region_free=True, pairs=PR.add, widen=WR.wrapped)
declare("stablehlo.subtract", elementwise=True, transfer=T.subtract, fold=T.fold_subtract, emulate=E.subtract,
        computes=SUBTRACT,
        pure=True, region_free=True, pairs=PR.subtract, widen=WR.wrapped)
declare("stablehlo.multiply", elementwise=True, transfer=T.multiply, fold=T.fold_multiply, emulate=E.multiply,
        computes=MULTIPLY,
        pure=True, region_free=True, pairs=PR.multiply, widen=WR.wrapped)
# x * x (jnp.square from jax 0.10 on, also on integers, wrapping as multiply does)
declare("chlo.square", elementwise=True, transfer=T.square, fold=T.fold_square, emulate=E.square,
        pure=True, region_free=True, pairs=PR.square, amplifies=True)
declare("stablehlo.negate", elementwise=True, transfer=T.negate, fold=T.fold_negate, emulate=E.negate,
        computes=NEGATE, pure=True,
        region_free=True, pairs=PR.negate, widen=WR.wrapped)
declare("stablehlo.divide", elementwise=True, transfer=T.divide, emulate=E.divide, computes=DIVIDE, region_free=True,
        pairs=PR.divide, widen=WR.wrapped)
declare("stablehlo.remainder", elementwise=True, transfer=T.remainder, emulate=E.remainder, region_free=True,
        pairs=PR.remainder, widen=WR.retyped)
declare("stablehlo.abs", elementwise=True, transfer=T.absolute, emulate=E.absolute, computes=ABS, pure=True,
        region_free=True,
        pairs=PR.absolute, widen=WR.wrapped)
declare("stablehlo.sign", elementwise=True, transfer=T.sign, emulate=E.sign, pure=True, region_free=True, pairs=PR.sign,
        widen=WR.retyped)
# (on a device whose integer dot is inexact or refused: split into limb dots;
# a float64 one narrowed to f32 asks for f32 products: HIGHEST precision)
declare("stablehlo.dot_general", transfer=T.dot_general, emulate=E.dot_general, emulate_applies=E.dot_applies,
        emulate_why_not=E.dot_why_not, region_free=True, pairs=PR.dot_general, form=OpForm.MATMUL,
        legalize=limbs.dot_general, amplifies=True, fixup=floats.narrowed_dot_precision,
        fixup_inserts=False, widen=WR.wrapped)
declare("stablehlo.dot", widen=WR.wrapped)

# ------------------------------------------- width-dependent: bits and words
declare("stablehlo.shift_left", elementwise=True, transfer=T.shift_left, refuse=bits.shift_amount_below_32,
        emulate=E.shift_left,
        computes=Computes.SHIFT_LEFT, pure=True, region_free=True, widen=WR.wrapped)
declare("stablehlo.shift_right_arithmetic", elementwise=True, transfer=T.shift_right_arithmetic,
        rewrites=(bits.shift_out_of_small_value, bits.high_word_of_sign_extended, bits.unsigned_arithmetic_shift),
        refuse=bits.shift_amount_below_32, emulate=E.shift_right_arithmetic,
        computes=Computes.SHIFT_RIGHT_ARITHMETIC, pure=True, region_free=True, form=OpForm.SHIFT_RIGHT_ARITHMETIC,
        unfold=unfold.shift_right_arithmetic, widen=WR.shift_right_arithmetic)
declare("stablehlo.shift_right_logical", elementwise=True, transfer=T.shift_right_logical,
        rewrites=(bits.shift_out_of_small_value, bits.high_word_of_sign_extended),
        refuse=bits.shift_amount_below_32, emulate=E.shift_right_logical,
        computes=Computes.SHIFT_RIGHT_LOGICAL, pure=True, region_free=True, widen=WR.shift_right_logical)
declare("stablehlo.and", elementwise=True, transfer=T.bit_and, rewrites=(bits.low_word_mask,), emulate=E.bit_and,
        computes=Computes.AND, pure=True, region_free=True, widen=WR.retyped)
declare("stablehlo.or", elementwise=True, transfer=T.bit_or_xor, emulate=E.bit_or, computes=Computes.OR, pure=True,
        region_free=True, widen=WR.retyped)
declare("stablehlo.xor", elementwise=True, transfer=T.bit_or_xor, emulate=E.bit_xor, computes=Computes.XOR, pure=True,
        region_free=True, widen=WR.retyped)
declare("stablehlo.not", elementwise=True, transfer=T.bit_not, refuse=bits.unsigned_not, emulate=E.bit_not, pure=True,
        region_free=True, widen=WR.bit_not)
declare("stablehlo.count_leading_zeros", elementwise=True, transfer=T.bit_count, refuse=bits.static_bit_count,
        fixup=bits.bit_count_fixup, emulate=E.count_leading_zeros, emulate_applies=E.static_shape,
        region_free=True, widen=WR.count_leading_zeros)
declare("stablehlo.popcnt", elementwise=True, transfer=T.bit_count, refuse=bits.static_bit_count,
        fixup=bits.bit_count_fixup,
        emulate=E.popcnt, emulate_applies=E.static_shape, region_free=True, widen=WR.popcnt)
declare("stablehlo.bitcast_convert", elementwise=floats.bitcast_same_width,
        rewrites=(floats.float_from_bits, rng_bit_generator.word_pairs_round_trip),
        refuse=floats.bitcast_is_width_dependent, emulate=E.bitcast_convert,
        emulate_applies=E.bitcast_applies, pure=True, region_free=True, form=OpForm.BITCAST,
        unfold=float_bits.bitcast, widen=WR.convert, widen_why_not=WR.bitcast_why_not)
# (on a device that refuses it: rounded on its f32 bits with integer ops)
declare("stablehlo.reduce_precision", elementwise=True, rewrites=(floats.clamp_reduce_precision,), region_free=True,
        form=OpForm.REDUCE_PRECISION, unfold=rounding.reduce_precision)
declare("stablehlo.rng_bit_generator", rewrites=(rng_bit_generator.rng_bit_generator_on_word_pairs,),
        refuse=rng_bit_generator.rng_on_64bit_words, region_free=True,
        hint="rbg keys need a u64 state: no64 rewrites it exactly", form=OpForm.RNG_BIT_GENERATOR,
        widen_why_not=WR.random_bits_why_not)
# (on a device that refuses its float64 LU: written out as a loop of float64 ops)
declare("stablehlo.custom_call", rewrites=(custom_call.lapack_to_32bit,), refuse=custom_call.opaque_target,
        region_free=True, external=True, pairs=PR.custom_call, form=linalg.form, unfold=linalg.lu,
        widen=WR.retyped, widen_why_not=WR.custom_call_why_not)
# (a float64 solve by an LU's factors: refined from the device's f32 LU under float pairs, rules/linalg.py)
declare("stablehlo.triangular_solve", region_free=True, pure=True, form=OpForm.TRIANGULAR_SOLVE)
for _name in ("stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv"):
    declare(_name, refuse=checks.host_transfer, region_free=True, widen_why_not=WR.host_transfer_why_not)

# ------------------------------------------------- multi-result and regions
# (What a region does with a sentinel its op hands it is up to the ops inside.)
declare("stablehlo.sort", transfer=T.sort, arguments=T.sort_arguments, emulate=E.sort, owns_regions=True,
        sentinels=CARRIES, pairs=PR.sort, form=OpForm.SORT, unfold=unfold.sort, widen=WR.retyped)
declare("chlo.top_k", transfer=T.top_k, emulate=E.top_k, region_free=True, sentinels=CARRIES, pairs=PR.top_k,
        form=OpForm.TOP_K, widen=WR.retyped)
declare("stablehlo.while", transfer=T.while_results, arguments=T.while_arguments, loop=True, sentinels=CARRIES,
        form=OpForm.LOOP)
declare("stablehlo.case", transfer=T.branches, branches=True, sentinels=CARRIES, form=OpForm.BRANCH)
declare("stablehlo.if", transfer=T.branches, branches=True, sentinels=CARRIES, form=OpForm.BRANCH)
declare("stablehlo.reduce", transfer=T.reduction_results, arguments=T.reduction_arguments,
        emulate=E.reduction, owns_regions=True, reduction=Reduction.INPUTS_INITS, sentinels=CARRIES,
        pairs=PR.reduce, form=OpForm.REDUCE, unfold=unfold.reduce, widen=WR.reduction)
declare("stablehlo.reduce_window", transfer=T.reduction_results, arguments=T.reduction_arguments,
        emulate=E.reduction, owns_regions=True, reduction=Reduction.INPUTS_INITS, sentinels=CARRIES,
        pairs=PR.reduce_window, form=OpForm.REDUCE_WINDOW, unfold=unfold.reduce_window, widen=WR.reduction)
declare("stablehlo.scatter", transfer=T.reduction_results, arguments=T.reduction_arguments, emulate=E.scatter,
        owns_regions=True, reduction=Reduction.SCATTER, sentinels=_scatter_use, pairs=PR.scatter,
        form=OpForm.SCATTER, legalize=limbs.combining, widen=WR.reduction)
for _name in ("stablehlo.all_reduce", "stablehlo.reduce_scatter"):
    declare(_name, transfer=T.reduction_results, arguments=T.reduction_arguments, owns_regions=True,
            reduction=Reduction.REPLICAS, sentinels=CARRIES, form=OpForm.COLLECTIVE, legalize=limbs.combining,
            widen=WR.reduction)
declare("stablehlo.select_and_scatter", owns_regions=True, widen=WR.retyped)
declare("func.func", arguments=T.function_arguments, function=True)
declare("func.call", transfer=T.call, call=True, region_free=True, sentinels=CARRIES)
declare("sdy.manual_computation", arguments=T.forwarded_arguments, sentinels=CARRIES)
# terminators hand their operands to the results of the op or call they end
for _name in ("stablehlo.return", "func.return", "sdy.return"):
    declare(_name, terminator=True, region_free=True, sentinels=CARRIES)

# ------------------------------- ops that need no more than plain retyping
# on floats, computed in f32 under float_policy="pairs" (recorded)
for _name in ("stablehlo.tan", "stablehlo.cbrt", "stablehlo.atan2"):
    declare(_name, elementwise=True, region_free=True, pairs=PR.in_f32)
# on pairs from +, -, * and range reduction (no64.ir.pair_math)
declare("stablehlo.log", elementwise=True, region_free=True, pairs=PR.log)
declare("stablehlo.log_plus_one", elementwise=True, region_free=True, pairs=PR.log_plus_one)
declare("stablehlo.sine", elementwise=True, region_free=True, pairs=PR.sine)
declare("stablehlo.cosine", elementwise=True, region_free=True, pairs=PR.cosine)
# (on integers, computed on words as XLA computes it)
declare("stablehlo.power", elementwise=True, emulate=E.power, region_free=True, pairs=PR.power,
        amplifies=True, widen=WR.wrapped)
# the same where ``finfo(float64).max`` gives f32's result in float64 too
declare("stablehlo.exponential", elementwise=True, saturates=True, region_free=True, pairs=PR.exponential,
        amplifies=True)
declare("stablehlo.exponential_minus_one", elementwise=True, saturates=True, region_free=True,
        pairs=PR.exponential_minus_one, amplifies=True)
declare("stablehlo.tanh", elementwise=True, saturates=True, region_free=True, pairs=PR.tanh)
declare("stablehlo.logistic", elementwise=True, saturates=True, region_free=True, pairs=PR.logistic)
# (on a device that refuses its 64-bit integer form: split into limb convolutions)
declare("stablehlo.convolution", region_free=True, pairs=PR.convolution, form=OpForm.CONVOLUTION,
        legalize=limbs.dot_general, fixup=floats.narrowed_dot_precision,
        fixup_inserts=False, widen=WR.wrapped)
declare("stablehlo.sqrt", elementwise=True, computes=SQRT, region_free=True, pairs=PR.sqrt)
declare("stablehlo.rsqrt", elementwise=True, region_free=True, pairs=PR.rsqrt)
declare("stablehlo.floor", elementwise=True, region_free=True, pairs=PR.floor)
declare("stablehlo.ceil", elementwise=True, region_free=True, pairs=PR.ceil)
declare("stablehlo.round_nearest_even", elementwise=True, region_free=True, pairs=PR.round_nearest_even)
declare("stablehlo.round_nearest_afz", elementwise=True, region_free=True, pairs=PR.round_nearest_afz)
# (on a device that refuses it on float64: its steps on the double's bits, computed by arithmetic;
# on float64 pairs: the neighbour among the pairs)
declare("chlo.next_after", elementwise=True, region_free=True, form=OpForm.NEXT_AFTER, unfold=float_bits.next_after,
        pairs=PR.next_after)
# (on a device that refuses it on complex128: float64 arithmetic on its parts)
declare("stablehlo.fft", region_free=True, form=OpForm.FFT, unfold=fft.fft)
for _name in ("stablehlo.get_tuple_element", "stablehlo.tuple"):
    declare(_name, region_free=True, widen=WR.retyped)
for _name in ("stablehlo.real", "stablehlo.imag", "stablehlo.complex", "stablehlo.get_dimension_size"):
    declare(_name, region_free=True)
declare("stablehlo.rng", region_free=True, widen_why_not=WR.random_bits_why_not)
# chlo's special functions: on floats, computed in f32 under float_policy="pairs"
for _name in ("chlo.erf", "chlo.erf_inv", "chlo.lgamma", "chlo.digamma", "chlo.asin", "chlo.acos", "chlo.atan",
              "chlo.asinh", "chlo.acosh", "chlo.atanh"):
    declare(_name, pairs=PR.in_f32)
for _name in ("chlo.sinh", "chlo.cosh"):
    declare(_name, pairs=PR.in_f32, amplifies=True)
