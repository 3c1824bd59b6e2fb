"""The device lane's table, printed at the end of the run that made it."""

from __future__ import annotations

from typing import Any

import pytest

#: The lane of this run (``test_device_lane.lane`` puts it here).
LANES: list[Any] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for lane in LANES:
        terminalreporter.section("device lane")
        terminalreporter.write(lane.markdown())


@pytest.fixture(scope="session")
def lanes() -> list[Any]:
    return LANES
