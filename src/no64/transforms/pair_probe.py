"""A probe of a backend's f32 arithmetic for ``float_policy="pairs"``.

Double-f32 arithmetic is correct only where the backend computes f32 as
IEEE does, step by step: a backend that reassociates sums, folds
``(a + C) - C``, turns a division into a product by a reciprocal, computes
the error terms of products differently (fast-math) or flushes what it
should not, gives pairs whose error terms are wrong.  The probe module runs
the pair algorithms (:mod:`no64.ir.pairs`) on fixed inputs -- sums with
a constant operand, products, divisions by a constant, square roots -- and
:func:`check_words` compares its outputs with the words IEEE f32 gives
(computed by a step-by-step model of the same algorithms; a test checks the
two agree).  The JAX layer runs it once per platform before it runs a pair
program there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir import pairs as P
from ..ir._mlir import func, ir, make_context

__all__ = ["PROBE_X", "PROBE_Y", "PROBE_C", "EXPECTED_HEX", "probe_text", "probe_inputs", "expected_words",
           "check_words"]

#: The probe's inputs (float64, given as pairs) and its constant operand.
PROBE_X = [3.141592653589793, -271.8281828459045, 0.0001234567890123, 1.4142135623730951e5,
           -9.999999999999e-3, 7.77777777777777, -123456.789012345, 5.0e-20,
           1.0000000001, -0.3333333333333333, 42.424242424242, -6.02214076e10,
           2.718281828459045e-5, 65504.00000001, -1.0e-3, 0.7071067811865476]
PROBE_Y = [1.0000000000001, 3.3333333333333, -0.1428571428571, 2.0e-10,
           -77.7777777777, 1.0e15, 0.999999999999, -3.0e19,
           12345.6789, -0.0101010101, 8.8888888888e-8, 1.6180339887498949,
           -2.5e3, 1.0e-5, 999.999999999, -1.4142135623730951]
PROBE_C = 0.1

#: The words IEEE f32 gives: add(x, C), multiply(x, y), divide(x, C),
#: sqrt(|x|), each hi then lo (filled below from their hex form).
EXPECTED_HEX = """
    404f7641 c387dd35 3dcd0d87 480a1b5d 3db851ec 40fc16c1 c7f12058 3dcccccd
    3f8ccccd be6eeeef 422a18d3 d160579c 3dccdb0d 477fe01a 3dcac083 3f4e9e8d
    32087cf6 b64392ac b061d699 3b4bf7e4 b175c28b 34582d82 bac639e1 b0cccccd
    b2cbf0e6 30888883 32c69733 c3b7f333 30dd4c26 bacccc77 301374bc b249b220
    40490fdb c4628603 b793f27e 37ed4403 3f471c72 59dd0ec8 c7f12065 bfc00000
    4640e6b7 3b5ca8f1 367d120a d1b57f26 bd8b2d10 3f27b0b4 bf800000 bf800000
    b3bbbd02 b722fa31 2b35249a ab6157c0 b26391fd 4bcb0e38 3852e213 a7800000
    39478a7b 2eb0d266 a8cc32e0 43a26b5c b10dd12c b2dcdb00 2b8c8000 00000000
    41fb53d1 c529e482 3aa1d139 49aca22c bdcccccd 429b8e39 c996b43f 211392ef
    41200000 c0555555 43d41f08 d30c36c2 398e8429 491fec00 bc23d70a 40e24630
    35155388 b8bd1dd6 2e59e062 3d7f7aee 30cccd28 b5638e38 bc77c859 94e2dbc6
    30897060 b3aaaaaa b6f83e18 46e34000 2cf97b3a 33d6b000 af75c290 30f85610
    3fe2dfc5 4183e5d0 3c360b61 43bc07b8 3dcccccd 40327ccb 43afae9e 2f75dbb8
    3f800000 3f13cd3a 40d06db0 486fa620 3baad7cf 437fefff 3d0186e2 3f5744fd
    b364b109 b4e5a77c afaf6668 36dc9880 b0ccccf9 b15e2b13 b7691ffe a2130ec0
    2e5be700 32320663 b3f62134 3b92dd66 af7aeb88 36fff02a 30ea03a8 b254a58a
"""


def probe_inputs() -> list[np.ndarray]:
    """The probe module's arguments: x hi, x lo, y hi, y lo (f32)."""
    xh, xl = P.split_f64(np.array(PROBE_X))
    yh, yl = P.split_f64(np.array(PROBE_Y))
    return [xh, xl, yh, yl]


def probe_text() -> str:
    """The probe module, as StableHLO text (f32 only)."""
    n = len(PROBE_X)
    with make_context(), ir.Location.unknown():
        m = ir.Module.create()
        t = ir.RankedTensorType.get([n], ir.F32Type.get())
        with ir.InsertionPoint(m.body):
            f = func.FuncOp("main", ir.FunctionType.get([t] * 4, [t] * 8))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                a = block.arguments
                x, y = P.Pair(a[0], a[1]), P.Pair(a[2], a[3])
                c = P.constant([n], PROBE_C)
                outs: list[ir.Value] = []
                for z in (P.add(x, c), P.multiply(x, y), P.divide(x, c), P.sqrt(P.absolute(x))):
                    outs += [z.hi, z.lo]
                func.ReturnOp(outs)
        return m.operation.get_asm()


def expected_words() -> np.ndarray:
    """The expected outputs as ``uint32`` words, shape ``8 x n``."""
    return np.array([int(w, 16) for w in EXPECTED_HEX.split()], dtype=np.uint32).reshape(8, len(PROBE_X))


def check_words(outputs: Sequence[np.ndarray]) -> str | None:
    """``None`` if the probe's outputs are the IEEE words; else where they differ."""
    want = expected_words()
    names = ["add hi", "add lo", "multiply hi", "multiply lo", "divide hi", "divide lo", "sqrt hi", "sqrt lo"]
    for k, (got, w) in enumerate(zip(outputs, want)):
        g = np.asarray(got, dtype=np.float32).reshape(-1).view(np.uint32)
        bad = np.nonzero(g != w)[0]
        if bad.size:
            i = int(bad[0])
            return (f"{names[k]} of element {i}: got {g.view(np.float32)[i]!r} (0x{g[i]:08x}), "
                    f"IEEE f32 gives {w.view(np.float32)[i]!r} (0x{w[i]:08x})")
    return None
