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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.extend.backend
import numpy as np

from ..errors import InputError
from ..ir._mlir import ir, make_context
from ..ir.types import (
    DTYPE_KINDS,
    F32_MAX as _F32_MAX,
    F64_MAX as _F64_MAX,
    I32 as _I32,
    I64 as _I64,
    U32 as _U32,
    U64 as _U64,
)
from ..kinds import RangePolicy
from ..options import Options
from ..report import DemotionReport, counted
from ..spec.walk import entry_function, functions, is_public
from ..targets import as_target
from ..transforms.demote import demote
from ..transforms.emulate import join_words, split_words
from ..transforms.scan import check
from ._compat import device_list, enable_x64, sharding_for

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

#: The 32-bit dtype each 64-bit dtype becomes in a demoted program.
from ..ir.types import NARROWED_DTYPES  # noqa: E402

# MLIR element type spelling -> numpy dtype name.  bfloat16 and the small
# float types come from ml_dtypes (a jax dependency) through jax.numpy.
_ELEMENT_DTYPES: Mapping[str, str] = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "si8": "int8",
    "si16": "int16",
    "si32": "int32",
    "si64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
}


# --------------------------------------------------------------------------
# Module access
# --------------------------------------------------------------------------


def parse_module(module_or_text: ir.Module | str | bytes) -> ir.Module:
    """Return ``module_or_text`` as an ``ir.Module``.

    Text (or bytecode) is parsed into a fresh context from
    :func:`no64._mlir.make_context`; an ``ir.Module`` is returned unchanged.

    Raises:
      no64.InputError: the text does not parse.
    """
    if isinstance(module_or_text, ir.Module):
        return module_or_text
    with make_context():
        try:
            return ir.Module.parse(module_or_text)
        except ir.MLIRError as err:
            raise InputError(f"<memory>: the module does not parse: {err}") from None


def _module_text(module: ir.Module) -> str:
    """Print ``module`` with its debug locations, the form XLA compiles."""
    return module.operation.get_asm(enable_debug_info=True)


def _main_function(module: ir.Module) -> ir.Operation:
    """Return the entry function (:func:`no64.spec.walk.entry_function`),
    refusing a guess among several public functions."""
    main = entry_function(module.operation, strict=True)
    if main is not None:
        return main
    public = [fn for fn in functions(module.operation) if is_public(fn)]
    raise ValueError(
        "module has no @main function and "
        f"{'no' if not public else 'more than one'} public function to run"
    )


@dataclass(frozen=True)
class ArraySpec:
    """Shape, dtype and name of one argument or result of a module's entry."""

    shape: tuple[int, ...]
    dtype: np.dtype
    name: str


def _element_dtype(element_type: ir.Type) -> np.dtype:
    spelling = str(element_type)
    try:
        return np.dtype(getattr(jax.numpy, _ELEMENT_DTYPES[spelling]))
    except KeyError:
        raise ValueError(f"no numpy dtype for element type {spelling}") from None


def _array_spec(t: ir.Type, name: str) -> ArraySpec:
    if not isinstance(t, ir.RankedTensorType):
        raise ValueError(f"{name} has type {t}; only ranked tensors can be run")
    tensor = t
    if not tensor.has_static_shape:
        raise ValueError(f"{name} has dynamic shape {t}; only static shapes can be run")
    return ArraySpec(tuple(tensor.shape), _element_dtype(tensor.element_type), name)


def main_signature(module: ir.Module) -> tuple[list[ArraySpec], list[ArraySpec]]:
    """Return the argument and result specs of the module's entry function.

    Result names come from JAX's ``jax.result_info`` attribute where present
    (e.g. ``"[1]['w']"``), else ``"result #i"``.
    """
    main = _main_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    result_attrs = (
        ir.ArrayAttr(main.attributes["res_attrs"]) if "res_attrs" in main.attributes else None
    )
    ins = [_array_spec(t, f"argument #{i}") for i, t in enumerate(ftype.inputs)]
    outs = []
    for i, t in enumerate(ftype.results):
        name = f"result #{i}"
        if result_attrs is not None:
            attrs = ir.DictAttr(result_attrs[i])
            if "jax.result_info" in attrs:
                info = ir.StringAttr(attrs["jax.result_info"]).value
                name = f"result #{i} {info!r}" if info else name
        outs.append(_array_spec(t, name))
    return ins, outs


