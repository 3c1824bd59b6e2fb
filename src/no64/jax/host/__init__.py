"""Host values: no64, not JAX, narrows 64-bit host data to 32 bits.

With ``jax_enable_x64`` off, JAX converts 64-bit host data to 32 bits by
blind truncation: ``np.int64(INT64_MAX)`` becomes ``-1``, ``INT64_MIN``
becomes ``0``, ``np.array([2**40])`` becomes ``[0]``, a float64 ``1e300``
becomes ``inf``, and a Python int outside the int32 range is an
``OverflowError``.  no64 turns x64 off for a platform without 64-bit types
(``NO64_PLATFORMS``, :func:`no64.install`) and inside :func:`no64.jit`, so
while it does, every such conversion goes through the rules the pass applies
to module constants (:mod:`no64.transforms.constants`):

* ``INT64_MAX``/``INT64_MIN``/``UINT64_MAX`` and float64's largest finite
  value and its negation map to the 32-bit extremes (report kind
  ``"sentinel"``);
* an array holding a sentinel and, as an ordinary value, the 32-bit extreme
  it maps to raises :class:`HostRangeError` naming both;
* any other integer outside the 32-bit range raises :class:`HostRangeError`
  (a :class:`no64.ConstantRangeError`) naming the value and the user's
  source line, or is narrowed by the integer policy (``"saturated"`` /
  ``"wrapped"``); where JAX refuses the value too (a Python int at one of
  JAX's range checks), the error is a :class:`PythonIntRangeError`, also an
  ``OverflowError`` as JAX's is.  In a program that did not ask for x64
  (its meaning is JAX's 32-bit program), a value JAX itself truncates keeps
  its low 32 bits as JAX's would (a float beyond float32 becomes ``inf``),
  recorded;
* float64 values are rounded to the nearest float32 (``"float-inexact"``,
  ``"float-overflow"`` for finite values that become ``inf``).

Each narrowing that is not exact is recorded against the user's source line
(:func:`host_records`), as the pass records it against the op's location.

Where JAX 0.10 converts host data, and the hook for each
------------------------------------------------------
1. ``dtypes.canonicalize_value`` (jaxlib's C++ registry): numpy arrays and
   scalars and Python scalars become ``TypedNdArray``/``TypedInt``/
   ``TypedFloat`` of the canonical dtype.  It serves ``Primitive.bind``
   (every eager op and every traced op with a numpy or Python operand, so
   closed-over constants), ``pxla.shard_args`` (``jit`` arguments,
   ``device_put``, ``jnp.asarray`` of a numpy array), ``vjp`` and the
   partial evaluator.  no64 registers its own handlers for ``np.ndarray``,
   the 64-bit numpy scalar types, ``int`` and ``float``.  (JAX 0.7
   canonicalises a traced constant only when the program is lowered or
   called, where the user's line is gone: there no64 has the trace
   canonicalise it when taking it in, as later releases do.)
2. ``core.pytype_aval_mappings[int]``: the abstract value of a Python int
   (``jit`` argument parsing, ``shaped_abstractify``), which raises
   ``OverflowError`` outside int32.  Wrapped: a sentinel or policy-narrowed
   int gets an int32 aval, any other out-of-range int is refused here.
3. ``lax._convert_element_type``: a Python or numpy scalar or a numpy array
   converted to a requested dtype on the host, by ``np.asarray(x, dtype)``
   or ``astype`` (``lax.full``/``jnp.full``/``full_like``, ``fill_value``,
   ``initial=``, ``jnp.arange``, dtype promotion in every ``jnp`` function).
   Wrapped: a 64-bit host operand converted to the 32-bit type of its kind
   is narrowed by no64 first.
4. ``jnp.array``/``jnp.asarray``/``jnp.int64(...)``: lists, Python scalars
   and numpy arrays with a requested dtype are converted by
   ``np.asarray(object, dtype=<canonical dtype>)`` before anything else.
   Wrapped: such input is converted as the x64 program would convert it,
   then narrowed by no64; a Python scalar requested as a 32-bit type (from
   jax 0.12 ``jnp.nonzero`` converts its ``fill_value`` so, with the 32-bit
   index type JAX canonicalised the x64 program's to) is narrowed as by (3).
5. The C++ ``jit`` dispatch path converts numpy arguments itself, without
   calling back into Python.  ``pjit._get_fastpath_data`` is wrapped so that
   a call with a 64-bit numpy argument -- or a numpy argument of their
   32-bit images (int32, uint32, float32, complex64), whose C++ cache entry
   a later 64-bit argument would hit, jaxlib keying it by canonical dtype --
   never gets a C++ fast path: such calls always go through (1).
   ``jax.Array`` and Python scalar arguments keep it.  An AOT
   ``Compiled`` object's C++ call (``MeshExecutable.create_cpp_call``) is
   wrapped likewise: with 64-bit numpy arguments it takes the Python path.

6. ``dtypes.coerce_to_array``: a Python number made a numpy array with
   JAX's dtype rules (``lax.asarray``: ``jnp.unique``'s ``fill_value``).
   Wrapped like (3).

Every function ``jit`` traces is followed from its host sentinels
(``pjit._infer_params`` wrapped: :func:`sentinel_reads`), and no64's own
frames are excluded from JAX's source locations.

Lowering (``mlir.ir_constant``) sees only canonicalized values: a 64-bit
constant that still reaches a module (a ``jax.Array`` made with x64 on) is
narrowed by the compile hook's pass, with the same rules.

The package, by job (each module imports only those above it):
``policy`` (when no64 narrows, the dtypes), ``records`` (the user's line,
the records), ``narrowing`` (the rules), ``x64_dtypes`` (the x64
program's dtype noted on the arrays JAX makes from host data), JAX's
conversion points wrapped -- ``canonical`` (its canonicalisation, (1) and
(2)), ``conversions`` (to a requested dtype, (3), (4) and (6)) and
``guards`` (its C++ fast paths, (5), and its dtype warnings) --,
``sentinel_walk`` (host sentinels followed through a traced program),
``sentinels`` (the host sentinels of a jit call found, and what the walk
finds acted on), ``install`` (all of it put in place) and ``callers`` (the
user's line of an op inside a library's jitted function).
"""

