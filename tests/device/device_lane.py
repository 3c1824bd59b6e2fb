"""The device lane: a held set of 64-bit programs run on whatever accelerator JAX sees.

Each program is run on every path into no64 on ``jax.devices()[0]`` (the
CPU on a machine without an accelerator) and compared with the same
program's x64 result on the CPU of the same machine (JAX with x64 on,
``jax.devices("cpu")``, without no64): integers bit for bit, floats within
the bound the path's float policy states (``Program.bound``).  The paths:

* ``x64`` -- the device's own 64-bit: the x64 program compiled for the
  device without no64 (XLA emulates s64/f64 on a TPU, runs them natively
  on the CPU).  Recorded, never judged: it is what no64 is compared with.
* ``hook`` -- the compile hook: a child process with
  ``NO64_PLATFORMS=<the device's platform>`` and x64 on runs ``jax.jit``
  of each program (default policies, ``NO64_FLOAT_HINTS=on``).
* ``jit`` -- ``no64.jit(fn)``: the default policies, 32-bit outputs.
* ``exact`` -- ``no64.jit(fn, policy="exact", restore_dtypes=True)``.
* ``pairs`` -- ``no64.jit(fn, policy="exact", float_policy="pairs",
  restore_dtypes=True)``, for the programs with float64 values.
* ``text`` -- offline: the x64 program's StableHLO text, lowered for the
  device, converted by ``no64 convert --policy exact`` (``--float-policy
  pairs`` where it has float64 values), compiled for the device as it is
  and run on its inputs split into words and pairs.
* ``export`` -- offline: a ``jax.export`` artifact of the x64 program for
  the device's platform, converted by ``no64 convert`` the same way,
  deserialized and called.

A cell's outcome is ``exact`` (every output bit for bit), ``bound``
(integers exact, floats within the bound; the measured error is shown),
``warned`` (beyond the bound, and no64 warned at the line that computes
it), ``refused`` (a no64 error, its first line kept), ``differs`` (beyond
the bound without a warning) or ``error`` (any other exception, its first
line kept).  Each program states, path by path, the outcomes the policy
makes right (``Program.expect``); a cell is a pass only where its outcome
is one of them, and ``differs`` and ``error`` never are.

Timings, side by side per program: the device's own 64-bit program and
no64's converted module (the ``text`` path's), both compiled for the
device and run on inputs placed on it beforehand, each the median of
``samples`` samples of at least ``min_time`` seconds.

Run as a script (``python tests/device/device_lane.py``) it prints the
table; ``DEVICE_LANE_OUT=DIR`` also writes ``DIR/device-lane.json`` and
``DIR/device-lane.md``.  ``NO64_SITE=DIR`` (a folder no64 was installed
into with ``pip install --target DIR``) is added with
:func:`site.addsitedir` before JAX is imported, so that no64's start-up
file runs there too.
"""

from __future__ import annotations

import os
import site
import sys

if os.environ.get("NO64_SITE"):  # before jax: the start-up file must run first
    site.addsitedir(os.environ["NO64_SITE"])

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform as host_platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import jax  # noqa: E402
import jax.export  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import no64  # noqa: E402
import no64.cli  # noqa: E402
from no64.jax import intent  # noqa: E402
from no64.jax.reference import (  # noqa: E402
    compile_module,
    expected_after_demotion,
    main_signature,
    parse_module,
)
from no64.rules.pair_dot import SUM_ACCURACY, TAU, plan  # noqa: E402
from no64.targets import F32_MATMUL, NEURON_MATMUL, TPU_MATMUL  # noqa: E402

HERE = Path(__file__).resolve().parent

#: The paths, in the table's order.
PATHS = ("x64", "hook", "jit", "exact", "pairs", "text", "export")
#: What each path's float64 values are computed as.
FLOAT_KIND = {"x64": "device", "hook": "f32", "jit": "f32", "exact": "f32", "pairs": "pairs",
              "text": "pairs", "export": "pairs"}
#: Outcomes that are a pass where a program expects them.
OUTCOMES = ("exact", "bound", "warned", "refused", "differs", "error")

I64_MAX = int(np.iinfo(np.int64).max)
I64_MIN = int(np.iinfo(np.int64).min)
U32 = 2**32


