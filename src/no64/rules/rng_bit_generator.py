"""Exact 32-bit form of ``stablehlo.rng_bit_generator`` with a ``ui64`` state.

JAX's ``rbg`` and ``unsafe_rbg`` keys (and ``jax.lax.rng_bit_generator``)
hold their state as 32-bit words and bitcast them to a ``ui64[n]`` state
just for the op::

    %s = stablehlo.bitcast_convert %w : (tensor<2x2xui32>) -> tensor<2xui64>
    %ns, %bits = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : ...
    %nw = stablehlo.bitcast_convert %ns : (tensor<2xui64>) -> tensor<2x2xui32>

This rule computes the same bits and the same new state from the 32-bit
words, with 32-bit integer ops only, the way XLA expands the op when it
compiles for CPU or GPU (its ``RngBitGeneratorExpander`` and the generators
of its ``prng`` library):

* **State words.**  ``bitcast_convert`` of ``ui32[n, 2]`` to ``ui64[n]``
  puts ``[i, 0]`` in the low and ``[i, 1]`` in the high half of word ``i``.
  Word 0 is the key.  ``DEFAULT`` means Philox (what XLA's CPU and GPU
  compilers ask of the expander).
* **ThreeFry** (state of 2 words; word 1 is a 64-bit counter).  The output
  shape is split in halves along its first even dimension (else its largest,
  the first one on ties; a scalar counts as one element): each half element,
  in row-major order ``j``, gets the Threefry-2x32 block (20 rounds) of the
  counter ``word1 + j`` (64-bit addition) under the key's two halves; the
  block's two words become elements ``2k`` and ``2k+1`` of the split
  dimension (an odd dimension drops the last one, a scalar keeps the first).
  The new counter is ``word1 + (number of half elements)``.
* **Philox** (state of 2 or 3 words).  The 128-bit counter is
  ``word2:word1`` for 3 words and ``word0:word1`` for 2 (the key doubles as
  the high half).  ``ceil(N/4)`` counters ``c + i`` (128-bit addition) each
  give four words of Philox-4x32 (10 rounds) under the key's halves; the
  output takes them in order (counter-major), the first ``N``.  The new
  state advances the counter by ``ceil(N/4)``; with 2 words only the low
  64 bits are kept (a carry out of word 1 is dropped).
* **Narrow outputs** (``ui8``, ``ui16``) are the low bits of the ``ui32``
  output of the same shape.

The 64-bit steps become 32-bit ones: additions carry through compare and
convert, the high word of Philox's 32x32-bit products is built from 16-bit
halves, rotations are shifts by constants below 32.  The result is what XLA
computes on CPU and GPU; a backend that maps ``DEFAULT`` to another
generator (TPU) would have drawn other numbers from the original program.

``ui64`` outputs are refused: each element is a 64-bit word.  Each
rewritten op becomes a call of a private helper function
``@no64.rng_bit_generator.<algorithm>.<n>x2.<shape>`` (one per algorithm,
state size and output type, shared within a module) whose argument and first
result are the state as ``ui32[n, 2]`` words.  The new 64-bit state is
handed to its users as a ``bitcast_convert`` of those words, which the
companion rule :func:`word_pairs_round_trip` folds away where a user takes
the words back; chained generators read the words directly.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..analysis.ranges import constant_ints, defining_op
from ..ir._mlir import func, ir, stablehlo
from ..kinds import EventKind
from ..spec.registry import Refusal, RuleContext, spec_of
from ..spec.util import erase_dead, install_function

__all__ = ["rng_bit_generator_on_word_pairs", "word_pairs_round_trip"]

#: How XLA's CPU/GPU expander resolves each algorithm.
_ALGORITHMS = {"THREE_FRY": "threefry", "PHILOX": "philox", "DEFAULT": "philox"}

_MASK32 = 0xFFFFFFFF
_THREEFRY_PARITY = 0x1BD11BDA
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_PHILOX_ROUNDS = 10


# --------------------------------------------------------------- text builder


@dataclasses.dataclass(frozen=True)
class _Val:
    """An SSA value of the helper being written: its name, shape and element."""

    name: str
    shape: tuple[int, ...]
    elem: str = "ui32"

    @property
    def type(self) -> str:
        return _tensor(self.shape, self.elem)


def _tensor(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elem}>"


def _i64_array(values: tuple[int, ...] | list[int]) -> str:
    return f"array<i64{': ' if values else ''}{', '.join(str(v) for v in values)}>"


class _Writer:
    """Writes the body of a helper function in generic StableHLO syntax.

    Every value is a ``ui32`` tensor unless stated otherwise; constants are
    splats shared per (value, shape).
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._consts: dict[tuple[int, tuple[int, ...]], _Val] = {}

    def op(
        self, name: str, operands: list[_Val], shape: tuple[int, ...], attrs: str = "",
        elem: str = "ui32",
    ) -> _Val:
        """Append ``stablehlo.<name>`` and return its result."""
        out = _Val(f"%{len(self.lines)}", shape, elem)
        args = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        attrs = f" {{{attrs}}}" if attrs else ""
        self.lines.append(
            f'{out.name} = "stablehlo.{name}"({args}){attrs} : ({types}) -> {out.type}'
        )
        return out

    # elementwise ui32 arithmetic (operands of one shape)
    def const(self, value: int, shape: tuple[int, ...]) -> _Val:
        key = (value & _MASK32, shape)
        if key not in self._consts:
            attr = f"value = dense<{key[0]}> : {_tensor(shape, 'ui32')}"
            self._consts[key] = self.op("constant", [], shape, attr)
        return self._consts[key]

    def _bin(self, name: str, a: _Val, b: _Val | int) -> _Val:
        if isinstance(b, int):
            b = self.const(b, a.shape)
        return self.op(name, [a, b], a.shape)

    def add(self, a: _Val, b: _Val | int) -> _Val:
        return self._bin("add", a, b)

    def mul(self, a: _Val, b: _Val | int) -> _Val:
        return self._bin("multiply", a, b)

    def xor(self, a: _Val, b: _Val | int) -> _Val:
        return self._bin("xor", a, b)

    def and_(self, a: _Val, b: _Val | int) -> _Val:
        return self._bin("and", a, b)

    def shl(self, a: _Val, k: int) -> _Val:
        assert 0 < k < 32
        return self._bin("shift_left", a, k)

    def shr(self, a: _Val, k: int) -> _Val:
        assert 0 < k < 32
        return self._bin("shift_right_logical", a, k)

    def rotl(self, a: _Val, k: int) -> _Val:
        return self._bin("or", self.shl(a, k), self.shr(a, 32 - k))

    def carry(self, total: _Val, addend: _Val) -> _Val:
        """1 where the unsigned sum ``total = x + addend`` wrapped, else 0."""
        wrapped = self.op(
            "compare", [total, addend], total.shape,
            "comparison_direction = #stablehlo<comparison_direction LT>, "
            "compare_type = #stablehlo<comparison_type UNSIGNED>",
            elem="i1",
        )
        return self.op("convert", [wrapped], total.shape)

    def mul_hi_lo(self, x: _Val, k: int) -> tuple[_Val, _Val]:
        """(high, low) words of the 64-bit product of ``x`` and the constant
        ``k``, long multiplication on 16-bit halves; no partial sum exceeds
        ``(2**16 - 1)**2 + 2**16 - 1 < 2**32``."""
        lo = self.mul(x, k)
        x_lo, x_hi = self.and_(x, 0xFFFF), self.shr(x, 16)
        k_lo, k_hi = k & 0xFFFF, k >> 16
        t = self.add(self.mul(x_hi, k_lo), self.shr(self.mul(x_lo, k_lo), 16))
        u = self.add(self.mul(x_lo, k_hi), self.and_(t, 0xFFFF))
        hi = self.add(self.add(self.mul(x_hi, k_hi), self.shr(t, 16)), self.shr(u, 16))
        return hi, lo

    # shapes
    def reshape(self, a: _Val, shape: tuple[int, ...]) -> _Val:
        return a if a.shape == shape else self.op("reshape", [a], shape, elem=a.elem)

    def broadcast(self, scalar: _Val, shape: tuple[int, ...]) -> _Val:
        return self.op("broadcast_in_dim", [scalar], shape, "broadcast_dimensions = array<i64>")

    def slice(self, a: _Val, start: tuple[int, ...], limit: tuple[int, ...]) -> _Val:
        if start == (0,) * len(a.shape) and limit == a.shape:
            return a
        shape = tuple(e - s for s, e in zip(start, limit))
        return self.op(
            "slice", [a], shape,
            f"start_indices = {_i64_array(start)}, limit_indices = {_i64_array(limit)}, "
            f"strides = {_i64_array([1] * len(shape))}",
            elem=a.elem,
        )

    def concat(self, parts: list[_Val], dim: int) -> _Val:
        shape = list(parts[0].shape)
        shape[dim] = sum(p.shape[dim] for p in parts)
        return self.op(
            "concatenate", parts, tuple(shape), f"dimension = {dim} : i64", elem=parts[0].elem
        )

    def iota(self, n: int) -> _Val:
        return self.op("iota", [], (n,), "iota_dimension = 0 : i64")

    def word(self, state: _Val, i: int, half: int) -> _Val:
        """Half ``half`` (0 low, 1 high) of 64-bit state word ``i``, as a scalar."""
        return self.reshape(self.slice(state, (i, half), (i + 1, half + 1)), ())

    def pair_row(self, lo: _Val, hi: _Val) -> _Val:
        """Scalars ``lo`` and ``hi`` as one ``[1, 2]`` row of state words."""
        return self.concat([self.reshape(lo, (1, 1)), self.reshape(hi, (1, 1))], 1)


