"""The supervisor's task (no Spark, no DAG run): the jobs its events name, a long backoff deferred to the
triggerer with what is left to do, and the decision made again when it resumes."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_async_stream.operators.supervise import SuperviseJobsOperator, _evented
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.stopped import Stopped
from tests.helpers import rate_noop


def _crashed(tmp_path: Path) -> ControlArea:
    spec = rate_noop("job", str(tmp_path / "ck"), restart={"backoff": "2 minutes", "max_backoff": "5 minutes"})
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "deployed_at": time.time() - 60})
    control.write_json(ControlArea.STATUS, {"deployment_id": "d1", "state": "failed", "batches": 3, "error": "boom",
                                            "finished_at": time.time(), "heartbeat_at": time.time()})  # fmt: skip
    return control


def _events(*areas: str) -> dict[str, list[SimpleNamespace]]:
    return {"health": [SimpleNamespace(extra={"from_trigger": True, "payload": {"control_area": a}}) for a in areas]}


def test_the_jobs_of_a_runs_events_each_once() -> None:
    context = {"triggering_asset_events": _events("/a", "/b", "/a")}
    assert _evented(context) == ["/a", "/b"]  # type: ignore[arg-type]


def test_a_long_backoff_is_deferred_and_decided_again_on_resume(tmp_path: Path) -> None:
    control = _crashed(tmp_path)
    task = SuperviseJobsOperator(task_id="supervise", checkpoint_folders=[str(tmp_path)])
    with pytest.raises(TaskDeferred) as deferred:
        task.execute({"triggering_asset_events": _events(control.url)})  # type: ignore[arg-type]
    moment = deferred.value.trigger.moment
    assert 100 < (moment - datetime.now(UTC)).total_seconds() <= 120
    assert deferred.value.method_name == "resume" and deferred.value.kwargs == {"areas": [control.url], "done": []}
    # Meanwhile a person stopped it: the resumed task decides again and leaves it.
    control.write_json(ControlArea.STOPPED, Stopped(at=time.time(), by="ann@h", deployment_id="d1").to_json())
    [outcome] = task.resume({}, None, **deferred.value.kwargs)
    assert outcome["act"] == "leave" and "stopped by a person (ann@h)" in outcome["reason"]


def test_a_run_without_events_looks_at_every_job_of_the_fleet(tmp_path: Path) -> None:
    control = _crashed(tmp_path)
    control.write_json(ControlArea.STOPPED, Stopped(at=time.time(), by="ann@h", deployment_id="d1").to_json())
    task = SuperviseJobsOperator(task_id="supervise", checkpoint_folders=[str(tmp_path)])
    [outcome] = task.execute({})  # type: ignore[arg-type]
    assert (outcome["control_url"], outcome["act"]) == (control.url, "leave")


def test_an_event_naming_a_job_outside_the_fleet_is_left_alone(tmp_path: Path) -> None:
    """Asset events can be posted through Airflow's API: only the fleet's own jobs are acted on."""
    control = _crashed(tmp_path / "elsewhere")
    task = SuperviseJobsOperator(task_id="supervise", checkpoint_folders=[str(tmp_path / "fleet")])
    (tmp_path / "fleet").mkdir()
    assert task.execute({"triggering_asset_events": _events(control.url)}) == []  # type: ignore[arg-type]
    assert control.read_json(ControlArea.SUPERVISION) is None
