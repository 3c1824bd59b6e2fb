"""End-to-end demonstration of no64 on a real 64-bit JAX program.

1. Lower the training step in ``classifier.py`` with ``jax_enable_x64`` on.
2. List the 64-bit values it holds and where (``no64.find_64bit``).
3. Rewrite it to 32-bit types (``no64.demote``) and check it strictly
   (``no64.check``), as a device without 64-bit types would.
4. Write the converted module to ``out/`` and read it back.
5. Run the 64-bit original and the converted file on the same inputs on the
   CPU and compare every output.

Exit status 0 when every step passes, 1 otherwise.  Run it with
``make demo`` or ``python examples/demo.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import collections
import linecache
import os
import re
import sys
from collections.abc import Sequence

# Keep the XLA client's informational start-up lines out of the output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import classifier  # noqa: E402

import no64  # noqa: E402
import no64.io  # noqa: E402
from no64.jax import reference  # noqa: E402

#: Rows shown in each table.
MAX_ROWS = 10
_ELEMENT = re.compile(r"complex<f64>|[su]?i64|f64")


def element_type(finding: no64.Finding) -> str:
    """The 64-bit element type a finding holds (``f64``, ``i64``, ...)."""
    m = _ELEMENT.search(finding.type)
    return m.group(0) if m else finding.type


def _n(count: int, word: str) -> str:
    """``count`` and ``word``, in the plural unless ``count`` is 1."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def _rel(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def source_line(finding: no64.Finding) -> tuple[str, int] | None:
    """The user's ``(file, line)`` of a finding, if its location names one."""
    loc = finding.location
    # "-" is the position inside the module text itself, not user code.
    if not loc.file or loc.file == "-" or loc.line is None:
        return None
    return loc.file, loc.line


def primitive(finding: no64.Finding) -> str:
    if finding.op == "func.func":
        return "(function signature)"
    return finding.location.primitive or finding.op


def _counts(counter: collections.Counter[str], limit: int = 4) -> str:
    parts = [f"{k} {n}" for k, n in counter.most_common(limit)]
    if len(counter) > limit:
        parts.append(f"+{len(counter) - limit} more")
    return ", ".join(parts)


def _table(rows: list[tuple[str, ...]], right: Sequence[int] = ()) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
        if n == 0:
            lines.append("  " + "-" * (sum(widths) + 2 * (len(widths) - 1)))
    return lines


def type_table(findings: Sequence[no64.Finding]) -> list[str]:
    """Per element type: how many values, from which JAX primitives."""
    by_type: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for f in findings:
        by_type[element_type(f)][primitive(f)] += 1
    rows: list[tuple[str, ...]] = [("type", "values", "main JAX primitives (values)")]
    for t, prims in sorted(by_type.items(), key=lambda kv: -sum(kv[1].values())):
        rows.append((t, str(sum(prims.values())), _counts(prims, 4)))
    return _table(rows, right=(1,))


