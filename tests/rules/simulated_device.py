"""A simulated device for f32 programs on the CPU backend.

:func:`simulate` rewrites an f32 StableHLO module (a converted pair program,
the pair probe) so that the CPU computes it as a device with other f32
arithmetic would:

* ``divide_ulp`` / ``sqrt_ulp`` above 0.5: each f32 ``divide`` (``sqrt``)
  gives the exact result (computed in float64) moved by a pseudo-random
  amount of at most that many ulps of it -- half the elements by the full
  amount either way, the rest anywhere within it -- chosen from the
  operands' bits (deterministic), then rounded toward the exact result so
  that the error never exceeds the amount;
* ``flush``: every f32 ``add``, ``subtract``, ``multiply``, ``divide`` and
  ``sqrt`` result below ``2**-126`` in magnitude is 0 (as the CPU runtime
  flushes them anyway, this only makes it explicit);
* ``stochastic``: every f32 ``add`` and ``subtract`` whose exact result is
  not an f32 picks either neighbour of it (pseudo-randomly), as a
  stochastic rounding does;
* ``fma``: every f32 ``add``/``subtract`` of a product (an operand that a
  ``multiply`` defines) is computed fused, the product exact and the sum
  rounded once; ``fma=False`` passes every product through an
  ``optimization_barrier``, so the CPU's compiler cannot contract it
  (``None``, the default, leaves the compiler alone: it contracts).

The rewritten module holds float64 ops (the exact results): run it with
``run_module(..., strict=False)``.
"""

from __future__ import annotations

from typing import Any

from no64.ir.words import build
from support import ir, ir_compat

__all__ = ["simulate"]

_ELEMENTWISE = ("add", "subtract", "multiply", "divide", "sqrt")


def _t(v: ir.Value, elem: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(ir.RankedTensorType(v.type).shape), elem)


def _f32() -> ir.Type:
    return ir.F32Type.get()


def _f64() -> ir.Type:
    return ir.F64Type.get()


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _const(like: ir.Value, value: float | int) -> ir.Value:
    t = ir.RankedTensorType(like.type)
    e = t.element_type
    attr = ir.FloatAttr.get(e, float(value)) if isinstance(e, ir.FloatType) else ir.IntegerAttr.get(e, int(value))
    return build("constant", [], [t], value=ir.DenseElementsAttr.get_splat(t, attr)).results[0]


def _b(name: str, a: ir.Value, b: ir.Value) -> ir.Value:
    return build(name, [a, b], [a.type]).results[0]


def _u(name: str, a: ir.Value) -> ir.Value:
    return build(name, [a], [a.type]).results[0]


