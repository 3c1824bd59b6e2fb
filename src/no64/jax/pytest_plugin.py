"""pytest plugin: fail tests that compile 64-bit values no64 cannot remove exactly.

Opt in with ``pytest --no64`` or ``no64 = true`` in the ini file.  While each
test runs, every module JAX compiles is recorded (see
:class:`no64.jax.audit.Observer`); after the test, a module holding a 64-bit
value that no64 refuses, cannot prove in range (``unproven``) or knows to
overflow fails the test, with the audit table in the failure message.  A
module compiled once and reused from JAX's cache is judged in the test that
compiled it.  Without the option the plugin does nothing and imports
nothing heavy.

``pytest --no64-numerics`` (a flag: ``pytest --no64-numerics tests/`` runs
``tests/``) measures each
test's jitted calls as ``no64 audit --numerics`` does
(:mod:`no64.jax.audit.measure`: the first 3 calls of each jitted function in
each test, ``--no64-numerics-tol``, default 1e-3): the lines where float32
changes a float64 result beyond the tolerance are listed in a ``no64
numerics`` section of the terminal summary, by test.  It only lists them;
``--no64-numerics-fail`` (which implies ``--no64-numerics``) also fails
each test whose calls listed one.  Functions jitted before the plugin is
configured (by a library a ``conftest.py`` imports) are measured too.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from ..report import counted

#: Per test with something to say: its id, and what ``--no64-numerics`` measured.
numerics_found: list[tuple[str, Any]] = []

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
    group.addoption(
        "--no64-numerics",
        action="store_true",
        default=False,
        help="measure each test's jitted calls against their x64 program and list, in the summary, the "
        "lines where float32 changes a float64 result",
    )
    group.addoption(
        "--no64-numerics-fail",
        action="store_true",
        default=False,
        help="as --no64-numerics, and also fail the tests whose calls list such a line",
    )
    group.addoption(
        "--no64-numerics-tol",
        type=float,
        default=1e-3,
        metavar="TOL",
        help="the relative error --no64-numerics lists a line beyond (default 1e-3)",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("no64") or config.getini("no64"))


def _numerics(config: pytest.Config) -> str | None:
    """``"fail"`` with ``--no64-numerics-fail``, ``"report"`` with
    ``--no64-numerics``, else ``None``."""
    if config.getoption("no64_numerics_fail", False):
        return "fail"
    return "report" if config.getoption("no64_numerics", False) else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no64_skip: the no64 plugin does not check the modules this test compiles"
    )
    if _numerics(config):
        tol = config.getoption("no64_numerics_tol")
        if not 0 < tol < float("inf"):
            raise pytest.UsageError(f"--no64-numerics-tol {tol}: expected a positive finite number")
        from no64.jax.audit.measure import install

        install()  # every jitted function's calls, from now on, through the measurement


def _held_back() -> None:
    """Collect the x64 warning held back at ``import jax`` (if JAX was imported)."""
    import sys

    hook = sys.modules.get("no64.jax.hook")
    if hook is not None and hook.STATE.deferred:
        hook.say_deferred()


def pytest_report_header(config: pytest.Config) -> list[str]:
    _held_back()
    return [f"no64: {' '.join(n.split())}" for n in x64_notes]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    _held_back()
    for note in dict.fromkeys(x64_notes):
        terminalreporter.write_line(f"no64: {' '.join(note.split())}")
    if _numerics(terminalreporter.config):
        terminalreporter.write_sep("=", "no64 numerics")
        listed = sum(len(summary.lines) for _, summary in numerics_found)
        measured = sum(summary.measured for _, summary in numerics_found)
        terminalreporter.write_line(f"{counted(listed, 'line')} where float32 changes a float64 result beyond the "
                                    f"tolerance, in {counted(measured, 'measured call')} of the tests below")
        for nodeid, summary in numerics_found:
            terminalreporter.write_line(nodeid)
            for line in summary.text_lines()[1:]:
                terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    mode = _numerics(item.config)
    if mode and not item.get_closest_marker("no64_skip"):
        return (yield from _measured(item, mode))
    return (yield from _checked(item))


def _measured(item: pytest.Item, mode: str) -> Generator[None, Any, Any]:
    """The test, its jitted calls measured (and checked as with ``--no64``)."""
    from no64.jax.audit.measure import Measurer, measuring

    measurer = Measurer(tol=item.config.getoption("no64_numerics_tol"))
    try:
        with measuring(measurer):
            result = yield from _checked(item, measurer)
    finally:  # a failing test's measurements are listed too
        summary = measurer.summary()
        if summary.lines or any(f.not_measured for f in summary.functions):
            numerics_found.append((item.nodeid, summary))
    if mode == "fail" and summary.lines:
        pytest.fail("no64: float32 changes a float64 result of this test beyond the tolerance:\n"
                    + "\n".join(summary.text_lines()), pytrace=False)
    return result


def _checked(item: pytest.Item, measurer: Any = None) -> Generator[None, Any, Any]:
    """The test, its compiled modules checked with ``--no64``."""
    if not _enabled(item.config) or item.get_closest_marker("no64_skip"):
        return (yield)
    from no64.jax.audit import NOT_REMOVABLE, Observer, analyze

    with Observer() as observer:
        if measurer is not None:
            measurer.quiet = observer.paused
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
