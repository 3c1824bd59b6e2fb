"""The one seam between no64's core and the jaxlib it runs on.

no64 reads and writes modules through the MLIR Python bindings that ship
inside ``jaxlib`` (so that dialect versions always match the JAX that produced
the module) and converts file formats with jaxlib's XLA bindings.  Neither is
a stable API.  Every use of an internal that differs between the supported
releases goes through this module, which detects *features*, not versions:
it tries the newer name, falls back to the older one, and fails with one line
naming the missing feature where neither exists.  The only version numbers in
no64's code are the tested range below, read by :func:`check_jaxlib`.

Tested range: jax/jaxlib 0.7.0 through 0.12.x (:data:`TESTED`).  Older
releases are refused at import with one line; newer ones load with one
warning line (:class:`UntestedJaxlibWarning`).

What this module covers, with the releases that have each form:

* **Value down-casting** (:func:`block_argument`, :func:`op_result`).
  jaxlib >= 0.9 hands operands out as ``ir.BlockArgument``/``ir.OpResult``;
  0.7-0.8 hand them out as plain ``ir.Value``, and on 0.8.3
  ``isinstance(v, ir.BlockArgument)`` answers False for a block argument
  (a wrong "no" that once decided a narrowing's soundness).  The static
  ``BlockArgument.isinstance`` answers False on 0.10.  The casting
  constructors (``ir.BlockArgument(v)``, ``ir.OpResult(v)``) answer right on
  every release; the helpers use them whenever ``isinstance`` says no.
* **Attribute down-casting** (:func:`as_attribute`): ``op.attributes[...]``
  hands out concrete attribute classes on 0.7-0.12, but a binding that hands
  out a plain ``ir.Attribute`` (as older ones did, and as ``dense_resource``
  blobs still are) would make an ``isinstance`` test answer "no"; the casting
  constructor is tried before saying no.
* **Location classes** (:func:`location_kind`): ``ir.NameLoc``,
  ``ir.CallSiteLoc``, ``ir.FileLineColLoc``, ``ir.FusedLoc``,
  ``ir.UnknownLoc`` exist from jaxlib 0.10.1; 0.7-0.10.0 have one
  ``ir.Location`` class with ``is_a_name()``, ``is_a_callsite()``,
  ``is_a_file()``, ``is_a_fused()`` and the same accessors (``name_str``,
  ``child_loc``, ``callee``, ``filename``, ``start_line``, ``start_col``,
  ``locations``).
* **Complex constants** (:func:`constant_value`): a dense attribute of
  complex elements cannot be handed out by the bindings: reading it raises
  ``TypeError`` on 0.8-0.12 and aborts the process on 0.7; it is never read.
  Its elements are read from the op's printed form (:func:`constant_literal`),
  printed alone and unverified (:func:`op_text`: ``get_asm``'s
  ``use_local_scope`` and ``assume_verified``; a binding without them
  prints as it does, in the generic form while a module does not verify,
  which the reader takes too).
* **Attribute iteration** (:func:`attribute_dict`): iterating
  ``op.attributes`` yields names on 0.8-0.12 and ``ir.NamedAttribute`` on
  0.7; indexing by position yields ``NamedAttribute`` on all of them.
* **XLA's HLO bindings** (:func:`xla_hlo`): ``jaxlib._hlo`` from 0.10.2
  (``HloModule``, ``hlo_module_from_text``, ``HloPrintOptions``); the same
  names live in ``jaxlib._jax`` on 0.7-0.10.1.
* **MLIR conversions** (:func:`xla_mlir`): ``jaxlib._jax.mlir``
  (``hlo_to_stablehlo``, ``serialize_portable_artifact``,
  ``mlir_module_to_xla_computation``) on 0.7-0.12.
* **Insertion after an op** (:func:`insertion_after`):
  ``ir.InsertionPoint.after`` from jaxlib 0.8; 0.7 has none (the op that
  follows is looked up in its block).
* **Dialect registration** (``_jax_mlir_ext.register_dialects``,
  ``register_dialect`` of stablehlo, chlo, sdy, ``register_mhlo_dialect``):
  the same on 0.7-0.12; :func:`feature` names any that goes missing.
"""

from __future__ import annotations

import importlib
import os
import re
import warnings
from typing import Any, TypeVar

#: The tested range: the oldest supported jaxlib, and the first release that
#: is not tested (newer ones load with a warning).
TESTED = ((0, 7, 0), (0, 13, 0))
TESTED_TEXT = "jax/jaxlib 0.7.0 through 0.12.x"