def _python_callbacks(module: ir.Module) -> list[str]:
    """Targets of ``custom_call`` ops that call back into Python.

    ``jax.debug.print``, ``pure_callback`` and ``io_callback`` lower to such
    calls; the Python functions they name live only in the process that
    lowered the module, so the module cannot run from its text.
    """
    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if "call_target_name" in op.attributes:  # a custom call
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if "callback" in target:
                found.append(target)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _int_module_attr(module: ir.Module, name: str) -> int | None:
    attrs = module.operation.attributes
    if name not in attrs:
        return None
    return ir.IntegerAttr(attrs[name]).value


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def _cpu_backend() -> Any:
    return jax.extend.backend.get_backend("cpu")


def compile_module(module_or_text: ir.Module | str, device: Any = None) -> Any:
    """Compile a StableHLO module (or its text) for one device, the first
    CPU device by default, as it is: no64 does not convert it.  Returns the
    backend's loaded executable (``execute(arguments)`` runs it on arrays
    placed on ``device``); the benchmarks time it this way."""
    if device is None:
        device = _cpu_backend().devices()[0]
    text = module_or_text if isinstance(module_or_text, str) else _module_text(module_or_text)
    backend = jax.extend.backend.get_backend(device.platform)
    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=1, device_assignment=np.array([[device]], dtype=object))
    return backend.compile_and_load(text, executable_devices=device_list((device,)), compile_options=options)


def _check_args(args: Sequence[Any], specs: Sequence[ArraySpec]) -> list[np.ndarray]:
    if len(args) != len(specs):
        raise ValueError(f"module takes {len(specs)} arguments, got {len(args)}")
    arrays = []
    for spec, arg in zip(specs, args):
        a = np.asarray(arg)
        if a.shape != spec.shape or a.dtype != spec.dtype:
            raise ValueError(
                f"{spec.name}: module expects {spec.dtype}{list(spec.shape)}, "
                f"got {a.dtype}{list(a.shape)}"
            )
        arrays.append(a)
    return arrays


def run_module(
    module_or_text: ir.Module | str | bytes,
    args: Sequence[Any],
    *,
    num_partitions: int | None = None,
    devices: Sequence[Any] | None = None,
    strict: bool = True,
    keep: Sequence[str] = (),
) -> list[np.ndarray]:
    """Compile a StableHLO module on the JAX CPU backend and run it.

    Args:
      module_or_text: an ``ir.Module`` or its text/bytecode.
      args: one array per argument of the entry function; shapes and dtypes
        must match the entry signature exactly (no implicit casts).
      num_partitions: SPMD partitions to compile for.  Defaults to
        ``len(devices)`` when devices are given, else the module's
        ``mhlo.num_partitions`` attribute, else 1.
      devices: the CPU devices to run on (default: the first
        ``num_partitions`` CPU devices).  More than one needs
        ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before JAX
        initialises its CPU backend.
      strict: call :func:`no64.check` first, as a device without 64-bit
        types would, so a module that still holds a 64-bit value is refused
        with :class:`no64.Remaining64BitError`.
      keep: 64-bit element types the device has natively (``"i64"``, ...:
        a target's ``native``), allowed by that check.

    Returns:
      One numpy array per result, each the global (unsharded) value.
    """
    module = parse_module(module_or_text)
    if strict:
        check(module, keep=keep)
    in_specs, out_specs = main_signature(module)
    arrays = _check_args(args, in_specs)
    callbacks = _python_callbacks(module)
    if callbacks:
        raise ValueError(
            f"the module calls back into Python ({', '.join(sorted(set(callbacks)))}, from "
            "jax.debug.print, pure_callback or io_callback); those callbacks exist only in "
            "the process that lowered it, so it cannot be run from its text"
        )

    num_replicas = _int_module_attr(module, "mhlo.num_replicas") or 1
    if num_replicas != 1:
        raise ValueError(f"modules with {num_replicas} replicas are not supported; use partitions")
    if devices is not None:
        devices = list(devices)
        if num_partitions is not None and num_partitions != len(devices):
            raise ValueError(f"num_partitions={num_partitions} but {len(devices)} devices given")
        num_partitions = len(devices)
    if num_partitions is None:
        num_partitions = _int_module_attr(module, "mhlo.num_partitions") or 1
    backend = _cpu_backend()
    if devices is None:
        available = backend.devices()
        if num_partitions > len(available):
            raise ValueError(
                f"module needs {num_partitions} devices but the CPU backend has "
                f"{len(available)}; set XLA_FLAGS=--xla_force_host_platform_device_count="
                f"{num_partitions} before importing jax"
            )
        devices = available[:num_partitions]

    options = jax.extend.backend.get_compile_options(
        num_replicas=1,
        num_partitions=num_partitions,
        device_assignment=np.array(devices, dtype=object).reshape(1, num_partitions),
    )
    executable = backend.compile_and_load(
        _module_text(module),
        executable_devices=device_list(devices),
        compile_options=options,
    )

    in_shardings = executable.get_parameter_shardings() or [None] * len(arrays)
    out_shardings = executable.get_output_shardings() or [None] * len(out_specs)
    with enable_x64(True):  # keep 64-bit inputs 64-bit on the device
        inputs = [
            jax.device_put(a, sharding_for(devices, s)) for a, s in zip(arrays, in_shardings)
        ]
        results = executable.execute_sharded(inputs)
        shards = results.disassemble_into_single_device_arrays()
        outputs = []
        for spec, per_device, s in zip(out_specs, shards, out_shardings):
            if len(per_device) == 1:
                outputs.append(np.asarray(per_device[0]))
                continue
            whole = jax.make_array_from_single_device_arrays(
                spec.shape, sharding_for(devices, s), per_device
            )
            outputs.append(np.asarray(whole))
    for spec, out in zip(out_specs, outputs):
        if out.shape != spec.shape or out.dtype != spec.dtype:
            raise AssertionError(
                f"{spec.name}: module declares {spec.dtype}{list(spec.shape)} "
                f"but execution returned {out.dtype}{list(out.shape)}"
            )
    return outputs


