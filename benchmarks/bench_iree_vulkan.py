"""no64's words against IREE's own 64-bit integer emulation, on a Vulkan
target without ``Int64``.

IREE compiles a 64-bit integer program for a Vulkan device whose SPIR-V
has no ``Int64`` capability (``--iree-vulkan-target=valhall``, Mali
Valhall, among others) by emulating ``i64`` itself, in its code generation.
no64 emulates it one level up instead: ``no64.demote(policy="exact")``
writes the program on pairs of 32-bit words (inputs and results ``S x 2``).
For each program of :data:`PROGRAMS` this benchmark

* lowers the function with x64 on (the 64-bit module, as JAX exports it)
  and converts a copy for the ``iree-vulkan`` target profile, as ``no64
  convert --policy exact --target iree-vulkan`` does:
  ``no64.demote(policy="exact", target="iree-vulkan")``, then
  :func:`no64.transforms.legalize.legalize` for the forms the profile
  refuses (no64's words);
* compiles both with ``iree-compile --iree-hal-target-device=vulkan
  --iree-vulkan-target=<target>``: the 64-bit module is IREE's own
  emulation, the converted one no64's words;
* counts, from ``--compile-to=executable-targets``, the dispatches (the
  kernels: ``hal.executable.export`` ops) and the SPIR-V ops of each;
* runs both on the Vulkan device (``iree-run-module``), checks their results
  bit for bit against the 64-bit program run by JAX on the CPU, and times
  them with ``iree-benchmark-module`` (``--repeats`` rounds, alternating the
  two programs; the fastest round is shown: on a shared machine a round
  is only ever slowed, by whatever else runs there);

and prints the two side by side, with the ratio of run times
(words / IREE: below 1 is faster than IREE's own emulation).

IREE's emulation does not compile every program (its SPIR-V lowering
refuses 64-bit vector slices, which it forms for a tensor whose length is
a multiple of 4, and 64-bit division); the table says so.  The default
lengths are odd so that it compiles where it can.

The tools come from ``--iree-bin DIR``, the ``IREE_BIN`` environment
variable, or ``PATH`` (``pip install iree-base-compiler iree-base-runtime``
provides ``iree-compile``, ``iree-run-module`` and
``iree-benchmark-module``); the Vulkan device is any the loader finds
(Mesa's lavapipe, ``mesa-vulkan-drivers``, runs on the CPU).  Without them
the benchmark says what is missing and exits with status 0.

Run ``python benchmarks/bench_iree_vulkan.py`` (``--json`` for the figures
as JSON, ``--programs sort,cumsum`` for some of them).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import no64  # noqa: E402
from no64.jax.reference import lower_x64  # noqa: E402
from no64.targets import target as target_profile  # noqa: E402
from no64.transforms.emulate import join_words, split_words  # noqa: E402
from no64.transforms.legalize import legalize  # noqa: E402

#: The target profile the words are converted for.
TARGET = "iree-vulkan"
#: The elementwise programs' length; odd, so that IREE's own emulation
#: (which refuses 64-bit vectors) compiles them.
SIZE = 65537
#: The cumsum and the sort run along rows of this length (odd; longer than
#: 256, so that no64 doubles the cumsum; at most 512: IREE 3.13's Vulkan
#: sort, its own and no64's alike, misorders longer rows on lavapipe) ...
SCAN = 257
#: ... and this many rows.
ROWS = 64


# --------------------------------------------------------------------------
# The programs.
# --------------------------------------------------------------------------


def splitmix64(x: jax.Array) -> jax.Array:
    """The splitmix64 finaliser (uint64 in, uint64 out)."""
    z = x + jnp.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> 30)) * jnp.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> 27)) * jnp.uint64(0x94D049BB133111EB)
    return z ^ (z >> 31)


def compare_select(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.where(x < y, x * 3, y - x)


def divide(x: jax.Array, y: jax.Array) -> jax.Array:
    """Floor division (a divisor of 0 or -1 replaced: IREE leaves
    ``x / 0`` and ``INT64_MIN / -1`` undefined)."""
    y = jnp.where((y == 0) | (y == -1), jnp.int64(7), y)
    return x // y


def composite_key(a: jax.Array, b: jax.Array) -> jax.Array:
    """Two int32 fields as one int64 key, ordered by ``a`` then ``b``
    (unsigned), offset by a constant outside the 32-bit range."""
    key = (a.astype(jnp.int64) << 32) | (b.astype(jnp.int64) & 0xFFFFFFFF)
    return key ^ jnp.int64(0x5DEECE66D)


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    fn: Callable[..., jax.Array]
    #: The input dtypes (each a vector of the program's length).
    dtypes: tuple[Any, ...]
    #: Whether it runs along rows (``ROWS x SCAN``; else a vector of ``SIZE``).
    scan: bool = False


PROGRAMS = [
    Program("splitmix64", splitmix64, (np.uint64,)),
    Program("cumsum", lambda x: jnp.cumsum(x, axis=-1), (np.int64,), scan=True),
    Program("compare+select", compare_select, (np.int64, np.int64)),
    Program("sort", jnp.sort, (np.int64,), scan=True),
    Program("divide", divide, (np.int64, np.int64)),
    Program("composite key", composite_key, (np.int32, np.int32)),
]

_EXTREMES = [0, 1, -1, 2, -2, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**32, -(2**32), 2**63 - 1, -(2**63),
             2**63 - 2, -(2**63) + 1, 0x0123456789ABCDEF, 3_000_000_007]


def make_inputs(program: Program, shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    """Adversarial inputs of ``shape``: the extremes of each type first,
    then values uniform over its whole range (each input shifted, so that
    extremes meet other extremes)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    out = []
    for k, dtype in enumerate(program.dtypes):
        info = np.iinfo(dtype)
        bits = rng.integers(0, 2**64, size=n, dtype=np.uint64)
        width = info.bits
        vals = bits if width == 64 else (bits >> np.uint64(64 - width))
        arr = vals.astype(np.uint64).astype(np.dtype(f"u{width // 8}")).view(np.dtype(dtype))
        arr = np.array(arr, dtype=dtype)
        extremes = np.array([e % (1 << width) for e in _EXTREMES], dtype=np.uint64)
        extremes = extremes.astype(np.dtype(f"u{width // 8}")).view(np.dtype(dtype))
        extremes = np.roll(extremes, k)[:n]
        arr[:len(extremes)] = extremes
        out.append(arr.reshape(shape))
    return out


