"""Runtime of exact 64-bit integer emulation, op kind by op kind, on the CPU.

``no64.demote(module, policy="exact")`` carries every 64-bit integer value
that the range analysis cannot prove inside the 32-bit range as a pair of
32-bit words, so the converted program is bit-identical to the 64-bit one.
This benchmark shows what that costs.

Each entry of :data:`CASES` is one op kind: a JAX function of two int32
tensors (``--size`` elements, default 2**20) that casts them to int64 and
multiplies them by constants outside the 32-bit range (3_000_000_007 and
-2_999_999_929), so that the analysis cannot prove the operands fit and the
op under test is emulated; the op itself runs inside a ``jax.named_scope``
so that its StableHLO ops can be told apart from the rest.  For each entry
the function is lowered with x64 on and three programs are compiled on the
CPU backend, outside the timed region:

* **native i64**: the 64-bit module as JAX lowered it;
* **emulated**: the same module converted by ``no64.demote(policy="exact")``
  (checked free of 64-bit types; its 64-bit outputs come back as word pairs
  and are joined on the host);
* **int32**: where meaningful, the same function over int32 (x64 off, the
  constants wrapped to 32 bits), a floor: what the op costs when 32 bits
  are enough.

The emulated program's outputs are checked bit-identical to the native
program's on adversarial inputs (the int32 extremes, 0, +-1, values whose
products leave the 32-bit range, then uniform over the whole int32 range);
a mismatch stops the benchmark.  Then the programs are run alternately,
after a warm-up, ``--repeats`` times each; a sample times enough
executions (each one waited for with ``block_until_ready``) to last about
20 ms, and the table shows the median time of one execution.

Every timed program is the whole function: the casts and the multiplies
by constants that make the operands emulated, the op, and the outputs
(packed into ``S x 2`` word pairs where they are emulated).  The first row
(a multiply by a 64-bit constant) is the preparation of one operand alone,
a baseline to read the other rows against.  XLA fuses the elementwise
preparation and the op into one loop, in the native and in the emulated
program alike; the gather reads its operand through an
``optimization_barrier``, so that the product is computed once, not at
each gathered index.  The ops column
counts the StableHLO ops of the op under test (its named scope, constants
not counted) in the native module and in the emulated one.

``jnp.cumsum`` is taken over rows of ``--scan-length`` (default 4096)
elements.  An emulated cumulative reduction longer than 256 elements is
computed by doubling (``ceil(log2 n)`` two-element windows), because XLA's
CPU compiler in jaxlib 0.10 aborts the process (``std::bad_alloc``) on the
two-operand ``reduce_window`` it would otherwise be.

Divide and remainder run only where the op registry has their emulation
rule (``no64.spec.registry.spec_of(op).emulate``); otherwise their rows
say "not emulated".

``--target T`` converts for a device profile (:mod:`no64.targets`)
instead: for ``mtl`` or ``neuron-trn2``, which have 64-bit integers
natively, the converted program keeps them, emulates nothing (checked) and
should cost what the native one costs -- the emulation cost on such a
device is zero, which the ratio column then measures.

A second table times float64 carried as pairs of f32
(``no64.demote(module, float_policy="pairs")``), op kind by op kind, on two
float64 tensors of ``--size`` elements (``sum`` and ``dot`` over a
``--scan-length`` row, ``cumsum`` over rows of it): the pair program
against the native float64 program and the native float32 one (x64 off).
Each pair result is checked against the float64 one (within ``1e-13`` of
its largest magnitude; a mismatch stops the benchmark).  ``--no-pairs``
leaves that table out.

Run ``python benchmarks/bench_emulation.py --repeats 5`` (or
``make bench-emulation BENCH_ARGS="--repeats 5"``).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Keep the XLA client's informational start-up lines out of the output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_support beside it
from bench_support import enable_x64, ir  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.extend.backend  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import no64  # noqa: E402
from no64.jax.reference import compile_module, lower_x64  # noqa: E402
from no64.spec.registry import spec_of  # noqa: E402
from no64.transforms.emulate import join_words  # noqa: E402

#: The named scope the op under test runs in.
SCOPE = "no64_bench_op"
#: Constants outside the 32-bit range: their products are emulated.
K1 = 3_000_000_007
K2 = -2_999_999_929
#: Bounds of the clamp: +-(2**62 + 2**30), far outside the 32-bit range;
#: wrapped to 32 bits (the int32 floor) they are +-2**30.
CLAMP = 2**62 + 2**30
#: Trip count of the loop case.
LOOP_TRIPS = 8
#: A timed sample lasts about this long (enough executions of one program).
SAMPLE_S = 0.02
#: Executions per sample at most.
MAX_INNER = 1000


# --------------------------------------------------------------------------
# The op table.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Ints:
    """The integer types a case is written in: ``wide`` is int64 (the
    program no64 converts) or int32 (the floor), and constants are given as
    64-bit numbers and wrapped to ``wide`` (same low bits)."""

    wide: Any
    uwide: Any
    size: int
    scan_length: int

    def w(self, x: jax.Array) -> jax.Array:
        """``x`` (int32) as a signed wide integer."""
        return x.astype(self.wide)

    def uw(self, x: jax.Array) -> jax.Array:
        """``x`` (int32) as an unsigned wide integer."""
        return x.astype(self.uwide)

    def c(self, value: int, unsigned: bool = False) -> jax.Array:
        """The constant ``value`` of the wide type (wrapped to its width)."""
        dtype = np.dtype(self.uwide if unsigned else self.wide)
        bits = 8 * dtype.itemsize
        v = value % (1 << bits)
        if not unsigned and v >= 1 << (bits - 1):
            v -= 1 << bits
        return jnp.asarray(np.array(v, dtype=dtype))


def i64(size: int, scan_length: int) -> Ints:
    """The types of the program no64 converts."""
    return Ints(jnp.int64, jnp.uint64, size, scan_length)


def i32(size: int, scan_length: int) -> Ints:
    """The types of the 32-bit floor."""
    return Ints(jnp.int32, jnp.uint32, size, scan_length)


def scoped(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in the named scope that marks the op under test."""
    with jax.named_scope(SCOPE):
        return fn(*args)


