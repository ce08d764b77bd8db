"""A job that runs long with small caps: its control area stays under them while everything keeps working.

Spark logs at INFO here (about 9 KB per micro-batch) so the 8 KB driver log rotates at nearly every batch,
and the 8 KB progress log drops whole segments every few batches; the committed-batches sensor, `status`
and the stability check run across those rotations.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.cli.show import status_report
from airflow_async_stream.driver.start import log_tail
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import segments
from tests.helpers import rate_noop
from tests.integration.helpers import run_dag_while, task_states, write_job_dag, xcom

pytestmark = pytest.mark.integration

CAP = 8192
LOGS = {
    "spark_level": "INFO",
    "driver_log_max_bytes": CAP,
    "driver_log_files": 2,
    "progress_max_bytes": CAP,
}
#: What the records beside the logs may take (spec, deployment, status, stable, hold...): a few KB each.
RECORDS_AT_MOST = 24 * 1024


class AreaWatch:
    """Samples the control area's size while the DAG runs: the largest sizes seen, and the rotations."""

    def __init__(self, control: ControlArea) -> None:
        self.control = control
        self.max_driver_log = self.max_progress = self.max_total = 0
        self.driver_log_rotated = False
        self.first_segments: set[str] = set()

    def __call__(self) -> bool:
        root = Path(self.control.root)
        if not root.is_dir():
            return False
        sizes = {}
        for path in root.rglob("*"):
            with contextlib.suppress(FileNotFoundError):  # a temp file renamed, a segment removed, since listed
                if path.is_file():
                    sizes[str(path.relative_to(root))] = path.stat().st_size
        logs = {name: size for name, size in sizes.items() if name.startswith("driver.log")}
        self.driver_log_rotated |= "driver.log.1" in logs
        self.max_driver_log = max(self.max_driver_log, sum(logs.values()))
        self.max_progress = max(self.max_progress, sum(s.size for s in segments(self.control)))
        self.max_total = max(self.max_total, sum(sizes.values()))
        if not self.first_segments:
            self.first_segments = {s.name for s in segments(self.control)}
        return False  # watch to the end


def test_a_long_run_with_small_caps_stays_under_them_and_sensor_status_and_stability_keep_working(
    airflow_db: None, checkpoint_dir: str
) -> None:
    spec = rate_noop(
        "small-caps",
        checkpoint_dir,
        rows=200,
        trigger={"processing_time": "100 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 0},
        logs=LOGS,
    )
    path = write_job_dag(
        "small_caps",
        spec,
        """
        deploy = DeployStreamingJobOperator(task_id="deploy", spec=SPEC)
        many = CommittedBatchesSensor(
            task_id="many_batches", checkpoint=SPEC["checkpoint"], min_batches=40,
            baseline_batch=deploy.output, poke_interval=0.2,
        )

        @task
        def status_mid_run() -> dict:
            from airflow_async_stream.cli.show import status_report
            from airflow_async_stream.state.control import ControlArea

            report = status_report(ControlArea.for_checkpoint(SPEC["checkpoint"]))
            return {"last": report["status"]["last_batch_id"], "latest": report["latest_progress"]}

        more = CommittedBatchesSensor(
            task_id="more_batches", checkpoint=SPEC["checkpoint"], min_batches=5, poke_interval=0.2
        )
        stop = StopStreamingJobOperator(task_id="stop", spec=SPEC, trigger_rule="all_done")
        deploy >> many >> status_mid_run() >> more >> stop
        """,
    )
    control = ControlArea.for_checkpoint(checkpoint_dir)
    watch = AreaWatch(control)
    dag_run = run_dag_while(path, "small_caps", watch)
    states = task_states(dag_run)
    assert set(states.values()) == {"success"}, states
    record = xcom(dag_run, "deploy")

    # Under the caps all along, and the caps were reached: both logs rotated.
    assert watch.driver_log_rotated
    assert watch.max_driver_log <= 2 * CAP
    line = 2048  # one progress line, at most
    assert watch.max_progress <= CAP + line
    assert watch.max_total <= 2 * CAP + CAP + line + RECORDS_AT_MOST
    kept = control.read_progress(record["deployment_id"])
    assert kept and kept[0]["batch_id"] > record["first_batch_id"]  # the oldest batches are gone ...
    assert not watch.first_segments & {s.name for s in segments(control)}
    ids = [e["batch_id"] for e in kept]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # ... and what is kept is the newest, whole

    # status found the running deployment's newest batch across the rotations, during the run and after.
    mid: dict[str, Any] = xcom(dag_run, "status_mid_run")
    assert mid["latest"]["deployment_id"] == record["deployment_id"]
    # (the status record is rewritten every 2 s, the progress log at every batch: it may be a little ahead)
    assert mid["last"] <= mid["latest"]["batch_id"] <= mid["last"] + 5
    after = status_report(control)
    assert after["status"]["state"] == "stopped"
    assert after["latest_progress"]["batch_id"] == after["status"]["last_batch_id"] == ids[-1]
    assert after["status"]["batches"] >= 45

    # The stability check saw this deployment commit after its start.
    assert control.read_json(ControlArea.STABLE)["deployment_id"] == record["deployment_id"]

    # The driver's last lines (ours at INFO, then Spark's shutdown) survived the rotations, as a failed
    # deploy's message shows them; no file beyond the two kept.
    assert f"deployment {record['deployment_id']} stopped after" in log_tail(control, 30)
    assert not os.path.exists(control.path("driver.log.2"))
