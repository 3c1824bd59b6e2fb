"""Audit a real program: what the compile hook does with it, and why, by the user's lines.

Two views of a program:

*the hook's view* (the default of ``no64 audit``, :func:`run_program`)
    The program runs exactly as with ``NO64_PLATFORMS=P``: no64 is activated
    when JAX is imported, with the settings of ``NO64_MODE``,
    ``NO64_INTEGER_POLICY`` and ``NO64_POLICY``; it turns ``jax_enable_x64``
    off, narrows 64-bit host values and rewrites, emulates or refuses every
    module before the backend compiles it.  The backend the program runs on here stands in for
    P.  :class:`Predictor` records what the hook did with each module --
    passed through, rewritten (and how) or refused -- and where x64 was
    turned on, which explicit 64-bit dtypes JAX truncated and which host
    values no64 narrowed.
*as is* (``--as-is``, :class:`Observer` and :func:`analyze`)
    The program runs unchanged, with its own x64 setting, and every module it
    compiles is explained as if it were handed to no64: what the modules are
    before any hook.  The pytest plugin uses this view.

Each 64-bit value gets a handling (:class:`no64.kinds.Handling`):

``exact``
    narrowed to 32 bits with the same value.
``sentinel``
    a 64-bit extreme (``INT64_MAX``, ...) mapped to the 32-bit extreme.
``rewritten``
    an op replaced by an exact 32-bit equivalent (random-number counters and
    rbg state, bit counts, ...).
``emulated``
    a 64-bit integer computed exactly in a pair of 32-bit words.
``float32``
    an f64 value computed in f32 (the x64 program run without x64).
``rounded``
    f64 constant(s) rounded to the nearest f32.
``precision-reduced``
    an op replaced by a rule that computes the same thing with fewer bits.
``unproven``
    an integer that is exact only if it fits in 32 bits, which no64 cannot
    prove.
``overflow``
    a value that never fits in 32 bits.
``refused``
    no64 refuses the module because of this value.
``blocked``
    a value in a module refused because of another value.

Every value is attributed to the innermost frame of the user's code: the
op's own call-site location, or, for ops inside JAX's jitted helpers
(``jax.random.normal`` and the like, lowered as private functions without a
source line), the call sites of the function holding it, followed outwards
until a user frame is found; the library function or frame it came through
is given as ``via``.  Values are grouped by primitive, user line and
handling (:class:`Group`), and groups are summed up as causes
(:class:`Cause`): where x64 was turned on, where random bits are drawn,
which host sentinels were mapped, what was refused and why.

``--fail-on`` levels (see :class:`no64.kinds.FailOn`): ``refused`` (the
default) fails on a refused module, ``unproven`` also on ``unproven`` and
``overflow`` values, ``lossy`` on those and ``precision-reduced``, ``any``
on every 64-bit value.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import io
import json
import linecache
import os
import re
import runpy
import sys
import sysconfig
import threading
import tokenize
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from .. import __version__
from ._compat import set_x64_global, watch_explicit_dtypes
from ..core._mlir import ir, make_context
from ..core.demote import demote
from ..core.scan import Finding, all_ops, find_64bit
from ..core.types import TypeConverter
from ..errors import (
    Boundary64BitError,
    ConstantRangeError,
    NarrowingError,
    No64Error,
    Remaining64BitError,
    UnsupportedOpError,
    OutputRangeError,
    X64DisabledWarning,
)
from ..kinds import EventKind, FailOn, Handling, IntegerPolicy, Mode, RangePolicy
from ..rules import spec_of

__all__ = [
    "AUDIT_JSON_SCHEMA",
    "FAIL_ON",
    "HANDLINGS",
    "AuditReport",
    "Cause",
    "Group",
    "ModuleAudit",
    "Observer",
    "Predictor",
    "analyze",
    "audit",
    "run_program",
]

#: Version of the JSON document (:data:`AUDIT_JSON_SCHEMA`).
SCHEMA_VERSION = 3

#: Every handling, from harmless to blocking (see the module docstring and
#: :class:`no64.kinds.Handling`).
HANDLINGS: tuple[Handling, ...] = tuple(Handling)

#: Handlings each ``--fail-on`` level fails on (see :class:`no64.kinds.FailOn`).
FAIL_ON: dict[str, frozenset[Handling]] = {level.value: level.handlings for level in FailOn}

#: Handlings the pytest plugin fails a test on: no64 cannot remove the value exactly.
NOT_REMOVABLE = frozenset(h for h in Handling if not h.removable)

#: The two views of a program.
HOOK, AS_IS = "hook", "as-is"

#: Kinds of cause, in the order the report lists them.
CAUSE_KINDS = ("x64", "refused", "explicit-dtype", "random", "host", "value", "float")

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

_CAUSE_DESCRIPTION = {
    "x64": "jax_enable_x64 turned on by the program or its environment",
    "refused": "no64 refuses a module (the program fails under the hook)",
    "explicit-dtype": "a 64-bit dtype requested while x64 is off (JAX truncates it)",
    "random": "random bits drawn with 64-bit counters or state",
    "host": "a 64-bit host value narrowed by no64",
    "value": "64-bit values in a compiled module",
    "float": "a float64 result that f32 demonstrably changes (float_policy='f32')",
}

# Per-value verdicts come from the report's narrowing records; these event
# kinds only repeat them.
_PER_VALUE_EVENTS = frozenset({EventKind.UNPROVEN, EventKind.OVERFLOW})

_RANDOM_PRIMITIVES = frozenset({
    "iota_2x32_shape", "threefry2x32", "rng_bit_generator", "random_bits", "random_seed",
    "random_wrap", "random_split", "random_fold_in", "random_unwrap",
})
# A location frame: an optional function name, then "file":line:col.
_FRAME = re.compile(r'(?:"((?:[^"\\]|\\.)*)"\()?"((?:[^"\\]|\\.)+)":(\d+):(\d+)')
_ELEMENT = re.compile(r"complex<f64>|[su]?i64|ui64|f64")
_NAMES_64BIT = re.compile(r"\b(?:u?int64|float64|complex128|longlong|ulonglong|double)\b")
# np.iinfo(np.int64).max names a 64-bit extreme, not a dtype for a value.
_LIMITS = re.compile(r"\b[if]info\([^)]*\)")
_OWN_DIR = os.path.realpath(os.path.dirname(os.path.dirname(__file__))) + os.sep
_STDLIB = tuple(
    {os.path.realpath(p) + os.sep for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")) if p}
)
# Libraries whose frames are never the user's even outside site-packages.
_LIBRARIES = ("jax", "jaxlib", "numpy", "ml_dtypes", "flax", "optax", "chex", "equinox",
              "haiku", "opt_einsum", "jax_plugins", "orbax", "absl")


def _library_dirs() -> tuple[str, ...]:
    dirs = []
    for name in _LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.realpath(os.path.dirname(path)) + os.sep)
    return tuple(dirs)


def _is_own(path: str) -> bool:
    return os.path.realpath(path).startswith(_OWN_DIR)


def _is_library(path: str) -> bool:
    """Installed packages, the standard library, JAX and its libraries and no64
    itself; not ``<string>``/``<stdin>``, nor the ``-`` of a parsed copy."""
    if path.startswith("<"):
        return path.startswith("<frozen")
    if "site-packages" in path or "dist-packages" in path:
        return True
    real = os.path.realpath(path)
    return real.startswith(_STDLIB) or real.startswith(_OWN_DIR) or real.startswith(_library_dirs())


def _relative(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    if os.path.isabs(path):
        try:
            return Path(path).relative_to(Path.cwd()).as_posix()
        except ValueError:
            pass
    return path


def _short_library(path: str) -> str:
    """A library path from its package down (``flax/linen/linear.py``)."""
    for marker in ("site-packages" + os.sep, "dist-packages" + os.sep):
        if marker in path:
            return path.rsplit(marker, 1)[1].replace(os.sep, "/")
    real = os.path.realpath(path)
    for d in _library_dirs():
        if real.startswith(d):
            parent = os.path.dirname(d.rstrip(os.sep)) + os.sep
            return real[len(parent):].replace(os.sep, "/")
    return _relative(path)


# --------------------------------------------------------------------------- sites


@dataclasses.dataclass(frozen=True)
class Site:
    """Where a finding comes from: the user's ``file``/``line`` (``None``: no
    user frame) and the library function or frame it came through (``via``).
    ``path`` is the file's absolute path, for reading the line; ``via_at``
    the library frame's path and line."""

    file: str | None
    line: int | None
    via: str | None = None
    path: str | None = dataclasses.field(default=None, compare=False)
    via_at: tuple[str, int] | None = dataclasses.field(default=None, compare=False)

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def where(self) -> str:
        """``at file:line`` (``via ...``), or a plain statement that there is no user frame."""
        if self.file is None:
            return f"with no line in your code (in {self.via})" if self.via else "with no source line"
        return f"at {self.source}"

    def names_64bit(self) -> str | None:
        """Where a 64-bit dtype is named: ``"here"`` (the user's line), ``"via"``
        (the library line it came through), or ``None``."""
        if self.path is not None and self.line is not None and _line_names_64bit(self.path, self.line):
            return "here"
        if self.via_at is not None and _line_names_64bit(*self.via_at):
            return "via"
        return None


