"""The primitive table (:mod:`no64.jax.primitives`): every primitive it knows
is one the installed JAX has (or is marked as one some supported release
lacks), what an entry takes from the op table holds for each op it names,
and the walk of host sentinels follows what each kind of entry says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from no64.jax.host import sentinel_reads
from no64.jax.primitives import CALLS_ITS_IMPLEMENTATION, HOST_CALLBACKS, PRIMITIVES, WIDTH_PARAMETERS, Role
from no64.spec.registry import spec_of
from support import jax_compat

INT32_MAX = int(np.iinfo(np.int32).max)


def test_every_primitive_exists_in_the_installed_jax() -> None:
    installed = jax_compat.primitive_names()
    assert {"add", "while", "argmin"} <= installed  # the seam finds JAX's primitives
    missing = sorted(name for name, spec in PRIMITIVES.items()
                     if name not in installed and not spec.version_dependent)
    assert missing == [], f"not primitives of jax {jax.__version__} (mark them version_dependent)"
    assert sorted(set(WIDTH_PARAMETERS) - installed) == []
    # the host callbacks (jax.debug.print's own primitive is newer than some releases')
    assert sorted(set(HOST_CALLBACKS) - CALLS_ITS_IMPLEMENTATION - installed) == []
    assert len(jax_compat.callback_effect_types()) == 4  # the debug and io effects, ordered or not


def test_derived_sentinel_uses_hold_for_every_op_named() -> None:
    """An entry that takes its operands' sentinel uses from its first op
    would take the same from every other op it names."""
    for name, spec in PRIMITIVES.items():
        if spec.sentinels is not None or spec.role not in (Role.MOVES, Role.ORDERS):
            continue
        uses = {op: spec_of(op).sentinels for op in spec.ops}
        assert len(set(uses.values())) == 1, (name, uses)


def _reads(fun: Callable[..., Any], *args: Any) -> list[tuple[str, bool]]:
    """The (primitive, meets) reads of ``fun``'s program, its argument 0
    holding a host sentinel's image (``INT32_MAX``) and no ordinary value equal to it."""
    jaxpr = jax.make_jaxpr(fun)(*args)
    found = sentinel_reads(jaxpr, {0: frozenset({INT32_MAX})}, frozenset())
    return sorted((r.primitive, r.meets) for r in found)


X = np.array([1, INT32_MAX, 3], np.int32)
Y = np.array([4, 5, 6], np.int32)

#: A scatter of one element at each index.
_AT_INDEX = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))

CASES: dict[str, tuple[Callable[..., Any], list[tuple[str, bool]]]] = {
    # Results.JOINED: the result holds both operands' elements, which meet
    "joined: max meets an operand that may be its image": (lambda x, y: jnp.maximum(x, y), [("max", True)]),
    "joined: max with a bounded operand": (lambda x, y: jnp.maximum(x, jnp.arange(3, dtype=np.int32)), []),
    "joined: the moved sentinel is read after":
        (lambda x, y: jnp.maximum(x, jnp.arange(3, dtype=np.int32)) + 1, [("add", False)]),
    # Results.EACH: result i holds operand i's elements alone
    "each: optimization_barrier keeps its operands apart":
        (lambda x, y: jax.lax.optimization_barrier((x, y))[1] + 1, []),
    "each: optimization_barrier moves the sentinel":
        (lambda x, y: jax.lax.optimization_barrier((x, y))[0] + 1, [("add", False)]),
    # Results.FIRST: the values carry the sentinel, the indices do not
    "first: top_k's values": (lambda x, y: jax.lax.top_k(x, 2)[0] + 1, [("add", False)]),
    "first: top_k's indices": (lambda x, y: jax.lax.top_k(x, 2)[1] + 1, []),
    # Results.NONE: ordering only, the result holds no element
    "none: argmin": (lambda x, y: jnp.argmin(x) + 1, []),
    "none: a compare with a bounded operand": (lambda x, y: x < jnp.arange(3, dtype=np.int32), []),
    # operands read: an index, a case index
    "reads: a sentinel as an index":
        (lambda x, y: jax.lax.dynamic_slice(y, (x[1],), (1,), allow_negative_indices=False),
         [("dynamic_slice", False)]),
    "reads: select_n's case index": (lambda x, y: jax.lax.select_n(x, y, y), [("select_n", False)]),
    "reads: scatter's indices": (lambda x, y: jax.lax.scatter(y, x[:, None], y, _AT_INDEX), [("scatter", False)]),
    "carries: scatter's updates": (lambda x, y: jnp.zeros(3, np.int32).at[0].set(x[0]), []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_walk_follows_each_kind_of_entry(case: str) -> None:
    fun, want = CASES[case]
    assert _reads(fun, X, Y) == want

