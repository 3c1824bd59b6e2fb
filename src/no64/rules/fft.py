"""A complex128 Fourier transform as float64 arithmetic on its real and
imaginary parts.

XLA:TPU keeps complex128 and float64 but has no Fourier transform of them
("Unexpected operand type for FFT: c128").  The ``unfold`` rule of ``fft``
(:func:`fft`, applied by :mod:`no64.transforms.legalize` where the target's
profile refuses the op form :attr:`~no64.kinds.OpForm.FFT`) computes it
with float64 ops the device has: the values as pairs of float64 tensors
(real, imaginary), each length ``N`` transformed along its axis

* directly, as float64 ``dot_general`` ops with the ``N x N`` matrix of
  ``exp(-+2 pi i n k / N)`` (four real products: ``re = xr Wr - xi Wi``,
  ``im = xr Wi + xi Wr``) where ``N`` is at most :data:`DIRECT` or prime
  (up to :data:`LARGEST_PRIME`);
* otherwise by the four-step decomposition ``N = N1 N2`` (``N1`` the
  divisor of ``N`` nearest its square root): ``N2`` transforms of length
  ``N1``, the twiddles ``exp(-+2 pi i n2 k1 / N)``, ``N1`` transforms of
  length ``N2`` (each again direct or four-step), and the transpose that
  puts ``k1 + N1 k2`` in order.

Every matrix and twiddle is a float64 constant, its angle reduced exactly
(``n k mod N``) and to the first octant before its cosine and sine are
taken, so each is within an ulp or so of the exact value.  The error of a
transform is then that of an FFT: ``tests/targets/test_tpu.py`` holds each
output within ``4 eps log2(N) ||x||_2`` of numpy's transform in extended
precision (``N`` the product of the lengths; an inverse transform within
that divided by ``N``), as it holds XLA's own float64 FFT on the CPU;
measured, both stay below ``1 eps log2(N) ||x||_2``.

``FFT`` and ``IFFT`` transform the last one to three axes (``IFFT`` scaled
by ``1 / prod(fft_length)``); ``RFFT`` transforms its real input as complex
and keeps the first ``N // 2 + 1`` outputs of the last axis; ``IRFFT``
transforms the other axes inversely, extends the last to the full
Hermitian spectrum (``X[N - k] = conj(X[k])``) and keeps the real part of
its inverse -- which, as numpy's and XLA's do, takes only the real part of
``X[0]`` (and of ``X[N / 2]`` for even ``N``).  A length with a prime factor
above :data:`LARGEST_PRIME`, or a dynamic shape, is left as it is, with
why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..ir import words as W
from ..ir._mlir import ir, stablehlo
from ..spec.protocols import Legalization

__all__ = ["DIRECT", "LARGEST_PRIME", "fft", "twiddles"]

#: Lengths up to this are transformed directly (one ``N x N`` matrix).
DIRECT = 64
#: A prime length up to this is transformed directly; a larger prime factor
#: is refused (its matrix would be too large a constant).
LARGEST_PRIME = 512

Complex = tuple[ir.Value, ir.Value]


def twiddles(rows: int, cols: int, n: int, sign: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` of ``sign * 2 pi r c / n`` for ``r < rows``, ``c <
    cols``: the angle ``r c mod n`` reduced exactly, then to the first octant."""
    j = (np.arange(rows, dtype=np.int64)[:, None] * np.arange(cols, dtype=np.int64)[None, :]) % n
    # j / n turns as 8 j / n eighths: octant o, offset in [0, 1] eighths
    eighth, rest = np.divmod(8 * j, n)
    t = rest / n  # fraction of an eighth, in [0, 1)
    a = np.where(eighth % 2 == 0, t, 1.0 - t) * (np.pi / 4)  # the angle within its octant, [0, pi/4]
    c0, s0 = np.cos(a), np.sin(a)
    # each octant: (cos, sin) of the angle from the first octant's (c0, s0)
    table = {0: (c0, s0), 1: (s0, c0), 2: (-s0, c0), 3: (-c0, s0),
             4: (-c0, -s0), 5: (-s0, -c0), 6: (s0, -c0), 7: (c0, -s0)}
    cos = np.select([eighth == o for o in range(8)], [table[o][0] for o in range(8)])
    sin = np.select([eighth == o for o in range(8)], [table[o][1] for o in range(8)])
    return cos, sign * sin


# ------------------------------------------------------------ small builders
def _f64() -> ir.Type:
    return ir.F64Type.get()


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _t(shape: Sequence[int]) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(shape), _f64())


def _const(values: np.ndarray) -> ir.Value:
    t = _t(values.shape)
    arr = np.ascontiguousarray(values, dtype=np.float64)
    return W.build("constant", [], [t], value=ir.DenseElementsAttr.get(arr, type=t)).results[0]


