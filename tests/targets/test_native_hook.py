"""The compile hook for a target with native int64/uint64 (``mtl``, ``neuron-trn2``;
the CPU stands in for the device): a program that asked for x64 runs its x64
program with every 64-bit integer as it is -- nothing emulated on words, nothing
narrowed inside -- behind the 32-bit signature JAX lowered with x64 off (int32
buffers in, widened on entry; int32 out, narrowed on exit and judged as every
narrowed output is).  Checked bit for bit against the x64 program run without
no64, on int32 extremes widened to full 64-bit values inside the program, and on
the module the backend compiled; under ``generic`` the same programs are still
computed on 32-bit words."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import no64
from no64.jax import intent
from no64.jax.hook import active_config, clear_compile_records, compile_records
from no64.targets import TARGETS
from no64.targets.legality import check_target
from programs import PROGRAMS as SUITE, Program
from support import Intercept, enable_x64, ir, make_context

pytestmark = [
    pytest.mark.filterwarnings("ignore::no64.X64DisabledWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning"),
]

NATIVE = ["mtl", "neuron-trn2"]
I32 = np.iinfo(np.int32)
MASK32 = np.int64(0xFFFFFFFF)


def _w(x: jax.Array) -> jax.Array:
    return x.astype(jnp.int64)


def _full(a: jax.Array, b: jax.Array) -> jax.Array:
    """A full 64-bit value from two int32 words: ``a`` the high, ``b`` the low."""
    return (_w(a) << 32) | (_w(b) & MASK32)


def bits(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    x = _full(a, b)
    return lax.population_count(x), lax.clz(x), lax.clz(_w(b) << 33)


def shifts(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    x = _full(b, a)
    return ((x >> 32).astype(jnp.int32), x >> 40, lax.shift_right_logical(x, jnp.int64(40)) & 0xFFFFFF,
            (_w(a) << 40) >> 40)


def splitmix64(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    z = _full(a, b).astype(jnp.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(32)).astype(jnp.uint32), (z % np.uint64(1000003)).astype(jnp.uint32)


def sort_keys(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    key = (_w(a) << 32) + (_w(b) & MASK32)            # composite keys: a first, then b unsigned
    return jnp.argsort(key), (jnp.sort(key) >> 32).astype(jnp.int32)


def cumsum_div(a: jax.Array, b: jax.Array) -> tuple[jax.Array, ...]:
    x = _full(a, b)
    return (jnp.cumsum(_w(a) << 24) % 1000003, (_w(a) * _w(b)) // (2**33), (x // 7) % 65536,
            jnp.sum(x % 1000) % 1000)


PROGRAMS: dict[str, Callable[..., Any]] = {
    "bits": bits, "shifts": shifts, "splitmix64": splitmix64, "sort_keys": sort_keys, "cumsum_div": cumsum_div}


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    edges = [I32.min, I32.min + 1, -(2**16), -2, -1, 0, 1, 2, 2**16, 2**30, I32.max - 1, I32.max]
    a = np.array(edges + [7, -7, 123456789, -987654321], np.int32)
    b = np.array(edges[::-1] + [-7, 7, -987654321, 123456789], np.int32)
    return a, b


def _parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


def _wide_values(text: str) -> bool:
    """Whether a module's values hold 64-bit types (its attributes aside)."""
    return bool(no64.find_64bit(_parse(text)))


#: A tensor of 64-bit integers in a module's text, and an attribute's value.
_WIDE = re.compile(r"tensor<[0-9x?]*u?i64>")
_ATTRIBUTE = re.compile(r"dense<[^>]*> : tensor<[^>]*>")


def _wide(text: str) -> bool:
    """Whether a module's values (not its attributes: a window's padding) hold 64-bit integers."""
    return _WIDE.search(_ATTRIBUTE.sub("", text)) is not None


def _ops(text: str) -> int:
    """The ops of a module's text (one per line that names a dialect's op)."""
    return sum(1 for line in text.splitlines() if "stablehlo." in line or "chlo." in line)


def _reference(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    """The x64 program's results, run without no64."""
    assert jax.config.jax_enable_x64 and active_config() is None
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]


def _run_under_hook(fn: Callable[..., Any], *args: np.ndarray) -> tuple[list[np.ndarray], list[str], list[Any]]:
    """The results under the hook, the modules the backend compiled for them, and
    the hook's records."""
    jax.clear_caches()                            # compiled now, whatever ran before
    clear_compile_records()
    with Intercept() as seen:
        got = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    return got, seen.modules, [r for r in compile_records() if r.report is not None]


