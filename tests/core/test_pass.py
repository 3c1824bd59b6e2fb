"""Unit tests of the core pass on hand-written StableHLO.

Each rule of the demotion pass is exercised on a small module; where a rule
changes how a value is computed (bit counting), the 64-bit module and the
demoted module are both run on the CPU backend and compared.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import numpy as np
import pytest

import no64
from no64.jax.reference import run_module
from support import ir, make_context


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def body_ops(m: ir.Module, fn: int = 0) -> list[str]:
    f = m.body.operations[fn]
    return [op.operation.name for op in f.regions[0].blocks[0].operations]


# ---------------------------------------------------------------- scanner


SCAN_SRC = """
func.func public @main(%a: tensor<4xf64>, %t: tuple<tensor<i64>, tensor<f32>>) -> (tensor<4xf64>, tensor<i32>) {
  %0 = stablehlo.add %a, %a : tensor<4xf64> loc("jit(f)/add"("model.py":12:4))
  %1 = call @helper(%t) : (tuple<tensor<i64>, tensor<f32>>) -> tensor<i32>
  return %0, %1 : tensor<4xf64>, tensor<i32>
}
func.func private @helper(%t: tuple<tensor<i64>, tensor<f32>>) -> tensor<i32> {
  %0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<i64>, tensor<f32>>) -> tensor<i64>
  %c = stablehlo.constant dense<0> : tensor<i64>
  %1:2 = stablehlo.while(%i = %c, %x = %0) : tensor<i64>, tensor<i64>
   cond {
    %p = stablehlo.compare LT, %i, %x, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %n = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %n, %x : tensor<i64>, tensor<i64>
  }
  %2 = stablehlo.convert %1#0 : (tensor<i64>) -> tensor<i32>
  return %2 : tensor<i32>
}
"""


def test_find_64bit_reports_every_value_once_with_roles() -> None:
    m = parse(SCAN_SRC)
    found = no64.find_64bit(m)
    roles = [(f.op, f.role, f.type, f.function) for f in found]
    assert ("func.func", "function argument #0", "tensor<4xf64>", "main") in roles
    assert ("func.func", "function argument #1", "tuple<tensor<i64>, tensor<f32>>", "main") in roles
    assert ("func.func", "function result #0", "tensor<4xf64>", "main") in roles
    assert ("func.func", "function argument #0", "tuple<tensor<i64>, tensor<f32>>", "helper") in roles
    # block arguments of both while regions, and the while results
    assert sum(1 for f in found if f.op == "stablehlo.while" and "argument" in f.role) == 4
    assert sum(1 for f in found if f.op == "stablehlo.while" and f.role.startswith("result")) == 2
    # the i32 convert result and the i32 call result are not 64-bit
    assert not any(f.op in ("stablehlo.convert", "func.call") for f in found)
    # each value once: main has 2 args + 1 result + add; helper has 1 arg,
    # get_tuple_element, 2 constants, 2 while results, 4 region arguments, add
    assert len(found) == 4 + 11
    add = next(f for f in found if f.op == "stablehlo.add" and f.function == "main")
    assert add.location.primitive == "add"
    assert add.location.file == "model.py" and add.location.line == 12
    assert str(add.location) == "add at model.py:12:4"
    d = add.to_dict()
    assert d["location"]["text"] == "add at model.py:12:4"


def test_find_64bit_with_uses_lists_operands() -> None:
    m = parse(SCAN_SRC)
    uses = no64.find_64bit(m, uses=True)
    assert any(f.op == "stablehlo.convert" and f.role == "operand #0" for f in uses)
    assert len(uses) > len(no64.find_64bit(m))


def test_attributes_that_are_64bit_by_definition_never_count() -> None:
    m = parse(
        """
