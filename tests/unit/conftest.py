"""Fixtures every unit test may use: an empty control area of its own (a file may define its own instead)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    area = ControlArea(str(tmp_path / "ck.async-stream"))
    area.ensure()
    return area
