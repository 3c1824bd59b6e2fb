"""The JAX seam (:mod:`no64.jax._compat`) against what JAX itself computes.

Each helper that reads a JAX structure whose form differs between releases
is checked against a program whose answer is known from its source (how
many constants a scan closes over, what a jaxpr closes over), on every
supported release: the whole file is in the compatibility subset.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from support import jax_compat as _compat

pytestmark = pytest.mark.compat


def _eqns(jaxpr: object, name: str) -> list:
    inner, _ = _compat.open_jaxpr(jaxpr)
    return [e for e in inner.eqns if e.primitive.name == name]


def test_a_closed_jaxpr_opens_to_its_program_and_constants() -> None:
    table = jnp.asarray(np.arange(7, dtype=np.float32))
    closed = jax.make_jaxpr(lambda x: x * table)(jnp.ones(7, jnp.float32))
    assert isinstance(closed, _compat.jaxpr_classes())
    inner, consts = _compat.open_jaxpr(closed)
    assert isinstance(inner, _compat.jaxpr_classes())
    assert len(inner.constvars) == len(consts)
    assert len(inner.invars) == 1
    assert [np.asarray(c).tolist() for c in consts] == [list(range(7))]


def test_scan_layout_counts_constants_and_carry() -> None:
    w = jnp.asarray(np.arange(3, dtype=np.float32))
    b = jnp.asarray(np.ones(3, dtype=np.float32))

    def f(c0: jax.Array, c1: jax.Array, xs: jax.Array) -> object:
        def body(carry: tuple, x: jax.Array) -> tuple:
            a, s = carry
            return (a * w + x, s + b), a
        return jax.lax.scan(body, (c0, c1), xs)

    closed = jax.make_jaxpr(f)(jnp.zeros(3), jnp.zeros(3), jnp.ones((5, 3)))
    (scan,) = _eqns(closed, "scan")
    n_consts, n_carry = _compat.scan_layout(scan.params, len(scan.invars))
    assert n_carry == 2
    # the scanned input is the last operand; the constants are the rest
    assert n_consts + n_carry + 1 == len(scan.invars)
    assert n_consts >= 1  # w and b are closed over (JAX may hoist or fold them)


@pytest.mark.parametrize("name", sorted(_compat._JIT_FUNCTIONS))
def test_jit_functions_are_found_and_replaced_in_place(name: str) -> None:
    try:
        original = _compat.jit_function(name)
    except _compat.UnsupportedJaxlibError as exc:
        assert name == "_trace_for_jit" and "\n" not in str(exc)
        pytest.skip(f"this JAX has no jax._src.pjit.{name} (trace of a jit call from 0.9)")

    def stand_in(*args: object, **kwargs: object) -> object:
        return original(*args, **kwargs)

    assert _compat.replace_jit_function(name, stand_in) is original
    try:
        assert _compat.jit_function(name) is stand_in
    finally:
        assert _compat.replace_jit_function(name, original) is stand_in


def test_jit_input_avals_follow_the_configuration() -> None:
    seen: list = []
    original = _compat.jit_function("_infer_params")

    def spy(fun: object, ji: object, args: tuple, kwargs: dict) -> object:
        seen.append((fun, ji, args, kwargs))
        return original(fun, ji, args, kwargs)

    _compat.replace_jit_function("_infer_params", spy)
    try:
        jax.jit(lambda a, n: a + n, static_argnums=1)(np.arange(4, dtype=np.int64), 2)
    finally:
        _compat.replace_jit_function("_infer_params", original)
    assert seen, "jit's Python path did not run"
    fun, ji, args, kwargs = seen[0]
    with _compat.enable_x64(True):
        wide = _compat.jit_input_avals(fun, ji, None, args, kwargs)
    with _compat.enable_x64(False):
        narrow = _compat.jit_input_avals(fun, ji, None, args, kwargs)
    assert [a.dtype for a in wide] == [np.dtype(np.int64)]  # the static argument is not an input
    assert [a.dtype for a in narrow] == [np.dtype(np.int32)]
