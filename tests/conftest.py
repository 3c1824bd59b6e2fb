"""Shared pytest setup.

JAX reads ``XLA_FLAGS`` once, when its CPU backend starts, so the flag that
gives the CPU backend several devices (needed to run sharded programs) is
appended here, before anything imports jax.  64-bit types are enabled for
the whole session: the reference programs are 64-bit JAX programs.
"""

from __future__ import annotations

import os
import site

# A machine that got no64 as a wheel installed with ``pip install --target
# DIR`` (the device lane) names DIR here: added as a site folder, before
# anything imports jax, so that no64's start-up file runs as it does where
# no64 is installed in site-packages.
if os.environ.get("NO64_SITE"):
    site.addsitedir(os.environ["NO64_SITE"])

_DEVICE_FLAG = "--xla_force_host_platform_device_count"
#: CPU devices the sharded tests run on.
NUM_CPU_DEVICES = 8

if _DEVICE_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" {_DEVICE_FLAG}={NUM_CPU_DEVICES}"
    ).strip()

from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to test a stale installation.

    The tests run against the installed package (``make test`` installs it as
    users get it, start-up file included, and reinstalls it when a source
    file changes); a run that bypasses make after an edit would otherwise
    test the old code.
    """
    import jax_plugins.no64 as plugin
    import no64
    import no64_entry

    src = Path(__file__).resolve().parents[1] / "src"
    for module, rel in ((no64, "no64"), (plugin, "jax_plugins/no64"), (no64_entry, "no64_entry")):
        installed = Path(module.__file__).resolve().parent
        source = src / rel
        if installed == source:
            continue  # imported from the source tree itself
        for f in source.rglob("*.py"):
            twin = installed / f.relative_to(source)
            if not twin.is_file() or twin.read_bytes() != f.read_bytes():
                pytest.exit(
                    f"the installed no64 differs from {f.relative_to(src.parent)}: "
                    "run `make test` (it reinstalls the package when a source changes)",
                    returncode=2,
                )


#: The compatibility subset (``-m compat``, ``make test-compat``), run on
#: every supported JAX release: the pass and its golden cases, the soundness
#: property, the compile hook, ``no64.jit``, export and the audit.  A file
#: listed here is marked whole; test_compat.py marks itself.
COMPAT_FILES = (
    "core/test_pass.py",
    "core/test_golden.py",
    "analysis/test_soundness.py",
    "analysis/test_soundness_regressions.py",
    "jax/test_integration.py",
    "jax/test_exact_jit.py",
    "io/test_export.py",
    "jax/test_audit.py",
    "cli/test_cli.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent
    for item in items:
        try:
            rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel in COMPAT_FILES:
            item.add_marker(pytest.mark.compat)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh, fixed-seed random generator for each test."""
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def cpu_devices() -> list:
    """The CPU devices; fails when the backend has fewer than 8.

    Fewer happen only when ``XLA_FLAGS`` already asked for fewer devices or
    jax was initialised before this file set it.
    """
    devices = jax.devices("cpu")
    if len(devices) < NUM_CPU_DEVICES:
        pytest.fail(
            f"needs {NUM_CPU_DEVICES} CPU devices ({_DEVICE_FLAG}), backend has {len(devices)}"
        )
    return devices


@pytest.fixture
def without_word_rule():  # type: ignore[no-untyped-def]
    """``without_word_rule(name)`` takes op ``name``'s word rule (its op
    table entry's ``emulate``) out of the table for the test: a test of what
    happens to an op with no rule on words uses it rather than borrowing an
    op that has none today (and may have one tomorrow)."""
    import dataclasses

    from no64.spec.registry import REGISTRY

    saved: dict = {}

    def remove(name: str) -> None:
        saved.setdefault(name, REGISTRY[name])
        REGISTRY[name] = dataclasses.replace(REGISTRY[name], emulate=None, emulate_applies=None,
                                             emulate_why_not=None)

    yield remove
    REGISTRY.update(saved)


@pytest.fixture
def restore_global():  # type: ignore[no-untyped-def]
    """Put back the global no64 configuration and jax_enable_x64 after a test
    that installs no64 in this process."""
    import jax

    from no64.jax import hook as jaxhook

    x64 = jax.config.jax_enable_x64
    before = jaxhook.STATE.global_config()
    explicit, warned = jaxhook.STATE.explicit, set(jaxhook.STATE.x64_warnings)
    yield
    jaxhook.STATE.jax_state()._set(before)
    jaxhook.STATE.explicit = explicit
    jaxhook.STATE.x64_warnings.clear()
    jaxhook.STATE.x64_warnings.update(warned)
    jax.config.update("jax_enable_x64", x64)