# ---------------------------------------------------------------- generators


@dataclasses.dataclass(frozen=True)
class _Spec:
    """One helper function: algorithm, state words, output shape and width."""

    algorithm: str  # "threefry" | "philox"
    words: int
    shape: tuple[int, ...]
    width: int  # 8, 16 or 32

    @property
    def out_type(self) -> str:
        return _tensor(self.shape, f"ui{self.width}")

    @property
    def state_type(self) -> str:
        return _tensor((self.words, 2), "ui32")

    @property
    def symbol(self) -> str:
        shape = "x".join(str(d) for d in self.shape) + "x" if self.shape else ""
        return f"no64.rng_bit_generator.{self.algorithm}.{self.words}x2.{shape}ui{self.width}"


def _threefry_halving(shape: tuple[int, ...]) -> tuple[int, int]:
    """(dimension split in halves, its half size) for a ThreeFry output of
    ``shape`` (rank > 0): the first even dimension, else the first largest."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i, d // 2
    i = max(range(len(shape)), key=lambda j: (shape[j], -j))
    return i, (shape[i] + 1) // 2


def _half_elements(spec: _Spec) -> int:
    """How many counters a ThreeFry output of ``spec.shape`` consumes."""
    if not spec.shape:
        return 1
    dim, half = _threefry_halving(spec.shape)
    return math.prod(spec.shape[:dim] + (half,) + spec.shape[dim + 1 :])


def _philox_blocks(spec: _Spec) -> int:
    """How many 128-bit counters a Philox output of ``spec.shape`` consumes."""
    return (math.prod(spec.shape) + 3) // 4


def _threefry2x32(w: _Writer, x: list[_Val], key: list[_Val]) -> list[_Val]:
    """Threefry-2x32 with 20 rounds: a key injection after every 4."""
    ks = [key[0], key[1], w.xor(w.xor(key[0], key[1]), _THREEFRY_PARITY)]
    x = [w.add(x[0], ks[0]), w.add(x[1], ks[1])]
    for block in range(5):
        for r in _THREEFRY_ROTATIONS[block % 2]:
            x0 = w.add(x[0], x[1])
            x = [x0, w.xor(x0, w.rotl(x[1], r))]
        x = [w.add(x[0], ks[(block + 1) % 3]), w.add(w.add(x[1], ks[(block + 2) % 3]), block + 1)]
    return x


def _philox4x32(w: _Writer, x: list[_Val], key: list[_Val]) -> list[_Val]:
    """Philox-4x32 with 10 rounds, the key raised between rounds."""
    k0, k1 = key
    for rnd in range(_PHILOX_ROUNDS):
        if rnd:
            k0, k1 = w.add(k0, _PHILOX_KEY_STEPS[0]), w.add(k1, _PHILOX_KEY_STEPS[1])
        hi0, lo0 = w.mul_hi_lo(x[0], _PHILOX_MULTIPLIERS[0])
        hi1, lo1 = w.mul_hi_lo(x[2], _PHILOX_MULTIPLIERS[1])
        x = [w.xor(w.xor(hi1, x[1]), k0), lo1, w.xor(w.xor(hi0, x[3]), k1), lo0]
    return x


def _threefry_body(w: _Writer, state: _Val, spec: _Spec) -> tuple[_Val, _Val]:
    """(new state, ui32 bits) of XLA's ThreeFry generator."""
    n = _half_elements(spec)
    key = [w.broadcast(w.word(state, 0, h), (n,)) for h in (0, 1)]
    c_lo, c_hi = w.word(state, 1, 0), w.word(state, 1, 1)
    index = w.iota(n)
    lo = w.add(w.broadcast(c_lo, (n,)), index)
    hi = w.add(w.broadcast(c_hi, (n,)), w.carry(lo, index))
    x0, x1 = _threefry2x32(w, [lo, hi], key)
    if not spec.shape:
        bits = w.reshape(w.slice(x0, (0,), (1,)), ())
    else:
        dim, half = _threefry_halving(spec.shape)
        half_shape = spec.shape[:dim] + (half, 1) + spec.shape[dim + 1 :]
        pairs = w.concat([w.reshape(x0, half_shape), w.reshape(x1, half_shape)], dim + 1)
        even = spec.shape[:dim] + (2 * half,) + spec.shape[dim + 1 :]
        bits = w.slice(w.reshape(pairs, even), (0,) * len(even), spec.shape)
    new_lo = w.add(c_lo, n)
    new_hi = w.add(c_hi, w.carry(new_lo, w.const(n, ())))
    new_state = w.concat([w.slice(state, (0, 0), (1, 2)), w.pair_row(new_lo, new_hi)], 0)
    return new_state, bits


