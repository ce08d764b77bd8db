"""Lineage of a real job through Airflow's OpenLineage provider (HTTP transport to a receiver on 127.0.0.1):
`airflow dags test` deploys a job on the embedded Spark, waits for its driver's RUNNING events, and stops it.

Read back: the deploy and stop tasks' events name the job's datasets and configuration; the driver's own run
(START, RUNNING every 1.2 s, COMPLETE) names the deploy task as its parent; the deploy handed spark-submit the
same parent (`spark.openlineage.parent*`, what the OpenLineage Spark listener reads: no listener jar is
reachable here, so the conf passed is what is checked); the transport's API key and a secret option's value
appear in no event, no command line and no file of the control area.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.lineage.link import LineageLink, RunningSettings
from airflow_async_stream.lineage.running import DRAIN_S
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from tests.helpers import until
from tests.integration.helpers import write_dag, write_job_dag
from tests.lineage_receiver import lineage_receiver

pytestmark = pytest.mark.integration

API_KEY = "ol-key-7d2c41a9"
SECRET_OPTION = "s3cret-opt-91f3"
BIN = Path(sys.executable).parent


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with lineage_receiver() as found:
        yield found


def _lineage_env(url: str, **more: str) -> dict[str, str]:
    """Airflow's OpenLineage provider sending to ``url`` with an API key, its Spark injection on."""
    transport = {"type": "http", "url": url, "auth": {"type": "api_key", "apiKey": API_KEY}}
    return {
        **os.environ,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "airflow-tests",
        "AIRFLOW__OPENLINEAGE__SPARK_INJECT_PARENT_JOB_INFO": "true",
        "AIRFLOW__OPENLINEAGE__SPARK_INJECT_TRANSPORT_INFO": "true",
        "AIRFLOW_CONN_LINEAGE_TENANT": json.dumps({"conn_type": "generic", "password": SECRET_OPTION}),
        **more,
    }