# --------------------------------------------------------------------------
# the programs
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Program:
    """A 64-bit program of the lane.

    ``make_args(rng, size)`` gives its arguments (numpy, pytrees allowed);
    ``bound(args, ref, kind)`` the largest absolute error allowed for each
    float output (``kind``: ``"pairs"`` or ``"f32"``); ``expect`` maps each
    path to the outcomes that are right there (a path not named expects
    ``exact``/``bound``; ``None``: the path does not apply); ``why`` says
    why, path by path, where that is not ``exact``/``bound``.
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[np.random.Generator, int], tuple[Any, ...]]
    bound: Callable[[Sequence[Any], Sequence[np.ndarray], str], list[float]] | None = None
    expect: dict[str, frozenset[str] | None] = dataclasses.field(default_factory=dict)
    why: dict[str, str] = dataclasses.field(default_factory=dict)
    floats: bool = False

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name)

    def expected(self, path: str) -> frozenset[str] | None:
        if path == "pairs" and not self.floats:
            return None
        if path == "x64":
            return frozenset(OUTCOMES[:4])  # recorded, not judged
        return self.expect.get(path, frozenset({"exact", "bound"}))


def _full_range(rng: np.random.Generator, n: int, dtype: Any) -> np.ndarray:
    """``n`` values of ``dtype`` over its whole range, its extremes and the
    values around 0 and 2**31/2**32 first."""
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32]
    if info.min < 0:
        edges += [-1, -(2**31), -(2**31) - 1, info.min + 1]
    edges_a = np.array(edges, dtype=object).astype(dtype)
    body = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    return np.concatenate([edges_a, body])[:n]


def splitmix64(x: jax.Array) -> jax.Array:
    z = x + jnp.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> 30)) * jnp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> 27)) * jnp.uint64(0x94D049BB133111EB)
    return z ^ (z >> 31)


def sort_keys(hi: jax.Array, lo: jax.Array) -> tuple[jax.Array, jax.Array]:
    key = (hi << 32) | lo
    return jnp.sort(key), jnp.argsort(key, stable=True)


def bits(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    return lax.population_count(x), lax.clz(x), x >> 40


def cumsum(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.cumsum(x), x.sum()


def divrem(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    return a // b, a % b, lax.div(a, b), lax.rem(a, b)


def variance(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    m = jnp.mean(x)
    return jnp.mean(x * x) - m * m, m


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    return a @ b


def timestamps(ts: jax.Array) -> tuple[jax.Array, ...]:
    """Time stamps in int64 nanoseconds: intervals, whole seconds, the
    nanoseconds past them and the seconds elapsed as float64."""
    elapsed = (ts - ts[0]).astype(jnp.float64) * 1e-9
    return jnp.diff(ts), ts // 1_000_000_000, ts % 1_000_000_000, elapsed


def newton_sqrt(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Newton's iteration for sqrt(x) until ``|y*y - x| <= 1e-12 * x`` (at most 60 steps)."""

    def cond(state: Any) -> Any:
        y, i = state
        return jnp.any(jnp.abs(y * y - x) > 1e-12 * x) & (i < 60)

    def body(state: Any) -> Any:
        y, i = state
        return 0.5 * (y + x / y), i + 1

    return lax.while_loop(cond, body, (x, jnp.int32(0)))


