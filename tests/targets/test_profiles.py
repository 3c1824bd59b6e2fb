"""Every end-to-end program (tests/programs.py) converted for every built-in profile.

For each profile the x64 program is converted (``no64.demote(target=...)``) and made
exact where no64 can (``legalize``), then checked against the profile
(``check_target``): no type it lacks may remain, and what it would still refuse or
compute inexactly must be one of the findings listed in :data:`LEFT` -- each with the
vendor's code and reason, at the program's own line.  The result runs on the CPU --
for a profile with a narrower datapath (Neuron) as that device computes it
(neuron_datapath) -- and is compared with the x64 program: integers bit for bit,
floats within the program's tolerance (``no64.jax.reference.compare_outputs``).

Profiles that declare the same thing (the ones with no 64-bit type, no refusal and no
datapath) convert a program to the same module: it is converted and run once for them
all (``_converted``), and the x64 references are computed once per program.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import pytest
from neuron_datapath import on_datapath

import no64
from no64.jax.reference import (
    DTYPE_KINDS,
    compare_outputs,
    converted_inputs,
    join_words,
    lower_x64,
    narrow_inputs,
    run_module,
)
from no64.targets import TARGETS, Target
from no64.targets.legality import check_target
from no64.transforms.legalize import legalize
from programs import PROGRAMS, Program
from support import ir, make_context

BY_NAME = {p.name: p for p in PROGRAMS}
#: The built-in profiles (a plugin's are not this suite's).
BUILT_IN = ["coreml", "generic", "iree-vulkan", "litert", "mps", "mtl", "neuron", "neuron-trn2", "tpu", "tt"]

#: What a profile still refuses or computes inexactly in a converted program, which
#: no64 has no exact form for: (program, profile) -> {(kind, op, code), ...}.
LEFT: Mapping[tuple[str, str], set[tuple[str, str, str]]] = {
    # Neuron has no lax.cond and no loop without a static trip count: the program's
    # cond and switch, its while_loop and fori_loop bounded by an input, and jnp.gcd's
    # loop (Euclid's, until the remainder is 0) are refused at their lines
    **{(program, profile): {("refused", "stablehlo.while", "")} | ({("refused", "stablehlo.case", "")}
                                                                  if program == "control_flow" else set())
       for program in ("control_flow", "integer_arithmetic") for profile in ("neuron", "neuron-trn2")},
}


def test_the_built_in_profiles() -> None:
    assert sorted(TARGETS) == BUILT_IN
    # Neuron has no 16-bit integer datapath: both its profiles carry int16/uint16 in 32 bits
    assert [n for n in BUILT_IN if TARGETS[n].widens] == ["neuron", "neuron-trn2"]
    assert all(TARGETS[n].widened("i16") == "i32" and TARGETS[n].widened("u16") == "u32"
               for n in ("neuron", "neuron-trn2"))


@functools.cache
def _reference(name: str) -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """Program ``name``'s x64 module (text), its inputs (each rounded to its 32-bit
    type, so that only the programs differ) and its results on the CPU."""
    program = BY_NAME[name]
    leaves, treedef = jax.tree_util.tree_flatten(list(program.make_args(np.random.default_rng(0))))
    same = [narrow_inputs([np.asarray(a)])[0].astype(np.asarray(a).dtype) for a in leaves]
    original = lower_x64(program.fn, *jax.tree_util.tree_unflatten(treedef, same), **program.jit_kwargs())
    values = run_module(original, same, strict=False)
    return original.operation.get_asm(enable_debug_info=True), same, values


def _signature(t: Target) -> tuple[Any, ...]:
    return (t.native, t.refuses, t.datapaths, t.widens)


@functools.cache
def _converted(name: str, signature: tuple[Any, ...], profile: str) -> tuple[Any, list[Any], list[Any], Any]:
    """Program ``name`` converted for the first profile of ``signature`` asked for:
    (the report, the findings left, what legalize rewrote, the outputs on the CPU)."""
    t = TARGETS[profile]
    text, same, _ = _reference(name)
    m = ir.Module.parse(text, make_context())
    report = no64.demote(m, target=t)
    no64.check(m, keep=report.kept_native)
    done = legalize(m, t)
    m.operation.verify()
    findings = check_target(m, t)
    run = on_datapath(m, t)[0] if t.datapaths else m
    values = run_module(run, converted_inputs(same, report.emulated_inputs, report.kept_native),
                        strict=True, keep=report.kept_native)
    for j in report.emulated_outputs:
        values[j] = join_words(values[j])
    return report, findings, done, values


_FIRST: dict[tuple[Any, ...], str] = {}


@pytest.mark.parametrize("profile", BUILT_IN)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_on_every_profile(program: Program, profile: str, request: pytest.FixtureRequest) -> None:
    if program.needs_devices > 1:
        request.getfixturevalue("cpu_devices")
    t = TARGETS[profile]
    signature = _signature(t)
    first = _FIRST.setdefault(signature, profile)
    report, findings, done, values = _converted(program.name, signature, first)
    _, _, reference = _reference(program.name)
    assert not [f for f in findings if f.kind == "type"], [str(f) for f in findings]
    left = {(f.kind, f.op, f.code) for f in findings}
    assert left == LEFT.get((program.name, profile), set()), [done.explain(f) for f in findings]
    for f in findings:  # the vendor's reason, at the program's line
        assert f.source and "programs.py" in str(f.location), str(f)
    outputs = compare_outputs(
        reference, values, tolerance=program.tolerance, what=f"{program.name} for {profile}",
        wide=[*report.emulated_outputs, *(i for i, r in enumerate(reference)
                                          if DTYPE_KINDS.get(np.asarray(r).dtype) in report.kept_native)])
    assert all(o.ok for o in outputs), "\n".join(str(o) for o in outputs if not o.ok)
