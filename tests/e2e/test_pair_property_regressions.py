"""Cases the pair property (``test_pair_property.py``) found, minimized.

Each is one op of a float64 program converted with
``float_policy="pairs"``, on operands a pair holds exactly (no word below
f32's smallest normal), far inside f32's exponent range, whose result a
pair holds too; its error relative to the exact result of those operands
must be within the double-word bound of the op (``u = 2**-24``).

A zero sum, product or quotient was found +0 where IEEE (and the x64
program) gives -0; each must have the x64 program's sign.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import no64
from runner import compile_module
from support import ir, make_context

U2 = 2.0**-48
T = "tensor<1xf64>"


def held(words: np.ndarray) -> Fraction:
    """The exact value of a pair's words (each a normal f32 or zero)."""
    hi, lo = (float(w) for w in words.reshape(2))
    assert all(w == 0 or abs(w) >= 2.0**-126 for w in (hi, lo)), (hi, lo)
    return Fraction(hi) + Fraction(lo)


def relative_error_u2(op: str, *args: float) -> float:
    """``op`` on float64 ``args`` through pairs: its relative error in u^2,
    against the exact result of the operands as the pairs hold them."""
    names = ", ".join(f"%a{i}" for i in range(len(args)))
    sig = ", ".join(f"%a{i}: {T}" for i in range(len(args)))
    text = (f"module {{\n  func.func public @main({sig}) -> {T} {{\n"
            f"    %r = stablehlo.{op} {names} : {T}\n    return %r : {T}\n  }}\n}}\n")
    m = ir.Module.parse(text, make_context())
    no64.demote(m, float_policy="pairs", check=True)
    words = [no64.split_pairs(np.array([a])) for a in args]
    (out,) = compile_module(m, strict=True)(words)
    operands = [held(w) for w in words]
    got = held(out)
    if op == "sqrt":
        with mpmath.workprec(320):
            a = operands[0]
            exact = mpmath.sqrt(mpmath.mpf(a.numerator) / a.denominator)
            return float(abs(mpmath.mpf(got.numerator) / got.denominator - exact) / exact) / U2
    exact = {"multiply": lambda a, b: a * b, "divide": lambda a, b: a / b}[op](*operands)
    return float(abs(got - exact) / abs(exact)) / U2


def test_multiply_by_a_factor_near_2_pow_minus_90():
    # 127 u^2 when only operands below 2**-94 were scaled (bound 7 u^2)
    assert relative_error_u2("multiply", -8.093712895105437e-28, 1e20) <= 7


def test_multiply_found_by_the_property():
    # 72 u^2 when only operands below 2**-94 were scaled (bound 7 u^2)
    assert relative_error_u2("multiply", -9.671406556949669e24, -2.584939418669888e-26) <= 7


def test_divide_by_a_divisor_near_2_pow_minus_90():
    # 128 u^2 when only operands below 2**-94 were scaled (bound 15 u^2)
    assert relative_error_u2("divide", 1.0, -8.093712895105437e-28) <= 15


def test_divide_a_dividend_near_1e_minus_29():
    # 4384 u^2 when the dividend was not scaled (bound 15 u^2)
    assert relative_error_u2("divide", 4.97e-29, 0.246) <= 15


def test_sqrt_near_1e_minus_30():
    # 432051 u^2 (about 2**-29 relative) when the operand was not scaled (bound 4 u^2)
    assert relative_error_u2("sqrt", 3.8e-30) <= 4


def signed_zero(op: str, x: float, y: float) -> tuple[float, float]:
    """``op(x, y)`` through pairs (its hi word) and in the x64 program."""
    text = (f"module {{\n  func.func public @main(%a0: {T}, %a1: {T}) -> {T} {{\n"
            f"    %r = stablehlo.{op} %a0, %a1 : {T}\n    return %r : {T}\n  }}\n}}\n")
    m = ir.Module.parse(text, make_context())
    no64.demote(m, float_policy="pairs", check=True)
    args = [np.array([x]), np.array([y])]
    (out,) = compile_module(m, strict=True)([no64.split_pairs(a) for a in args])
    (ref,) = compile_module(ir.Module.parse(text, make_context()), strict=False)(args)
    return float(out[0, 0]), float(ref[0])


@pytest.mark.parametrize("op, x, y", [("add", -0.0, -0.0), ("multiply", -1.0, 0.0), ("divide", -0.0, 5.0)])
def test_zero_results_keep_ieee_sign(op: str, x: float, y: float):
    got, ref = signed_zero(op, x, y)
    assert ref == 0 and np.signbit(ref)
    assert got == 0 and np.signbit(got) == np.signbit(ref)
