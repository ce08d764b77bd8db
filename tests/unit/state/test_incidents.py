"""Incidents: recorded once per key, newest first, capped, none where a job has had none."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from airflow_async_stream.state import incidents
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Incident, Kind, read_incidents, record_incident


@pytest.fixture(params=["local", "memory"])
def control(request: pytest.FixtureRequest, tmp_path: Path) -> ControlArea:
    url = (
        str(tmp_path / "ck.async-stream")
        if request.param == "local"
        else f"memory://inc-{uuid.uuid4().hex}/ck.async-stream"
    )
    area = ControlArea(url)
    area.ensure()
    return area


def test_an_earlier_release_control_area_has_no_incidents(control: ControlArea) -> None:
    assert read_incidents(control) == []


def test_an_incident_is_recorded_once_per_key_and_read_newest_first(control: ControlArea) -> None:
    crash = Incident(at=10.0, kind=Kind.CRASH, deployment_id="d-1", since=9.0, error="boom\n  at plan line")
    assert record_incident(control, crash)
    assert not record_incident(control, crash.but(at=11.0, action="seen by another reader"))
    assert record_incident(control, Incident(at=12.0, kind=Kind.CRASH, deployment_id="d-2", since=12.0))
    found = read_incidents(control)
    assert [(i.deployment_id, i.at) for i in found] == [("d-2", 12.0), ("d-1", 10.0)]
    assert found[1].error == "boom" and found[1].host  # the first line only; who recorded it


def test_a_torn_line_is_skipped(control: ControlArea) -> None:
    record_incident(control, Incident(at=1.0, kind=Kind.STALL, deployment_id="d", since=1.0))
    control.fs.pipe_file(
        control.path(ControlArea.INCIDENTS), control.read_bytes(ControlArea.INCIDENTS) + b'{"at": 2, "ki'
    )
    assert [i.kind for i in read_incidents(control)] == ["stall"]


def test_the_file_keeps_the_newest(control: ControlArea, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incidents, "KEPT", 5)
    for n in range(23):
        assert record_incident(control, Incident(at=float(n), kind=Kind.STALL, deployment_id="d", since=float(n)))
    found = read_incidents(control)
    assert found[0].at == 22.0 and len(found) <= 2 * 5
    lines = control.read_bytes(ControlArea.INCIDENTS).count(b"\n")
    assert lines == len(found) <= 10
