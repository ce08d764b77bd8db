"""The safe-disable migration against real Spark and real Airflow, with its negative control."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.insight.batches import continuity_problems
from airflow_async_stream.state.checkpoint import batch_ids, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from tests.helpers import rate_noop
from tests.integration.helpers import checkpoint_files, run_dag, task_states, write_dag, xcom
from tests.integration.migration_job import async_job, start_async_job
from tests.session import CHECKPOINT_ROOT, DAGS_FOLDER

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


def _start_gapped_async_job(checkpoint: str | None = None) -> str:
    """The example job, started by its example DAG (or by a DAG of the same shape on ``checkpoint``), with
    gaps in its offset and commit logs: a direct synchronous restart would fail."""
    if checkpoint is None:
        started = run_dag(DAGS_FOLDER / "example_start_async_job.py", "example_start_async_job")
        checkpoint = str(CHECKPOINT_ROOT / "clicks-async")
    else:
        source = (DAGS_FOLDER / "example_start_async_job.py").read_text()
        dag_id = "start_async_job_at_" + Path(checkpoint).name.replace("-", "_")
        path = write_dag(
            dag_id,
            source.replace('f"{ROOT}/clicks-async"', repr(checkpoint))
            .replace("def example_start_async_job", f"def {dag_id}")
            .replace("example_start_async_job()", f"{dag_id}()"),
        )
        started = run_dag(path, dag_id)
    assert task_states(started) == {"deploy": "success", "three_durable_commits": "success"}
    before = inspect_checkpoint(checkpoint)
    assert not before.sync_restart_safe and "doesn't exist" in before.reason
    return checkpoint


def _assert_safe_and_synchronous(checkpoint: str, files_before: dict[str, str], migrated: Any) -> list[dict]:
    """Every step succeeded, the job runs synchronously on a safe checkpoint that lost nothing; the stages."""
    steps = task_states(migrated)
    assert steps.pop("safe_disable.rollback_to_async") == "skipped"
    assert set(steps.values()) == {"success"}, steps
    control = ControlArea.for_checkpoint(checkpoint)
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"]["enabled"] is False
    status = control.read_json("status.json")
    assert status["deployment_id"] == deployment["deployment_id"] and liveness(status).live
    assert status["configuration"]["async_progress"]["enabled"] is False

    stages = xcom(migrated, "safe_disable.release_job")["stages"]
    assert [s["to"] for s in stages] == ["async_interval_0", "synchronous"], stages
    assert all(isinstance(s["pause_s"], float) and s["pause_s"] > 0 for s in stages), stages
    gate = inspect_checkpoint(checkpoint)
    assert gate.sync_restart_safe
    committed_sync = [b for b in batch_ids(checkpoint, "commits") if b > stages[-1]["start_batch"]]
    assert committed_sync, "the synchronous job committed no batch"

    files_after = checkpoint_files(checkpoint)
    changed = {name for name, digest in files_before.items() if files_after.get(name) != digest}
    assert not changed, f"checkpoint files deleted or rewritten: {sorted(changed)}"
    assert continuity_problems(control.read_progress()) == []
    return stages


def test_safe_disable_dag_switches_the_running_driver_in_place(airflow_db: None) -> None:
    checkpoint = _start_gapped_async_job()
    control = ControlArea.for_checkpoint(checkpoint)
    driver = control.read_json("status.json")["deployment_id"]
    files_before = checkpoint_files(checkpoint)

    migrated = run_dag(DAGS_FOLDER / "example_safe_disable.py", "example_safe_disable")

    stages = _assert_safe_and_synchronous(checkpoint, files_before, migrated)
    assert [(s["how"], s["outcome"]) for s in stages] == [("in_place", "switched")] * 2, stages
    status = control.read_json("status.json")
    assert status["deployment_id"] == driver and status["switches"] == 2  # one driver throughout
    assert control.read_switch_account().gate, "the driver ran no gate at the synchronous switch"
    # The example's spec file still says async on: the last step names it and the change to make.
    [spec_file] = xcom(migrated, "safe_disable.release_job")["spec_files"]
    example = DAGS_FOLDER / "specs" / "clicks_async.yaml"
    assert (spec_file["file"], spec_file["async_progress_enabled"]) == (str(example.resolve()), True)
    assert "still says async_progress.enabled: true: set it to false" in spec_file["advice"]


def test_safe_disable_dag_asked_for_restarts_redeploys_at_each_switch(airflow_db: None, checkpoint_dir: str) -> None:
    checkpoint = _start_gapped_async_job(checkpoint_dir)
    driver = ControlArea.for_checkpoint(checkpoint).read_json("status.json")["deployment_id"]
    files_before = checkpoint_files(checkpoint)
    path = write_dag(
        "safe_disable_by_restarts",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress
        from airflow_async_stream.spec import resolve_spec

        @dag(schedule=None)
        def safe_disable_by_restarts():
            safe_disable_async_progress(
                resolve_spec({str(DAGS_FOLDER / "specs" / "clicks_async.yaml")!r}, {{"checkpoint": {checkpoint!r}}}),
                in_place=False,
            )

        safe_disable_by_restarts()
        """,
    )

    migrated = run_dag(path, "safe_disable_by_restarts")
    stages = _assert_safe_and_synchronous(checkpoint, files_before, migrated)

    assert [(s["how"], s["outcome"]) for s in stages] == [("restart", "deployed")] * 2, stages
    assert len({driver, *(s["deployment_id"] for s in stages)}) == 3  # a new driver at each switch
    [spec_file] = xcom(migrated, "safe_disable.release_job")["spec_files"]
    assert spec_file["file"] is None and "given in the DAG, not in a file" in spec_file["advice"]


