"""Real JAX programs, written for 64-bit types, used as demotion references.

Each :class:`Program` is a function plus a maker of example inputs.  The
tests lower each one with ``jax_enable_x64`` on, demote the module, run both
on the CPU and compare (see ``test_reference.py``).  Shapes are small so the
whole set compiles and runs in seconds.

Inputs are chosen so that a correct 32-bit program gives the same answer:
integer results fit in int32, float inputs are well separated (sorting and
argmax see no near-ties after rounding to f32) and branch predicates are far
from their thresholds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from no64.jax.reference import Tolerance
from support import enable_x64

I64_MAX = int(np.iinfo(np.int64).max)
I64_MIN = int(np.iinfo(np.int64).min)
F64_MAX = float(np.finfo(np.float64).max)


@dataclass(frozen=True)
class Program:
    """A 64-bit JAX program and how to test it.

    Attributes:
      name: test id.
      fn: the function; its positional arguments are ``make_args(rng)``.
      make_args: builds example inputs (numpy arrays or pytrees of them).
      jit_kwargs: builds ``jax.jit`` keyword arguments (shardings need
        devices, so this is called at test time).
      tolerance: float tolerance, when the default does not fit.
      sentinel_events: the demotion report must record at least one
        ``"sentinel"`` event.
      needs_devices: CPU devices the program runs on.
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[np.random.Generator], tuple[Any, ...]]
    jit_kwargs: Callable[[], dict[str, Any]] = field(default=dict)
    tolerance: Tolerance | None = None
    sentinel_events: bool = False
    needs_devices: int = 1


# --------------------------------------------------------------------------
# input helpers
# --------------------------------------------------------------------------


def normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    """float64 normal samples that are exactly representable in float32."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


def ints(rng: np.random.Generator, low: int, high: int, *shape: int) -> np.ndarray:
    """int64 samples in ``[low, high)``."""
    return rng.integers(low, high, size=shape, dtype=np.int64)


def to_numpy(tree: Any) -> Any:
    """Every leaf of ``tree`` as a numpy array."""
    return jax.tree_util.tree_map(np.asarray, tree)


# --------------------------------------------------------------------------
# MLP trained with Adam
# --------------------------------------------------------------------------

ADAM = optax.adam(learning_rate=1e-2)


def mlp_init(rng: np.random.Generator, sizes: tuple[int, ...] = (8, 16, 4)) -> dict[str, Any]:
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i}"] = normal(rng, m, n, scale=1 / np.sqrt(m))
        params[f"b{i}"] = normal(rng, n, scale=0.1)
    return params


def mlp_loss(params: dict[str, Any], x: jax.Array, y: jax.Array) -> jax.Array:
    h = jnp.tanh(x @ params["w0"] + params["b0"])
    out = h @ params["w1"] + params["b1"]
    return jnp.mean((out - y) ** 2)


def mlp_train(params: Any, opt_state: Any, xs: jax.Array, ys: jax.Array) -> Any:
    """Three Adam steps (one per batch) under ``lax.scan``."""

    def step(carry: Any, batch: Any) -> Any:
        params, state = carry
        loss, grads = jax.value_and_grad(mlp_loss)(params, *batch)
        updates, state = ADAM.update(grads, state, params)
        return (optax.apply_updates(params, updates), state), loss

    (params, opt_state), losses = lax.scan(step, (params, opt_state), (xs, ys))
    return params, opt_state, losses


def mlp_args(rng: np.random.Generator) -> tuple[Any, ...]:
    with enable_x64(True):
        params = mlp_init(rng)
        state = to_numpy(ADAM.init(params))
    xs = normal(rng, 3, 16, 8)
    ys = normal(rng, 3, 16, 4)
    return params, state, xs, ys


# --------------------------------------------------------------------------
# small transformer: forward + backward
# --------------------------------------------------------------------------

VOCAB, D_MODEL, HEADS, LAYERS, SEQ, BATCH = 40, 32, 4, 2, 8, 2


def layer_norm(x: jax.Array, gain: jax.Array, bias: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * gain + bias


def attention(x: jax.Array, p: dict[str, jax.Array]) -> jax.Array:
    b, s, d = x.shape
    dh = d // HEADS

    def heads(w: jax.Array) -> jax.Array:
        return (x @ w).reshape(b, s, HEADS, dh)

    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"])
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh)
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    # finfo(float64).min: a sentinel, as many attention implementations write it.
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, s, d)
    return out @ p["wo"]


def transformer_loss(params: dict[str, Any], tokens: jax.Array, targets: jax.Array) -> jax.Array:
    x = params["embed"][tokens] + params["pos"][jnp.arange(tokens.shape[1])]
    for p in params["layers"]:
        x = x + attention(layer_norm(x, p["ln1_g"], p["ln1_b"]), p)
        h = jax.nn.gelu(layer_norm(x, p["ln2_g"], p["ln2_b"]) @ p["w1"] + p["b1"])
        x = x + h @ p["w2"] + p["b2"]
    logits = layer_norm(x, params["lnf_g"], params["lnf_b"]) @ params["embed"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def transformer_value_and_grad(params: Any, tokens: jax.Array, targets: jax.Array) -> Any:
    return jax.value_and_grad(transformer_loss)(params, tokens, targets)


def transformer_args(rng: np.random.Generator) -> tuple[Any, ...]:
    d = D_MODEL

    def layer() -> dict[str, np.ndarray]:
        return {
            "ln1_g": 1 + normal(rng, d, scale=0.1), "ln1_b": normal(rng, d, scale=0.1),
            "wq": normal(rng, d, d, scale=d**-0.5), "wk": normal(rng, d, d, scale=d**-0.5),
            "wv": normal(rng, d, d, scale=d**-0.5), "wo": normal(rng, d, d, scale=d**-0.5),
            "ln2_g": 1 + normal(rng, d, scale=0.1), "ln2_b": normal(rng, d, scale=0.1),
            "w1": normal(rng, d, 4 * d, scale=d**-0.5), "b1": normal(rng, 4 * d, scale=0.1),
            "w2": normal(rng, 4 * d, d, scale=(4 * d) ** -0.5), "b2": normal(rng, d, scale=0.1),
        }

    params = {
        "embed": normal(rng, VOCAB, d, scale=0.5),
        "pos": normal(rng, SEQ, d, scale=0.1),
        "layers": [layer() for _ in range(LAYERS)],
        "lnf_g": 1 + normal(rng, d, scale=0.1),
        "lnf_b": normal(rng, d, scale=0.1),
    }
    tokens = ints(rng, 0, VOCAB, BATCH, SEQ)
    targets = np.roll(tokens, -1, axis=1)
    return params, tokens, targets


# --------------------------------------------------------------------------
# control flow
# --------------------------------------------------------------------------


def control_flow(x: jax.Array, n: jax.Array) -> Any:
    """scan with an int64 step counter, while_loop/fori_loop bounded by an
    int64 input, cond on a float predicate, switch on an int64 index."""

    def scan_body(carry: Any, xi: jax.Array) -> Any:
        s, i = carry
        s = 0.5 * s + xi
        return (s, i + 1), s * i

    (s, steps), ys = lax.scan(scan_body, (jnp.float64(1.0), jnp.int64(0)), x)

    def while_cond(c: Any) -> jax.Array:
        i, _ = c
        return i < n

    def while_body(c: Any) -> Any:
        i, v = c
        return i + 1, 0.9 * v + jnp.sin(v + i)

    iters, v = lax.while_loop(while_cond, while_body, (jnp.int64(0), s))
    tri = lax.fori_loop(jnp.int64(0), n, lambda i, acc: acc + i * i, jnp.int64(0))
    branch = lax.cond(x.sum() > 0, lambda a: 2 * a, lambda a: -a, x)
    index = n % 3
    switched = lax.switch(index, [lambda a: a + 1, lambda a: a * a, jnp.cos], x)
    return s, steps, ys, iters, v, tri, branch, switched


def control_flow_args(rng: np.random.Generator) -> tuple[Any, ...]:
    x = normal(rng, 12)
    x[0] = abs(x).sum() + 1  # the cond predicate is far from 0
    return x, np.int64(7)


# --------------------------------------------------------------------------
# sorting and arg-reductions
# --------------------------------------------------------------------------


def sorting(x: jax.Array, k: jax.Array, queries: jax.Array) -> Any:
    top_values, top_indices = lax.top_k(x, 3)
    keys_sorted, vals_by_key = lax.sort((k, jnp.arange(k.shape[0]) * 10), num_keys=1)
    return (
        jnp.sort(x, axis=-1),
        jnp.argsort(x, axis=-1),
        jnp.argsort(x, axis=0, descending=True),
        top_values,
        top_indices,
        jnp.argmax(x, axis=1),
        jnp.argmin(x, axis=0),
        jnp.argmax(x),
        jnp.sort(k),
        jnp.argsort(k, stable=True),
        jnp.argmin(k),
        jnp.argmax(k),
        keys_sorted,
        vals_by_key,
        jnp.searchsorted(jnp.sort(x[0]), queries),
    )


def sorting_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return normal(rng, 4, 10), ints(rng, -50, 50, 20), normal(rng, 6)


# --------------------------------------------------------------------------
# gather / scatter
# --------------------------------------------------------------------------


def indexing(
    x: jax.Array, idx: jax.Array, unique: jax.Array, upd: jax.Array, seg: jax.Array, cols: jax.Array
) -> Any:
    counts = jnp.zeros(5, dtype=jnp.int64).at[seg].add(1)
    return (
        x[idx],
        x[idx, 1:3],
        x.at[idx].add(upd),
        x.at[unique].set(upd[: unique.shape[0]]),
        x.at[idx].max(upd),
        x.at[idx].min(upd),
        jnp.take_along_axis(x, cols, axis=1),
        jax.ops.segment_sum(x, seg, num_segments=5),
        jax.ops.segment_max(x, seg, num_segments=5),
        counts,
        jnp.bincount(seg, length=5),
        lax.dynamic_slice(x, (idx[0] % 5, jnp.int64(1)), (3, 2)),
        lax.dynamic_update_slice(x, upd[:2, :2], (idx[1] % 5, jnp.int64(0))),
        jnp.take(x, idx + 20, axis=0, mode="clip"),
        x.at[idx + 20].get(mode="fill", fill_value=-1.0),
    )


def indexing_args(rng: np.random.Generator) -> tuple[Any, ...]:
    x = normal(rng, 10, 4)
    idx = np.array([3, -1, 0, 3, 7, -4], dtype=np.int64)  # duplicates, negatives
    unique = np.array([9, 2, -3], dtype=np.int64)
    upd = normal(rng, 6, 4)
    seg = np.array([0, 1, 1, 4, 2, 0, 4, 4, 3, 1], dtype=np.int64)
    cols = ints(rng, 0, 4, 10, 4)
    return x, idx, unique, upd, seg, cols


# --------------------------------------------------------------------------
# reductions and cumulative ops
# --------------------------------------------------------------------------


def reductions(x: jax.Array, k: jax.Array) -> Any:
    near_one = 1 + 0.1 * x
    return (
        x.sum(),
        x.mean(axis=0),
        x.max(axis=1),
        x.min(),
        jnp.prod(near_one, axis=1),
        x.var(),
        x.std(axis=1),
        jax.nn.logsumexp(x, axis=0),
        jnp.cumsum(x, axis=1),
        jnp.cumprod(near_one, axis=0),
        lax.cummax(x, axis=1),
        k.sum(),
        k.sum(axis=0),
        k.max(),
        k.min(axis=1),
        k.prod(axis=1),
        k.mean(),
        jnp.cumsum(k, axis=0),
        jnp.cumprod(k[:, :3], axis=1),
        jnp.count_nonzero(x > 0),
        (k > 0).all(axis=1),
        (k == 0).any(),
    )


def reductions_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return normal(rng, 6, 8), ints(rng, -3, 4, 6, 8)


# --------------------------------------------------------------------------
# FFT on complex128
# --------------------------------------------------------------------------


def fft_program(z: jax.Array, r: jax.Array, z2: jax.Array) -> Any:
    spectrum = jnp.fft.fft(z)
    return (
        spectrum,
        jnp.fft.ifft(z),
        jnp.fft.rfft(r),
        jnp.fft.irfft(jnp.fft.rfft(r), n=r.shape[0]),
        jnp.fft.fft2(z2),
        jnp.abs(spectrum) ** 2,
        (spectrum * jnp.conj(spectrum)).real.sum(),
        z * (1 + 2j) + jnp.exp(1j * r),
    )


def fft_args(rng: np.random.Generator) -> tuple[Any, ...]:
    z = normal(rng, 16) + 1j * normal(rng, 16)
    z2 = normal(rng, 4, 8) + 1j * normal(rng, 4, 8)
    return z, normal(rng, 16), z2


# --------------------------------------------------------------------------
# a small CNN (convolution, max pooling, their gradients) and other ops
# --------------------------------------------------------------------------


def max_pool(x: jax.Array) -> jax.Array:
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def cnn_loss(params: dict[str, jax.Array], images: jax.Array, labels: jax.Array) -> jax.Array:
    h = lax.conv_general_dilated(images, params["conv"], (1, 1), "SAME")
    h = max_pool(jax.nn.relu(h + params["bias"][None, :, None, None]))
    logits = h.reshape(h.shape[0], -1) @ params["dense"]
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(labels.shape[0]), labels])


def cnn_value_and_grad(params: Any, images: jax.Array, labels: jax.Array) -> Any:
    """Forward and backward: conv_general_dilated, reduce_window and its
    gradient (select_and_scatter), gather by int64 labels."""
    return jax.value_and_grad(cnn_loss)(params, images, labels)


def cnn_args(rng: np.random.Generator) -> tuple[Any, ...]:
    params = {
        "conv": normal(rng, 4, 1, 3, 3, scale=0.5),
        "bias": normal(rng, 4, scale=0.1),
        "dense": normal(rng, 4 * 4 * 4, 5, scale=0.2),
    }
    return params, normal(rng, 3, 1, 8, 8), ints(rng, 0, 5, 3)


def mixed_ops(x: jax.Array, k: jax.Array, a: jax.Array) -> Any:
    """Ops real programs use that the other programs do not: a composite
    with an f64 attribute, rematerialised gradients (optimization_barrier),
    a triangular solve, bf16/f16 round trips, padding, integer division by
    zero, integer dot products and convolutions, reduce_window on int64."""
    scaled = lax.composite(lambda v, *, scale: v * scale, name="no64.test.scale")(
        x, scale=np.float64(1.5)
    )
    remat = jax.grad(jax.checkpoint(lambda v: (jnp.sin(v) * v * k).sum()))(x)
    tri = jax.scipy.linalg.solve_triangular(jnp.tril(a) + 4 * jnp.eye(4), x[:4], lower=True)
    halves = (x.astype(jnp.bfloat16) * 2).astype(jnp.float64) + x.astype(jnp.float16).astype(jnp.float64)
    zero = k - k
    return (
        scaled,
        remat,
        tri,
        halves,
        jnp.pad(x, (2, 3), constant_values=1.5)[1:-1],
        k // zero,
        k % zero,
        jnp.dot(k.reshape(3, 4), k.reshape(4, 3)),
        jnp.convolve(k, k[:3]),
        lax.reduce_window(k, jnp.int64(0), lax.add, (3,), (1,), "SAME"),
        jnp.clip(k * 1000, 0, jnp.iinfo(jnp.int32).max),
    )


def mixed_ops_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return normal(rng, 12), ints(rng, -5, 6, 12), normal(rng, 4, 4)


# --------------------------------------------------------------------------
# integer arithmetic and sentinels
# --------------------------------------------------------------------------


def integer_arithmetic(a: jax.Array, b: jax.Array, x: jax.Array) -> Any:
    """int64 arithmetic whose every result fits in int32."""
    return (
        a + b,
        a - 3 * b,
        a * b,
        a // b,
        a % b,
        lax.rem(a, b),
        lax.div(a, b),
        -a,
        jnp.abs(a),
        jnp.sign(a),
        jnp.maximum(a, b),
        jnp.clip(a, -100, 100),
        a << 3,
        a >> 2,
        a & b,
        a | b,
        a ^ b,
        ~a,
        a**2,
        jnp.gcd(a, b),
        a == b,
        a < b,
        a.astype(jnp.float64) * 0.5,
        jnp.round(x * 100).astype(jnp.int64),
        jnp.floor(x * 1000).astype(jnp.int64) // 7,
        (a % 5).astype(jnp.uint64) * jnp.uint64(3),
    )


def integer_arithmetic_args(rng: np.random.Generator) -> tuple[Any, ...]:
    a = ints(rng, -1000, 1000, 16)
    b = ints(rng, 1, 50, 16) * rng.choice([-1, 1], size=16)
    return a, b, normal(rng, 16)


def sentinels(x: jax.Array, k: jax.Array, u: jax.Array, mask: jax.Array, y: jax.Array) -> Any:
    """Extremes used for their meaning: masked reductions, clamps, defaults."""
    imax, imin = jnp.iinfo(jnp.int64).max, jnp.iinfo(jnp.int64).min
    fmax = jnp.finfo(jnp.float64).max
    first = jnp.where(mask.any(axis=1), jnp.argmax(mask, axis=1), imax)
    return (
        jnp.min(jnp.where(mask, k, imax), axis=1),  # an all-False row gives INT64_MAX
        jnp.max(jnp.where(mask, k, imin), axis=1),
        first,
        jnp.clip(3 * k, 0, imax),
        jnp.clip(k, imin, imax),
        jnp.min(jnp.where(mask, u, jnp.uint64(np.iinfo(np.uint64).max)), axis=1),
        jnp.clip(x, -fmax, fmax),
        jnp.max(jnp.where(mask, x, -fmax), axis=1),
        jnp.min(jnp.where(mask, x, fmax), axis=1),
        jnp.nan_to_num(y),  # +-inf -> +-finfo(float64).max
        y.astype(jnp.int64),  # saturating: inf -> INT64_MAX, -inf -> INT64_MIN, nan -> 0
        jnp.where(k > 0, k, imin) > 2,
    )


def sentinels_args(rng: np.random.Generator) -> tuple[Any, ...]:
    mask = rng.random((4, 6)) > 0.5
    mask[2] = False  # a row with nothing selected
    mask[0, 0] = True
    y = normal(rng, 6)
    y[[1, 4]] = [np.inf, -np.inf]
    y[2] = np.nan
    k = ints(rng, -100, 100, 4, 6)
    u = ints(rng, 0, 1000, 4, 6).astype(np.uint64)
    return normal(rng, 4, 6), k, u, mask, y


def prng_float32(key_data: jax.Array) -> Any:
    """32-bit random draws inside a 64-bit program.

    Under ``jax_enable_x64`` the threefry counters come from a ``ui64`` iota
    split into 32-bit words (``iota >> 32`` and ``convert``), so even float32
    draws hold 64-bit values; their high words are provably zero for any
    array shorter than 2**32, so a 32-bit program draws the same bits.
    """
    key = jax.random.wrap_key_data(key_data)
    k1, k2, k3 = jax.random.split(key, 3)
    return (
        jax.random.normal(k1, (4, 3), dtype=jnp.float32),
        jax.random.uniform(k2, (5,), dtype=jnp.float32),
        jax.random.randint(k3, (6,), 0, 100, dtype=jnp.int32),
        jax.random.key_data(k3),
    )


def prng_float32_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return (np.asarray(jax.random.key_data(jax.random.key(42, impl="threefry2x32"))),)


def prng_float64(key_data: jax.Array) -> Any:
    """float64 draws: each is built from 64 random bits (words joined by a
    shift by 32, then a bitcast to f64), which a 32-bit program can only
    approximate from the high word."""
    k1, k2 = jax.random.split(jax.random.wrap_key_data(key_data))
    return (
        jax.random.uniform(k1, (4,), dtype=jnp.float64),
        jax.random.normal(k2, (3, 2), dtype=jnp.float64),
    )


def hash_mix(k: jax.Array) -> jax.Array:
    """A 64-bit multiplicative hash: its constant does not fit in 32 bits."""
    return (k * jnp.int64(0x5851F42D4C957F2D)) >> 40


# --------------------------------------------------------------------------
# sharded programs
# --------------------------------------------------------------------------


@functools.cache
def mesh() -> Mesh:
    """A 4x2 mesh over the first 8 CPU devices."""
    return Mesh(np.array(jax.devices("cpu")[:8]).reshape(4, 2), ("data", "model"))


def _named(*spec: Any) -> NamedSharding:
    return NamedSharding(mesh(), P(*spec))


def sharded_mlp(x: jax.Array, w1: jax.Array, w2: jax.Array, k: jax.Array) -> Any:
    """Data- and model-parallel MLP with an explicit sharding constraint."""
    h = jnp.tanh(x @ w1)
    h = lax.with_sharding_constraint(h, _named("data", "model"))
    y = h @ w2
    return y, (k * 2 + jnp.argmax(y, axis=1)).sum(), y.sum(axis=0)


def sharded_mlp_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return normal(rng, 16, 8), normal(rng, 8, 12), normal(rng, 12, 4), ints(rng, 0, 9, 16)


def sharded_mlp_jit_kwargs() -> dict[str, Any]:
    return {
        "in_shardings": (_named("data", None), _named(None, "model"), _named("model", None), _named("data")),
        "out_shardings": (_named("data", None), _named(), _named()),
    }


def shard_mapped(x: jax.Array, k: jax.Array) -> Any:
    """A ``shard_map`` (lowered to ``sdy.manual_computation``) with
    collectives on f64 and int64 values: all_reduce (psum/pmax/pmin over two
    axes), all_gather, collective_permute, reduce_scatter and all_to_all."""
    ring = [(i, (i + 1) % 4) for i in range(4)]

    def local(a: jax.Array, b: jax.Array) -> Any:
        return (
            lax.psum(a.sum(axis=0, keepdims=True), "data"),
            b * 2 + lax.axis_index("data"),
            lax.pmax(b.max(keepdims=True), "data"),
            lax.pmin(b, ("data", "model")),
            lax.all_gather(a, "data", tiled=True).sum(axis=0, keepdims=True),
            lax.all_gather(b, "data").sum(axis=0),
            lax.ppermute(b, "data", ring),
            lax.psum_scatter(a, "data", scatter_dimension=1, tiled=True),
            lax.all_to_all(a.reshape(2, 4), "model", 1, 0, tiled=True),
        )

    return jax.shard_map(
        local,
        mesh=mesh(),
        in_specs=(P("data", None), P("data")),
        out_specs=(
            P(None, None), P("data"), P(), P("data"), P(None, None), P(), P("data"),
            P("data"), P("data", "model"),
        ),
        check_vma=False,
    )(x, k)


def shard_mapped_args(rng: np.random.Generator) -> tuple[Any, ...]:
    return normal(rng, 8, 4), ints(rng, -20, 20, 8)


def shard_mapped_jit_kwargs() -> dict[str, Any]:
    return {"in_shardings": (_named("data", None), _named("data"))}


PROGRAMS: list[Program] = [
    Program("mlp_adam", mlp_train, mlp_args),
    Program("transformer", transformer_value_and_grad, transformer_args, sentinel_events=True),
    Program("control_flow", control_flow, control_flow_args),
    Program("sorting", sorting, sorting_args),
    Program("indexing", indexing, indexing_args),
    Program("reductions", reductions, reductions_args),
    Program("fft", fft_program, fft_args),
    Program("cnn", cnn_value_and_grad, cnn_args),
    Program("mixed_ops", mixed_ops, mixed_ops_args),
    Program("integer_arithmetic", integer_arithmetic, integer_arithmetic_args),
    Program("sentinels", sentinels, sentinels_args, sentinel_events=True),
    Program("prng_float32", prng_float32, prng_float32_args),
    Program("sharded_mlp", sharded_mlp, sharded_mlp_args, sharded_mlp_jit_kwargs, needs_devices=8),
    Program("shard_map", shard_mapped, shard_mapped_args, shard_mapped_jit_kwargs, needs_devices=8),
]