def _philox_body(w: _Writer, state: _Val, spec: _Spec) -> tuple[_Val, _Val]:
    """(new state, ui32 bits) of XLA's Philox generator."""
    n_out = math.prod(spec.shape)
    n = _philox_blocks(spec)
    key = [w.broadcast(w.word(state, 0, h), (n,)) for h in (0, 1)]
    high_word = 2 if spec.words == 3 else 0
    counter = [w.word(state, 1, 0), w.word(state, 1, 1),
               w.word(state, high_word, 0), w.word(state, high_word, 1)]

    def advance(c: list[_Val], step: _Val, shape: tuple[int, ...]) -> list[_Val]:
        """128-bit ``c + step`` (``step`` below 2**32), word by word."""
        out = [w.add(w.broadcast(c[0], shape) if shape else c[0], step)]
        carry = w.carry(out[0], step)
        for word in c[1:]:
            total = w.add(w.broadcast(word, shape) if shape else word, carry)
            out.append(total)
            carry = w.carry(total, carry)
        return out

    blocks = _philox4x32(w, advance(counter, w.iota(n), (n,)), key)
    flat = w.concat([w.reshape(b, (n, 1)) for b in blocks], 1)
    bits = w.reshape(w.slice(w.reshape(flat, (4 * n,)), (0,), (n_out,)), spec.shape)
    new_counter = advance(counter, w.const(n, ()), ())
    rows = [w.slice(state, (0, 0), (1, 2)), w.pair_row(new_counter[0], new_counter[1])]
    if spec.words == 3:
        rows.append(w.pair_row(new_counter[2], new_counter[3]))
    return w.concat(rows, 0), bits


