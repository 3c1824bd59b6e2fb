"""Three ops Neuron's profile has something to say about, under no64 audit --target neuron:
an int32 matmul whose sums pass 2**24 (made exact: limb dots), an f32 reduce_precision
(made exact: integer ops on its bits) and an int32 top_k (refused, EVRF013)."""

import jax
import numpy as np

a = np.arange(8 * 64, dtype=np.int32).reshape(8, 64) * 40_000


@jax.jit
def step(a):
    sums = a @ a.T  # MATMUL LINE
    bf16 = jax.lax.reduce_precision(a * 1.5, 8, 7)  # ROUNDED LINE
    top = jax.lax.top_k(a, 2)[0]  # REFUSED LINE
    return sums, bf16, top


print("sum", int(np.asarray(step(a)[0]).sum()))
