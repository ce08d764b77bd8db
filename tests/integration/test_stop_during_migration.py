"""A stop from the command line while the safe-disable DAG holds the job: refused, and the migration
completes; forced, and the migration fails without redeploying the job the user stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.state.control import ControlArea
from tests.integration.helpers import run_dag_while, task_states
from tests.integration.migration_job import live_drivers, migration_dag, start_async_job

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def _run_with_stop(path: Path, dag_id: str, control: ControlArea, *stop_args: str) -> tuple[Any, dict]:
    """Run the DAG; once its interval-0 driver is up (from its first status record) under the run's hold,
    `airflow-async-stream stop` it. The driver says "starting" seconds before its query runs, so the stop
    comes while the migration still needs the job, whatever the phase of the trigger's clock (a later
    moment, such as the deploy's confirmation, can fall after the second batch that ends the wait)."""
    seen: dict = {}

    def stop_when_held() -> bool:
        record = control.read_json(ControlArea.DEPLOYMENT) or {}
        status = control.read_json(ControlArea.STATUS) or {}
        hold = control.read_json("hold.json") or {}
        if (
            record.get("async_progress") != {"enabled": True, "checkpoint_interval_ms": 0}
            or status.get("deployment_id") != record.get("deployment_id")
            or status.get("state") not in ("starting", "running")
            or not str(hold.get("holder", "")).startswith("DAG run")
        ):
            return False
        seen["stop"] = subprocess.run([CLI, "stop", control.url, *stop_args], capture_output=True, text=True)
        seen["deployment_after_stop"] = (control.read_json(ControlArea.DEPLOYMENT) or {}).get("deployment_id")
        return True

    dag_run = run_dag_while(path, dag_id, stop_when_held)
    assert "stop" in seen, "the run never held a live interval-0 deployment"
    return dag_run, seen


def test_a_stop_during_the_migration_is_refused_and_a_forced_one_ends_it_without_redeploy(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    start_async_job(checkpoint_dir)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    dag_id = "stop_during_migration"
    # A batch every 3 s keeps the migration waiting a while after the stop is refused.
    path = migration_dag(checkpoint_dir, dag_id, "3 seconds")

    dag_run, seen = _run_with_stop(path, dag_id, control)

    refused = seen["stop"]
    assert refused.returncode == 1, refused
    assert f"held by DAG run {dag_id}/" in refused.stderr and "--force" in refused.stderr
    assert str(dag_run.state) == "success", task_states(dag_run)
    assert control.read_json(ControlArea.DEPLOYMENT)["async_progress"]["enabled"] is False
    assert control.read_json(ControlArea.STATUS)["state"] == "running"
    capfd.readouterr()

    dag_run, seen = _run_with_stop(path, dag_id, control, "--force")
    out = capfd.readouterr()

    forced = seen["stop"]
    assert forced.returncode == 0, forced
    assert f"ended the hold of DAG run {dag_id}/" in forced.stdout and "stopped: state stopped" in forced.stdout
    assert str(dag_run.state) == "failed"
    states = task_states(dag_run)
    assert states["safe_disable.rollback_to_async"] == "failed", states
    assert "may no longer change" in out.out + out.err
    # Nothing was deployed after the user's stop: the job stays as the stop left it.
    record = control.read_json(ControlArea.DEPLOYMENT)
    assert record["deployment_id"] == seen["deployment_after_stop"]
    assert control.read_json(ControlArea.STATUS)["state"] == "stopped"


def test_a_forced_stop_as_the_synchronous_driver_launches_is_not_undone(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """On the restart path, at the moment the synchronous deploy's record is written and no status names it
    (where a stop used to be undone: the new driver ran on and the run succeeded): the stop wins."""
    start_async_job(checkpoint_dir)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    dag_id = "stop_as_sync_launches"
    path = migration_dag(checkpoint_dir, dag_id, "300 milliseconds", in_place=False)
    seen: dict = {}

    def stop_as_sync_launches() -> bool:
        record = control.read_json(ControlArea.DEPLOYMENT) or {}
        status = control.read_json(ControlArea.STATUS) or {}
        if record.get("async_progress", {}).get("enabled") is not False or status.get("deployment_id") == record.get(
            "deployment_id"
        ):
            return False
        seen["deployment"] = record["deployment_id"]
        seen["stop"] = subprocess.run([CLI, "stop", control.url, "--force"], capture_output=True, text=True)
        return True

    dag_run = run_dag_while(path, dag_id, stop_as_sync_launches)
    capfd.readouterr()

    assert "stop" in seen, "the run never launched its synchronous driver"
    forced = seen["stop"]
    assert forced.returncode == 0, forced
    assert forced.stdout.splitlines()[-1].startswith("stopped: "), forced.stdout  # never "was not running"
    assert str(dag_run.state) == "failed", task_states(dag_run)
    # The stop came after the launch (the driver stopped before its first batch), or between the record and
    # the launch (the step launched nothing): either way nothing of the synchronous deployment ever ran.
    status = control.read_json(ControlArea.STATUS)
    assert status["state"] == "stopped", status
    if status["deployment_id"] == seen["deployment"]:
        assert status["batches"] == 0 and "before its query started" in status["stop_reason"], status
    else:
        assert control.read_json(ControlArea.DEPLOYMENT)["state"] == "not launched"
    assert control.read_progress(seen["deployment"]) == []
    assert live_drivers(control) == []
