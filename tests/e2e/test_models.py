"""Neural-network programs without 64-bit types, bit-identical to the originals.

With ``jax_enable_x64`` off, as on hardware without 64-bit types, JAX still
emits 64-bit values whenever a model draws random numbers: ``ui64`` counters
for threefry keys (the default implementation, partitionable) and a ``ui64``
state for ``rng_bit_generator`` (``rbg`` keys).  Parameter initialisation and
dropout draw random numbers, so ordinary Flax (linen and nnx) and Equinox
programs hold 64-bit values.

Each test lowers a real model program with x64 off, with the key as a module
argument (raw key data, wrapped inside the program), checks that the module
holds 64-bit values, demotes it, and checks that the demoted module is free of
64-bit values, that every demotion was exact, and that every output is
bit-identical to the unconverted module's on the CPU backend:

* initialisation of an MLP, a small CNN (convolutions, pooling, dense) and a
  transformer block (multi-head attention, layer norm, MLP, dropout) for Flax
  linen, Flax nnx (``nnx.Rngs``, ``nnx.split``/``nnx.state`` inside the
  jitted function) and Equinox, each with the default key implementation and
  with ``rbg`` keys;
* a training step with dropout in train mode (loss, gradients, parameter
  update) for a linen transformer block (optax SGD with momentum) and an
  Equinox MLP with ``eqx.nn.Dropout`` (plain SGD), with both key
  implementations, and for an nnx transformer block (``nnx.merge`` and a
  call-time ``nnx.Rngs``) with the default keys.

Models are tiny so the file stays fast.  Even so, XLA's CPU backend spends
seconds in LLVM optimising each random draw of rank 3 or more (the threefry
rounds are fused over the whole shape), which would make this file take
minutes; both modules of a comparison are therefore compiled with JAX's
``jax_disable_most_optimizations`` option, which only changes how much work
the backend spends on machine code, not what the program computes.  The
cheapest programs are also compared with full optimisation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import no64
from no64.jax.reference import parse_module, run_module
from support import enable_x64

#: ``None`` is JAX's default key implementation (threefry2x32).
IMPLS: list[str | None] = [None, "rbg"]
IMPL_IDS = ["default", "rbg"]

IN = 8  # MLP input features
WIDTH = 16  # hidden width
OUT = 4  # outputs of the MLP and the CNN
CHANNELS = 3  # CNN input channels
SIDE = 8  # CNN input height and width
D = 16  # transformer model width
HEADS = 2
SEQ = 5
BATCH = 2
RATE = 0.25  # dropout rate


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


@contextlib.contextmanager
def key_impl(impl: str | None) -> Iterator[None]:
    """x64 off and, for a named implementation, make it JAX's default too.

    The default is scoped as well so that a key a library might create itself
    uses the same implementation as the key passed in.
    """
    with enable_x64(False):
        if impl is None:
            yield
        else:
            with jax.default_prng_impl(impl):
                yield


def raw_key(impl: str | None, seed: int = 0) -> np.ndarray:
    """The raw ``uint32`` data of a key of implementation ``impl``."""
    with key_impl(impl):
        key = jax.random.key(seed) if impl is None else jax.random.key(seed, impl=impl)
        return np.asarray(jax.random.key_data(key))


def wrap(raw: jax.Array, impl: str | None) -> jax.Array:
    """A typed key from its raw data (inside the traced program)."""
    if impl is None:
        return jax.random.wrap_key_data(raw)
    return jax.random.wrap_key_data(raw, impl=impl)


def as_numpy(tree: Any) -> Any:
    """``tree`` with every leaf a numpy array."""
    return jax.tree.map(np.asarray, tree)


def inputs(seed: int) -> dict[str, np.ndarray]:
    """Float32 example inputs for the three model kinds."""
    g = np.random.default_rng(seed)
    return {
        "vec": g.standard_normal((BATCH, IN), dtype=np.float32),
        "img": g.standard_normal((BATCH, SIDE, SIDE, CHANNELS), dtype=np.float32),
        "seq": g.standard_normal((BATCH, SEQ, D), dtype=np.float32),
    }


@contextlib.contextmanager
def backend_optimizations(enabled: bool) -> Iterator[None]:
    """Compile with XLA's backend optimisations on or (mostly) off."""
    option = "jax_disable_most_optimizations"
    previous = jax.config.read(option)
    jax.config.update(option, not enabled)
    try:
        yield
    finally:
        jax.config.update(option, previous)


