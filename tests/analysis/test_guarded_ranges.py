"""A value selected only where a compare with a constant holds is judged by
its range there: JAX's ``where(i < 0, i + n, i)``, which normalizes every
negative index (``take_along_axis``, ``take``, dynamic indexing), is proven
under strict; where the guard does not protect the value, it stays
unproven.  Converted programs are compared with the 64-bit one on
adversarial inputs (INT32_MIN, INT32_MAX, -1, 0, ...)."""

from __future__ import annotations

import pytest

import no64
from runner import compare_on_adversarial_inputs
from support import ir, make_context


def program(body: str) -> str:
    return (
        "func.func public @main(%i: tensor<4xi64>) -> tensor<4xi64> {\n"
        "  %zero = stablehlo.constant dense<0> : tensor<4xi64>\n"
        "  %n = stablehlo.constant dense<10> : tensor<4xi64>\n"
        f"{body}\n"
        "  return %r : tensor<4xi64>\n}"
    )


#: JAX's index normalization (jax 0.7-0.9 lower it in 64 bits)
NORMALIZE = program(
    "  %neg = stablehlo.compare LT, %i, %zero, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %r = stablehlo.select %neg, %up, %i : tensor<4xi1>, tensor<4xi64>")
#: the constant on the left of the compare
MIRRORED = program(
    "  %neg = stablehlo.compare GT, %zero, %i, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %r = stablehlo.select %neg, %up, %i : tensor<4xi1>, tensor<4xi64>")
#: the guarded value in the false branch
FALSE_BRANCH = program(
    "  %ge = stablehlo.compare GE, %i, %zero, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %r = stablehlo.select %ge, %i, %up : tensor<4xi1>, tensor<4xi64>")
#: the sum taken where it may overflow: not protected
UNGUARDED = program(
    "  %neg = stablehlo.compare LT, %i, %zero, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %r = stablehlo.select %neg, %i, %up : tensor<4xi1>, tensor<4xi64>")
#: also used outside a select: the sum itself reaches the result
ESCAPES = program(
    "  %neg = stablehlo.compare LT, %i, %zero, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %s = stablehlo.select %neg, %up, %i : tensor<4xi1>, tensor<4xi64>\n"
    "  %r = stablehlo.add %s, %up : tensor<4xi64>")

#: jax 0.10+: the select in jnp.where's own jit, a private function called with the
#: predicate and both branches (Flax's Embed, jnp.take)
WHERE_CALL = (
    "func.func public @main(%i: tensor<4xi64>) -> tensor<4xi64> {\n"
    "  %zero = stablehlo.constant dense<0> : tensor<4xi64>\n"
    "  %n = stablehlo.constant dense<10> : tensor<4xi64>\n"
    "  %neg = stablehlo.compare LT, %i, %zero, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>\n"
    "  %up = stablehlo.add %i, %n : tensor<4xi64>\n"
    "  %r = call @_where(%neg, %up, %i) : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>\n"
    "  return %r : tensor<4xi64>\n}\n"
    "func.func private @_where(%p: tensor<4xi1>, %a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {\n"
    "  %s = stablehlo.select %p, %a, %b : tensor<4xi1>, tensor<4xi64>\n"
    "  return %s : tensor<4xi64>\n}")
#: the same callee, its branches swapped at the call: the sum is taken where it may overflow
WHERE_CALL_UNGUARDED = WHERE_CALL.replace("call @_where(%neg, %up, %i)", "call @_where(%neg, %i, %up)")

INT32 = (-(2**31), 2**31 - 1)


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


@pytest.mark.parametrize("text", [NORMALIZE, MIRRORED, FALSE_BRANCH, WHERE_CALL],
                         ids=["normalize", "mirrored", "false-branch", "where-call"])
def test_guarded_sum_is_proven_and_computes_the_64_bit_result(text: str) -> None:
    converted = parse(text)
    report = no64.demote(converted, policy="strict", input_ranges={0: INT32}, check=True)
    assert not [n for n in report.narrowings if n.verdict in ("unproven", "overflow")]
    compare_on_adversarial_inputs(parse(text), converted, {0: INT32}, "guarded index")


@pytest.mark.parametrize("text", [UNGUARDED, ESCAPES, WHERE_CALL_UNGUARDED],
                         ids=["unguarded", "escapes", "where-call-unguarded"])
def test_unprotected_sum_stays_unproven(text: str) -> None:
    with pytest.raises(no64.NarrowingError, match="unproven"):
        no64.demote(parse(text), policy="strict", input_ranges={0: INT32})
    report = no64.demote(parse(text), input_ranges={0: INT32})
    assert [n for n in report.narrowings if n.verdict == "unproven"]