def test_failed_sync_redeploy_rolls_back_to_async(airflow_db: None, checkpoint_dir: str, capfd) -> None:
    spec = rate_noop(
        "rollback-job",
        checkpoint_dir,
        rows=500,
        trigger={"processing_time": "200 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
    )
    path = write_dag(
        "safe_disable_rollback",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress

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
    assert states["safe_disable.to_synchronous"] == "failed"
    assert states["safe_disable.wait_sync_batch"] == "upstream_failed"
    assert states["safe_disable.rollback_to_async"] == "failed"  # it redeployed, then failed the run on purpose
    assert states["safe_disable.release_job"] == "upstream_failed"  # the group's leaf fails with it
    text = out.out + out.err
    assert "async progress tracking stays on for job 'rollback-job'" in text
    assert "step safe_disable.to_synchronous failed" in text and "no_such_module" in text

    control = ControlArea.for_checkpoint(checkpoint_dir)
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 0}
    status = control.read_json("status.json")
    assert status["deployment_id"] == deployment["deployment_id"] and status["state"] == "running"
    assert liveness(status).live


def test_a_synchronous_switch_that_fails_in_place_rolls_back_without_a_new_driver(
    airflow_db: None, checkpoint_dir: str, capfd
) -> None:
    """The in-place path's rollback: the synchronous query cannot start (a session setting Spark rejects), the
    driver runs its interval-0 query again, and the run fails saying so; the job never lost its driver."""
    start_async_job(checkpoint_dir)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    driver = control.read_json("status.json")["deployment_id"]
    spec = async_job(checkpoint_dir, "300 milliseconds")
    path = write_dag(
        "safe_disable_rollback_in_place",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress

        @dag(schedule=None)
        def safe_disable_rollback_in_place():
            safe_disable_async_progress(
                {spec!r}, sync_overrides={{"spark_conf": {{"spark.sql.shuffle.partitions": "not-a-number"}}}},
                deferrable=False,
            )

        safe_disable_rollback_in_place()
        """,
    )
    dag_run = run_dag(path, "safe_disable_rollback_in_place")
    out = capfd.readouterr()

    states = task_states(dag_run)
    assert str(dag_run.state) == "failed"
    assert states["safe_disable.to_synchronous"] == "failed"
    assert states["safe_disable.rollback_to_async"] == "failed"  # it ensured async at interval 0, then failed the run
    text = out.out + out.err
    assert "step safe_disable.to_synchronous failed" in text and "not-a-number" in text
    assert f"The job runs on with async on and checkpoint interval 0 (deployment {driver})" in text
    status = control.read_json("status.json")
    assert status["deployment_id"] == driver and liveness(status).live  # the same driver throughout
    assert status["configuration"]["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 0}
    assert control.read_switch_account().outcome == "failed"
