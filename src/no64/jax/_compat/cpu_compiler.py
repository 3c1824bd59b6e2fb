"""XLA's CPU compiler made without LLVM's loop hash recognition (wrapped as this seam loads)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .config import backends_started
from .patching import on_restore, replace_item

# ----------------------------------------------------- XLA's CPU compiler
#: The LLVM option that turns off the hash (CRC) recognition of LLVM's loop
#: idiom pass (``HashRecognize``), which takes time exponential in the size
#: of a loop body whose values have several uses (llvm/llvm-project#211711,
#: #211887).  XLA's CPU kernels of float pairs are such loops: a one-layer
#: GPT-2 training step as pairs compiles in 19 s on jaxlib 0.7 and 0.12 and
#: did not finish in 12 minutes on 0.10.2, whose LLVM has the fault.
HASH_RECOGNIZE_OFF = "-disable-loop-idiom-hashrecognize"
#: How much of each jaxlib library is searched for the option's name (LLVM's
#: option names are among its first read-only data: 19 MB into jaxlib
#: 0.10.2's and 0.12's libjax_common.so); one found later is missed, and the
#: option then not set -- slower compiles, never a process LLVM ends.
_SEARCHED = 64 << 20
#: What :func:`guard_cpu_compiler` did: ``""`` (nothing yet),
#: ``"installed"`` (the CPU backend is not made yet), ``"applied"``,
#: ``"absent"`` (the binding's LLVM has no such option), ``"user"`` (the
#: user's ``XLA_FLAGS`` set LLVM options), ``"late"`` (JAX's backends were
#: started first) or ``"unavailable"`` (no backend factory to wrap).
_guard = [""]


def _binding_has(option: str) -> bool:
    """Whether a shared library of the installed jaxlib names LLVM option
    ``option`` (LLVM registers each option under its name, a string)."""
    import importlib.util
    import mmap

    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        return False
    needle = option.lstrip("-").encode()
    for folder in spec.submodule_search_locations:
        for root, _, files in sorted(os.walk(folder)):
            for name in sorted(files):
                if not name.endswith((".so", ".pyd", ".dylib")):
                    continue
                path = os.path.join(root, name)
                if os.path.getsize(path) == 0:
                    continue
                with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    if m.find(needle, 0, _SEARCHED) >= 0:
                        return True
    return False


def guard_cpu_compiler() -> str:
    """Have XLA's CPU compiler made with :data:`HASH_RECOGNIZE_OFF` where the
    binding's LLVM has that option; what was done (see ``_guard``).

    XLA reads LLVM's options from ``XLA_FLAGS`` (``--xla_backend_extra_options``)
    once, when JAX makes its CPU backend, and an option LLVM does not know
    ends the process.  So JAX's CPU backend factory
    (``jax._src.xla_bridge._backend_factories["cpu"]``, the same on 0.7-0.12)
    is wrapped: while the backend is made, ``XLA_FLAGS`` has the option added
    where a library of jaxlib names it, and the variable is restored after
    (no process started later, no other backend sees it).  A user's flags
    that set LLVM options are left as they are.  Called when this module is
    imported and by no64's JAX plugin (:mod:`jax_plugins.no64`) as JAX makes
    its backends, where no64 is imported then."""
    if _guard[0]:
        return _guard[0]
    from jax._src import xla_bridge

    factories = getattr(xla_bridge, "_backend_factories", None)
    if not isinstance(factories, dict):
        _guard[0] = "unavailable"
        return _guard[0]
    registration = factories.get("cpu")
    if registration is None or not hasattr(registration, "factory"):
        _guard[0] = "unavailable"
        return _guard[0]
    if backends_started():
        _guard[0] = "late"
        return _guard[0]
    make = registration.factory

    def guarded(*args: Any, **kwargs: Any) -> Any:
        flags = os.environ.get("XLA_FLAGS")
        if flags is not None and "xla_backend_extra_options" in flags:
            _guard[0] = "user"
        elif not _binding_has(HASH_RECOGNIZE_OFF):
            _guard[0] = "absent"
        else:
            _guard[0] = "applied"
            os.environ["XLA_FLAGS"] = f"{flags or ''} --xla_backend_extra_options={HASH_RECOGNIZE_OFF}".strip()
        try:
            return make(*args, **kwargs)
        finally:
            if _guard[0] == "applied":
                if flags is None:
                    os.environ.pop("XLA_FLAGS", None)
                else:
                    os.environ["XLA_FLAGS"] = flags

    replace_item(factories, "cpu", dataclasses.replace(registration, factory=guarded),
                 where="jax._src.xla_bridge._backend_factories")
    _guard[0] = "installed"
    on_restore(_unguarded)
    return _guard[0]


def _unguarded() -> None:
    """The factory put back before JAX made its CPU backend: it may be wrapped again."""
    if _guard[0] == "installed":
        _guard[0] = ""


def late_cpu_guard_warning() -> str | None:
    """A warning's text where JAX's CPU backend was started before
    :func:`guard_cpu_compiler` and the binding's LLVM has the pass, else
    ``None``."""
    if _guard[0] != "late" or not _binding_has(HASH_RECOGNIZE_OFF):
        return None
    return ("XLA's CPU compiler of this jaxlib may take many minutes on float64 pairs (LLVM's loop hash "
            "recognition, llvm/llvm-project#211711): import no64 before JAX starts its backends, or start "
            f"Python with XLA_FLAGS=--xla_backend_extra_options={HASH_RECOGNIZE_OFF}")


guard_cpu_compiler()