func.func @main(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.pad %0, %z, low = [0, 0], high = [0, 0], interior = [0, 0]
      : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %2 = "stablehlo.sort"(%1) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %p = stablehlo.compare LT, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}"""
    )
    assert no64.find_64bit(m) == []
    assert not no64.transforms.scan.has_64bit(m)
    no64.check(m)
    report = no64.demote(m)
    assert not report.changed


def test_check_raises_with_findings() -> None:
    m = parse(SCAN_SRC)
    with pytest.raises(no64.Remaining64BitError) as exc:
        no64.check(m)
    assert exc.value.findings
    assert re.match(r"\d+ 64-bit values remain in the module", str(exc.value))
    assert "stablehlo.add result #0: tensor<4xf64>" in str(exc.value)


# ---------------------------------------------------------------- retyping


def test_demote_retypes_signatures_calls_regions_and_tuples() -> None:
    m = parse(SCAN_SRC)
    report = no64.demote(m)
    assert no64.find_64bit(m) == []
    m.operation.verify()
    text = str(m)
    assert "i64" not in text.replace("dimension = 0 : i64", "") and "f64" not in text
    assert "tuple<tensor<i32>, tensor<f32>>" in text
    assert report.functions_retyped == 2
    # the i64 -> i32 convert became i32 -> i32 and was removed
    assert report.converts_removed == 1
    assert "stablehlo.convert" not in text
    assert report.retyped_by_type["i64"] >= 6


def test_demoted_while_loop_runs() -> None:
    m2 = parse(
        """
func.func public @main(%x: tensor<i64>) -> tensor<i64> {
  %c = stablehlo.constant dense<0> : tensor<i64>
  %1:2 = stablehlo.while(%i = %c, %n = %x) : tensor<i64>, tensor<i64>
   cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<3> : tensor<i64>
    %s = stablehlo.add %i, %one : tensor<i64>
    stablehlo.return %s, %n : tensor<i64>, tensor<i64>
  }
  return %1#0 : tensor<i64>
}"""
    )
    ref = run_module(m2, [np.int64(100)], strict=False)
    no64.demote(m2)
    got = run_module(m2, [np.int32(100)])
    assert int(got[0]) == int(ref[0]) == 102


def test_shardy_and_mhlo_attributes_survive() -> None:
    src = """
module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.frontend_attributes = {xla.sdy.meshes = "x"}} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%a: tensor<8xf64> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>, mhlo.layout_mode = "default"})
      -> (tensor<8xf64> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = sdy.sharding_constraint %a <@mesh, [{"x"}]> : tensor<8xf64>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>]
        manual_axes={"x"} (%arg1: tensor<4xf64>) {
      %2 = stablehlo.multiply %arg1, %arg1 : tensor<4xf64>
      sdy.return %2 : tensor<4xf64>
    } : (tensor<8xf64>) -> tensor<8xf64>
    return %1 : tensor<8xf64>
  }
}"""
    m = parse(src)
    no64.demote(m)
    assert no64.find_64bit(m) == []
    text = str(m)
    assert "sdy.mesh @mesh = <[\"x\"=2]>" in text
    assert text.count('#sdy.sharding<@mesh, [{"x"}]>') == 2
    assert "sdy.sharding_constraint %arg0 <@mesh, [{\"x\"}]> : tensor<8xf32>" in text
    assert "manual_axes={\"x\"} (%arg1: tensor<4xf32>)" in text
    assert 'mhlo.layout_mode = "default"' in text
    assert 'mhlo.frontend_attributes = {xla.sdy.meshes = "x"}' in text


# ---------------------------------------------------------------- constants


def const_module(decl: str, ty: str) -> ir.Module:
    return parse(
        f"""
