"""A rollout whose new spec Spark rejects in the running driver (a trigger it cannot parse, switched in place;
a column that does not exist, which needs a new driver): the job runs on untouched (same driver, its query
never stopped, no batch run twice), the run fails naming why, and the next plans hold that spec back until
the file changes."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.progress_log import read_events, segments
from tests.helpers import until
from tests.integration.helpers import fleet_job, load_dag, run_dag, task_states, write_dag
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration


def _write(folder: Path, spec: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_fleet.yaml").write_text(f"index: {folder.parent / 'fleet-index'}\n")
    (folder / "job-a.yaml").write_text(yaml.safe_dump(spec))


def _batches(control: ControlArea) -> list[int]:
    return [event["batch_id"] for event in read_events(control, segments(control)) if "batch_id" in event]


def test_a_change_spark_rejects_leaves_the_job_running_and_is_not_retried_until_the_file_changes(
    airflow_db: None, tmp_path: Path
) -> None:
    root, folder = CHECKPOINT_ROOT / f"failing-{uuid.uuid4().hex[:8]}", tmp_path / "desired"
    v1 = fleet_job(root, "job-a", trigger={"processing_time": "300 milliseconds"})
    control = ControlArea.for_checkpoint(v1["checkpoint"])
    _write(folder, v1)
    path = write_dag(
        "failing_change",
        f"""
        from airflow_async_stream.factories import rollout_dag

        rollout_dag({str(folder)!r}, dag_id="failing_change", startup_timeout_s=240, wait_timeout_s=60)
        """,
    )
    run = run_dag(path, "failing_change")
    assert str(run.state) == "success", task_states(run)
    before = control.read_json("status.json")

    # A runtime setting's value Spark refuses: the validator passes it (a trigger Spark cannot parse no longer
    # gets this far), the driver's switch is where Spark says no.
    v2 = fleet_job(
        root,
        "job-a",
        trigger={"processing_time": "300 milliseconds"},
        spark_conf={"spark.sql.shuffle.partitions": "not-a-number"},
    )
    _write(folder, v2)
    [item] = plan_folder(folder)
    assert (item.action, item.how, item.held_back) == ("update", "in_place", False)
    failed = run_dag(path, "failing_change")

    states = task_states(failed)
    assert str(failed.state) == "failed" and states["apply"] == "failed" and states["summary"] == "failed", states
    record = control.read_json("rollout.json")
    assert (record["outcome"], record.get("not_taken")) == ("failed", True), record
    assert "Spark rejects the new configuration" in record["error"] and "not-a-number" in record["error"], record
    assert "its query runs on as it was, never stopped" in record["error"]
    status = control.read_json("status.json")
    assert liveness(status).live and status["state"] == "running"
    assert (status["pid"], status["deployment_id"], status["query_run_id"]) == (
        before["pid"],
        before["deployment_id"],
        before["query_run_id"],
    )  # the same driver and the same query: no rollback restart, not even of the query
    assert status["configuration"]["trigger"] == {"processing_time": "300 milliseconds"}
    latest = status["last_batch_id"]
    until(
        lambda: control.read_json("status.json")["last_batch_id"] > latest, 60, what="a batch after the failed change"
    )
    twice = [batch for batch, seen in Counter(_batches(control)).items() if seen > 1]
    assert twice == [], f"batches run twice: {twice}"

    # The next plan names the failure and holds the spec back; a run does not try it again.
    [held] = plan_folder(folder)
    assert held.held_back and f"failed at {failed.run_id}" in held.reason, held.reason
    assert "not retried until the spec changes" in held.reason
    request_before = control.read_json("switch.json")["request_id"]
    again = run_dag(path, "failing_change")
    assert str(again.state) == "failed" and task_states(again)["apply"] == "failed"
    assert control.read_json("switch.json")["request_id"] == request_before  # nothing was asked
    assert control.read_json("rollout.json") == record  # its record of the failure stays

    # Asked to, a run tries the same spec again (Spark rejects it again; the query is still untouched).
    retried = load_dag(path, "failing_change").test(run_conf={"retry_failed": True})
    assert str(retried.state) == "failed" and task_states(retried)["apply"] == "failed"
    again_record = control.read_json("rollout.json")
    assert (again_record["run_id"], again_record["not_taken"]) == (retried.run_id, True)
    assert control.read_json("switch.json")["request_id"] != request_before
    assert control.read_json("status.json")["query_run_id"] == before["query_run_id"]

    # Another spec in the file is planned as any change.
    v3 = fleet_job(root, "job-a", trigger={"processing_time": "500 milliseconds"})
    _write(folder, v3)
    [changed] = plan_folder(folder)
    assert (changed.action, changed.how, changed.held_back) == ("update", "in_place", False)

    # A transform change needs a new driver; the running one builds the new query first, and Spark's
    # analysis says no before the old driver is stopped for it.
    v4 = fleet_job(
        root,
        "job-a",
        trigger={"processing_time": "300 milliseconds"},
        transform={"sql": "SELECT no_such_column FROM source"},
    )
    _write(folder, v4)
    [item] = plan_folder(folder)
    assert (item.action, item.how, item.held_back) == ("update", "restart", False)
    broken = run_dag(path, "failing_change")
    assert str(broken.state) == "failed" and task_states(broken)["apply"] == "failed"
    record = control.read_json("rollout.json")
    assert (record["run_id"], record["outcome"], record.get("not_taken")) == (broken.run_id, "failed", True)
    assert "no_such_column" in record["error"], record
    status = control.read_json("status.json")
    assert liveness(status).live and (status["pid"], status["query_run_id"]) == (before["pid"], before["query_run_id"])
    assert control.read_json("switch.json")["outcome"] == "failed"
    [held] = plan_folder(folder)
    assert held.held_back and "no_such_column" in held.reason
