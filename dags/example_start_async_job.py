"""Start the clicks-async job with async progress tracking on (3 s interval) and wait for gaps in its logs.

This is the situation the safe-disable migration cures: run `example_safe_disable` next.
Set ASYNC_STREAM_DEMO_ROOT to choose where checkpoints go (default /tmp/airflow-async-stream-demo).
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import dag

from airflow_async_stream.operators import DeployStreamingJobOperator
from airflow_async_stream.sensors import CommittedBatchesSensor
from airflow_async_stream.spec.load import resolve_spec

ROOT = os.environ.get("ASYNC_STREAM_DEMO_ROOT", "/tmp/airflow-async-stream-demo")
JOB = resolve_spec(Path(__file__).parent / "specs" / "clicks_async.yaml", {"checkpoint": f"{ROOT}/clicks-async"})


@dag(schedule=None, catchup=False, tags=["async-stream", "example"])
def example_start_async_job():
    deploy = DeployStreamingJobOperator(task_id="deploy", spec=JOB, redeploy=True)
    # Three durable commits with a 3 s interval: the batches between them exist only in memory.
    CommittedBatchesSensor(
        task_id="three_durable_commits",
        checkpoint=JOB.checkpoint,
        min_batches=3,
        baseline_batch=deploy.output,
        wait_timeout_s=120,
    )


example_start_async_job()
