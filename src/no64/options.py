"""What a conversion is asked to do: one :class:`Options` object, built the
same way from every way in.

The options are the same whether they come from :func:`no64.demote`'s
keyword arguments, ``no64 convert``'s flags, :func:`no64.jit`'s keywords or
the environment that activates the compile hook (``NO64_POLICY``, ...):
each way in builds an :class:`Options` (``Options(...)``,
:meth:`Options.from_env`), and every word is parsed by its vocabulary
(:mod:`no64.kinds`) here, in its constructor.  The pass works from the
object; the compile hook's :class:`~no64.jax.hook.Config` holds one, with
the platforms and the mode.

The environment variables no64 reads are declared once, in
:data:`ENVIRONMENT`: their names, the vocabulary each is parsed by and what
each means (the documentation's reference table is made from it,
:func:`environment_table`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

from .analysis.ranges import validate_input_ranges
from .errors import ConfigurationError
from .kinds import FloatPolicy, IntegerPolicy, Mode, Outputs, RangePolicy
from .targets import IEEE_ARITHMETIC, Arithmetic, Target, as_target, profiles

__all__ = ["ENVIRONMENT", "Options", "Variable", "environment_table", "read", "variable"]

#: Declared input ranges, frozen: (argument position or name, (lo, hi)), in
#: the order given.
InputRanges = tuple[tuple[int | str, tuple[int, int]], ...]


_SWITCH = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


def _arithmetic(value: Any) -> Arithmetic | None:
    if value is None or isinstance(value, Arithmetic):
        return value
    raise TypeError(f"arithmetic must be a no64.targets.Arithmetic or None, not {type(value).__name__}")


def _switch(value: bool | str, name: str) -> bool:
    """A yes/no option from a bool or a word (``on``/``off``)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in _SWITCH:
        raise ValueError(f"{name} must be on or off, not {value!r}")
    return _SWITCH[word]


