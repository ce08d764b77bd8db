"""A reader's look: a dead deployment is recorded failed once, incidents once, stall and recovery."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.insight.health import Verdict
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Kind, read_incidents
from airflow_async_stream.state.records import State
from tests.helpers import make_checkpoint

OTHER_HOST = "worker-b.example"


def _job(tmp_path: Path, **status: Any) -> tuple[ControlArea, str]:
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 1, 2], [0, 1, 2])
    control = ControlArea.for_checkpoint(checkpoint)
    control.ensure()
    control.write_json("deployment.json", {"deployment_id": "d-1", "job": "j", "checkpoint": checkpoint})
    control.write_json("spec.json", {"name": "j", "health": {"batch_stalled_after": "30 seconds"}})
    record = {
        "deployment_id": "d-1",
        "state": "running",
        "query_id": "q",
        "host": OTHER_HOST,
        "pid": 1,
        "started_at": time.time() - 100,
        "heartbeat_at": time.time(),
        "batches": 3,
        "first_batch_id": 0,
        "last_batch_id": 2,
        "last_progress_at": time.time() - 1,
    }
    control.write_json("status.json", {**record, **status})
    return control, checkpoint


def test_a_driver_whose_heartbeat_stopped_is_crashed_recorded_failed_and_one_incident(tmp_path: Path) -> None:
    control, checkpoint = _job(tmp_path, heartbeat_at=time.time() - 60)
    first = check_up(control, checkpoint)
    assert first.health.verdict == Verdict.CRASHED
    status = control.read_status()
    assert status is not None and status.state == State.FAILED and status.finished_at
    assert "its driver died without a final status: state is running but the last heartbeat" in (status.error or "")
    for _ in range(3):  # every later look (any host, any face) sees it ended, and records nothing more
        assert check_up(control, checkpoint).health.verdict == Verdict.CRASHED
    found = read_incidents(control)
    assert [(i.kind, i.deployment_id) for i in found] == [(Kind.CRASH, "d-1")]
    assert found[0].diagnosis and found[0].cure  # the doctor's words
    assert "heartbeat" in (found[0].error or "")


def test_an_exit_record_from_another_host_is_a_crash_at_once(tmp_path: Path) -> None:
    control, checkpoint = _job(tmp_path)  # a fresh heartbeat
    assert check_up(control, checkpoint).health.verdict == Verdict.HEALTHY
    control.write_json("driver-exit.json", {"deployment_id": "d-1", "host": OTHER_HOST, "exited_at": time.time()})
    looked = check_up(control, checkpoint)
    assert looked.health.verdict == Verdict.CRASHED and f"host {OTHER_HOST} recorded" in looked.health.reason
    assert control.read_status().state == State.FAILED  # type: ignore[union-attr]


def test_a_driver_that_never_ran_a_batch_failed_to_start(tmp_path: Path) -> None:
    control, checkpoint = _job(
        tmp_path,
        state="failed",
        batches=0,
        first_batch_id=None,
        last_batch_id=None,
        error="AnalysisException: [UNRESOLVED_COLUMN] nope",
    )
    looked = check_up(control, checkpoint)
    assert looked.health.verdict == Verdict.FAILED_TO_START and "UNRESOLVED_COLUMN" in looked.health.reason
    assert [i.kind for i in read_incidents(control)] == [Kind.FAILED_START]


def test_a_status_written_again_meanwhile_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    control, checkpoint = _job(tmp_path, heartbeat_at=time.time() - 60)
    reads = []
    real = ControlArea.read_status

    def read_status(self: ControlArea) -> Any:  # the driver writes its heartbeat between the look and the record
        status = real(self)
        reads.append(status)
        if len(reads) == 1:
            control.write_json("status.json", {**status.to_json(), "heartbeat_at": time.time()})  # type: ignore[union-attr]
        return status

    monkeypatch.setattr(ControlArea, "read_status", read_status)
    check_up(control, checkpoint)
    monkeypatch.undo()
    assert control.read_status().state == State.RUNNING  # type: ignore[union-attr]


def test_a_stall_is_recorded_once_and_its_recovery_once(tmp_path: Path) -> None:
    began = time.time() - 45
    control, checkpoint = _job(tmp_path, batch_active_since=began, last_progress_at=began - 1)
    for _ in range(2):
        looked = check_up(control, checkpoint)
        assert looked.health.verdict == Verdict.STALLED and "batch 3 has run for" in looked.health.reason
    control.write_json(
        "status.json",
        {
            **control.read_json("status.json"),
            "batch_active_since": None,  # type: ignore[dict-item]
            "last_batch_id": 3,
            "last_progress_at": time.time(),
        },
    )
    for _ in range(2):
        assert check_up(control, checkpoint).health.verdict == Verdict.HEALTHY
    found = read_incidents(control)
    assert [i.kind for i in found] == [Kind.RECOVERY, Kind.STALL]
    assert found[0].since == found[1].since == pytest.approx(began)


def test_a_reader_without_write_access_still_gets_the_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    control, checkpoint = _job(tmp_path, heartbeat_at=time.time() - 60)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ControlArea, "write_bytes", refused)
    monkeypatch.setattr(ControlArea, "write_json", refused)
    looked = check_up(control, checkpoint)
    assert looked.health.verdict == Verdict.CRASHED and looked.incidents == []
    monkeypatch.undo()
    assert control.read_status().state == State.RUNNING  # type: ignore[union-attr]  # nothing written
    assert check_up(control, checkpoint).health.verdict == Verdict.CRASHED  # a reader with access records it
    assert control.read_status().state == State.FAILED  # type: ignore[union-attr]
