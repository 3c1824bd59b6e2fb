"""The x64 meaning of a program no64 runs 32-bit.

Under the compile hook no64 turns ``jax_enable_x64`` off before anything is
traced (a platform without 64-bit types cannot hold 64-bit arrays), and
:func:`no64.jit` traces with x64 off: JAX then computes in 32 bits, and a
program that asked for x64 because its integers need 64 bits (an ``int64``
``cumsum`` past 2**31, a sum of upcast ``int32`` values, a 64-bit hash) would
wrap silently.  This module gives no64 the program's *x64 meaning* to judge
the 32-bit program against:

* when JAX traces a top-level ``jit`` for a program that asked for x64 (no64
  turned x64 off for it, or the call is :func:`no64.jit`'s), the function is
  traced once, with x64 on, for the caller's argument dtypes (its x64
  program), and JAX's 32-bit trace is a replay of it (:mod:`no64.jax.replay`):
  the user's Python runs once (``_trace_for_jit``; JAX caches the trace per
  signature; where the replay cannot be had, the function is traced with x64
  off as well); under the pairs float policy its float64 host arguments
  enter as their ``S x 2`` float32 pairs, which a variant of the function
  takes back to float64 in the x64 program (``float64_as_pairs``);
* when JAX lowers the 32-bit trace, the x64 trace is remembered beside the
  module JAX made, and lowered only when that module reaches the backend;
* the hook then judges the x64 module (:func:`no64.jax.hook.prepare_with_meaning`):
  every integer the
  x64 program computes in 64 bits is proven to fit in 32 bits, or reported
  at the user's line (:class:`no64.UnprovenIntegerWarning`, the compile
  record and the audit) under the default policy, refused under ``strict``,
  and computed exactly in 32-bit word pairs under ``exact`` -- where the
  converted x64 module is what the backend compiles, behind the 32-bit
  signature JAX lowered, and an output not proven to fit in the 32-bit
  array the user receives is refused (:class:`no64.OutputRangeError`).

What has no x64 meaning here: a trace whose x64 version fails or differs in
its signature (``kept`` arguments, effects other than host callbacks, whose
boundary :mod:`no64.jax.callbacks` makes 32-bit), programs traced
inside other transformations (only top-level ``jit`` calls are traced
with x64 on), and 32-bit ``jax.Array`` values made from 64-bit data before the call
(their x64 meaning is not known; pass the host data to the jitted function).

The package, by job (each module imports only those above it): ``judge``
(what is unproven, the output errors, the warnings), ``records`` (what is
remembered between the trace, the lowering and the hook, and the modules'
x64 meanings as the hook asks for them), ``eager`` (calls outside any jit:
eager primitives, samplers, transformations), ``variants`` (one trace per
x64 signature, results marked with their x64 dtypes) and ``trace`` (the x64
trace of a jit call and its lowering); :func:`install` puts them into JAX.
"""

from __future__ import annotations

from .. import host, interception
from .._compat import (
    after_python_jit_call,
    watch_explicit_dtypes,
    widen_traced_constants,
    wrap_ahead_of_time_trace,
    wrap_jit_impl,
    wrap_jit_lower,
    wrap_jit_trace,
    wrap_numpy_function,
    wrap_primitive_callable,
    wrap_random_samplers,
    wrap_vmap,
)
from .eager import (
    conversion_in_a_jit,
    eager_sampler,
    eager_with_wide_operands,
    note_explicit_dtype,
    note_wide_host_data,
    sampler_in_a_jit,
    unjudged_jit_with_wide_operands,
    vmap_in_a_jit,
)
from .judge import (
    NoMeaning,
    checked_output_error,
    clear_warned,
    meets_sentinel,
    no_meaning,
    output_error,
    refuse_or_warn_overflow,
    unproven,
    warn_float_hints,
    warn_unproven,
)
from .records import (
    carry_host_callbacks,
    has_meaning,
    host_callbacks_of,
    lock,
    meaning_of,
    refuse_unless_proven,
    refuse_without_meaning,
    runnable_32bit,
    set_x64_meaning,
    with_x64_arguments,
)
from .trace import sentinels_judged, take_lower, take_trace
from .variants import after_call, ahead_of_time, constant_x64_dtype, install_call_variants, no_fast_path

__all__ = ["NoMeaning", "carry_host_callbacks", "checked_output_error", "clear_warned", "eager_sampler",
           "has_meaning", "host_callbacks_of", "install",
           "meaning_of", "no_meaning", "output_error", "refuse_or_warn_overflow", "refuse_without_meaning",
           "refuse_unless_proven",
           "runnable_32bit", "set_x64_meaning", "unproven", "warn_float_hints", "warn_unproven", "meets_sentinel",
           "with_x64_arguments"]



def install() -> None:
    """Put the x64 trace, its replay and the x64 lowering into JAX's ``jit``
    (idempotent): the points of the group ``intent`` of
    :data:`no64.jax.interception.POINTS`, in its order, and no64's own
    listeners of host narrowing."""
    with lock:
        interception.install("intent", {
            "jit-trace": lambda: wrap_jit_trace(take_trace),
            "jit-lower": lambda: wrap_jit_lower(take_lower),
            "x64-constants": lambda: widen_traced_constants(constant_x64_dtype),
            "call-variants": install_call_variants,
            "ahead-of-time-traces": lambda: wrap_ahead_of_time_trace(ahead_of_time),
            "primitive-callable": lambda: wrap_primitive_callable(eager_with_wide_operands),
            "explicit-dtypes": lambda: watch_explicit_dtypes(note_explicit_dtype),
            "after-jit-call": lambda: after_python_jit_call(after_call),
            "jit-impl": lambda: wrap_jit_impl(unjudged_jit_with_wide_operands),
            "samplers": lambda: wrap_random_samplers(sampler_in_a_jit),
            "astype": lambda: wrap_numpy_function("astype", conversion_in_a_jit),
            "vmap": lambda: wrap_vmap(vmap_in_a_jit),
        })
        host.veto_fast_path(no_fast_path)
        host.on_wide_narrowed(note_wide_host_data)
        host.judged_by_x64_module(sentinels_judged)
