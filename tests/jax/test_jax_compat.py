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


@pytest.mark.parametrize("name", sorted(_compat.jit_path._JIT_FUNCTIONS))
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


def test_jit_calls_made_before_are_routed_through_python_dispatch() -> None:
    """A function jitted and called before the routing (its call on jaxlib's
    C++ fast path) is taken again once the fast path's entries are dropped,
    with its Python function, its arguments and its static ones; a call kept
    off the fast path is taken every time, one that is not only once; and
    nothing is compiled again."""
    compiles: list[str] = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda name, *_, **__: compiles.append(name) if "backend_compile" in name else None)

    def scale(x: jax.Array, factor: int, *, shift: float) -> jax.Array:
        return x * factor + shift

    jitted = jax.jit(scale, static_argnums=1)
    x = np.arange(3.0, dtype=np.float32)
    assert np.asarray(jitted(x, 2, shift=1.0)).tolist() == [1.0, 3.0, 5.0]
    before = len(compiles)
    taken: list = []
    keep_off = [True]

    def take(call: _compat.PythonJitCall) -> object:
        taken.append((call.fun, call.args, call.kwargs, call.static_argnums, call.static_argnames))
        call.off_fast_path = keep_off[0]
        return call.run()

    _compat.route_python_jit_calls(take)
    try:
        assert np.asarray(jitted(x, 2, shift=1.0)).tolist() == [1.0, 3.0, 5.0]
        assert taken == []  # served by the fast path's entry made before
        _compat.clear_fast_path_entries()
        for _ in range(3):
            assert np.asarray(jitted(x, 2, shift=1.0)).tolist() == [1.0, 3.0, 5.0]
        assert len(taken) == 3  # kept off the fast path: taken every time
        fun, args, kwargs, argnums, argnames = taken[0]
        assert fun is scale and args[1:] == (2,) and np.asarray(args[0]).tolist() == [0.0, 1.0, 2.0]
        assert kwargs == {"shift": 1.0} and argnums == (1,) and "factor" in argnames
        keep_off[0] = False
        _compat.clear_fast_path_entries()
        for _ in range(3):
            jitted(x, 2, shift=1.0)
        assert len(taken) == 4  # given a fast-path entry again at its first call
    finally:
        _compat.route_python_jit_calls(None)
    assert len(compiles) == before  # the traces and executables JAX holds served every call
