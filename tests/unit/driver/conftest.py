"""Fixtures of the driver tests that start real processes: a control area, and the processes a test started
(killed by process group afterwards, so a driver under ``unshare`` goes with its wrapper)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    area = ControlArea(str(tmp_path / "ck.async-stream"))
    area.ensure()
    return area


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # its group: under unshare, the driver is a child
            process.wait()