def sentinel(x: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A masked minimum with ``INT64_MAX`` for the masked elements (a row
    all masked keeps it) and the index of the minimum."""
    masked = jnp.where(mask, x, jnp.iinfo(jnp.int64).max)
    return masked.min(axis=1), jnp.argmin(masked, axis=1)


def _train_step() -> Callable[..., Any]:
    """One SGD step with momentum of a float64 Flax MLP, and an int64 step count."""
    import flax.linen as nn
    import optax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Dense(32, param_dtype=jnp.float64, dtype=jnp.float64)(x))
            return nn.Dense(4, param_dtype=jnp.float64, dtype=jnp.float64)(x)

    model, opt = MLP(), optax.sgd(1e-2, momentum=0.9)

    def loss(params: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        return jnp.mean((model.apply(params, x) - y) ** 2)

    def step(params: Any, momentum: Any, x: jax.Array, y: jax.Array, count: jax.Array) -> Any:
        # (the optimizer's state goes in and out as a dict: a jax.export
        # artifact serializes the pytrees it knows)
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, (optax.TraceState(trace=momentum), optax.EmptyState()), params)
        return optax.apply_updates(params, updates), state[0].trace, value, count + 1

    def make(rng: np.random.Generator, size: int) -> tuple[Any, ...]:
        # numpy alone: the lane makes its inputs before JAX opens the device
        def dense(m: int, n: int) -> dict[str, np.ndarray]:
            return {"bias": 0.1 * rng.standard_normal(n), "kernel": rng.standard_normal((m, n)) / np.sqrt(m)}

        params = {"params": {"Dense_0": dense(16, 32), "Dense_1": dense(32, 4)}}
        momentum = jax.tree_util.tree_map(lambda p: 0.01 * rng.standard_normal(p.shape), params)
        return params, momentum, rng.standard_normal((64, 16)), rng.standard_normal((64, 4)), np.int64(41)

    step.make = make  # type: ignore[attr-defined]
    return step


def _normwise(rtol: float) -> Callable[[Sequence[Any], Sequence[np.ndarray], str], list[float]]:
    return lambda args, ref, kind: [rtol * _scale(r) for r in ref]


def _scale(r: np.ndarray) -> float:
    finite = np.abs(r[np.isfinite(r)]) if np.issubdtype(r.dtype, np.inexact) else np.abs(r)
    return float(finite.max()) if finite.size else 0.0


#: float64's pairs hold 2**-48 of a value; a few operations each within
#: 3u**2 to 15u**2 (u = 2**-24, the guide's bounds) stay within 2**-44.
PAIRS_RTOL = 2.0**-44
#: float32 with a few correctly rounded operations, and the TPU's division
#: and square root (up to 3 ulp): within 2**-20 of the largest output.
F32_RTOL = 2.0**-20


def _variance_bound(args: Sequence[Any], ref: Sequence[np.ndarray], kind: str) -> list[float]:
    """E[x**2] - E[x]**2 cancels: its error is the sums' (relative to
    E[x**2]) -- 2**-44 for pairs, n * 2**-24 (a sequential sum's worst case)
    for f32 -- and the mean's ``rtol`` of its own."""
    (x,) = args
    n, ex2 = x.size, float(np.mean(x * x))
    rel = PAIRS_RTOL if kind == "pairs" else n * 2.0**-24
    return [4 * rel * ex2, rel * _scale(ref[1])]


def _matmul_bound(args: Sequence[Any], ref: Sequence[np.ndarray], kind: str) -> list[float]:
    """Pairs: the bound :mod:`no64.rules.pair_dot` states for a dot by exact
    slices, ``(1 + S) max(TAU P, k phi 2**(a+b)) + S P``, taken normwise
    (``P = (|A||B|)_ij <= k max|A| max|B|``, ``2**a <= max|A|``) for the
    widest of the matrix engines' datapaths, plus the inputs' rounding to
    48 bits; float32: f32 products (no64 asks a narrowed float64 dot for
    ``HIGHEST`` precision, so no bfloat16 or TF32 pass) in a blocked or
    pairwise sum of ``k`` terms, ``(log2 k + 2) 2**-24`` of ``k max|A| max|B|``
    (a one-pass bfloat16 product is off by about ``2**-9``: beyond it)."""
    a, b = args
    k = a.shape[1]
    scale = k * float(np.abs(a).max()) * float(np.abs(b).max())
    if kind != "pairs":
        return [(np.log2(k) + 2) * 2.0**-24 * scale]
    phi = max(pl.phi(pl.slices) for pl in (plan(k, m) for m in (F32_MATMUL, NEURON_MATMUL, TPU_MATMUL)))
    return [((1 + SUM_ACCURACY) * max(TAU, phi) + SUM_ACCURACY + 2.0**-47) * scale]


def _sqrt_bound(args: Sequence[Any], ref: Sequence[np.ndarray], kind: str) -> list[float]:
    """The stopping rule's residual ``|y*y - x| <= 1e-12 x`` (relative
    error 5e-13 in y) and its rounding; the step count is an integer."""
    return [(5e-13 + PAIRS_RTOL if kind == "pairs" else 4 * F32_RTOL) * _scale(ref[0]), 0.0]


def _timestamp_bound(args: Sequence[Any], ref: Sequence[np.ndarray], kind: str) -> list[float]:
    """The elapsed seconds are an exact int64 difference converted once and
    scaled once."""
    rel = 2 * PAIRS_RTOL if kind == "pairs" else 2.0**-22
    return [0.0, 0.0, 0.0, rel * _scale(ref[3])]


_NARROW_INT = frozenset({"refused"})


def _programs() -> list[Program]:
    step = _train_step()
    return [
        Program(
            "splitmix64", splitmix64, lambda rng, n: (_full_range(rng, n, np.uint64),),
            expect={"hook": _NARROW_INT, "jit": _NARROW_INT},
            why={"hook": "uint64 inputs beyond 32 bits: the default policy refuses them",
                 "jit": "uint64 inputs beyond 32 bits: the default policy refuses them"}),
        Program(
            "sort keys", sort_keys,
            lambda rng, n: (rng.integers(-(2**31), 2**31, n, dtype=np.int64),
                            rng.integers(0, U32, n, dtype=np.int64)),
            expect={"hook": _NARROW_INT, "jit": _NARROW_INT},
            why={"hook": "low words up to 2**32 - 1 do not fit int32: refused",
                 "jit": "low words up to 2**32 - 1 do not fit int32: refused"}),
        Program(
            "popcnt clz >>40", bits, lambda rng, n: (_full_range(rng, n, np.uint64),),
            expect={"hook": _NARROW_INT, "jit": _NARROW_INT},
            why={"hook": "uint64 inputs beyond 32 bits: refused", "jit": "uint64 inputs beyond 32 bits: refused"}),
        Program(
            "cumsum past 2**31", cumsum, lambda rng, n: (rng.integers(2**19, 2**20, n, dtype=np.int64),),
            expect={"hook": frozenset({"warned"}), "jit": frozenset({"warned"})},
            why={"hook": "the sums pass 2**31: unproven under the default policy, narrowed and warned at the line",
                 "jit": "the sums pass 2**31: unproven under the default policy, narrowed and warned at the line"}),
        Program(
            "div/rem full range", divrem,
            lambda rng, n: (_full_range(rng, n, np.int64),
                            np.where((b := _full_range(rng, n, np.int64)[::-1].copy()) == 0, 3, b)),
            expect={"hook": _NARROW_INT, "jit": _NARROW_INT},
            why={"hook": "int64 inputs beyond 32 bits: refused", "jit": "int64 inputs beyond 32 bits: refused"}),
        Program(
            "variance 1e4", variance, lambda rng, n: (1e4 + rng.standard_normal(n),),
            bound=_variance_bound, floats=True),
        Program(
            "matmul 512", matmul,
            lambda rng, n: (rng.standard_normal((512, 512)), rng.standard_normal((512, 512))),
            bound=_matmul_bound, floats=True),
        Program(
            "timestamps ns", timestamps,
            lambda rng, n: (1_700_000_000_000_000_000 + np.cumsum(rng.integers(1, 10**9, n, dtype=np.int64)),),
            bound=_timestamp_bound, floats=True,
            expect={"hook": _NARROW_INT, "jit": _NARROW_INT},
            why={"hook": "nanoseconds since 1970 do not fit int32: refused",
                 "jit": "nanoseconds since 1970 do not fit int32: refused"}),
        Program(
            "newton sqrt", newton_sqrt, lambda rng, n: (np.exp(rng.uniform(0, np.log(1e6), n)),),
            bound=_sqrt_bound, floats=True,
            expect={p: frozenset({"warned", "bound"}) for p in ("hook", "jit", "exact")},
            why={p: "in f32 a tolerance of 1e-12 cannot be reached: the loop runs to its cap, and no64 says so at "
                    "its line; a device whose profile keeps float64 (a TPU: XLA:TPU's own) reaches it"
                 for p in ("hook", "jit", "exact")}),
        Program(
            "INT64_MAX sentinel", sentinel,
            lambda rng, n: (rng.integers(-(2**31), 2**31, (n // 16, 16), dtype=np.int64),
                            np.arange(n).reshape(n // 16, 16) % 5 > (np.arange(n // 16) % 3)[:, None] * 2)),
        Program("train step", step, step.make, bound=_normwise(2.0**-18), floats=True),  # type: ignore[attr-defined]
    ]


PROGRAMS = _programs()


def program(name: str) -> Program:
    return next(p for p in PROGRAMS if p.name == name)


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------


@contextlib.contextmanager
def _x64() -> Any:
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def _leaves(tree: Any) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _is_no64(exc: BaseException) -> bool:
    return isinstance(exc, no64.No64Error)


@dataclasses.dataclass
class Cell:
    """One program on one path."""

    program: str
    path: str
    outcome: str
    expected: list[str]
    error: float | None = None  # the largest float error over the bound's scale
    detail: str = ""
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.outcome in self.expected


def judge(prog: Program, path: str, args: Sequence[Any], ref: list[np.ndarray], got: list[np.ndarray],
          caught: Sequence[str] = ()) -> Cell:
    """The outcome of one path's outputs ``got`` against the x64 ``ref``."""
    expected = sorted(prog.expected(path) or ())
    if len(got) != len(ref):
        return Cell(prog.name, path, "differs", expected, detail=f"{len(got)} outputs, the reference {len(ref)}")
    kind = FLOAT_KIND[path]
    bounds = prog.bound(args, ref, "f32" if kind == "device" else kind) if prog.bound else \
        [F32_RTOL * _scale(r) for r in ref]
    exact, within, worst, detail, ints_differ = True, True, 0.0, "", False
    for i, (r, g) in enumerate(zip(ref, got)):
        wide = g.dtype == r.dtype
        if r.dtype.kind in "iub":
            expect = r if wide else expected_after_demotion(r)
            same = g.shape == r.shape and bool(np.array_equal(expect.astype(np.int64) if not wide else expect,
                                                              g.astype(expect.dtype)))
            if not same:
                exact = within = False
                ints_differ = True
                detail = detail or f"output {i}: {int(np.sum(expect != g.astype(expect.dtype)))} of {r.size} differ"
            continue
        g64 = g.astype(np.float64)
        if g.shape != r.shape:
            exact = within = False
            detail = detail or f"output {i}: shape {g.shape}, the reference {r.shape}"
            continue
        r64 = expected_after_demotion(r) if not wide else r
        same_special = (np.isnan(r64) == np.isnan(g64)).all() and (np.isinf(r64) == np.isinf(g64)).all() and \
            (r64[np.isinf(r64)] == g64[np.isinf(g64)]).all()
        with np.errstate(invalid="ignore"):
            err = float(np.nan_to_num(np.abs(g64 - r64), nan=0.0).max(initial=0.0))
        if not (np.array_equal(g64, r64, equal_nan=True) and g.dtype == r.dtype):
            exact = False
        scale = _scale(r64) or 1.0
        worst = max(worst, err / scale)
        if not same_special or err > bounds[i]:
            within = False
            detail = detail or f"output {i}: error {err:.3g} beyond {bounds[i]:.3g}"
    outcome = "exact" if exact else "bound" if within else "warned" if caught else "differs"
    error = None if exact or (ints_differ and not worst) else worst
    return Cell(prog.name, path, outcome, expected, error, detail, list(caught))


def _no64_warnings(record: Sequence[warnings.WarningMessage]) -> list[str]:
    return sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}"[:300] for w in record
                   if w.category.__module__.startswith("no64")})


def _guard(prog: Program, path: str, run: Callable[[], list[np.ndarray]], args: Sequence[Any],
           ref: list[np.ndarray]) -> Cell:
    expected = sorted(prog.expected(path) or ())
    intent.clear_warned()  # no64 warns once per line and process: each path is asked afresh
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            got = run()
        except Exception as exc:  # noqa: BLE001 - every failure is a row of the table
            if _is_no64(exc) or path == "x64":
                return Cell(prog.name, path, "refused", expected, detail=_first_line(exc))
            return Cell(prog.name, path, "error", expected,
                        detail=_first_line(exc) + " @ " + traceback.extract_tb(exc.__traceback__)[-1].name)
    return judge(prog, path, args, ref, got, _no64_warnings(record))


def _reference(prog: Program, args: Sequence[Any]) -> list[np.ndarray]:
    with _x64(), jax.default_device(jax.devices("cpu")[0]):
        return _leaves(jax.jit(prog.fn)(*args))


def _split(leaves: Sequence[np.ndarray], specs: Sequence[Any]) -> list[np.ndarray]:
    """A converted module's inputs for the original's leaves: a 64-bit leaf
    whose argument became ``S x 2`` as its words or pairs, any other cast
    to the argument's dtype."""
    out = []
    for a, spec in zip(leaves, specs):
        if tuple(spec.shape) == a.shape + (2,):
            out.append(no64.split_pairs(a) if a.dtype.kind == "f" else no64.split_words(a))
        else:
            out.append(a.astype(spec.dtype))
    return out


def _join(outs: Sequence[np.ndarray], ref: Sequence[np.ndarray]) -> list[np.ndarray]:
    got = []
    for o, r in zip(outs, ref):
        o = np.asarray(o)
        if o.shape == r.shape + (2,) and r.dtype.itemsize == 8:
            got.append(no64.join_pairs(o) if r.dtype.kind == "f" else no64.join_words(o).astype(r.dtype))
        else:
            got.append(o)
    return got


def _convert(src: Path, dst: Path, floats: bool) -> None:
    argv = ["convert", str(src), "-o", str(dst), "--policy", "exact"]
    if floats:
        argv += ["--float-policy", "pairs"]
    out, err = _Capture(), _Capture()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = no64.cli.main(argv)
    if code != 0:
        raise _ConvertRefused(err.text().strip().splitlines()[-1] if err.text().strip() else f"exit {code}")


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)


class _ConvertRefused(no64.No64Error):
    """``no64 convert`` refused the module (exit 2), with its one line."""


def _median_time(run: Callable[[], Any], samples: int, min_time: float) -> float:
    run()
    times = []
    for _ in range(samples):
        reps, t0 = 0, time.perf_counter()
        while True:
            jax.block_until_ready(run())
            reps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time:
                break
        times.append(elapsed / reps)
    return statistics.median(times)


@dataclasses.dataclass
class Timing:
    program: str
    x64_ms: float | None
    no64_ms: float | None
    note: str = ""


def run_hook_child(platform: str, size: int, workdir: Path) -> dict[str, Any]:
    """Every program under the compile hook, in a child process (the hook is
    the one path whose switch is the environment); its outputs as numpy."""
    env = dict(os.environ, NO64_PLATFORMS=platform, NO64_FLOAT_HINTS="on")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, str(Path(__file__)), "--hook-child", str(workdir), "--size", str(size)],
                          env=env, capture_output=True, text=True, timeout=900)
    status_file = workdir / "hook.json"
    if proc.returncode != 0 or not status_file.is_file():
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"failed": f"the hook's child process exited {proc.returncode}: {tail}"}
    status = json.loads(status_file.read_text())
    arrays = np.load(workdir / "hook.npz")
    for name, s in status.items():
        if "outputs" in s:
            s["got"] = [arrays[f"{name}/{i}"] for i in range(s["outputs"])]
    return status


