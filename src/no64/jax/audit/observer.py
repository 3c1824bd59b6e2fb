"""The as-is view: the modules a program compiles on its own, explained as
if each were handed to no64 (:class:`Observer`, :func:`_explain`), and
where x64 is turned on meanwhile (:class:`_X64Watch`).  The pytest plugin
uses this view.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...ir._mlir import ir, make_context
from ...transforms.scan import find_64bit
from .._compat import (
    installing,
    internal_function,
    replace_internal_function,
    set_x64_update_hook,
    x64_state,
    x64_update_hook,
)
from .sites import _NO_SITE, Site, _compile_site, _stack_site
from .values import ModuleResult, X64Event, _handlings, _module_name, _one_line, _values

__all__ = ["Compiled", "Observer"]


@dataclasses.dataclass
class Compiled:
    """One module JAX handed to the compiler: its name, platform and text,
    and the user's line whose call compiled it (with the JAX function it
    called there, if any)."""

    name: str
    platform: str
    text: str
    site: Site = _NO_SITE
    called: str | None = None


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
        self._tls = threading.local()
        self._pauses = 0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing compiled in the block is recorded (the measurement of
        ``--numerics`` is not the program's).  The pause is the whole
        process's, not the thread's: JAX may compile in threads of its own,
        while the program's thread waits for the measurement."""
        with self._lock:
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1

    def _wrapper(self, backend: Any, computation: Any, *args: Any, **kwargs: Any) -> Any:
        if self._active and not self._pauses:
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
        site, called = _compile_site()
        with self._lock:
            self.modules.append(Compiled(_module_name(op), platform, text, site, called))
            count = len(self.modules)
        if self.progress is not None:
            self.progress(count)

    def __enter__(self) -> "Observer":
        self._previous = internal_function("compile_or_get_cached")
        with installing("audit-compile"):
            replace_internal_function("compile_or_get_cached", self._wrapper)
        self._active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self._active = False
        if internal_function("compile_or_get_cached") == self._wrapper:
            assert self._previous is not None  # (set before the wrapper went in)
            replace_internal_function("compile_or_get_cached", self._previous)


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
                                      float_hints=hints, compiled_at=c.site, called=c.called)
        seen[key] = result
        results.append(result)
    counts: dict[tuple[str, str], int] = {}
    for c in compiled:
        counts[(c.platform, c.text)] = counts.get((c.platform, c.text), 0) + 1
    for key, result in seen.items():
        result.compiles = counts[key]  # type: ignore[attr-defined]
    return results


class _X64Watch:
    """Where x64 is turned on while a program runs (as is, or under the
    hook's audit); ``count`` says how many modules were compiled so far,
    ``recording`` whether what happens now is recorded (not during a pause)."""

    def __init__(self, sink: list[X64Event], count: Callable[[], int],
                 recording: Callable[[], bool] = lambda: True) -> None:
        self.sink = sink
        self.count = count
        self.recording = recording

    def __enter__(self) -> "_X64Watch":
        state = x64_state()
        if state.get_global():
            env = os.environ.get("JAX_ENABLE_X64")
            self.sink.append(X64Event(_NO_SITE, f"JAX_ENABLE_X64={env}" if env else "jax_enable_x64", 0))
        self._previous = previous = x64_update_hook()
        self._active = True

        def hook(value: Any) -> None:
            if value and self._active and self.recording():
                try:
                    self.sink.append(X64Event(_stack_site(), None, self.count()))
                except Exception:  # noqa: BLE001 - watching must never break the program
                    pass
            if previous is not None:
                previous(value)

        self._hook = hook
        with installing("audit-x64-watch"):
            set_x64_update_hook(hook)
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
    if x64_update_hook() is ours:
        set_x64_update_hook(previous)
