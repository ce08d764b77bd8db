"""The safe-disable migration against real Spark and real Airflow, with its negative control."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_async_stream.checkpoint import batch_ids, inspect_checkpoint
from airflow_async_stream.continuity import continuity_problems
from airflow_async_stream.control import ControlArea, liveness
from tests.conftest import CHECKPOINT_ROOT, DAGS_FOLDER
from tests.integration.conftest import checkpoint_files, run_dag, task_states, write_dag

pytestmark = pytest.mark.integration
SCRIPTS = Path(__file__).resolve().parent / "spark_scripts"


def plain(checkpoint: str, mode: str) -> dict:
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "plain_rate_noop.py"), checkpoint, mode],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_negative_control_plain_sync_restart_over_async_gaps_really_fails(checkpoint_dir: str) -> None:
    made = plain(checkpoint_dir, "gaps")
    assert made["error"] is None, made
    inspection = inspect_checkpoint(checkpoint_dir)
    n = inspection.latest_offset
    assert not inspection.sync_restart_safe
    assert f"batch {n - 1} doesn't exist" in inspection.reason

    restarted = plain(checkpoint_dir, "sync")
    # Spark names the missing batch either way, depending on where the commit log stopped.
    spark_said = re.compile(rf"batch {n - 1} doesn't exist|Previous batch {n - 1} not found in offset log")
    assert spark_said.search(restarted["error"] or ""), (restarted["error"] or "")[:400]


def test_safe_disable_dag_turns_async_off_without_losing_anything(airflow_db: None) -> None:
    started = run_dag(DAGS_FOLDER / "example_start_async_job.py", "example_start_async_job")
    assert task_states(started) == {"deploy": "success", "three_durable_commits": "success"}
    checkpoint = str(CHECKPOINT_ROOT / "clicks-async")
    before = inspect_checkpoint(checkpoint)
    assert not before.sync_restart_safe and "doesn't exist" in before.reason
    files_before = checkpoint_files(checkpoint)

    migrated = run_dag(DAGS_FOLDER / "example_safe_disable.py", "example_safe_disable")

    steps = task_states(migrated)
    assert steps.pop("safe_disable.rollback_to_async") == "skipped"
    assert set(steps.values()) == {"success"}, steps
    control = ControlArea.for_checkpoint(checkpoint)
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"]["enabled"] is False
    status = control.read_json("status.json")
    assert status["deployment_id"] == deployment["deployment_id"] and liveness(status).live

    gate = inspect_checkpoint(checkpoint)
    assert gate.sync_restart_safe
    committed_sync = [b for b in batch_ids(checkpoint, "commits") if b > deployment["start_batch"]]
    assert committed_sync, "the synchronous job committed no batch"

    files_after = checkpoint_files(checkpoint)
    changed = {name for name, digest in files_before.items() if files_after.get(name) != digest}
    assert not changed, f"checkpoint files deleted or rewritten: {sorted(changed)}"

    assert continuity_problems(control.read_progress()) == []


def test_failed_sync_redeploy_rolls_back_to_async(airflow_db: None, checkpoint_dir: str, capfd) -> None:
    spec = {
        "name": "rollback-job",
        "checkpoint": checkpoint_dir,
        "source": {"format": "rate", "options": {"rowsPerSecond": 500}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "200 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 2000},
    }
    path = write_dag(
        "safe_disable_rollback",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.migrations import safe_disable_async_progress

        @dag(schedule=None)
        def safe_disable_rollback():
            # The driver cannot load this entrypoint: the synchronous redeploy fails in the driver.
            safe_disable_async_progress(
                {spec!r}, sync_overrides={{"transform": {{"entrypoint": "no_such_module:build"}}}}
            )

        safe_disable_rollback()
        """,
    )
    dag_run = run_dag(path, "safe_disable_rollback")
    out = capfd.readouterr()

    assert str(dag_run.state) == "failed"
    states = task_states(dag_run)
    assert states["safe_disable.deploy_sync"] == "failed"
    assert states["safe_disable.wait_sync_batch"] == "upstream_failed"
    assert states["safe_disable.rollback_to_async"] == "failed"  # it redeployed, then failed the run on purpose
    assert states["safe_disable.release_job"] == "upstream_failed"  # the group's leaf fails with it
    text = out.out + out.err
    assert "async progress tracking stays on for job 'rollback-job'" in text
    assert "step safe_disable.deploy_sync failed" in text and "no_such_module" in text

    control = ControlArea.for_checkpoint(checkpoint_dir)
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 0}
    status = control.read_json("status.json")
    assert status["deployment_id"] == deployment["deployment_id"] and status["state"] == "running"
    assert liveness(status).live