func.func @main() -> {ty} {{
  %c = stablehlo.constant {decl} : {ty} loc("jit(f)/const"("prog.py":3:1))
  return %c : {ty}
}}"""
    )


def const_text(m: ir.Module) -> str:
    op = m.body.operations[0].regions[0].blocks[0].operations[0]
    return str(op.operation)


@pytest.mark.parametrize(
    "decl,ty,expected,sentinels",
    [
        ("dense<9223372036854775807>", "tensor<i64>", "dense<2147483647> : tensor<i32>", 1),
        ("dense<-9223372036854775808>", "tensor<3xi64>", "dense<-2147483648> : tensor<3xi32>", 1),
        (
            "dense<[1, 9223372036854775807, -9223372036854775808, -7]>",
            "tensor<4xi64>",
            "dense<[1, 2147483647, -2147483648, -7]> : tensor<4xi32>",
            2,
        ),
        ("dense<18446744073709551615>", "tensor<2xui64>", "dense<4294967295> : tensor<2xui32>", 1),
        ("dense<[3, 4294967295]>", "tensor<2xui64>", "dense<[3, -1]> : tensor<2xui32>", 0),
        ("dense<0x7FEFFFFFFFFFFFFF>", "tensor<f64>", "dense<3.40282347E+38> : tensor<f32>", 1),
        (
            "dense<[0xFFEFFFFFFFFFFFFF, 1.0]>",
            "tensor<2xf64>",
            "dense<[-3.40282347E+38, 1.000000e+00]> : tensor<2xf32>",
            1,
        ),
    ],
)
def test_sentinels_map_to_32bit_extremes(decl: str, ty: str, expected: str, sentinels: int) -> None:
    m = const_module(decl, ty)
    report = no64.demote(m)
    text = const_text(m)
    if "ui32" in expected and "-1" in expected:
        # MLIR may print unsigned 32-bit all-ones elements as -1 or as
        # 4294967295: compare the element values themselves
        op = m.body.operations[0].regions[0].blocks[0].operations[0]
        values = np.asarray(op.attributes["value"])
        assert values.dtype == np.uint32 and values.tolist() == [3, 2**32 - 1], text
        assert text.endswith(": tensor<2xui32>"), text
    else:
        assert expected in text, text
    assert report.count("sentinel") == sentinels
    if sentinels:
        ev = next(e for e in report.events if e.kind == "sentinel")
        assert str(ev.location) == "const at prog.py:3:1"


def test_out_of_range_integer_is_emulated_by_default() -> None:
    """An out-of-range constant is carried exactly as (low, high) words."""
    m = const_module("dense<[1, 5000000000]>", "tensor<2xi64>")
    report = no64.demote(m)
    assert report.emulated_outputs == [0]
    text = str(m)
    assert "-> tensor<2x2xi32>" in text and "i64>" not in text
    # 5000000000 = 1 * 2**32 + 705032704: low words [1, 705032704], high [0, 1]
    assert "dense<[1, 705032704]>" in text and "dense<[0, 1]>" in text, text


def test_emulated_output_narrowed_at_a_fixed_signature() -> None:
    """outputs="narrow" (the compile hook's choice: JAX's executables return the types JAX
    lowered) keeps the signature: an emulated result comes back clipped to the 32-bit
    range, judged like any narrowed value, its sentinels mapped to the 32-bit extremes."""
    from runner import compile_module

    text = """
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = stablehlo.constant dense<3000000007> : tensor<4xi64>
  %m = stablehlo.constant dense<9223372036854775807> : tensor<4xi64>
  %p = stablehlo.multiply %x, %c : tensor<4xi64>
  %z = stablehlo.constant dense<0> : tensor<4xi64>
  %neg = stablehlo.compare LT, %x, %z : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %s = stablehlo.select %neg, %m, %p : tensor<4xi1>, tensor<4xi64>
  return %p, %s : tensor<4xi64>, tensor<4xi64>
}"""
    m = parse(text)
    report = no64.demote(m, outputs="narrow", input_ranges={0: (-(2**31), 2**31 - 1)})
    assert report.emulated_outputs == [] and report.values_emulated > 0
    assert "-> (tensor<4xi32>, tensor<4xi32>)" in str(m)
    # the two narrowed outputs are unproven; the emulated values have their own records
    assert [n.verdict for n in report.narrowings if n.verdict != "emulated"] == ["unproven"] * 2
    assert sum(n.verdict == "emulated" for n in report.narrowings) == report.values_emulated
    x = np.array([0, 1, -1, 715827882], dtype=np.int32)
    p, s = compile_module(m, strict=True)([x])
    full = x.astype(object) * 3000000007
    clipped = [int(np.clip(v, -(2**31), 2**31 - 1)) for v in full]
    np.testing.assert_array_equal(p, np.array(clipped, dtype=np.int32))
    np.testing.assert_array_equal(s, np.where(x < 0, 2**31 - 1, clipped).astype(np.int32))


def test_out_of_range_integer_is_an_error_where_it_cannot_be_emulated(without_word_rule) -> None:
    without_word_rule("stablehlo.power")
    m = parse(
        """