def _hook_child(workdir: Path, size: int) -> int:
    """Run in the child: ``jax.jit`` of each program with x64 on, under the
    hook that ``NO64_PLATFORMS`` switched on at start-up."""
    jax.config.update("jax_enable_x64", True)
    status: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for prog in PROGRAMS:
        args = prog.make_args(np.random.default_rng(0), size)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                got = _leaves(jax.jit(prog.fn)(*args))
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                status[prog.name] = {"exception": _first_line(exc), "no64": _is_no64(exc)}
                continue
        status[prog.name] = {"outputs": len(got), "warnings": _no64_warnings(record)}
        arrays.update({f"{prog.name}/{i}": g for i, g in enumerate(got)})
    np.savez(workdir / "hook.npz", **arrays)
    (workdir / "hook.json").write_text(json.dumps(status))
    return 0


def _device_platform() -> str:
    """The platform of ``jax.devices()[0]``, asked in a child process so that
    this one has not opened the device when the hook's child needs it."""
    if os.environ.get("DEVICE_LANE_PLATFORM"):
        return os.environ["DEVICE_LANE_PLATFORM"]
    proc = subprocess.run([sys.executable, "-c", "import jax; print(jax.devices()[0].platform)"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, NO64_PLATFORMS=""))
    if proc.returncode != 0:
        raise RuntimeError(f"could not ask JAX for its device: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout.strip().splitlines()[-1]


@dataclasses.dataclass
class Lane:
    """The lane's results."""

    device: str
    platform: str
    versions: dict[str, str]
    date: str
    size: int
    cells: list[Cell]
    timings: list[Timing]

    def cell(self, program: str, path: str) -> Cell | None:
        return next((c for c in self.cells if c.program == program and c.path == path), None)

    @property
    def failures(self) -> list[Cell]:
        return [c for c in self.cells if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "platform": self.platform, "versions": self.versions, "date": self.date,
                "size": self.size, "passes": sum(c.passed for c in self.cells), "cells": len(self.cells),
                "results": [dataclasses.asdict(c) | {"passed": c.passed} for c in self.cells],
                "timings": [dataclasses.asdict(t) for t in self.timings]}

    def markdown(self) -> str:
        lines = [f"Device lane on **{self.device}** ({self.platform}), {self.date}; "
                 + ", ".join(f"{k} {v}" for k, v in self.versions.items())
                 + f"; {sum(c.passed for c in self.cells)}/{len(self.cells)} cells as expected.", "",
                 "| program | " + " | ".join(PATHS) + " |", "|---|" + "---|" * len(PATHS)]
        for prog in PROGRAMS:
            row = []
            for path in PATHS:
                c = self.cell(prog.name, path)
                row.append("—" if c is None else _short(c))
            lines.append(f"| {prog.name} | " + " | ".join(row) + " |")
        lines += ["", "| program | device's 64-bit ms | no64 ms | no64 / device |", "|---|---:|---:|---:|"]
        for t in self.timings:
            ratio = f"{t.no64_ms / t.x64_ms:.2f}×" if t.no64_ms and t.x64_ms else t.note or "—"
            x = f"{t.x64_ms:.3f}" if t.x64_ms is not None else "refused"
            n = f"{t.no64_ms:.3f}" if t.no64_ms is not None else "—"
            lines.append(f"| {t.program} | {x} | {n} | {ratio} |")
        notes = [f"- {c.program} / {c.path}: {c.outcome}: {c.detail}" for c in self.cells
                 if c.detail and (c.outcome in ("refused", "error", "differs") or not c.passed)]
        if notes:
            lines += ["", *notes]
        return "\n".join(lines) + "\n"


def _short(c: Cell) -> str:
    mark = "" if c.passed else " **FAIL**"
    if c.outcome == "bound":
        return f"bound {c.error:.1e}{mark}"
    if c.outcome in ("differs", "warned") and c.error is not None:
        return f"{c.outcome} {c.error:.1e}{mark}"
    return c.outcome + mark


def _versions() -> dict[str, str]:
    import jaxlib

    out = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "python": host_platform.python_version()}
    try:
        from importlib.metadata import version

        out["libtpu"] = version("libtpu")
    except Exception:  # noqa: BLE001 - not a TPU machine
        pass
    return out


