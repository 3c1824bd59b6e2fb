"""Audit a real program: find and explain every 64-bit value it sends to the compiler.

:class:`Observer` wraps ``jax._src.compiler.compile_or_get_cached`` (the one
function every JAX compilation goes through) and records the text, with
debug locations, of each module JAX compiles.  It never changes what is
compiled.  :func:`analyze` then works on private copies of those modules,
parsed into no64's own MLIR context: :func:`no64.find_64bit` lists the
64-bit values and :func:`no64.demote` (``policy="permissive"``, on a second
copy) tells what no64 would do with each.  Findings are grouped by cause --
the JAX primitive, the user's source line, the handling -- with a hint.

Handlings, from harmless to blocking:

``exact``
    narrowed to 32 bits with the same value (integers proven in range, f64
    constants that f32 holds exactly).
``sentinel``
    a 64-bit extreme (``INT64_MAX``, ...) mapped to the 32-bit extreme.
``rewritten``
    an op replaced by an exact 32-bit equivalent (rbg / threefry random
    number state, bit counts, ...).
``float32``
    an f64 value computed in f32: the ordinary effect of running an x64
    program without x64.
``rounded``
    f64 constant(s) rounded to the nearest f32.
``precision-reduced``
    an op replaced by a rule that computes the same thing with fewer bits
    (f64 random floats).
``unproven``
    an integer that is exact only if it fits in 32 bits, which no64 cannot
    prove.
``overflow``
    a value that never fits (an integer beyond 32 bits, an f64 constant
    beyond f32's range).
``refused``
    no64 refuses the module because of this value (the message says why).
``blocked``
    a value in a module no64 refuses because of another value.

``--fail-on`` levels (see :data:`FAIL_ON`): ``any`` fails on every 64-bit
value, ``lossy`` (the default) on ``precision-reduced``, ``unproven``,
``overflow``, ``refused`` and ``blocked``, ``refused`` on ``refused`` and
``blocked`` only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import runpy
import sys
import sysconfig
import threading
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from .. import __version__
from ..core._mlir import ir, make_context
from ..core.locations import SourceLocation
from ..core.demote import demote
from ..errors import No64Error
from ..rules import spec_of
from ..core.scan import Finding, find_64bit
from ..kinds import EventKind, FailOn, Handling, RangePolicy

__all__ = [
    "AUDIT_JSON_SCHEMA",
    "FAIL_ON",
    "HANDLINGS",
    "AuditReport",
    "Group",
    "ModuleAudit",
    "Observer",
    "analyze",
    "audit",
    "run_program",
]

#: Every handling, from harmless to blocking (see the module docstring and
#: :class:`no64.kinds.Handling`).
HANDLINGS: tuple[Handling, ...] = tuple(Handling)

#: Handlings each ``--fail-on`` level fails on (see :class:`no64.kinds.FailOn`).
FAIL_ON: dict[str, frozenset[Handling]] = {level.value: level.handlings for level in FailOn}

#: Handlings the pytest plugin fails a test on: no64 cannot remove the value exactly.
NOT_REMOVABLE = frozenset(h for h in Handling if not h.removable)

_DESCRIPTION = {
    Handling.EXACT: "narrowed to 32 bits, value unchanged",
    Handling.SENTINEL: "64-bit extreme mapped to the 32-bit extreme",
    Handling.REWRITTEN: "op rewritten exactly in 32 bits",
    Handling.EMULATED: "64-bit integer computed exactly in 32-bit word pairs",
    Handling.FLOAT32: "f64 computed in f32",
    Handling.ROUNDED: "f64 constant rounded to f32",
    Handling.PRECISION_REDUCED: "op replaced by a lower-precision 32-bit equivalent",
    Handling.UNPROVEN: "integer may not fit in 32 bits",
    Handling.OVERFLOW: "value never fits in 32 bits",
    Handling.REFUSED: "no64 refuses the module",
    Handling.BLOCKED: "module refused elsewhere",
}

# Per-value verdicts come from the report's narrowing records; these event
# kinds only repeat them.
_PER_VALUE_EVENTS = frozenset({EventKind.UNPROVEN, EventKind.OVERFLOW})

_FRAME = re.compile(r'"((?:[^"\\]|\\.)+)":(\d+):(\d+)')
_ELEMENT = re.compile(r"complex<f64>|[su]?i64|ui64|f64")
_LIB_DIRS = tuple(
    {
        os.path.realpath(p) + os.sep
        for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"))
        if p
    }
    | {os.path.realpath(os.path.dirname(__file__)) + os.sep}
)


_OWN_DIR = os.path.realpath(os.path.dirname(__file__)) + os.sep


def _is_library(path: str) -> bool:
    """Installed packages, the standard library and no64 itself; not ``<string>``/``<stdin>``."""
    if path.startswith("<"):
        return path.startswith("<frozen")
    if "site-packages" in path or "dist-packages" in path:
        return True
    return os.path.realpath(path).startswith(_LIB_DIRS)


# --------------------------------------------------------------------------- observing


@dataclasses.dataclass
class Compiled:
    """One module JAX handed to the compiler: its name, platform and text."""

    name: str
    platform: str
    text: str


class Observer:
    """Record every module JAX compiles while active (a context manager).

    Installs a wrapper around ``jax._src.compiler.compile_or_get_cached``
    that prints the module (with debug locations) and calls the function it
    replaced with the same arguments.  Wrappers installed by others stay in
    the chain; on exit the original is put back only if no one wrapped it
    since, otherwise this wrapper just stops recording.  ``platform``
    restricts recording to one backend platform (``"cpu"``, ``"gpu"``, ...).
    """

    def __init__(
        self, platform: str | None = None, progress: Callable[[int], None] | None = None
    ) -> None:
        self.platform = platform
        self.progress = progress  # called with the count after each recorded module
        self.modules: list[Compiled] = []
        self._active = False
        self._previous: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def _wrapper(self, backend: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
        if self._active:
            try:
                self._record(backend, computation)
            except Exception:  # noqa: BLE001 - observing must never break the program
                pass
        assert self._previous is not None
        return self._previous(backend, computation, *args, **kwargs)

    def _record(self, backend: Any, computation: Any) -> None:
        platform = str(getattr(backend, "platform", "unknown"))
        if self.platform is not None and platform != self.platform:
            return
        op = computation.operation
        name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else "module"
        text = op.get_asm(enable_debug_info=True)
        with self._lock:
            self.modules.append(Compiled(name, platform, text))
            count = len(self.modules)
        if self.progress is not None:
            self.progress(count)

    def __enter__(self) -> "Observer":
        from jax._src import compiler

        self._previous = compiler.compile_or_get_cached
        compiler.compile_or_get_cached = self._wrapper
        self._active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        from jax._src import compiler

        self._active = False
        if compiler.compile_or_get_cached == self._wrapper:
            compiler.compile_or_get_cached = self._previous


# --------------------------------------------------------------------------- analysis


@dataclasses.dataclass
class ModuleAudit:
    """One compiled module.

    ``status`` is ``"clean"`` (no 64-bit value), ``"demotable"`` (no64
    removes every 64-bit value, see the groups for how) or ``"refused"``
    (``refusal`` says why); ``compiles`` counts identical compilations.
    """

    name: str
    platform: str
    compiles: int
    values: int
    status: str
    refusal: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Group:
    """64-bit values with one cause: primitive, user source line and handling."""

    primitive: str
    file: str | None
    line: int | None
    handling: Handling
    hint: str
    count: int = 0
    element_types: dict[str, int] = dataclasses.field(default_factory=dict)
    ops: dict[str, int] = dataclasses.field(default_factory=dict)
    modules: list[str] = dataclasses.field(default_factory=list)
    via: str | None = None

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        return d


@dataclasses.dataclass
class AuditReport:
    """What an audit found: compiled modules and grouped 64-bit values.

    ``exit_status`` is the audited program's exit status (``None`` for
    :func:`audit` on one function).
    """

    modules: list[ModuleAudit] = dataclasses.field(default_factory=list)
    groups: list[Group] = dataclasses.field(default_factory=list)
    program: str | None = None
    exit_status: int | None = None

    @property
    def values(self) -> int:
        return sum(g.count for g in self.groups)

    def failing(self, fail_on: str = "lossy") -> list[Group]:
        """The groups whose handling ``fail_on`` (a key of :data:`FAIL_ON`) fails on."""
        levels = FailOn.parse(fail_on, "fail_on").handlings
        return [g for g in self.groups if g.handling in levels]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data, valid against :data:`AUDIT_JSON_SCHEMA`."""
        return {
            "version": 1,
            "tool": {"name": "no64", "version": __version__},
            "program": self.program,
            "exit_status": self.exit_status,
            "values": self.values,
            "modules": [m.to_dict() for m in self.modules],
            "groups": [g.to_dict() for g in self.groups],
        }

    def to_sarif(self) -> dict[str, Any]:
        """The report as a SARIF 2.1.0 log: one result per group."""
        rules = [
            {
                "id": f"no64/{h}",
                "name": h.title().replace("-", ""),
                "shortDescription": {"text": _DESCRIPTION[h]},
                "defaultConfiguration": {"level": h.sarif_level},
            }
            for h in HANDLINGS
        ]
        results = []
        for g in self.groups:
            result: dict[str, Any] = {
                "ruleId": f"no64/{g.handling}",
                "ruleIndex": g.handling.rank,
                "level": g.handling.sarif_level,
                "message": {"text": _message(g)},
                "properties": {
                    "primitive": g.primitive,
                    "count": g.count,
                    "elementTypes": dict(g.element_types),
                    "modules": list(g.modules),
                },
            }
            if g.file is not None:
                region = {"startLine": g.line} if g.line is not None and g.line > 0 else {}
                result["locations"] = [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(g.file)},
                            **({"region": region} if region else {}),
                        }
                    }
                ]
            results.append(result)
        return {
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {
                        "driver": {
                            "name": "no64",
                            "version": __version__,
                            "informationUri": "https://pypi.org/project/no64/",
                            "rules": rules,
                        }
                    },
                    "results": results,
                }
            ],
        }

    def format_text(self, color: bool = False) -> str:
        """A compact table for people; ANSI colours when ``color``."""
        n_mod = len(self.modules)
        head = f"no64 audit: {n_mod} compiled module{'s' if n_mod != 1 else ''}"
        if not self.groups:
            return head + ", no 64-bit values\n"
        refused = [m for m in self.modules if m.status == "refused"]
        head += f", {self.values} 64-bit value{'s' if self.values != 1 else ''}"
        if refused:
            head += f", {len(refused)} refused"
        rows = [("handling", "values", "types", "primitive", "source", "hint")]
        for g in self.groups:
            types = ",".join(sorted(g.element_types))
            rows.append((g.handling, str(g.count), types, g.primitive, g.source or "-", g.hint))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        lines = [head]
        for k, row in enumerate(rows):
            cells = [c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]
            line = "  " + "  ".join(cells).rstrip()
            if color and k > 0:
                code = {"error": "31", "warning": "33"}.get(Handling(row[0]).sarif_level, "")
                if code:
                    line = f"\x1b[{code}m{line}\x1b[0m"
            elif color:
                line = f"\x1b[1m{line}\x1b[0m"
            lines.append(line)
        for m in refused:
            lines.append(f"  refused {m.name} ({m.platform}): {m.refusal}")
        return "\n".join(lines) + "\n"


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def _message(g: Group) -> str:
    types = ", ".join(f"{n} {t}" for t, n in sorted(g.element_types.items()))
    where = f" at {g.source}" if g.source else ""
    return f"{g.count} 64-bit value(s) ({types}) from {g.primitive}{where}: {_DESCRIPTION[g.handling]}. {g.hint}"