func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
  %c = stablehlo.constant dense<[1, 5000000000]> : tensor<2xi64> loc("jit(f)/const"("prog.py":3:1))
  %d = stablehlo.power %x, %c : tensor<2xi64> loc("jit(f)/pow"("prog.py":4:1))
  return %d : tensor<2xi64>
}"""
    )
    before = str(m)
    with pytest.raises(no64.ConstantRangeError) as exc:
        no64.demote(m)
    msg = str(exc.value)
    assert "stablehlo.constant" in msg and "const at prog.py:3:1" in msg and "5000000000" in msg
    assert str(m) == before


@pytest.mark.parametrize(
    "policy,expected,kind",
    [("saturate", "[1, 2147483647, -2147483648]", "saturated"), ("wrap", "[1, 705032704, -705032704]", "wrapped")],
)
def test_integer_policies_are_recorded(policy: str, expected: str, kind: str) -> None:
    m = const_module("dense<[1, 5000000000, -5000000000]>", "tensor<3xi64>")
    report = no64.demote(m, integer_policy=policy)
    assert expected in const_text(m)
    assert report.count(kind) == 2
    assert report.integer_policy == policy
    assert report.to_dict()["counts"][kind] == 2
    assert f"integer policy: {policy}" in report.summary()


def test_bad_policy_is_rejected() -> None:
    with pytest.raises(ValueError):
        no64.demote(const_module("dense<1>", "tensor<i64>"), integer_policy="clip")


def test_float_constants_round_to_nearest_and_are_counted() -> None:
    m = const_module("dense<[0.1, 0.5, 1.0e300, -1.0e300, 0x7FF0000000000000, 0x7FF8000000000000]>", "tensor<6xf64>")
    report = no64.demote(m)
    vals = run_module(m, [])[0]
    with np.errstate(over="ignore"):
        expected = np.array([0.1, 0.5, 1e300, -1e300, np.inf, np.nan]).astype(np.float32)
    np.testing.assert_array_equal(vals, expected)
    assert report.count("float-inexact") == 1  # 0.1
    assert report.count("float-overflow") == 2  # +-1e300; inf and nan are exact
    assert report.count("sentinel") == 0


def test_complex_constants_are_narrowed() -> None:
    m = const_module("dense<[(1.5, -2.0), (0.1, 1.0e300)]>", "tensor<2xcomplex<f64>>")
    report = no64.demote(m)
    vals = run_module(m, [])[0]
    assert vals.dtype == np.complex64
    exp = np.array([1.5 - 2j, 0.1 + 0j], np.complex64)
    exp[1] = np.complex64(complex(np.float32(0.1), np.inf))
    np.testing.assert_array_equal(vals, exp)
    assert report.count("float-inexact") == 1
    assert report.count("float-overflow") == 1


def test_complex_splat_and_hex_forms() -> None:
    m = const_module("dense<(2.0, 3.0)>", "tensor<3xcomplex<f64>>")
    no64.demote(m)
    np.testing.assert_array_equal(run_module(m, [])[0], np.full(3, 2 + 3j, np.complex64))
    data = np.array([1 + 2j, -3.5 + 0.25j], np.complex128).tobytes().hex().upper()
    m = const_module(f'dense<"0x{data}">', "tensor<2xcomplex<f64>>")
    no64.demote(m)
    np.testing.assert_array_equal(run_module(m, [])[0], np.array([1 + 2j, -3.5 + 0.25j], np.complex64))


def test_dense_resource_constants_are_narrowed() -> None:
    blob = np.array([7, 9223372036854775807, -3], np.int64)
    hexdata = "08000000" + blob.tobytes().hex().upper()
    m = parse(
        f"""
