"""Deploy -> committed batch -> graceful stop, through Airflow on the embedded local Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyspark
import pytest

from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import local_pid_alive
from tests.integration.helpers import run_dag, task_states, xcom
from tests.session import CHECKPOINT_ROOT, DAGS_FOLDER

pytestmark = [pytest.mark.integration, pytest.mark.quick]  # the quick tier's real-Spark smoke test


def test_example_dag_deploys_async_job_and_stops_it_gracefully(airflow_db: None) -> None:
    dag_run = run_dag(DAGS_FOLDER / "example_deploy_stop.py", "example_deploy_stop")
    record = xcom(dag_run, "deploy")
    # The stop returned once the driver process had exited, not just its query.
    assert not local_pid_alive(record["driver"]["launcher_pid"]), "stop returned before the driver exited"

    assert task_states(dag_run) == {"deploy": "success", "committed_batch": "success", "stop": "success"}
    checkpoint = str(CHECKPOINT_ROOT / "rate-to-noop")
    assert batch_ids(checkpoint, "commits"), "no committed batch in commits/"

    assert record["job"] == "rate-to-noop"
    assert record["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 1000}
    assert record["first_batch_id"] is not None and record["query_id"]
    assert record["driver"]["launcher_pid"] > 0

    control = ControlArea.for_checkpoint(checkpoint)
    status = control.read_json(ControlArea.STATUS)
    assert status["state"] == "stopped"
    assert status["deployment_id"] == record["deployment_id"]
    assert status["forced_stop"] is False
    # The driver imported the installed PySpark (bytecode cached), not spark-submit's zipped copy of it.
    assert status["pyspark"] == {"version": pyspark.__version__, "from": str(Path(pyspark.__file__).parent)}
    assert xcom(dag_run, "stop")["state"] == "stopped"

    progress = control.read_progress(record["deployment_id"])
    assert progress, "the listener wrote no progress"
    assert {"walCommit", "commitOffsets", "triggerExecution"} <= set(progress[-1]["duration_ms"])
    assert progress[-1]["sources"][0]["end_offset"] is not None

    # Nothing of ours inside Spark's logs: only batch files in offsets/ and commits/.
    for log in ("offsets", "commits"):
        names = [p.name for p in Path(checkpoint, log).iterdir() if not p.name.startswith(".")]
        assert all(name.isdigit() for name in names), names
    assert json.loads((Path(checkpoint) / "metadata").read_text())["id"] == record["query_id"]

    # The driver log holds Spark's warnings and our own lines, not Spark's INFO chatter of every batch.
    log = Path(control.path(ControlArea.DRIVER_LOG)).read_text(errors="replace")
    ours = [line for line in log.splitlines() if " INFO airflow-async-stream: " in line]
    assert any(f"deployment {record['deployment_id']} stopped after" in line for line in ours), log[-2000:]
    assert any("stop requested" in line for line in ours)
    assert not [line for line in log.splitlines() if " INFO MicroBatchExecution" in line or "INFO DAGScheduler" in line]
