"""custom_call targets whose name encodes the element type.

JAX lowers dense linear algebra on CPU to LAPACK through custom calls named
``lapack_<t><routine>[_ffi]``, with ``<t>`` one of ``s`` (f32), ``d`` (f64),
``c`` (complex64) and ``z`` (complex128).  The f64 and complex128 routines
map to their f32 and complex64 siblings, which take the same operands
narrowed the same way (the integer ``info`` outputs are already 32-bit).
"""

from __future__ import annotations

import re

from ..ir._mlir import ir
from ..kinds import EventKind
from ..spec.registry import Refusal, RuleContext

_LAPACK = re.compile(r"^lapack_([dz])([a-z0-9]+(?:_ffi)?)$")
_LAPACK_32 = re.compile(r"^lapack_[sc][a-z0-9]+(?:_ffi)?$")
_NARROW_PREFIX = {"d": "s", "z": "c"}


def lapack_to_32bit(op: ir.Operation, ctx: RuleContext) -> bool:
    """Rename ``lapack_d*``/``lapack_z*`` to ``lapack_s*``/``lapack_c*``."""
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    m = _LAPACK.match(target)
    if m is None:
        return False
    new = f"lapack_{_NARROW_PREFIX[m.group(1)]}{m.group(2)}"
    op.attributes["call_target_name"] = ir.StringAttr.get(new)
    ctx.report.add(EventKind.REWRITE, op.name, op.location, f"custom_call {target} -> {new}")
    return True


def renamed_to_32bit(target: str) -> bool:
    """Whether ``target`` is a 32-bit LAPACK routine: once this rule has
    renamed a call, its operands are narrowed like any other value."""
    return _LAPACK_32.match(target) is not None


#: custom_call targets that only annotate or move a value and never look at
#: its bits; they are retyped like any other op.
TYPE_AGNOSTIC = frozenset(
    {
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "MoveToHost",
        "MoveToDevice",
        "annotate_device_placement",
        "LayoutConstraint",
        "xla.sdy.GlobalToLocalShape",
        "xla.sdy.LocalToGlobalShape",
        "xla.sdy.FuncResultSharding",
        "xla.sdy.ShardingGroup",
        "xla.sdy.PropagationBarrier",
    }
)


def opaque_target(op: ir.Operation, ctx: RuleContext) -> Refusal | None:
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    if target not in TYPE_AGNOSTIC and not renamed_to_32bit(target):
        return Refusal(
            f"custom_call target {target!r} takes or returns 64-bit values and its "
            "implementation is opaque; no64 does not know a 32-bit equivalent",
        )
    return None