def _helper_text(spec: _Spec) -> str:
    """The StableHLO text of the helper function for ``spec``."""
    w = _Writer()
    state = _Val("%state", (spec.words, 2))
    out_elem = f"ui{spec.width}"
    if math.prod(spec.shape) == 0:
        # Nothing to draw: XLA advances the counter by zero.
        new_state = state
        bits = w.op("constant", [], spec.shape, f"value = dense<> : {spec.out_type}", elem=out_elem)
    else:
        body = _threefry_body if spec.algorithm == "threefry" else _philox_body
        new_state, bits = body(w, state, spec)
        if spec.width < 32:
            bits = w.op("convert", [w.and_(bits, (1 << spec.width) - 1)], spec.shape, elem=out_elem)
    lines = "".join(f"    {line}\n" for line in w.lines)
    results = f"{spec.state_type}, {spec.out_type}"
    return (
        f'func.func private @"{spec.symbol}"(%state: {spec.state_type}) -> ({results}) {{\n'
        f"{lines}    func.return {new_state.name}, {bits.name} : {results}\n}}\n"
    )


def _helper(op: ir.Operation, spec: _Spec) -> tuple[str, list[ir.Type]]:
    """The symbol and result types of the helper for ``spec`` in ``op``'s
    module (see :func:`no64.spec.util.install_function`)."""
    return install_function(op, _helper_text(spec), spec.symbol)


