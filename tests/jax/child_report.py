"""What the child scripts of the hook's tests print: their results as one
JSON line, with the float policies the compile hook recorded where it ran;
and how they run a case (its result or error, and the warnings it gave)."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any


def run_case(run: Callable[[], Any],
             result: Callable[[Any], dict[str, Any]]) -> tuple[dict[str, Any], list[warnings.WarningMessage]]:
    """What ``run()`` gives, as ``result`` makes it, or the error either
    raised (its class and message), with every warning it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = result(run())
        except Exception as exc:  # noqa: BLE001 - the test reads the class and message
            got = {"error": type(exc).__name__, "message": str(exc)}
    return got, caught


def no64_warnings(caught: list[warnings.WarningMessage], *, messages: bool = False,
                  x64: bool = True) -> list[list[Any]]:
    """no64's warnings among ``caught``: each its class name and line (and
    its message, where ``messages``), ``X64DisabledWarning`` too where ``x64``."""
    return [[w.category.__name__, w.lineno, *([str(w.message)] if messages else [])] for w in caught
            if w.category.__module__.startswith("no64") and (x64 or w.category.__name__ != "X64DisabledWarning")]


def print_results(out: dict[str, Any]) -> None:
    """Print ``out`` as JSON, with ``float_policies`` added where the compile hook ran."""
    if "no64.jax.hook" in sys.modules:
        import no64

        out["float_policies"] = sorted({str(r.report.float_policy) for r in no64.compile_records()
                                        if r.report is not None})
    print(json.dumps(out))
