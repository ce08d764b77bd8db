"""A read never writes: ``status``, ``list``, ``report``, ``doctor``, ``incidents``, ``inspect`` and the page's
answers judge a job whose driver died without a final status, and leave every file as it was."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from airflow_async_stream.cli.commands import main as cli
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.plugin.app import list_jobs, one_job
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import read_incidents
from tests.helpers import deployed, make_checkpoint, rate_noop, snapshot
from tests.unit.helpers import batch_events


def test_every_reader_shows_a_dead_driver_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cks"
    checkpoint = make_checkpoint(folder / "clicks", [0, 4, 7], [0, 4, 7])  # async mode's gaps
    control = ControlArea.for_checkpoint(checkpoint)
    deployed(control, rate_noop("clicks", checkpoint, async_progress={"enabled": True}))
    control.write_json("deployment.json", {"deployment_id": "d1", "job": "clicks", "checkpoint": checkpoint})
    for event in batch_events([100.0] * 5, [40.0] * 5, start=900.0):
        control.append_progress(event)
    control.write_json(
        "status.json",
        {
            "deployment_id": "d1",
            "job": "clicks",
            "state": "running",
            "batches": 5,
            "heartbeat_at": 1000.0,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        },
    )
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", str(folder))
    before = snapshot(tmp_path)
    said = {}
    for command in ("status", "list", "report", "doctor", "incidents", "inspect"):
        cli([command] if command == "list" else [command, checkpoint])
        out = capsys.readouterr()
        said[command] = out.out + out.err
    page = {"list": list_jobs(), "job": one_job("clicks")}
    assert snapshot(tmp_path) == before, "a reader wrote"
    assert "crashed" in said["status"] and "crashed" in said["list"] and "crashed" in said["incidents"]
    assert "UNSAFE" in said["inspect"] and said["doctor"].startswith("job          clicks")
    [row] = page["list"]["jobs"]
    assert (row["state"], row["health"]["verdict"]) == ("failed", "crashed")  # shown as it is, recorded by none
    assert page["job"]["health"]["verdict"] == "crashed" and read_incidents(control) == []
    check_up(control, checkpoint)  # the next actor's look records it
    assert control.read_status().state == "failed"  # type: ignore[union-attr]
    assert [i.kind for i in read_incidents(control)] == ["crash"]
    assert json.loads(control.read_bytes("status.json"))["error"].startswith("its driver died without a final status")