# --------------------------------------------------------------------- rules


def _user(use: ir.OpOperand) -> ir.Operation:
    owner = use.owner
    return owner if isinstance(owner, ir.Operation) else owner.operation


def _is_32bit_words(t: ir.Type, shape: list[int]) -> bool:
    """``t`` is a tensor of ``shape`` with 32-bit integer or f32 elements."""
    if not isinstance(t, ir.RankedTensorType) or list(t.shape) != shape:
        return False
    e = t.element_type
    return (isinstance(e, ir.IntegerType) and e.width == 32) or isinstance(e, ir.F32Type)


def _spec_of(op: ir.Operation, ctx: RuleContext) -> _Spec:
    """What the helper for ``op`` must compute; refuses what XLA's expander
    (or a 32-bit form) does not cover."""
    state_t, out_t = op.operands[0].type, op.results[1].type
    e = getattr(state_t, "element_type", None)
    if not (isinstance(state_t, ir.RankedTensorType) and state_t.has_static_shape
            and state_t.rank == 1 and isinstance(e, ir.IntegerType)
            and e.is_unsigned and e.width == 64):
        ctx.refuse(op, f"its state has type {state_t}; only a static ui64[n] state is supported")
    assert isinstance(state_t, ir.RankedTensorType)
    algorithm = stablehlo.RngAlgorithmAttr(op.attributes["rng_algorithm"]).value
    kind = _ALGORITHMS.get(algorithm)
    if kind is None:
        ctx.refuse(op, f"unknown rng algorithm {algorithm}")
    assert kind is not None
    words = state_t.shape[0]
    allowed = (2,) if kind == "threefry" else (2, 3)
    if words not in allowed:
        ctx.refuse(op, f"a {algorithm} state of {words} words is not supported "
                       f"(XLA takes {' or '.join(map(str, allowed))})")
    if not (isinstance(out_t, ir.RankedTensorType) and out_t.has_static_shape):
        ctx.refuse(op, f"its output type {out_t} has no static shape")
    assert isinstance(out_t, ir.RankedTensorType)
    e = out_t.element_type
    if isinstance(e, ir.IntegerType) and e.width == 64:
        ctx.refuse(
            op,
            f"it draws {e} random numbers (e.g. 64-bit jax.random bits or f64 samples), "
            "64-bit words with no 32-bit form; draw 32-bit words instead (JAX does with x64 off)",
        )
    if not (isinstance(e, ir.IntegerType) and e.is_unsigned and e.width in (8, 16, 32)):
        ctx.refuse(op, f"its output element type {e} is not supported (only ui8, ui16, ui32)")
    assert isinstance(e, ir.IntegerType)
    spec = _Spec(kind, words, tuple(out_t.shape), e.width)
    counters = _half_elements(spec) if kind == "threefry" else _philox_blocks(spec)
    if counters >= 2**32:
        ctx.refuse(op, f"its output takes {counters} counter values, more than 32-bit "
                       "indices can count")
    return spec


def _check_state_users(op: ir.Operation, ctx: RuleContext, words: int) -> None:
    """Refuse unless every user of the new state can take it as 32-bit words."""
    for use in op.results[0].uses:
        user = _user(use)
        if user.name == "stablehlo.rng_bit_generator":
            continue
        if user.name == "stablehlo.bitcast_convert" and _is_32bit_words(
            user.results[0].type, [words, 2]
        ):
            continue
        ctx.refuse(
            op,
            f"its new 64-bit state is used by {user.name}; only a bitcast_convert back to "
            f"32-bit words ([{words}, 2]) or another rng_bit_generator can take it without "
            "64-bit types",
        )


