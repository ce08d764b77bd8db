"""A driver whose Python has nothing of ours installed (a bare venv, Spark's own zips for pyspark): the deploy
ships the runtime bundle and the job's own Python files (a zip on ``python_dependencies``), and the job
deploys, switches in place through the safe-disable migration, and stops, through Airflow on the embedded
local Spark. (The standalone cluster's test runs its driver the same way.)"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.integration.helpers import (
    USER_CODE,
    assert_ran_from_the_bundle,
    bare_driver_conf,
    run_dag,
    task_states,
    write_job_dag,
    xcom,
)

pytestmark = pytest.mark.integration


def test_a_bare_python_driver_deploys_migrates_in_place_and_stops(
    airflow_db: None, checkpoint_dir: str, bare_python: str, tmp_path: Path
) -> None:
    libs = tmp_path / "user-jobs.zip"  # the team's transforms, as a zip: nothing on the driver's PYTHONPATH
    with zipfile.ZipFile(libs, "w") as archive:
        for path in (USER_CODE / "user_jobs").glob("*.py"):
            archive.write(path, f"user_jobs/{path.name}")
    spec = rate_noop(
        "bare-driver",
        checkpoint_dir,
        rows=50,
        trigger={"processing_time": "300 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
        spark_conf=bare_driver_conf(bare_python),
        transform={"entrypoint": "user_jobs.transforms:evens"},
        python_dependencies=[str(libs)],
    )
    path = write_job_dag(
        "bare_driver",
        spec,
        """
        start = DeployStreamingJobOperator(task_id="start_async", spec=SPEC, startup_timeout_s=240)
        running = CommittedBatchesSensor(task_id="async_batches", checkpoint=SPEC["checkpoint"], min_batches=2,
                                         baseline_batch=start.output, wait_timeout_s=180, deferrable=False)
        migrate = safe_disable_async_progress(SPEC, wait_timeout_s=180, deferrable=False)
        stop = StopStreamingJobOperator(task_id="stop", spec=SPEC)
        start >> running >> migrate >> stop
        """,
    )
    run = run_dag(path, "bare_driver")

    assert str(run.state) == "success", task_states(run)
    stages = xcom(run, "safe_disable.release_job")["stages"]
    assert [(s["to"], s["how"]) for s in stages] == [("async_interval_0", "in_place"), ("synchronous", "in_place")]
    control = ControlArea.for_checkpoint(checkpoint_dir)
    status = control.read_json(ControlArea.STATUS)
    assert status["state"] == "stopped" and status["switches"] == 2, status
    assert status["deployment_id"] == xcom(run, "start_async")["deployment_id"]  # one driver throughout
    assert_ran_from_the_bundle(status, bare_python)
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe
    progress = control.read_progress()
    assert progress and max(e["num_input_rows"] for e in progress) > 0  # the zip's transform ran
