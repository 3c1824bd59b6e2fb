"""The ``no64`` command line.

``no64 check FILE...``
    List every 64-bit value in each file, and end each file's output with
    its count line: how many, by element type and by op (the ten commonest
    ops by name).  Over several files a last ``total:`` line sums them up.
    ``--summary`` prints only the count lines and the total; ``--json``
    prints one document, a list with an entry per file whose ``counts`` are
    ``{"total", "by_type", "by_op"}`` (``"by_kind"`` instead of
    ``"by_type"`` with ``--target``; null for a file not read).  Exit 0 when
    all are clean, 1 when any 64-bit value remains, 2 on bad input.
``no64 convert IN -o OUT``
    Rewrite IN without 64-bit types, check the result, write it to OUT and
    print the demotion report.  In the text report, events alike in kind,
    op, detail and source location are one line with ``(xN)``; ``--json``
    keeps every event as an entry of its own.  Exit 0 on success, 2 when the
    module cannot be converted (bad input, a refused op, an out-of-range
    constant) or OUT cannot be written.

``no64 audit [OPTIONS] SCRIPT [ARGS...]`` / ``no64 audit [OPTIONS] -m MODULE [ARGS...]``
    Run a Python program as ``NO64_PLATFORMS=P python ...`` would and report
    what the compile hook did, cause by cause, with the user's lines (see
    :mod:`no64.jax.audit`; ``--as-is``: without the hook).  ``--numerics``
    also measures the program's jitted calls (:mod:`no64.jax.audit.measure`).
    Exit with the program's status when it is not 0; else 1 when a cause
    meets ``--fail-on`` (default ``refused``; ``numerics``: also a measured
    line or a jitted function that could not be measured), 0 otherwise; 2 on bad usage.

``check`` also takes directories: XLA (``--xla_dump_to``) and JAX
(``jax_dump_ir_to``) dump folders are walked for modules.  XLA writes each
module in several forms, each named after its number ``module_NNNN``:
StableHLO (``module_NNNN.NAME/module.mlir``), HLO text
(``module_NNNN.NAME.before_optimizations.txt``), forms after its passes: it
is checked once, from the StableHLO, and from another form only when the
StableHLO cannot be read.  The files of modules no form of which can be
read are counted on one line, by reason (``-v`` names each).

Errors no64 expects (bad input, bad usage) are printed as one
``no64: error: ...`` line and exit 2.  Anything else is a bug in no64, an
internal error: one ``no64: internal error: TYPE: MESSAGE -- please report
this ...`` line, also exit 2; a traceback before it only when the
environment variable ``NO64_DEBUG`` is ``1``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, cast

from . import __version__, io as no64io
from .errors import No64Error, OutputError
from .kinds import FailOn, FloatPolicy, IntegerPolicy, RangePolicy
from .options import Options, variable
from .report import counted, grouped_lines
from .transforms.pipeline import Pipeline
from .transforms.scan import find_64bit

__all__ = ["main"]

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_ERROR = 2  # bad input or usage, and an internal error

_DEBUG_ENV = variable("NO64_DEBUG").name
# Widest a table cell may make its column; longer cells overflow.
_MAX_COLUMN = 48
_ELEMENT = re.compile(r"complex<f64>|[su]?i64|f64")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error said in one line (the usage is on ``--help``)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        print(f"no64: error: {command}{message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="no64",
        description="Find and remove every 64-bit type (f64, i64, ui64, complex<f64>) "
        "in StableHLO and HLO programs.",
    )
    parser.add_argument("--version", action="version", version=f"no64 {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_check(sub)
    _add_convert(sub)
    _add_audit(sub)
    return parser


def _add_input_format(parser: argparse.ArgumentParser) -> None:
    """``--format F``: the input format, detected from content when omitted."""
    parser.add_argument(
        "--format",
        choices=no64io.FORMATS,
        metavar="F",
        help=f"input format ({', '.join(no64io.FORMATS)}); detected from content when omitted",
    )


def _add_check(sub: "argparse._SubParsersAction[_Parser]") -> None:
    """``no64 check``: list the 64-bit values in modules."""
    check = sub.add_parser(
        "check",
        help="list the 64-bit values in modules",
        description="List every 64-bit value in each FILE; each file's output ends with its "
        "count line (by element type and by op), and over several files a total line follows. "
        "Exit 0 when all files are clean, 1 when any 64-bit value remains, 2 on bad input.",
    )
    check.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="module files, or dump directories (XLA --xla_dump_to, JAX jax_dump_ir_to) "
        "whose *.mlir, *.mlirbc and *.before_optimizations.txt files are checked; a module XLA "
        "wrote both as NAME/module.mlir and as NAME.before_optimizations.txt is checked once, "
        "from module.mlir",
    )
    shown = check.add_mutually_exclusive_group()
    shown.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document: per file its findings and their counts",
    )
    shown.add_argument(
        "--summary",
        action="store_true",
        help="print only each file's count line (by element type and by op) and the total",
    )
    check.add_argument(
        "--target",
        metavar="T",
        help="list instead what target T would refuse or compute inexactly, per op and line: "
        "64-bit types it lacks, op forms it does not compile, integer ops on a narrower datapath "
        "not proven exact (" + ", ".join(sorted(_target_names())) + ")",
    )
    _add_input_format(check)
    check.add_argument(
        "-v", "--verbose", action="store_true",
        help="in a dump directory, name each file that could not be read, with why (by default one "
        "line counts them by reason)",
    )
    _add_max_input_size(check)


def _add_convert(sub: "argparse._SubParsersAction[_Parser]") -> None:
    """``no64 convert``: rewrite a module without 64-bit types."""
    convert = sub.add_parser(
        "convert",
        help="rewrite a module without 64-bit types",
        description="Rewrite IN without 64-bit types, check the result, write it to OUT "
        "and print the demotion report (alike lines once, with (xN)). IN is never "
        "overwritten unless --in-place is given; an existing OUT only with --force.",
    )
    convert.add_argument("input", metavar="IN")
    convert.add_argument("-o", "--output", metavar="OUT", help="file to write")
    _add_input_format(convert)
    convert.add_argument(
        "--output-format",
        choices=no64io.FORMATS,
        metavar="F",
        help="output format; from OUT's extension, else the input format",
    )
    _add_policies(convert)
    convert.add_argument(
        "--target",
        metavar="T",
        help="then make the module exact on target T where no64 can (an integer dot the target "
        "computes inexactly or refuses becomes limb dots exact in f32) and check it against T: "
        "what T would still refuse or compute inexactly is a warning, and an error that writes "
        "nothing under --policy strict or exact (" + ", ".join(sorted(_target_names())) + ")",
    )
    _add_max_input_size(convert)
    convert.add_argument("--force", action="store_true", help="overwrite an existing OUT")
    convert.add_argument(
        "--in-place", action="store_true", help="write the result back to IN"
    )
    convert.add_argument(
        "--json", action="store_true", help="print the report as JSON (every event an entry of its own)"
    )


def _add_policies(convert: argparse.ArgumentParser) -> None:
    """``no64 convert``'s options of the conversion (:func:`convert_options`)."""
    convert.add_argument(
        "--integer-policy",
        choices=IntegerPolicy.values(),
        default=IntegerPolicy.ERROR.value,
        help="what to do with a 64-bit integer constant outside the 32-bit range "
        "(default: error)",
    )
    convert.add_argument(
        "--policy",
        choices=RangePolicy.values(),
        default=RangePolicy.DEFAULT.value,
        help="which range-analysis verdicts are refused: default refuses integers proven "
        "to overflow 32 bits and reports unproven ones; strict refuses both; permissive "
        "reports both; exact computes every integer not proven to fit exactly in 32-bit "
        "word pairs (an output that needs 64 bits comes back as [..., 2] words)",
    )
    convert.add_argument(
        "--float-policy",
        choices=FloatPolicy.values(),
        default="f32",
        help="how float64 values are computed: f32 (default) narrows them; pairs carries each "
        "as a normalized pair of f32 (hi, lo), about 48 bits of significand (a float64 input or "
        "output becomes [..., 2] float32)",
    )
    convert.add_argument(
        "--range",
        dest="ranges",
        action="append",
        default=[],
        metavar="ARG=LO:HI",
        type=_parse_range,
        help="declare the inclusive range of an integer input of the entry function, by "
        "position or name (e.g. --range tokens=0:50256 --range 2=0:2147483647); repeatable",
    )