from __future__ import annotations

from ...errors import HostRangeError, PythonIntRangeError
from .callers import name_callers_line
from .canonical import on_wide_narrowed, wide_original, wide_pending
from .guards import veto_fast_path
from .install import install_hooks
from .narrowing import (
    PAIRS as SENTINEL_PAIRS,
    check_float_range,
    check_pair_range,
    clear_warned,
    host_pairs,
    narrow_host_array,
    narrow_python_float,
    narrow_python_int,
)
from .policy import NARROWED, NARROWED_IMAGES, host_policy
from .records import clear_host_records, eqn_source, host_records, library_constants, library_function, user_source
from .sentinel_walk import SentinelRead, sentinel_reads
from .sentinels import argument_seeds, check_sentinel_reads, judged_by_x64_module, result_sentinels
from .x64_dtypes import computes_otherwise, host_bounds

__all__ = [
    "HostRangeError",
    "NARROWED",
    "NARROWED_IMAGES",
    "PythonIntRangeError",
    "SENTINEL_PAIRS",
    "SentinelRead",
    "argument_seeds",
    "check_float_range",
    "check_pair_range",
    "check_sentinel_reads",
    "clear_host_records",
    "clear_warned",
    "computes_otherwise",
    "host_bounds",
    "eqn_source",
    "host_pairs",
    "host_policy",
    "host_records",
    "install_hooks",
    "judged_by_x64_module",
    "library_constants",
    "library_function",
    "name_callers_line",
    "narrow_host_array",
    "narrow_python_float",
    "narrow_python_int",
    "on_wide_narrowed",
    "result_sentinels",
    "sentinel_reads",
    "user_source",
    "veto_fast_path",
    "wide_original",
    "wide_pending",
]
