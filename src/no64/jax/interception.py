"""Every point where no64 puts its own code in place of JAX's, in one list.

:data:`POINTS` names each point: what of JAX's it replaces (the dotted names
the seam's journal gives it, :func:`no64.jax._compat.changes`), who installs
it and how it is undone.  The installers install from the list: a group's
points are put in place by :func:`install`, in the list's order, each under
its name in the journal, with the functions the group's owner supplies for
them (the owner supplies one per point of its group, no more and no fewer).
The seam's own points, the trace's and the audit's are installed by their
owners and recognised in the journal by what they replace.

:func:`uninstall` puts back every original JAX object no64 replaced, the last
change first, except what cannot be undone: jaxlib's C++ registry of
canonicalisation handlers (from jax 0.10.2) has no removal and its entries
cannot be read back, so no64's handlers stay there -- they narrow nothing
while no64 is not active.  The next activation of the compile hook
installs everything again.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ._compat import Change, changes, installing, restore
from .state import STATE

__all__ = ["GROUPS", "POINTS", "Point", "install", "installed", "point_of", "points_table", "uninstall",
           "unlisted"]


@dataclasses.dataclass(frozen=True)
class Point:
    """One interception point: ``replaces``, the dotted names of what it puts
    no64's code in place of, as the seam's journal names them (``*`` stands
    for any text); ``optional``: only some JAX releases have it (the others need
    nothing there)."""

    name: str
    group: str
    replaces: tuple[str, ...]
    what: str
    removed_by: str = "uninstall() restores JAX's original"
    optional: bool = False


#: Who installs each group's points, and when.
GROUPS: dict[str, str] = {
    "seam": "no64.jax._compat as it loads (no64's JAX plugin loads it as JAX makes its backends), and the "
            "configuration states no64.jax.state makes through it",
    "host": "no64.jax.host.install_hooks, at the compile hook's first activation",
    "intent": "no64.jax.intent.install, at the compile hook's first activation",
    "hook": "no64.jax.hook, at its first activation (no64.install, NO64_PLATFORMS, no64.jit)",
    "trace": "no64.jax._compat.traced_constant_sources, at the first x64 trace of a jit call",
    "measure": "no64.jax.audit.measure.install, at an audit's float measurement (and the pytest plugin's)",
    "audit": "no64.jax.audit's Observer and Predictor, as an audit starts",
}

_NUMPY = ("jax.numpy.*", "jax._src.numpy.*")


def _numpy(name: str) -> tuple[str, ...]:
    """A function of ``jax.numpy`` where JAX binds it."""
    return (f"jax.numpy.{name}", f"jax._src.numpy.*.{name}")


#: Every interception point, in the order each group installs them.
POINTS: tuple[Point, ...] = (
    Point("cpu-compiler", "seam", ("jax._src.xla_bridge._backend_factories['cpu']",),
          "JAX's CPU backend factory, made without LLVM's loop hash recognition"),
    Point("trace-context", "seam", ("jax._src.config.trace_context.__code__",),
          "the trace context extended with no64's configuration state (jax 0.7)",
          removed_by="stays: the configuration state is JAX's from then on", optional=True),
    Point("canonicalize-handlers", "host",
          ("jax._src.dtypes.canonicalize_value_handlers[*]",
           "jax._src.interpreters.xla.canonicalize_dtype_handlers[*]"),
          "JAX's canonicalisation of numpy arrays, 64-bit scalars, Python ints and floats",
          removed_by="uninstall() restores JAX's handlers where a dict holds them (jax 0.7-0.10.1); no64's stay "
                     "in jaxlib's C++ registry (from 0.10.2), narrowing nothing while no64 is inactive"),
    Point("traced-constants", "host", ("jax._src.interpreters.partial_eval.DynamicJaxprTrace._new_const",),
          "the constants a trace takes in, canonicalised (jax 0.7)", optional=True),
    Point("int-aval", "host", ("jax._src.core.pytype_aval_mappings[int]",),
          "the abstract value of a Python int"),
    Point("convert-element-type", "host", ("jax._src.lax.lax._convert_element_type",),
          "lax.convert_element_type of host data"),
    Point("coerce-to-array", "host", ("jax._src.dtypes.coerce_to_array",),
          "a Python number made an array by JAX's dtype rules"),
    Point("array", "host", (*_numpy("array"), *_numpy("asarray")),
          "jnp.array and jnp.asarray of host data"),
    Point("device-put", "host", ("jax._src.dispatch.device_put_p.impl", "jax._src.dispatch._batched_device_put_impl"),
          "jax.device_put of host data"),
    Point("arange", "host", _numpy("arange"), "jnp.arange"),
    Point("x64-creations", "host", _NUMPY, "jnp's creation functions, noting a 64-bit dtype asked for"),
    Point("fastpath-guard", "host", ("jax._src.pjit._get_fastpath_data",),
          "jaxlib's C++ fast path, refused to calls with 64-bit numpy arguments"),
    Point("aot-guard", "host", ("jax._src.interpreters.pxla.MeshExecutable.create_cpp_call",
                                "jax._src.stages.Compiled.call"),
          "an AOT-compiled call's C++ fast path, likewise"),
    Point("sentinel-reads", "host", ("jax._src.pjit._infer_params", "jax._src.source_info_util._exclude_paths[*]"),
          "jit's Python path, following host sentinels through each traced function; no64's frames "
          "left out of JAX's source locations"),
    Point("warning-levels", "host", ("jax._src.dtypes.warnings",), "the warnings JAX's dtype rules give"),
    Point("jit-trace", "intent", ("jax._src.pjit._trace_for_jit", "jax._src.pjit._infer_params_impl"),
          "the trace of a jit call: once with x64 on, JAX's 32-bit trace replayed from it"),
    Point("jit-lower", "intent", ("jax._src.pjit._pjit_lower",),
          "the lowering of a jit call, its x64 trace remembered beside the module"),
    Point("x64-constants", "intent", ("jax._src.interpreters.partial_eval.DynamicJaxprTrace._new_const",),
          "the arrays a jit's x64 trace closes over, taken in with their x64 dtypes"),
    Point("call-variants", "intent", ("jax._src.pjit._infer_params",), "one trace per x64 signature of a call"),
    Point("ahead-of-time-traces", "intent", ("jax._src.pjit.jit_trace",),
          "a jit traced ahead of time (trace, lower, jax.export) known as such: no range of its example "
          "arguments' values is stated to the executable every later call takes"),
    Point("primitive-callable", "intent", ("jax._src.dispatch.xla_primitive_callable",),
          "the jit an eager primitive runs through, given 64-bit host data"),
    Point("explicit-dtypes", "intent", ("jax._src.dtypes._maybe_canonicalize_explicit_dtype",
                                        "jax._src.dtypes.check_user_dtype_supported"),
          "a 64-bit dtype asked for explicitly, noted"),
    Point("after-jit-call", "intent", ("jax._src.pjit._run_python_pjit", "jax._src.pjit._python_pjit_helper"),
          "a jit call's results, marked with their x64 dtypes"),
    Point("jit-impl", "intent", ("jax._src.pjit.jit_p.impl",), "a traced jit run outside any trace"),
    Point("samplers", "intent", ("jax.random.*",), "jax.random's samplers called eagerly"),
    Point("astype", "intent", _numpy("astype"),
          "an eager conversion to a dtype JAX narrows, run in a jit of its own"),
    Point("vmap", "intent", ("jax.vmap",), "a vmapped function called outside any jit, run in a jit of its own"),
    Point("trace-frame-locations", "hook", ("jax._src.interpreters.mlir._traceback_to_location",),
          "locations made from an equation's own trace (jax 0.7-0.8)", optional=True),
    Point("x64-update-hook", "hook", ("jax._src.config.enable_x64._update_global_hook",),
          "jax_enable_x64 turned on while no64 is active, turned off again"),
    Point("compile", "hook", ("jax._src.compiler.compile_or_get_cached",),
          "the compile of every module JAX lowers: no64's pass in front of it"),
    Point("traced-constant-sources", "trace", ("jax._src.interpreters.partial_eval.DynamicJaxprTrace._new_const",),
          "where each host constant a trace takes in came from"),
    Point("python-jit-calls", "measure", ("jax._src.pjit._run_python_pjit", "jax._src.pjit._python_pjit_helper",
                                          "jax._src.pjit._get_fastpath_data", "jax._src.pjit._infer_params"),
          "every jit call through JAX's Python dispatch",
          removed_by="measure.uninstall() lets calls run as they are (the wrappers stay); uninstall() "
                     "restores JAX's originals"),
    Point("audit-compile", "audit", ("jax._src.compiler.compile_or_get_cached",),
          "the compile of every module JAX lowers, observed as it is (the audit's as-is view)",
          removed_by="the audit, as it ends; uninstall() restores JAX's original"),
    Point("audit-x64-watch", "audit", ("jax._src.config.enable_x64._update_global_hook",),
          "jax_enable_x64 turned on by the program, noted",
          removed_by="the audit, as it ends; uninstall() restores JAX's original"),
    Point("audit-explicit-dtypes", "audit", ("jax._src.dtypes._maybe_canonicalize_explicit_dtype",
                                             "jax._src.dtypes.check_user_dtype_supported"),
          "a 64-bit dtype the program asks for, noted",
          removed_by="the audit, as it ends; uninstall() restores JAX's original"),
    Point("audit-frames", "audit", ("jax._src.traceback_util._exclude_paths[*]",),
          "the audit's frames left out of JAX's tracebacks"),
)

#: The groups whose owners install their points themselves (recognised in
#: the journal by what they replace).
_SELF_INSTALLED = ("seam", "trace", "audit")

_lock = threading.RLock()
_installed: set[str] = set()


def install(group: str, installers: Mapping[str, Callable[[], Any]]) -> None:
    """Install ``group``'s points in the order :data:`POINTS` lists them,
    each through ``installers[name]`` and noted under its name (once: again
    only after :func:`uninstall`)."""
    names = [p.name for p in POINTS if p.group == group]
    if group not in GROUPS or group in _SELF_INSTALLED or set(installers) != set(names):
        raise ValueError(f"the installers of {group!r} are {sorted(installers)}; its points are {names}")
    with _lock:
        if group in _installed:
            return
        for name in names:
            with installing(name):
                installers[name]()
        _installed.add(group)


def installed() -> frozenset[str]:
    """The groups :func:`install` has put in place."""
    with _lock:
        return frozenset(_installed)


def point_of(change: Change) -> Point | None:
    """The point a change of the journal was made for: the one it was noted
    under, else (the seam's own, the trace's, the audit's) the one whose ``replaces``
    names its target, of the groups that do not install through :func:`install`."""
    if change.point is not None:
        return next((p for p in POINTS if p.name == change.point), None)
    for p in POINTS:
        if p.group in _SELF_INSTALLED and _matches(change, p):
            return p
    return None


def uninstall() -> tuple[Change, ...]:
    """Put back every original no64 replaced in JAX, the last change first
    (what cannot be undone stays, see above); returns what was undone.  The
    compile hook's next activation installs everything again."""
    with _lock:
        undone = restore()
        _installed.clear()
        STATE.original_compile = None
        return undone


def _matches(change: Change, point: Point) -> bool:
    """Whether ``change`` is at a place ``point`` replaces."""
    return any(re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), change.target) for pattern in point.replaces)


def unlisted() -> list[str]:
    """The changes in the journal no point of the list accounts for (its
    name unknown, or its target not among what the point replaces)."""
    out = []
    for change in changes():
        point = point_of(change)
        if point is None or not _matches(change, point):
            out.append(f"{change.target} (noted under {change.point})")
    return out


def points_table() -> str:
    """:data:`POINTS` in Markdown, a row per point (``docs/architecture.md`` holds it)."""
    rows = ["| Point | Replaces in JAX | What | Installed by | Removed by |", "| --- | --- | --- | --- | --- |"]
    for p in POINTS:
        replaces = ", ".join(f"`{r}`" for r in p.replaces)
        rows.append(f"| `{p.name}` | {replaces} | {p.what} | `{p.group}` | {p.removed_by} |")
    groups = [f"* `{g}`: {who}." for g, who in GROUPS.items()]
    return "\n".join(rows) + "\n\nInstalled by, by group:\n\n" + "\n".join(groups) + "\n"
