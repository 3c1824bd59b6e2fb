"""Property: host int64/uint64 arrays holding sentinels next to their 32-bit
images and ordinary values, given to ``no64.jit`` (x64-off path), compute
what the x64 program computes (narrowed by the pass's rules) or are refused
with ``no64.HostRangeError`` (or, under strict, the x64 program's range check).

Under ``policy="strict"`` that is the whole property.  Under the default
policy a program that reads a host sentinel as a number, or where one meets
values that may be its image, is reported instead (an ``unproven`` host
record when traced) -- exactly what strict refuses -- so a default result
that differs from the x64 one must be one that strict refuses.

The ordinary values stay small: 32-bit overflow of ordinary arithmetic is
not about host sentinels (the x64-off path computes in 32 bits).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import no64
from no64.transforms import constants as C

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.jax.hook.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

I64, U64 = np.iinfo(np.int64), np.iinfo(np.uint64)
I32, U32 = np.iinfo(np.int32), np.iinfo(np.uint32)
S_MAX, S_MIN, S_UMAX = np.int64(I64.max), np.int64(I64.min), np.uint64(U64.max)
N = 4

#: Programs over an int64 argument: moving, selecting, ordering and comparing
#: ops (a sentinel keeps its meaning there unless it meets its image) and
#: ops that read it as a number.
SIGNED: dict[str, Callable[[Any], Any]] = {
    "argmin": lambda a: jnp.argmin(a),
    "argmax": lambda a: jnp.argmax(a),
    "min": lambda a: jnp.min(a),
    "sort": lambda a: jnp.sort(a),
    "unique": lambda a: jnp.unique(a, size=N, fill_value=S_MAX),
    "eq_max": lambda a: a == S_MAX,
    "gt_min": lambda a: a > S_MIN,
    "where_min": lambda a: jnp.min(jnp.where(a > 0, a, S_MAX)),
    "masked_argmax": lambda a: jnp.argmax(jnp.where(a < 0, a, S_MIN)),
    "clip": lambda a: jnp.clip(a, S_MIN, 5),
    "rem": lambda a: a % 1000,
    "floordiv": lambda a: a // 7,
    "to_float": lambda a: a.astype(jnp.float32) > 1e9,
    "low_byte": lambda a: a & 0xFF,
}
UNSIGNED: dict[str, Callable[[Any], Any]] = {
    "argmin": lambda a: jnp.argmin(a),
    "max": lambda a: jnp.max(a),
    "sort": lambda a: jnp.sort(a),
    "eq_max": lambda a: a == S_UMAX,
    "where_min": lambda a: jnp.min(jnp.where(a > 2, a, S_UMAX)),
    "rem": lambda a: a % np.uint64(1000),
    "to_float": lambda a: a.astype(jnp.float32) > 1e9,
}

_signed_elements = st.one_of(
    st.sampled_from([int(I64.max), int(I64.min), int(I32.max), int(I32.min)]),
    st.integers(-1000, 1000),
)
_unsigned_elements = st.one_of(
    st.sampled_from([int(U64.max), int(U32.max), 0]),
    st.integers(0, 1000),
)
_cases = st.one_of(
    st.tuples(st.just(False), st.sampled_from(sorted(SIGNED)),
              st.lists(_signed_elements, min_size=N, max_size=N)),
    st.tuples(st.just(True), st.sampled_from(sorted(UNSIGNED)),
              st.lists(_unsigned_elements, min_size=N, max_size=N)),
)


def _narrowed(ref: np.ndarray) -> np.ndarray | None:
    if ref.dtype in (np.int64, np.uint64):
        res = C.narrow_integers(ref.reshape(-1), ref.dtype == np.uint64, "error")
        return None if res.values is None else res.values.reshape(ref.shape)
    if ref.dtype == np.float64:
        return C.narrow_floats(ref.reshape(-1)).values.reshape(ref.shape)
    return ref


def _run(f: Callable[[Any], Any], a: np.ndarray, policy: str) -> np.ndarray | None:
    """The result, or ``None`` when refused: a HostRangeError, or under
    strict the range check of the x64 program (a NarrowingError at the line)."""
    try:
        return np.asarray(no64.jit(f, policy=policy)(a))
    except no64.HostRangeError:
        return None
    except no64.NarrowingError:
        if policy != "strict":
            raise
        return None


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(_cases)
def test_host_sentinels_are_x64_results_or_refused(case: tuple[bool, str, list[int]]) -> None:
    unsigned, name, values = case
    f = (UNSIGNED if unsigned else SIGNED)[name]
    a = np.array(values, np.uint64 if unsigned else np.int64)
    assert jax.config.jax_enable_x64
    want = _narrowed(np.asarray(jax.jit(f)(a)))

    def agrees(got: np.ndarray) -> bool:
        return (want is not None and got.shape == want.shape
                and np.array_equal(got.astype(want.dtype), want))

    strict = _run(f, a, "strict")
    assert strict is None or agrees(strict), (name, values, strict, want)
    default = _run(f, a, "default")
    if default is not None and not agrees(default):
        # Reported under the default policy: what strict refuses.
        assert strict is None, (name, values, default, want)
