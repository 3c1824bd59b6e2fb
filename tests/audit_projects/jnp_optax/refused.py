"""Traces one function with x64 on in a scope: no64 refuses its module."""

import jax
from support import enable_x64
import numpy as np

import metrics  # noqa: F401

print("before")
with enable_x64(True):
    out = jax.jit(lambda x: x * 2)(np.arange(3))  # REFUSED LINE
print("not reached", out)
