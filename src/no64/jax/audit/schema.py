"""The audit's document: its vocabulary, the JSON Schema of ``no64 audit
--json`` (:data:`AUDIT_JSON_SCHEMA`) and the SARIF frame of ``--sarif``.

What the report model (:mod:`no64.jax.audit.model`) writes follows this
module: the version, the two views, the kinds of cause, the handlings and
the words for how a module was rewritten.
"""

from __future__ import annotations

from typing import Any

from ... import __version__
from ...kinds import EventKind, Handling, IntegerPolicy, Mode, RangePolicy, View

__all__ = [
    "AS_IS",
    "AUDIT_JSON_SCHEMA",
    "CAUSE_KINDS",
    "HANDLINGS",
    "HOOK",
    "MODULE_HOW",
    "SARIF_RULES",
    "SCHEMA_VERSION",
    "sarif_log",
]

#: Version of the JSON document (:data:`AUDIT_JSON_SCHEMA`).
SCHEMA_VERSION = 6

#: Every handling, from harmless to blocking (see the module docstring and
#: :class:`no64.kinds.Handling`).
HANDLINGS: tuple[Handling, ...] = tuple(Handling)

#: The two views of a program.
HOOK, AS_IS = View.HOOK, View.AS_IS

#: Kinds of cause, in the order the report lists them.
CAUSE_KINDS = ("x64", "refused", "target", "explicit-dtype", "random", "host", "value", "float")

#: The SARIF log's rules: one per kind of cause, then the lines ``--numerics`` measures.
SARIF_RULES = (*CAUSE_KINDS, "numerics")

_CAUSE_DESCRIPTION = {
    "x64": "jax_enable_x64 turned on by the program or its environment",
    "refused": "no64 refuses a module (the program fails under the hook)",
    "target": "an op the device profile refuses or computes inexactly, or that no64 made exact there "
              "(no64 audit --target)",
    "explicit-dtype": "a 64-bit dtype requested while x64 is off (JAX truncates it)",
    "random": "random bits drawn with 64-bit counters or state",
    "host": "a 64-bit host value narrowed by no64",
    "value": "64-bit values in a compiled module",
    "float": "a float64 result that f32 demonstrably changes (float_policy='f32')",
    "numerics": "a line where float32 measurably changes a float64 result on the program's data (--numerics)",
}

#: How a module was rewritten, from harmless to worst: its worst value's
#: handling, in these words.
MODULE_HOW = ("exact", "sentinel", "emulated", "precision-reduced", "unproven", "overflow")


def sarif_log(results: list[dict[str, Any]]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run of no64 with ``results`` (one per
    cause, each naming its rule ``no64/<kind>``, one of :data:`CAUSE_KINDS`;
    and one per line ``--numerics`` lists, rule ``no64/numerics``, after them)."""
    rules = [
        {
            "id": f"no64/{kind}",
            "name": kind.title().replace("-", ""),
            "shortDescription": {"text": _CAUSE_DESCRIPTION[kind]},
        }
        for kind in SARIF_RULES
    ]
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


_NULLABLE_STR = {"type": ["string", "null"]}
_NULLABLE_INT = {"type": ["integer", "null"]}
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
#: A measured float: a number, or "inf"/"nan" (JSON has no such numbers).
_MEASURE = {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]}
_NULLABLE_MEASURE = {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}, {"type": "null"}]}


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
        # the device profile named (--target, NO64_TARGET); null: the platform's
        "target": _NULLABLE_STR,
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
        # what --numerics measured (null without it)
        "numerics": {"anyOf": [{"type": "null"}, _object({
            "tol": {"type": "number", "exclusiveMinimum": 0},
            "calls": {"type": "integer", "minimum": 0},
            "every": {"type": "integer", "minimum": 1},
            "measured": {"type": "integer", "minimum": 0},
            "functions": {
                "type": "array",
                "items": _object({
                    "name": {"type": "string"},
                    "file": _NULLABLE_STR,
                    "line": _NULLABLE_INT,
                    "source": _NULLABLE_STR,
                    "calls": {"type": "integer", "minimum": 0},
                    "measured": {"type": "integer", "minimum": 0},
                    "listed": {"type": "integer", "minimum": 0},
                    "output_error": _MEASURE,
                    "pairs_error": _NULLABLE_MEASURE,
                    "output_absolute": {"type": "boolean"},
                    "pairs_absolute": {"type": "boolean"},
                    "pairs_refusal": _NULLABLE_STR,
                    "not_measured": _NULLABLE_STR,
                    "failed": {"type": "integer", "minimum": 0},
                }),
            },
            "lines": {
                "type": "array",
                "items": _object({
                    "file": _NULLABLE_STR,
                    "line": _NULLABLE_INT,
                    "source": _NULLABLE_STR,
                    "kind": {"enum": ["introduces", "amplifies", "inf/nan", "differs"]},
                    "error": _MEASURE,
                    "input_error": _MEASURE,
                    "primitives": {"type": "array", "items": {"type": "string"}},
                    "index": {"type": "array", "items": {"type": "integer"}},
                    "reference": _MEASURE,
                    "got": _MEASURE,
                    "functions": {"type": "array", "items": {"type": "string"}},
                    "calls": {"type": "integer", "minimum": 1},
                    "pairs_error": _NULLABLE_MEASURE,
                    "pairs_refusal": _NULLABLE_STR,
                    "absolute": {"type": "boolean"},
                    "pairs_absolute": {"type": "boolean"},
                }),
            },
        })]},
    }),
}