func.func @main() -> tensor<3xi64> {{
  %c = stablehlo.constant dense_resource<blob0> : tensor<3xi64>
  return %c : tensor<3xi64>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      blob0: "0x{hexdata}"
    }}
  }}
#-}}"""
    )
    report = no64.demote(m)
    np.testing.assert_array_equal(run_module(m, [])[0], np.array([7, 2**31 - 1, -3], np.int32))
    assert report.count("sentinel") == 1


def test_empty_constant() -> None:
    m = const_module("dense<>", "tensor<0x3xi64>")
    no64.demote(m)
    assert "tensor<0x3xi32>" in const_text(m)


# ---------------------------------------------------------------- refusals


REFUSALS = [
    (
        "stablehlo.bitcast_convert",
        '%0 = stablehlo.bitcast_convert %a : (tensor<4xf64>) -> tensor<4xi64>'
        ' loc("jit(f)/bitcast_convert_type"("u.py":7:2))\n'
        "  %1 = stablehlo.convert %0 : (tensor<4xi64>) -> tensor<4xf64>",
        "reinterprets the bits",
    ),
    (
        "stablehlo.custom_call",
        '%1 = stablehlo.custom_call @my_kernel(%a) : (tensor<4xf64>) -> tensor<4xf64>'
        ' loc("jit(f)/my_kernel"("u.py":7:2))',
        "'my_kernel'",
    ),
    (
        "stablehlo.rng_bit_generator",
        "%st = stablehlo.constant dense<[1, 2]> : tensor<2xui64>\n"
        "  %s2, %bits = stablehlo.rng_bit_generator %st, algorithm = THREE_FRY"
        " : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)"
        ' loc("jit(f)/rng_bit_generator"("u.py":7:2))\n'
        "  %1 = stablehlo.convert %bits : (tensor<4xui64>) -> tensor<4xf64>",
        "random numbers",
    ),
]


#: Width-dependent ops with no 32-bit form of their own: emulated in words.
EMULATED = [
    ("shift_right_logical", "%s = stablehlo.constant dense<63> : tensor<4xi64>", "%x, %s", "tensor<4xi64>"),
    ("shift_left", "%s = stablehlo.constant dense<40> : tensor<4xi64>", "%x, %s", "tensor<4xi64>"),
    ("shift_left", "", "%x, %n", "tensor<4xi64>"),
    ("shift_right_arithmetic", "", "%x, %n", "tensor<4xi64>"),
    ("not", "", "%x", "tensor<4xui64>"),
]


@pytest.mark.parametrize("opname,pre,args,ty", EMULATED, ids=[f"{e[0]}({e[2]})" for e in EMULATED])
def test_width_dependent_ops_are_emulated_exactly(opname: str, pre: str, args: str, ty: str) -> None:
    from runner import compare_on_adversarial_inputs

    text = f"""
func.func public @main(%x: {ty}, %n: {ty}) -> {ty} {{
  {pre}
  %c = stablehlo.{opname} {args} : {ty}
  return %c : {ty}
}}"""
    m = parse(text)
    unsigned = "ui64" in ty
    ranges = {0: (0, 2**32 - 1) if unsigned else (-(2**31), 2**31 - 1), 1: (0, 64)}
    report = no64.demote(m, input_ranges=ranges)
    assert report.emulated_by_op == {f"stablehlo.{opname}": 1}
    assert report.emulated_outputs == [0]
    assert no64.find_64bit(m) == []
    compare_on_adversarial_inputs(parse(text), m, ranges, f"{opname} emulated")


