"""Shared pytest setup.

JAX reads ``XLA_FLAGS`` once, when its CPU backend starts, so the flag that
gives the CPU backend several devices (needed to run sharded programs) is
appended here, before anything imports jax.  64-bit types are enabled for
the whole session: the reference programs are 64-bit JAX programs.
"""

from __future__ import annotations

import os

_DEVICE_FLAG = "--xla_force_host_platform_device_count"
#: CPU devices the sharded tests run on.
NUM_CPU_DEVICES = 8

if _DEVICE_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" {_DEVICE_FLAG}={NUM_CPU_DEVICES}"
    ).strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)


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