def _state_words(op: ir.Operation, ctx: RuleContext, words: int) -> ir.Value:
    """The state of ``op`` as ``ui32[words, 2]`` (built before ``op``): the
    words a ``bitcast_convert`` made the state from, or a constant's halves."""
    state = op.operands[0]
    pairs_t = ir.RankedTensorType.get([words, 2], ir.IntegerType.get_unsigned(32))
    producer = defining_op(state)
    if producer is not None and producer.name == "stablehlo.bitcast_convert":
        src = producer.operands[0]
        if src.type == pairs_t:
            return src
        if _is_32bit_words(src.type, [words, 2]):
            with ir.InsertionPoint(op), op.location:
                return stablehlo.BitcastConvertOp(pairs_t, src).result
    if producer is not None and spec_of(producer.name).constant:
        elems = constant_ints(state)
        if elems is not None and len(elems) in (1, words):
            values = [int(v) % 2**64 for v in elems] * (words // len(elems))
            halves = np.array([[v & _MASK32, v >> 32] for v in values], dtype=np.uint32)
            with ir.InsertionPoint(op), op.location:
                return stablehlo.ConstantOp(ir.DenseElementsAttr.get(halves, type=pairs_t)).result
    source = "a block argument" if producer is None else f"a {producer.name}"
    ctx.refuse(
        op,
        f"its 64-bit state comes from {source}; only a state bitcast from 32-bit words "
        f"([{words}, 2], as with JAX's rbg keys) or a constant can be split into 32-bit "
        "halves (a 64-bit state that enters or leaves the program has no 32-bit form)",
    )
    raise AssertionError("unreachable")


def rng_bit_generator_on_word_pairs(op: ir.Operation, ctx: RuleContext) -> bool:
    """Replace an rng_bit_generator with a ``ui64[n]`` state by a call of a
    helper that computes XLA's bits and new state from 32-bit words."""
    spec = _spec_of(op, ctx)
    _check_state_users(op, ctx, spec.words)
    producer = defining_op(op.operands[0])
    words = _state_words(op, ctx, spec.words)
    symbol, result_types = _helper(op, spec)
    with ir.InsertionPoint(op), op.location:
        call = func.CallOp(result_types, symbol, [words])
        op.results[1].replace_all_uses_with(call.results[1])
        if any(True for _ in op.results[0].uses):
            # Users take the words back (folded by word_pairs_round_trip) or
            # are generators that read them directly.
            state64 = stablehlo.BitcastConvertOp(op.operands[0].type, call.results[0]).result
            op.results[0].replace_all_uses_with(state64)
    algorithm = stablehlo.RngAlgorithmAttr(op.attributes["rng_algorithm"]).value
    note = ""
    if algorithm == "DEFAULT":
        note = " (DEFAULT is Philox, as on XLA's CPU and GPU backends)"
    ctx.report.add(
        EventKind.REWRITE,
        op.name,
        op.location,
        f"{spec.algorithm} on a ui64[{spec.words}] state computed from 32-bit word pairs, "
        f"bit-identical to XLA's expansion{note}; helper @{symbol}",
    )
    op.erase()
    erase_dead(producer)
    return True


def word_pairs_round_trip(op: ir.Operation, ctx: RuleContext) -> bool:
    """``bitcast(bitcast(w : T[..., 2]) : X[...]) : U[..., 2]`` with 32-bit
    ``T`` and ``U`` and 64-bit ``X`` is ``bitcast(w) : U[..., 2]``: the value
    in the middle carries the same bits.  This is how a rewritten rng state
    reaches the users that take its words back."""
    inner = defining_op(op.operands[0])
    if inner is None or inner.name != "stablehlo.bitcast_convert":
        return False
    src, mid_t, out_t = inner.operands[0], op.operands[0].type, op.results[0].type
    if not isinstance(mid_t, ir.RankedTensorType) or not mid_t.has_static_shape:
        return False
    pairs = list(mid_t.shape) + [2]
    if not (_is_32bit_words(src.type, pairs) and _is_32bit_words(out_t, pairs)):
        return False
    if src.type == out_t:
        replacement = src
    else:
        with ir.InsertionPoint(op), op.location:
            replacement = stablehlo.BitcastConvertOp(out_t, src).result
    op.results[0].replace_all_uses_with(replacement)
    ctx.report.add(
        EventKind.REWRITE, op.name, op.location, f"32-bit words bitcast to {mid_t} and back are unchanged"
    )
    op.erase()
    erase_dead(inner)
    return True


def rng_on_64bit_words(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    return Refusal(
        "rng_bit_generator with a 64-bit state or output is defined on 64-bit words; "
        "narrowing it would produce different random numbers",
    )
