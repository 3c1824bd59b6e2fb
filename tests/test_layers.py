"""The package's modules form layers, and imports only go down.

The layer order is data (:data:`LAYERS`, bottom first).  Every import counts:
module level, function-local, and under ``TYPE_CHECKING``; importing
``a.b.c`` also runs the package ``a.b`` (its ``__init__``), so that package
counts as imported too (not the packages around the importing module, the
top package ``no64`` among them: they run before it).  A module may import a module of its own layer or of a
layer below; imports inside a layer must not form a circle.  A new module
gets a layer here, or this test fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: Bottom first.  Each entry: (layer, its modules).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("vocabularies", ("no64.kinds",)),
    (
        "IR helpers",
        (
            "no64.ir",
            "no64.ir._compat",  # the bindings' compatibility seam
            "no64.ir._mlir",
            "no64.ir.types",
            "no64.ir.locations",
            "no64.ir.fold",  # integer ops folded as they are built
            "no64.ir.words",  # word-pair IR builders
            "no64.ir.pairs",  # double-f32 pair IR builders
            "no64.ir.pair_math",  # transcendentals on pairs from +, -, * and range reduction
        ),
    ),
    ("report", ("no64.report",)),
    ("errors", ("no64.errors",)),
    (
        "op schema",
        (
            "no64.spec",
            "no64.spec.intervals",  # the range lattice the schema types against
            "no64.spec.protocols",
            "no64.spec.registry",
            "no64.spec.walk",  # IR walks: which op is a function, from the schema's roles
            "no64.spec.util",  # small IR builders and edits (what not to erase, from the roles)
        ),
    ),
    ("analysis", ("no64.analysis", "no64.analysis.ranges", "no64.analysis.transfer",
                  "no64.analysis.sentinels", "no64.analysis.float_hints", "no64.analysis.pair_range")),
    ("target profiles", ("no64.targets",)),  # what each device has, refuses, computes narrower: data
    ("target legality", ("no64.targets.legality",)),  # what a module holds that a target refuses
    ("options", ("no64.options",)),  # what a conversion is asked to do, from every way in
    (
        "rules and the op table",
        (
            "no64.rules",
            "no64.rules.bits",
            "no64.rules.checks",
            "no64.rules.custom_call",
            "no64.rules.floats",
            "no64.rules.float_bits",  # a float64's bits by arithmetic, and back
            "no64.rules.fft",  # a complex128 Fourier transform as float64 arithmetic
            "no64.rules.rng_bit_generator",
            "no64.rules.wide",
            "no64.rules.limbs",  # integer dots as limb dots a narrower datapath computes exactly
            "no64.rules.unfold",  # reductions of several values as their bodies on whole tensors
            "no64.rules.rounding",  # reduce_precision on its f32 bits, with integer ops
            "no64.rules.linalg",  # LAPACK's and XLA:TPU's factorizations written out as StableHLO
            "no64.rules.pair_dot",  # float64 dots as exact f32 dots of slices (the Ozaki scheme)
            "no64.rules.pair_rules",
            "no64.rules.widen_rules",  # 16-bit integers carried in 32 bits: the widening's rules
            "no64.rules.ops",
        ),
    ),
    ("transforms", ("no64.transforms", "no64.transforms.scan", "no64.transforms.constants",
                    "no64.transforms.constant_plan",  # the 64-bit constants narrowed, each attribute once
                    "no64.transforms.inline",  # calls carrying 64-bit values inlined before the emulation
                    "no64.transforms.carry",  # values carried as parts: the driver of words, pairs and the widening
                    "no64.transforms.emulation_plan",  # which values are carried as word pairs
                    "no64.transforms.emulate",
                    "no64.transforms.forward",  # packed words forwarded across inlined calls
                    "no64.transforms.boundary",  # a target's native integers behind a 32-bit signature
                    "no64.transforms.widen",  # 16-bit integers carried in 32 bits on a device without them
                    "no64.transforms.pairs", "no64.transforms.pair_probe",
                    "no64.transforms.plan",  # what the pass decided: values to retype, verdicts
                    "no64.transforms.rewrite",  # applying a plan: rules, retyping, the strict check
                    "no64.transforms.demote",
                    "no64.transforms.legalize",  # a target's exact forms (limb dots), in place
                    "no64.transforms.pipeline")),  # demote, legalize, target check: the chain, composed once
    ("the package's face", ("no64",)),
    (
        "io",
        (
            "no64.io",
            "no64.io.formats",  # the format names and file extensions
            "no64.io.diagnostics",  # one-line messages from parser diagnostics
            "no64.io.sources",  # reading files and pipes within limits
            "no64.io.guards",  # UTF-8 and nesting checks before parsing
            "no64.io.mlir",  # MLIR text, bytecode, portable artifacts
            "no64.io.hlo",  # HLO text and protos
            "no64.io.jaxexport",  # jax.export artifacts
            "no64.io.detect",  # the format of some bytes
            "no64.io.load",
            "no64.io.destinations",  # writing files atomically, or streams
            "no64.io.dump",
        ),
    ),
    # the JAX seam, one module per job, with its face; and the compile hook's
    # state (one object with its listeners) below everything that reads or
    # writes it
    ("the JAX seam's shared parts", ("no64.jax._compat.base", "no64.jax._compat.patching")),
    ("the JAX seam", ("no64.jax._compat.config", "no64.jax._compat.values", "no64.jax._compat.jaxprs",
                      "no64.jax._compat.internals", "no64.jax._compat.tracebacks", "no64.jax._compat.jit_path")),
    ("the JAX seam: what builds on its parts", ("no64.jax._compat.dispatch", "no64.jax._compat.cpu_compiler")),
    ("the JAX seam's face, the hook's state", ("no64.jax", "no64.jax._compat", "no64.jax.state",
                                               "no64.jax.pair_probe", "no64.jax.x64_arrays")),
    # every point where no64 puts its own code in place of JAX's, in one list
    ("what no64 replaces in JAX", ("no64.jax.interception",)),
    # what no64 knows about JAX primitives (from the op table)
    ("the primitive table", ("no64.jax.primitives",)),
    # host values, one module per job
    ("host values: when, and the user's line", ("no64.jax.host.policy", "no64.jax.host.records")),
    ("host values: the rules", ("no64.jax.host.narrowing",)),
    ("host values: the x64 dtype noted on what JAX makes of host data", ("no64.jax.host.x64_dtypes",)),
    # JAX's conversion points, wrapped: its canonicalisation, its conversions
    # to a requested dtype, the paths that would go around no64
    ("host values: JAX's conversion points", ("no64.jax.host.canonical", "no64.jax.host.conversions",
                                              "no64.jax.host.guards")),
    ("host values: sentinels followed through a traced program", ("no64.jax.host.sentinel_walk",)),
    ("host values: a jit call's sentinels found, what the walk finds acted on", ("no64.jax.host.sentinels",)),
    ("host values: installed", ("no64.jax.host.install", "no64.jax.host.callers", "no64.jax.host")),
    ("JAX's 32-bit program replayed from the x64 one", ("no64.jax.replay",)),
    ("host callbacks kept in the x64 program, their boundary 32-bit", ("no64.jax.callbacks",)),
    # the x64 meaning, one module per job
    ("the x64 meaning: judging it", ("no64.jax.intent.judge",)),
    ("the x64 meaning: what is remembered", ("no64.jax.intent.records",)),
    ("the x64 meaning: calls outside any jit", ("no64.jax.intent.eager",)),
    ("the x64 meaning: one trace per x64 signature", ("no64.jax.intent.variants",)),
    ("the x64 meaning: the trace and the lowering of a jit call", ("no64.jax.intent.trace",)),
    ("the x64 meaning, installed", ("no64.jax.intent",)),
    # the compile hook, one module per job
    ("the compile hook: its configuration, its records", ("no64.jax.hook.config", "no64.jax.hook.records")),
    ("the compile hook: x64", ("no64.jax.hook.x64",)),
    ("the compile hook: a module prepared", ("no64.jax.hook.prepare",)),
    ("the compile hook: a module by its x64 meaning", ("no64.jax.hook.meaning",)),
    ("the compile hook: in front of JAX's compiler", ("no64.jax.hook.compiler",)),
    ("the compile hook: activation", ("no64.jax.hook.activation",)),
    ("the compile hook", ("no64.jax.hook",)),
    # the reference runner: modules on the CPU backend, then comparisons
    ("the reference runner's modules", ("no64.jax.reference.modules",)),
    ("the reference runner's comparisons", ("no64.jax.reference.compare",)),
    ("the reference runner", ("no64.jax.reference",)),
    # no64.jit, one module per job
    ("no64.jit: its arguments narrowed, a function lowered", ("no64.jax.jit.arguments", "no64.jax.jit.lowered")),
    ("no64.jit: the x64 program run by no64", ("no64.jax.jit.exact",)),
    ("no64.jit: the function", ("no64.jax.jit.jitted",)),
    ("the JAX layer", ("no64.jax.jit", "no64.jax.assume")),
    # measured float error, one module per job
    ("measured float error: the report", ("no64.jax.numerics.report",)),
    ("measured float error: how far", ("no64.jax.numerics.errors",)),
    ("measured float error: the walk", ("no64.jax.numerics.walk",)),
    ("measured float error: a function measured", ("no64.jax.numerics.run",)),
    ("measured float error", ("no64.jax.numerics",)),
    # the audit, one module per job
    ("the audit's format and attribution", ("no64.jax.audit.schema", "no64.jax.audit.sites")),
    ("the audit's value model", ("no64.jax.audit.values",)),
    ("the audit's views", ("no64.jax.audit.observer", "no64.jax.audit.predictor")),
    ("the audit's measured float error: what was found", ("no64.jax.audit.numerics_summary",)),
    ("the audit's measured float error: measuring", ("no64.jax.audit.measure",)),
    ("the audit's report model", ("no64.jax.audit.model",)),
    ("the audit's causes", ("no64.jax.audit.causes",)),
    ("the audit's runner", ("no64.jax.audit.runner",)),
    ("the audit and the pytest plugin", ("no64.jax.audit", "no64.jax.pytest_plugin")),
    ("cli", ("no64.cli", "no64.__main__", "jax_plugins.no64")),
]

#: Imports that close a circle inside a layer, each with why it is still
#: there.  Any other circle fails the test.  (None now: the compile hook,
#: host narrowing and the x64 meaning share their state through
#: ``no64.jax.state``, below all three.)
KNOWN_CIRCLES: dict[tuple[str, str], str] = {}

#: Layers below this one never import JAX itself (the MLIR bindings of
#: jaxlib are no import of JAX); io reads ``jax.export`` artifacts with
#: JAX's own deserializer, on demand.
FIRST_JAX_LAYER = "io"


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for top in ("no64", "jax_plugins"):
        for p in (SRC / top).rglob("*.py"):
            parts = list(p.relative_to(SRC).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (p, is_pkg)
    return mods


def _imported_names(mod: str, is_pkg: bool, node: ast.Import | ast.ImportFrom, mods: dict) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        full = ".".join(base + ([node.module] if node.module else []))
    else:
        full = node.module or ""
    out = []
    for a in node.names:
        sub = f"{full}.{a.name}"
        out.append(sub if sub in mods else full)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (every import, see above)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, (path, is_pkg) in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for name in _imported_names(mod, is_pkg, node, mods):
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                if not name:
                    continue
                # the packages on the way run too (not the top package, nor
                # the packages around ``mod``, which run before it)
                parts = name.split(".")
                for i in range(2, len(parts) + 1):
                    pkg = ".".join(parts[:i])
                    if not mod.startswith(pkg + "."):
                        deps.add(pkg)
                if name in ("no64", "jax_plugins") or len(parts) == 1:
                    deps.add(name)
        deps.discard(mod)
        graph[mod] = {d for d in deps if d in mods}
    return graph


def third_party_imports(mod: str) -> set[str]:
    path, _ = _modules()[mod]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out


def layer_of() -> dict[str, int]:
    out = {}
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            assert m not in out, f"{m} is in two layers"
            out[m] = i
    return out


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    layer = layer_of()
    bad = []
    for mod, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if layer[dep] > layer[mod]:
                bad.append(f"{mod} ({LAYERS[layer[mod]][0]}) imports {dep} ({LAYERS[layer[dep]][0]})")
    return bad


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _without_known(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {d for d in deps if (m, d) not in KNOWN_CIRCLES} for m, deps in graph.items()}


# ------------------------------------------------------------------- the tests


def test_every_module_has_a_layer() -> None:
    layer = layer_of()
    missing = sorted(set(_modules()) - set(layer))
    assert missing == [], f"give these modules a layer in LAYERS: {missing}"
    stale = sorted(set(layer) - set(_modules()))
    assert stale == [], f"LAYERS names modules that do not exist: {stale}"


def test_imports_only_go_down() -> None:
    assert upward_imports(import_graph()) == []


def test_no_circle_of_imports() -> None:
    graph = import_graph()
    assert circles(_without_known(graph)) == []
    # each known circle is still there (else its entry goes)
    for mod, dep in KNOWN_CIRCLES:
        assert dep in graph[mod], f"{mod} no longer imports {dep}: drop it from KNOWN_CIRCLES"


def test_below_the_jax_layer_nothing_imports_jax() -> None:
    first = [name for name, _ in LAYERS].index(FIRST_JAX_LAYER)
    layer = layer_of()
    bad = sorted(m for m in _modules() if layer[m] < first and "jax" in third_party_imports(m))
    assert bad == []


def test_the_checks_can_fail() -> None:
    """An import up a layer, a circle, and one hidden in a function are seen."""
    graph = import_graph()
    graph["no64.spec.walk"] = graph["no64.spec.walk"] | {"no64.transforms.scan"}
    assert upward_imports(graph) == [
        "no64.spec.walk (op schema) imports no64.transforms.scan (transforms)"
    ]
    assert any({"no64.transforms.scan", "no64.spec.walk"} <= set(c) for c in circles(graph))
    # a circle inside one layer, as one hidden in a function would close it
    graph = import_graph()
    graph["no64.jax._compat"] = graph["no64.jax._compat"] | {"no64.jax.state"}
    assert upward_imports(graph) == []
    assert ["no64.jax._compat", "no64.jax.state"] in circles(graph)
    assert circles(_without_known(graph)) != [], "a circle is seen unless excused"


def test_function_local_and_type_checking_imports_count(tmp_path: Path) -> None:
    src = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..transforms.demote import demote\n"
        "def f():\n    from ..jax import hook\n    import no64.io\n"
    )
    tree = ast.parse(src)
    mods = _modules()
    names = [
        n
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for n in _imported_names("no64.spec.registry", False, node, mods)
    ]
    assert names == ["typing", "no64.transforms.demote", "no64.jax.hook", "no64.io"]


def _folder(mod: str) -> str | None:
    """The package folder a module lives in (``None``: a top-level module)."""
    parts = mod.split(".")
    if parts[0] != "no64" or len(parts) == 1:
        return None
    if len(parts) > 2 or (SRC / "no64" / parts[1]).is_dir():
        return parts[1]
    return None


def test_the_folders_show_the_layers() -> None:
    """Each folder of the package is a band of consecutive layers that hold
    nothing else (the package's top-level modules -- kinds, report, errors,
    the face, the command line -- are layers of their own)."""
    layer = layer_of()
    bands: dict[str, set[int]] = {}
    for mod in _modules():
        folder = _folder(mod)
        if folder is not None:
            bands.setdefault(folder, set()).add(layer[mod])
    problems = []
    for folder, idx in sorted(bands.items()):
        if idx != set(range(min(idx), max(idx) + 1)):
            problems.append(f"{folder}/ is split by other layers")
        for i in idx:
            strangers = [m for m in LAYERS[i][1] if _folder(m) != folder]
            if strangers:
                problems.append(f"layer {LAYERS[i][0]!r} of {folder}/ also holds {strangers}")
    assert problems == []


#: Packages whose modules take no underscore name from one another: a name a
#: sibling module uses is public within its package (the package's
#: ``__all__`` stays its face), so privacy means "this module's own".
PRIVATE_WITHIN = ("no64.io", "no64.jax.host", "no64.jax._compat", "no64.jax.intent", "no64.jax.numerics",
                  "no64.jax.reference", "no64.jax.hook", "no64.jax.jit")


def private_crossings(mod: str, path: Path) -> list[str]:
    """``from .x import _name`` (an underscore name of another module) in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            source = "." * node.level + (node.module or "")
            out += [f"{mod} imports {a.name} from {source}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_package_modules_take_no_private_names_from_each_other() -> None:
    bad = [line for mod, (path, is_pkg) in sorted(_modules().items())
           if mod.rpartition(".")[0] in PRIVATE_WITHIN or (is_pkg and mod in PRIVATE_WITHIN)
           for line in private_crossings(mod, path)]
    assert not bad, "\n".join(bad)


def test_a_private_crossing_is_found(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from .policy import _INT64, NARROWED\nfrom ..state import STATE\n")
    assert private_crossings("no64.jax.host.m", path) == ["no64.jax.host.m imports _INT64 from .policy"]
