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
from airflow_async_stream.operators.autotune import AutotuneJobsOperator
from airflow_async_stream.operators.supervise import SuperviseJobsOperator, _evented
from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Kind, read_incidents
from airflow_async_stream.state.stopped import Stopped
from airflow_async_stream.supervise.watch import sweep
from tests.helpers import deployed, rate_noop


def _crashed(tmp_path: Path) -> ControlArea:
    spec = rate_noop("job", str(tmp_path / "ck"), restart={"backoff": "2 minutes", "max_backoff": "5 minutes"})
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    deployed(control, spec)
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "deployed_at": time.time() - 60})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d1",
            "state": "failed",
            "batches": 3,
            "error": "boom",
            "finished_at": time.time(),
            "heartbeat_at": time.time(),
        },
    )
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
    deployed(control, spec, "d1")
    ledger.write(
        control, ledger.SUPERVISION, {"restarts": [{"at": time.time() - 30, "answered": "d0", "deployment_id": "d1"}]}
    )
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
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d2",
            "state": "running",
            "batches": 3,
            "last_batch_id": 7,
            "heartbeat_at": time.time(),
            "last_progress_at": time.time(),
        },
    )
    run("r3")
    assert pushed["recovered"] == ["job: recovered: healthy as deployment d2 (was crash_looping)"]
    run("r4")
    assert pushed["recovered"] == []


def _broken_fleet(tmp_path: Path) -> tuple[ControlArea, ControlArea, ControlArea]:
    """Three jobs in one folder: one a person stopped, one whose fence.json is a folder (its supervisor must
    take a hold to restart it), one whose status.json is a folder."""
    stopped, fenced, unreadable = (_crashed(tmp_path / name) for name in ("a", "b", "c"))
    stopped.write_json(ControlArea.STOPPED, Stopped(at=time.time(), by="ann@h", deployment_id="d1").to_json())
    deployed(fenced, {**json.loads(fenced.read_bytes(ControlArea.SPEC)), "restart": {"backoff": "1 second"}}, "d1")
    Path(fenced.path(ControlArea.FENCE)).mkdir()
    Path(unreadable.path(ControlArea.STATUS)).unlink()
    Path(unreadable.path(ControlArea.STATUS)).mkdir()
    return stopped, fenced, unreadable


def test_one_jobs_broken_storage_is_its_incident_and_never_fails_the_run(tmp_path: Path) -> None:
    stopped, fenced, unreadable = _broken_fleet(tmp_path)
    task = SuperviseJobsOperator(task_id="supervise", checkpoint_folders=[str(tmp_path / n) for n in "abc"])

    outcomes = {o["control_url"]: o for o in task.execute({})}  # type: ignore[arg-type]  # no error raised

    assert outcomes[stopped.url]["act"] == "leave"
    for broken, named in ((fenced, "fence.json"), (unreadable, "status.json")):
        assert outcomes[broken.url]["act"] == "unreadable", outcomes[broken.url]
        [incident] = [i for i in read_incidents(broken) if i.kind == Kind.UNREADABLE]
        assert incident.error is not None and incident.error.startswith("control area unreadable: ")
        assert named in incident.error and "Is a directory" in incident.error, incident.error
        assert incident.action == "the supervisor left this job and went on with the others"
    task.execute({})  # type: ignore[arg-type]  # the next run: the same hour, the same incident
    assert len([i for i in read_incidents(unreadable) if i.kind == Kind.UNREADABLE]) == 1


def test_the_watcher_and_the_tuner_go_on_past_a_broken_job(tmp_path: Path) -> None:
    stopped, _, unreadable = _broken_fleet(tmp_path)
    jobs = [("a", stopped.url, str(tmp_path / "a" / "ck")), ("c", unreadable.url, str(tmp_path / "c" / "ck"))]
    sweep(jobs)  # no error: the broken job is its incident
    [watched] = [i for i in read_incidents(unreadable) if i.kind == Kind.UNREADABLE]
    assert watched.action == "the watcher left this job and went on with the others"

    tuned = AutotuneJobsOperator(task_id="autotune", checkpoint_folders=[str(tmp_path / n) for n in "ac"]).execute({})  # type: ignore[arg-type]
    assert {step["control_url"]: step["act"] for step in tuned}[unreadable.url] == "unreadable"
    assert len(tuned) == 2