def _same_bits(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        # every result fits the 32-bit array JAX returns: compared as the x64 integer
        assert np.issubdtype(w.dtype, np.integer) and g.dtype.itemsize == 4, (g.dtype, w.dtype)
        np.testing.assert_array_equal(g.astype(w.dtype), w)


@pytest.mark.parametrize("target", NATIVE)
def test_width_dependent_integers_run_native_under_the_hook(target: str, x64_requested: None) -> None:
    a, b = _inputs()
    refs = {name: _reference(fn, a, b) for name, fn in PROGRAMS.items()}
    no64.install("cpu", target=target)
    assert not jax.config.jax_enable_x64      # turned off by no64: the program asked for x64
    for name, fn in PROGRAMS.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got, modules, records = _run_under_hook(fn, a, b)
        _same_bits(got, refs[name])
        # nothing narrowed without a proof, nothing the profile refuses: neuron-trn2's
        # refusal of an arithmetic right shift of int64 (EVRF022) is met by its unfolding
        said = [str(w.message) for w in caught if issubclass(w.category, no64.UnprovenIntegerWarning)]
        assert said == [], said
        (record,) = records
        report = record.report
        assert report.target == target and report.kept_native == ["i64", "u64"]
        assert report.ops_emulated == 0 and report.values_emulated == 0, name
        assert report.widened_inputs == [], name   # the inputs are int32 in the x64 program too
        assert record.exact and not intent.unproven(report), name
        # the module the backend compiled: 64-bit integer ops, allowed by the target's strict check
        (text,) = [t for t in modules if _wide_values(t)]
        module = _parse(text)
        no64.check(module, keep=frozenset({"i64", "u64"}))
        assert check_target(module, TARGETS[target], types=False) == [], name
        with pytest.raises(no64.Remaining64BitError):
            no64.check(module)


def test_the_programs_need_64_bits(x64_requested: None) -> None:
    """Not vacuous: JAX's 32-bit program computes other integers on these inputs, and
    for a device without int64 (``generic``) the hook computes them on words."""
    a, b = _inputs()
    refs = {name: _reference(fn, a, b) for name, fn in PROGRAMS.items()}
    jax.config.update("jax_enable_x64", False)

    def differs(name: str) -> bool:
        try:
            got = jax.tree_util.tree_leaves(jax.jit(PROGRAMS[name])(a, b))
        except OverflowError:                     # a Python int JAX cannot hold in 32 bits
            return True
        return any(not np.array_equal(np.asarray(g).astype(np.int64), w.astype(np.int64))
                   for g, w in zip(got, refs[name]))

    assert [name for name in PROGRAMS if not differs(name)] == []
    jax.config.update("jax_enable_x64", True)
    no64.install("cpu", integer_policy="wrap")    # the CPU's own profile: generic
    for name, fn in PROGRAMS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", no64.UnprovenIntegerWarning)
            got, modules, records = _run_under_hook(fn, a, b)
        (record,) = records
        assert record.report.kept_native == [] and record.report.ops_emulated > 0, name
        assert not any(_wide_values(t) for t in modules), name
        if name in ("bits", "splitmix64", "sort_keys"):
            _same_bits(got, refs[name])           # words give the x64 result where no value is narrowed


@pytest.mark.parametrize("target", NATIVE)
def test_fewer_ops_than_words(target: str, x64_requested: None) -> None:
    """The module compiled for the native target computes in 64 bits where the
    one on words holds no 64-bit type, and the programs' native modules hold
    fewer ops than their words.  (Program by program the words can be the
    shorter: a bit count of a constant shift folds while it is written.)"""
    a, b = _inputs()
    modules: dict[str, list[str]] = {}
    for profile in (target, None):
        # (wrap: on words a 64-bit host constant whose value reaches an unproven
        # narrowing is refused, as JAX's 32-bit program would wrap it)
        no64.install("cpu", target=profile, integer_policy="wrap")
        for name, fn in PROGRAMS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", no64.UnprovenIntegerWarning)
                _, texts, _ = _run_under_hook(fn, a, b)
            modules.setdefault(name, []).append(max(texts, key=_ops))
    for name, (native, words) in modules.items():
        assert _wide(native) and not _wide(words), name
    totals = [sum(_ops(pair[k]) for pair in modules.values()) for k in (0, 1)]
    assert totals[0] < totals[1], totals


def wide_sum(a: jax.Array, b: jax.Array) -> jax.Array:
    return (_w(a) << 32) + _w(b)                      # LINE wide_sum


def _line(tag: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(wide_sum)
    return start + next(i for i, t in enumerate(lines) if t.rstrip().endswith(f"# LINE {tag}"))


@pytest.mark.parametrize("target", NATIVE)
def test_an_output_beyond_32_bits_is_judged_as_today(target: str, x64_requested: None) -> None:
    """A 64-bit result that does not fit the 32-bit array JAX returns: warned at the
    user's line and returned clipped (default), refused (strict), or computed and
    checked by value when it runs (exact) -- as for a device without int64."""
    a, b = _inputs()
    small = (np.zeros(4, np.int32), np.array([I32.min, -1, 0, I32.max], np.int32))
    want_small = _reference(wide_sum, *small)
    line = _line("wide_sum")
    results = {}
    for profile in (target, None):
        no64.install("cpu", target=profile)
        intent.clear_warned()                     # (each line is warned about once)
        jax.clear_caches()
        with pytest.warns(no64.UnprovenIntegerWarning) as caught:
            results[profile] = np.asarray(jax.jit(wide_sum)(a, b))
        said = [w for w in caught if not issubclass(w.category, no64.TargetWarning)
                and issubclass(w.category, no64.UnprovenIntegerWarning)]
        assert [(w.filename, w.lineno) for w in said] == [(__file__, line)], profile
        how = (f"computes it as it is (native on target {target}) and returns it in the 32-bit array JAX "
               "returns, clipped" if profile else "computes it as a 32-bit value there")
        assert how in str(said[0].message), profile
    # clipped to the 32-bit range on both: the same result as on words
    np.testing.assert_array_equal(results[target], results[None])
    np.testing.assert_array_equal(results[target], np.clip((a.astype(np.int64) << 32) + b, I32.min, I32.max))
    no64.install("cpu", target=target, policy="strict")
    with pytest.raises(no64.NarrowingError, match=f"{__file__}:{line}"):
        jax.jit(wide_sum)(a, b)
    no64.install("cpu", target=target, policy="exact")
    with pytest.raises(no64.OutputRangeError, match=f"{__file__}:{line}"):
        jax.jit(wide_sum)(a, b)
    # where the values fit, exact returns them
    got, modules, records = _run_under_hook(wide_sum, *small)
    _same_bits(got, want_small)
    (record,) = records
    assert len(record.report.checked_outputs) == 1 and record.report.ops_emulated == 0
    assert any(_wide_values(t) for t in modules)


@pytest.mark.parametrize("target", NATIVE)
def test_64_bit_inputs_are_widened_from_the_32_bit_buffers(target: str, x64_requested: None) -> None:
    """An input that is int64 in the x64 program enters as the int32 buffer JAX
    hands (sign-extended; uint32 zero-extended) and is used whole inside."""
    a, b = _inputs()
    u = b.view(np.uint32)

    def f(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
        return lax.population_count(x << 31), lax.clz(y << np.uint64(31)), (x * 3) // 4, y // np.uint64(3)

    args = (a.astype(np.int64), u.astype(np.uint64))
    want = _reference(f, *args)
    no64.install("cpu", target=target)
    with warnings.catch_warnings():
        warnings.simplefilter("error", no64.UnprovenIntegerWarning)
        warnings.filterwarnings("ignore", category=no64.TargetWarning)
        got, modules, records = _run_under_hook(f, *args)   # int64 host data narrowed: JAX's signature
    _same_bits(got, want)
    (record,) = records
    assert record.report.widened_inputs == [0, 1] and record.report.narrowed_outputs == [0, 1, 2, 3]
    assert record.report.ops_emulated == 0


def test_demote_keeps_native_integers_behind_a_32_bit_signature() -> None:
    """``no64.demote(..., target="mtl", outputs="narrow"/"checked")`` -- what the hook
    runs -- widens the entry's int64/uint64 arguments from 32-bit ones and narrows its
    results; inside, every 64-bit integer is as the x64 program has it."""
    from no64.jax.reference import lower_x64, main_signature
    from runner import compile_module

    def f(x: jax.Array, y: jax.Array) -> tuple[jax.Array, ...]:
        return lax.population_count(x << 32), (x << 32) + y.astype(jnp.int64), y >> np.uint64(1)

    a = np.array([I32.min, -1, 0, 5, I32.max], np.int32)
    u = np.array([0, 1, 2**31, 2**32 - 2, 2**32 - 1], np.uint32)
    wide = (a.astype(np.int64), u.astype(np.uint64))
    module = lower_x64(f, *wide)
    report = no64.demote(module, target="mtl", outputs="narrow", policy="permissive")
    assert report.widened_inputs == [0, 1] and report.narrowed_outputs == [0, 1, 2]
    assert report.ops_emulated == 0 and "outputs [0, 1, 2] come back narrowed to 32 bits" in report.summary()
    # one unproven output, (x << 32) + y, judged at its op; the others proven
    (bad,) = intent.unproven(report)
    assert bad.op == "stablehlo.add"
    ins, outs = main_signature(module)
    assert [s.dtype for s in ins] == [np.int32, np.uint32]
    assert [s.dtype for s in outs] == [np.int32, np.int32, np.uint32]
    assert no64.find_64bit(module)                # inside: the 64-bit integers as they are
    got = compile_module(module, strict=True, keep=frozenset({"i64", "u64"}))([a, u])
    with enable_x64(True):                        # the x64 program, without no64
        want = [np.asarray(x) for x in jax.jit(f)(*wide)]
    want[1] = np.clip(want[1], I32.min, I32.max)  # returned clipped to the 32-bit range
    assert (want[1] != (a.astype(np.int64) << 32) + u).any()   # (not vacuous)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.astype(w.dtype), w)
    with pytest.raises(no64.NarrowingError, match="stablehlo.add"):
        no64.demote(lower_x64(f, *wide), target="mtl", outputs="narrow", policy="strict")
    # exact: the unproven result is computed, returned in 32 bits and checked by value
    module = lower_x64(f, *wide)
    report = no64.demote(module, target="mtl", outputs="checked", policy="exact")
    assert [n.op for n in report.checked_outputs] == ["stablehlo.add"]
    run = compile_module(module, strict=True, keep=frozenset({"i64", "u64"}))
    *results, fits = run([a, u])
    assert not bool(fits)
    small = np.array([0, 1, 7, 2**31 - 2, 2**31 - 1], np.uint32)   # (0 << 32) + y fits
    *results, fits = run([np.zeros(5, np.int32), small])
    assert bool(fits) and np.array_equal(results[1].astype(np.int64), small.astype(np.int64))


@pytest.mark.parametrize("program", SUITE, ids=[p.name for p in SUITE])
def test_every_program_of_the_suite_under_the_hook_for_mtl(program: Program, x64_requested: None,
                                                           request: pytest.FixtureRequest) -> None:
    """Every program of the suite (training steps, control flow, sorting, sentinels,
    sharded, shard_map, ...) runs under the hook for ``mtl`` with its 64-bit integers
    kept, and returns what it returns on words (``generic``): integers bit for bit
    (the x64 program's value where it fits in 32 bits), floats alike."""
    if program.needs_devices > 1:
        request.getfixturevalue("cpu_devices")
    args = program.make_args(np.random.default_rng(0))
    ref = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(program.fn, **program.jit_kwargs())(*args))]
    results = {}
    for profile in ("mtl", None):
        no64.install("cpu", target=profile)
        jax.clear_caches()
        clear_compile_records()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", no64.UnprovenIntegerWarning)
            results[profile] = [np.asarray(x) for x in jax.tree_util.tree_leaves(
                jax.jit(program.fn, **program.jit_kwargs())(*args))]
        # (a program whose x64 module holds no 64-bit value on this JAX release has none)
        reports = [r.report for r in compile_records() if r.report is not None]
        assert all(r.ops_emulated == 0 for r in reports if profile)
        assert all(r.kept_native == (["i64", "u64"] if profile else []) for r in reports)
    for native, words, want in zip(results["mtl"], results[None], ref):
        assert native.dtype == words.dtype
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(native, words)
            info = np.iinfo(native.dtype)
            fits = (want >= info.min) & (want <= info.max)
            np.testing.assert_array_equal(native[fits].astype(want.dtype), want[fits])
        else:
            np.testing.assert_allclose(native, words, rtol=1e-5, atol=1e-6, equal_nan=True)