@dataclasses.dataclass(frozen=True, init=False, repr=False)
class Options:
    """The options of one conversion (see :func:`no64.demote` for what each does).

    Built from words or members alike (``Options(policy="strict")`` equals
    ``Options(policy=RangePolicy.STRICT)``); a word that is no member of its
    vocabulary raises ``ValueError`` naming the option, a target that is no
    profile ``ValueError`` naming the known ones, and malformed input ranges
    ``TypeError``/``ValueError`` naming the argument.  Immutable and
    hashable: the compile hook's configuration, which holds one, is part of
    JAX's cache keys.

    Attributes:
      policy: Which verdicts of the range analysis are refused
        (:class:`~no64.kinds.RangePolicy`).
      integer_policy: What becomes of an out-of-range 64-bit integer
        constant (:class:`~no64.kinds.IntegerPolicy`).
      float_policy: How float64 values are computed
        (:class:`~no64.kinds.FloatPolicy`).
      outputs: How the entry function's 64-bit values computed in parts
        cross its signature (:class:`~no64.kinds.Outputs`).
      target: The device profile (:mod:`no64.targets`), or ``None``: a
        device with no 64-bit type.
      arithmetic: The f32 arithmetic float64 pairs are built for
        (:class:`~no64.targets.Arithmetic`), or ``None``: the target's
        (:attr:`pair_arithmetic`).  ``no64.jit`` sets it to the profile
        of the device it runs on.
      input_ranges: Declared inclusive ranges of the entry function's
        integer arguments, by position or name, in the order given
        (:attr:`declared_ranges` as a mapping).
      verify: Verify the whole module after the rewrite.
      check: Run the strict check on the rewritten module.
      float_hints: Under ``float_policy="f32"``, look for the float64
        results f32 demonstrably changes (:mod:`no64.analysis.float_hints`;
        ``report.float_hints``).  On by default; the compile hook's
        environment leaves it off unless ``NO64_FLOAT_HINTS=on``: the
        analysis costs about as much as the rest of the pass.
    """

    policy: RangePolicy
    integer_policy: IntegerPolicy
    float_policy: FloatPolicy
    outputs: Outputs
    target: Target | None
    arithmetic: Arithmetic | None
    input_ranges: InputRanges
    verify: bool
    check: bool
    float_hints: bool

    def __init__(
        self,
        *,
        policy: RangePolicy | str = RangePolicy.DEFAULT,
        integer_policy: IntegerPolicy | str = IntegerPolicy.ERROR,
        float_policy: FloatPolicy | str = FloatPolicy.F32,
        outputs: Outputs | str = Outputs.WORDS,
        target: Target | str | None = None,
        arithmetic: Arithmetic | None = None,
        input_ranges: Mapping[int | str, tuple[int, int]] | InputRanges | None = None,
        verify: bool = True,
        check: bool = False,
        float_hints: bool | str = True,
    ) -> None:
        if isinstance(input_ranges, tuple):  # (as dataclasses.replace passes it)
            input_ranges = dict(input_ranges)
        validate_input_ranges(input_ranges)
        ranges = tuple((key, (bounds[0], bounds[1])) for key, bounds in (input_ranges or {}).items())
        for name, value in (
            ("policy", RangePolicy.parse(policy, "policy")),
            ("integer_policy", IntegerPolicy.parse(integer_policy, "integer_policy")),
            ("float_policy", FloatPolicy.parse(float_policy, "float_policy")),
            ("outputs", Outputs.parse(outputs, "outputs")),
            ("target", as_target(target) if target is not None else None),
            ("arithmetic", _arithmetic(arithmetic)),
            ("input_ranges", ranges),
            ("verify", bool(verify)),
            ("check", bool(check)),
            ("float_hints", _switch(float_hints, "float_hints")),
        ):
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        """The fields that differ from the defaults (the target by name)."""
        said = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == getattr(_DEFAULT, f.name):
                continue
            shown = value.name if isinstance(value, Target) else dict(value) if f.name == "input_ranges" else value
            said.append(f"{f.name}={str(shown)!r}" if isinstance(shown, str) else f"{f.name}={shown!r}")
        return f"Options({', '.join(said)})"

    @property
    def declared_ranges(self) -> dict[int | str, tuple[int, int]] | None:
        """The declared input ranges as a mapping (``None``: none declared)."""
        return dict(self.input_ranges) if self.input_ranges else None

    @property
    def pair_arithmetic(self) -> Arithmetic:
        """The f32 arithmetic float64 pairs are built for: :attr:`arithmetic`,
        else the target's, else IEEE's."""
        if self.arithmetic is not None:
            return self.arithmetic
        return self.target.arithmetic if self.target is not None else IEEE_ARITHMETIC

    @property
    def native(self) -> frozenset[str]:
        """The 64-bit element types the target has natively (kept as they are)."""
        return frozenset(self.target.native) if self.target is not None else frozenset()

    def replace(self, **changes: Any) -> "Options":
        """A copy with ``changes`` (words or members, as the constructor takes them)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *,
                 problems: list[str] | None = None) -> "Options":
        """The options the environment sets (``os.environ`` by default): each
        field from its variable in :data:`ENVIRONMENT` (``NO64_POLICY``,
        ``NO64_INTEGER_POLICY``, ``NO64_FLOAT_POLICY``, ``NO64_TARGET``);
        an unset or empty variable leaves the default.

        A value that is none of the variable's choices raises
        :class:`~no64.errors.ConfigurationError` in one line naming the
        variable, its value and the choices -- or, given ``problems``, is
        added to them (the caller refuses to run under the default it gets
        instead)."""
        env = os.environ if environ is None else environ
        words: dict[str, Any] = {}
        for v in ENVIRONMENT:
            if v.field:
                word = read(env, v.name, problems)
                words[v.field] = word if word is not None else v.unset
        return cls(**{name: word for name, word in words.items() if word is not None})


_DEFAULT = Options()


# ---------------------------------------------------------------------------
# The environment variables, declared once
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Variable:
    """One environment variable no64 reads."""

    #: Its name (``NO64_POLICY``).
    name: str
    #: What it does, one sentence of Markdown (the reference table's).
    meaning: str
    #: The words it takes (``None``: free text, read by the code that names it).
    choices: Callable[[], tuple[str, ...]] | None = None
    #: What it is when unset or empty, as the reference says it.
    default: str = ""
    #: The :class:`Options` field it sets (``None``: not an option).
    field: str | None = None
    #: The word the field takes when the variable is unset or empty, where
    #: the environment's default differs from the API's (``None``: the same).
    unset: str | None = None


def _target_names() -> tuple[str, ...]:
    return tuple(sorted(profiles()))


#: Every environment variable no64 reads, in the order the compile hook
#: reads them (its message names bad values in this order).
ENVIRONMENT: tuple[Variable, ...] = (
    Variable("NO64_PLATFORMS", "The platforms whose modules pass through no64 (comma separated; `*`: every "
             "platform): setting it activates the compile hook when `jax` is imported.", default="empty: inactive"),
    Variable("NO64_MODE", "What the compile hook does with a module for those platforms: `fix` converts it, "
             "`check` refuses any 64-bit value, `off` passes it through.", Mode.values, Mode.FIX.value),
    Variable("NO64_INTEGER_POLICY", "What becomes of a 64-bit integer constant or host value outside the "
             "32-bit range that is not a sentinel: refused (`error`), clipped (`saturate`) or wrapped (`wrap`).",
             IntegerPolicy.values, IntegerPolicy.ERROR.value, "integer_policy"),
    Variable("NO64_POLICY", "Which verdicts of the range analysis are refused (`default`: proven overflows; "
             "`strict`: also unproven values; `permissive`: none); `exact` computes every integer not "
             "proven to fit exactly in 32-bit word pairs.", RangePolicy.values, RangePolicy.DEFAULT.value,
             "policy"),
    Variable("NO64_FLOAT_POLICY", "How float64 values are computed: narrowed to `f32`, or as `pairs` of f32.",
             FloatPolicy.values, FloatPolicy.F32.value, "float_policy"),
    Variable("NO64_TARGET", "The device profile (`no64.targets`) compiled modules are made exact on and "
             "checked against.", _target_names, "the platform's profile", "target"),
    Variable("NO64_FLOAT_HINTS", "`on`: the compile hook also looks, under the `f32` float policy, for "
             "float64 results f32 demonstrably changes, and warns at their lines "
             "(`no64.FloatPrecisionWarning`); off by default, as the analysis costs about as much as the "
             "rest of the pass (`no64.demote`, `no64 convert`, `no64.jit` and the audit always look).",
             lambda: ("on", "off"), "off", "float_hints", unset="off"),
    Variable("NO64_DEBUG", "`1`: the `no64` command prints the traceback before its one-line error.",
             default="unset"),
    Variable("NO64_SKIP_VERSION_CHECK", "Set: no warning for a jaxlib release no64 is not tested with.",
             default="unset"),
)

_BY_NAME = {v.name: v for v in ENVIRONMENT}


def variable(name: str) -> Variable:
    """The declared variable called ``name`` (``KeyError`` for an undeclared one)."""
    return _BY_NAME[name]


def read(environ: Mapping[str, str], name: str, problems: list[str] | None = None) -> str | None:
    """The word the declared variable ``name`` holds in ``environ``, stripped
    and lower-cased, or ``None`` when it is unset or empty.  A word that is
    none of its choices raises :class:`~no64.errors.ConfigurationError`
    (``no64: NO64_POLICY='exakt' is not one of default, strict, ...``) or,
    given ``problems``, is added to them and ``None`` returned."""
    var = _BY_NAME[name]
    raw = environ.get(name, "")
    word = raw.strip().lower()
    if not word or var.choices is None:
        return word or None
    choices = var.choices()
    if word in choices:
        return word
    problem = f"{name}={raw!r} is not one of {', '.join(choices)}"
    if problems is None:
        raise ConfigurationError(f"no64: {problem}")
    problems.append(problem)
    return None


def environment_table() -> str:
    """The reference table of :data:`ENVIRONMENT`, in Markdown."""
    rows = ["| Variable | Values | Default | Meaning |", "| --- | --- | --- | --- |"]
    for v in ENVIRONMENT:
        choices = v.choices() if v.choices is not None else ()
        values = ", ".join(f"`{c}`" for c in choices)
        default = f"`{v.default}`" if v.default in choices else v.default
        rows.append(f"| `{v.name}` | {values} | {default} | {v.meaning} |")
    return "\n".join(rows) + "\n"