def _add_audit(sub: "argparse._SubParsersAction[_Parser]") -> None:
    """``no64 audit``: run a Python program under the compile hook."""
    audit = sub.add_parser(
        "audit",
        help="run a Python program under the compile hook and report what no64 does",
        usage="no64 audit [OPTIONS] SCRIPT [ARGS...] | no64 audit [OPTIONS] -m MODULE [ARGS...]",
        description="Run SCRIPT (or -m MODULE) in this process as NO64_PLATFORMS=P would "
        "run it (NO64_MODE, NO64_INTEGER_POLICY and NO64_POLICY apply as they do there) and "
        "report what the compile hook did: modules passed through, rewritten (and how) or "
        "refused, host values "
        "narrowed, and their causes by the lines of your code (where x64 is turned on, "
        "random draws, sentinels, explicit 64-bit dtypes). --as-is runs the program "
        "without the hook instead and explains the modules its own x64 setting produces. "
        "The program's output and exit status are kept. The report goes to stderr, or to "
        "-o FILE. Exit: the program's status when it is not 0; else 1 when a cause meets "
        "--fail-on; else 0; 2 on bad usage.",
    )
    audit.add_argument("target", nargs="?", metavar="SCRIPT", help="the Python script to run")
    audit.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    audit.add_argument(
        "--platform",
        metavar="P",
        help="the platform(s) no64 protects, as in NO64_PLATFORMS (default: $NO64_PLATFORMS, "
        "else the backend the program runs on here, which stands in for P); with --as-is: "
        "only modules compiled for platform P",
    )
    audit.add_argument(
        "--target",
        dest="profile",
        metavar="T",
        help="the device profile (no64.targets: neuron, mtl, ...) modules are made exact on and "
        "checked against, as NO64_TARGET=T does (default: $NO64_TARGET, else the profile of "
        "the --platform named, as neuron's); "
        "what it refuses or may compute inexactly, and what no64 made exact there, are causes "
        "per line (not with --as-is)",
    )
    audit.add_argument(
        "--as-is",
        action="store_true",
        help="run the program without the hook, with its own x64 setting, and explain the "
        "modules it compiles as no64 would handle them",
    )
    fmt = audit.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="write the report as JSON")
    fmt.add_argument("--sarif", action="store_true", help="write the report as SARIF 2.1.0")
    audit.add_argument(
        "-v", "--verbose", action="store_true",
        help="list every cause, the values per primitive, line and handling, and the modules",
    )
    audit.add_argument(
        "--fail-on",
        choices=FailOn.values(),
        default=FailOn.REFUSED.value,
        help="exit 1 on: refused (default): a refused module (a run under the hook fails); "
        "unproven: also integers that may not fit in 32 bits and overflows; lossy: also "
        "precision-reduced values; any: any 64-bit value or narrowed host value; numerics (with "
        "--numerics): a refused module, any line measured beyond the tolerance, or a jitted "
        "function that could not be measured",
    )
    audit.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    _add_audit_numerics(audit)