def _line_names_64bit(path: str, line: int) -> bool:
    """Whether the code of a line (not its comments) names a 64-bit dtype."""
    text = linecache.getline(path, line)
    try:
        code = " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                        if t.type != tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement
        code = text.split("#", 1)[0] if "'" not in text and '"' not in text else text
    return bool(_NAMES_64BIT.search(_LIMITS.sub("", code)))


_NO_SITE = Site(None, None)


def _frames(raw: str) -> list[tuple[str | None, str, int]]:
    """Every frame (function name, file, line) of a location, innermost first;
    the ``-`` file of a parsed copy's own positions is left out."""
    out = []
    for m in _FRAME.finditer(raw):
        path = bytes(m.group(2), "utf-8").decode("unicode_escape")
        if path == "-":
            continue
        name = bytes(m.group(1), "utf-8").decode("unicode_escape") if m.group(1) is not None else None
        out.append((name, path, int(m.group(3))))
    return out


def _library_frame(frame: tuple[str | None, str, int]) -> str:
    name, path, line = frame
    return f"{_short_library(path)}:{line}"


# JAX's private jitted helpers and the public function that calls them.
_HELPER_ALIASES = {
    "shuffle": "permutation", "normal_real": "normal", "threefry_seed": "key",
    "threefry_split": "split", "threefry_fold_in": "fold_in", "threefry_random_bits": "bits",
    "random_bits": "bits", "uniform_real": "uniform", "threefry_split_foldlike": "split",
}


def _helper_name(function: str) -> str:
    """The public name of one of JAX's jitted helpers (``_normal`` ->
    ``jax.random.normal``), or ``jit(<name>)``."""
    name = re.sub(r"_\d+$", "", function)
    bare = name.lstrip("_")
    bare = _HELPER_ALIASES.get(bare, bare)
    for module in ("jax.random", "jax.nn", "jax.numpy"):
        mod = sys.modules.get(module)
        if mod is not None and bare and hasattr(mod, bare):
            return f"{module}.{bare}"
    return f"jit({name})"


def _bare(raw: str) -> str:
    """A location as MLIR prints it (``loc(...)``) or as decoded (``...``): the latter."""
    return raw[4:-1] if raw.startswith("loc(") and raw.endswith(")") else raw


class CallGraph:
    """The call sites of each function of a module, to follow a value inside
    a private function (one of JAX's jitted helpers) out to the user's line."""

    def __init__(self, module: ir.Module | ir.Operation) -> None:
        op = module.operation if isinstance(module, ir.Module) else module
        self.callers: dict[str, list[tuple[str, str]]] = {}
        #: Per function, the location of its return: for the entry function
        #: (``main``), the line that called the jitted function.
        self.returns: dict[str, str] = {}
        self._sites: dict[tuple[str | None, str], Site] = {}
        #: Per function and location, the first user's location of each
        #: 64-bit constant there, in walk order.
        self._constant_users: dict[tuple[str, str], list[str | None]] = {}
        holds = TypeConverter().holds_64bit
        for fn in op.regions[0].blocks[0].operations:
            fn = fn.operation
            if fn.name != "func.func":
                continue
            caller = ir.StringAttr(fn.attributes["sym_name"]).value
            for inner in all_ops(fn):
                if inner.name == "func.return" and caller not in self.returns:
                    self.returns[caller] = str(inner.location)
                if inner.name == "func.call" and "callee" in inner.attributes:
                    callee = ir.FlatSymbolRefAttr(inner.attributes["callee"]).value
                    self.callers.setdefault(callee, []).append((caller, str(inner.location)))
                if inner.name == "stablehlo.constant" and holds(inner.results[0].type):
                    user = next(iter(inner.results[0].uses), None)
                    self._constant_users.setdefault((caller, _bare(str(inner.location))), []).append(
                        str(user.owner.location) if user is not None else None)

    def outer_helper(self, function: str | None) -> str | None:
        """The outermost of JAX's public random functions on the call chain
        from ``function`` out to the entry (``jax.random.bernoulli`` for a
        value in the ``_uniform`` that ``_bernoulli`` calls)."""
        found = None
        seen: set[str] = set()
        while function is not None and function != "main" and function not in seen:
            seen.add(function)
            name = _helper_name(function)
            if name.startswith("jax.random."):
                found = name
            callers = self.callers.get(function)
            function = callers[0][0] if callers else None
        return found

    def constant_user(self, function: str, raw: str, k: int) -> str | None:
        """The location of the first user of the ``k``-th 64-bit constant at
        ``raw`` in ``function``, when ``raw`` is the function's call site
        (JAX gives literals that location: the jit call line)."""
        ret = self.returns.get(function)
        if ret is None or _bare(raw) != _bare(ret):
            return None
        users = self._constant_users.get((function, _bare(raw)), [])
        return users[k] if k < len(users) else None

    def site(self, function: str | None, raw: str, depth: int = 0) -> Site:
        """The innermost user frame of a value at location ``raw`` in ``function``."""
        key = (function, raw)
        found = self._sites.get(key)
        if found is None:
            found = self._sites[key] = self._site(function, raw, depth)
        return found

    def _site(self, function: str | None, raw: str, depth: int) -> Site:
        # no64's own frames (its wrappers of JAX functions) are never named
        frames = [f for f in _frames(raw) if not _is_own(f[1])]
        for i, (_, path, line) in enumerate(frames):
            if not _is_library(path):
                inner = frames[i - 1] if i > 0 else None
                return Site(_relative(path), line, _library_frame(inner) if inner else None,
                            os.path.abspath(path), (inner[1], inner[2]) if inner else None)
        if function is not None and depth < 32:
            for caller, call_raw in self.callers.get(function, ())[:8]:
                outer = self.site(caller, call_raw, depth + 1)
                if outer.file is not None:
                    if outer.via is None:
                        via = _library_frame(frames[0]) if frames else _helper_name(function)
                        at = (frames[0][1], frames[0][2]) if frames else None
                        outer = dataclasses.replace(outer, via=via, via_at=at)
                    return outer
        if frames:
            return Site(None, None, _library_frame(frames[0]), via_at=(frames[0][1], frames[0][2]))
        if function is not None and function != "main":
            return Site(None, None, _helper_name(function))
        return _NO_SITE


def _stack_site(skip: int = 1) -> Site:
    """The innermost user frame of the Python stack, and the library frame
    it called (``via``): the outermost frame of a library other than JAX
    (the library the user called, also through ``jax.jit``), left out when
    there is none: the report then names the JAX function."""
    frame: Any = sys._getframe(skip + 1)
    called: str | None = None
    called_line = 0
    while frame is not None:
        path = frame.f_code.co_filename
        if _is_own(path) or path == runpy.__file__:
            pass
        elif _is_library(path):
            if not _is_jax(path):
                called, called_line = path, frame.f_lineno
        else:
            via = f"{_short_library(called)}:{called_line}" if called else None
            return Site(_relative(path), frame.f_lineno, via, os.path.abspath(path),
                        (called, called_line) if called else None)
        frame = frame.f_back
    return _NO_SITE


def _is_jax(path: str) -> bool:
    short = _short_library(path)
    return short.startswith(("jax/", "jaxlib/", "numpy/", "<frozen")) or path.startswith("<frozen")


# --------------------------------------------------------------------------- what was compiled


@dataclasses.dataclass(frozen=True)
class Value:
    """One 64-bit value of a compiled module, attributed and judged."""

    op: str
    primitive: str
    element: str
    handling: Handling
    site: Site
    function: str | None = None
    #: The outermost of JAX's public random functions it is computed in.
    helper: str | None = None


