"""The committed-batches check, trigger and sensor against hand-made checkpoints and status records."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import CommittedBatchesError, CommittedBatchesTimeoutError
from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor
from airflow_async_stream.state.checkpoint import resume_point
from airflow_async_stream.state.commits import check_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.triggers.committed_batches import CommittedBatchesTrigger
from tests.helpers import commit, make_checkpoint


def checkpoint(tmp_path: Path, commits: list[int], **status: Any) -> str:
    root = tmp_path / "ck"
    make_checkpoint(root, commits, commits)
    if status:
        control = ControlArea.for_checkpoint(str(root))
        control.ensure()
        record = {"state": "running", "heartbeat_at": time.time(), "pid": os.getpid(), "host": socket.gethostname()}
        control.write_json("status.json", {**record, **status})
    return str(root)


def test_counts_batches_by_id_after_the_baseline_so_async_gaps_count_as_committed(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [0, 4, 7, 41, 42])
    check = check_commits(ck, 41, 2)
    assert (check.committed_after, check.done) == (1, False)
    assert check.progress() == "1/2 batches committed after batch 41"
    assert check_commits(ck, None, 2).committed_after == 43  # batches 0..42: a restart resumes at 43
    assert check_commits(ck, 7, 2).committed_after == 35
    assert check_commits(ck, 50, 2).committed_after == 0


def test_purged_commit_files_change_nothing_so_a_wait_for_more_than_are_retained_ends(tmp_path: Path) -> None:
    """Spark keeps the newest minBatchesToRetain commit files: counting files could never pass that."""
    ck = checkpoint(tmp_path, list(range(290, 300)))  # ten retained, batches 0-289 purged
    check = check_commits(ck, 5, 250)
    assert (check.committed_after, check.done, check.latest_commit) == (294, True, 299)
    assert check_commits(ck, 5, 300).progress() == "294/300 batches committed after batch 5"


def test_the_resume_point_is_the_batch_before_the_first_one_a_new_query_runs(tmp_path: Path) -> None:
    ck = Path(checkpoint(tmp_path, []))

    def logs(offsets: list[int], commits: list[int]) -> int | None:
        for folder, ids in (("offsets", offsets), ("commits", commits)):
            for old in (ck / folder).iterdir():
                old.unlink()
            for i in ids:
                (ck / folder / str(i)).write_text("v1\n")
        return resume_point(str(ck))

    assert logs([], []) is None
    assert logs([0], []) is None  # batch 0 runs again
    assert logs([0, 1, 2], [0, 1, 2]) == 2  # resumes at 3
    assert logs([0, 1, 2], [0, 1]) == 1  # batch 2 runs again: it is the new query's
    assert logs([0, 4, 7], [0, 4]) == 6  # async left offsets/7 without its commit: 7 runs again
    assert logs([90, 95, 99], [90, 95, 99]) == 99


def test_failed_or_stopped_job_is_reported(tmp_path: Path) -> None:
    failed = check_commits(checkpoint(tmp_path / "a", [3], state="failed", error="boom"), 3, 2)
    assert failed.job_error == "the job failed: boom"
    stopped = check_commits(checkpoint(tmp_path / "b", [3], state="stopped"), 3, 2)
    assert "stopped before 2 batches were committed after batch 3" in stopped.job_error
    gone = check_commits(checkpoint(tmp_path / "c", [3], heartbeat_at=time.time() - 120), 3, 2)
    assert "driver is gone" in gone.job_error
    enough = check_commits(checkpoint(tmp_path / "d", [3, 4, 5], state="stopped"), 3, 2)
    assert enough.done and enough.job_error is None


def test_idle_source_timeout_message(tmp_path: Path) -> None:
    idle = check_commits(checkpoint(tmp_path, [3], idle_at=time.time(), last_progress_at=time.time() - 5), 3, 2)
    assert idle.source_idle
    assert "the source produced no data" in idle.timeout_message(30)
    busy = check_commits(checkpoint(tmp_path / "b", [3, 4], last_progress_at=time.time()), 3, 2)
    assert busy.timeout_message(30) == "only 1/2 batches committed after batch 3 within 30 s"


def test_trigger_serializes_to_plain_values_and_round_trips() -> None:
    trigger = CommittedBatchesTrigger("/ck/x", 41, 2, deadline=1000.5, started_at=900.0, poll_interval=0.5)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_async_stream.triggers.committed_batches.CommittedBatchesTrigger"
    assert kwargs == {
        "checkpoint": "/ck/x",
        "baseline": 41,
        "min_batches": 2,
        "deadline": 1000.5,
        "started_at": 900.0,
        "poll_interval": 0.5,
    }
    assert CommittedBatchesTrigger(**kwargs).serialize() == (classpath, kwargs)


async def _first_event(trigger: CommittedBatchesTrigger) -> dict[str, Any]:
    gen = trigger.run()
    try:
        event = await asyncio.wait_for(gen.asend(None), timeout=30)
    finally:
        await gen.aclose()
    return event.payload


def test_trigger_success_after_batches_arrive(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [41], state="running")

    async def scenario() -> dict[str, Any]:
        trigger = CommittedBatchesTrigger(ck, 41, 2, time.time() + 30, time.time(), poll_interval=0.05)
        waiting = asyncio.ensure_future(_first_event(trigger))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        commit(ck, 42)
        commit(ck, 43)
        return await waiting

    event = asyncio.run(scenario())
    assert event["status"] == "success" and event["message"] == "2/2 batches committed after batch 41"
    assert event["check"]["latest_commit"] == 43


def test_trigger_error_when_the_job_fails(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [41], state="failed", error="IllegalStateException: batch 6 doesn't exist")
    event = asyncio.run(_first_event(CommittedBatchesTrigger(ck, 41, 2, time.time() + 30, time.time(), 0.05)))
    assert event == {
        "status": "error",
        "message": "the job failed: IllegalStateException: batch 6 doesn't exist",
        "check": {"baseline": 41, "needed": 2, "committed_after": 0, "latest_commit": 41},
    }


def test_trigger_timeout_on_an_idle_source(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [41], idle_at=time.time())
    event = asyncio.run(_first_event(CommittedBatchesTrigger(ck, 41, 2, time.time() + 0.2, time.time(), 0.05)))
    assert event["status"] == "timeout" and "the source produced no data" in event["message"]


def test_sensor_execute_complete_maps_events_to_outcomes() -> None:
    sensor = CommittedBatchesSensor(task_id="s", checkpoint="/ck/x")
    assert sensor.execute_complete({}, {"status": "success", "message": "2/2", "check": {"a": 1}}) == {"a": 1}
    with pytest.raises(CommittedBatchesTimeoutError, match="no data"):
        sensor.execute_complete({}, {"status": "timeout", "message": "no data"})
    with pytest.raises(CommittedBatchesError, match="the job failed"):
        sensor.execute_complete({}, {"status": "error", "message": "the job failed: x"})


def test_sensor_baseline_forms(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [3, 9])

    def baseline(value: Any) -> int | None:
        return CommittedBatchesSensor(task_id="s", checkpoint=ck, baseline_batch=value)._resolve_baseline()

    assert baseline("latest") == 9
    assert baseline({"start_batch": 3, "job": "x"}) == 3
    assert baseline({"start_batch": None}) is None
    assert baseline("7") == 7
    with pytest.raises(ValueError, match="baseline_batch must be"):
        baseline("soon")


def test_sensor_pokes_once_and_succeeds_without_deferring(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [3, 4, 5], state="running")
    sensor = CommittedBatchesSensor(task_id="s", checkpoint=ck, baseline_batch=3)
    assert sensor.execute({})["committed_after"] == 2


def test_sensor_fails_at_once_when_the_job_failed(tmp_path: Path) -> None:
    ck = checkpoint(tmp_path, [3], state="failed", error="boom")
    with pytest.raises(CommittedBatchesError, match="the job failed: boom"):
        CommittedBatchesSensor(task_id="s", checkpoint=ck, baseline_batch=3).execute({})


def test_an_unreadable_status_record_fails_sensor_and_trigger_with_the_file_named(tmp_path: Path) -> None:
    from airflow_async_stream.exceptions import ControlAreaError

    ck = checkpoint(tmp_path, [3], state="running")
    Path(ck + ".async-stream", "status.json").write_text('{"state": "runn')  # truncated mid-write by hand
    with pytest.raises(ControlAreaError, match=r"status.json is not valid JSON"):
        CommittedBatchesSensor(task_id="s", checkpoint=ck, baseline_batch=3).execute({})
    event = asyncio.run(_first_event(CommittedBatchesTrigger(ck, 3, 2, time.time() + 30, time.time(), 0.05)))
    assert event["status"] == "error" and "status.json is not valid JSON" in event["message"]


def test_the_sensor_defers_to_the_trigger_with_the_first_pokes_baseline_and_deadline(tmp_path: Path) -> None:
    from datetime import timedelta

    from airflow.sdk.exceptions import TaskDeferred

    ck = checkpoint(tmp_path, [3, 9], state="running")
    sensor = CommittedBatchesSensor(
        task_id="s", checkpoint=ck, min_batches=2, wait_timeout_s=120, poke_interval=0.5, deferrable=True
    )
    before = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})

    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout == timedelta(seconds=180)
    trigger = deferred.value.trigger
    assert isinstance(trigger, CommittedBatchesTrigger)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_async_stream.triggers.committed_batches.CommittedBatchesTrigger"
    started = kwargs.pop("started_at")
    assert before <= started <= time.time()
    assert kwargs == {
        "checkpoint": ck,
        "baseline": 9,
        "min_batches": 2,
        "deadline": started + 120,
        "poll_interval": 0.5,
    }


def test_deferrable_follows_airflows_default_deferrable_setting() -> None:
    import subprocess
    import sys

    probe = (
        "from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor as S; "
        "print(S(task_id='s', checkpoint='/ck/x').deferrable)"
    )

    def default(setting: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k != "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"}
        if setting is not None:
            env["AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"] = setting
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip().splitlines()[-1]

    assert default(None) == "False"
    assert default("true") == "True"


def test_the_sensors_timeout_is_an_airflow_sensor_timeout_with_the_reason(tmp_path: Path) -> None:
    from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException

    ck = checkpoint(tmp_path, [3], state="running", idle_at=time.time(), last_progress_at=time.time() - 5)
    for deferrable in (False, True):
        sensor = CommittedBatchesSensor(
            task_id="s", checkpoint=ck, baseline_batch=3, wait_timeout_s=0, deferrable=deferrable
        )
        with pytest.raises(AirflowSensorTimeout, match="the source produced no data") as raised:
            sensor.execute({})
        assert isinstance(raised.value, CommittedBatchesTimeoutError)  # still the provider's own error
        soft = CommittedBatchesSensor(
            task_id="s", checkpoint=ck, baseline_batch=3, wait_timeout_s=0, deferrable=deferrable, soft_fail=True
        )
        with pytest.raises(AirflowSkipException):
            soft.execute({})
    with pytest.raises(AirflowSensorTimeout, match="no data"):
        sensor.execute_complete({}, {"status": "timeout", "message": "no data"})


def test_reschedule_mode_with_the_latest_baseline_is_refused_at_parse_where_airflow_keeps_no_task_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_async_stream.sensors import committed_batches

    CommittedBatchesSensor(task_id="s", checkpoint="/ck/x", mode="reschedule", deferrable=False)  # Airflow 3.3+
    monkeypatch.setattr(committed_batches, "_airflow_keeps_task_state", lambda: False)  # as on Airflow 3.1/3.2
    with pytest.raises(ValueError, match=r"baseline_batch='latest' needs Airflow 3\.3\+ in mode='reschedule'"):
        CommittedBatchesSensor(task_id="s", checkpoint="/ck/x", mode="reschedule", deferrable=False)
    # A fixed baseline, another mode, or deferring needs no task state.
    CommittedBatchesSensor(task_id="s", checkpoint="/ck/x", mode="reschedule", deferrable=False, baseline_batch=7)
    CommittedBatchesSensor(task_id="s", checkpoint="/ck/x", mode="poke", deferrable=False)
    CommittedBatchesSensor(task_id="s", checkpoint="/ck/x", mode="reschedule", deferrable=True)
