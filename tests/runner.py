"""Run one single-device module on many inputs, compiling it once.

``no64.jax.reference.run_module`` compiles the module at every call, which
is right for one run and slow for the dozens of adversarial input sets the
golden and property tests feed each module.  :func:`compile_module` compiles
once on the CPU backend and returns a function of the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.extend.backend
import numpy as np
from jax._src.lib import xla_client as xc

import no64
from no64.core._mlir import ir
from no64.jax.reference import main_signature


def compile_module(module: ir.Module, *, strict: bool) -> Callable[[Sequence[np.ndarray]], list[np.ndarray]]:
    """Compile ``module`` (``strict``: first check that it is 64-bit free)."""
    if strict:
        no64.check(module)
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
        with jax.enable_x64(True):
            inputs = [jax.device_put(a, device) for a in args]
            results = executable.execute_sharded(inputs)
            shards = results.disassemble_into_single_device_arrays()
            return [np.asarray(per_device[0]) for per_device in shards]

    return run
