"""Run StableHLO modules on the JAX CPU backend and check demoted programs.

This is the JAX layer of no64: the core (:mod:`no64.transforms.scan`, :mod:`no64.transforms.demote`)
never imports JAX, while this module compiles modules with the XLA CPU client
that ships in jaxlib, executes them, and compares a demoted program with its
64-bit original on the same inputs.

* :func:`run_module` compiles an ``ir.Module`` (or its text) and runs it on
  numpy inputs, sharded over several CPU devices when the module asks for more
  than one partition.  With ``strict=True`` it first calls :func:`no64.check`,
  standing in for a device without 64-bit types, which rejects any module that
  still holds a 64-bit value.
* :func:`lower_x64` lowers a JAX function with ``jax_enable_x64`` on, i.e. the
  64-bit reference program, to a StableHLO module with debug locations, parsed
  into a context from :func:`no64._mlir.make_context`.
* :func:`compare_with_reference` runs the 64-bit original and the demoted
  program on the same inputs and compares every output (see
  :class:`Tolerance` for how floats are compared).

Sharded execution follows what JAX does with a compiled SPMD executable: every
input is placed on the devices with the sharding the compiled executable
expects for that parameter, the executable runs once over all devices, and
every output is assembled back into one global array from its per-device
shards.

The package, by job: ``modules`` (modules parsed, compiled and run on the
CPU backend, functions lowered with x64 on) and ``compare`` (inputs
narrowed, outputs compared, word pairs at a converted program's boundary);
:func:`compare_with_reference`, which composes them, is here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from ...ir.types import DTYPE_KINDS, NARROWED_DTYPES
from ...kinds import RangePolicy
from ...options import Options
from ...targets import as_target
from ...transforms.demote import demote
from ...transforms.emulate import join_words
from ...transforms.scan import check
from .compare import (
    ComparisonResult,
    OutputComparison,
    Tolerance,
    compare_output,
    compare_outputs,
    converted_inputs,
    expected_after_demotion,
    narrow_dtype,
    narrow_inputs,
    word_pair_inputs,
    word_pair_outputs,
)
from .modules import (
    ArraySpec,
    compile_module,
    lower_jit_x64,
    lower_x64,
    main_signature,
    parse_module,
    reparse,
    run_module,
)

__all__ = [
    "ArraySpec",
    "ComparisonResult",
    "NARROWED_DTYPES",
    "OutputComparison",
    "Tolerance",
    "compare_output",
    "compare_outputs",
    "compare_with_reference",
    "compile_module",
    "converted_inputs",
    "expected_after_demotion",
    "lower_x64",
    "main_signature",
    "narrow_dtype",
    "narrow_inputs",
    "parse_module",
    "run_module",
    "word_pair_inputs",
    "word_pair_outputs",
]


def compare_with_reference(
    fn: Callable[..., Any],
    args: Sequence[Any],
    *,
    jit_kwargs: Mapping[str, Any] | None = None,
    integer_policy: str = "error",
    policy: str = "default",
    tolerance: Tolerance | None = None,
    num_partitions: int | None = None,
    target: str | None = None,
) -> ComparisonResult:
    """Check that demoting ``fn``'s 64-bit program keeps its results.

    Lowers ``fn(*args)`` with 64-bit types on (:func:`lower_x64`), runs that
    module on the CPU as the reference, demotes a copy with
    :func:`no64.demote`, checks it with :func:`no64.check`, and runs it
    through :func:`run_module` (strict) on the inputs cast to their narrowed
    dtypes (f64->f32, i64->i32, u64->u32, c128->c64).  Both programs see the
    same input values: each 64-bit float input is first rounded to its
    32-bit type, so only the programs differ, not their inputs.

    ``args`` are the positional arguments of ``fn`` and may be pytrees;
    they are flattened as ``jax.jit`` flattens them.  ``jit_kwargs`` go to
    ``jax.jit`` (shardings, ...).  Outputs are compared by
    :func:`compare_outputs`: integers and booleans exactly, floats within
    ``tolerance``, sentinels mapped as demotion maps them; outputs that
    come back as 32-bit word pairs (``report.emulated_outputs``) are joined
    into 64-bit integers first and compared bit for bit.  Under
    ``policy="exact"`` 64-bit integer inputs are taken whole: those that
    enter the converted module as word pairs (``report.emulated_inputs``)
    are split into them (:func:`converted_inputs`).  With a ``target``
    (:mod:`no64.targets`) the program is converted for it: the 64-bit
    types it has natively are kept, and inputs of those types are taken
    whole.

    Raises:
      AssertionError: an output differs, naming the output, its errors and
        its worst elements.
      ValueError: a 64-bit integer input does not fit its 32-bit type.
      no64.No64Error: demotion refused the program or left 64-bit values.
    """
    leaves, treedef = jax.tree_util.tree_flatten(list(args))
    flat = [np.asarray(a) for a in leaves]
    whole = policy == RangePolicy.EXACT
    native = frozenset(as_target(target).native) if target is not None else frozenset()
    same = [a if (whole and a.dtype in (np.int64, np.uint64)) or DTYPE_KINDS.get(a.dtype) in native
            else narrow_inputs([a])[0].astype(a.dtype) for a in flat]
    lowered = lower_jit_x64(fn, jax.tree_util.tree_unflatten(treedef, same), jit_kwargs or {})
    original = reparse(lowered.compiler_ir("stablehlo"))
    in_specs, out_specs = main_signature(original)
    if len(in_specs) != len(same):
        raise ValueError(
            f"the lowered module takes {len(in_specs)} arguments but {len(same)} "
            "array leaves were given (closed-over constants passed as arguments?)"
        )
    demoted = reparse(original)
    report = demote(demoted, Options(integer_policy=integer_policy, policy=policy, target=target))
    check(demoted, keep=report.kept_native)

    reference_values = run_module(original, same, num_partitions=num_partitions, strict=False)
    demoted_values = run_module(demoted, converted_inputs(same, report.emulated_inputs, report.kept_native),
                                num_partitions=num_partitions, strict=True, keep=report.kept_native)
    for j in report.emulated_outputs:
        demoted_values[j] = join_words(demoted_values[j])

    outputs = compare_outputs(
        reference_values,
        demoted_values,
        names=[spec.name for spec in out_specs],
        tolerance=tolerance,
        what=f"demoted program of {getattr(fn, '__name__', repr(fn))}",
        # emulated outputs, and those of a type the target has: 64-bit, bit for bit
        wide=[*report.emulated_outputs, *(i for i, r in enumerate(reference_values)
                                          if DTYPE_KINDS.get(np.asarray(r).dtype) in report.kept_native)],
    )
    return ComparisonResult(outputs, report, original, demoted, reference_values, demoted_values)
