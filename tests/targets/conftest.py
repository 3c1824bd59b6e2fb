"""Fixtures of the target tests."""

from __future__ import annotations

from collections.abc import Iterator

import jax
import pytest

import no64


@pytest.fixture
def x64_requested(restore_global: None) -> Iterator[None]:
    """jax_enable_x64 on, as a program that asks for x64 has it; no64 installed
    by the test then turns it off and judges each program by its x64 program."""
    jax.config.update("jax_enable_x64", True)
    no64.uninstall()
    yield