def run_lane(size: int = 4096, samples: int = 3, min_time: float = 0.01,
             programs: Sequence[str] | None = None, log: Callable[[str], None] = lambda s: None) -> Lane:
    """Run every program on every path; never raises for a program or path."""
    selected = [p for p in PROGRAMS if programs is None or p.name in programs]
    workdir = Path(tempfile.mkdtemp(prefix="no64-lane-"))
    platform = _device_platform()
    log(f"device platform: {platform}; the compile hook in a child process")
    hook = run_hook_child(platform, size, workdir)
    device = jax.devices()[0]
    cells: list[Cell] = []
    timings: list[Timing] = []
    for prog in selected:
        t0 = time.perf_counter()
        args = prog.make_args(np.random.default_rng(0), size)
        ref = _reference(prog, args)
        leaves = _leaves(args)
        runs: dict[str, Callable[[], list[np.ndarray]]] = {}
        x64_fn = jax.jit(prog.fn, keep_unused=True)
        with _x64():  # the device's own 64-bit program's inputs, placed on it
            dev_args = jax.device_put(args, device)

        def x64_run(x64_fn: Any = x64_fn, dev_args: Any = dev_args) -> list[np.ndarray]:
            with _x64():
                return _leaves(x64_fn(*dev_args))

        runs["x64"] = x64_run
        runs["jit"] = lambda prog=prog, args=args: _leaves(no64.jit(prog.fn)(*args))
        runs["exact"] = lambda prog=prog, args=args: _leaves(
            no64.jit(prog.fn, policy="exact", restore_dtypes=True)(*args))
        if prog.floats:
            runs["pairs"] = lambda prog=prog, args=args: _leaves(
                no64.jit(prog.fn, policy="exact", float_policy="pairs", restore_dtypes=True)(*args))
        text_exe: dict[str, Any] = {}

        def text_run(prog: Program = prog, args: Any = args, leaves: Any = leaves, ref: Any = ref,
                     store: dict[str, Any] = text_exe) -> list[np.ndarray]:
            with _x64():
                text = jax.jit(prog.fn, keep_unused=True).lower(*args).as_text(debug_info=True)
            src, dst = workdir / f"{prog.slug}.mlir", workdir / f"{prog.slug}.no64.mlir"
            src.write_text(text)
            _convert(src, dst, prog.floats)
            module = parse_module(dst.read_text())
            exe = compile_module(module, device)
            ins = [jax.device_put(a, device) for a in _split(leaves, main_signature(module)[0])]
            store.update(exe=exe, ins=ins)
            return _join([np.asarray(o) for o in exe.execute(ins)], ref)

        def export_run(prog: Program = prog, args: Any = args, leaves: Any = leaves,
                       ref: Any = ref) -> list[np.ndarray]:
            with _x64():
                exported = jax.export.export(jax.jit(prog.fn, keep_unused=True), platforms=[platform])(*args)
            src, dst = workdir / f"{prog.slug}.jaxexport", workdir / f"{prog.slug}.no64.jaxexport"
            src.write_bytes(exported.serialize())
            _convert(src, dst, prog.floats)
            converted = jax.export.deserialize(bytearray(dst.read_bytes()))
            ins = _split(leaves, converted.in_avals)
            call_args, call_kwargs = jax.tree_util.tree_unflatten(converted.in_tree, ins)
            return _join(_leaves(converted.call(*call_args, **call_kwargs)), ref)

        runs["text"], runs["export"] = text_run, export_run
        for path in PATHS:
            if prog.expected(path) is None:
                continue
            if path == "hook":
                cells.append(_hook_cell(prog, args, ref, hook))
            else:
                cells.append(_guard(prog, path, runs[path], args, ref))
        x64_cell = next(c for c in cells if c.program == prog.name and c.path == "x64")
        timings.append(_time(prog, x64_fn, dev_args, text_exe, x64_cell, samples, min_time))
        log(f"{prog.name}: " + ", ".join(f"{c.path} {c.outcome}" for c in cells if c.program == prog.name)
            + f" ({time.perf_counter() - t0:.1f} s)")
    return Lane(f"{device.device_kind} ({device.platform})", platform, _versions(),
                datetime.date.today().isoformat(), size, cells, timings)