# --------------------------------------------------------------------------
# The modules.
# --------------------------------------------------------------------------


def module_text(module: Any) -> str:
    return str(module.operation.get_asm(enable_debug_info=False))


def lower(program: Program, shape: tuple[int, ...]) -> tuple[str, str, no64.DemotionReport]:
    """The 64-bit module and no64's words, as text (and the conversion's
    report)."""
    args = [np.zeros(shape, dtype=d) for d in program.dtypes]
    module = lower_x64(program.fn, *args)
    original = module_text(module)
    report = no64.demote(module, policy="exact", target=TARGET)
    left = legalize(module, target_profile(TARGET)).left
    if left:
        raise AssertionError(f"{program.name}: forms {TARGET} refuses are left: {left}")
    if no64.find_64bit(module):
        raise AssertionError(f"{program.name}: the converted module holds 64-bit types")
    return original, module_text(module), report


def words_inputs(inputs: Sequence[np.ndarray], report: no64.DemotionReport) -> list[np.ndarray]:
    """The inputs as the converted module takes them: 64-bit ones that enter
    as words split into ``S x 2`` (``int32`` bit patterns: the module's
    ``ui32`` is ``i32`` to IREE), the others narrowed."""
    out = []
    for i, a in enumerate(inputs):
        if i in report.emulated_inputs:
            out.append(split_words(a).view(np.int32))
        elif a.dtype.itemsize == 8:
            out.append(a.astype(np.int32))
        else:
            out.append(a)
    return out


#: A SPIR-V op: ``spirv.<Name>`` at the start of an op's text.
_SPIRV_OP = re.compile(r"^\s*(?:%[^=]+=\s*)?\"?spirv\.[A-Za-z]", re.MULTILINE)


def count_kernels(executables: str) -> tuple[int, int]:
    """The dispatches (``hal.executable.export`` ops) and SPIR-V ops in the
    text of ``iree-compile --compile-to=executable-targets``."""
    return executables.count("hal.executable.export"), len(_SPIRV_OP.findall(executables))


