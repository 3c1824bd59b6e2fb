"""Attribution of lines: where a 64-bit value or an event comes from in the
user's code.

Every value is attributed to the innermost frame of the user's code: the
op's own call-site location, or, for ops inside JAX's jitted helpers
(``jax.random.normal`` and the like, lowered as private functions without a
source line), the call sites of the function holding it, followed outwards
until a user frame is found (:class:`CallGraph`); the library function or
frame it came through is given as ``via`` (:class:`Site`).  Events seen
while the program runs (x64 turned on, an explicit dtype) are attributed to
the Python stack (:func:`_stack_site`).
"""

from __future__ import annotations

import dataclasses
import io
import linecache
import os
import re
import runpy
import sys
import sysconfig
import tokenize
from typing import Any, ClassVar

from ...ir._mlir import ir
from ...ir.locations import relative_path
from ...ir.types import TypeConverter
from ...rules import spec_of
from ...spec.walk import entry_name
from ...transforms.scan import all_ops
from .. import intent

__all__ = ["AtSource", "CallGraph", "Site", "relative_path", "source_text"]


def source_text(file: str | None, line: int | None) -> str | None:
    """``"file:line"`` (``"file"`` without a line; ``None`` without a file):
    how every record of the audit names its source."""
    if file is None:
        return None
    return f"{file}:{line}" if line is not None else file


