"""Rewrite rules that rely on their users ignoring high bits prove it for
each user: a convert to ``i1`` tests its whole operand against zero.

Each program is compared with the 64-bit program (x64 on, CPU, no no64)
under the default, strict and exact policies.
"""

from __future__ import annotations

import numpy as np
import pytest

import no64
from analysis.test_soundness_regressions import I32, parse, refused_or_exact

POLICIES = ["default", "strict", "exact"]

# x = (a << 32) + b, then its low word: as a bool, as i32 and as i16
LOW_WORD = """
func.func public @main(%a: tensor<4xi64>, %b: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xi32>, tensor<4xi16>) {
  %c32 = stablehlo.constant dense<32> : tensor<4xi64>
  %s = stablehlo.shift_left %a, %c32 : tensor<4xi64>
  %x = stablehlo.add %s, %b : tensor<4xi64>
  %m = stablehlo.constant dense<4294967295> : tensor<4xi64>
  %y = stablehlo.and %x, %m : tensor<4xi64>
  %p = stablehlo.convert %y : (tensor<4xi64>) -> tensor<4xi1>
  %q = stablehlo.convert %y : (tensor<4xi64>) -> tensor<4xi32>
  %h = stablehlo.convert %y : (tensor<4xi64>) -> tensor<4xi16>
  return %p, %q, %h : tensor<4xi1>, tensor<4xi32>, tensor<4xi16>
}"""

INPUTS = [
    [np.array([1, 0, -1, I32.max], np.int64), np.array([0, 0, 0, 0], np.int64)],
    [np.array([1, 2, 3, I32.min], np.int64), np.array([5, -1, I32.min, I32.max], np.int64)],
]


@pytest.mark.parametrize("policy", POLICIES)
def test_low_word_mask_keeps_the_mask_for_a_bool(policy: str) -> None:
    """``bool(x & 0xFFFFFFFF)`` is False for ``x = 1 << 32``; with the mask
    dropped it was ``bool(x)``, True."""
    refused_or_exact(parse(LOW_WORD), INPUTS, input_ranges={0: (I32.min, I32.max), 1: (I32.min, I32.max)},
                     policy=policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_low_word_mask_before_a_bool_alone(policy: str) -> None:
    text = LOW_WORD.replace(
        "return %p, %q, %h : tensor<4xi1>, tensor<4xi32>, tensor<4xi16>",
        "return %p, %p, %p : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>",
    ).replace("-> (tensor<4xi1>, tensor<4xi32>, tensor<4xi16>)", "-> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>)")
    refused_or_exact(parse(text), INPUTS, input_ranges={0: (I32.min, I32.max), 1: (I32.min, I32.max)},
                     policy=policy)


def test_low_word_mask_is_still_dropped_before_32bit_converts() -> None:
    """The seed split idiom: only truncating users, the mask goes (a rewrite)."""
    text = LOW_WORD.replace("return %p, %q, %h : tensor<4xi1>, tensor<4xi32>, tensor<4xi16>",
                            "return %q, %q, %h : tensor<4xi32>, tensor<4xi32>, tensor<4xi16>").replace(
        "-> (tensor<4xi1>, tensor<4xi32>, tensor<4xi16>)", "-> (tensor<4xi32>, tensor<4xi32>, tensor<4xi16>)")
    m = parse(text)
    report = no64.demote(m, input_ranges={0: (I32.min, I32.max), 1: (I32.min, I32.max)}, policy="strict")
    assert any(e.detail.startswith("mask of the low 32 bits") for e in report.events)
    refused_or_exact(parse(text), INPUTS, input_ranges={0: (I32.min, I32.max), 1: (I32.min, I32.max)},
                     policy="strict")


# the high word of a sign-extended 32-bit value, read as a bool
HIGH_WORD = """
func.func public @main(%a: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xi32>) {
  %c = stablehlo.constant dense<40> : tensor<4xi64>
  %s = stablehlo.shift_right_logical %a, %c : tensor<4xi64>
  %p = stablehlo.convert %s : (tensor<4xi64>) -> tensor<4xi1>
  %q = stablehlo.convert %s : (tensor<4xi64>) -> tensor<4xi32>
  return %p, %q : tensor<4xi1>, tensor<4xi32>
}"""


@pytest.mark.parametrize("policy", POLICIES)
def test_high_word_of_a_sign_extended_value_as_a_bool(policy: str) -> None:
    inputs = [[np.array([-1, 0, I32.min, I32.max], np.int64)], [np.array([5, -5, 1, -(2**20)], np.int64)]]
    m = parse(HIGH_WORD)
    report = no64.demote(parse(HIGH_WORD), input_ranges={0: (I32.min, I32.max)}, policy=policy)
    assert report.ops_rewritten == 1 or report.ops_emulated
    refused_or_exact(m, inputs, input_ranges={0: (I32.min, I32.max)}, policy=policy)
