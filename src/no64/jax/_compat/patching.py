"""What the seam changed in JAX, each change with what it replaced, so that it can be put back.

Every reacher of the seam that puts something of no64's in place of something
of JAX's (a module's function, a primitive's implementation, an entry of a
registry, a configuration hook) does it through :func:`replace_attribute` or
:func:`replace_item`, which note the replaced object and where it was in one
journal (:func:`changes`); :func:`restore` puts the originals back, the last
change first.  A change that cannot be undone -- jaxlib's C++ registry of
canonicalisation handlers (from jax 0.10.2) has no removal and cannot be read
back -- is noted too (:func:`note_permanent`), and stays.  Each change is
noted under the interception point being installed (:func:`installing`), the
name :mod:`no64.jax.interception` declares it by, or none where the installer
did not say.
"""

from __future__ import annotations

import dataclasses
import threading
import types
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

#: An attribute or entry that did not exist before the change.
MISSING: Any = object()


@dataclasses.dataclass(frozen=True)
class Change:
    """One change of JAX's: ``target`` the dotted name of what was replaced
    (``jax._src.pjit._infer_params``, ``jax._src.core.pytype_aval_mappings[int]``),
    ``point`` the interception point it was made for (``None``: not said)."""

    target: str
    point: str | None
    kind: str  # "attribute", "item", "permanent" or "exclusion"
    owner: Any = None
    key: Any = None
    original: Any = None
    replacement: Any = None

    def current(self) -> Any:
        """What JAX holds at the target now (:data:`MISSING`: nothing)."""
        if self.kind == "attribute":
            return getattr(self.owner, self.key, MISSING)
        if self.kind == "item":
            return self.owner.get(self.key, MISSING)
        if self.kind == "exclusion":
            return self.key if self.key in self.owner else MISSING
        return self.replacement


_lock = threading.RLock()
_changes: list[Change] = []
_point: list[str | None] = [None]
#: What the seam resets when its changes are undone (a flag saying that a
#: wrapper is in place), run after :func:`restore`.
_on_restore: list[Callable[[], None]] = []


def name_of(owner: Any) -> str:
    """A module's or class's dotted name (another object's class name)."""
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}"
    return type(owner).__name__


@contextmanager
def installing(point: str) -> Iterator[None]:
    """Note the changes made inside under the interception point ``point``."""
    with _lock:
        before = _point[0]
        _point[0] = point
        try:
            yield
        finally:
            _point[0] = before


def _note(change: Change) -> None:
    """Note ``change``; one that puts back what the last change at its place
    replaced undoes that change, and both leave the journal."""
    with _lock:
        for i in range(len(_changes) - 1, -1, -1):
            last = _changes[i]
            if last.kind == change.kind and last.owner is change.owner and last.key == change.key:
                if change.kind in ("attribute", "item") and change.replacement is last.original \
                        and change.original is last.replacement:
                    del _changes[i]
                    return
                break
        _changes.append(change)


def replace_attribute(owner: Any, name: str, new: Any, *, where: str | None = None) -> Any:
    """Set ``owner.name`` to ``new``, noting what it held; returns that
    (:data:`MISSING` where it held nothing).  ``where``: the dotted name of
    ``owner`` when it is neither a module nor a class."""
    original = getattr(owner, name, MISSING)
    with _lock:
        _note(Change(f"{where or name_of(owner)}.{name}", _point[0], "attribute", owner, name, original, new))
        setattr(owner, name, new)
    return original


def replace_item(mapping: MutableMapping[Any, Any], key: Any, new: Any, *, where: str) -> Any:
    """Set ``mapping[key]`` to ``new`` (``where``: the mapping's dotted
    name), noting what it held; returns that (or :data:`MISSING`)."""
    original = mapping.get(key, MISSING)
    with _lock:
        _note(Change(f"{where}[{_key_name(key)}]", _point[0], "item", mapping, key, original, new))
        mapping[key] = new
    return original


def note_exclusion(paths: list[Any], path: Any, *, where: str) -> None:
    """Note that ``path`` was added to JAX's list ``paths`` (removed again on restore)."""
    _note(Change(f"{where}[{path}]", _point[0], "exclusion", paths, path))


def note_permanent(target: str, replacement: Any) -> None:
    """Note a change that cannot be undone (it stays on :func:`restore`)."""
    _note(Change(target, _point[0], "permanent", replacement=replacement))


def on_restore(reset: Callable[[], None]) -> None:
    """Have ``reset()`` run after the changes are undone (once per registration)."""
    with _lock:
        if reset not in _on_restore:
            _on_restore.append(reset)


def changes() -> tuple[Change, ...]:
    """Every change in place, the oldest first."""
    with _lock:
        return tuple(_changes)


def restore() -> tuple[Change, ...]:
    """Put back what every change replaced, the last change first (the
    permanent ones stay in place, and in the journal); returns what was undone."""
    with _lock:
        undone = []
        for change in reversed(_changes):
            if change.kind == "attribute":
                if change.original is MISSING:
                    if hasattr(change.owner, change.key):
                        delattr(change.owner, change.key)
                else:
                    setattr(change.owner, change.key, change.original)
            elif change.kind == "item":
                if change.original is MISSING:
                    change.owner.pop(change.key, None)
                else:
                    change.owner[change.key] = change.original
            elif change.kind == "exclusion":
                while change.key in change.owner:
                    change.owner.remove(change.key)
            else:
                continue
            undone.append(change)
        _changes[:] = [c for c in _changes if c.kind == "permanent"]
        for reset in _on_restore:
            reset()
        return tuple(undone)


def _key_name(key: Any) -> str:
    return key.__name__ if isinstance(key, type) else repr(key)