@dataclasses.dataclass
class ModuleResult:
    """One compiled module: what no64 does (or did) with it, and its values."""

    name: str
    platform: str
    status: str  # passed | rewritten | refused
    values: list[Value]
    refusal: str | None = None
    error: BaseException | None = None
    order: int = 0
    emulated: int = 0  # the report's values_emulated
    float_hints: list[Any] = dataclasses.field(default_factory=list)  # the report's float hints


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


def _refusal_handlings(findings: list[Finding], exc: BaseException) -> list[Handling]:
    if isinstance(exc, Remaining64BitError) and not isinstance(exc, Boundary64BitError):
        return [Handling.REFUSED] * len(findings)
    if isinstance(exc, Boundary64BitError):
        bad = {(f.op, f.role, f.function) for f in exc.findings}
        out = [Handling.REFUSED if (f.op, f.role, f.function) in bad else Handling.BLOCKED
               for f in findings]
    else:
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
    return out


def _report_handlings(findings: list[Finding], report: Any) -> list[Handling]:
    """Join findings with a :class:`~no64.core.report.DemotionReport`: a
    narrowed value by its narrowing record, an op-level event (rewrite,
    rounded constant) by op and location; the most severe handling wins."""
    by_op: dict[tuple[str, Any], Handling] = {}
    for e in report.events:
        if e.kind in _PER_VALUE_EVENTS:
            continue
        _worst(by_op, (e.op, e.location), Handling.of_event(e.kind))
    by_value: dict[tuple[Any, ...], Handling] = {}
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
    return out


def _handlings(text: str, findings: list[Finding], integer_policy: str = "error",
               float_hints: list[Any] | None = None) -> tuple[list[Handling], No64Error | None]:
    """The handling of each finding of the module ``text``, and the error if
    no64 refuses it (:func:`no64.demote` on a private copy)."""
    with make_context():
        copy = ir.Module.parse(text)
    try:
        report = demote(copy, policy=RangePolicy.PERMISSIVE, integer_policy=integer_policy)
    except No64Error as exc:
        return _refusal_handlings(findings, exc), exc
    if float_hints is not None:
        float_hints.extend(report.float_hints)
    return _report_handlings(findings, report), None


def _worst(table: dict[Any, Handling], key: Any, h: Handling) -> None:
    old = table.get(key)
    if old is None or h.rank > old.rank:
        table[key] = h


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _values(module: ir.Module, findings: list[Finding], handlings: list[Handling],
            call_site: Site | None = None) -> list[Value]:
    """The module's values; ``call_site``: the user's line that compiled it,
    for the entry's arguments and results where its return op names no line."""
    graph = CallGraph(module)
    # A module that is one of JAX's private helpers, compiled on its own
    # (jax.random.permutation called outside jit compiles jit__shuffle).
    name = _module_name(module.operation)
    helper = None
    if name.startswith("jit__"):
        helper = _helper_name(name[4:])
        if not helper.startswith("jax."):
            helper = None
    out = []
    constants: dict[tuple[str | None, str], int] = {}
    for f, h in zip(findings, handlings):
        site = graph.site(f.function, f.location.raw)
        if f.op == "stablehlo.constant" and f.function is not None:
            # a literal where it is used, not at the jit call line
            k = constants[(f.function, f.location.raw)] = constants.get((f.function, f.location.raw), -1) + 1
            user = graph.constant_user(f.function, f.location.raw, k)
            if user is not None:
                at_user = graph.site(f.function, user)
                if at_user.file is not None:
                    site = at_user
        if site.file is None and f.op == "func.func" and f.function == "main" and "main" in graph.returns:
            # the entry's arguments and results: the line that called the jitted function
            site = graph.site(None, graph.returns["main"])
        if site.file is None and f.op == "func.func" and f.function == "main" and call_site is not None:
            # JAX 0.7 gives the entry's return no location: the line compiling it
            site = call_site
        if helper is not None and site.via is None:
            site = dataclasses.replace(site, via=helper)
        out.append(Value(f.op, _primitive(f), _element(f.type), h, site, f.function,
                         graph.outer_helper(f.function)))
    return out


def _module_name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else "module"


# --------------------------------------------------------------------------- as is: observing


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
        text = op.get_asm(enable_debug_info=True)
        with self._lock:
            self.modules.append(Compiled(_module_name(op), platform, text))
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


def _explain(compiled: Sequence[Compiled], integer_policy: str = "error") -> list[ModuleResult]:
    """What no64 would do with recorded modules (identical texts are analysed once)."""
    results = []
    seen: dict[tuple[str, str], ModuleResult] = {}
    for order, c in enumerate(compiled, 1):
        key = (c.platform, c.text)
        if key in seen:
            continue
        with make_context():
            module = ir.Module.parse(c.text)
            findings = find_64bit(module)
            if not findings:
                result = ModuleResult(c.name, c.platform, "passed", [], order=order)
            else:
                hints: list[Any] = []
                handlings, exc = _handlings(c.text, findings, integer_policy, hints)
                status = "refused" if exc is not None else "rewritten"
                result = ModuleResult(c.name, c.platform, status, _values(module, findings, handlings),
                                      _one_line(exc) if exc is not None else None, exc, order=order,
                                      float_hints=hints)
        seen[key] = result
        results.append(result)
    counts: dict[tuple[str, str], int] = {}
    for c in compiled:
        counts[(c.platform, c.text)] = counts.get((c.platform, c.text), 0) + 1
    for key, result in seen.items():
        result.compiles = counts[key]  # type: ignore[attr-defined]
    return results


# --------------------------------------------------------------------------- the hook's view: predicting


def _stand_in_class() -> type:
    from . import hook

    @dataclasses.dataclass(frozen=True)
    class StandIn(hook.Config):
        """``Config`` whose platforms include the default backend here (the
        audit runs the program on it as on the platforms it names)."""

        def applies_to(self, platform: str) -> bool:
            if self.mode is Mode.OFF:
                return False
            from jax._src import xla_bridge

            if not xla_bridge.backends_are_initialized():
                return True
            import jax

            default = jax.default_backend()
            return platform.lower() == default.lower() or hook.Config.applies_to(self, platform)

        def describe(self) -> str:
            return f"{hook.Config.describe(self)} (audited here)"

    return StandIn


_StandIn_cls: type | None = None


def _StandIn(platforms: frozenset[str], **settings: Any) -> Any:  # noqa: N802
    global _StandIn_cls
    if _StandIn_cls is None:
        _StandIn_cls = _stand_in_class()
    return _StandIn_cls(platforms, **settings)


def _hook_settings(given: dict[str, Any]) -> dict[str, str]:
    """Every field of the hook's :class:`~no64.jax.hook.Config` but its
    platforms, as ``NO64_PLATFORMS`` sets it: from the environment variable
    ``NO64_<FIELD>`` (``NO64_MODE``, ``NO64_INTEGER_POLICY``,
    ``NO64_POLICY``, ...), read as the hook reads it, unless ``given``."""
    from . import hook

    defaults = hook.Config(frozenset({"default"}))
    out: dict[str, str] = {}
    for field in dataclasses.fields(hook.Config):
        if field.name == "platforms":
            continue
        default = getattr(defaults, field.name)
        value = given.get(field.name)
        if value is None:
            choices = type(default).values() if hasattr(type(default), "values") else (str(default),)
            value = hook._environment_choice(f"NO64_{field.name.upper()}", choices, default, False)
        out[field.name] = str(value)
    return out


@dataclasses.dataclass(frozen=True)
class X64Event:
    """x64 turned on: at a user's line, or by the environment; ``modules``
    compiled before it."""

    site: Site
    environment: str | None
    modules_before: int


@dataclasses.dataclass
class DtypeEvent:
    """An explicit 64-bit dtype JAX truncated (x64 off), or that no64 took
    over (``by_no64``: ``jnp.array``/``jnp.asarray`` of 64-bit host data,
    converted and range-checked by no64)."""

    site: Site
    requested: str
    became: str
    function: str
    count: int = 1
    by_no64: bool = False