def _frames(raw: str) -> list[tuple[str, int]]:
    """Every ``file:line`` of a location, innermost first (callee before caller)."""
    return [(bytes(m.group(1), "utf-8").decode("unicode_escape"), int(m.group(2))) for m in _FRAME.finditer(raw)]


def _user_frame(f: Finding) -> tuple[str | None, int | None, str | None]:
    """(file, line) of the first frame outside library code, and the innermost
    library frame it went through (``None`` when the innermost frame is the user's)."""
    frames = _frames(f.location.raw)
    if not frames and f.location.file is not None:
        frames = [(f.location.file, f.location.line or 0)]
    for i, (path, line) in enumerate(frames):
        if not _is_library(path):
            via = None if i == 0 else f"{frames[0][0]}:{frames[0][1]}"
            return _relative(path), line, via
    for path, line in frames:  # all library code: the innermost frame not in no64
        if not os.path.realpath(path).startswith(_OWN_DIR):
            return path, line, None
    return None, None, None


def _relative(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    if os.path.isabs(path):
        try:
            return Path(path).relative_to(Path.cwd()).as_posix()
        except ValueError:
            pass
    return path


def _element(type_text: str) -> str:
    m = _ELEMENT.search(type_text)
    return m.group(0) if m else type_text


def _primitive(f: Finding) -> str:
    if f.op == "func.func":
        return "<function argument>" if "argument" in f.role else "<function result>"
    if f.op == "stablehlo.constant":
        # JAX names a literal after the function or primitive that needed it.
        return "constant"
    return f.location.primitive or f.op


def _hint(primitive: str, handling: Handling, elem: str, op: str, source: str | None, via: str | None,
          refusal: str | None) -> str:
    if handling is Handling.REFUSED:
        return refusal or "no64 refuses this op"
    if handling is Handling.BLOCKED:
        return "no64 refuses this module because of another value (see refused)"
    # what the op registry says about the op (or the op JAX's primitive lowers to)
    hint = spec_of(op).hint or spec_of(f"stablehlo.{primitive}").hint
    if hint is not None:
        return hint
    if primitive in ("iota_2x32_shape", "threefry2x32", "random_bits", "random_seed", "random_wrap"):
        return "threefry counters: rewritten exactly"
    if primitive.startswith("<function"):
        if handling is Handling.UNPROVEN:
            return "64-bit integer inputs of unknown range: pass int32 arrays, or declare input ranges (no64 convert --range)"
        what = "inputs" if "argument" in primitive else "outputs"
        return f"64-bit {what} of the compiled function: the caller passes or receives 64-bit arrays"
    explicit = op in ("stablehlo.constant", "stablehlo.iota", "stablehlo.convert") and via is None
    if explicit and source is not None and elem in ("i64", "si64", "ui64"):
        kind = "uint64" if elem == "ui64" else "int64"
        return f"{kind} requested explicitly at {source}"
    if handling is Handling.UNPROVEN:
        return "range not provable within 32 bits: use int32, or declare input ranges (no64 convert --range)"
    if handling is Handling.OVERFLOW:
        return "the value does not fit in 32 bits: the 32-bit program computes something else"
    if handling is Handling.PRECISION_REDUCED:
        return "computed with 32-bit words: fewer random bits than the 64-bit program"
    if handling is Handling.REWRITTEN:
        return "rewritten exactly by a no64 rule"
    if handling is Handling.ROUNDED:
        return "f64 constant rounded to the nearest f32"
    if handling is Handling.FLOAT32:
        return "x64 is on: f64 arithmetic becomes f32 (pass float32 data or disable jax_enable_x64)"
    return _DESCRIPTION[handling]


def _handlings(text: str, findings: list[Finding]) -> tuple[list[Handling], str | None]:
    """The handling of each finding, and the refusal message if the module is refused.

    Findings are joined with what :func:`no64.demote` reports on a copy of
    the module by op name, decoded location and (for per-value records)
    which result or argument: a refusal by the error's op and location, a
    narrowed value by its :class:`~no64.core.report.Narrowing` record, and
    an op-level event (rewrite, rounded constant) by its op.  Where several
    apply, the most severe handling wins.
    """
    with make_context():
        copy = ir.Module.parse(text)
    try:
        report = demote(copy, policy=RangePolicy.PERMISSIVE)
    except No64Error as exc:
        message = " ".join(str(exc).split())
        op = getattr(exc, "op", None)
        loc = getattr(exc, "location", None)
        out = [
            Handling.REFUSED
            if op is not None and f.op == op and (loc is None or f.location == loc)
            else Handling.BLOCKED
            for f in findings
        ]
        if Handling.REFUSED not in out and findings:
            out[0] = Handling.REFUSED
        return out, message
    by_op: dict[tuple[str, SourceLocation], Handling] = {}
    for e in report.events:
        if e.kind in _PER_VALUE_EVENTS:
            continue
        _worst(by_op, (e.op, e.location), Handling.of_event(e.kind))
    by_value: dict[tuple[str, SourceLocation, str, int], Handling] = {}
    for n in report.narrowings:
        _worst(by_value, (n.op, n.location, n.role, n.index), Handling.of_verdict(n.verdict))
    out = []
    for f in findings:
        h = by_op.get((f.op, f.location))
        if f.value is not None:
            hv = by_value.get((f.op, f.location, *f.value))
            if hv is not None and (h is None or hv.rank > h.rank):
                h = hv
        if h is None:
            elem = _element(f.type)
            float32 = elem in ("f64", "complex<f64>") and f.op != "stablehlo.constant"
            h = Handling.FLOAT32 if float32 else Handling.EXACT
        out.append(h)
    return out, None


def _worst(table: dict[Any, Handling], key: Any, h: Handling) -> None:
    old = table.get(key)
    if old is None or h.rank > old.rank:
        table[key] = h


def analyze(compiled: Sequence[Compiled], *, program: str | None = None) -> AuditReport:
    """Audit recorded modules (identical texts are analysed once)."""
    report = AuditReport(program=program)
    unique: dict[tuple[str, str], list[Any]] = {}
    for c in compiled:
        key = (c.platform, c.text)
        if key in unique:
            unique[key][1] += 1
        else:
            unique[key] = [c, 1]
    groups: dict[tuple[Any, ...], Group] = {}
    for c, n in unique.values():
        with make_context():
            module = ir.Module.parse(c.text)
        findings = find_64bit(module)
        if not findings:
            report.modules.append(ModuleAudit(c.name, c.platform, n, 0, "clean"))
            continue
        handlings, refusal = _handlings(c.text, findings)
        status = "refused" if refusal else "demotable"
        report.modules.append(ModuleAudit(c.name, c.platform, n, len(findings), status, refusal))
        for f, h in zip(findings, handlings):
            path, line, via = _user_frame(f)
            prim = _primitive(f)
            key = (prim, path, line, h)
            g = groups.get(key)
            if g is None:
                elem = _element(f.type)
                src = f"{path}:{line}" if path else None
                hint = _hint(prim, h, elem, f.op, src, via, refusal)
                g = groups[key] = Group(prim, path, line, h, hint, via=via)
            g.count += 1
            elem = _element(f.type)
            g.element_types[elem] = g.element_types.get(elem, 0) + 1
            g.ops[f.op] = g.ops.get(f.op, 0) + 1
            if c.name not in g.modules:
                g.modules.append(c.name)
    report.groups = sorted(
        groups.values(), key=lambda g: (-g.handling.rank, g.file or "~", g.line or 0, g.primitive)
    )
    return report


def audit(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> AuditReport:
    """Audit one function: lower ``jax.jit(fun)`` for ``args``/``kwargs`` and
    explain every 64-bit value of its module (nothing is compiled or run)."""
    import jax

    lowered = jax.jit(fun).lower(*args, **kwargs)
    module = lowered.compiler_ir("stablehlo")
    op = module.operation
    name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else "module"
    platform = jax.default_backend()
    text = op.get_asm(enable_debug_info=True)
    return analyze([Compiled(name, platform, text)], program=getattr(fun, "__qualname__", None))


# --------------------------------------------------------------------------- running a program


def _print_exception(exc: BaseException) -> None:
    """Print ``exc`` as Python would, without the frames of the audit itself."""
    tb = exc.__traceback__
    here = os.path.realpath(__file__)
    while tb is not None and (
        os.path.realpath(tb.tb_frame.f_code.co_filename) == here
        or tb.tb_frame.f_code.co_filename == runpy.__file__
        or tb.tb_frame.f_globals.get("__name__") == "runpy"
    ):
        tb = tb.tb_next
    sys.stderr.flush()
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _program_argv(argv: list[str], path0: str | None) -> Iterator[None]:
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv[:] = argv
    if path0 is not None:
        sys.path.insert(0, path0)
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path


class Progress:
    """A one-line status on a terminal (``stream``) while a program runs:
    how many modules were observed, then that they are being analysed.
    Each update rewrites the line; :meth:`clear` erases it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def show(self, text: str) -> None:
        try:
            self.stream.write(f"\r\x1b[K{text}")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            pass

    def observed(self, count: int) -> None:
        self.show(f"no64 audit: {count} module(s) compiled so far")

    def clear(self) -> None:
        if self.shown:
            self.show("")
            self.shown = False


def run_program(target: str, args: Sequence[str], *, module: bool = False,
                platform: str | None = None, progress: TextIO | None = None) -> AuditReport:
    """Run a script (or ``-m`` module) in this process as ``python`` would,
    observing what JAX compiles; returns the report with ``exit_status`` set.

    The program's output is not touched; an exception it raises is printed
    as Python prints it and gives exit status 1.  With ``progress`` (a
    terminal stream), a status line counts the compiled modules while the
    program runs and is erased before the report.
    """
    status = 0
    line = Progress(progress) if progress is not None else None
    with Observer(platform, line.observed if line is not None else None) as obs:
        try:
            if module:
                with _program_argv([target, *args], os.getcwd()):
                    runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                path0 = os.path.dirname(os.path.abspath(target))
                with _program_argv([target, *args], path0):
                    # python runs a script under its absolute path (tracebacks, __file__)
                    runpy.run_path(os.path.abspath(target), run_name="__main__")
        except SystemExit as exc:
            status = _exit_status(exc)
        except KeyboardInterrupt as exc:
            _print_exception(exc)
            status = 130
        except BaseException as exc:  # noqa: BLE001 - the program's own crash
            _print_exception(exc)
            status = 1
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if line is not None:
        line.show(f"no64 audit: analysing {len(obs.modules)} module(s)")
    try:
        report = analyze(obs.modules, program=target)
    finally:
        if line is not None:
            line.clear()
    report.exit_status = status
    return report


def write_report(report: AuditReport, fmt: str, stream: TextIO, color: bool = False) -> None:
    """Write ``report`` as ``"text"``, ``"json"`` or ``"sarif"``."""
    if fmt == "json":
        stream.write(json.dumps(report.to_dict(), indent=2) + "\n")
    elif fmt == "sarif":
        stream.write(json.dumps(report.to_sarif(), indent=2) + "\n")
    else:
        stream.write(report.format_text(color))
    stream.flush()


_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}

#: JSON Schema (draft 2020-12) of ``no64 audit --json`` / :meth:`AuditReport.to_dict`.
AUDIT_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "no64 audit report",
    "type": "object",
    "required": ["version", "tool", "program", "exit_status", "values", "modules", "groups"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": 1},
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"const": "no64"}, "version": {"type": "string"}},
        },
        "program": _NULLABLE_STR,
        "exit_status": _NULLABLE_INT,
        "values": {"type": "integer", "minimum": 0},
        "modules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "platform", "compiles", "values", "status", "refusal"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "platform": {"type": "string"},
                    "compiles": {"type": "integer", "minimum": 1},
                    "values": {"type": "integer", "minimum": 0},
                    "status": {"enum": ["clean", "demotable", "refused"]},
                    "refusal": _NULLABLE_STR,
                },
            },
        },
        "groups": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "primitive", "file", "line", "source", "handling", "hint", "count",
                    "element_types", "ops", "modules", "via",
                ],
                "additionalProperties": False,
                "properties": {
                    "primitive": {"type": "string"},
                    "file": _NULLABLE_STR,
                    "line": _NULLABLE_INT,
                    "source": _NULLABLE_STR,
                    "handling": {"enum": list(HANDLINGS)},
                    "hint": {"type": "string"},
                    "count": {"type": "integer", "minimum": 1},
                    "element_types": _COUNTS,
                    "ops": _COUNTS,
                    "modules": {"type": "array", "items": {"type": "string"}},
                    "via": _NULLABLE_STR,
                },
            },
        },
    },
}
