"""Audit a real program: what the compile hook does with it, and why, by the user's lines.

Two views of a program:

*the hook's view* (the default of ``no64 audit``, :func:`run_program`)
    The program runs exactly as with ``NO64_PLATFORMS=P``: no64 is activated
    when JAX is imported, with the settings of ``NO64_MODE``,
    ``NO64_INTEGER_POLICY`` and ``NO64_POLICY``; it turns ``jax_enable_x64``
    off, narrows 64-bit host values and rewrites, emulates or refuses every
    module before the backend compiles it.  The backend the program runs on here stands in for
    P.  :class:`Predictor` records what the hook did with each module --
    passed through, rewritten (and how) or refused -- and where x64 was
    turned on, which explicit 64-bit dtypes JAX truncated and which host
    values no64 narrowed.
*as is* (``--as-is``, :class:`Observer` and :func:`analyze`)
    The program runs unchanged, with its own x64 setting, and every module it
    compiles is explained as if it were handed to no64: what the modules are
    before any hook.  The pytest plugin uses this view.

Each 64-bit value gets a handling (:class:`no64.kinds.Handling`):

``exact``
    narrowed to 32 bits with the same value.
``sentinel``
    a 64-bit extreme (``INT64_MAX``, ...) mapped to the 32-bit extreme.
``rewritten``
    an op replaced by an exact 32-bit equivalent (random-number counters and
    rbg state, bit counts, ...).
``emulated``
    a 64-bit integer computed exactly in a pair of 32-bit words.
``float32``
    an f64 value computed in f32 (the x64 program run without x64).
``rounded``
    f64 constant(s) rounded to the nearest f32.
``precision-reduced``
    an op replaced by a rule that computes the same thing with fewer bits.
``unproven``
    an integer that is exact only if it fits in 32 bits, which no64 cannot
    prove.
``overflow``
    a value that never fits in 32 bits.
``refused``
    no64 refuses the module because of this value.
``blocked``
    a value in a module refused because of another value.

Every value is attributed to the innermost frame of the user's code: the
op's own call-site location, or, for ops inside JAX's jitted helpers
(``jax.random.normal`` and the like, lowered as private functions without a
source line), the call sites of the function holding it, followed outwards
until a user frame is found; the library function or frame it came through
is given as ``via``.  Values are grouped by primitive, user line and
handling (:class:`Group`), and groups are summed up as causes
(:class:`Cause`): where x64 was turned on, where random bits are drawn,
which host sentinels were mapped, what was refused and why.

``--fail-on`` levels (see :class:`no64.kinds.FailOn`): ``refused`` (the
default) fails on a refused module, ``unproven`` also on ``unproven`` and
``overflow`` values, ``lossy`` on those and ``precision-reduced``, ``any``
on every 64-bit value.

The package, one module per job (each imports only those listed before it):

* :mod:`~no64.jax.audit.schema`: the document's vocabulary, its JSON
  Schema and the SARIF frame;
* :mod:`~no64.jax.audit.sites`: attribution of values and events to the
  user's lines;
* :mod:`~no64.jax.audit.values`: the value model (values, module results,
  x64 and dtype events);
* :mod:`~no64.jax.audit.observer`: the as-is view;
* :mod:`~no64.jax.audit.predictor`: the hook's view, a listener of the
  compile hook (:class:`no64.jax.state.HookListener`);
* :mod:`~no64.jax.audit.numerics_summary`: what measuring the program's
  calls found (``--numerics``), and its text and JSON forms;
* :mod:`~no64.jax.audit.measure`: float error measured on the program's
  own jitted calls;
* :mod:`~no64.jax.audit.model`: the report model and its text, JSON and
  SARIF forms;
* :mod:`~no64.jax.audit.causes`: the report from what was recorded
  (:func:`build_report`, given a :class:`ReportInput`);
* :mod:`~no64.jax.audit.runner`: running a program or one function.
"""

from __future__ import annotations

# Everything importable from the module before it became this package still is.
from .causes import ReportInput, build_report  # noqa: F401
from .model import (  # noqa: F401
    FAIL_ON,
    NOT_REMOVABLE,
    AuditReport,
    Cause,
    Group,
    HostNarrowing,
    ModuleAudit,
    write_report,
)
from .observer import Compiled, Observer  # noqa: F401
from .predictor import Predictor, _hook_settings  # noqa: F401
from .runner import Progress, analyze, audit, run_program  # noqa: F401
from .schema import (  # noqa: F401
    AS_IS,
    AUDIT_JSON_SCHEMA,
    CAUSE_KINDS,
    HANDLINGS,
    HOOK,
    MODULE_HOW,
    SARIF_RULES,
    SCHEMA_VERSION,
)
from .sites import CallGraph, Site  # noqa: F401
from .values import DtypeEvent, ModuleResult, Value, X64Event, _handlings  # noqa: F401

__all__ = [
    "AUDIT_JSON_SCHEMA",
    "FAIL_ON",
    "HANDLINGS",
    "AuditReport",
    "Cause",
    "Group",
    "ModuleAudit",
    "Observer",
    "Predictor",
    "analyze",
    "audit",
    "run_program",
]
