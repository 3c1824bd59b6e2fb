"""Decode MLIR locations into the JAX primitive and the user's source line.

JAX lowers each primitive with a location of the form::

    loc("jit(step)/jvp(mul)"(callsite("loss"("model.py":12:8) at "<module>"(...))))

i.e. a name location whose name is the op's scope path (the last component is
the primitive, possibly wrapped in transformation names such as ``jvp(...)``
or ``transpose(...)``) around a call-site stack whose innermost callee is the
user's frame.  Locations from other producers (HLO imports, hand-written
text) decode to whatever part of this they carry; ``raw`` always keeps the
original text.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from ._compat import as_location, location_kind
from ._mlir import ir

_WRAPPER = re.compile(r"^[A-Za-z_][\w.]*\((.*)\)$")


@dataclasses.dataclass(frozen=True)
class SourceLocation:
    """A location decoded for people.

    Attributes:
      primitive: The JAX primitive (``"mul"``, ``"dot_general"``, ...) or the
        last name component of the location, if any.
      scope: The full name path (``"jit(step)/jvp(mul)"``), if any.
      file, line, column: The innermost source position, if any.
      raw: The location as MLIR prints it.
    """

    primitive: str | None
    scope: str | None
    file: str | None
    line: int | None
    column: int | None
    raw: str

    @property
    def source(self) -> str | None:
        """``file:line:column`` (or ``file:line``) when a file is known.

        MLIR counts lines and columns from 1; a 0 is one not known (XLA's
        HLO importer gives column 0 to the ``source_file`` and
        ``source_line`` of HLO metadata) and is left out.
        """
        if self.file is None:
            return None
        text = self.file
        if self.line:
            text += f":{self.line}"
            if self.column:
                text += f":{self.column}"
        return text

    @property
    def known(self) -> bool:
        """Whether the location says anything (MLIR's ``unknown`` does not)."""
        return bool(self.file or self.primitive or self.scope) or self.raw not in ("", "unknown", "loc(unknown)")

    def where(self) -> str:
        """`` at `` and the location for people, the file relative to the
        working directory when it lies below it; ``""`` for an unknown one."""
        if not self.known:
            return ""
        if self.file is None:
            return f" at {self}"
        return f" at {dataclasses.replace(self, file=relative_path(self.file))}"

    def __str__(self) -> str:
        src = self.source
        if self.primitive and src:
            return f"{self.primitive} at {src}"
        if src:
            return src
        if self.primitive:
            return self.primitive
        return self.raw

    def to_dict(self) -> dict[str, Any]:
        """Its fields, and ``text``: the location as it reads (``str``)."""
        d = dataclasses.asdict(self)
        d["text"] = str(self)
        return d


def relative_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else
    as given (the way the audit and the reports name a file)."""
    if os.path.isabs(path):
        try:
            return Path(path).relative_to(Path.cwd()).as_posix()
        except ValueError:
            pass
    return path


def _primitive_of(name: str) -> str:
    last = name.rsplit("/", 1)[-1].strip()
    # Unwrap transformation wrappers: transpose(jvp(mul)) -> mul.
    while True:
        m = _WRAPPER.match(last)
        if not m or not m.group(1):
            break
        last = m.group(1)
    return last.rstrip(":")


def decode_location(loc: ir.Location) -> SourceLocation:
    """Decode an MLIR location (see the module docstring for the shapes handled)."""
    # Diagnostics hand over plain ``Location`` objects: re-create the
    # concrete one so its parts can be read.
    loc = as_location(loc)
    names: list[str] = []
    file_loc: Any = None
    pending: list[Any] = [loc]
    # callers of call sites, read where their callees name no file (an op
    # inlined from a function whose body names none: its call's line)
    callers: list[Any] = []
    seen = 0
    while (pending or file_loc is None and callers) and seen < 64:
        seen += 1
        cur = pending.pop(0) if pending else callers.pop(0)
        kind = location_kind(cur)
        if kind == "name":
            names.append(cur.name_str)
            pending.insert(0, cur.child_loc)
        elif kind == "callsite":
            # The callee is the innermost frame: where the op was built.
            if file_loc is None:
                pending.insert(0, cur.callee)
                callers.append(cur.caller)
        elif kind == "file":
            if file_loc is None:
                file_loc = cur
        elif kind == "fused":
            pending[0:0] = list(cur.locations)
    scope: str | None = None
    primitive: str | None = None
    # The first name that looks like a scope path ("jit(f)/mul") names the
    # primitive; other names (function names of call-site frames, argument
    # names) are kept only when nothing better exists.
    for name in names:
        if "/" in name or scope is None:
            if scope is None or "/" in name and "/" not in scope:
                scope = name
    if scope is not None:
        primitive = _primitive_of(scope) or None
    raw = str(loc)
    if raw.startswith("loc(") and raw.endswith(")"):
        raw = raw[4:-1]
    if file_loc is not None:
        return SourceLocation(
            primitive, scope, file_loc.filename, file_loc.start_line, file_loc.start_col, raw
        )
    return SourceLocation(primitive, scope, None, None, None, raw)


# ---------------------------------------------------------------------------
# Ranges the program declares (no64.assume)
# ---------------------------------------------------------------------------

#: The name scope :func:`no64.assume` wraps around the identity op
#: (``optimization_barrier``) that carries a range the program declares:
#: ``no64.assume[lo,hi]``, so that any producer's locations carry it.
ASSUME_SCOPE = "no64.assume"
_ASSUMED = re.compile(r"(?:^|/)no64\.assume\[(-?\d+),(-?\d+)\]/[^/]*$")


def assume_scope(lo: int, hi: int) -> str:
    """The name scope that declares the range ``[lo, hi]``."""
    return f"{ASSUME_SCOPE}[{int(lo)},{int(hi)}]"


def assumed_range(loc: ir.Location) -> tuple[int, int] | None:
    """The range an op's location declares (its innermost scope is
    :func:`assume_scope`), or ``None``."""
    if ASSUME_SCOPE not in str(loc):
        return None
    scope = decode_location(loc).scope
    m = _ASSUMED.search(scope or "")
    if m is None:
        return None
    lo, hi = int(m.group(1)), int(m.group(2))
    return (lo, hi) if lo <= hi else None

