"""Fixtures of the driver tests that start real processes: the processes a test started (killed by process
group afterwards, so a driver under ``unshare`` goes with its wrapper). The control area is tests/unit's."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # its group: under unshare, the driver is a child
            process.wait()