# --------------------------------------------------------------------------
# Lowering
# --------------------------------------------------------------------------


def _lower(fn: Callable[..., Any], args: Sequence[Any], jit_kwargs: Mapping[str, Any]) -> Any:
    kwargs = {"keep_unused": True, **jit_kwargs}
    with enable_x64(True):
        lowered = jax.jit(fn, **kwargs).lower(*args)
    return lowered


def _reparse(module: ir.Module) -> ir.Module:
    """Copy a module (with debug locations) into a fresh no64 context."""
    return parse_module(_module_text(module))


def lower_x64(fn: Callable[..., Any], *args: Any, **jit_kwargs: Any) -> ir.Module:
    """Lower ``fn`` with 64-bit types enabled to a StableHLO module.

    ``args`` are example arguments (arrays or pytrees of arrays); ``jit_kwargs``
    go to :func:`jax.jit` (e.g. ``in_shardings``).  Unused arguments are kept
    (``keep_unused=True`` unless overridden) so the module takes exactly the
    flattened arguments.  The module carries JAX's debug locations and lives in
    its own context from :func:`no64._mlir.make_context`, so no64 can rewrite
    it without touching JAX's.
    """
    return _reparse(_lower(fn, args, jit_kwargs).compiler_ir("stablehlo"))


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


def narrow_dtype(dtype: Any) -> np.dtype:
    """The dtype a value of ``dtype`` has after demotion (unchanged if not 64-bit)."""
    d = np.dtype(dtype)
    return NARROWED_DTYPES.get(d, d)


def narrow_inputs(args: Sequence[Any]) -> list[np.ndarray]:
    """Cast each input to its narrowed dtype; integers must fit exactly.

    Raises ``ValueError`` when a 64-bit integer input does not fit its 32-bit
    type: such an input cannot be given to the demoted program unchanged.
    """
    out = []
    for i, arg in enumerate(args):
        a = np.asarray(arg)
        target = narrow_dtype(a.dtype)
        if target == a.dtype:
            out.append(a)
            continue
        if np.issubdtype(target, np.integer) and a.size:
            info = np.iinfo(target)
            if a.min() < info.min or a.max() > info.max:
                raise ValueError(
                    f"input #{i} ({a.dtype}) has values in [{a.min()}, {a.max()}], "
                    f"outside {target}"
                )
        out.append(a.astype(target))
    return out