def assert_demotion_is_exact(
    fn: Callable[..., Any], args: tuple[Any, ...], impl: str | None, *, optimize: bool = False
) -> list[np.ndarray]:
    """Lower ``fn`` with x64 off, demote, and compare outputs bit for bit.

    ``optimize`` compiles both modules with XLA's full backend optimisation
    (slow for random draws of rank 3 or more).  Returns the outputs of the
    unconverted module (flattened).
    """
    with key_impl(impl):
        lowered = jax.jit(fn, keep_unused=True).lower(*args)
    expected_out = jax.tree.leaves(lowered.out_info)
    m = parse_module(lowered.as_text(debug_info=True))
    before = no64.find_64bit(m)
    assert before, "expected the x64-off program to hold 64-bit values (random numbers)"
    assert any("ui64" in f.type for f in before), sorted({f.type for f in before})

    flat = [np.asarray(a) for a in jax.tree.leaves(args)]
    with backend_optimizations(optimize):
        ref = run_module(m, flat, strict=False)
        report = no64.demote(m)
        assert no64.find_64bit(m) == []
        got = run_module(m, flat)

    assert len(ref) == len(got) == len(expected_out)
    for i, (r, g, e) in enumerate(zip(ref, got, expected_out)):
        assert r.shape == g.shape == e.shape, (i, r.shape, g.shape, e.shape)
        assert r.dtype == g.dtype == e.dtype, (i, r.dtype, g.dtype, e.dtype)
        np.testing.assert_array_equal(g, r, err_msg=f"output {i} differs after demotion")
    lossy = [e for e in report.events if e.kind not in ("rewrite", "sentinel")]
    assert not lossy, report.summary()
    assert report.changed
    return ref


# --------------------------------------------------------------------------
# Flax linen
# --------------------------------------------------------------------------


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(OUT)(nn.relu(nn.Dense(WIDTH)(x)))


class LinenCNN(nn.Module):
    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:  # NHWC
        x = nn.relu(nn.Conv(8, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(16, (3, 3))(x))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(OUT)(x.reshape(x.shape[0], -1))


class LinenBlock(nn.Module):
    """Pre-norm transformer block with dropout on attention and both residuals."""

    @nn.compact
    def __call__(self, x: jax.Array, *, deterministic: bool) -> jax.Array:
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=HEADS, qkv_features=D, dropout_rate=RATE)(
            h, h, deterministic=deterministic
        )
        x = x + nn.Dropout(RATE)(h, deterministic=deterministic)
        h = nn.LayerNorm()(x)
        h = nn.Dense(D)(nn.gelu(nn.Dense(2 * D)(h)))
        return x + nn.Dropout(RATE)(h, deterministic=deterministic)


def linen_init(impl: str | None) -> Callable[..., Any]:
    def init(raw: jax.Array, x: dict[str, jax.Array]) -> dict[str, Any]:
        k_mlp, k_cnn, k_block, k_drop = jax.random.split(wrap(raw, impl), 4)
        return {
            "mlp": LinenMLP().init(k_mlp, x["vec"]),
            "cnn": LinenCNN().init(k_cnn, x["img"]),
            "block": LinenBlock().init(
                {"params": k_block, "dropout": k_drop}, x["seq"], deterministic=False
            ),
        }

    return init


# --------------------------------------------------------------------------
# Flax nnx
# --------------------------------------------------------------------------


class NnxMLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.l1 = nnx.Linear(IN, WIDTH, rngs=rngs)
        self.l2 = nnx.Linear(WIDTH, OUT, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.l2(nnx.relu(self.l1(x)))


class NnxCNN(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.conv1 = nnx.Conv(CHANNELS, 8, (3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, (3, 3), rngs=rngs)
        self.head = nnx.Linear(16 * (SIDE // 4) ** 2, OUT, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:  # NHWC
        x = nnx.max_pool(nnx.relu(self.conv1(x)), (2, 2), strides=(2, 2))
        x = nnx.avg_pool(nnx.relu(self.conv2(x)), (2, 2), strides=(2, 2))
        return self.head(x.reshape(x.shape[0], -1))


class NnxBlock(nnx.Module):
    """Pre-norm transformer block; with ``keep_rngs=False`` it holds only parameters
    and the dropout key comes with each call."""

    def __init__(self, rngs: nnx.Rngs, *, keep_rngs: bool = True) -> None:
        self.ln1 = nnx.LayerNorm(D, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(
            HEADS, D, dropout_rate=RATE, decode=False, rngs=rngs, keep_rngs=keep_rngs
        )
        self.drop = nnx.Dropout(RATE, rngs=rngs if keep_rngs else None)
        self.ln2 = nnx.LayerNorm(D, rngs=rngs)
        self.fc1 = nnx.Linear(D, 2 * D, rngs=rngs)
        self.fc2 = nnx.Linear(2 * D, D, rngs=rngs)

    def __call__(
        self, x: jax.Array, *, deterministic: bool, rngs: nnx.Rngs | None = None
    ) -> jax.Array:
        h = self.attn(self.ln1(x), deterministic=deterministic, rngs=rngs)
        x = x + self.drop(h, deterministic=deterministic, rngs=rngs)
        h = self.fc2(nnx.gelu(self.fc1(self.ln2(x))))
        return x + self.drop(h, deterministic=deterministic, rngs=rngs)


def nnx_params(model: nnx.Module) -> dict[str, Any]:
    """The model's parameters as a plain dict of arrays (via ``nnx.split``)."""
    _, params, _ = nnx.split(model, nnx.Param, ...)
    return nnx.to_pure_dict(params)


def nnx_init(impl: str | None) -> Callable[..., Any]:
    def init(raw: jax.Array, x: dict[str, jax.Array]) -> dict[str, Any]:
        key = wrap(raw, impl)
        rngs = nnx.Rngs(params=key, dropout=jax.random.fold_in(key, 1))
        mlp, cnn, block = NnxMLP(rngs), NnxCNN(rngs), NnxBlock(rngs)
        return {
            "mlp": nnx_params(mlp),
            "cnn": nnx_params(cnn),
            "block": nnx_params(block),
            "rng_counts": nnx.to_pure_dict(nnx.state(rngs, nnx.RngCount)),
        }

    return init


# --------------------------------------------------------------------------
# Equinox
# --------------------------------------------------------------------------


class EqxCNN(eqx.Module):
    conv1: eqx.nn.Conv2d
    pool1: eqx.nn.MaxPool2d
    conv2: eqx.nn.Conv2d
    pool2: eqx.nn.AvgPool2d
    head: eqx.nn.Linear

    def __init__(self, key: jax.Array) -> None:
        k1, k2, k3 = jax.random.split(key, 3)
        self.conv1 = eqx.nn.Conv2d(CHANNELS, 8, 3, padding=1, key=k1)
        self.pool1 = eqx.nn.MaxPool2d(2, 2)
        self.conv2 = eqx.nn.Conv2d(8, 16, 3, padding=1, key=k2)
        self.pool2 = eqx.nn.AvgPool2d(2, 2)
        self.head = eqx.nn.Linear(16 * (SIDE // 4) ** 2, OUT, key=k3)

    def __call__(self, x: jax.Array) -> jax.Array:  # CHW, one example
        x = self.pool1(jax.nn.relu(self.conv1(x)))
        x = self.pool2(jax.nn.relu(self.conv2(x)))
        return self.head(x.reshape(-1))


class EqxBlock(eqx.Module):
    ln1: eqx.nn.LayerNorm
    attn: eqx.nn.MultiheadAttention
    drop: eqx.nn.Dropout
    ln2: eqx.nn.LayerNorm
    fc1: eqx.nn.Linear
    fc2: eqx.nn.Linear

    def __init__(self, key: jax.Array) -> None:
        k1, k2, k3 = jax.random.split(key, 3)
        self.ln1 = eqx.nn.LayerNorm(D)
        self.attn = eqx.nn.MultiheadAttention(HEADS, D, dropout_p=RATE, key=k1)
        self.drop = eqx.nn.Dropout(RATE)
        self.ln2 = eqx.nn.LayerNorm(D)
        self.fc1 = eqx.nn.Linear(D, 2 * D, key=k2)
        self.fc2 = eqx.nn.Linear(2 * D, D, key=k3)

    def __call__(self, x: jax.Array, *, key: jax.Array, inference: bool) -> jax.Array:
        k_attn, k1, k2 = jax.random.split(key, 3)
        h = jax.vmap(self.ln1)(x)
        h = self.attn(h, h, h, key=k_attn, inference=inference)
        x = x + self.drop(h, key=k1, inference=inference)
        h = jax.vmap(lambda v: self.fc2(jax.nn.gelu(self.fc1(self.ln2(v)))))(x)
        return x + self.drop(h, key=k2, inference=inference)


class EqxDropoutMLP(eqx.Module):
    """An MLP with ``eqx.nn.Dropout`` after each hidden layer."""

    layers: list[eqx.nn.Linear]
    drop: eqx.nn.Dropout

    def __init__(self, key: jax.Array) -> None:
        keys = jax.random.split(key, 3)
        sizes = [IN, WIDTH, WIDTH, OUT]
        self.layers = [eqx.nn.Linear(a, b, key=k) for a, b, k in zip(sizes, sizes[1:], keys)]
        self.drop = eqx.nn.Dropout(RATE)

    def __call__(self, x: jax.Array, *, key: jax.Array | None, inference: bool) -> jax.Array:
        for layer in self.layers[:-1]:
            x = jax.nn.relu(layer(x))
            if key is not None:
                key, sub = jax.random.split(key)
            else:
                sub = None
            x = self.drop(x, key=sub, inference=inference)
        return self.layers[-1](x)


def eqx_arrays(model: eqx.Module) -> list[jax.Array]:
    """The model's arrays (weights and biases), in pytree order."""
    return jax.tree.leaves(eqx.filter(model, eqx.is_array))


def eqx_init(impl: str | None) -> Callable[..., Any]:
    def init(raw: jax.Array, x: dict[str, jax.Array]) -> dict[str, Any]:
        del x  # Equinox layers know their shapes without an example input
        k_mlp, k_cnn, k_block = jax.random.split(wrap(raw, impl), 3)
        return {
            "mlp": eqx_arrays(eqx.nn.MLP(IN, OUT, WIDTH, 1, key=k_mlp)),
            "cnn": eqx_arrays(EqxCNN(k_cnn)),
            "block": eqx_arrays(EqxBlock(k_block)),
        }

    return init


# --------------------------------------------------------------------------
# Initialisation
# --------------------------------------------------------------------------

INITS = {"linen": linen_init, "nnx": nnx_init, "equinox": eqx_init}


@pytest.mark.parametrize("impl", IMPLS, ids=IMPL_IDS)
@pytest.mark.parametrize("framework", list(INITS))
def test_init_is_bit_identical(framework: str, impl: str | None) -> None:
    """MLP, CNN and transformer block initialised in one program (linen's
    init runs the block in train mode): identical parameters after demotion."""
    ref = assert_demotion_is_exact(INITS[framework](impl), (raw_key(impl), inputs(0)), impl)
    # the parameters are real random draws, not constants
    floats = [r for r in ref if r.dtype == np.float32 and r.size > 1 and np.any(r)]
    assert len(floats) >= 10
    assert all(np.all(np.isfinite(r)) for r in floats)


# --------------------------------------------------------------------------
# Training steps with dropout
# --------------------------------------------------------------------------


def regression_target(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """A fixed float32 target for a mean-squared-error loss."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def filled(abstract: Any, seed: int) -> Any:
    """Random numpy values for a pytree of shapes (cheaper than compiling an init)."""
    g = np.random.default_rng(seed)
    return jax.tree.map(lambda s: (0.3 * g.standard_normal(s.shape)).astype(s.dtype), abstract)


def linen_step(impl: str | None) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """An SGD-with-momentum step (optax) of a linen transformer block with dropout."""
    block = LinenBlock()
    tx = optax.sgd(0.1, momentum=0.9)
    x = inputs(1)["seq"]
    y = regression_target(2, x.shape)
    with enable_x64(False):
        abstract = jax.eval_shape(lambda: block.init(jax.random.key(0), x, deterministic=True))
        params = filled(abstract["params"], 7)
        opt_state = as_numpy(tx.init(params))

    def step(params: Any, opt_state: Any, raw: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        key = wrap(raw, impl)

        def loss_fn(p: Any, deterministic: bool) -> jax.Array:
            pred = block.apply({"params": p}, x, deterministic=deterministic, rngs={"dropout": key})
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(lambda p: loss_fn(p, False))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return loss, loss_fn(params, True), optax.apply_updates(params, updates), opt_state

    return step, (params, opt_state, raw_key(impl, 3), x, y)


def nnx_step(impl: str | None) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A plain SGD step of an nnx transformer block; the dropout key is a call argument."""
    x = inputs(1)["seq"]
    y = regression_target(2, x.shape)
    with enable_x64(False):
        abstract = nnx.eval_shape(lambda: NnxBlock(nnx.Rngs(params=0), keep_rngs=False))
        graphdef, state = nnx.split(abstract)
        state = filled(state, 7)
    # the model holds nothing but parameters: the dropout key comes with each call
    assert not jax.tree.leaves(nnx.split(nnx.merge(graphdef, state), nnx.Param, ...)[2])

    def step(state: Any, raw: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        key = wrap(raw, impl)

        def loss_fn(s: Any, deterministic: bool) -> jax.Array:
            model = nnx.merge(graphdef, s)
            pred = model(x, deterministic=deterministic, rngs=nnx.Rngs(dropout=key))
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(lambda s: loss_fn(s, False))(state)
        new_state = jax.tree.map(lambda p, g: p - 0.1 * g, state, grads)
        return loss, loss_fn(state, True), nnx.to_pure_dict(new_state)

    return step, (state, raw_key(impl, 3), x, y)


def eqx_step(impl: str | None) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A plain SGD step of an Equinox MLP with ``eqx.nn.Dropout``."""
    x = inputs(1)["vec"]
    y = regression_target(2, (BATCH, OUT))
    with enable_x64(False):
        abstract = eqx.filter_eval_shape(EqxDropoutMLP, jax.random.key(0))
        params, static = eqx.partition(abstract, lambda v: isinstance(v, jax.ShapeDtypeStruct))
        params = filled(params, 7)

    def step(params: Any, raw: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        keys = jax.random.split(wrap(raw, impl), x.shape[0])

        def loss_fn(p: Any, inference: bool) -> jax.Array:
            model = eqx.combine(p, static)
            pred = jax.vmap(lambda xi, ki: model(xi, key=ki, inference=inference))(x, keys)
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(lambda p: loss_fn(p, False))(params)
        return loss, loss_fn(params, True), jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    return step, (params, raw_key(impl, 3), x, y)


STEPS = {"linen-block": linen_step, "nnx-block": nnx_step, "equinox-mlp": eqx_step}

#: (model, impl) pairs: rbg dropout is covered by linen and Equinox; nnx adds
#: its call-time ``Rngs`` with the default keys (rbg keys in nnx are covered
#: by the initialisation test).
STEP_CASES = [
    pytest.param(model, impl, id=f"{model}-{impl_id}")
    for model in STEPS
    for impl, impl_id in zip(IMPLS, IMPL_IDS)
    if not (model == "nnx-block" and impl is not None)
]


@pytest.mark.parametrize(("model", "impl"), STEP_CASES)
def test_train_step_with_dropout_is_bit_identical(model: str, impl: str | None) -> None:
    """Loss and updated parameters (and optimiser state) identical after demotion."""
    step, args = STEPS[model](impl)
    ref = assert_demotion_is_exact(step, args, impl)
    train_loss, eval_loss, *updated = ref
    assert np.isfinite(train_loss) and np.isfinite(eval_loss)
    # dropout is really active in train mode
    assert train_loss != eval_loss
    # the step really moved the parameters
    old = [np.asarray(a) for a in jax.tree.leaves(args[0])]
    new = updated[: len(old)]
    assert [o.shape for o in old] == [n.shape for n in new]
    assert any(not np.array_equal(o, n) for o, n in zip(old, new))


def test_fully_optimised_compiles_agree_too() -> None:
    """The Equinox training step with default keys (all draws of rank 2 or
    less, so cheap to optimise), compiled with XLA's full backend optimisation."""
    step, args = eqx_step(None)
    assert_demotion_is_exact(step, args, None, optimize=True)