# --------------------------------------------------------------------------
# IREE.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Iree:
    """The IREE tools and the Vulkan target to compile for."""

    bin: Path
    target: str
    workdir: Path

    def tool(self, name: str) -> str:
        return str(self.bin / name)

    def compile(self, text: str, stem: str) -> tuple[Path | None, str, tuple[int, int] | None]:
        """``(vmfb or None, first error line, (dispatches, SPIR-V ops))``."""
        src = self.workdir / f"{stem}.mlir"
        src.write_text(text)
        flags = ["--iree-input-type=stablehlo", "--iree-hal-target-device=vulkan",
                 f"--iree-vulkan-target={self.target}"]
        vmfb = self.workdir / f"{stem}.vmfb"
        run = subprocess.run([self.tool("iree-compile"), *flags, str(src), "-o", str(vmfb)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return None, _first_error(run.stderr, run.returncode), None
        exe = self.workdir / f"{stem}.executables.mlir"
        subprocess.run([self.tool("iree-compile"), *flags, "--compile-to=executable-targets", str(src),
                        "-o", str(exe)], capture_output=True, text=True, check=True)
        return vmfb, "", count_kernels(exe.read_text())

    def _input_flags(self, inputs: Sequence[np.ndarray], stem: str) -> list[str]:
        flags = []
        for i, a in enumerate(inputs):
            path = self.workdir / f"{stem}.in{i}.npy"
            np.save(path, np.ascontiguousarray(a))
            flags.append(f"--input=@{path}")
        return flags

    def run(self, vmfb: Path, inputs: Sequence[np.ndarray], stem: str) -> np.ndarray:
        out = self.workdir / f"{stem}.out.npy"
        subprocess.run([self.tool("iree-run-module"), "--device=vulkan", f"--module={vmfb}",
                        "--function=main", *self._input_flags(inputs, stem), f"--output=@{out}"],
                       capture_output=True, text=True, check=True)
        return np.load(out)

    def time_ms(self, vmfb: Path, inputs: Sequence[np.ndarray], stem: str, min_time: float) -> float:
        """One sample: the mean time of a call, in milliseconds, over calls
        lasting ``min_time`` seconds."""
        run = subprocess.run([self.tool("iree-benchmark-module"), "--device=vulkan", f"--module={vmfb}",
                              "--function=main", *self._input_flags(inputs, stem), "--benchmark_format=json",
                              f"--benchmark_min_time={min_time}s"],
                             capture_output=True, text=True, check=True)
        bench = json.loads(run.stdout)["benchmarks"][0]
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[bench["time_unit"]]
        return float(bench["real_time"]) * scale


def _first_error(stderr: str, rc: int) -> str:
    for line in stderr.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()[:100]
    return f"iree-compile exited with status {rc}"


def find_iree(bin_dir: str | None) -> tuple[Path | None, str]:
    """The folder of the IREE tools, or ``None`` and why not."""
    names = ("iree-compile", "iree-run-module", "iree-benchmark-module")
    if bin_dir:
        folder = Path(bin_dir)
    else:
        found = shutil.which("iree-compile")
        if found is None:
            return None, ("iree-compile not found (pip install iree-base-compiler iree-base-runtime, "
                          "or give --iree-bin / IREE_BIN)")
        folder = Path(found).parent
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        return None, f"{', '.join(missing)} not found in {folder}"
    return folder, ""


def vulkan_device(bin_dir: Path) -> str | None:
    """The Vulkan device IREE finds (its description), or ``None``."""
    try:
        run = subprocess.run([str(bin_dir / "iree-run-module"), "--list_devices=vulkan"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in run.stdout.splitlines() if ln.strip()]
    if run.returncode != 0 or not lines:
        return None
    return lines[0]


# --------------------------------------------------------------------------
# The measurement.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Side:
    """One compiled program: IREE's own emulation or no64's words."""

    compiled: bool = False
    error: str = ""
    dispatches: int | None = None
    spirv_ops: int | None = None
    correct: bool | None = None
    ms: float | None = None


@dataclasses.dataclass
class Row:
    program: str
    shape: str
    iree: Side
    words: Side

    @property
    def ratio(self) -> float | None:
        if self.iree.ms and self.words.ms:
            return self.words.ms / self.iree.ms
        return None


def measure(program: Program, shape: tuple[int, ...], iree: Iree, repeats: int, min_time: float) -> Row:
    original, converted, report = lower(program, shape)
    inputs = make_inputs(program, shape)
    with jax.default_device(jax.devices("cpu")[0]):
        expected = np.asarray(jax.jit(program.fn)(*inputs))
    stem = re.sub(r"\W+", "_", program.name)
    sides = {"iree": Side(), "words": Side()}
    feeds = {"iree": [a.view(np.int64) if a.dtype == np.uint64 else a for a in inputs],
             "words": words_inputs(inputs, report)}
    vmfbs: dict[str, Path] = {}
    for key, text in (("iree", original), ("words", converted)):
        side = sides[key]
        vmfb, error, counts = iree.compile(text, f"{stem}.{key}")
        if vmfb is None:
            side.error = error
            continue
        side.compiled = True
        assert counts is not None
        side.dispatches, side.spirv_ops = counts
        got = iree.run(vmfb, feeds[key], f"{stem}.{key}")
        if key == "words" and report.emulated_outputs:
            got = join_words(got.view(np.uint32 if expected.dtype == np.uint64 else np.int32))
        side.correct = bool(np.array_equal(got.view(expected.dtype), expected))
        vmfbs[key] = vmfb
    samples: dict[str, list[float]] = {k: [] for k in vmfbs}
    for _ in range(repeats):
        for key, vmfb in vmfbs.items():
            samples[key].append(iree.time_ms(vmfb, feeds[key], f"{stem}.{key}", min_time))
    for key, times in samples.items():
        sides[key].ms = min(times)
    return Row(program.name, "x".join(map(str, shape)), sides["iree"], sides["words"])


def _cell(side: Side) -> list[str]:
    if not side.compiled:
        return ["-", "-", "refused", ""]
    ok = "" if side.correct else " WRONG"
    return [str(side.dispatches), str(side.spirv_ops), f"{side.ms:.3f}" if side.ms else "?", ok]


def print_table(rows: Sequence[Row], header: str) -> None:
    print(header)
    print(f"{'program':<16}{'shape':>8} | {'IREE i64: disp':>14}{'SPIR-V':>8}{'ms':>10} | "
          f"{'words: disp':>11}{'SPIR-V':>8}{'ms':>10} | {'words/IREE':>10}")
    for r in rows:
        a, b = _cell(r.iree), _cell(r.words)
        ratio = f"x{r.ratio:.2f}" if r.ratio is not None else "-"
        print(f"{r.program:<16}{r.shape:>8} | {a[0]:>14}{a[1]:>8}{a[2]:>10}{a[3]} | "
              f"{b[0]:>11}{b[1]:>8}{b[2]:>10}{b[3]} | {ratio:>10}")
    for r in rows:
        if not r.iree.compiled:
            print(f"  {r.program}: IREE's own emulation refused: {r.iree.error}")
        if not r.words.compiled:
            print(f"  {r.program}: no64's words refused: {r.words.error}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=SIZE, help="length of the elementwise programs")
    parser.add_argument("--scan-size", type=int, default=SCAN, help="row length of the cumsum and the sort")
    parser.add_argument("--rows", type=int, default=ROWS, help="rows of the cumsum and the sort")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (the fastest shown)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of calls per timed sample")
    parser.add_argument("--programs", default="", help="comma-separated names (default: all)")
    parser.add_argument("--vulkan-target", default="valhall", help="a Vulkan target without Int64")
    parser.add_argument("--iree-bin", default=os.environ.get("IREE_BIN"), help="folder of the IREE tools")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    folder, why = find_iree(args.iree_bin)
    if folder is None:
        print(f"bench_iree_vulkan: skipped: {why}")
        return 0
    device = vulkan_device(folder)
    if device is None:
        print("bench_iree_vulkan: skipped: IREE finds no Vulkan device "
              "(install a Vulkan driver, e.g. Mesa's lavapipe: mesa-vulkan-drivers)")
        return 0
    chosen = [p for p in PROGRAMS if not args.programs or p.name in args.programs.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="no64-iree-") as tmp:
        iree = Iree(folder, args.vulkan_target, Path(tmp))
        for program in chosen:
            shape = (args.rows, args.scan_size) if program.scan else (args.size,)
            rows.append(measure(program, shape, iree, args.repeats, args.min_time))
    if args.json:
        print(json.dumps([dataclasses.asdict(r) | {"ratio": r.ratio} for r in rows], indent=2))
    else:
        print_table(rows, f"IREE Vulkan ({args.vulkan_target}, no Int64) on {device}; "
                          f"fastest of {args.repeats} rounds")
    wrong = [r.program for r in rows if r.words.compiled and not r.words.correct]
    if wrong:
        print(f"no64's words computed wrong results: {', '.join(wrong)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