@dataclass(frozen=True)
class Tolerance:
    """How a floating-point output of a demoted program is compared.

    An element ``d`` of the demoted output passes against the reference
    element ``r`` when::

        |d - r| <= rtol * |r| + atol

    where ``atol`` defaults to ``rtol * max|ref|`` over the output's finite,
    non-sentinel elements (sentinels must map exactly instead).  The
    relative term bounds the error of each element; the ``atol`` term makes
    the test norm-wise, so elements that are small only through cancellation
    (a gradient entry near zero, a centred value) are measured against the
    output's scale.  That is how f32 rounding error behaves: a sum of ``n``
    terms is off by about ``n * eps * sum|terms|``, not by ``eps`` times the
    (possibly tiny) result.

    The default ``rtol=1e-4`` is about 840 f32 ulps (eps = 1.19e-7): loose
    enough for the few hundred roundings of a training step, a transformer
    gradient or an FFT, tight enough that a wrong rewrite (a dropped term, a
    wrong constant, a truncated integer) fails by orders of magnitude.
    Non-finite values must sit at the same places with the same value (NaN
    matches NaN, ``inf`` matches ``inf`` of the same sign).  Complex outputs
    use the modulus of the difference.  Integer and boolean outputs must be
    equal.
    """

    rtol: float = 1e-4
    atol: float | None = None

    def atol_for(self, reference: np.ndarray) -> float:
        """The absolute tolerance used for ``reference``."""
        if self.atol is not None:
            return self.atol
        finite = np.abs(reference[np.isfinite(reference)])
        return self.rtol * float(finite.max()) if finite.size else 0.0


def expected_after_demotion(reference: np.ndarray) -> np.ndarray:
    """The values a correct demoted program returns for ``reference``.

    Equal to ``reference`` (widened to int64/uint64/float64/complex128 for
    comparison) except that sentinels map to their 32-bit counterparts, as
    demotion maps sentinel constants: ``INT64_MAX``/``INT64_MIN`` to
    ``INT32_MAX``/``INT32_MIN``, ``UINT64_MAX`` to ``UINT32_MAX`` and
    float64's largest finite value (either sign) to float32's.  A masked
    ``min`` whose row is all masked returns ``INT64_MAX`` in the reference,
    and should return ``INT32_MAX`` after demotion.  Outputs of other dtypes
    are only widened.  This is written independently of
    :mod:`no64.transforms.constants`, so the check does not trust the code it checks.
    """
    if reference.dtype == np.int64:
        out = reference.copy()
        out[reference == _I64.max] = _I32.max
        out[reference == _I64.min] = _I32.min
        return out
    if reference.dtype == np.uint64:
        out = reference.copy()
        out[reference == _U64.max] = _U32.max
        return out
    if reference.dtype == np.bool_ or np.issubdtype(reference.dtype, np.signedinteger):
        return reference.astype(np.int64)
    if np.issubdtype(reference.dtype, np.unsignedinteger):
        return reference.astype(np.uint64)

    def real(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.float64)
        if reference.dtype in (np.float64, np.complex128):
            v[v == _F64_MAX] = _F32_MAX
            v[v == -_F64_MAX] = -_F32_MAX
        return v

    if np.iscomplexobj(reference):
        return real(reference.real) + 1j * real(reference.imag)
    return real(reference)


def _float_sentinels(reference: np.ndarray) -> np.ndarray:
    """Where a float64/complex128 reference holds +-finfo(float64).max."""
    if reference.dtype == np.float64:
        return np.abs(reference) == _F64_MAX
    if reference.dtype == np.complex128:
        return (np.abs(reference.real) == _F64_MAX) | (np.abs(reference.imag) == _F64_MAX)
    return np.zeros(reference.shape, dtype=bool)


@dataclass
class OutputComparison:
    """How one output of the demoted program compares with the reference."""

    index: int
    name: str
    reference_dtype: np.dtype
    demoted_dtype: np.dtype
    shape: tuple[int, ...]
    exact: bool  # compared for equality (integers, booleans)
    max_abs_error: float
    max_rel_error: float  # max |d - r| / |r| over finite r != 0
    rtol: float = 0.0
    atol: float = 0.0
    mismatches: int = 0
    worst: str = ""  # the worst elements, when there are mismatches

    @property
    def ok(self) -> bool:
        """Whether every element is within tolerance."""
        return self.mismatches == 0

    def __str__(self) -> str:
        kind = "exact" if self.exact else f"rtol={self.rtol:g} atol={self.atol:.3g}"
        status = "ok" if self.ok else counted(self.mismatches, "mismatching element")
        return (
            f"{self.name}: {self.reference_dtype}->{self.demoted_dtype}{list(self.shape)} "
            f"max_abs={self.max_abs_error:.3g} max_rel={self.max_rel_error:.3g} ({kind}) {status}"
        )


