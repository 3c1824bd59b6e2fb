"""Integer ``power`` on 64-bit values carried as words (``policy="exact"``),
compared bit for bit with the 64-bit program on XLA's CPU backend, on
adversarial inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import no64
from no64.jax.reference import converted_inputs, parse_module, run_module
from no64.transforms.emulate import join_words

I64 = np.iinfo(np.int64)
BASES = [0, 1, -1, 2, -2, 3, -3, 7, 2**31, -(2**31), 2**32, 2**32 + 1, 2**40 + 1, -(2**33) - 7,
         3037000499, I64.max, I64.min, I64.min + 1]
EXPONENTS = [0, 1, 2, 3, 5, 31, 32, 33, 62, 63, 64, 65, 127, 2**62, I64.max, -1, -2, -3, -64, -(2**62), I64.min]


def _signed(values: list[int], t: str) -> np.ndarray:
    """``values`` as 64-bit integers of type ``t`` (their bits modulo 2**64)."""
    bits = np.array([v % 2**64 for v in values], np.uint64)
    return bits if t == "ui64" else bits.view(np.int64)


def _power(t: str, n: int, base: str | None = None, exponent: str | None = None) -> str:
    """``main(x, y) = power(x, y)`` over ``n`` elements; a constant ``base``
    or ``exponent`` (MLIR dense text) replaces its argument."""
    T = f"tensor<{n}x{t}>"
    lines = [f"func.func public @main(%x: {T}, %y: {T}) -> {T} {{"]
    b, e = "%x", "%y"
    if base is not None:
        lines.append(f"  %b = stablehlo.constant dense<{base}> : {T}")
        b = "%b"
    if exponent is not None:
        lines.append(f"  %e = stablehlo.constant dense<{exponent}> : {T}")
        e = "%e"
    lines += [f"  %p = stablehlo.power {b}, {e} : {T}",
              # (keeps both arguments read, so the signature does not change)
              f"  %z = stablehlo.subtract %x, %x : {T}",
              f"  %w = stablehlo.multiply %z, %y : {T}",
              f"  %r = stablehlo.add %p, %w : {T}",
              f"  return %r : {T}", "}"]
    return "\n".join(lines)


def _dense(values: list[int], t: str) -> str:
    vals = [v % 2**64 if t == "ui64" else v for v in values]
    return "[" + ", ".join(str(v) for v in vals) + "]"


def _xla_power(base: int, exponent: int, t: str = "i64") -> int:
    """``base ** exponent`` (bits modulo 2**64) as this jaxlib's XLA
    computes it at run time."""
    text = (f"func.func public @main(%x: tensor<{t}>, %y: tensor<{t}>) -> tensor<{t}> {{\n"
            f"  %p = stablehlo.power %x, %y : tensor<{t}>\n  return %p : tensor<{t}>\n}}")
    x, y = (_signed([v], t).reshape(()) for v in (base, exponent))
    return int(run_module(parse_module(text), [x, y], strict=False)[0]) % 2**64


#: What the rule computes where XLA releases differ, and whether the
#: installed one differs: (-1) to a negative power is +-1 (XLA in jaxlib 0.7
#: gives 0); an even base to a power of 64 or more is 0 (XLA before jaxlib
#: 0.12 gives the power of the exponent's low six bits: 2 ** 64 == 1); an
#: unsigned exponent with its top bit set is not negative (XLA before
#: jaxlib 0.12 gives 0 for bases other than 1 and all ones).
OLD_MINUS_ONE = _xla_power(-1, -1) == 0
OLD_EVEN = _xla_power(2, 64) == 1
OLD_UNSIGNED = _xla_power(3, 2**64 - 1, "ui64") == 0


def _same_as_x64(text: str, x: np.ndarray, y: np.ndarray,
                 bases: np.ndarray | None = None, exponents: np.ndarray | None = None,
                 folded: bool = False) -> no64.DemotionReport:
    """The converted program equals the 64-bit one on (x, y), element for
    element; ``bases``/``exponents`` are the power's operands per element
    where a constant replaces an argument (both, ``folded``: XLA folds the
    power with the whole exponent)."""
    original = parse_module(text)
    converted = parse_module(text)
    report = no64.demote(converted, policy="exact")
    assert no64.find_64bit(converted) == []
    assert "stablehlo.power" not in str(converted)
    want = run_module(original, [x, y], strict=False)[0]
    b = (x if bases is None else np.broadcast_to(bases, x.shape)).view(np.uint64)
    e = (y if exponents is None else np.broadcast_to(exponents, y.shape)).view(np.uint64)
    if OLD_MINUS_ONE:
        # (all-ones) ** (top bit set): +-1 by the exponent's parity
        odd = np.where(e & np.uint64(1), np.uint64(2**64 - 1), np.uint64(1))
        mask = (b == np.uint64(2**64 - 1)) & (e >= np.uint64(2**63))
        want = np.where(mask, odd, want.view(np.uint64)).view(want.dtype)
    if OLD_UNSIGNED and "ui64" in text and not folded:
        # an odd base to an exponent with its top bit set: the low six bits'
        # power, as for any other exponent (an even one is 0 either way)
        mask = (e >= np.uint64(2**63)) & ((b & np.uint64(1)) == 1)
        six = np.array([pow(int(p), int(q) % 64, 2**64) for p, q in zip(b, e)], dtype=np.uint64)
        want = np.where(mask, six, want.view(np.uint64)).view(want.dtype)
    if OLD_EVEN:
        # (an unsigned exponent with its top bit set included; a negative
        # signed one is not: x ** -1 is a division)
        mask = ((b & np.uint64(1)) == 0) & (e >= np.uint64(64))
        if "ui64" not in text:
            mask &= e < np.uint64(2**63)
        want = np.where(mask, np.uint64(0), want.view(np.uint64)).view(want.dtype)
    got = run_module(converted, converted_inputs([x, y], report.emulated_inputs), strict=True)[0]
    if 0 in report.emulated_outputs:
        got = join_words(got)
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64), err_msg=text)
    return report


@pytest.mark.parametrize("t", ["i64", "ui64"])
def test_integer_power_on_words_is_the_x64_programs(t: str) -> None:
    """XLA's CPU backend squares over the exponent's low six bits at run
    time (``x ** 64`` is 1), gives 0 for a negative exponent but for bases
    1 and -1, rewrites an exponent of -1 into a division (``0 ** -1`` is
    -1), and folds constants with the whole exponent: each is matched."""
    pairs = list(itertools.product(BASES, EXPONENTS))
    x = _signed([b for b, _ in pairs], t)
    y = _signed([e for _, e in pairs], t)
    n = len(pairs)
    report = _same_as_x64(_power(t, n), x, y)
    assert report.emulated_by_op.get("stablehlo.power") == 1
    # a constant exponent (everywhere the same), a constant base
    xs, ys = _signed(BASES, t), _signed(EXPONENTS[: len(BASES)], t)
    for e in (-1, -2, 0, 1, 2, 3, 63, 64, 65, I64.min):
        _same_as_x64(_power(t, len(BASES), exponent=str(e % 2**64 if t == "ui64" else e)), xs, ys,
                     exponents=_signed([e], t))
    for b in (0, 1, -1, 3, -7):
        _same_as_x64(_power(t, len(BASES), base=str(b % 2**64 if t == "ui64" else b)), ys, xs,
                     bases=_signed([b], t))
    # both constant: folded (small exponents: XLA's folding takes time in the exponent)
    small = [e for e in EXPONENTS if -100 < e < 1000] + [100, 999, -1]
    k = min(len(BASES), len(small))
    _same_as_x64(_power(t, k, base=_dense(BASES[:k], t), exponent=_dense(small[:k], t)),
                 _signed(BASES[:k], t), _signed(small[:k], t), folded=True)
    _same_as_x64(_power(t, k, base=_dense(BASES[:k], t), exponent="-1" if t == "i64" else str(2**64 - 1)),
                 _signed(BASES[:k], t), _signed(small[:k], t), exponents=_signed([-1], t), folded=True)