def _hook_cell(prog: Program, args: Sequence[Any], ref: list[np.ndarray], hook: dict[str, Any]) -> Cell:
    expected = sorted(prog.expected("hook") or ())
    if "failed" in hook:
        return Cell(prog.name, "hook", "error", expected, detail=hook["failed"])
    s = hook.get(prog.name)
    if s is None:
        return Cell(prog.name, "hook", "error", expected, detail="the child process did not run it")
    if "exception" in s:
        return Cell(prog.name, "hook", "refused" if s["no64"] else "error", expected, detail=s["exception"])
    return judge(prog, "hook", args, ref, s["got"], s["warnings"])


def _time(prog: Program, x64_fn: Any, dev_args: Any, text_exe: dict[str, Any], x64_cell: Cell,
          samples: int, min_time: float) -> Timing:
    x64_ms = no64_ms = None
    note = ""
    if x64_cell.outcome != "refused":
        with _x64():
            x64_ms = 1e3 * _median_time(lambda: x64_fn(*dev_args), samples, min_time)
    else:
        note = "the device refuses its 64-bit"
    if "exe" in text_exe:
        exe, ins = text_exe["exe"], text_exe["ins"]
        no64_ms = 1e3 * _median_time(lambda: exe.execute(ins), samples, min_time)
    return Timing(prog.name, x64_ms, no64_ms, note)