def _worst(ref: np.ndarray, got: np.ndarray, err: np.ndarray, bad: np.ndarray, limit: int = 5) -> str:
    flat_bad = np.flatnonzero(bad.reshape(-1))
    order = flat_bad[np.argsort(-np.nan_to_num(err.reshape(-1)[flat_bad], nan=np.inf))]
    shown = []
    for flat in order[:limit]:
        idx = tuple(int(i) for i in np.unravel_index(flat, ref.shape)) if ref.shape else ()
        shown.append(
            f"at {idx}: reference {ref.reshape(-1)[flat]!r}, demoted {got.reshape(-1)[flat]!r}"
        )
    return "; ".join(shown)


def compare_output(
    reference: np.ndarray,
    demoted: np.ndarray,
    *,
    name: str = "output",
    index: int = 0,
    tolerance: Tolerance | None = None,
    wide: bool = False,
) -> OutputComparison:
    """Compare one demoted output with its 64-bit reference (no raising).

    The demoted output must have the reference's shape and its narrowed dtype
    (else ``AssertionError``).  Sentinels are mapped first
    (:func:`expected_after_demotion`); integers and booleans must then be
    equal, floats within ``tolerance`` (:class:`Tolerance`).  A ``wide``
    output (an emulated one, joined from its words) must keep the
    reference's 64-bit dtype and equal it bit for bit, sentinels included.
    """
    tol = tolerance or Tolerance()
    reference = np.asarray(reference)
    demoted = np.asarray(demoted)
    expected_dtype = reference.dtype if wide else narrow_dtype(reference.dtype)
    if demoted.dtype != expected_dtype or demoted.shape != reference.shape:
        raise AssertionError(
            f"{name}: the reference is {reference.dtype}{list(reference.shape)}, so the "
            f"demoted program should return {expected_dtype}{list(reference.shape)}, "
            f"but it returned {demoted.dtype}{list(demoted.shape)}"
        )
    expected = reference if wide else expected_after_demotion(reference)
    if not np.issubdtype(reference.dtype, np.inexact):
        got = demoted.astype(expected.dtype)
        bad = expected != got
        err = np.abs(expected.astype(np.float64) - got.astype(np.float64))
        rel = err / np.maximum(np.abs(expected.astype(np.float64)), 1.0)
        return OutputComparison(
            index, name, reference.dtype, demoted.dtype, reference.shape, True,
            float(err.max(initial=0.0)), float(rel.max(initial=0.0)),
            mismatches=int(bad.sum()),
            worst=_worst(reference, demoted, err, bad) if bad.any() else "",
        )
    got = demoted.astype(expected.dtype)
    finite = np.isfinite(expected)
    both_finite = finite & np.isfinite(got)
    sentinel = _float_sentinels(reference)
    with np.errstate(invalid="ignore", over="ignore"):
        same_nonfinite = np.isnan(expected) & np.isnan(got) | (~finite & (expected == got))
        err = np.where(both_finite, np.abs(got - expected), np.where(same_nonfinite, 0.0, np.inf))
        magnitude = np.where(finite, np.abs(expected), 0.0)
        rel = np.where(both_finite & (magnitude > 0), err / np.where(magnitude > 0, magnitude, 1.0), 0.0)
    # Sentinels must map exactly and do not set the output's scale.
    atol = tol.atol_for(expected[~sentinel])
    bad = ~(err <= tol.rtol * magnitude + atol) | (sentinel & (err != 0))
    return OutputComparison(
        index, name, reference.dtype, demoted.dtype, reference.shape, False,
        float(err.max(initial=0.0)), float(rel.max(initial=0.0)),
        rtol=tol.rtol, atol=atol, mismatches=int(bad.sum()),
        worst=_worst(reference, demoted, err, bad) if bad.any() else "",
    )