class Predictor:
    """Run a program under the compile hook, as ``NO64_PLATFORMS`` would,
    and record what the hook does (a context manager; see :func:`run_program`).

    On entry no64 is activated for ``platforms`` with the hook's settings
    (``mode``, ``integer_policy``, ``policy``: every field of its
    :class:`~no64.jax.hook.Config`), each by default from its environment
    variable (``NO64_MODE``, ``NO64_INTEGER_POLICY``, ``NO64_POLICY``) as the
    environment activation reads it, the default backend here standing in
    for the platforms.  While active it records each
    module the hook handles (:class:`ModuleResult`), where x64 is turned on
    (:class:`X64Event`), and explicit 64-bit dtypes that JAX truncates
    (:class:`DtypeEvent`); host narrowings are no64's own
    :func:`no64.host_records`.  On exit the previous configuration is put back.
    """

    def __init__(self, platforms: str, *, progress: Callable[[int], None] | None = None,
                 **settings: Any) -> None:
        from . import hook

        self.platforms = hook._normalize_platforms(platforms) or frozenset({"default"})
        #: The hook's settings, by field of its Config.
        self.settings = _hook_settings(settings)
        self.mode = self.settings["mode"]
        self.integer_policy = self.settings["integer_policy"]
        self.progress = progress
        self.results: list[ModuleResult] = []
        self.x64: list[X64Event] = []
        self.dtypes: list[DtypeEvent] = []
        self._lock = threading.Lock()
        self._tls = threading.local()
        self._saved: dict[str, Any] = {}
        self._count = 0

    # -- activation

    def __enter__(self) -> "Predictor":
        from . import hook, host
        from jax._src import traceback_util

        # The audit's wrappers are not part of the program's traceback (a
        # run under NO64_PLATFORMS has none): JAX leaves them out as it
        # leaves out its own frames.
        traceback_util.register_exclusion(__file__)

        warnings.filterwarnings("ignore", category=X64DisabledWarning)
        with hook._lock:
            self._saved["explicit"] = hook._explicit
            hook._explicit = True  # the environment activation (NO64_PLATFORMS) yields to this one
        import jax  # noqa: F401 - the program would import it; activation follows
        from jax._src import compiler, dtypes
        from jax._src import config as jax_config
        from jax._src import xla_bridge

        state = jax_config.enable_x64
        self._saved["x64"] = state.get_global()
        if state.get_global():
            env = os.environ.get("JAX_ENABLE_X64")
            self.x64.append(X64Event(_NO_SITE, f"JAX_ENABLE_X64={env}" if env else "jax_enable_x64", 0))
        self._saved["x64_hook"] = state._update_global_hook
        previous_hook = state._update_global_hook

        def x64_hook(value: Any) -> None:
            if value and self._recording:
                try:
                    self.x64.append(X64Event(_stack_site(), None, self._count))
                except Exception:  # noqa: BLE001
                    pass
            if previous_hook is not None:
                previous_hook(value)

        self._recording = True
        state._update_global_hook = x64_hook
        self._saved["x64_watch"] = x64_hook
        hook._get_state()
        self._saved["config"] = hook._state.get_global() if hook._state is not None else None
        config = _StandIn(self.platforms, **self.settings)
        self.config = config
        label = ",".join(sorted(self.platforms))
        with hook._lock:
            hook._activate(config, backends_started=xla_bridge.backends_are_initialized(),
                           source=f"{hook.ENV_PLATFORMS}={label}")
        host.clear_host_records()
        # What the hook does with each module.
        self._saved["prepare"] = hook.prepare_module
        self._saved["record"] = hook._record
        hook.prepare_module = self._prepare
        hook._record = self._record
        self._saved["judge"] = hook.judge_meaning
        hook.judge_meaning = self._judge
        self._saved["compile"] = compiler.compile_or_get_cached
        compiler.compile_or_get_cached = self._compile
        def explicit_dtype(dtype: Any, out: Any, fun_name: str) -> None:
            if self._recording:
                try:
                    self._note_dtype(dtype, out, fun_name)
                except Exception:  # noqa: BLE001
                    pass

        self._saved["explicit_dtype"] = watch_explicit_dtypes(explicit_dtype)
        # jnp.array/asarray of 64-bit host data with a 64-bit dtype: no64
        # converts the data itself and JAX never sees the dtype
        self._saved["array_input"] = original_input = host._array_input

        def array_input(object: Any, dtype: Any, *args: Any, **kwargs: Any) -> Any:
            out = original_input(object, dtype, *args, **kwargs)
            if self._recording and dtype is not None and out[1] is None:
                try:
                    self._note_dtype(dtype, getattr(out[0], "dtype", None), sys._getframe(1).f_code.co_name,
                                     by_no64=True)
                except Exception:  # noqa: BLE001
                    pass
            return out

        host._array_input = array_input
        return self

    def __exit__(self, *exc: Any) -> None:
        from . import hook
        from jax._src import compiler, dtypes
        from jax._src import config as jax_config

        self._recording = False
        #: Whether x64 is still on when the program ends (no64 left it on).
        self.x64_kept = bool(jax_config.enable_x64.get_global())
        if compiler.compile_or_get_cached == self._compile:
            compiler.compile_or_get_cached = self._saved["compile"]
        if hook.prepare_module == self._prepare:
            hook.prepare_module = self._saved["prepare"]
        if hook._record == self._record:
            hook._record = self._saved["record"]
        if hook.judge_meaning == self._judge:
            hook.judge_meaning = self._saved["judge"]
        self._saved["explicit_dtype"]()  # takes the watch off
        from . import host

        host._array_input = self._saved["array_input"]
        with hook._lock:
            hook._state._set(self._saved["config"])
            hook._explicit = self._saved["explicit"]
        _unchain_x64_hook(self._saved["x64_watch"], self._saved["x64_hook"])
        if self._saved["x64"] and not jax_config.enable_x64.get_global():
            set_x64_global(True)

    # -- recording

    def _note_dtype(self, dtype: Any, out: Any, fun_name: str, by_no64: bool = False) -> None:
        import numpy as np

        requested = np.dtype(getattr(dtype, "dtype", dtype))
        if out is None or requested.itemsize != 8 and requested.kind != "c":
            return
        became = np.dtype(out)
        if requested == became:
            return
        site = _stack_site()
        with self._lock:
            fun = fun_name or "dtype"
            for e in self.dtypes:
                if e.site == site and e.requested == requested.name and e.by_no64 == by_no64:
                    e.count += 1
                    if fun not in e.function.split(", "):
                        e.function += f", {fun}"
                    return
            self.dtypes.append(DtypeEvent(site, requested.name, became.name, fun, by_no64=by_no64))

    def _record(self, name: str, platform: str, mode: Any, report: Any) -> None:
        self._tls.report = report
        self._saved["record"](name, platform, mode, report)

    def _compile(self, backend: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
        self._tls.prepared = False
        try:
            return self._saved["compile"](backend, computation, *args, **kwargs)
        finally:
            if not self._tls.prepared and self._recording:
                self._capture(computation, str(getattr(backend, "platform", "unknown")), None, None,
                              handled=False)

    def _prepare(self, module: Any, config: Any, platform: str, **kwargs: Any) -> Any:
        self._tls.prepared = True
        self._tls.report = None
        try:
            out = self._saved["prepare"](module, config, platform, **kwargs)
        except No64Error as exc:
            if self._recording:
                self._capture(module, platform, None, exc)
            raise
        if self._recording:
            self._capture(module, platform, self._tls.report, None)
        return out

    def _judge(self, module: Any, meaning: Any, config: Any, platform: str) -> Any:
        """The hook judging a 32-bit module by its x64 meaning: a refusal is
        the module's (its x64 values); the integers it cannot prove inside
        32 bits become the values of the module the hook then compiles."""
        self._tls.meaning = None
        try:
            report = self._saved["judge"](module, meaning, config, platform)
        except No64Error as exc:
            if self._recording:
                self._tls.prepared = True
                self._capture(meaning, platform, None, exc)
            raise
        if report is not None and self._recording:
            self._tls.meaning = (meaning, report)
        return report

    @staticmethod
    def _unproven(meaning: Any, report: Any) -> list[Value]:
        from types import SimpleNamespace

        from .intent import unproven

        findings = find_64bit(meaning)
        handlings = _report_handlings(findings, SimpleNamespace(events=[], narrowings=unproven(report)))
        keep = [(f, h) for f, h in zip(findings, handlings)
                if h in (Handling.UNPROVEN, Handling.OVERFLOW)]
        if not keep:
            return []
        return _values(meaning, [f for f, _ in keep], [h for _, h in keep])

    def _capture(self, module: Any, platform: str, report: Any, exc: BaseException | None,
                 handled: bool = True) -> None:
        meaning = getattr(self._tls, "meaning", None)
        self._tls.meaning = None
        try:
            name = _module_name(module.operation)
            unproven = self._unproven(*meaning) if meaning is not None and exc is None else []
            if unproven:
                # the 32-bit program may compute these integers differently than its x64 meaning
                result = ModuleResult(name, platform, "rewritten", unproven)
            elif report is None and exc is None and handled:
                result = ModuleResult(name, platform, "passed", [])
            else:
                findings = find_64bit(module)
                if exc is not None:
                    handlings = _refusal_handlings(findings, exc)
                    status = "refused"
                elif report is not None:
                    handlings = _report_handlings(findings, report)
                    status = "rewritten"
                else:  # not the hook's (mode off): the backend gets its 64-bit values
                    handlings = [Handling.EXACT] * len(findings)
                    status = "passed"
                result = ModuleResult(name, platform, status,
                                      _values(module, findings, handlings, _stack_site())
                                      if status != "passed" else [],
                                      _one_line(exc) if exc is not None else None, exc,
                                      emulated=getattr(report, "values_emulated", 0) or 0)
            # the x64 meaning's hints where it was judged, else the module's own
            judged = meaning[1] if meaning is not None else report
            result.float_hints = list(getattr(judged, "float_hints", []) or [])
        except Exception as problem:  # noqa: BLE001 - recording must never break the program
            result = ModuleResult("<module>", platform, "passed", [], f"(not analysed: {problem})")
        with self._lock:
            self._count += 1
            result.order = self._count
            self.results.append(result)
            count = self._count
        if self.progress is not None:
            self.progress(count)


# --------------------------------------------------------------------------- the report


@dataclasses.dataclass
class ModuleAudit:
    """One compiled module.

    ``status`` is ``"passed"`` (no 64-bit value: the backend gets it as it
    is), ``"rewritten"`` (no64 removes every 64-bit value; ``handlings``
    counts how, and ``how`` sums it up: one of :data:`MODULE_HOW`) or
    ``"refused"`` (``refusal`` says why); ``compiles`` counts identical
    compilations.
    """

    name: str
    platform: str
    compiles: int
    values: int
    status: str
    refusal: str | None = None
    handlings: dict[str, int] = dataclasses.field(default_factory=dict)
    how: str | None = None

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
class Cause:
    """One root cause, once, with the user's line: ``kind`` (one of
    :data:`CAUSE_KINDS`), the worst ``handling`` of its values, the line
    (``file``/``line``, ``None`` when no user frame was found), ``via`` and
    a one-line ``message``; ``count`` values (or events) in ``modules``."""

    kind: str
    handling: Handling
    file: str | None
    line: int | None
    via: str | None
    message: str
    count: int = 0
    modules: list[str] = dataclasses.field(default_factory=list)

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
class HostNarrowing:
    """A host value no64 narrowed (one :func:`no64.host_records` entry)."""

    kind: str
    file: str | None
    line: int | None
    detail: str
    count: int

    @property
    def source(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    @property
    def handling(self) -> Handling:
        return Handling.of_event(EventKind(self.kind))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        d["handling"] = self.handling
        return d


@dataclasses.dataclass
class AuditReport:
    """What an audit found.

    ``view`` is ``"hook"`` (what the compile hook did while the program ran
    under it) or ``"as-is"`` (the modules the program compiles on its own, as
    no64 would handle them); ``causes`` come first, ``groups`` give the
    values per primitive, line and handling, ``host`` the host values no64
    narrowed.  ``exit_status`` is the program's (``None`` for :func:`audit`).
    """

    modules: list[ModuleAudit] = dataclasses.field(default_factory=list)
    groups: list[Group] = dataclasses.field(default_factory=list)
    causes: list[Cause] = dataclasses.field(default_factory=list)
    host: list[HostNarrowing] = dataclasses.field(default_factory=list)
    program: str | None = None
    exit_status: int | None = None
    view: str = AS_IS
    platforms: list[str] = dataclasses.field(default_factory=list)
    mode: str | None = None
    integer_policy: str | None = None
    policy: str | None = None

    @property
    def values(self) -> int:
        return sum(g.count for g in self.groups)

    def failing(self, fail_on: str = "refused") -> list[Cause]:
        """The causes whose handling ``fail_on`` (a key of :data:`FAIL_ON`) fails on."""
        levels = FailOn.parse(fail_on, "fail_on").handlings
        return [c for c in self.causes if c.handling in levels]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data, valid against :data:`AUDIT_JSON_SCHEMA`."""
        return {
            "version": SCHEMA_VERSION,
            "tool": {"name": "no64", "version": __version__},
            "program": self.program,
            "view": self.view,
            "platforms": list(self.platforms),
            "mode": self.mode,
            "integer_policy": self.integer_policy,
            "policy": self.policy,
            "exit_status": self.exit_status,
            "values": self.values,
            "causes": [c.to_dict() for c in self.causes],
            "host": [h.to_dict() for h in self.host],
            "modules": [m.to_dict() for m in self.modules],
            "groups": [g.to_dict() for g in self.groups],
        }

    def to_sarif(self) -> dict[str, Any]:
        """The report as a SARIF 2.1.0 log: one result per cause."""
        rules = [
            {
                "id": f"no64/{kind}",
                "name": kind.title().replace("-", ""),
                "shortDescription": {"text": _CAUSE_DESCRIPTION[kind]},
            }
            for kind in CAUSE_KINDS
        ]
        results = []
        for c in self.causes:
            result: dict[str, Any] = {
                "ruleId": f"no64/{c.kind}",
                "ruleIndex": CAUSE_KINDS.index(c.kind),
                "level": c.handling.sarif_level,
                "message": {"text": c.message},
                "properties": {
                    "handling": str(c.handling),
                    "count": c.count,
                    "modules": list(c.modules),
                    "via": c.via,
                    "view": self.view,
                },
            }
            if c.file is not None:
                region = {"startLine": c.line} if c.line is not None and c.line > 0 else {}
                result["locations"] = [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(c.file)},
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

    def headline(self) -> str:
        n = len(self.modules)
        by = {s: sum(1 for m in self.modules if m.status == s) for s in ("passed", "rewritten", "refused")}
        if self.view == HOOK:
            plats = ",".join(self.platforms)
            head = f"no64 audit of {self.program or 'the program'} as NO64_PLATFORMS={plats} runs it"
            chosen = [f"NO64_{name.upper()}={value}" for name, value, default in (
                ("mode", self.mode, Mode.FIX), ("integer_policy", self.integer_policy, IntegerPolicy.ERROR),
                ("policy", self.policy, RangePolicy.DEFAULT)) if value and value != default]
            if chosen:
                head += f" ({', '.join(chosen)})"
        else:
            head = f"no64 audit of {self.program or 'the program'} as is (its own x64 setting; no hook)"
        parts = [f"{n} module{'s' if n != 1 else ''} compiled"]
        verb = {"passed": "passed through", "rewritten": "rewritten", "refused": "refused"}
        if self.view == AS_IS:
            verb = {"passed": "without 64-bit values", "rewritten": "would be rewritten",
                    "refused": "would be refused"}
        for s in ("passed", "rewritten", "refused"):
            if not by[s]:
                continue
            part = f"{by[s]} {verb[s]}"
            if s == "rewritten":
                hows = collections.Counter(m.how for m in self.modules if m.status == s)
                part += " (" + ", ".join(f"{hows[h]} {h}" for h in MODULE_HOW if hows[h]) + ")"
            parts.append(part)
        if self.host:
            k = sum(h.count for h in self.host)
            parts.append(f"{k} host value{'s' if k != 1 else ''} narrowed")
        return f"{head}: " + ", ".join(parts)

    def format_text(self, color: bool = False, verbose: bool = False, limit: int = 20) -> str:
        """Causes first, one line each (``limit`` of them unless ``verbose``);
        with ``verbose``, the values per primitive, line and handling and the
        modules too.  ANSI colours when ``color``."""
        lines = [self.headline()]
        if not self.causes:
            lines.append("  no 64-bit values and no narrowed host values")
        shown = self.causes if verbose else self.causes[:limit]
        for c in shown:
            line = f"  {c.message}"
            if color:
                code = {"error": "31", "warning": "33"}.get(c.handling.sarif_level, "")
                if code:
                    line = f"\x1b[{code}m{line}\x1b[0m"
            lines.append(line)
        if len(shown) < len(self.causes):
            rest = self.causes[len(shown):]
            kinds = sorted({str(c.handling) for c in rest})
            lines.append(f"  ... and {len(rest)} more ({', '.join(kinds)}): --verbose lists them")
        if verbose and self.groups:
            lines.append("values, per primitive, line and handling:")
            rows = [("handling", "values", "types", "primitive", "source", "via")]
            for g in self.groups:
                types = ",".join(sorted(g.element_types))
                rows.append((g.handling, str(g.count), types, g.primitive, g.source or "-", g.via or ""))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
            for row in rows:
                cells = [c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]
                lines.append("  " + "  ".join(cells).rstrip())
        if verbose and self.modules:
            lines.append("modules:")
            for m in self.modules:
                how = ", ".join(f"{n} {h}" for h, n in m.handlings.items())
                extra = f" ({how})" if how else ""
                times = f" x{m.compiles}" if m.compiles > 1 else ""
                lines.append(f"  {m.status:9} {m.name} ({m.platform}){times}{extra}")
        return "\n".join(lines) + "\n"


#: How a module was rewritten, from harmless to worst: its worst value's
#: handling, in these words.
MODULE_HOW = ("exact", "sentinel", "emulated", "precision-reduced", "unproven", "overflow")
_HOW_OF = {
    Handling.EXACT: "exact", Handling.REWRITTEN: "exact", Handling.SENTINEL: "sentinel",
    Handling.EMULATED: "emulated", Handling.FLOAT32: "precision-reduced",
    Handling.ROUNDED: "precision-reduced", Handling.PRECISION_REDUCED: "precision-reduced",
    Handling.UNPROVEN: "unproven", Handling.OVERFLOW: "overflow",
}


def _module_how(r: ModuleResult) -> str | None:
    """How a rewritten module was rewritten (one of :data:`MODULE_HOW`)."""
    if r.status != "rewritten":
        return None
    worst = max((v.handling for v in r.values), key=lambda h: h.rank, default=Handling.EXACT)
    if r.emulated and worst.rank < Handling.EMULATED.rank:
        worst = Handling.EMULATED  # the report says so even where no value record does
    return _HOW_OF.get(worst, "exact")


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return p.as_uri()
    return p.as_posix()


def _hint(primitive: str, handling: Handling, elem: str, op: str, site: Site,
          refusal: str | None) -> str:
    """What no64 does with such a value, and what to do about it; where the
    user's line (or the library line it came through) names a 64-bit dtype,
    that it was requested explicitly."""
    if handling is Handling.REFUSED:
        return refusal or "no64 refuses this op"
    if handling is Handling.BLOCKED:
        return "no64 refuses this module because of another value (see refused)"
    how = _how_hint(primitive, handling, op)
    named = site.names_64bit() if elem in _DTYPE_NAMES else None
    if named == "here":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.source}"
    if named == "via":
        return f"{how}; {_DTYPE_NAMES[elem]} requested explicitly at {site.via} (via)"
    return how


_DTYPE_NAMES = {"i64": "int64", "si64": "int64", "ui64": "uint64", "f64": "float64",
                "complex<f64>": "complex128"}


def _how_hint(primitive: str, handling: Handling, op: str) -> str:
    if handling is Handling.EMULATED:
        return _DESCRIPTION[handling]
    # what the op registry says about the op (or the op JAX's primitive lowers to)
    hint = spec_of(op).hint or spec_of(f"stablehlo.{primitive}").hint
    if hint is not None:
        return hint
    if primitive in _RANDOM_PRIMITIVES:
        return "threefry counters: rewritten exactly"
    if primitive.startswith("<function"):
        if handling is Handling.UNPROVEN:
            return "64-bit integer inputs of unknown range: pass int32 arrays, or declare input ranges (no64 convert --range)"
        what = "inputs" if "argument" in primitive else "outputs"
        return f"64-bit {what} of the compiled function: the caller passes or receives 64-bit arrays"
    if handling is Handling.UNPROVEN:
        return ("range not provable within 32 bits: NO64_POLICY=exact computes it exactly in 32-bit "
                "word pairs; or use int32, or declare input ranges (no64 convert --range)")
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


def _way_out(exc: BaseException | None, refusal: str | None) -> str:
    if isinstance(exc, Boundary64BitError):
        return "trace it with x64 off, or pass 64-bit host data through no64.jit"
    if isinstance(exc, Remaining64BitError):
        return "NO64_MODE=fix rewrites such modules instead of refusing them"
    if isinstance(exc, OutputRangeError):
        return ('no64.jit(..., policy="exact", restore_dtypes=True) returns it as int64 on the host; '
                "or keep the result in int32's range")
    if isinstance(exc, NarrowingError):
        return ("NO64_POLICY=exact computes such integers exactly in 32-bit word pairs; "
                "or keep the value in int32's range")
    if isinstance(exc, ConstantRangeError):
        return ("keep the value in int32's range or use INT64_MAX/INT64_MIN as a sentinel; "
                "NO64_INTEGER_POLICY=saturate or wrap narrows it anyway")
    if isinstance(exc, UnsupportedOpError) or (refusal and "refuses" in refusal):
        return "compute it in 32 bits (uint32 keys, int32 arithmetic) or keep it off the device"
    return "compute it in 32 bits"


def _reason(refusal: str | None, exc: BaseException | None = None) -> str:
    """The reason for a refusal, in one line of at most 200 characters."""
    text = getattr(exc, "reason", None) or getattr(exc, "detail", None)
    if text is None and exc is not None:
        text = str(exc).split("\n", 1)[0]  # the first line says what; the rest lists values
        if isinstance(exc, NarrowingError):
            # the op and its location are said by the cause; the hint by the way out
            text = text.removeprefix(f"{exc.op} at {exc.location}: ").split("); ", 1)[0] + ")"
    text = " ".join(str(text or refusal or "no64 refuses this module").split())
    text = re.sub(r"^no64(?: \(mode '\w+'\))? refuses [^:]*: ", "", text).rstrip(".:")
    return text if len(text) <= 200 else text[:197] + "..."


def build_report(results: Sequence[ModuleResult], *, program: str | None = None, view: str = AS_IS,
                 x64: Sequence[X64Event] = (), dtypes: Sequence[DtypeEvent] = (),
                 host: Sequence[Any] = (), crash: BaseException | None = None,
                 platforms: Sequence[str] = (), mode: str | None = None,
                 integer_policy: str | None = None, policy: str | None = None,
                 x64_kept: bool = False) -> AuditReport:
    """An :class:`AuditReport` from what was recorded: module results, x64
    events, truncated explicit dtypes, host records (:func:`no64.host_records`)
    and the exception the program ended with, if any; ``x64_kept``: the hook
    left x64 on (``NO64_MODE=off``, a default backend it does not protect)."""
    report = AuditReport(program=program, view=view, platforms=list(platforms), mode=mode,
                         integer_policy=integer_policy, policy=policy)
    # modules: identical results count as one module compiled several times
    merged: dict[tuple[Any, ...], ModuleAudit] = {}
    for r in results:
        hist: dict[str, int] = {}
        for v in r.values:
            hist[str(v.handling)] = hist.get(str(v.handling), 0) + 1
        how = _module_how(r)
        key = (r.name, r.platform, r.status, r.refusal, tuple(sorted(hist.items())), how)
        compiles = getattr(r, "compiles", 1)
        if key in merged:
            merged[key].compiles += compiles
            continue
        merged[key] = ModuleAudit(r.name, r.platform, compiles, len(r.values), r.status, r.refusal,
                                  dict(sorted(hist.items(), key=lambda kv: Handling(kv[0]).rank)), how)
    report.modules = list(merged.values())
    # groups: values per primitive, user line and handling
    groups: dict[tuple[Any, ...], Group] = {}
    for r in results:
        for v in r.values:
            key = (v.primitive, v.site.file, v.site.line, v.handling)
            g = groups.get(key)
            if g is None:
                hint = _hint(v.primitive, v.handling, v.element, v.op, v.site, _reason(r.refusal))
                g = groups[key] = Group(v.primitive, v.site.file, v.site.line, v.handling, hint,
                                        via=v.site.via)
            g.count += 1
            g.element_types[v.element] = g.element_types.get(v.element, 0) + 1
            g.ops[v.op] = g.ops.get(v.op, 0) + 1
            if r.name not in g.modules:
                g.modules.append(r.name)
    report.groups = sorted(
        groups.values(), key=lambda g: (-g.handling.rank, g.file or "~", g.line or 0, g.primitive)
    )
    report.host = [
        HostNarrowing(str(e.kind), _relative(e.location.file) if e.location.file else None,
                      e.location.line, e.detail, e.count)
        for e in host
    ]
    report.causes = _causes(report, results, view, x64, dtypes, crash, x64_kept)
    return report


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _causes(report: AuditReport, results: Sequence[ModuleResult], view: str,
            x64: Sequence[X64Event], dtypes: Sequence[DtypeEvent],
            crash: BaseException | None, x64_kept: bool = False) -> list[Cause]:
    causes: list[Cause] = []
    # x64: each place it was turned on, once
    seen_x64: set[Any] = set()
    for e in x64:
        key = e.environment or e.site
        if key in seen_x64:
            continue
        seen_x64.add(key)
        after = list(dict.fromkeys(r.name for r in results if r.order > e.modules_before))
        after_results = [r for r in results if r.order > e.modules_before]
        if e.environment:
            where = f"by the environment ({e.environment})"
        else:
            where = e.site.where() + (f" (via {e.site.via})" if e.site.via else "")
        if view == HOOK and x64_kept:
            why = ", NO64_MODE=off" if report.mode == Mode.OFF else ""
            text = (f"x64 turned on {where} (no64 left it on{why}: {_plural(len(after), 'module')} "
                    "compiled after it reach the backend unchanged)")
            handling = Handling.EXACT
        elif view == HOOK:
            parts = [f"{_plural(len(after), 'module')} compiled after it are 32-bit"]
            if dtypes:
                parts.append(f"{_plural(sum(d.count for d in dtypes), 'explicit 64-bit dtype')} became 32-bit")
            if report.host:
                parts.append(f"{_plural(sum(h.count for h in report.host), 'host value')} narrowed")
            text = f"x64 turned on {where} (no64 turned it off: {'; '.join(parts)})"
            handling = Handling.EXACT
        else:
            n = sum(len(r.values) for r in after_results)
            mods = len({r.name for r in after_results if r.values})
            text = (f"x64 turned on {where} ({_plural(n, '64-bit value')} in {_plural(mods, 'module')} "
                    "compiled after it; under the hook no64 turns it off)")
            handling = Handling.FLOAT32 if n else Handling.EXACT
        causes.append(Cause("x64", handling, e.site.file, e.site.line, e.site.via, text,
                            len(after), after[:50]))
    # refusals: per refused module, at the value that is refused
    for r in results:
        if r.status != "refused":
            continue
        culprit = next((v for v in r.values if v.handling is Handling.REFUSED), None)
        site = culprit.site if culprit is not None else _NO_SITE
        prim = f" ({culprit.primitive})" if culprit is not None else ""
        via = f" via {site.via}" if site.via and site.file else ""
        verb = "refused" if view == HOOK else "would be refused"
        text = (f"{verb} {site.where()}{prim}{via} in {r.name}: {_reason(r.refusal, r.error)}; "
                f"way out: {_way_out(r.error, r.refusal)}")
        causes.append(Cause("refused", Handling.REFUSED, site.file, site.line, site.via, text,
                            len(r.values), [r.name]))
    if isinstance(crash, No64Error) and not any(r.error is crash for r in results):
        loc = getattr(crash, "location", None)
        file = _relative(loc.file) if loc is not None and loc.file else None
        line = loc.line if loc is not None else None
        site = Site(file, line)
        text = f"refused {site.where()}: {_reason(_one_line(crash))}; way out: {_way_out(crash, None)}"
        causes.append(Cause("refused", Handling.REFUSED, file, line, None, text, 1, []))
    # explicit 64-bit dtypes JAX truncated (x64 off)
    for d in dtypes:
        via = f" via {d.site.via}" if d.site.via else ""
        if d.by_no64:
            how = f"no64 converts the data to {d.became}, each value checked"
        else:
            how = f"JAX makes it {d.became} (x64 is off)"
        text = f"{d.requested} requested explicitly {d.site.where()} (in {d.function}{via}): {how}"
        causes.append(Cause("explicit-dtype", Handling.EXACT, d.site.file, d.site.line, d.site.via,
                            text, d.count))
    # values: random draws per line, everything else per line
    def drawn(v: Value) -> bool:
        return v.primitive in _RANDOM_PRIMITIVES or (v.site.via or "").startswith("jax.random.")

    # lines that draw random bits: their other exact ui64 values (counter
    # constants) belong to the draw
    random_lines = {(v.site.file, v.site.line) for r in results for v in r.values if drawn(v)}
    by_key: dict[tuple[Any, ...], list[tuple[ModuleResult, Value]]] = {}
    for r in results:
        if r.status == "refused":
            continue  # said above
        for v in r.values:
            rng = drawn(v) or (
                (v.site.file, v.site.line) in random_lines and v.element == "ui64"
                and v.handling.rank <= Handling.REWRITTEN.rank
            )
            key = ("random", v.site.file, v.site.line) if rng else (
                "value", v.site.file, v.site.line, v.site.via if v.site.file is None else None)
            by_key.setdefault(key, []).append((r, v))
    for key, items in by_key.items():
        values = [v for _, v in items]
        modules = list(dict.fromkeys(r.name for r, _ in items))
        worst = max((v.handling for v in values), key=lambda h: h.rank)
        site = values[0].site
        if key[0] == "random":
            names = [v.site.via for v in values if (v.site.via or "").startswith("jax.random.")]
            # the function the user called: the most frequent public name;
            # through a library, the JAX function the library called
            if names:
                what = max(dict.fromkeys(names), key=names.count)
            else:
                inner = [v.helper for v in values if v.helper]
                name = max(dict.fromkeys(inner), key=inner.count) if inner else None
                if site.via:
                    what = f"{name} via {site.via}" if name else f"via {site.via}"
                else:
                    what = name or values[0].primitive
            rbg = any(v.primitive == "rng_bit_generator" for v in values)
            if worst is Handling.PRECISION_REDUCED:
                how = "f64 random floats drawn from 32-bit words (precision reduced)"
            elif worst.rank > Handling.REWRITTEN.rank:
                how = f"{worst} ({_DESCRIPTION[worst]})"
            elif rbg:
                how = "rbg state rewritten exactly (ThreeFry/Philox in 32-bit words)"
            else:
                how = "counters rewritten exactly"
            where = site.where() if site.file is not None else "with no line in your code"
            text = f"random bits drawn {where} ({what}): {how}"
            causes.append(Cause("random", worst, site.file, site.line, site.via, text, len(values), modules))
            continue
        prims = sorted({v.primitive for v in values})
        elems = sorted({v.element for v in values})
        first = next(v for v in values if v.handling is worst)
        hint = _hint(first.primitive, worst, first.element, first.op, first.site, None)
        via = f" via {site.via}" if site.via and site.file else ""
        where = site.where() if site.file is not None or site.via else (
            f"in the inputs/outputs of {', '.join(modules[:3])}{' ...' if len(modules) > 3 else ''} "
            "(no line in your code)")
        counts = collections.Counter(v.handling for v in values)
        split = "" if len(counts) == 1 else " (" + ", ".join(
            f"{counts[h]} {h}" for h in sorted(counts, key=lambda h: -h.rank)) + ")"
        text = (f"{worst} {where}{via}: {_plural(len(values), ','.join(elems) + ' value')} "
                f"from {', '.join(prims[:4])}{' ...' if len(prims) > 4 else ''}{split}: {hint}")
        causes.append(Cause("value", worst, site.file, site.line, site.via, text, len(values), modules))
    # float64 results that f32 changes (the pass's float hints), per line and kind
    floats: dict[tuple[Any, ...], list[tuple[ModuleResult, Any]]] = {}
    for r in results:
        for fh in r.float_hints:
            file = _relative(fh.location.file) if fh.location.file is not None else None
            floats.setdefault((file, fh.location.line, fh.kind), []).append((r, fh))
    for (file, line, kind), items in floats.items():
        fh = items[0][1]
        where = f"at {file}:{line}" if file is not None else "with no line in your code"
        text = f"float64 {kind} {where}: {fh.detail}"
        causes.append(Cause("float", Handling.PRECISION_REDUCED, file, line, None, text, len(items),
                            list(dict.fromkeys(r.name for r, _ in items))))
    # host values no64 narrowed
    for h in report.host:
        where = f"at {h.source}" if h.source else "with no source line"
        name = {"sentinel": "host sentinel", "float-inexact": "host float64 value(s)",
                "float-overflow": "host float64 value(s)"}.get(h.kind, f"host value ({h.kind})")
        text = f"{name} {where} {h.detail} ({_plural(h.count, 'element')})"
        causes.append(Cause("host", h.handling, h.file, h.line, None, text, h.count))

    def order(c: Cause) -> tuple[Any, ...]:
        first = 0 if c.kind == "x64" else 1
        return (first, -c.handling.rank, CAUSE_KINDS.index(c.kind), c.file or "~", c.line or 0)

    return sorted(causes, key=order)


def analyze(compiled: Sequence[Compiled], *, program: str | None = None) -> AuditReport:
    """Explain recorded modules as no64 would handle them (the as-is view)."""
    return build_report(_explain(compiled), program=program, view=AS_IS)


def audit(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> AuditReport:
    """Audit one function: lower ``jax.jit(fun)`` for ``args``/``kwargs`` and
    explain every 64-bit value of its module (nothing is compiled or run)."""
    import jax

    lowered = jax.jit(fun).lower(*args, **kwargs)
    module = lowered.compiler_ir("stablehlo")
    op = module.operation
    platform = jax.default_backend()
    text = op.get_asm(enable_debug_info=True)
    return analyze([Compiled(_module_name(op), platform, text)], program=getattr(fun, "__qualname__", None))


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


def _run(target: str, args: Sequence[str], module: bool) -> tuple[int, BaseException | None]:
    """Run the program; its exit status and the exception it ended with."""
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
        return _exit_status(exc), None
    except KeyboardInterrupt as exc:
        _print_exception(exc)
        return 130, exc
    except BaseException as exc:  # noqa: BLE001 - the program's own crash
        _print_exception(exc)
        return 1, exc
    return 0, None


def run_program(target: str, args: Sequence[str], *, module: bool = False,
                platform: str | None = None, progress: TextIO | None = None,
                as_is: bool = False) -> AuditReport:
    """Run a script (or ``-m`` module) in this process as ``python`` would;
    returns the report with ``exit_status`` set.

    By default the program runs as ``NO64_PLATFORMS=platform`` would run it
    (``platform`` defaults to ``$NO64_PLATFORMS``, else the backend the
    program runs on here) and the report says what the hook did.  With
    ``as_is`` it runs unchanged and ``platform`` only restricts the modules
    recorded.  The program's output is not touched; an exception it raises
    is printed as Python prints it and gives exit status 1.  With
    ``progress`` (a terminal stream), a status line counts the compiled
    modules while the program runs and is erased before the report.
    """
    line = Progress(progress) if progress is not None else None
    observed = line.observed if line is not None else None
    if as_is:
        x64: list[X64Event] = []
        with Observer(platform, observed) as obs, _X64Watch(x64, lambda: len(obs.modules)):
            status, crash = _run(target, args, module)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        if line is not None:
            line.show(f"no64 audit: analysing {len(obs.modules)} module(s)")
        try:
            report = build_report(_explain(obs.modules), program=target, view=AS_IS, x64=x64,
                                  crash=crash)
        finally:
            if line is not None:
                line.clear()
        report.exit_status = status
        return report
    from . import host

    label = platform or os.environ.get("NO64_PLATFORMS", "").strip()
    with Predictor(label, progress=observed) as pred:
        status, crash = _run(target, args, module)
        records = host.host_records()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if line is not None:
        line.show(f"no64 audit: analysing {len(pred.results)} module(s)")
    platforms = sorted(pred.platforms)
    if not label:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            import jax

            platforms = [jax.default_backend()]
    report = build_report(pred.results, program=target, view=HOOK, x64=pred.x64, dtypes=pred.dtypes,
                          host=records, crash=crash, platforms=platforms, mode=str(Mode(pred.mode)),
                          integer_policy=str(IntegerPolicy(pred.integer_policy)),
                          # the range policy the hook's pass uses (its Config's, else the pass's default)
                          policy=str(RangePolicy(pred.settings.get("policy", RangePolicy.DEFAULT))),
                          x64_kept=pred.x64_kept)
    if line is not None:
        line.clear()
    report.exit_status = status
    return report


class _X64Watch:
    """Where x64 is turned on while a program runs as is; ``count`` says how
    many modules were compiled so far."""

    def __init__(self, sink: list[X64Event], count: Callable[[], int]) -> None:
        self.sink = sink
        self.count = count

    def __enter__(self) -> "_X64Watch":
        from jax._src import config as jax_config

        state = jax_config.enable_x64
        if state.get_global():
            env = os.environ.get("JAX_ENABLE_X64")
            self.sink.append(X64Event(_NO_SITE, f"JAX_ENABLE_X64={env}" if env else "jax_enable_x64", 0))
        self._previous = previous = state._update_global_hook
        self._active = True

        def hook(value: Any) -> None:
            if value and self._active:
                try:
                    self.sink.append(X64Event(_stack_site(), None, self.count()))
                except Exception:  # noqa: BLE001 - watching must never break the program
                    pass
            if previous is not None:
                previous(value)

        state._update_global_hook = self._hook = hook
        return self

    def __exit__(self, *exc: Any) -> None:
        self._active = False
        _unchain_x64_hook(self._hook, self._previous)


def _unchain_x64_hook(ours: Any, previous: Any) -> None:
    """Take the audit's watch off ``jax_enable_x64``'s update hook: put back
    the hook it replaced if it is still on top; if something chained onto it
    meanwhile (the compile hook's x64 guard, installed when no64 was first
    activated inside the watch), the watch stays in the chain, switched off,
    so that the later hook keeps working."""
    from jax._src import config as jax_config

    state = jax_config.enable_x64
    if state._update_global_hook is ours:
        state._update_global_hook = previous


def write_report(report: AuditReport, fmt: str, stream: TextIO, color: bool = False,
                 verbose: bool = False) -> None:
    """Write ``report`` as ``"text"``, ``"json"`` or ``"sarif"``."""
    if fmt == "json":
        stream.write(json.dumps(report.to_dict(), indent=2) + "\n")
    elif fmt == "sarif":
        stream.write(json.dumps(report.to_sarif(), indent=2) + "\n")
    else:
        stream.write(report.format_text(color, verbose=verbose))
    stream.flush()


_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(properties), "additionalProperties": False,
            "properties": properties}


#: JSON Schema (draft 2020-12) of ``no64 audit --json`` / :meth:`AuditReport.to_dict`.
AUDIT_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "no64 audit report",
    **_object({
        "version": {"const": SCHEMA_VERSION},
        "tool": {
            "type": "object",
            "required": ["name", "version"],
            "properties": {"name": {"const": "no64"}, "version": {"type": "string"}},
        },
        "program": _NULLABLE_STR,
        "view": {"enum": [HOOK, AS_IS]},
        "platforms": {"type": "array", "items": {"type": "string"}},
        "mode": {"enum": [*Mode.values(), None]},
        "integer_policy": {"enum": [*IntegerPolicy.values(), None]},
        "policy": {"enum": [*RangePolicy.values(), None]},
        "exit_status": _NULLABLE_INT,
        "values": {"type": "integer", "minimum": 0},
        "causes": {
            "type": "array",
            "items": _object({
                "kind": {"enum": list(CAUSE_KINDS)},
                "handling": {"enum": list(HANDLINGS)},
                "file": _NULLABLE_STR,
                "line": _NULLABLE_INT,
                "source": _NULLABLE_STR,
                "via": _NULLABLE_STR,
                "message": {"type": "string"},
                "count": {"type": "integer", "minimum": 0},
                "modules": {"type": "array", "items": {"type": "string"}},
            }),
        },
        "host": {
            "type": "array",
            "items": _object({
                "kind": {"enum": list(EventKind.values())},
                "handling": {"enum": list(HANDLINGS)},
                "file": _NULLABLE_STR,
                "line": _NULLABLE_INT,
                "source": _NULLABLE_STR,
                "detail": {"type": "string"},
                "count": {"type": "integer", "minimum": 0},
            }),
        },
        "modules": {
            "type": "array",
            "items": _object({
                "name": {"type": "string"},
                "platform": {"type": "string"},
                "compiles": {"type": "integer", "minimum": 1},
                "values": {"type": "integer", "minimum": 0},
                "status": {"enum": ["passed", "rewritten", "refused"]},
                "refusal": _NULLABLE_STR,
                "handlings": _COUNTS,
                "how": {"enum": [*MODULE_HOW, None]},
            }),
        },
        "groups": {
            "type": "array",
            "items": _object({
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
            }),
        },
    }),
}