def write(lane: Lane, out: str | os.PathLike[str] | None) -> None:
    """Write ``device-lane.json`` and ``device-lane.md`` into ``out`` (made if missing)."""
    if not out:
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "device-lane.json").write_text(json.dumps(lane.to_dict(), indent=1, default=str))
    (folder / "device-lane.md").write_text(lane.markdown())


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=int(os.environ.get("DEVICE_LANE_SIZE", 4096)),
                   help="elements of the elementwise programs (DEVICE_LANE_SIZE; default 4096)")
    p.add_argument("--samples", type=int, default=int(os.environ.get("DEVICE_LANE_SAMPLES", 3)),
                   help="timing samples per program (DEVICE_LANE_SAMPLES; default 3)")
    p.add_argument("--min-time", type=float, default=0.01, help="seconds each timing sample covers at least")
    p.add_argument("--program", action="append", help="run only this program (repeatable)")
    p.add_argument("--out", default=os.environ.get("DEVICE_LANE_OUT"), help="folder for the JSON and markdown")
    p.add_argument("--hook-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.hook_child:
        return _hook_child(Path(args.hook_child), args.size)
    lane = run_lane(args.size, args.samples, args.min_time, args.program, log=lambda s: print(s, flush=True))
    print(lane.markdown())
    write(lane, args.out)
    return 0 if not lane.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