@pytest.mark.parametrize("opname,body,reason", REFUSALS, ids=[r[2] for r in REFUSALS])
def test_width_dependent_ops_are_refused_and_module_unchanged(opname: str, body: str, reason: str) -> None:
    m = parse(
        f"""
func.func @main(%a: tensor<4xf64>) -> tensor<4xf64> {{
  {body}
  return %1 : tensor<4xf64>
}}"""
    )
    before = str(m)
    with pytest.raises(no64.UnsupportedOpError) as exc:
        no64.demote(m)
    assert exc.value.op == opname
    assert exc.value.location.source == "u.py:7:2"
    assert reason in str(exc.value)
    assert str(m) == before


def test_small_constant_shift_is_allowed_and_exact() -> None:
    src = """
func.func public @main(%a: tensor<5xi64>) -> (tensor<5xi64>, tensor<5xi64>) {
  %s = stablehlo.constant dense<3> : tensor<i64>
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<i64>) -> tensor<5xi64>
  %l = stablehlo.shift_left %a, %b : tensor<5xi64>
  %r = stablehlo.shift_right_arithmetic %a, %b : tensor<5xi64>
  return %l, %r : tensor<5xi64>, tensor<5xi64>
}"""
    x = np.array([-1000, -1, 0, 7, 123456], np.int64)
    ref = run_module(parse(src), [x], strict=False)
    m = parse(src)
    no64.demote(m)
    got = run_module(m, [x.astype(np.int32)])
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)


@pytest.mark.parametrize("ty", ["i64", "ui64"])
def test_bit_counting_is_made_exact(ty: str) -> None:
    src = f"""
func.func public @main(%a: tensor<6x{ty}>) -> (tensor<6x{ty}>, tensor<6x{ty}>) {{
  %z = stablehlo.count_leading_zeros %a : tensor<6x{ty}>
  %p = stablehlo.popcnt %a : tensor<6x{ty}>
  return %z, %p : tensor<6x{ty}>, tensor<6x{ty}>
}}"""
    if ty == "i64":
        x = np.array([0, 1, -1, 2**31 - 1, -(2**31), 12345], np.int64)
        narrow = x.astype(np.int32)
    else:
        x = np.array([0, 1, 2**32 - 1, 2**31, 7, 12345], np.uint64)
        narrow = x.astype(np.uint32)
    ref = run_module(parse(src), [x], strict=False)
    m = parse(src)
    report = no64.demote(m)
    got = run_module(m, [narrow])
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r.astype(np.int64), g.astype(np.int64))
    assert report.count("rewrite") == 2


def test_rng_uniform_shape_operand_is_narrowed() -> None:
    m = parse(
        """
func.func public @main(%a: tensor<f64>, %b: tensor<f64>) -> tensor<3x4xf64> {
  %s = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %0 = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f64>, tensor<f64>, tensor<2xi64>) -> tensor<3x4xf64>
  return %0 : tensor<3x4xf64>
}"""
    )
    no64.demote(m)
    out = run_module(m, [np.float32(2.0), np.float32(3.0)])[0]
    assert out.shape == (3, 4) and out.dtype == np.float32
    assert np.all((out >= 2.0) & (out < 3.0))


def test_iota_too_long_for_32_bits_is_refused() -> None:
    m = parse(
        """
func.func @main() -> tensor<3000000000xi64> {
  %0 = stablehlo.iota dim = 0 : tensor<3000000000xi64>
  return %0 : tensor<3000000000xi64>
}"""
    )
    with pytest.raises(no64.ConstantRangeError, match="iota of length 3000000000"):
        no64.demote(m)