def _reshape(z: Complex, shape: Sequence[int]) -> Complex:
    return (W.make("reshape", [z[0]], _t(shape)), W.make("reshape", [z[1]], _t(shape)))


def _transpose(z: Complex, perm: Sequence[int]) -> Complex:
    if list(perm) == list(range(len(perm))):
        return z
    shape = [_shape(z[0])[p] for p in perm]
    attr = ir.DenseI64ArrayAttr.get(list(perm))
    return (W.make("transpose", [z[0]], _t(shape), permutation=attr),
            W.make("transpose", [z[1]], _t(shape), permutation=attr))


def _binary(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return W.make(name, [a, b], a.type)


def _dot(x: ir.Value, m: ir.Value) -> ir.Value:
    """``x @ m`` for ``x`` of shape ``(M, N)`` and ``m`` of ``(N, K)``, in float64."""
    dn = stablehlo.DotDimensionNumbers.get(lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                                           lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    prec = ir.ArrayAttr.get([stablehlo.PrecisionAttr.get("HIGHEST")] * 2)
    return W.make("dot_general", [x, m], _t([_shape(x)[0], _shape(m)[1]]), dot_dimension_numbers=dn,
                  precision_config=prec)


def _times(z: Complex, w: Complex) -> Complex:
    """The elementwise complex product."""
    re = _binary("subtract", _binary("multiply", z[0], w[0]), _binary("multiply", z[1], w[1]))
    im = _binary("add", _binary("multiply", z[0], w[1]), _binary("multiply", z[1], w[0]))
    return re, im


def _split(n: int) -> int | None:
    """The divisor of ``n`` nearest its square root (from below), or None for a prime."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return None


def _largest_prime_factor(n: int) -> int:
    largest, d = 1, 2
    while d * d <= n:
        while n % d == 0:
            largest, n = d, n // d
        d += 1
    return max(largest, n) if n > 1 else largest


# ------------------------------------------------------------ the transforms
def _dft(z: Complex, n: int, sign: int) -> Complex:
    """The transform of length ``n`` of each row of ``z`` (shape ``(M, n)``)."""
    if n == 1:
        return z
    n1 = None if n <= DIRECT else _split(n)
    if n1 is None:
        cos, sin = twiddles(n, n, n, sign)
        wr, wi = _const(cos), _const(sin)
        re = _binary("subtract", _dot(z[0], wr), _dot(z[1], wi))
        im = _binary("add", _dot(z[0], wi), _dot(z[1], wr))
        return re, im
    n2 = n // n1
    rows = _shape(z[0])[0]
    # n = n1 * N2 + n2: the length-n1 transforms along n1, for each n2
    step = _transpose(_reshape(z, [rows, n1, n2]), [0, 2, 1])
    step = _reshape(_dft(_reshape(step, [rows * n2, n1]), n1, sign), [rows, n2, n1])
    cos, sin = twiddles(n2, n1, n, sign)
    w = tuple(W.make("broadcast_in_dim", [_const(c)], _t([rows, n2, n1]),
                     broadcast_dimensions=ir.DenseI64ArrayAttr.get([1, 2])) for c in (cos, sin))
    step = _times(step, (w[0], w[1]))
    # then the length-n2 transforms along n2, for each k1; k = k1 + n1 * k2
    step = _transpose(step, [0, 2, 1])
    step = _reshape(_dft(_reshape(step, [rows * n1, n2]), n2, sign), [rows, n1, n2])
    return _reshape(_transpose(step, [0, 2, 1]), [rows, n])


def _along(z: Complex, axis: int, sign: int) -> Complex:
    """The transform of ``z`` along ``axis``."""
    shape = _shape(z[0])
    rank, n = len(shape), shape[axis]
    perm = [*(i for i in range(rank) if i != axis), axis]
    moved = _transpose(z, perm)
    moved_shape = [shape[p] for p in perm]
    flat = _reshape(moved, [math.prod(moved_shape[:-1]), n])
    back = _reshape(_dft(flat, n, sign), moved_shape)
    return _transpose(back, [perm.index(i) for i in range(rank)])


def _slice_last(v: ir.Value, stop: int) -> ir.Value:
    shape = _shape(v)
    rank = len(shape)
    return W.make("slice", [v], _t([*shape[:-1], stop]), start_indices=ir.DenseI64ArrayAttr.get([0] * rank),
                  limit_indices=ir.DenseI64ArrayAttr.get([*shape[:-1], stop]),
                  strides=ir.DenseI64ArrayAttr.get([1] * rank))


def _hermitian(z: Complex, n: int) -> Complex:
    """The full spectrum of length ``n`` along the last axis from its first
    ``n // 2 + 1`` values: ``X[n - k] = conj(X[k])`` for ``k`` in ``1 ..
    (n - 1) // 2``."""
    shape = _shape(z[0])
    rank, half = len(shape), n // 2 + 1
    if n - half == 0:
        return z
    mirrored = []
    for part, sign in zip(z, (1.0, -1.0)):
        start = [0] * rank
        start[-1] = 1
        limit = [*shape[:-1], n - half + 1]
        piece = W.make("slice", [part], _t([*shape[:-1], n - half]), start_indices=ir.DenseI64ArrayAttr.get(start),
                       limit_indices=ir.DenseI64ArrayAttr.get(limit), strides=ir.DenseI64ArrayAttr.get([1] * rank))
        piece = W.make("reverse", [piece], piece.type, dimensions=ir.DenseI64ArrayAttr.get([rank - 1]))
        if sign < 0:
            piece = W.make("negate", [piece], piece.type)
        mirrored.append(W.make("concatenate", [part, piece], _t([*shape[:-1], n]),
                               dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank - 1)))
    return mirrored[0], mirrored[1]


def _scaled(z: Complex, factor: float) -> Complex:
    s = W.make("constant", [], z[0].type, value=ir.DenseElementsAttr.get_splat(
        ir.RankedTensorType(z[0].type), ir.FloatAttr.get(_f64(), factor)))
    return _binary("multiply", z[0], s), _binary("multiply", z[1], s)


class _Written:
    """An ``fft`` replaced by float64 arithmetic (a :class:`~no64.spec.protocols.Legalization`)."""

    def __init__(self, op: ir.Operation, kind: str, lengths: list[int]) -> None:
        self.op, self.kind, self.lengths = op, kind, lengths

    @property
    def summary(self) -> str:
        return (f"{self.kind} of length {'x'.join(map(str, self.lengths))} as float64 dot_general ops on its "
                "real and imaginary parts")

    @property
    def ops(self) -> int:
        return 0

    def apply(self) -> None:
        op, kind, lengths = self.op, self.kind, self.lengths
        x, result = op.operands[0], op.results[0]
        with ir.InsertionPoint(op), op.location:
            shape = _shape(x)
            rank, dims = len(shape), len(lengths)
            axes = list(range(rank - dims, rank))
            if kind == "RFFT":
                zero = W.make("constant", [], x.type, value=ir.DenseElementsAttr.get_splat(
                    ir.RankedTensorType(x.type), ir.FloatAttr.get(_f64(), 0.0)))
                z: Complex = (x, zero)
            else:
                part = _t(shape)
                z = (W.make("real", [x], part), W.make("imag", [x], part))
            sign = 1 if kind in ("IFFT", "IRFFT") else -1
            if kind == "IRFFT":
                for axis in axes[:-1]:
                    z = _along(z, axis, sign)
                z = _along(_hermitian(z, lengths[-1]), axes[-1], sign)
            else:
                for axis in axes:
                    z = _along(z, axis, sign)
            if sign > 0:
                z = _scaled(z, 1.0 / math.prod(lengths))
            if kind == "RFFT":
                z = (_slice_last(z[0], lengths[-1] // 2 + 1), _slice_last(z[1], lengths[-1] // 2 + 1))
            out = z[0] if kind == "IRFFT" else W.make("complex", [z[0], z[1]], result.type)
        result.replace_all_uses_with(out)
        op.erase()


def fft(op: ir.Operation) -> Legalization | str:
    """``op``, an ``fft`` of complex128 (or float64) values, as float64
    arithmetic (see the module docstring), or why not."""
    x, r = op.operands[0].type, op.results[0].type
    if not (isinstance(x, ir.RankedTensorType) and ir.RankedTensorType(x).has_static_shape
            and isinstance(r, ir.RankedTensorType)):
        return "an fft of dynamic shape"
    kind = str(stablehlo.FftTypeAttr(op.attributes["fft_type"]).value)
    lengths = list(ir.DenseI64ArrayAttr(op.attributes["fft_length"]))
    elem = ir.RankedTensorType(r if kind == "RFFT" else x).element_type
    if not (isinstance(elem, ir.ComplexType) and isinstance(ir.ComplexType(elem).element_type, ir.F64Type)):
        return "not an fft of complex128 values (no64 writes out those)"
    if not 1 <= len(lengths) <= 3 or 0 in lengths:
        return f"an fft over {len(lengths)} axes of lengths {lengths}"
    worst = max(_largest_prime_factor(n) for n in lengths)
    if worst > LARGEST_PRIME:
        return f"a length with the prime factor {worst} (no64 transforms prime lengths up to {LARGEST_PRIME})"
    return _Written(op, kind, lengths)