_SKIP_ENV = "NO64_SKIP_VERSION_CHECK"

# XLA's C++ logging reads its level when jaxlib's native code is loaded.
# ``import jax`` sets this default before loading it; no64 may load it first
# (``import no64`` before ``import jax``, the ``no64`` command), and this is
# the first of no64's modules to load it: it must set the same default, or
# XLA logs its start-up at INFO level.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


class UnsupportedJaxlibError(ImportError):
    """The installed jaxlib lacks something no64 needs (one-line message)."""


class UntestedJaxlibWarning(UserWarning):
    """The installed jaxlib is newer than the tested range."""


def _parse(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def judge_version(version: str) -> str | None:
    """``None`` for a tested jaxlib, a warning line for a newer one; raises
    :class:`UnsupportedJaxlibError` for an older one."""
    parsed = _parse(version)
    if parsed < TESTED[0]:
        raise UnsupportedJaxlibError(
            f"no64 needs {TESTED_TEXT}, but jaxlib {version} is installed: "
            "upgrade jax and jaxlib (pip install -U jax jaxlib)"
        )
    if parsed >= TESTED[1]:
        return (f"no64 is tested with {TESTED_TEXT}; jaxlib {version} is newer and "
                "may differ in the internals no64 uses")
    return None


def check_jaxlib() -> str:
    """The installed jaxlib's version: refuses an older one than the tested
    range (:class:`UnsupportedJaxlibError`), warns once about a newer one."""
    try:
        import jaxlib.version as jv
    except ImportError as exc:
        raise UnsupportedJaxlibError(
            f"no64 needs jaxlib (its MLIR bindings read and write StableHLO): install {TESTED_TEXT}"
        ) from exc
    version: str = jv.__version__
    if os.environ.get(_SKIP_ENV):
        return version
    note = judge_version(version)
    if note is not None:
        # No file name and line: the warning prints as one line.
        warnings.warn_explicit(note, UntestedJaxlibWarning, "no64", 0)
    return version


def feature(module: str, *names: str) -> Any:
    """The first of ``names`` that ``module`` has (a dotted path: ``a.b``
    reads attribute ``b`` of attribute ``a``); one line naming the missing
    feature when it has none of them."""
    mod = importlib.import_module(module)
    for name in names:
        obj: Any = mod
        try:
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        return obj
    raise UnsupportedJaxlibError(
        f"no64 cannot use this jaxlib: {module} has none of {', '.join(names)}"
    )


def _first_module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise UnsupportedJaxlibError(f"no64 cannot use this jaxlib: none of {', '.join(names)} exists")


def xla_hlo() -> Any:
    """The module with ``HloModule``, ``hlo_module_from_text`` and
    ``HloPrintOptions`` (``jaxlib._hlo``, or ``jaxlib._jax`` before 0.10.2)."""
    for name in ("jaxlib._hlo", "jaxlib._jax"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "hlo_module_from_text"):
            return mod
    raise UnsupportedJaxlibError(
        "no64 cannot use this jaxlib: neither jaxlib._hlo nor jaxlib._jax has hlo_module_from_text"
    )


def xla_mlir() -> Any:
    """jaxlib's MLIR conversions (``hlo_to_stablehlo``,
    ``serialize_portable_artifact``, ``mlir_module_to_xla_computation``)."""
    return feature("jaxlib._jax", "mlir")


# ---------------------------------------------------------------------------
# Down-casting: the only type tests on values, attributes and locations
# ---------------------------------------------------------------------------

check_jaxlib()

from jaxlib.mlir import ir  # noqa: E402

_BlockArgument = ir.BlockArgument
_OpResult = ir.OpResult


_V = TypeVar("_V", ir.BlockArgument, ir.OpResult)


def _as_value(v: Any, kind: type[_V], other: type[Any]) -> _V | None:
    """``v`` as ``kind``, one of the two kinds of value, or ``None`` when it
    is the ``other``.

    ``isinstance`` is trusted only when it says yes: some bindings hand out
    plain ``ir.Value`` objects, and one answered "no" for a block argument.
    """
    if isinstance(v, kind):
        return v
    if isinstance(v, other):
        return None
    try:
        return kind(v)
    except (ValueError, TypeError):
        return None


def block_argument(v: Any) -> ir.BlockArgument | None:
    """``v`` as an ``ir.BlockArgument``, or ``None`` when it is not one."""
    return _as_value(v, _BlockArgument, _OpResult)


_AFTER = getattr(ir.InsertionPoint, "after", None)


def insertion_after(op: Any) -> ir.InsertionPoint:
    """An insertion point right after ``op``: ``InsertionPoint.after``
    (jaxlib 0.8 on), else before the op that follows it, found by walking
    its block (0.7: linear in the block's length)."""
    if _AFTER is not None:
        return _AFTER(op)
    op = getattr(op, "operation", op)  # an OpView's Operation
    block = op.block
    found = False
    for o in block.operations:
        if found:
            return ir.InsertionPoint(o)
        found = o.operation == op
    return ir.InsertionPoint(block)


def _sets_location() -> bool:
    """Whether the binding can set an op's location (asked of one op)."""
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        op = ir.Operation.create("no64.probe")
        try:
            op.location = ir.Location.name("probe")
        except AttributeError:
            return False
        return True


#: Whether an op's location can be set (not on jaxlib 0.7's bindings).
SETS_LOCATION = _sets_location()


def inlined_at(op: Any, call_location: Any) -> None:
    """Give ``op``, copied out of a callee, the location MLIR's inliner
    gives it: its own at the call's (``callsite``).  A binding that cannot
    set an op's location (jaxlib 0.7) leaves its own."""
    if SETS_LOCATION:
        op.location = ir.Location.callsite(op.location, [call_location])


def op_result(v: Any) -> ir.OpResult | None:
    """``v`` as an ``ir.OpResult``, or ``None`` when it is not one."""
    return _as_value(v, _OpResult, _BlockArgument)


A = TypeVar("A")


def as_attribute(attr: Any, cls: type[A]) -> A | None:
    """``attr`` as an instance of the attribute class ``cls`` (e.g.
    ``ir.DenseIntElementsAttr``), or ``None`` when it is not one."""
    if isinstance(attr, cls):
        return attr
    try:
        return cls(attr)  # type: ignore[call-arg]
    except (ValueError, TypeError):
        return None


def constant_value(op: Any) -> ir.Attribute | None:
    """The ``value`` attribute of a constant op, or ``None`` where the
    bindings cannot hand it out: a dense attribute of complex elements is
    never touched (reading it raises ``TypeError`` on jaxlib 0.8-0.12 and
    aborts the process on 0.7, a C++ exception escaping the binding); its
    printed form holds the values."""
    try:
        elem = ir.ShapedType(op.results[0].type).element_type
    except (ValueError, TypeError, IndexError):
        elem = None
    if isinstance(elem, ir.ComplexType):
        return None
    try:
        return op.attributes["value"]
    except (KeyError, TypeError, ValueError):
        return None


# What the bindings cannot read, read from the printed form: the elements of
# a complex dense constant (reading them aborts some releases, see
# constant_value) and the data of ``dense_resource`` blobs (no binding
# hands a blob's bytes out; the module's ``dialect_resources`` section
# prints each one).
_RESOURCE = re.compile(r"dense_resource<([^>]+)>")
_BLOB = re.compile(r'([\w.$-]+|"[^"]*")\s*:\s*"0x([0-9A-Fa-f]*)"')


def constant_literal(op: Any) -> tuple[str, str]:
    """What a constant op's printed form holds: ``("dense", literal)``, the
    text inside ``dense<...>``, or ``("resource", key)`` for a
    ``dense_resource`` blob, or ``("unknown", "")``.

    The op is printed alone (:func:`op_text`); a literal holds no ``>``
    (numbers, hex strings, parentheses and brackets), so it ends at the
    first one, in the op's custom form (``dense<...> : type``) as in the
    generic one (``<{value = dense<...> : type}> : () -> type``)."""
    asm = op_text(op)
    start = asm.find("dense<")
    if start >= 0:
        end = asm.find(">", start + 6)
        return "dense", asm[start + 6 : end if end >= 0 else len(asm)]
    key = resource_key(asm)
    return ("resource", key) if key is not None else ("unknown", "")


def op_text(op: Any) -> str:
    """``op`` printed on its own: numbered in its own scope and not verified
    first (printing an op verifies the whole module above it, and prints the
    generic form of every op while a pass has left that module unverified;
    it also costs a walk of the module per op).  Bindings without those
    printing flags print it as they do."""
    try:
        return str(op.get_asm(use_local_scope=True, assume_verified=True))
    except TypeError:
        return str(op.get_asm())


def resource_key(text: str) -> str | None:
    """The blob key of the ``dense_resource<key>`` attribute in ``text``
    (an attribute's or an op's printed form), or ``None``."""
    m = _RESOURCE.search(text)
    return m.group(1).strip('"') if m else None


def resource_blobs(module: Any) -> dict[str, bytes]:
    """Every ``dense_resource`` blob of ``module`` (its operation), by key,
    without the 4-byte alignment header each printed blob starts with."""
    text = module.get_asm()
    sect = text.find("dialect_resources")
    if sect < 0:
        return {}
    return {k.strip('"'): bytes.fromhex(hexdata)[4:] for k, hexdata in _BLOB.findall(text[sect:])}


_MESH_AXES = re.compile(r"replica_group_mesh_axes<mesh = @([\w.$-]+), axes = \[(.*)\]>")
_AXIS_NAME = re.compile(r'name = "([^"]+)"')
_MESH_SIZES = re.compile(r'"([^"]+)"\s*=\s*(\d+)')


def replica_group_size(op: Any) -> int | None:
    """How many devices each replica group of the collective ``op`` holds:
    from its ``replica_groups`` as a dense ``groups x size`` array, or --
    as JAX writes it from 0.12 -- as axes of a Shardy mesh
    (``#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>``), the
    product of those axes' sizes in the module's ``sdy.mesh @m``; ``None``
    where that cannot be read."""
    try:
        attr = op.attributes["replica_groups"]
    except (KeyError, ValueError, TypeError):
        return None
    dense = as_attribute(attr, ir.DenseIntElementsAttr)
    if dense is not None:
        shape = ir.ShapedType(dense.type).shape
        return int(shape[-1]) if len(shape) == 2 and shape[0] * shape[1] else None
    m = _MESH_AXES.search(str(attr))
    if m is None:
        return None
    mesh, axes = m.group(1), _AXIS_NAME.findall(m.group(2))
    module = op
    while module.parent is not None:
        module = module.parent
    module = getattr(module, "operation", module)
    for top in module.regions[0].blocks[0].operations:
        # the mesh: the module-level symbol of that name holding a "mesh"
        if "mesh" in top.attributes and "sym_name" in top.attributes \
                and ir.StringAttr(top.attributes["sym_name"]).value == mesh:
            sizes = dict((k, int(v)) for k, v in _MESH_SIZES.findall(str(top.attributes["mesh"])))
            if not axes or any(a not in sizes for a in axes):
                return None
            n = 1
            for a in axes:
                n *= sizes[a]
            return n
    return None


def attribute_dict(op: Any) -> dict[str, ir.Attribute]:
    """An op's attributes by name (iteration yields names or
    ``NamedAttribute`` depending on the binding; indexing does not)."""
    attrs = op.attributes
    out: dict[str, ir.Attribute] = {}
    for i in range(len(attrs)):
        named = attrs[i]
        out[named.name] = named.attr
    return out


_LOCATION_CLASSES = tuple(
    (kind, getattr(ir, cls))
    for kind, cls in (("name", "NameLoc"), ("callsite", "CallSiteLoc"),
                      ("file", "FileLineColLoc"), ("fused", "FusedLoc"), ("unknown", "UnknownLoc"))
    if hasattr(ir, cls)
)
_LOCATION_TESTS = tuple(
    (kind, test)
    for kind, test in (("name", "is_a_name"), ("callsite", "is_a_callsite"),
                       ("file", "is_a_file"), ("fused", "is_a_fused"))
    if hasattr(ir.Location, test)
)
if not _LOCATION_CLASSES and not _LOCATION_TESTS:
    raise UnsupportedJaxlibError(
        "no64 cannot use this jaxlib: its MLIR bindings have neither location classes "
        "(ir.NameLoc, ...) nor Location.is_a_name()"
    )


def as_location(loc: Any) -> Any:
    """``loc`` as the binding's most specific location object (diagnostics
    hand out plain ``ir.Location`` objects even where subclasses exist)."""
    if _LOCATION_CLASSES and type(loc) is ir.Location:
        try:
            return ir.Location.from_attr(loc.attr, context=loc.context)
        except (ValueError, TypeError, AttributeError):
            return loc
    return loc


def location_kind(loc: Any) -> str:
    """``"name"``, ``"callsite"``, ``"file"``, ``"fused"``, ``"unknown"`` or
    ``"other"``; the location's parts are then read by the same accessors on
    every binding (``name_str``/``child_loc``, ``callee``/``caller``,
    ``filename``/``start_line``/``start_col``, ``locations``)."""
    loc = as_location(loc)
    for kind, cls in _LOCATION_CLASSES:
        if isinstance(loc, cls):
            return kind
    for kind, test in _LOCATION_TESTS:
        if getattr(loc, test)():
            return kind
    return "unknown" if str(loc) == "loc(unknown)" else "other"