def _add_audit_numerics(audit: argparse.ArgumentParser) -> None:
    """``no64 audit --numerics`` and the options that scale it."""
    audit.add_argument(
        "--numerics",
        action="store_true",
        help="also measure the program's jitted calls on their own arguments: the x64 program "
        "against the 32-bit one, equation by equation (no64.numerics), and list per line of "
        "your code where float32 changes a float64 result beyond --numerics-tol, with the "
        "outputs' error under float_policy='pairs'",
    )
    audit.add_argument(
        "--numerics-calls",
        metavar="N",
        type=_non_negative,
        default=None,
        help="measure at most N calls of each jitted function (default 3; 0: no limit)",
    )
    audit.add_argument(
        "--numerics-every",
        metavar="K",
        type=_positive,
        default=None,
        help="measure every Kth call of each jitted function: the 1st, K+1st, ... (default 1)",
    )
    audit.add_argument(
        "--numerics-tol",
        metavar="TOL",
        type=_tolerance,
        default=None,
        help="the relative error a line is listed beyond (default 1e-3)",
    )


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 or more")
    return n


def _positive(text: str) -> int:
    n = _non_negative(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 or more")
    return n


def _tolerance(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number such as 1e-3") from None
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive finite number")
    return x


def _add_max_input_size(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-input-size",
        metavar="SIZE",
        type=_parse_size,
        default=no64io.MAX_INPUT_SIZE,
        help="refuse input files larger than SIZE bytes (suffixes K, M, G, T: powers of "
        "1024; 0: no limit; default: 1G)",
    )


_SIZE = re.compile(r"(\d+)\s*(?:([kmgt])i?)?b?", re.IGNORECASE)


def _parse_size(text: str) -> int | None:
    """``"512M"`` -> 536870912; ``"0"`` -> None (no limit)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size such as 800M or 2G")
    n = int(m.group(1)) << (10 * " kmgt".index((m.group(2) or " ").lower()))
    return n or None


# Options of ``audit`` that take a value; everything from SCRIPT (or after
# -m MODULE) on belongs to the program.
_AUDIT_VALUE_OPTIONS = frozenset({"--platform", "--target", "--fail-on", "-o", "--output", "--numerics-calls",
                                  "--numerics-every", "--numerics-tol"})


def _split_audit_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split ``audit ...`` into no64's part and the program's arguments."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m" or (arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--")):
            end = i + (2 if arg == "-m" else 1)
            return argv[:end], argv[end:]
        if arg == "--":
            return argv[:i] + argv[i + 1 : i + 2], argv[i + 2 :]
        if not arg.startswith("-") or arg == "-":
            return argv[: i + 1], argv[i + 1 :]
        if arg in _AUDIT_VALUE_OPTIONS:
            i += 2
        else:
            i += 1
    return argv, []


def _parse_range(text: str) -> tuple[int | str, tuple[int, int]]:
    """``ARG=LO:HI`` -> (ARG as int position or name, (LO, HI))."""
    name, sep, bounds = text.rpartition("=")
    lo_text, colon, hi_text = bounds.partition(":")
    try:
        if not sep or not name or not colon:
            raise ValueError
        lo, hi = int(lo_text, 0), int(hi_text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected ARG=LO:HI, e.g. tokens=0:50256 or 0=0:1023"
        ) from None
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: LO is greater than HI")
    key: int | str = int(name) if name.isdigit() else name
    return key, (lo, hi)


# --------------------------------------------------------------------------- check


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart; the last column is not padded."""
    widths = [
        min(_MAX_COLUMN, max(len(row[i]) for row in rows)) for i in range(len(rows[0]) - 1)
    ]
    lines = []
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return lines


# The ops a count line names one by one; the rest are summed up.
_MAX_OPS = 10


def _element(type_text: str) -> str:
    """The 64-bit element type a value's type holds (``"f64"``, ``"i64"`` ...)."""
    m = _ELEMENT.search(type_text)
    return m.group(0) if m else "other"


def _ranked(counter: Counter[str]) -> dict[str, int]:
    """Counts, most first (ties by name)."""
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _counts(findings: Sequence[Any], target: str | None) -> dict[str, Any]:
    """The ``counts`` of a file's JSON entry: how many findings, by element
    type (by kind with ``--target``) and by op, most first."""
    by = "by_kind" if target is not None else "by_type"
    keys = (f.kind for f in findings) if target is not None else (_element(f.type) for f in findings)
    return {
        "total": len(findings),
        by: _ranked(Counter(keys)),
        "by_op": _ranked(Counter(f.op for f in findings)),
    }


def _listed(counts: dict[str, int], limit: int | None = None) -> str:
    """``"a 3, b 1"``; past ``limit`` entries the rest as ``"N other ops M"``."""
    items = list(counts.items())
    shown = items if limit is None or len(items) <= limit else items[:limit]
    parts = [f"{k} {n}" for k, n in shown]
    rest = items[len(shown):]
    if rest:
        parts.append(f"{len(rest)} other ops {sum(n for _, n in rest)}")
    return ", ".join(parts)


def _by_kind(counts: dict[str, int]) -> str:
    """``"2 inexact, 1 refused"``: a target's findings by kind, by name."""
    return ", ".join(f"{c} {k}" for k, c in sorted(counts.items()))


def _breakdown(by_type: dict[str, int], by_op: dict[str, int]) -> str:
    """``"by type: ...; by op: ..."``, the ops past :data:`_MAX_OPS` summed up."""
    return f"by type: {_listed(by_type)}; by op: {_listed(by_op, _MAX_OPS)}"


def _values(n: int) -> str:
    return counted(n, "64-bit value")


def _count_line(name: str, counts: dict[str, Any], target: str | None) -> str:
    """A file's last line: how many findings, by element type and by op."""
    n = counts["total"]
    if target is not None:
        if not n:
            return f"{name}: nothing target {target} refuses or computes inexactly"
        return f"{name}: {counted(n, 'finding')} for target {target} ({_by_kind(counts['by_kind'])})"
    if not n:
        return f"{name}: clean, no 64-bit values"
    return f"{name}: {_values(n)} -- {_breakdown(counts['by_type'], counts['by_op'])}"


def _total_line(
    counts: Sequence[dict[str, Any]], skipped: int, failed: int, target: str | None
) -> str:
    """The last line of ``check`` over several files: the counts summed."""
    n = sum(c["total"] for c in counts)
    by: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    for c in counts:
        by.update(c["by_kind" if target is not None else "by_type"])
        ops.update(c["by_op"])
    files = len(counts)
    hit = sum(1 for c in counts if c["total"])
    where = f"in {hit} of {counted(files, 'file')}"
    left = [f"{skipped} skipped"] * bool(skipped) + [f"{failed} not read"] * bool(failed)
    if left:
        where += f" ({', '.join(left)})"
    if target is not None:
        return f"total: {counted(n, 'finding')} for target {target} {where}" + (f" ({_by_kind(by)})" if n else "")
    if not n:
        return f"total: no 64-bit values {where}"
    return f"total: {_values(n)} {where} -- {_breakdown(_ranked(by), _ranked(ops))}"


_DUMP_SUFFIXES = (".mlir", ".mlirbc", ".before_optimizations.txt")
# XLA (--xla_dump_to) writes each module in several forms, each file named
# after the module's number: as HLO text,
# ``module_NNNN.NAME.before_optimizations.txt``, as the StableHLO it was
# given, ``module_NNNN.NAME/module.mlir`` (other releases: files
# ``module_NNNN.NAME....mlir`` beside it), and after its passes.
_XLA_HLO = ".before_optimizations.txt"
_XLA_MLIR = ("module.mlir", "module.mlirbc")
_XLA_MODULE = re.compile(r"^(module_\d+)\.")


def _dump_key(directory: str, path: str) -> str:
    """What names the module a dump file holds: XLA's module number for
    every form XLA wrote of it (the file's name, or a folder's above it,
    starts ``module_NNNN.``), else the file itself."""
    parts = os.path.relpath(path, directory).split(os.sep)
    for i, part in enumerate(parts):
        found = _XLA_MODULE.match(part)
        if found:
            return os.path.join(directory, *parts[:i], found.group(1))
    return path


def _dump_rank(path: str) -> tuple[int, str]:
    """The order a module's files are tried in: XLA's input StableHLO
    (``module.mlir``), StableHLO before optimisation, other StableHLO, HLO
    text."""
    base = os.path.basename(path)
    if base in _XLA_MLIR:
        return 0, path
    if base.endswith(_XLA_HLO):
        return 3, path
    return (1 if "before_optimizations" in base else 2), path


def _dump_files(directory: str) -> list[list[str]]:
    """The modules of a dump folder, each as its files, sorted: StableHLO
    (``*.mlir``, ``*.mlirbc``, from ``jax_dump_ir_to`` and XLA) and HLO text
    before optimisation (XLA).

    The files XLA wrote of one module (named by its number) are one module,
    listed once: its StableHLO ``module_NNNN.NAME/module.mlir`` first (the
    program as JAX gave it to XLA, with JAX's source locations), then other
    StableHLO forms, then the HLO text
    ``module_NNNN.NAME.before_optimizations.txt``; each is read only when
    the ones before it cannot be.
    """
    found = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(_DUMP_SUFFIXES)]
    modules: dict[str, list[str]] = {}
    for path in found:
        modules.setdefault(_dump_key(directory, path), []).append(path)
    return [sorted(paths, key=_dump_rank) for paths in modules.values()]


def _reason(name: str, message: str) -> str:
    """Why a file could not be read, without where in it: alike reasons of
    several files are one."""
    text = message.removeprefix(f"{name}:").strip()
    return re.sub(r"^\d+:\d+:\s*", "", text)


def _skipped_line(skipped: list[tuple[str, str]], verbose: bool) -> str:
    """One line for the dump files no module could be read from, with their
    reasons counted (the three commonest, then how many others)."""
    reasons = Counter(_reason(name, why) for name, why in skipped)
    said = [f"{n} x {why if len(why) <= 100 else why[:97] + '...'}" for why, n in reasons.most_common(3)]
    if len(reasons) > 3:
        said.append(f"{sum(n for _, n in reasons.most_common()[3:])} other")
    more = "" if verbose else "; -v lists each"
    return f"no64: note: skipped {counted(len(skipped), 'file')} no64 cannot read ({'; '.join(said)}){more}"


def _load(name: str, args: argparse.Namespace) -> Any:
    with _too_deep(name):
        return no64io.load(name, format=args.format, max_size=args.max_input_size)


@contextmanager
def _too_deep(name: str) -> Iterator[None]:
    """Turn running out of Python's recursion depth into bad input.

    The text scan and the region check of :func:`no64.io.load` bound the
    nesting of most input; types nested deep inside bytecode are found only
    when they are walked.
    """
    try:
        yield
    except RecursionError:
        raise no64io.InputError(
            f"{name}: nested too deeply (types or regions more than "
            f"{no64io.MAX_NESTING} levels deep); no64 reads at most {no64io.MAX_NESTING} levels"
        ) from None


def _target_names() -> list[str]:
    from .targets import profiles

    return list(profiles())


def _findings(module: Any, args: argparse.Namespace) -> list[Any]:
    """What ``no64 check`` lists for a module: its 64-bit values, or with
    ``--target`` what that target refuses or computes inexactly."""
    if args.target is None:
        return find_64bit(module)
    from .targets import target
    from .targets.legality import check_target

    return check_target(module, target(args.target))


def _check(args: argparse.Namespace) -> int:
    if args.target is not None and args.target not in _target_names():
        raise _UsageError(f"check: unknown target {args.target!r}; known: {', '.join(sorted(_target_names()))}")
    results: list[dict[str, Any]] = []
    status = EXIT_OK
    counted: list[dict[str, Any]] = []
    skipped = failed = 0
    #: The dump files of the modules that could not be read: (file, why).
    unread: list[tuple[str, str]] = []
    # Each entry: a module's files (the first that loads is checked) and
    # whether they come from a dump folder (where a file no64 cannot read is
    # skipped, not bad input).
    entries: list[tuple[list[str], bool]] = []
    for name in args.files:
        if os.path.isdir(name):
            modules = _dump_files(name)
            if not modules:
                raise no64io.InputError(
                    f"{name}: no module files (*.mlir, *.mlirbc, *.before_optimizations.txt) "
                    "in this directory"
                )
            entries += [(files, True) for files in modules]
        else:
            entries.append(([name], False))
    for files, from_dir in entries:
        if from_dir:
            tried: list[tuple[str, str]] = []
            for name in files:
                try:
                    module = _load(name, args)
                except No64Error as exc:
                    tried.append((name, (str(exc).splitlines() or [type(exc).__name__])[0]))
                    continue
                break
            else:
                skipped += 1
                unread += tried
                for name, first in tried:
                    if args.verbose:
                        print(f"no64: note: skipped {name}: {first}", file=sys.stderr)
                    results.append({"file": name, "clean": None, "findings": [], "skipped": first,
                                    "counts": None})
                continue
            with _too_deep(name):
                findings = _findings(module, args)
        else:
            (name,) = files
            try:
                with _too_deep(name):
                    findings = _findings(_load(name, args), args)
            except No64Error as exc:
                _error(exc)
                failed += 1
                results.append({"file": name, "clean": None, "findings": [], "error": str(exc),
                                "counts": None})
                continue
        if findings:
            status = EXIT_FOUND
        counted.append(_check_output(args, name, findings, results))
    if unread:
        print(_skipped_line(unread, args.verbose), file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
    elif len(entries) > 1:
        print(_total_line(counted, skipped, failed, args.target))
    return EXIT_ERROR if failed else status


def _check_output(
    args: argparse.Namespace, name: str, findings: Sequence[Any], results: list[dict[str, Any]]
) -> dict[str, Any]:
    """Print (or record, with ``--json``) one file's findings; return their counts."""
    counts = _counts(findings, args.target)
    results.append(
        {"file": name, "clean": not findings, "findings": [f.to_dict() for f in findings],
         "counts": counts}
    )
    if args.json:
        return counts
    if findings and not args.summary:
        print(f"{name}:")
        if args.target is not None:
            for f in findings:
                code = f" [{f.code}]" if f.code else ""
                print(f"  {f.location}: {f.op}: {f.kind}{code}: {f.detail}")
        else:
            rows = [("op", "type", "role", "location")]
            rows += [(f.op, f.type, f.role, str(f.location)) for f in findings]
            for line in _table(rows):
                print(f"  {line}")
    print(_count_line(name, counts, args.target))
    return counts


# --------------------------------------------------------------------------- audit


def _audit(args: argparse.Namespace, program_args: list[str]) -> int:
    if (args.target is None) == (args.module is None):
        raise _UsageError("audit: give a SCRIPT or -m MODULE (exactly one)")
    if args.target is not None and not os.path.isfile(args.target):
        raise _UsageError(f"audit: {args.target}: no such script")
    if args.module is not None:
        missing = _missing_module(args.module)
        if missing:
            raise _UsageError(f"audit: -m {args.module}: {missing}")
    sampling = [name for name, value in (("--numerics-calls", args.numerics_calls),
                                         ("--numerics-every", args.numerics_every),
                                         ("--numerics-tol", args.numerics_tol)) if value is not None]
    if not args.numerics and (sampling or args.fail_on == FailOn.NUMERICS.value):
        given = sampling[0] if sampling else "--fail-on numerics"
        raise _UsageError(f"audit: {given} needs --numerics")
    if args.profile is not None:
        if args.as_is:
            raise _UsageError("audit: --target checks modules under the hook's view, not --as-is")
        from .targets import target as _profile

        try:
            _profile(args.profile)
        except ValueError as exc:
            raise _UsageError(f"audit: {exc}") from None
    out = None
    if args.output:
        try:
            out = open(args.output, "w", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{args.output}: cannot write: {exc.strerror}") from None
    from .jax.audit import run_program, write_report  # imports jax
    from .jax.audit.measure import Measurer

    measurer = None
    if args.numerics:
        measurer = Measurer(calls=3 if args.numerics_calls is None else args.numerics_calls,
                            every=args.numerics_every or 1,
                            tol=1e-3 if args.numerics_tol is None else args.numerics_tol)
    try:
        report = run_program(
            args.module or args.target,
            program_args,
            module=args.module is not None,
            platform=args.platform,
            progress=sys.stderr if sys.stderr.isatty() else None,
            as_is=args.as_is,
            numerics=measurer,
            profile=args.profile,
        )
        fmt = "json" if args.json else "sarif" if args.sarif else "text"
        stream = out if out is not None else sys.stderr
        color = out is None and fmt == "text" and sys.stderr.isatty() and not os.environ.get("NO_COLOR")
        write_report(report, fmt, stream, color, verbose=args.verbose)
    finally:
        if out is not None:
            out.close()
    if report.exit_status:
        return report.exit_status
    return EXIT_FOUND if report.fails(args.fail_on) else EXIT_OK


def _missing_module(name: str) -> str | None:
    """Why ``python -m name`` would not find a module to run, or None.

    Finding a submodule imports its parent packages, as ``python -m`` does;
    an error raised by their code is left for the run to report.
    """
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            if importlib.util.find_spec(f"{name}.__main__") is None:
                return "is a package without a __main__ module, so it cannot be run"
    except ModuleNotFoundError as exc:
        if not (exc.name and (name == exc.name or name.startswith(exc.name + "."))):
            return None  # the program imports something missing: its own error
        spec = None
    except ValueError:  # "" or a relative name
        return "not a module name"
    except Exception:  # noqa: BLE001 - the program's own error, reported when it runs
        return None
    finally:
        sys.path.remove(os.getcwd())
    return "no such module" if spec is None else None


# --------------------------------------------------------------------------- convert


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _convert(args: argparse.Namespace) -> int:
    source: str = args.input
    dest: str | None = args.output
    if args.in_place:
        if dest is not None and not _same_file(source, dest):
            raise _UsageError("--in-place writes back to IN; do not give a different -o OUT")
        dest = source
    elif dest is None:
        raise _UsageError("give -o OUT (or --in-place to rewrite IN)")
    elif _same_file(source, dest):
        raise OutputError(
            f"{dest}: refusing to overwrite the input file; write to another file, "
            "or pass --in-place"
        )
    overwrite = args.force or args.in_place
    options = convert_options(args)
    # Refuse an unwritable OUT before the work, not after it.
    try:
        no64io.destination_kind(dest, overwrite)
    except OutputError as exc:
        if not overwrite and "file exists" in str(exc):
            raise OutputError(f"{dest}: file exists; pass --force to overwrite it") from None
        raise

    with _too_deep(source):
        module, in_format = no64io.load_with_format(
            source, format=args.format, max_size=args.max_input_size
        )
        converted = Pipeline(options.replace(check=True)).run(module)
    report, target_check = converted.report, converted.target
    if target_check is not None:
        for line in grouped_lines(target_check.explain(f) for f in target_check.findings):
            print(f"no64: warning: {line}", file=sys.stderr)
    if args.output_format:
        out_format = args.output_format
    elif args.in_place:
        out_format = in_format
    else:
        out_format = no64io.format_from_extension(dest) or in_format
    no64io.save(module, dest, format=out_format, overwrite=overwrite)
    if args.json:
        doc = report.to_dict()
        if target_check is not None:
            doc["target"] = {**target_check.legalized.to_dict(),
                             "findings": [f.to_dict() for f in target_check.findings]}
        print(json.dumps(doc, indent=2))
    else:
        print(report.summary())
        if target_check is not None:
            print(target_check.legalized.summary())
            for line in grouped_lines(str(r) for r in target_check.legalized.rewritten):
                print(f"  {line}")
        print(f"wrote {dest} ({out_format})")
    return EXIT_OK


def convert_options(args: argparse.Namespace) -> Options:
    """The :class:`~no64.options.Options` that ``no64 convert``'s flags ask
    for (``--policy``, ``--integer-policy``, ``--float-policy``, ``--range``,
    ``--target``); a bad flag is a usage error."""
    if args.target is not None and args.target not in _target_names():
        raise _UsageError(f"convert: unknown target {args.target!r}; known: {', '.join(sorted(_target_names()))}")
    ranges: dict[int | str, tuple[int, int]] = {}
    for key, bounds in args.ranges:
        if key in ranges:
            raise _UsageError(f"--range {key}: given twice; give each argument one range")
        ranges[key] = bounds
    return Options(policy=args.policy, integer_policy=args.integer_policy, float_policy=args.float_policy,
                   target=args.target, input_ranges=ranges)


# --------------------------------------------------------------------------- main


class _UsageError(Exception):
    """A combination of options argparse cannot express."""


def _error(exc: BaseException) -> None:
    lines = str(exc).splitlines() or [type(exc).__name__]
    print(f"no64: error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(line, file=sys.stderr)


def _internal_error(exc: BaseException) -> None:
    """One line for an exception no64 did not expect: a bug in no64."""
    message = " ".join(str(exc).split()) or "(no message)"
    print(
        f"no64: internal error: {type(exc).__name__}: {message} "
        "-- please report this as a no64 bug (with the input file)",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``no64`` command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    # File names that are not UTF-8 reach Python as surrogate escapes: print
    # them as the bytes they were, as ls does, instead of failing.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream.errors == "strict":
                # a text file (one without reconfigure: AttributeError below)
                cast(io.TextIOWrapper, stream).reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError, OSError):
            pass
    try:
        return _run(args)
    except (_UsageError, No64Error) as exc:
        _error(exc)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (``no64 check ... | head``): stop quietly, and
        # keep Python from complaining when it flushes stdout at exit.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("no64: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        if os.environ.get(_DEBUG_ENV) == "1":
            traceback.print_exc()
        _internal_error(exc)
        return EXIT_ERROR


def _run(argv: list[str]) -> int:
    """Parse ``argv`` and run its command."""
    parser = _build_parser()
    program_args: list[str] = []
    if argv and argv[0] == "audit":
        argv, program_args = _split_audit_argv(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    if args.command == "check":
        return _check(args)
    if args.command == "audit":
        return _audit(args, program_args)
    return _convert(args)
