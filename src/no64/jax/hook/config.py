"""The compile hook's configuration: which platforms no64 protects and
how (:class:`Config`), the environment variables that set it, and the
configuration in effect (a JAX configuration state held by the hook's state
object, :data:`no64.jax.state.STATE`, part of JAX's trace context and jit
cache key)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ...kinds import FloatPolicy, IntegerPolicy, Mode, RangePolicy
from ...options import Options, variable
from .._compat import platform_names
from ..state import ALL_PLATFORMS, STATE

# The environment variables (declared, with what each means, in
# no64.options.ENVIRONMENT; an undeclared name fails here).
#: Environment variable naming the platforms to protect (comma separated).
ENV_PLATFORMS = variable("NO64_PLATFORMS").name
#: Environment variable selecting the mode used with :data:`ENV_PLATFORMS`.
ENV_MODE = variable("NO64_MODE").name
#: Environment variable selecting the integer policy used with :data:`ENV_PLATFORMS`.
ENV_INTEGER_POLICY = variable("NO64_INTEGER_POLICY").name
#: Environment variable selecting the range policy used with :data:`ENV_PLATFORMS`.
ENV_POLICY = variable("NO64_POLICY").name
#: Environment variable selecting the float policy used with :data:`ENV_PLATFORMS`.
ENV_FLOAT_POLICY = variable("NO64_FLOAT_POLICY").name
#: The device profile modules are checked against (default: the platform's).
ENV_TARGET = variable("NO64_TARGET").name

#: The modes (see :class:`no64.kinds.Mode`): ``"fix"`` demotes then checks;
#: ``"check"`` refuses any 64-bit value; ``"off"`` passes modules through.
MODES = Mode.values()


def normalize_platforms(platforms: str | Iterable[str]) -> frozenset[str]:
    """Platform names as no64 keeps them: ``"cpu, TPU"`` or ``["cpu", "tpu"]``
    -> ``{"cpu", "tpu"}`` (lower-cased, stripped, empty names dropped);
    :class:`TypeError` for a name that is not a string."""
    if isinstance(platforms, str):
        names = platforms.split(",")
    else:
        names = list(platforms)
    out = set()
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"platform names must be strings, got {name!r}")
        name = name.strip().lower()
        if name:
            out.add(name)
    return frozenset(out)


@dataclasses.dataclass(frozen=True)
class Config:
    """Which platforms no64 protects, and how.

    Attributes:
      platforms: Lower-case platform names (``"cpu"``, ``"neuron"``, ``"gpu"``,
        ...); ``"*"`` means every platform.  ``"gpu"`` also matches
        ``"cuda"``, ``"rocm"`` and ``"oneapi"``.
      mode: ``"fix"`` (demote, then check), ``"check"`` (refuse a module
        with any 64-bit value with :class:`no64.Remaining64BitError`) or
        ``"off"`` (modules pass through untouched).
      options: The conversion's :class:`~no64.options.Options` in ``"fix"``
        mode: its range policy (``policy``: ``"exact"`` computes every
        integer not proven to fit in word pairs), ``integer_policy`` and
        ``float_policy`` (``"pairs"``: float64 values computed as pairs of
        f32, outputs rounded to f32 once) are :func:`no64.demote`'s; its
        ``target`` is the device profile (:mod:`no64.targets`) each
        compiled module is made exact on where no64 can (an integer ``dot``
        split into limb dots) and then checked against: what it refuses,
        and integer ops on a narrower datapath not proven exact, are a
        :class:`no64.TargetWarning` at the line (refused under ``strict``
        and ``exact``); ``None``: the profile of the platform compiled for
        (``generic`` if none).  Its other fields are the hook's own (it
        narrows outputs and lets the backend verify).
    """

    platforms: frozenset[str]
    mode: Mode = Mode.FIX
    #: The hook's default options leave float hints off (``NO64_FLOAT_HINTS``).
    options: Options = Options(float_hints=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode.parse(self.mode, "no64 mode"))
        if not isinstance(self.options, Options):
            raise TypeError(f"Config.options must be a no64.options.Options, not {type(self.options).__name__}")

    @property
    def policy(self) -> RangePolicy:
        """The range policy (``options.policy``)."""
        return self.options.policy

    @property
    def integer_policy(self) -> IntegerPolicy:
        """The integer policy (``options.integer_policy``)."""
        return self.options.integer_policy

    @property
    def float_policy(self) -> FloatPolicy:
        """The float policy (``options.float_policy``)."""
        return self.options.float_policy

    @property
    def target(self) -> str | None:
        """The name of the device profile (``None``: the platform's)."""
        return self.options.target.name if self.options.target is not None else None

    def applies_to(self, platform: str) -> bool:
        """Whether modules compiled for ``platform`` go through no64."""
        if self.mode is Mode.OFF:
            return False
        if ALL_PLATFORMS in self.platforms:
            return True
        return bool(platform_names(platform) & self._expanded())

    def _expanded(self) -> frozenset[str]:
        names: set[str] = set()
        for p in self.platforms:
            names |= platform_names(p)
        return frozenset(names)

    def describe(self) -> str:
        plats = "every platform" if ALL_PLATFORMS in self.platforms else ", ".join(sorted(self.platforms))
        extra = "" if self.policy is RangePolicy.DEFAULT else f", policy {self.policy.value!r}"
        if self.float_policy is not FloatPolicy.F32:
            extra += f", float policy {self.float_policy.value!r}"
        return f"mode {self.mode.value!r}{extra} for {plats}"


# The configuration lives in a JAX configuration state held by the hook's
# state object (:data:`no64.jax.state.STATE`), with everything else the hook
# keeps between calls.


def active_config() -> Config | None:
    """The configuration in effect in this thread (``None`` when inactive)."""
    return STATE.active_config()
