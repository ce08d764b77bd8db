"""The control area's files and the liveness verdict, on a real local folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import ControlArea, control_url_for
from airflow_async_stream.state.liveness import liveness, local_pid_alive
from tests.helpers import until


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    area = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    area.ensure()
    return area


def test_control_area_sits_beside_the_checkpoint(tmp_path: Path) -> None:
    assert control_url_for(str(tmp_path / "ck") + "/") == str(tmp_path / "ck.async-stream")
    assert control_url_for("s3://b/ck/job") == "s3://b/ck/job.async-stream"


def test_json_records_round_trip_and_leave_no_temp_files(control: ControlArea) -> None:
    control.write_json("status.json", {"state": "running"})
    control.write_json("status.json", {"state": "stopped"})
    assert control.read_json("status.json") == {"state": "stopped"}
    assert sorted(os.listdir(control.root)) == ["status.json"]
    assert control.read_json("missing.json") is None


def test_corrupt_record_names_the_file(control: ControlArea) -> None:
    Path(control.path("status.json")).write_text("{not json")
    with pytest.raises(ControlAreaError, match="status.json is not valid JSON"):
        control.read_json("status.json")


def test_stop_request_is_addressed_to_one_deployment(control: ControlArea) -> None:
    control.request_stop("dep-1", "test", 10)
    assert control.stop_request_for("dep-2") is None
    assert control.stop_request_for("dep-1").reason == "test"  # type: ignore[union-attr]


def _status(**changes: object) -> dict:
    status = {"state": "running", "heartbeat_at": time.time(), "pid": os.getpid(), "host": socket.gethostname()}
    status.update(changes)
    return status


def test_liveness_verdicts() -> None:
    assert liveness(None).live is False
    assert liveness(_status()).live is True
    assert liveness(_status(state="stopped")).reason == "state is stopped"
    stale = liveness(_status(heartbeat_at=time.time() - 60))
    assert not stale.live and "60 s old" in stale.reason


def test_a_dead_local_process_is_not_live() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    verdict = liveness(_status(pid=child.pid))
    assert not verdict.live and "has exited" in verdict.reason


def test_a_zombie_counts_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    until(lambda: Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z", what="a zombie")
    assert not local_pid_alive(child.pid)
    child.wait()
