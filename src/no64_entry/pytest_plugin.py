"""The pytest plugin's entry point: :mod:`no64.jax.pytest_plugin` where no64
loads; elsewhere a stand-in that keeps ``--no64`` and the ``no64`` ini key
known, so that a test run without them goes on, and stops a run that asks
for the plugin with one line saying why no64 cannot load."""

from __future__ import annotations

import pytest

try:
    from no64.jax.pytest_plugin import (  # noqa: F401
        pytest_addoption,
        pytest_configure,
        pytest_report_header,
        pytest_runtest_call,
        pytest_terminal_summary,
    )
except ImportError as _exc:
    _REASON = str(_exc)

    def pytest_addoption(parser: pytest.Parser) -> None:
        group = parser.getgroup("no64")
        group.addoption("--no64", action="store_true", default=False,
                        help=f"(unavailable: {_REASON})")
        parser.addini("no64", type="bool", default=False, help="enable the no64 plugin (like --no64)")
        group.addoption("--no64-numerics", action="store_true", default=False,
                        help=f"(unavailable: {_REASON})")
        group.addoption("--no64-numerics-fail", action="store_true", default=False,
                        help=f"(unavailable: {_REASON})")

    def pytest_configure(config: pytest.Config) -> None:
        config.addinivalue_line(
            "markers", "no64_skip: the no64 plugin does not check the modules this test compiles"
        )
        if config.getoption("no64") or config.getini("no64") or config.getoption("no64_numerics") \
                or config.getoption("no64_numerics_fail"):
            raise pytest.UsageError(f"no64: the plugin cannot run: {_REASON}")
