"""The tuner DAG: on a schedule, one tuning step for each job of a fleet whose spec delegates async progress
tracking's fields (``auto``): measure, switch in place, measure again, keep or revert (autotune/). Runs one at a
time, so two runs never step the same job."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from airflow_async_stream.factories.supervise import fleet_indexes_of
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.operators.autotune import AutotuneJobsOperator

__all__ = ["autotune_dag"]


def autotune_dag(
    folder_or_index: str | Path | None = None,
    *,
    checkpoint_folders: list[str] | None = None,
    schedule: Any = timedelta(minutes=5),
    dag_id: str = "autotune",
    conn_id: str = StreamingJobHook.default_conn_name,
    wait_timeout_s: float = 600.0,
    **dag_kwargs: Any,
) -> DAG:
    """Build the tuner of the jobs a desired-state folder's fleet index (or a fleet index URL) and the
    ``checkpoint_folders`` name. Each run takes one step per job; a trial takes a few runs (its baseline, the
    change, its measurement), each job's spec bounds it (``autotune``; README: Letting it tune itself)."""
    fleet_indexes = fleet_indexes_of(folder_or_index)
    folders = [f if "://" in f else str(Path(f).absolute()) for f in checkpoint_folders or []]
    if not fleet_indexes and not folders:
        raise ValueError("autotune_dag: give a desired-state folder or fleet index, or checkpoint_folders")
    dag_kwargs.setdefault("max_active_runs", 1)
    dag_kwargs.setdefault("catchup", False)
    dag_kwargs.setdefault("tags", ["airflow-async-stream", "autotune"])
    with DAG(dag_id=dag_id, schedule=schedule, **dag_kwargs) as dag:
        AutotuneJobsOperator(
            task_id="autotune",
            fleet_indexes=fleet_indexes,
            checkpoint_folders=folders,
            conn_id=conn_id,
            wait_timeout_s=wait_timeout_s,
        )
    return dag