def _cmp(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
    kind = "FLOAT" if isinstance(ir.RankedTensorType(a.type).element_type, ir.FloatType) else "SIGNED"
    return build("compare", [a, b], [_t(a, ir.IntegerType.get_signless(1))],
                 comparison_direction=ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
                 compare_type=ir.Attribute.parse(f"#stablehlo<comparison_type {kind}>")).results[0]


def _sel(p: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return build("select", [p, a, b], [a.type]).results[0]


def _cvt(v: ir.Value, elem: ir.Type) -> ir.Value:
    return build("convert", [v], [_t(v, elem)]).results[0]


def _bits(v: ir.Value) -> ir.Value:
    return build("bitcast_convert", [v], [_t(v, _i32())]).results[0]


def _from_bits(v: ir.Value) -> ir.Value:
    return build("bitcast_convert", [v], [_t(v, _f32())]).results[0]


def _wrap(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


def _hash(operands: list[ir.Value], seed: int) -> ir.Value:
    """A pseudo-random i32 per element from the operands' bits."""
    h = _const(_bits(operands[0]), _wrap((seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF))
    for k, v in enumerate(operands):
        w = _b("multiply", _bits(v), _const(h, _wrap((0x85EBCA77 + 0x61C88647 * k) & 0xFFFFFFFF)))
        h = _b("xor", h, w)
        h = _b("xor", h, _b("shift_right_logical", h, _const(h, 15)))
        h = _b("multiply", h, _const(h, 0x2C1B3C6D))
        h = _b("xor", h, _b("shift_right_logical", h, _const(h, 13)))
    return h


def _ulp64(q: ir.Value) -> ir.Value:
    """The f32 ulp of float64 ``q``'s binade: ``2**(floor(log2 |q|) - 23)``."""
    bits = build("bitcast_convert", [q], [_t(q, _i64())]).results[0]
    e = _b("and", bits, _const(bits, 0x7FF0000000000000))
    p2 = build("bitcast_convert", [e], [_t(q, _f64())]).results[0]
    return _b("multiply", p2, _const(p2, 2.0**-23))


def _step_toward(r: ir.Value, q: ir.Value) -> ir.Value:
    """``r`` (f32) moved one ulp toward float64 ``q``."""
    r64 = _cvt(r, _f64())
    down = _cmp(r64, q, "GT")  # the value must decrease
    pos = _cmp(r, _const(r, 0.0), "GT")
    bits = _bits(r)
    one = _const(bits, 1)
    # a positive value decreases with its bits, a negative one increases
    delta = _sel(_b("xor", down, _u("not", pos)), _u("negate", one), one)
    return _from_bits(_b("add", bits, delta))


def _normal(v: ir.Value) -> ir.Value:
    """Where ``v`` (f32) is finite and zero or at least ``2**-126`` in magnitude."""
    a = _u("abs", v)
    fin = build("is_finite", [v], [_t(v, ir.IntegerType.get_signless(1))]).results[0]
    return _b("and", fin, _cmp(a, _const(a, 2.0**-126), "GE"))


def _off_by_ulps(plain: ir.Value, exact: ir.Value, k: float, operands: list[ir.Value], seed: int) -> ir.Value:
    """``exact`` (float64) moved by up to ``k`` f32 ulps of itself, rounded
    toward it; ``plain`` where that is not a normal f32."""
    h = _hash(operands, seed)
    frac = _cvt(_b("and", h, _const(h, 0xFFFF)), _f64())
    frac = _b("divide", frac, _const(frac, 65535.0))  # in [0, 1]
    mode = _b("and", _b("shift_right_logical", h, _const(h, 16)), _const(h, 3))
    kk = _const(exact, k)
    anywhere = _b("multiply", kk, _b("subtract", _b("add", frac, frac), _const(frac, 1.0)))
    delta = _sel(_cmp(mode, _const(mode, 0), "EQ"), kk,
                 _sel(_cmp(mode, _const(mode, 1), "EQ"), _u("negate", kk), anywhere))
    ulp = _ulp64(exact)
    r = _cvt(_b("add", exact, _b("multiply", delta, ulp)), _f32())
    too_far = _cmp(_u("abs", _b("subtract", _cvt(r, _f64()), exact)), _b("multiply", kk, ulp), "GT")
    r = _sel(too_far, _step_toward(r, exact), r)
    ok = _b("and", _normal(r), _b("and", _normal(plain), _cmp(plain, _const(plain, 0.0), "NE")))
    return _sel(ok, r, plain)


def _stochastic(plain: ir.Value, exact: ir.Value, operands: list[ir.Value], seed: int) -> ir.Value:
    """``plain`` (the sum rounded to nearest) or, where the exact sum is not
    an f32 and a pseudo-random bit says so, its other neighbour."""
    h = _hash(operands, seed + 1)
    flip = _cmp(_b("and", h, _const(h, 1)), _const(h, 1), "EQ")
    inexact = _cmp(_cvt(plain, _f64()), exact, "NE")
    other = _step_toward(plain, exact)
    # one step toward the exact sum from the nearest goes past it: the other neighbour
    ok = _b("and", _b("and", flip, inexact), _b("and", _normal(plain), _normal(other)))
    return _sel(ok, other, plain)


def _flushed(v: ir.Value) -> ir.Value:
    a = _u("abs", v)
    return _sel(_cmp(a, _const(a, 2.0**-126), "LT"), _b("multiply", v, _const(v, 0.0)), v)


def _is_f32(v: ir.Value) -> bool:
    t = v.type
    return isinstance(t, ir.RankedTensorType) and isinstance(t.element_type, ir.F32Type)


def _ops(block: Any) -> list[Any]:
    out = []
    for op in block.operations:
        out.append(op)
        for region in op.regions:
            for b in region.blocks:
                out.extend(_ops(b))
    return out


def simulate(module: ir.Module, *, divide_ulp: float = 0.5, sqrt_ulp: float = 0.5, flush: bool = True,
             stochastic: bool = False, fma: bool | None = None, seed: int = 0) -> ir.Module:
    """``module`` rewritten in place as the device described (see the module docstring)."""
    products: dict[Any, Any] = {}  # what stands for an f32 product -> its multiply
    with module.context, ir.Location.unknown():
        for op in _ops(module.body):
            name = op.operation.name
            short = name.rsplit(".", 1)[-1]
            if not name.startswith("stablehlo.") or short not in _ELEMENTWISE or len(op.results) != 1:
                continue
            res = op.results[0]
            if not _is_f32(res):
                continue
            operands = list(op.operands)
            uses = [(u.owner, u.operand_number) for u in res.uses]
            with ir_compat.insertion_after(op):
                new = res
                wide = [_cvt(v, _f64()) for v in operands]
                if short == "divide" and divide_ulp > 0.5:
                    new = _off_by_ulps(res, _b("divide", *wide), divide_ulp, operands, seed)
                elif short == "sqrt" and sqrt_ulp > 0.5:
                    new = _off_by_ulps(res, _u("sqrt", wide[0]), sqrt_ulp, operands, seed)
                elif short in ("add", "subtract") and fma:
                    prods = [v for v in operands if v in products]
                    if prods:
                        m = products[prods[0]]
                        p64 = _b("multiply", _cvt(m.operands[0], _f64()), _cvt(m.operands[1], _f64()))
                        w = [p64 if v == prods[0] else x for v, x in zip(operands, wide)]
                        new = _cvt(_b(short, *w), _f32())
                elif short in ("add", "subtract") and stochastic:
                    new = _stochastic(res, _b(short, *wide), operands, seed)
                elif short == "multiply" and fma is False:
                    new = build("optimization_barrier", [res], [res.type]).results[0]
                if flush:
                    new = _flushed(new)
                if new != res:
                    for owner, k in uses:
                        owner.operands[k] = new
                if short == "multiply":
                    products[new] = op.operation
    return module