class AtSource:
    """A record of the audit (a dataclass) at a ``file`` and ``line`` of the
    user's code: named by its :attr:`source`, which its JSON holds beside
    its fields."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    file: str | None
    line: int | None

    @property
    def source(self) -> str | None:
        return source_text(self.file, self.line)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["source"] = self.source
        return d

# A location frame: an optional function name, then "file":line:col.
_FRAME = re.compile(r'(?:"((?:[^"\\]|\\.)*)"\()?"((?:[^"\\]|\\.)+)":(\d+):(\d+)')
_NAMES_64BIT = re.compile(r"\b(?:(?P<integer>u?int64|u?longlong)|(?P<float>float64|double)|(?P<complex>complex128))\b")
#: The kind of dtype name (a group of ``_NAMES_64BIT``) of each 64-bit element type.
_ELEMENT_KINDS = {"i64": "integer", "si64": "integer", "ui64": "integer", "f64": "float",
                  "complex<f64>": "complex"}
# np.iinfo(np.int64).max names a 64-bit extreme, not a dtype for a value.
_LIMITS = re.compile(r"\b[if]info\([^)]*\)")
# no64 itself (this package is no64/jax/audit)
_OWN_DIR = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))) + os.sep
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
    return relative_path(path)


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
        return source_text(self.file, self.line)

    def where(self) -> str:
        """``at file:line`` (``via ...``), or a plain statement that there is no user frame."""
        if self.file is None:
            return f"with no line in your code (in {self.via})" if self.via else "with no source line"
        return f"at {self.source}"

    def names_64bit(self, element: str | None = None) -> str | None:
        """Where a 64-bit dtype (of ``element``'s kind: ``"i64"``, ``"ui64"``
        an integer one, ``"f64"`` a float one, ``"complex<f64>"`` a complex
        one; ``None``: any) is named: ``"here"`` (the user's line), ``"via"``
        (the library line it came through), or ``None``."""
        kind = _ELEMENT_KINDS.get(element) if element is not None else None
        if self.path is not None and self.line is not None and _line_names_64bit(self.path, self.line, kind):
            return "here"
        if self.via_at is not None and _line_names_64bit(*self.via_at, kind):
            return "via"
        return None


def _line_names_64bit(path: str, line: int, kind: str | None = None) -> bool:
    """Whether the code of a line (not its comments) names a 64-bit dtype
    (of ``kind``, a group of :data:`_NAMES_64BIT`; ``None``: any)."""
    text = linecache.getline(path, line)
    try:
        code = " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                        if t.type != tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement
        code = text.split("#", 1)[0] if "'" not in text and '"' not in text else text
    return any(kind is None or m.lastgroup == kind for m in _NAMES_64BIT.finditer(_LIMITS.sub("", code)))


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
        #: The entry function's name (:func:`no64.spec.walk.entry_name`).
        self.entry: str | None = entry_name(op)
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
            if not spec_of(fn.name).function:
                continue
            caller = ir.StringAttr(fn.attributes["sym_name"]).value
            for inner in all_ops(fn):
                spec = spec_of(inner.name)
                if spec.terminator and spec_of(inner.parent.name).function and caller not in self.returns:
                    self.returns[caller] = str(inner.location)
                if spec.call and "callee" in inner.attributes:
                    callee = ir.FlatSymbolRefAttr(inner.attributes["callee"]).value
                    self.callers.setdefault(callee, []).append((caller, str(inner.location)))
                if spec.constant and holds(inner.results[0].type):
                    user = next(iter(inner.results[0].uses), None)
                    self._constant_users.setdefault((caller, _bare(str(inner.location))), []).append(
                        str(user.owner.location) if user is not None else None)

    def is_entry(self, function: str | None) -> bool:
        """Whether ``function`` names the module's entry function."""
        return function is not None and function == self.entry

    def outer_helper(self, function: str | None) -> str | None:
        """The outermost of JAX's public random functions on the call chain
        from ``function`` out to the entry (``jax.random.bernoulli`` for a
        value in the ``_uniform`` that ``_bernoulli`` calls)."""
        found = None
        seen: set[str] = set()
        while function is not None and not self.is_entry(function) and function not in seen:
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
                return Site(relative_path(path), line, _library_frame(inner) if inner else None,
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
        if function is not None and not self.is_entry(function):
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
            return Site(relative_path(path), frame.f_lineno, via, os.path.abspath(path),
                        (called, called_line) if called else None)
        frame = frame.f_back
    return _NO_SITE


def _compile_site() -> tuple[Site, str | None]:
    """The user's line whose call is compiling a module now
    (:func:`_stack_site`) and the public JAX function it called there
    (``jax.random.normal``: the outermost frame below the user's that is one
    of JAX's public functions, past JAX's own ``jit`` wrappers and no64's),
    if it called one directly."""
    site = _stack_site(2)
    if site.file is None:
        return site, None
    sampler = intent.eager_sampler()
    if sampler is not None:
        return site, sampler
    frame: Any = sys._getframe(1)
    inner: list[Any] = []  # the frames below the user's line, innermost first
    while frame is not None:
        path = frame.f_code.co_filename
        if os.path.abspath(path) == site.path and frame.f_lineno == site.line:
            break
        inner.append(frame)
        frame = frame.f_back
    if frame is None:
        return site, None
    for below in reversed(inner):
        path = below.f_code.co_filename
        if _is_own(path):
            continue  # no64's wrappers (an eager sampler's jit) stand aside
        if not _is_jax(path):
            return site, None  # a library or the user's code: not a direct call
        name = _public_name(below)
        if name is not None:
            return site, name
    return site, None


#: JAX's public namespaces a compiling call is named in, outermost first.
_PUBLIC = ("jax.random", "jax.nn", "jax.numpy", "jax.lax")


def _public_name(frame: Any) -> str | None:
    """``jax.random.normal`` for a frame running that function's code."""
    module = frame.f_globals.get("__name__", "")
    if not module.startswith("jax."):
        return None
    code = frame.f_code
    name: str = code.co_name
    for public in _PUBLIC:
        if not (module.startswith(public.replace("jax.", "jax._src.", 1)) or module.startswith(public)):
            continue
        fun = getattr(sys.modules.get(public), name, None)
        while fun is not None:
            if getattr(fun, "__code__", None) is code:
                return f"{public}.{name}"
            fun = getattr(fun, "__wrapped__", None)
    return None


def _is_jax(path: str) -> bool:
    short = _short_library(path)
    return short.startswith(("jax/", "jaxlib/", "numpy/", "<frozen")) or path.startswith("<frozen")
