"""Deploy a rate -> noop job with async progress tracking, wait for a committed batch, stop it gracefully.

Set ASYNC_STREAM_DEMO_ROOT to choose where checkpoints go (default /tmp/airflow-async-stream-demo).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from airflow.sdk import dag, task

from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
from airflow_async_stream.spec.load import resolve_spec

ROOT = os.environ.get("ASYNC_STREAM_DEMO_ROOT", "/tmp/airflow-async-stream-demo")
# Validated here, at parse time: a bad spec file breaks this DAG's import with the field named.
JOB = resolve_spec(Path(__file__).parent / "specs" / "rate_to_noop.yaml", {"checkpoint": f"{ROOT}/rate-to-noop"})


@dag(schedule=None, catchup=False, tags=["async-stream", "example"])
def example_deploy_stop():
    deploy = DeployStreamingJobOperator(task_id="deploy", spec=JOB, redeploy=True)

    @task.sensor(poke_interval=1, timeout=120, mode="poke")
    def committed_batch(deployment: dict) -> bool:
        """A batch newer than the one committed before the deploy is in the checkpoint's commit log."""
        from airflow_async_stream.state.checkpoint import latest_batch

        latest = latest_batch(deployment["checkpoint"], "commits")
        baseline = deployment["start_batch"]
        return latest is not None and (baseline is None or latest > baseline)

    stop = StopStreamingJobOperator(task_id="stop", spec=JOB, execution_timeout=timedelta(minutes=5))
    committed_batch(deploy.output) >> stop


example_deploy_stop()
