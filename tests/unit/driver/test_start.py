"""How often the driver waits read the status record: often on a local disk, less often on remote storage."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from airflow_async_stream.driver.poll import POLL_S, REMOTE_POLL_S
from airflow_async_stream.driver.start import wait_until_running
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import now


def _running(control: ControlArea) -> None:
    status = {"deployment_id": "d1", "state": "running", "batches": 1, "pid": 1, "host": "h", "heartbeat_at": now()}
    control.write_json(ControlArea.STATUS, status)


@pytest.mark.parametrize(
    ("url", "expected"),
    [(None, POLL_S), (f"memory://polling-{uuid.uuid4().hex}/ck.async-stream", REMOTE_POLL_S)],
    ids=["local", "remote"],
)
def test_the_startup_wait_polls_local_status_often_and_remote_status_less(
    tmp_path: Path, url: str | None, expected: float
) -> None:
    control = ControlArea(url or str(tmp_path / "ck.async-stream"))
    control.ensure()
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the driver reports its first batch during the first wait
        slept.append(seconds)
        _running(control)

    status = wait_until_running(control, "d1", None, timeout_s=60, sleep=sleep)

    assert status.batches == 1
    assert slept == [expected]