def _events(received: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    return [r["event"] for r in received if r["event"]["job"]["name"] == job]


def test_deploy_and_stop_report_lineage_and_the_running_driver_keeps_reporting(
    airflow_db: None, checkpoint_dir: str, tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = receiver
    source, sink, seen = tmp_path / "in", tmp_path / "out", tmp_path / "seen.json"
    source.mkdir()
    for n in range(3):
        (source / f"part-{n}.json").write_text("".join(json.dumps({"id": n * 10 + i}) + "\n" for i in range(10)))
    spec = {
        "name": "lineage-job",
        "checkpoint": checkpoint_dir,
        "source": {
            "format": "json",
            "schema": "id INT",
            "options": {"path": str(source), "maxFilesPerTrigger": 1},
            "secret_options": {"tenantKey": "lineage_tenant"},  # carried to the driver, ignored by Spark
        },
        "sink": {"format": "parquet", "options": {"path": str(sink)}},
        "trigger": {"processing_time": "500 milliseconds"},
    }
    driver_job = "async-stream-lineage-job"
    write_job_dag(
        "lineage_events",
        spec,
        f"""
        @task
        def watch():
            import json, time, urllib.request
            from airflow_async_stream.state.control import ControlArea
            driver = ControlArea.for_checkpoint(SPEC["checkpoint"]).read_deployment().driver
            cmdline = Path(f"/proc/{{driver.launcher_pid}}/cmdline").read_bytes().split(b"\\0")
            Path({str(seen)!r}).write_text(json.dumps([a.decode() for a in cmdline]))
            deadline = time.monotonic() + 90
            while int(urllib.request.urlopen({url!r} + "/count?eventType=RUNNING&job={driver_job}").read()) < 2:
                assert time.monotonic() < deadline, "no two RUNNING events"
                time.sleep(0.1)

        DeployStreamingJobOperator(task_id="deploy", spec=SPEC) >> watch() >> StopStreamingJobOperator(
            task_id="stop", spec=SPEC)
    """,
    )
    env = _lineage_env(url, AIRFLOW__ASYNC_STREAM__LINEAGE_RUNNING_EVERY_MINUTES="0.02")  # 1.2 s
    run = subprocess.run(
        [str(BIN / "airflow"), "dags", "test", "lineage_events"], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    # The Airflow tasks' events: the job's datasets and configuration, from the spec.
    deploy = _events(received, "lineage_events.deploy")
    assert {e["eventType"] for e in deploy} >= {"START", "COMPLETE"}, [e["eventType"] for e in deploy]
    complete = next(e for e in deploy if e["eventType"] == "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in complete["inputs"]] == [("file", str(source))]
    assert [(d["namespace"], d["name"]) for d in complete["outputs"]] == [("file", str(sink))]
    config = complete["job"]["facets"]["asyncStream_configuration"]
    assert config["trigger"] == {"kind": "processing_time", "interval_ms": 500}
    assert config["source"]["from_connections"] == ["tenantKey"]
    stop = _events(received, "lineage_events.stop")
    assert any(e["eventType"] == "COMPLETE" and e["outputs"] for e in stop)

    # The driver's own run: START, RUNNING events with what ran, COMPLETE; the deploy task is its parent.
    driver = _events(received, driver_job)
    kinds = [e["eventType"] for e in driver]
    assert kinds[0] == "START" and kinds[-1] == "COMPLETE" and kinds.count("RUNNING") >= 2, kinds
    deploy_run = complete["run"]["runId"]
    parent = driver[0]["run"]["facets"]["parent"]
    assert parent["run"]["runId"] == deploy_run
    assert (parent["job"]["namespace"], parent["job"]["name"]) == ("airflow-tests", "lineage_events.deploy")
    assert driver[0]["job"]["namespace"] == "airflow-tests"
    assert [(d["namespace"], d["name"]) for d in driver[0]["outputs"]] == [("file", str(sink))]
    batches = sum(e["run"]["facets"]["asyncStream_progress"]["batches"] for e in driver[1:])
    status = ControlArea.for_checkpoint(checkpoint_dir).read_status()
    assert status is not None and batches == status.batches >= 3  # every batch counted once
    rows = sum(e["run"]["facets"]["asyncStream_progress"]["rows"] for e in driver[1:])
    assert rows == 30

    # The link the deploy handed spark-submit: the same parent, the transport without its key.
    command = json.loads(seen.read_text())
    assert f"spark.openlineage.parentRunId={deploy_run}" in command
    assert "spark.openlineage.parentJobName=lineage_events.deploy" in command
    assert f"spark.openlineage.transport.url={url}" in command

    # No secret anywhere it could be read.
    assert {r["auth"] for r in received} == {f"Bearer {API_KEY}"}
    events = json.dumps([r["event"] for r in received])
    leaks = [arg for arg in command if API_KEY in arg or SECRET_OPTION in arg]
    assert API_KEY not in events and SECRET_OPTION not in events and leaks == []
    assert SECRET_OPTION not in run.stdout + run.stderr
    control = Path(ControlArea.for_checkpoint(checkpoint_dir).path(""))
    for path in control.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode(errors="replace")
            assert API_KEY not in text and SECRET_OPTION not in text, path


def test_a_rollouts_job_reports_its_run_with_the_apply_step_as_parent(
    airflow_db: None, checkpoint_dir: str, tmp_path: Path, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    """A job a rollout deploys gets the same link as one the deploy operator deploys: its spec turns its
    RUNNING events on, the rollout's apply step is its run's parent."""
    url, received = receiver
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'fleet-index'}\n")
    spec = {
        "name": "rolled-out",
        "checkpoint": checkpoint_dir,
        "source": {"format": "rate", "options": {"rowsPerSecond": 5}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "500 milliseconds"},
        "lineage": {"running_every_minutes": 0.01},  # 0.6 s
    }
    (folder / "rolled-out.yaml").write_text(yaml.safe_dump(spec))
    write_dag(
        "lineage_rollout",
        f"""
        from airflow_async_stream.factories import rollout_dag
        rollout_dag({str(folder)!r}, dag_id="lineage_rollout", startup_timeout_s=240)
    """,
    )
    run = subprocess.run(
        [str(BIN / "airflow"), "dags", "test", "lineage_rollout"],
        env=_lineage_env(url),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    driver_job = "async-stream-rolled-out"
    until(lambda: [e for e in _events(received, driver_job) if e["eventType"] == "RUNNING"], 60)
    apply = [e for e in _events(received, "lineage_rollout.apply") if e["eventType"] == "START"]
    start = next(e for e in _events(received, driver_job) if e["eventType"] == "START")
    parent = start["run"]["facets"]["parent"]
    assert parent["job"]["name"] == "lineage_rollout.apply"
    assert parent["run"]["runId"] in {e["run"]["runId"] for e in apply}
    control = ControlArea.for_checkpoint(checkpoint_dir)
    stop_driver(control, "test: end of the rollout's run", graceful_timeout_s=30, kill_after_s=60)
    until(lambda: [e for e in _events(received, driver_job) if e["eventType"] == "COMPLETE"], 30)


def test_a_transport_that_hangs_neither_holds_the_query_nor_its_stop(checkpoint_dir: str) -> None:
    """The driver's events go to an endpoint that accepts connections and never answers (every send times out
    after 1 s): the batches keep their trigger's pace, the failure is logged once, and the stop completes."""
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(64)  # the kernel accepts connections; nobody ever reads or answers
    transport = {"type": "http", "url": f"http://127.0.0.1:{hanging.getsockname()[1]}", "timeout": 1.0}
    spec = parse_spec(
        {
            "name": "hanging-lineage",
            "checkpoint": checkpoint_dir,
            "source": {"format": "rate-micro-batch", "options": {"rowsPerBatch": 5}},  # data at every trigger
            "sink": {"format": "noop"},
            "trigger": {"processing_time": "500 milliseconds"},
            "lineage": {"running_every_minutes": 0.005},  # a RUNNING event every 0.3 s, each stuck for seconds
        }
    )
    link = LineageLink(running=RunningSettings(namespace="t", transport=transport))
    try:
        deployed = deploy_job(spec, Holder("test", "lineage"), DeploySettings(launcher=LocalLauncher(), lineage=link))
        control = ControlArea.for_checkpoint(checkpoint_dir)
        progress = until(
            lambda: (
                len(control.read_progress(deployed.deployment_id)) >= 10
                and control.read_progress(deployed.deployment_id)
            ),
            120,
        )
        started = [datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() for p in progress]
        gaps = sorted(b - a for a, b in zip(started[1:-1], started[2:], strict=True))  # after the first batch's warm-up
        assert gaps[len(gaps) // 2] < 0.9, gaps  # the trigger's 0.5 s, not a send's 1 s timeout and retries
        driver_log = Path(control.path(ControlArea.DRIVER_LOG))
        # the first send fails after its timeout and the transport's retries: awaited, on a busy machine it came
        # after ten batches
        until(lambda: "lineage: the OpenLineage transport failed" in driver_log.read_text(errors="replace"), 120)
        began = time.monotonic()
        outcome = stop_driver(control, "test: stop with the transport hanging", graceful_timeout_s=30, kill_after_s=60)
        assert outcome.status is not None and outcome.status.state == "stopped"
        assert time.monotonic() - began < DRAIN_S + 20  # the last events wait at most DRAIN_S
        log = driver_log.read_text(errors="replace")
        assert log.count("lineage: the OpenLineage transport failed") == 1, log[-3000:]
    finally:
        hanging.close()