def operands(d: Ints, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two signed operands that may not fit in 32 bits."""
    return d.w(x) * d.c(K1), d.w(y) * d.c(K2)


def uoperands(d: Ints, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two unsigned operands that may not fit in 32 bits."""
    return d.uw(x) * d.c(K1, True), d.uw(y) * d.c(K2, True)


def binary(fn: Callable[[jax.Array, jax.Array], Any]) -> Callable[[Ints, jax.Array, jax.Array], Any]:
    return lambda d, x, y: scoped(fn, *operands(d, x, y))


def unary(fn: Callable[[jax.Array], Any]) -> Callable[[Ints, jax.Array, jax.Array], Any]:
    return lambda d, x, y: scoped(fn, operands(d, x, y)[0])


def _shift_amount(d: Ints, y: jax.Array) -> jax.Array:
    return d.w(y) & d.c(63)


def _index(d: Ints, y: jax.Array) -> jax.Array:
    return jnp.remainder(y, d.size)  # int32, in bounds


def _denominator(d: Ints, y: jax.Array, unsigned: bool = False) -> jax.Array:
    """A divisor beyond the 32-bit range that is never 0 (``7 y + 1``)."""
    base = d.uw(y) if unsigned else d.w(y)
    return base * d.c(7, unsigned) + d.c(1, unsigned)


def _rows(d: Ints, a: jax.Array) -> jax.Array:
    n = d.scan_length
    return a[: (a.shape[0] // n) * n].reshape(-1, n)


def _loop(d: Ints, a: jax.Array) -> jax.Array:
    return lax.fori_loop(0, LOOP_TRIPS, lambda i, acc: acc * d.c(3) + a, jnp.zeros_like(a))


@dataclass(frozen=True)
class OpCase:
    """One op kind: ``fn(ints, x, y)`` over int32 inputs ``x``, ``y``."""

    name: str
    fn: Callable[[Ints, jax.Array, jax.Array], Any]
    #: StableHLO ops that must be emulated in the converted module.
    emulates: tuple[str, ...]
    #: Whether the int32 version is a meaningful floor.
    floor: bool = True
    #: Ops whose emulation rule the case needs (else it is "not emulated").
    needs: tuple[str, ...] = ()


CASES: tuple[OpCase, ...] = (
    OpCase("multiply by 64-bit constant", lambda d, x, y: scoped(lambda v: v * d.c(K1), d.w(x)),
           ("stablehlo.multiply",)),
    OpCase("add", binary(lambda a, b: a + b), ("stablehlo.add",)),
    OpCase("subtract", binary(lambda a, b: a - b), ("stablehlo.subtract",)),
    OpCase("multiply", binary(lambda a, b: a * b), ("stablehlo.multiply",)),
    OpCase("negate", unary(lambda a: -a), ("stablehlo.negate",)),
    OpCase("shift left by 7", unary(lambda a: a << 7), ("stablehlo.shift_left",)),
    OpCase("shift right arithmetic by 7", unary(lambda a: a >> 7), ("stablehlo.shift_right_arithmetic",)),
    OpCase("shift right logical by 7", unary(lambda a: lax.shift_right_logical(a, jnp.full_like(a, 7))),
           ("stablehlo.shift_right_logical",)),
    OpCase("shift left by 40", unary(lambda a: a << 40), ("stablehlo.shift_left",), floor=False),
    OpCase("shift right arithmetic by 40", unary(lambda a: a >> 40), ("stablehlo.shift_right_arithmetic",),
           floor=False),
    OpCase("shift right logical by 40", unary(lambda a: lax.shift_right_logical(a, jnp.full_like(a, 40))),
           ("stablehlo.shift_right_logical",), floor=False),
    OpCase("shift left by computed amount",
           lambda d, x, y: scoped(lambda a, s: a << s, operands(d, x, y)[0], _shift_amount(d, y)),
           ("stablehlo.shift_left",)),
    OpCase("shift right arith. by computed amount",
           lambda d, x, y: scoped(lambda a, s: a >> s, operands(d, x, y)[0], _shift_amount(d, y)),
           ("stablehlo.shift_right_arithmetic",)),
    OpCase("shift right logical by computed amount",
           lambda d, x, y: scoped(lax.shift_right_logical, operands(d, x, y)[0], _shift_amount(d, y)),
           ("stablehlo.shift_right_logical",)),
    OpCase("and", binary(lambda a, b: a & b), ("stablehlo.and",)),
    OpCase("or", binary(lambda a, b: a | b), ("stablehlo.or",)),
    OpCase("xor", binary(lambda a, b: a ^ b), ("stablehlo.xor",)),
    OpCase("not", unary(lambda a: ~a), ("stablehlo.not",)),
    OpCase("compare signed + select", binary(lambda a, b: jnp.where(a < b, a, b)),
           ("stablehlo.compare", "stablehlo.select")),
    OpCase("compare unsigned + select",
           lambda d, x, y: scoped(lambda a, b: jnp.where(a < b, a, b), *uoperands(d, x, y)),
           ("stablehlo.compare", "stablehlo.select")),
    OpCase("minimum", binary(jnp.minimum), ("stablehlo.minimum",)),
    OpCase("maximum", binary(jnp.maximum), ("stablehlo.maximum",)),
    OpCase("clamp",
           lambda d, x, y: scoped(lambda a: lax.clamp(d.c(-CLAMP), a, d.c(CLAMP)), operands(d, x, y)[0]),
           ("stablehlo.clamp",)),
    OpCase("abs", unary(jnp.abs), ("stablehlo.abs",)),
    OpCase("convert int64 -> float32", unary(lambda a: a.astype(jnp.float32)), ("stablehlo.convert",)),
    OpCase("convert float32 -> int64",
           lambda d, x, y: scoped(lambda f: f.astype(d.wide), x.astype(jnp.float32) * jnp.float32(1e10)),
           ("stablehlo.convert",)),
    OpCase("convert int64 -> int32", unary(lambda a: a.astype(jnp.int32)), ("stablehlo.convert",), floor=False),
    OpCase("reduce sum", unary(jnp.sum), ("stablehlo.reduce",)),
    OpCase("cumsum (rows of --scan-length)",
           lambda d, x, y: scoped(lambda a: jnp.cumsum(a, axis=1), _rows(d, operands(d, x, y)[0])),
           ("stablehlo.reduce_window",)),
    OpCase("sort (int64 key)", unary(jnp.sort), ("stablehlo.sort",)),
    OpCase("gather",
           lambda d, x, y: scoped(lambda a, i: jax.lax.optimization_barrier(a).at[i].get(mode="promise_in_bounds"),
                                  operands(d, x, y)[0], _index(d, y)),
           ("stablehlo.gather",)),
    OpCase("scatter-add",
           lambda d, x, y: scoped(lambda a, i: jnp.zeros_like(a).at[i].add(a, mode="promise_in_bounds"),
                                  operands(d, x, y)[0], _index(d, y)),
           ("stablehlo.scatter",)),
    OpCase(f"while loop, int64 accumulator ({LOOP_TRIPS} trips)",
           lambda d, x, y: scoped(lambda a: _loop(d, a), operands(d, x, y)[0]),
           ("stablehlo.multiply", "stablehlo.add")),
    OpCase("divide (signed)",
           lambda d, x, y: scoped(lax.div, operands(d, x, y)[0], _denominator(d, y)),
           ("stablehlo.divide",), needs=("stablehlo.divide",)),
    OpCase("remainder (signed)",
           lambda d, x, y: scoped(lax.rem, operands(d, x, y)[0], _denominator(d, y)),
           ("stablehlo.remainder",), needs=("stablehlo.remainder",)),
    OpCase("divide (unsigned)",
           lambda d, x, y: scoped(lax.div, uoperands(d, x, y)[0], _denominator(d, y, True)),
           ("stablehlo.divide",), needs=("stablehlo.divide",)),
    OpCase("remainder (unsigned)",
           lambda d, x, y: scoped(lax.rem, uoperands(d, x, y)[0], _denominator(d, y, True)),
           ("stablehlo.remainder",), needs=("stablehlo.remainder",)),
    OpCase("signed divide by a 32-bit divisor",
           lambda d, x, y: scoped(lax.div, operands(d, x, y)[0], d.w(y)),
           ("stablehlo.divide",), needs=("stablehlo.divide",)),
    OpCase("unsigned remainder by a constant",
           lambda d, x, y: scoped(lambda a: lax.rem(a, d.c(1_000_000_007, True)), uoperands(d, x, y)[0]),
           ("stablehlo.remainder",), needs=("stablehlo.remainder",)),
    OpCase("signed divide by a constant (128)", lambda d, x, y: scoped(lambda a: lax.div(a, d.c(128)),
                                                                      operands(d, x, y)[0]),
           ("stablehlo.divide",), needs=("stablehlo.divide",)),
    OpCase("signed remainder by a constant (1000)", lambda d, x, y: scoped(lambda a: lax.rem(a, d.c(1000)),
                                                                          operands(d, x, y)[0]),
           ("stablehlo.remainder",), needs=("stablehlo.remainder",)),
)


# --------------------------------------------------------------------------
# Building, checking and timing one case.
# --------------------------------------------------------------------------

I32_INFO = np.iinfo(np.int32)
#: Inputs every run starts with (the rest is uniform over the int32 range).
EXTREMES = np.array(
    [0, 1, -1, 2, -2, I32_INFO.max, I32_INFO.min, I32_INFO.max - 1, I32_INFO.min + 1,
     46340, 46341, -46341, 65535, 65536, -65536, 1 << 30, -(1 << 30), 12345, -99999],
    dtype=np.int32,
)


def make_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two int32 tensors: the extremes (every pair of them meets once at the
    head of ``x`` and ``y`` when ``size`` allows), then uniform values."""
    rng = np.random.default_rng(seed)
    x = rng.integers(I32_INFO.min, I32_INFO.max, size, dtype=np.int32, endpoint=True)
    y = rng.integers(I32_INFO.min, I32_INFO.max, size, dtype=np.int32, endpoint=True)
    k = len(EXTREMES)
    head_x = np.repeat(EXTREMES, k)[:size]
    head_y = np.tile(EXTREMES, k)[:size]
    x[: head_x.size] = head_x
    y[: head_y.size] = head_y
    return x, y


def scoped_ops(module: ir.Module) -> list[ir.Operation]:
    """The ops of the op under test (its named scope), constants excluded."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name != "stablehlo.constant" and SCOPE in str(op.location):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _on_words(op: ir.Operation) -> bool:
    """Whether ``op`` computes on ``ui32`` words (what emulation builds)."""
    values = list(op.operands) + list(op.results)
    for v in values:
        t = v.type
        if isinstance(t, ir.RankedTensorType):
            e = t.element_type
            if isinstance(e, ir.IntegerType) and e.width == 32 and e.is_unsigned:
                return True
    return False


def _backend() -> Any:
    return jax.extend.backend.get_backend("cpu")


def compile_text(text: str) -> Any:
    """Compile StableHLO text for the first CPU device."""
    return compile_module(text, _backend().devices()[0])


def execute(executable: Any, args: Sequence[Any]) -> list[Any]:
    """Run once and wait for every output."""
    outs = executable.execute(list(args))
    for o in outs:
        o.block_until_ready()
    return outs


class MismatchError(AssertionError):
    """The emulated program computed something else than the 64-bit one."""


@dataclass
class Prepared:
    """The compiled programs of one case."""

    case: OpCase
    native: Any
    emulated: Any
    floor: Any | None
    report: no64.DemotionReport
    ops_native: int
    ops_emulated: int
    compile_native_s: float
    compile_emulated_s: float
    compile_floor_s: float | None


def not_emulated(case: OpCase) -> list[str]:
    """The ops ``case`` needs whose emulation rule is missing."""
    return [op for op in case.needs if spec_of(op).emulate is None]


def prepare(case: OpCase, x: np.ndarray, y: np.ndarray, scan_length: int, floor: bool = True,
            target: str | None = None) -> Prepared:
    """Lower, convert (for ``target``, if given) and compile the case's
    programs (nothing is timed here but the compiles, for the record)."""
    size = x.shape[0]
    fn64 = lambda a, b: case.fn(i64(size, scan_length), a, b)  # noqa: E731
    native = lower_x64(fn64, x, y)
    native_text = native.operation.get_asm(enable_debug_info=True)
    converted = lower_x64(fn64, x, y)
    report = no64.demote(converted, policy="exact", check=True, target=target)
    no64.check(converted, keep=report.kept_native)
    missing = [op for op in case.emulates if op not in report.emulated_by_op]
    scope_native = scoped_ops(native)
    scope_emulated = scoped_ops(converted)
    if report.kept_native:
        if report.ops_emulated:
            raise AssertionError(f"{case.name}: target {target} has 64-bit integers, yet "
                                 f"{report.ops_emulated} op(s) were emulated")
    elif missing or not any(_on_words(op) for op in scope_emulated):
        raise AssertionError(
            f"{case.name}: the op under test was not emulated (emulated ops: "
            f"{report.emulated_by_op or 'none'}; expected {', '.join(case.emulates)}); the case "
            "measures nothing"
        )
    t0 = time.perf_counter()
    native_exe = compile_text(native_text)
    t1 = time.perf_counter()
    emulated_exe = compile_text(converted.operation.get_asm(enable_debug_info=True))
    t2 = time.perf_counter()
    floor_exe = None
    floor_s = None
    if case.floor and floor:
        fn32 = lambda a, b: case.fn(i32(size, scan_length), a, b)  # noqa: E731
        with enable_x64(False):
            floor_module = jax.jit(fn32, keep_unused=True).lower(x, y).compiler_ir("stablehlo")
        if no64.find_64bit(floor_module):
            raise AssertionError(f"{case.name}: the int32 floor holds a 64-bit value")
        floor_text = floor_module.operation.get_asm()
        t3 = time.perf_counter()
        floor_exe = compile_text(floor_text)
        floor_s = time.perf_counter() - t3
    return Prepared(
        case, native_exe, emulated_exe, floor_exe, report, len(scope_native), len(scope_emulated),
        t1 - t0, t2 - t1, floor_s,
    )


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


def check_identical(p: Prepared, args: Sequence[Any]) -> None:
    """Raise :class:`MismatchError` unless the emulated program's outputs
    are bit-identical to the native 64-bit program's."""
    native = [np.asarray(o) for o in execute(p.native, args)]
    emulated = [np.asarray(o) for o in execute(p.emulated, args)]
    if len(native) != len(emulated):
        raise MismatchError(f"{p.case.name}: {len(emulated)} outputs, the native program {len(native)}")
    for j in p.report.emulated_outputs:
        emulated[j] = join_words(emulated[j])
    for j, (a, b) in enumerate(zip(native, emulated)):
        wide = {np.dtype(np.int64): np.int32, np.dtype(np.uint64): np.uint32}.get(a.dtype)
        if j not in p.report.emulated_outputs and wide is not None and b.dtype == wide:
            b = b.astype(a.dtype)  # a 64-bit result proven to fit, returned as 32 bits
        if a.dtype != b.dtype or a.shape != b.shape:
            raise MismatchError(
                f"{p.case.name}: output #{j} is {b.dtype}{list(b.shape)}, the native program's "
                f"{a.dtype}{list(a.shape)}"
            )
        if not np.array_equal(_bits(a), _bits(b)):
            flat_a, flat_b = a.reshape(-1), b.reshape(-1)
            per_element = lambda v: _bits(v).reshape(v.size, -1)  # noqa: E731
            bad = np.flatnonzero((per_element(flat_a) != per_element(flat_b)).any(axis=1))
            i = int(bad[0])
            raise MismatchError(
                f"{p.case.name}: output #{j} differs from the 64-bit program at {bad.size} of "
                f"{flat_a.size} elements; first at flat index {i}: native {flat_a[i]!r}, "
                f"emulated {flat_b[i]!r}"
            )


def time_programs(programs: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median time of one execution of each program.  After two warm-up
    runs, the programs take turns, one sample each per repeat, so that a
    change of machine load touches all of them alike."""
    inner: dict[str, int] = {}
    for name, run in programs.items():
        run()
        run()
        start = time.perf_counter()
        run()
        one = time.perf_counter() - start
        inner[name] = max(1, min(MAX_INNER, math.ceil(SAMPLE_S / max(one, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(repeats):
        for name, run in programs.items():
            gc.collect()
            n = inner[name]
            start = time.perf_counter()
            for _ in range(n):
                run()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


@dataclass
class CaseResult:
    name: str
    status: str  # "ok", "not emulated"
    missing_rules: list[str] = field(default_factory=list)
    ops_native: int | None = None
    ops_emulated: int | None = None
    values_emulated: int | None = None
    emulated_by_op: dict[str, int] = field(default_factory=dict)
    native_s: float | None = None
    emulated_s: float | None = None
    int32_s: float | None = None
    compile_native_s: float | None = None
    compile_emulated_s: float | None = None
    compile_int32_s: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.native_s is None or self.emulated_s is None:
            return None
        return self.emulated_s / self.native_s


def run_case(
    case: OpCase,
    x: np.ndarray,
    y: np.ndarray,
    *,
    scan_length: int,
    repeats: int,
    timing: bool = True,
    target: str | None = None,
) -> CaseResult:
    """Build, check bit for bit and (``timing``) time one case."""
    missing = not_emulated(case)
    if missing and target is None:
        return CaseResult(case.name, "not emulated", missing_rules=missing)
    p = prepare(case, x, y, scan_length, floor=True, target=target)
    device = _backend().devices()[0]
    args = [jax.device_put(x, device), jax.device_put(y, device)]
    check_identical(p, args)
    if p.floor is not None:
        execute(p.floor, args)
    result = CaseResult(
        case.name, "ok", ops_native=p.ops_native, ops_emulated=p.ops_emulated,
        values_emulated=p.report.values_emulated, emulated_by_op=dict(p.report.emulated_by_op),
        compile_native_s=p.compile_native_s, compile_emulated_s=p.compile_emulated_s,
        compile_int32_s=p.compile_floor_s,
    )
    if timing:
        programs: dict[str, Callable[[], Any]] = {
            "native": lambda: execute(p.native, args),
            "emulated": lambda: execute(p.emulated, args),
        }
        if p.floor is not None:
            floor = p.floor
            programs["int32"] = lambda: execute(floor, args)
        times = time_programs(programs, repeats)
        result.native_s = times["native"]
        result.emulated_s = times["emulated"]
        result.int32_s = times.get("int32")
    return result


# --------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{1e3 * t:.3f}"


def print_table(results: list[CaseResult], size: int, repeats: int, scan_length: int,
                load: tuple[tuple[float, ...], tuple[float, ...]], target: str | None = None) -> None:
    print()
    what = (f"Converted for target {target} (policy=\"exact\")" if target is not None
            else "Exact 64-bit integer emulation (policy=\"exact\")")
    print(
        f"{what} on the CPU backend: {size} elements, "
        f"median of {repeats} repeat{'s' if repeats != 1 else ''}; jax {jax.__version__}, "
        f"{os.cpu_count()} CPUs; load average {load[0][0]:.2f} before, {load[1][0]:.2f} after"
    )
    width = max(len(r.name) for r in results)
    header = (
        f"{'op':<{width}}  {'ops i64->words':>14}  {'native i64 ms':>13}  {'emulated ms':>11}  "
        f"{'emul/native':>11}  {'int32 ms':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        if r.status != "ok":
            print(f"{r.name:<{width}}  not emulated (no emulation rule for {', '.join(r.missing_rules)})")
            continue
        ratio = r.ratio
        print(
            f"{r.name:<{width}}  {r.ops_native:>5} -> {r.ops_emulated:<5}  {_ms(r.native_s):>13}  "
            f"{_ms(r.emulated_s):>11}  {('-' if ratio is None else f'{ratio:.2f}x'):>11}  "
            f"{_ms(r.int32_s):>9}"
        )
    ratios = [r.ratio for r in results if r.ratio is not None]
    if ratios:
        geo = math.exp(sum(math.log(q) for q in ratios) / len(ratios))
        print(
            f"emulated/native over the {len(ratios)} timed rows: geometric mean {geo:.2f}x, "
            f"median {statistics.median(ratios):.2f}x, range {min(ratios):.2f}x to {max(ratios):.2f}x"
        )
    print(
        "Every row times the whole program: int32 inputs cast to int64 and multiplied by constants "
        "beyond 32 bits (the first row: that alone,\nfor one operand), the op, and its outputs "
        "(64-bit ones as S x 2 word pairs when emulated); every emulated result was checked "
        "bit-identical to the native one.\n"
        "ops i64->words: StableHLO ops of the op under test (its named scope, constants not "
        "counted) in the native module and after emulation.\n"
        f"int32: the same function over int32 (x64 off), a floor; '-' where 32 bits change the op's "
        f"meaning. cumsum runs over rows of {scan_length} elements."
    )
    compile_native = sum(r.compile_native_s or 0.0 for r in results)
    compile_emulated = sum(r.compile_emulated_s or 0.0 for r in results)
    if compile_native:
        print(
            f"XLA compile time, all rows (not timed above): native {compile_native:.2f} s, "
            f"emulated {compile_emulated:.2f} s"
        )


# --------------------------------------------------------------------------
# float64 as pairs of f32 (float_policy="pairs").
# --------------------------------------------------------------------------


#: Op kinds on float64 pairs: name -> fn(x, y, scan_length).
PAIR_CASES: dict[str, Callable[[jax.Array, jax.Array, int], Any]] = {
    "add": lambda x, y, n: x + y,
    "subtract": lambda x, y, n: x - y,
    "multiply": lambda x, y, n: x * y,
    "divide": lambda x, y, n: x / y,
    "sqrt": lambda x, y, n: jnp.sqrt(jnp.abs(x)),
    "compare (select)": lambda x, y, n: jnp.where(x < y, x, y),
    "maximum": lambda x, y, n: jnp.maximum(x, y),
    "sum (rows of --scan-length)": lambda x, y, n: jnp.sum(x.reshape(-1, n), axis=1),
    "cumsum (rows of --scan-length)": lambda x, y, n: jnp.cumsum(x.reshape(-1, n), axis=1),
    "dot (square of --scan-length rows)": lambda x, y, n: _square(x, n) @ _square(y, n),
}


def _square(x: jax.Array, n: int) -> jax.Array:
    m = min(n, int(math.isqrt(x.shape[0])))
    return x[: m * m].reshape(m, m)


@dataclass
class PairResult:
    name: str
    ops_pairs: int
    max_rel_error: float
    f64_s: float | None = None
    pairs_s: float | None = None
    f32_s: float | None = None

    @property
    def vs_f32(self) -> float | None:
        return None if self.pairs_s is None or self.f32_s is None else self.pairs_s / self.f32_s

    @property
    def vs_f64(self) -> float | None:
        return None if self.pairs_s is None or self.f64_s is None else self.pairs_s / self.f64_s


def make_float_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return 1.0 + rng.standard_normal(size), 2.0 + rng.standard_normal(size)


def run_pair_case(name: str, x: np.ndarray, y: np.ndarray, *, scan_length: int, repeats: int,
                  timing: bool = True) -> PairResult:
    """Lower with x64 on, convert with ``float_policy="pairs"``, compile the
    float64, pair and float32 programs, check, and (``timing``) time them."""
    fn = PAIR_CASES[name]
    f = lambda a, b: fn(a, b, scan_length)  # noqa: E731
    native = lower_x64(f, x, y)
    native_exe = compile_text(native.operation.get_asm())
    converted = lower_x64(f, x, y)
    report = no64.demote(converted, float_policy="pairs", check=True)
    pairs_exe = compile_text(converted.operation.get_asm())
    with enable_x64(False):
        f32_text = jax.jit(f, keep_unused=True).lower(x.astype(np.float32), y.astype(np.float32)).as_text()
    f32_exe = compile_text(f32_text)
    device = _backend().devices()[0]
    args64 = [jax.device_put(x, device), jax.device_put(y, device)]
    args_pairs = [jax.device_put(no64.split_pairs(v), device) for v in (x, y)]
    args32 = [jax.device_put(v.astype(np.float32), device) for v in (x, y)]
    ref = np.asarray(execute(native_exe, args64)[0])
    got = np.asarray(execute(pairs_exe, args_pairs)[0])
    got = no64.join_pairs(got) if 0 in report.pair_outputs else got
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    if err > 1e-13:
        raise MismatchError(f"{name}: pairs differ from float64 by {err:.3g} (relative to the largest value)")
    result = PairResult(name, report.ops_on_pairs, err)
    if timing:
        times = time_programs({
            "f64": lambda: execute(native_exe, args64),
            "pairs": lambda: execute(pairs_exe, args_pairs),
            "f32": lambda: execute(f32_exe, args32),
        }, repeats)
        result.f64_s, result.pairs_s, result.f32_s = times["f64"], times["pairs"], times["f32"]
    return result


def print_pair_table(results: list[PairResult], size: int, repeats: int, scan_length: int) -> None:
    print()
    print(f"float64 as pairs of f32 (float_policy=\"pairs\") on the CPU backend: {size} elements, "
          f"median of {repeats} repeat{'s' if repeats != 1 else ''}")
    width = max(len(r.name) for r in results)
    header = (f"{'op':<{width}}  {'f64 ms':>9}  {'pairs ms':>9}  {'f32 ms':>9}  {'pairs/f32':>9}  "
              f"{'pairs/f64':>9}  {'max rel err':>11}")
    print(header)
    print("-" * len(header))
    for r in results:
        def ratio(q: float | None) -> str:
            return "-" if q is None else f"{q:.2f}x"
        print(f"{r.name:<{width}}  {_ms(r.f64_s):>9}  {_ms(r.pairs_s):>9}  {_ms(r.f32_s):>9}  "
              f"{ratio(r.vs_f32):>9}  {ratio(r.vs_f64):>9}  {r.max_rel_error:>11.2e}")
    ratios = [r.vs_f32 for r in results if r.vs_f32 is not None]
    if ratios:
        geo = math.exp(sum(math.log(q) for q in ratios) / len(ratios))
        print(f"pairs/f32 over the {len(ratios)} timed rows: geometric mean {geo:.2f}x, "
              f"range {min(ratios):.2f}x to {max(ratios):.2f}x")
    print("max rel err: max|pairs - f64| / max|f64| over the outputs; the inputs enter as their pairs "
          "(48 of their 53 bits).")


def select_cases(patterns: Sequence[str] | None) -> list[OpCase]:
    if not patterns:
        return list(CASES)
    chosen = [c for c in CASES if any(p.lower() in c.name.lower() for p in patterns)]
    if not chosen:
        raise SystemExit(f"no op case matches {', '.join(patterns)}; see --list")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="elements per tensor (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per program (default: %(default)s)")
    parser.add_argument("--scan-length", type=int, default=4096,
                        help="length of the rows cumsum scans (default: %(default)s; see the module docstring)")
    parser.add_argument("--ops", nargs="+", metavar="NAME", help="run only the cases whose name contains NAME")
    parser.add_argument("--list", action="store_true", help="list the op cases and exit")
    parser.add_argument("--check-only", action="store_true",
                        help="build and check every case bit for bit, time nothing")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--quiet", action="store_true", help="print only the final table")
    parser.add_argument("--no-pairs", action="store_true", help="leave out the float64-as-pairs table")
    parser.add_argument("--pairs-only", action="store_true", help="run only the float64-as-pairs table")
    parser.add_argument("--target", metavar="T",
                        help="convert for device profile T (e.g. mtl, which has 64-bit integers natively)")
    opts = parser.parse_args(argv)
    if opts.list:
        for c in CASES:
            print(c.name)
        return 0
    if opts.repeats < 1 or opts.size < 1 or opts.scan_length < 1:
        parser.error("--size, --repeats and --scan-length must be positive")
    if opts.scan_length > opts.size:
        parser.error("--scan-length must not exceed --size")
    cases = [] if opts.pairs_only else select_cases(opts.ops)

    def log(msg: str) -> None:
        if not opts.quiet:
            print(msg, flush=True)

    x, y = make_inputs(opts.size)
    load_before = os.getloadavg()
    results = []
    for case in cases:
        r = run_case(case, x, y, scan_length=opts.scan_length, repeats=opts.repeats,
                     timing=not opts.check_only, target=opts.target)
        if r.status == "ok" and opts.check_only:
            log(f"  {case.name}: bit-identical")
        elif r.status == "ok":
            log(f"  {case.name}: native {_ms(r.native_s)} ms, emulated {_ms(r.emulated_s)} ms, "
                f"int32 {_ms(r.int32_s)} ms")
        else:
            log(f"  {case.name}: not emulated")
        results.append(r)
    load_after = os.getloadavg()
    if results:
        print_table(results, opts.size, opts.repeats, opts.scan_length, (load_before, load_after),
                    opts.target)
    pair_results: list[PairResult] = []
    pair_names = [n for n in PAIR_CASES
                  if not opts.ops or any(p.lower() in n.lower() for p in opts.ops)]
    if not opts.no_pairs and pair_names:
        fx, fy = make_float_inputs(opts.size)
        for name in pair_names:
            r2 = run_pair_case(name, fx, fy, scan_length=opts.scan_length, repeats=opts.repeats,
                               timing=not opts.check_only)
            log(f"  {name} (pairs): max relative error {r2.max_rel_error:.2e}")
            pair_results.append(r2)
        print_pair_table(pair_results, opts.size, opts.repeats, opts.scan_length)
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            rows = [asdict(r) | {"ratio": r.ratio} for r in results]
            json.dump(
                {
                    "size": opts.size, "repeats": opts.repeats, "scan_length": opts.scan_length,
                    "jax": jax.__version__, "cpus": os.cpu_count(),
                    "load_average": {"before": list(load_before), "after": list(load_after)},
                    "results": rows,
                    "pair_results": [asdict(r) | {"pairs_over_f32": r.vs_f32, "pairs_over_f64": r.vs_f64}
                                     for r in pair_results],
                },
                fh, indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
