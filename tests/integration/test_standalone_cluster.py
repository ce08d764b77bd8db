"""A job on a real Spark standalone cluster (master + worker on 127.0.0.1), chosen by the Airflow Spark
connection: deployed with async on, migrated by the safe-disable DAG (switched in place by the driver on the
cluster), stopped; the master's and the worker's JSON status show the application's executors ran on the
worker. Its driver and executors run a Python with nothing of ours installed: the deploy ships the runtime."""

from __future__ import annotations

import pytest

from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.integration.helpers import (
    assert_ran_from_the_bundle,
    bare_driver_conf,
    run_dag,
    task_states,
    write_job_dag,
    xcom,
)
from tests.integration.standalone_cluster import StandaloneCluster

pytestmark = pytest.mark.integration


def test_safe_disable_on_a_standalone_cluster(
    airflow_db: None,
    checkpoint_dir: str,
    standalone_cluster: StandaloneCluster,
    monkeypatch: pytest.MonkeyPatch,
    bare_python: str,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", standalone_cluster.master_url)
    spec = rate_noop(
        "cluster-job",
        checkpoint_dir,
        rows=50,
        trigger={"processing_time": "500 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
        spark_conf={
            "spark.cores.max": 1,
            "spark.executor.cores": 1,
            "spark.executor.memory": "512m",
            **bare_driver_conf(bare_python),
        },
    )
    path = write_job_dag(
        "on_standalone_cluster",
        spec,
        """
        on_cluster = {"conn_id": "spark_standalone", "startup_timeout_s": 240}
        start = DeployStreamingJobOperator(task_id="start_async", spec=SPEC, **on_cluster)
        running = CommittedBatchesSensor(task_id="async_batches", checkpoint=SPEC["checkpoint"], min_batches=3,
                                         baseline_batch=start.output, wait_timeout_s=180, deferrable=False)
        migrate = safe_disable_async_progress(SPEC, wait_timeout_s=180, deferrable=False, **on_cluster)
        stop = StopStreamingJobOperator(task_id="stop", spec=SPEC, conn_id="spark_standalone")
        start >> running >> migrate >> stop
        """,
    )
    run = run_dag(path, "on_standalone_cluster")

    assert str(run.state) == "success", task_states(run)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deployment = control.read_json("deployment.json")
    assert deployment["master"] == standalone_cluster.master_url
    assert deployment["async_progress"]["enabled"] is False
    assert control.read_json("status.json")["state"] == "stopped"
    assert_ran_from_the_bundle(control.read_json("status.json"), bare_python)
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe

    master = standalone_cluster.master_status()
    apps = [app for app in master["activeapps"] + master["completedapps"] if app["name"] == "async-stream-cluster-job"]
    # The driver on the cluster switched in place (to interval 0, then synchronous): one application, finished.
    stages = xcom(run, "safe_disable.release_job")["stages"]
    assert [(s["to"], s["how"]) for s in stages] == [("async_interval_0", "in_place"), ("synchronous", "in_place")]
    assert len(apps) == 1 and {app["state"] for app in apps} == {"FINISHED"}, apps
    worker = standalone_cluster.worker_status()
    ran_on_worker = {e["appid"] for e in worker["executors"] + worker["finishedexecutors"]}
    assert {app["id"] for app in apps} <= ran_on_worker, (apps, ran_on_worker)
