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
from collections.abc import Callable, Sequence

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
from support import enable_x64, ir

I32 = np.iinfo(np.int32)


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
    m: ir.Module, ranges: dict[int, tuple[int, int]], limit: int = 256
) -> list[list[np.ndarray]]:
    """Input sets for the entry function: each integer argument takes every
    special value of its range, alone (filling the tensor) and mixed (the
    values spread over the tensor, shifted per argument), so every pair of
    extremes meets in some element.  At most ``limit`` of the combinations
    are taken (evenly spread, the last one included)."""
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
            per_arg.append([0.0, 1.5, -2.25])
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