def source_table(findings: Sequence[no64.Finding]) -> list[str]:
    """Per source line: 64-bit values by type, the primitives that made them, the code."""
    per_line: dict[tuple[str, int], list[no64.Finding]] = collections.defaultdict(list)
    unplaced = 0
    for f in findings:
        where = source_line(f)
        if where is None:
            unplaced += 1
        else:
            per_line[where].append(f)
    types = [t for t, _ in collections.Counter(element_type(f) for f in findings).most_common()]
    rows: list[tuple[str, ...]] = [("file:line", *types, "JAX primitives", "code")]
    ranked = sorted(per_line.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for (path, line), group in ranked[:MAX_ROWS]:
        per_type = collections.Counter(element_type(f) for f in group)
        prims = collections.Counter(primitive(f) for f in group)
        names = ", ".join(p for p, _ in prims.most_common(3)) + (", ..." if len(prims) > 3 else "")
        code = linecache.getline(path, line).strip()
        code = code if len(code) <= 44 else code[:41] + "..."
        rows.append(
            (f"{_rel(path)}:{line}", *(str(per_type[t]) for t in types), names, code)
        )
    lines = _table(rows, right=range(1, 1 + len(types)))
    notes = []
    if len(ranked) > MAX_ROWS:
        notes.append(f"{_n(len(ranked) - MAX_ROWS, 'more source line')}")
    if unplaced:
        notes.append(
            f"{_n(unplaced, 'value')} with no user source line (function signatures, "
            "block arguments, JAX helper functions)"
        )
    if notes:
        lines.append("  ... and " + "; ".join(notes))
    return lines


def by_type(findings: Sequence[no64.Finding]) -> str:
    counts = collections.Counter(element_type(f) for f in findings)
    return ", ".join(f"{t}: {n}" for t, n in counts.most_common()) or "none"


def flat_inputs() -> list[np.ndarray]:
    leaves = jax.tree_util.tree_leaves(list(classifier.make_inputs()))
    return [np.asarray(a) for a in leaves]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out", help="folder for the converted module (default: out)")
    opts = parser.parse_args(argv)

    print("1. Lowering classifier.train_step with jax_enable_x64=True")
    text = classifier.lower_train_step()
    original = reference.parse_module(text)  # kept as the 64-bit reference
    converted = reference.parse_module(text)  # rewritten in place below

    findings = no64.find_64bit(converted)
    print(f"\n2. 64-bit values in the program: {len(findings)} ({by_type(findings)})")
    for line in type_table(findings):
        print(line)
    print()
    for line in source_table(findings):
        print(line)

    print("\n3. Converting (no64.demote) and checking strictly (no64.check)")
    print(f"   declared input ranges: {classifier.INPUT_RANGES}")
    try:
        report = no64.demote(converted, input_ranges=classifier.INPUT_RANGES)
        no64.check(converted)
    except no64.No64Error as exc:
        print(f"FAIL: {type(exc).__name__}: {exc}")
        return 1
    for line in report.summary().splitlines():
        print(f"  {line}")
    remaining = no64.find_64bit(converted)

    os.makedirs(opts.out, exist_ok=True)
    path = os.path.join(opts.out, "train_step.no64.mlir")
    fmt = no64.io.save(converted, path, overwrite=True)
    print(f"\n4. Wrote {path} ({fmt}, {os.path.getsize(path)} bytes)")

    print("\n5. Running the 64-bit original and the converted file on the same inputs")
    inputs = flat_inputs()
    narrowed = reference.narrow_inputs(inputs)
    # Give both programs the same values: round 64-bit floats to 32 bits first.
    same = [n.astype(a.dtype) for a, n in zip(inputs, narrowed)]
    _, out_specs = reference.main_signature(original)
    ref_values = reference.run_module(original, same, strict=False)
    saved = no64.io.load(path)
    new_values = reference.run_module(saved, narrowed, strict=True)
    # an output the pass computed exactly as 32-bit words comes back as [..., 2] words
    for j in report.emulated_outputs:
        new_values[j] = no64.join_words(new_values[j])
    wide = report.emulated_outputs
    try:
        outputs = reference.compare_outputs(
            ref_values, new_values, names=[s.name for s in out_specs], what="converted program", wide=wide
        )
        failure = None
    except AssertionError as exc:
        outputs = [
            reference.compare_output(r, d, name=s.name, index=i, wide=i in wide)
            for i, (s, r, d) in enumerate(zip(out_specs, ref_values, new_values))
        ]
        failure = str(exc)
    name_width = max(len(o.name) for o in outputs)
    for o in outputs:
        check = "exact" if o.exact else f"max abs error {o.max_abs_error:.2e}, max rel error {o.max_rel_error:.2e}"
        print(
            f"  {o.name:<{name_width}}  {str(o.reference_dtype):>7} -> {str(o.demoted_dtype):<7}  "
            f"{check:<48} {'ok' if o.ok else 'MISMATCH'}"
        )

    ok = failure is None and not remaining
    print("\nSummary")
    print(f"  64-bit values before: {len(findings)}   after: {len(remaining)}")
    print(
        f"  retyped {_n(report.values_retyped, 'value')}, {_n(report.functions_retyped, 'function signature')}, "
        f"{_n(report.constants_narrowed, 'constant')} ({_n(report.count('sentinel'), 'sentinel')} mapped to "
        f"32-bit extremes, {_n(report.count('float-inexact'), 'inexact float')})"
    )
    worst = max((o.max_rel_error for o in outputs if not o.exact), default=0.0)
    print(f"  outputs: {len(outputs)} compared, worst relative error {worst:.2e}")
    if failure:
        print(f"  {failure}")
    print(f"  {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
