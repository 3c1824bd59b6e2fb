"""The IREE Vulkan benchmark's machinery, without IREE or Vulkan.

``benchmarks/bench_iree_vulkan.py`` compares no64's words with IREE's own
64-bit emulation on a Vulkan device; CI has neither.  Here each of its
programs is lowered and converted on tiny shapes, the converted module is
run on the CPU with the inputs as the benchmark hands them to IREE, and its
results are checked bit for bit against the 64-bit program; the kernel
count is read from a fixed text; and without the IREE tools the benchmark
says so and exits with status 0.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

import no64
from no64.jax.reference import run_module
from support import load_benchmark

bench = load_benchmark("bench_iree_vulkan")


@pytest.mark.parametrize("name", [p.name for p in bench.PROGRAMS])
def test_program_converts_and_its_words_are_bit_exact(name: str) -> None:
    program = next(p for p in bench.PROGRAMS if p.name == name)
    shape = (3, 300) if program.scan else (67,)  # rows past 256: the cumsum is doubled
    original, converted, report = bench.lower(program, shape)
    assert "i64" in original or "ui64" in original
    assert report.ops_emulated > 0
    module = no64.jax.reference.parse_module(converted)
    assert no64.find_64bit(module) == []
    inputs = bench.make_inputs(program, shape)
    with jax.default_device(jax.devices("cpu")[0]):
        expected = np.asarray(jax.jit(program.fn)(*inputs))
    # (IREE takes ui32 as i32: the benchmark hands it int32 bit patterns)
    feeds = [w.view(np.uint32) if a.dtype == np.uint64 else w
             for a, w in zip(inputs, bench.words_inputs(inputs, report))]
    (got,) = run_module(module, feeds)
    assert report.emulated_outputs == [0]
    got = no64.join_words(got.view(np.uint32 if expected.dtype == np.uint64 else np.int32))
    np.testing.assert_array_equal(got.view(expected.dtype), expected)


def test_inputs_start_with_the_extremes_of_their_type() -> None:
    program = next(p for p in bench.PROGRAMS if p.name == "compare+select")
    x, y = bench.make_inputs(program, (40,))
    assert x.dtype == y.dtype == np.int64
    assert {np.iinfo(np.int64).max, np.iinfo(np.int64).min, 2**32, -1} <= set(x[:20].tolist())
    assert x[1] == y[2]  # shifted against each other


def test_kernels_and_spirv_ops_are_counted() -> None:
    text = """
    hal.executable private @main_dispatch_0 {
      hal.executable.variant public @vulkan_spirv_fb target(#executable_target) {
        hal.executable.export public @main_dispatch_0_elementwise_5_i32 ordinal(0)
        builtin.module {
          spirv.module Logical GLSL450 requires #spirv.vce<v1.6, [Shader], []> {
            spirv.func @main_dispatch_0() "None" {
              %cst = spirv.Constant 0 : i32
              %0 = spirv.IAdd %cst, %cst : i32
              spirv.Return
            }
          }
        }
      }
    }
    hal.executable private @main_dispatch_1 {
      hal.executable.variant public @vulkan_spirv_fb target(#executable_target) {
        hal.executable.export public @main_dispatch_1_slow_memcpy ordinal(0)
      }
    }
    """
    assert bench.count_kernels(text) == (2, 5)


def test_without_iree_the_benchmark_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--iree-bin", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "iree-compile" in out


def test_without_a_vulkan_device_the_benchmark_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tools that find no device (here: stand-ins that fail) make it skip too."""
    for name in ("iree-compile", "iree-run-module", "iree-benchmark-module"):
        tool = tmp_path / name
        tool.write_text("#!/bin/sh\nexit 1\n")
        tool.chmod(0o755)
    assert bench.main(["--iree-bin", str(tmp_path)]) == 0
    assert "no Vulkan device" in capsys.readouterr().out
