"""Run a module and its converted copy on adversarial inputs.

``no64.jax.reference.run_module`` compiles the module at every call, which
is right for one run and slow for the dozens of adversarial input sets the
golden and property tests feed each module.  :func:`compile_module` compiles
once on the CPU backend and returns a function of the inputs;
:func:`adversarial_inputs` builds the input sets (the extremes of the
declared ranges and the values where 32-bit narrowing breaks), and
:func:`compare_on_adversarial_inputs` runs both programs on all of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from typing import Any

import jax
import jax.extend.backend
import numpy as np
from jax._src.lib import xla_client as xc

import no64
from no64.ir.types import DTYPE_KINDS
from no64.jax.reference import (
    compare_outputs,
    converted_inputs,
    main_signature,
    word_pair_inputs,
    word_pair_outputs,
)
from no64.transforms.emulate import join_words
from no64.transforms.pairs import join_pairs, split_pairs
from support import enable_x64, ir

I32 = np.iinfo(np.int32)
#: What no64 raises when it refuses a module.
REFUSALS = (no64.NarrowingError, no64.UnsupportedOpError, no64.ConstantRangeError)


def demoted_unless_refused(module: ir.Module, **demote: Any) -> no64.DemotionReport | None:
    """``no64.demote(module, **demote)``'s report, or ``None`` where no64
    refuses the module, which it must then leave as it was."""
    before = str(module)
    try:
        return no64.demote(module, **demote)
    except REFUSALS:
        assert str(module) == before, "a refused module must be left unchanged"
        return None


def compile_module(module: ir.Module, *, strict: bool,
                   keep: frozenset[str] = frozenset()) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """Compile ``module`` (``strict``: first check that it is 64-bit free,
    but for the types of ``keep``, which the target has natively)."""
    if strict:
        no64.check(module, keep=keep)
    in_specs, _ = main_signature(module)
    backend = jax.extend.backend.get_backend("cpu")
    device = backend.devices()[0]
    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object)
    )
    executable = backend.compile_and_load(
        module.operation.get_asm(enable_debug_info=True),
        executable_devices=xc.DeviceList((device,)),
        compile_options=options,
    )

    def run(args: Sequence[np.ndarray]) -> list[np.ndarray]:
        assert len(args) == len(in_specs)
        for spec, a in zip(in_specs, args):
            assert a.shape == spec.shape and a.dtype == spec.dtype, (spec, a.dtype, a.shape)
        with enable_x64(True):
            inputs = jax.device_put(list(args), device)
            results = executable.execute_sharded(inputs)
            shards = results.disassemble_into_single_device_arrays()
            return [np.asarray(per_device[0]) for per_device in shards]

    return run


# ----------------------------------------------------------- adversarial inputs


def special_values(lo: int, hi: int) -> list[int]:
    """The declared extremes and the values where 32-bit narrowing breaks,
    those inside ``[lo, hi]``."""
    picks = [lo, hi, I32.max, I32.min, 0, -1, 1, I32.max - 1, I32.min + 1, (lo + hi) // 2]
    out: list[int] = []
    for v in picks:
        if lo <= v <= hi and v not in out:
            out.append(v)
    return out


def adversarial_inputs(
    m: ir.Module, ranges: dict[int, tuple[int, int]], limit: int = 256,
    floats: Sequence[float] = (0.0, 1.5, -2.25),
) -> list[list[np.ndarray]]:
    """Input sets for the entry function: each integer argument takes every
    special value of its range, and each float argument every one of
    ``floats``, alone (filling the tensor) and mixed (the values spread over
    the tensor, shifted per argument), so every pair of extremes meets in
    some element.  At most ``limit`` of the combinations are taken (evenly
    spread, the last one included)."""
    specs, _ = main_signature(m)
    per_arg: list[list[int]] = []
    for i, spec in enumerate(specs):
        if spec.dtype == np.bool_:
            per_arg.append([0, 1])
        elif np.issubdtype(spec.dtype, np.integer):
            info = np.iinfo(spec.dtype)
            full = (max(int(info.min), int(I32.min)), min(int(info.max), int(I32.max)))
            per_arg.append(special_values(*ranges.get(i, full)))
        else:
            per_arg.append(list(floats))
    sets: list[list[np.ndarray]] = []
    # every combination of special values, each filling its whole tensor
    combos = list(itertools.product(*per_arg))
    if len(combos) > limit:
        combos = combos[:: len(combos) // limit + 1] + [combos[-1]]
    for combo in combos:
        sets.append([np.full(s.shape, v, dtype=s.dtype) for s, v in zip(specs, combo)])
    # the special values spread over each tensor, rotated per argument
    for shift in range(max((len(v) for v in per_arg), default=0)):
        arrays = []
        for j, (s, vals) in enumerate(zip(specs, per_arg)):
            n = int(np.prod(s.shape))
            flat = [vals[(k + shift + j) % len(vals)] for k in range(n)]
            arrays.append(np.array(flat, dtype=s.dtype).reshape(s.shape))
        sets.append(arrays)
    return sets


def compare_on_adversarial_inputs(
    original: ir.Module,
    converted: ir.Module,
    ranges: dict[int, tuple[int, int]],
    what: str,
    limit: int = 256,
    keep: frozenset[str] = frozenset(),
) -> None:
    """Run both programs on every adversarial input set; outputs must agree
    (``keep``: the 64-bit types the conversion kept, its target's native ones)."""
    run_original = compile_module(original, strict=False)
    run_converted = compile_module(converted, strict=True, keep=keep)
    wide = word_pair_outputs(original, converted)
    whole = list(wide)
    if keep:  # outputs of a kept 64-bit type: compared whole, bit for bit
        _, outs = main_signature(converted)
        whole = sorted({*wide, *(j for j, spec in enumerate(outs) if DTYPE_KINDS.get(spec.dtype) in keep)})
    wide_in = word_pair_inputs(original, converted)
    for args in adversarial_inputs(original, ranges, limit):
        ref = run_original(args)
        got = run_converted(converted_inputs(args, wide_in))
        for j in wide:
            got[j] = join_words(got[j])
        compare_outputs(ref, got, what=f"{what} on inputs {[a.tolist() for a in args]}", wide=whole)


# ----------------------------------------------------------- float64 pairs

#: u**2 (u = 2**-24), the unit the pairs' bounds are stated in
#: (docs/guides/float-pairs.md).
U2 = 2.0**-48
#: Beside a pair bound, the 64-bit program's own rounding: its result is off
#: the exact one by at most a few roundings of 2**-53 of the same scale.
X64_ROUNDING = 2.0**-50
#: Float64 inputs for programs on pairs: values f32 cannot hold (each needs
#: its lo word: 1/3, pi, 1 + 2**-40, a value with 32 integer bits and a
#: fraction), signed zeros, an infinity and NaN.
PAIR_FLOATS = (0.0, -0.0, 1 / 3, -np.pi, 1 + 2.0**-40, -1e6 / 7, 2.0**-20 / 3, 3e9 + 1 / 3, np.inf, np.nan)


def _pair_parts(before: Sequence[Any], after: Sequence[Any]) -> list[int]:
    """The positions where a float64 value of shape ``S`` became a float32
    one of shape ``S x 2`` (a packed pair)."""
    return [j for j, (b, a) in enumerate(zip(before, after))
            if np.dtype(b.dtype) == np.float64 and np.dtype(a.dtype) == np.float32
            and tuple(a.shape) == tuple(b.shape) + (2,)]


def pair_inputs(args: Sequence[Any], pairs: Collection[int]) -> list[np.ndarray]:
    """The inputs of a module converted under ``float_policy="pairs"`` for the
    original's ``args``: those at ``pairs`` (``report.pair_inputs``) as packed
    pairs, every other one as :func:`~no64.jax.reference.converted_inputs`
    gives it (cast to its narrowed dtype)."""
    return [split_pairs(np.asarray(a)) if i in pairs else converted_inputs([a])[0] for i, a in enumerate(args)]


def compare_pairs(ref: np.ndarray, got: np.ndarray, scale: np.ndarray, bound: float, what: str) -> int:
    """Hold a float64 output computed on pairs (``got``, joined) to the 64-bit
    program's (``ref``): NaN where it has NaN, the same infinities, zeros of
    its sign, and every finite element within ``bound`` u**2 of ``scale``
    (plus the 64-bit program's own rounding); the number of finite elements
    f32 could not have given (its rounding of ``ref`` is beyond the bound),
    so that a caller can tell the comparison is sharper than f32."""
    finite = np.isfinite(ref)
    problems = []
    same_nonfinite = (np.isnan(ref) & np.isnan(got)) | (~finite & ~np.isnan(ref) & (ref == got))
    if not np.all(finite | same_nonfinite):
        problems.append("non-finite elements differ")
    zero = finite & (ref == 0) & (got == 0)
    if np.any(np.signbit(ref[zero]) != np.signbit(got[zero])):
        problems.append("a zero's sign differs")
    with np.errstate(invalid="ignore"):
        tol = (bound * U2 + X64_ROUNDING) * np.abs(scale)
        err = np.abs(got - ref)
        beyond = finite & ~(err <= tol)
        f32_err = np.abs(ref.astype(np.float32).astype(np.float64) - ref)
        sharper = int(np.sum(finite & (f32_err > tol)))
    if beyond.any():
        worst = int(np.argmax(np.where(beyond, err / np.where(tol > 0, tol, 1.0), 0.0)))
        problems.append(f"{int(beyond.sum())} element(s) beyond {bound:g}u^2 of the scale, worst: x64 "
                        f"{float(ref.reshape(-1)[worst])!r}, pairs {float(got.reshape(-1)[worst])!r}, "
                        f"allowed {tol.reshape(-1)[worst]:.3g}")
    if problems:
        raise AssertionError(f"{what} differs from the 64-bit reference: {'; '.join(problems)}")
    return sharper


def compare_pairs_on_adversarial_inputs(
    original: ir.Module,
    converted: ir.Module,
    ranges: dict[int, tuple[int, int]],
    what: str,
    bound: float,
    of_magnitudes: bool = False,
) -> None:
    """Run the 64-bit program and its conversion under ``float_policy="pairs"``
    on every adversarial input set (float64 arguments from
    :data:`PAIR_FLOATS`, given as packed pairs): integer and boolean outputs
    must be equal, bit for bit, and each float64 output, joined from its
    pair, must be within ``bound`` u**2 of the 64-bit one's magnitude
    (:func:`compare_pairs`) -- or, ``of_magnitudes``, of the magnitude of its
    computation: the 64-bit program run on the inputs' magnitudes (a sum's
    or a dot's bound, relative to the sum of its terms' magnitudes).  Fails
    unless some element is compared more sharply than f32 could meet."""
    run_original = compile_module(original, strict=False)
    run_converted = compile_module(converted, strict=True)
    ins, outs = main_signature(original), main_signature(converted)
    pair_in = _pair_parts(ins[0], outs[0])
    pair_out = _pair_parts(ins[1], outs[1])
    wide_out = [j for j, spec in enumerate(ins[1]) if np.dtype(spec.dtype) == np.float64]
    assert pair_out == wide_out, f"{what}: float64 results {wide_out}, of which {pair_out} come back as pairs"
    sharper = 0
    for args in adversarial_inputs(original, ranges, floats=PAIR_FLOATS):
        ref = run_original(args)
        got = run_converted(pair_inputs(args, pair_in))
        scale = run_original([np.abs(a) if a.dtype == np.float64 else a for a in args]) if of_magnitudes else ref
        shown = f"{what} on inputs {[a.tolist() for a in args]}"
        for j in pair_out:
            sharper += compare_pairs(ref[j], join_pairs(got[j]), scale[j], bound, f"{shown}, result #{j}")
        rest = [j for j in range(len(ref)) if j not in pair_out]
        compare_outputs([ref[j] for j in rest], [got[j] for j in rest], what=shown)
    assert sharper or not pair_out, f"{what}: no element compared more sharply than f32 rounding would meet"