def test_failed_verification_restores_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    rewrite = importlib.import_module("no64.transforms.rewrite")

    m = parse(SCAN_SRC)
    before = str(m)
    original = rewrite.apply

    def broken_apply(plan: Any, ctx: Any) -> None:
        original(plan, ctx)
        # retype one value without fixing its users: the module no longer verifies
        fn = plan.root.regions[0].blocks[0].operations[0]
        fn.regions[0].blocks[0].arguments[0].set_type(ir.RankedTensorType.get([4], ir.IntegerType.get_signless(8)))

    monkeypatch.setattr(rewrite, "apply", broken_apply)
    with pytest.raises(no64.InvalidModuleError, match="left unchanged"):
        no64.demote(m)
    assert str(m) == before
    m.operation.verify()


def test_demote_is_deterministic() -> None:
    a, b = parse(SCAN_SRC), parse(SCAN_SRC)
    no64.demote(a)
    no64.demote(b)
    assert str(a) == str(b)


def test_demote_twice_is_a_no_op() -> None:
    m = parse(SCAN_SRC)
    no64.demote(m)
    text = str(m)
    report = no64.demote(m)
    assert not report.changed and str(m) == text


def test_converts_into_64bit_integers_that_may_differ_are_reported() -> None:
    m = parse(
        """
func.func public @main(%a: tensor<3xui32>, %f: tensor<3xf32>) -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi64>) {
  %0 = stablehlo.convert %a : (tensor<3xui32>) -> tensor<3xi64> loc("jit(f)/convert_element_type"("c.py":1:1))
  %1 = stablehlo.convert %f : (tensor<3xf32>) -> tensor<3xi64> loc("jit(f)/convert_element_type"("c.py":2:1))
  %i = stablehlo.convert %a : (tensor<3xui32>) -> tensor<3xi32>
  %2 = stablehlo.convert %i : (tensor<3xi32>) -> tensor<3xi64>
  return %0, %1, %2 : tensor<3xi64>, tensor<3xi64>, tensor<3xi64>
}"""
    )
    report = no64.demote(m)
    unproven = [e for e in report.events if e.kind == "unproven"]
    assert [str(e.location) for e in unproven] == [
        "convert_element_type at c.py:1:1",
        "convert_element_type at c.py:2:1",
    ]
    # i32 -> i64 is exact and became a no-op
    assert report.converts_removed == 1


@pytest.mark.parametrize("dialect", ["chlo", "mhlo"])
def test_chlo_and_mhlo_constants_are_narrowed_with_their_value(dialect: str) -> None:
    m = parse(
        f"""
func.func @main(%a: tensor<3xi64>) -> tensor<3xi64> {{
  %0 = {dialect}.constant dense<[1, -7, 9223372036854775807]> : tensor<3xi64>
  %1 = stablehlo.minimum %a, %0 : tensor<3xi64>
  return %1 : tensor<3xi64>
}}"""
    )
    report = no64.demote(m)
    no64.check(m)
    assert f"{dialect}.constant dense<[1, -7, 2147483647]> : tensor<3xi32>" in str(m)
    assert report.verdicts.get("sentinel") == 1


def test_verification_failure_after_plain_retyping_is_undone() -> None:
    # arith.constant keeps its i64 attribute while its result is retyped, so
    # the rewritten module does not verify: the undo log puts everything back
    # (value types, the signature and the narrowed stablehlo constant).
    m = parse(
        """
func.func @main(%a: tensor<2xi64>) -> tensor<2xi64> {
  %c = stablehlo.constant dense<[5, 6]> : tensor<2xi64>
  %x = arith.constant dense<[1, 2]> : tensor<2xi64>
  %0 = stablehlo.add %a, %c : tensor<2xi64>
  %1 = stablehlo.add %0, %x : tensor<2xi64>
  %2 = stablehlo.convert %1 : tensor<2xi64>
  return %2 : tensor<2xi64>
}"""
    )
    before = str(m)
    with pytest.raises(no64.InvalidModuleError, match="arith.constant"):
        no64.demote(m)
    assert str(m) == before
    m.operation.verify()


