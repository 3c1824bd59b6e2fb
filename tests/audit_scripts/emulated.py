"""A 64-bit shift by 40 inside an x64 scope of a jitted function: no 32-bit
form, so the hook computes it exactly in 32-bit word pairs."""

import jax
from no64.jax._compat import enable_x64
import jax.numpy as jnp

import no64


@jax.jit
def round_trip(x):
    with enable_x64(True):
        wide = x.astype(jnp.int64) << 40  # SHIFT LINE
        back = wide >> 40  # BACK LINE
    return back.astype(jnp.int32)


print("result", round_trip(jnp.array([-3, 0, 7], dtype=jnp.int32)).tolist())
print("emulated", sorted(r.module for r in no64.compile_records() if r.report and r.report.values_emulated))