def compare_outputs(
    reference: Sequence[np.ndarray],
    demoted: Sequence[np.ndarray],
    *,
    names: Sequence[str] | None = None,
    tolerance: Tolerance | None = None,
    what: str = "demoted program",
    wide: Sequence[int] = (),
) -> list[OutputComparison]:
    """Compare every output (see :func:`compare_output`); raise on any mismatch.

    Raises:
      AssertionError: naming each mismatching output, its largest errors and
        tolerance, and its worst elements.
    """
    if len(reference) != len(demoted):
        raise AssertionError(
            f"{what} returned {len(demoted)} outputs, the reference {len(reference)}"
        )
    names = list(names) if names is not None else [f"result #{i}" for i in range(len(reference))]
    results = [
        compare_output(r, d, name=n, index=i, tolerance=tolerance, wide=i in wide)
        for i, (n, r, d) in enumerate(zip(names, reference, demoted))
    ]
    failures = [o for o in results if not o.ok]
    if failures:
        lines = [f"{what} differs from the 64-bit reference:"]
        for o in failures:
            lines.append(f"  {o}")
            lines.append(f"    worst: {o.worst}")
        raise AssertionError("\n".join(lines))
    return results


@dataclass
class ComparisonResult:
    """Outcome of :func:`compare_with_reference`.

    ``original`` is the 64-bit module, ``demoted`` the rewritten copy that
    ran, ``report`` what :func:`no64.demote` returned; the value lists hold
    the flat outputs of both runs.
    """

    outputs: list[OutputComparison]
    report: DemotionReport
    original: ir.Module
    demoted: ir.Module
    reference_values: list[np.ndarray] = field(repr=False)
    demoted_values: list[np.ndarray] = field(repr=False)

    @property
    def max_abs_error(self) -> float:
        """Largest absolute error over all outputs."""
        return max((o.max_abs_error for o in self.outputs), default=0.0)

    @property
    def max_rel_error(self) -> float:
        """Largest elementwise relative error over all outputs."""
        return max((o.max_rel_error for o in self.outputs), default=0.0)

    def summary(self) -> str:
        """One line per output."""
        return "\n".join(str(o) for o in self.outputs)


def _word_pairs(before: Sequence[ArraySpec], after: Sequence[ArraySpec]) -> list[int]:
    out = []
    for j, (b, a) in enumerate(zip(before, after)):
        if np.dtype(b.dtype).itemsize == 8 and np.dtype(b.dtype).kind in "iu" \
                and tuple(a.shape) == tuple(b.shape) + (2,) and np.dtype(a.dtype).itemsize == 4:
            out.append(j)
    return out


def word_pair_outputs(original: ir.Module, converted: ir.Module) -> list[int]:
    """Indices of the entry function's results that the conversion returns
    as 32-bit word pairs: a 64-bit integer result of shape ``S`` that became
    a 32-bit one of shape ``S x 2``."""
    return _word_pairs(main_signature(original)[1], main_signature(converted)[1])


def word_pair_inputs(original: ir.Module, converted: ir.Module) -> list[int]:
    """Indices of the entry function's arguments that enter the converted
    module as 32-bit word pairs (``policy="exact"``: a 64-bit integer
    argument of shape ``S`` that became a 32-bit one of shape ``S x 2``)."""
    return _word_pairs(main_signature(original)[0], main_signature(converted)[0])


def converted_inputs(args: Sequence[Any], words: Sequence[int] = (),
                     keep: Sequence[str] = ()) -> list[np.ndarray]:
    """The inputs of a converted module for the original's ``args``: the
    arguments at ``words`` (``report.emulated_inputs``) as their 32-bit word
    pairs (:func:`no64.split_words`), those of a 64-bit type the module
    kept (``keep``: ``report.kept_native``) as they are, every other one
    cast to its narrowed dtype (:func:`narrow_inputs`: its integers must
    fit)."""
    wide = set(words)
    out = []
    for i, arg in enumerate(args):
        if i in wide:
            out.append(split_words(np.asarray(arg)))
        elif DTYPE_KINDS.get(np.asarray(arg).dtype) in keep:
            out.append(np.asarray(arg))
        else:
            try:
                out.extend(narrow_inputs([arg]))
            except ValueError as exc:
                raise ValueError(str(exc).replace("input #0", f"input #{i}", 1)) from None
    return out


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
    lowered = _lower(fn, jax.tree_util.tree_unflatten(treedef, same), jit_kwargs or {})
    original = _reparse(lowered.compiler_ir("stablehlo"))
    in_specs, out_specs = main_signature(original)
    if len(in_specs) != len(same):
        raise ValueError(
            f"the lowered module takes {len(in_specs)} arguments but {len(same)} "
            "array leaves were given (closed-over constants passed as arguments?)"
        )
    demoted = _reparse(original)
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
