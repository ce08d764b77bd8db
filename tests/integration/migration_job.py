"""The job the migration-under-adversity tests use, started the way users start it, and its drivers."""

from __future__ import annotations

import subprocess
from pathlib import Path

from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop, until


def async_job(checkpoint: str, trigger: str) -> dict:
    """The job under test: async on with a 2 s interval, so its logs have gaps."""
    return rate_noop(
        "fault-job",
        checkpoint,
        rows=200,
        trigger={"processing_time": trigger},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
    )


def start_async_job(checkpoint: str) -> None:
    """The job as it runs before the migration: async on, interval 2 s (gaps), deployed by the provider."""
    from airflow_async_stream.operators.deploy import DeployStreamingJobOperator

    spec = async_job(checkpoint, "300 milliseconds")
    DeployStreamingJobOperator(task_id="start", spec=spec).execute({})
    until(lambda: len(batch_ids(checkpoint, "commits")) >= 2, 120, what="two async commits", every_s=0.2)


def live_drivers(control: ControlArea) -> list[int]:
    """Pids of live runtime drivers (Python processes) serving this control area."""
    out = subprocess.run(["pgrep", "-f", f"driver.py --control-area {control.url} "], capture_output=True, text=True)
    pids = []
    for pid in out.stdout.split():  # the spark-submit JVM carries the same arguments: keep the Python driver
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if "python" in Path(argv0).name:
            pids.append(int(pid))
    return pids


def migration_dag(checkpoint: str, dag_id: str, trigger: str, in_place: bool = True) -> Path:
    """A DAG file running the safe-disable migration of the job at ``checkpoint`` (batches every ``trigger``),
    switching in place where it can, or by restarts only."""
    from tests.integration.helpers import write_job_dag

    return write_job_dag(
        dag_id,
        async_job(checkpoint, trigger),
        f"""
        safe_disable_async_progress(SPEC, startup_timeout_s=180, wait_timeout_s=120, deferrable=False,
                                    in_place={in_place!r})
        """,
    )
