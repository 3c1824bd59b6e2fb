"""pytest plugin: fail tests that compile 64-bit values no64 cannot remove exactly.

Opt in with ``pytest --no64`` or ``no64 = true`` in the ini file.  While each
test runs, every module JAX compiles is recorded (see
:class:`no64.jax.audit.Observer`); after the test, a module holding a 64-bit
value that no64 refuses, cannot prove in range (``unproven``) or knows to
overflow fails the test, with the audit table in the failure message.  A
module compiled once and reused from JAX's cache is judged in the test that
compiled it.  Without the option the plugin does nothing and imports
nothing heavy.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

#: The x64 warnings no64 held back at start-up (``NO64_PLATFORMS`` with x64
#: on): reported in pytest's header and summary instead of raised inside a
#: test, so that a suite configured ``filterwarnings = error`` runs.
x64_notes: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("no64")
    group.addoption(
        "--no64",
        action="store_true",
        default=False,
        help="fail tests whose compiled JAX modules hold 64-bit values no64 cannot remove exactly",
    )
    parser.addini("no64", type="bool", default=False, help="enable the no64 plugin (like --no64)")


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("no64") or config.getini("no64"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no64_skip: the no64 plugin does not check the modules this test compiles"
    )


def _held_back() -> None:
    """Collect the x64 warning held back at ``import jax`` (if JAX was imported)."""
    import sys

    hook = sys.modules.get("no64.jax.hook")
    if hook is not None and hook.STATE.deferred:
        hook._say_deferred()


def pytest_report_header(config: pytest.Config) -> list[str]:
    _held_back()
    return [f"no64: {' '.join(n.split())}" for n in x64_notes]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    _held_back()
    for note in dict.fromkeys(x64_notes):
        terminalreporter.write_line(f"no64: {' '.join(note.split())}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    if not _enabled(item.config) or item.get_closest_marker("no64_skip"):
        return (yield)
    from no64.jax.audit import NOT_REMOVABLE, Observer, analyze

    with Observer() as observer:
        result = yield  # the test's own failure propagates unchanged
    report = analyze(observer.modules, program=item.nodeid)
    bad = [g for g in report.groups if g.handling in NOT_REMOVABLE]
    if bad:
        names = ", ".join(sorted({g.handling for g in bad}))
        pytest.fail(
            f"no64: this test compiles 64-bit values no64 cannot remove exactly ({names}):\n"
            + report.format_text(),
            pytrace=False,
        )
    return result
