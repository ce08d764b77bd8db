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

from airflow_async_stream.exceptions import AsyncStreamError
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


def test_a_crash_loop_fails_the_run_once_with_one_line_and_a_recovery_is_pushed_once(tmp_path: Path) -> None:
    control = _crashed(tmp_path)
    spec = {**json.loads(control.read_bytes(ControlArea.SPEC)), "restart": {"max_restarts": 1}}
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.SUPERVISION, {"restarts": [{"at": time.time() - 30, "answered": "d0", "deployment_id": "d1"}]})  # fmt: skip
    task = SuperviseJobsOperator(task_id="supervise", checkpoint_folders=[str(tmp_path)])
    pushed: dict[str, object] = {}

    def run(run_id: str) -> list[dict[str, object]]:
        ti = SimpleNamespace(
            dag_id="supervise", run_id=run_id, xcom_push=lambda key, value: pushed.update({key: value})
        )
        return task.execute({"triggering_asset_events": _events(control.url), "run_id": run_id, "ti": ti})  # type: ignore[arg-type]

    with pytest.raises(AsyncStreamError) as failed:
        run("r1")
    [line] = str(failed.value).splitlines()
    assert line.startswith("job: crash_looping (crashed): crashed after 1 restart within 1 hour") and "cure: " in line
    with pytest.raises(AsyncStreamError, match="^job: crash_looping"):
        run("r1")  # its retry: the same line, so the last try fails and the notifier is called once
    [outcome] = run("r2")  # the next event's run: nothing new to say
    assert outcome["alert"] == "crash_looping" and outcome["said"] is None and pushed["recovered"] == []

    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d2", "deployed_at": time.time() - 5})
    control.write_json(ControlArea.STATUS, {"deployment_id": "d2", "state": "running", "batches": 3, "last_batch_id": 7,
                                            "heartbeat_at": time.time(), "last_progress_at": time.time()})  # fmt: skip
    run("r3")
    assert pushed["recovered"] == ["job: recovered: healthy as deployment d2 (was crash_looping)"]
    run("r4")
    assert pushed["recovered"] == []
