"""The user's line of a refused op inside a library's own jitted function."""

from __future__ import annotations

from typing import Any

from ...ir.locations import SourceLocation


def name_callers_line(exc: BaseException, module: Any) -> None:
    """Give a refusal of an op that has no source line of its own the line of
    the call that reached it.

    JAX lowers a library's own jitted function (``jnp.where``'s ``_where``) to
    a private function whose ops carry no user frame; the user's line is that
    of a ``func.call`` of it (followed outwards through nested calls).  Only
    on the error path: nothing is looked up while a module converts.
    """
    from ...ir._mlir import ir
    from ...ir.locations import decode_location
    from ...spec.registry import spec_of

    loc = getattr(exc, "location", None)
    if not isinstance(loc, SourceLocation) or loc.file is not None or not exc.args:
        return
    wanted = f"loc({loc.raw})"
    found: list[Any] = []

    def visit(op: Any) -> Any:
        if str(op.location) == wanted:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    try:
        module.operation.walk(visit)
    except Exception:  # noqa: BLE001 - a best effort on the error path only
        return
    if not found:
        return
    calls: dict[str, list[Any]] = {}

    def collect(op: Any) -> Any:
        if spec_of(op.name).call:
            calls.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    op = found[0]
    for _ in range(16):
        fn = op.parent
        while fn is not None and not spec_of(fn.name).function:
            fn = fn.parent
        if fn is None:
            return
        sites = calls.get(ir.StringAttr(fn.attributes["sym_name"]).value)
        if not sites:
            return
        op = sites[0]
        site = decode_location(op.location)
        if site.file is not None:
            new = SourceLocation(loc.primitive, loc.scope, site.file, site.line, site.column,
                                 loc.raw)
            old_text, new_text = f" at {loc}", f" at {new}"
            message = str(exc.args[0])
            if old_text in message:
                exc.args = (message.replace(old_text, new_text, 1), *exc.args[1:])
            else:
                exc.args = (f"{message} (called at {new.source})", *exc.args[1:])
            exc.location = new  # type: ignore[attr-defined]
            return