@pytest.mark.parametrize("skip", ["result", "block argument"])
def test_strict_check_inside_the_pass_catches_a_value_left_64bit(
    skip: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """demote(check=True) reads every type back from the module: a value the
    rewrite failed to retype is found, reported, and the module left as it was."""
    rewrite = importlib.import_module("no64.transforms.rewrite")
    original = rewrite.apply

    def forgetful_apply(plan: Any, ctx: Any) -> None:
        want = ir.BlockArgument if skip == "block argument" else ir.OpResult
        victim = next(i for i, (v, _, _) in enumerate(plan.values) if isinstance(v, want))
        value, old, _ = plan.values[victim]
        original(plan, ctx)
        value.set_type(old)  # as if apply had skipped it

    m = parse(SCAN_SRC)
    before = str(m)
    monkeypatch.setattr(rewrite, "apply", forgetful_apply)
    with pytest.raises(no64.Remaining64BitError, match="64-bit value"):
        no64.demote(m, check=True, verify=False)
    assert str(m) == before
    monkeypatch.undo()
    no64.demote(m, check=True)
    no64.check(m)


def test_strict_accepts_emulated_values() -> None:
    """Emulated values are exact: policy="strict" converts a shift by 40 and an
    out-of-range constant (which it would refuse as narrowings) and the result matches
    the 64-bit program."""
    from runner import compare_on_adversarial_inputs

    text = """
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %s = stablehlo.constant dense<40> : tensor<4xi64>
  %c = stablehlo.constant dense<5000000000> : tensor<4xi64>
  %y = stablehlo.shift_left %x, %s : tensor<4xi64>
  %z = stablehlo.add %y, %c : tensor<4xi64>
  return %z : tensor<4xi64>
}"""
    m = parse(text)
    ranges = {0: (-(2**31), 2**31 - 1)}
    report = no64.demote(m, policy="strict", input_ranges=ranges)
    assert report.values_emulated > 0 and report.exact and report.emulated_outputs == [0]
    compare_on_adversarial_inputs(parse(text), m, ranges, "strict, emulated")


def test_a_sentinel_compared_with_its_own_32_bit_extreme_is_certain_not_a_question() -> None:
    """``where(m, x, INT64_MAX) > INT32_MAX``: the sentinel meets a value that
    *is* its 32-bit extreme, so the narrowed comparison is wrong wherever the
    sentinel comes.  The pass records the meeting at the comparison as a
    plain ``unproven`` (no sentinel question left to the host's rules, which
    the compile hook's judgement leaves collisions to), and ``strict``
    refuses it there; beside a value that only *may* be the extreme it
    stays a collision."""
    text = """
    func.func public @main(%x: tensor<4xi32>, %m: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
      %w = stablehlo.convert %x : (tensor<4xi32>) -> tensor<4xi64>
      %s = stablehlo.constant dense<9223372036854775807> : tensor<4xi64>
      %v = stablehlo.select %m, %w, %s : tensor<4xi1>, tensor<4xi64>
      %c = stablehlo.constant dense<2147483647> : tensor<4xi64>
      %gt = stablehlo.compare GT, %v, %c, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
      %lt = stablehlo.compare LT, %v, %w, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
      return %gt, %lt : tensor<4xi1>, tensor<4xi1>
    }"""
    report = no64.demote(ir.Module.parse(text, make_context()), policy="permissive")
    meetings = [(n.op, n.collision, n.interval) for n in report.narrowings
                if n.detail.startswith("compares a 64-bit sentinel")]
    # %lt (a value that may be the extreme): a collision, at the select; %gt: certain, at the comparison
    assert meetings == [("stablehlo.select", True, (-(2**31), 2**31 - 1)),
                        ("stablehlo.compare", False, (2**31 - 1, 2**31 - 1))], report.narrowings
    with pytest.raises(no64.NarrowingError, match="compares a 64-bit sentinel"):
        no64.demote(ir.Module.parse(text, make_context()), policy="strict")
