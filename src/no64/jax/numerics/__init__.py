"""What float32 does to a float64 program, measured on the user's own data.

Static hints (:mod:`no64.analysis.float_hints`) guess where float32 changes
a float64 result; only the data can tell.  :func:`numerics` runs a function
twice on the CPU, equation by equation: its x64 program (the reference) and
the 32-bit program JAX traces from the same Python with x64 off (what the
default float policy runs: float64 computed as float32), on the same
arguments, the float64 ones rounded to float32 for the second (64-bit
integers narrowed to 32 bits, host sentinels such as ``INT64_MAX`` mapped to
the 32-bit extremes as the hook maps them; a result that keeps one counts
as equal).  A sampler of float64 values (``jax.random.normal``, ``uniform``,
``bernoulli``: a call whose own equations draw more random bits in the x64
program than in the 32-bit one) gives the 32-bit program the x64 program's
draw, rounded to float32: the hook runs the x64 draw (JAX's 32-bit program
draws other numbers); PRNG keys are compared by their bits.  Both traces
come from the same code, so their equations pair up one to one; nested
``jit``s and custom derivatives are followed inside, loops and branches are
compared as one step each (their outputs).  Each program is compiled once
for the CPU, every equation a computation of its own that returns its
values (the taken branch of a ``lax.cond``, its operands parameters), so
that each equation computes what it computes evaluated alone, bit for bit,
with no simplification or fusion across equations; a function measured
again runs the programs compiled for it.

For every equation whose float output differs from the reference by more
than ``tol`` (normwise: the largest difference over the largest magnitude
of that output; where the reference is 0 throughout, which leaves no
relative error to take, the largest difference itself, an *absolute*
error, said as such; float64's extremes standing for float32's, as no64
maps them, count as equal), or which makes ``inf``
or ``nan`` where the reference is finite, or whose integer or boolean
output differs (a comparison that flips, a trip count), the report names
the user's source line and says whether the line *introduces* the error
(its inputs were within ``tol``) or *amplifies* it (its output error is ten
times its inputs'), with the worst element, its reference value and what
float32 gave.  Lines that only carry an error are not reported, nor, when
the function's outputs are within ``tol`` of the reference, lines whose
float error does not reach them (a sum of deviations that cancels to
rounding noise); ``inf``/``nan`` and changed decisions are reported always.
A sum (``reduce_sum``, ``add``, ``sub``) whose x64 result is float64's own
rounding noise (within ``n`` epsilons of the sum of its ``n`` terms'
magnitudes: zero in exact arithmetic, such as a sum of deviations from
their mean) is not judged against that noise.  It then
runs the function under ``float_policy="pairs"`` (:func:`no64.jit`) and
says how far the outputs are from the reference there: the measured fix.

The package, by job (each module imports only those above it): ``report``
(the report and its lines), ``errors`` (how far float32's output is from
x64's), ``walk`` (the two programs' equations side by side) and ``run``
(measuring a function).
"""

from __future__ import annotations

from .errors import is_prng_key
from .report import ABSOLUTE, PAIRS_DO_NOT_HELP, NumericsLine, NumericsReport
from .run import argument32, numerics

__all__ = ["ABSOLUTE", "NumericsLine", "NumericsReport", "PAIRS_DO_NOT_HELP", "argument32", "is_prng_key", "numerics"]
