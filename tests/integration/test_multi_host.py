"""Airflow run as a platform team runs it across hosts (tests/integration/celery_stack.py): CeleryExecutor,
Redis, PostgreSQL, a scheduler and triggerer, and two Celery workers, ``worker-b`` on another host (its own
hostname, pid space and HOME). Each task is routed to a worker by its queue, so every cross-host step is
forced, never left to chance: worker A deploys; the migration (restart path) runs on worker B, whose first
step stops A's driver and launches its own; worker A then stops B's driver. A /proc watch over the whole
machine sees every driver of the checkpoint, whichever host launched it: never two at once. Worker B is
SIGKILLed while the sensor waits deferred in the triggerer (its job reads files the test gives one at a time,
so the sensor must defer); a new worker B takes the DAG run on.
"""

from __future__ import annotations

import socket
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.driver.exits import exit_recorded
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.integration.airflow_stack import Feeder
from tests.integration.celery_stack import CeleryStack
from tests.integration.helpers import DriverWatch
from tests.integration.services import Postgres, Redis
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration
DAG_ID = "multi_host"
HOST_B = "worker-b"
TRIGGER = "airflow_async_stream.triggers.committed_batches.CommittedBatchesTrigger"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[CeleryStack]:
    redis, postgres = Redis(), Postgres()
    deployment = None
    try:
        deployment = CeleryStack(
            tmp_path / "airflow-home", postgres, redis,
            operators__default_deferrable="True",
            scheduler__scheduler_heartbeat_sec="1",
            dag_processor__refresh_interval="5",
            celery__worker_concurrency="2",
        )  # fmt: skip
        yield deployment
    finally:
        if deployment is not None:
            deployment.close()
        redis.close()
        postgres.close()


def _write_dag(stack: CeleryStack, spec: dict[str, object]) -> None:
    body = f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress
        from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
        from airflow_async_stream.sensors import CommittedBatchesSensor

        SPEC = {spec!r}

        @dag(schedule=None, default_args={{"queue": "host-b"}})
        def {DAG_ID}():
            start = DeployStreamingJobOperator(task_id="deploy_on_a", spec=SPEC, startup_timeout_s=240, queue="host-a")
            running = CommittedBatchesSensor(task_id="batches", checkpoint=SPEC["checkpoint"], min_batches=3,
                                             baseline_batch=start.output, wait_timeout_s=240)
            migrate = safe_disable_async_progress(SPEC, in_place=False, wait_timeout_s=240, startup_timeout_s=240)
            stop = StopStreamingJobOperator(task_id="stop_on_a", spec=SPEC, queue="host-a")
            start >> running >> migrate >> stop

        {DAG_ID}()
        """
    (stack.dags / f"{DAG_ID}.py").write_text(textwrap.dedent(body))


def test_deploy_migrate_and_stop_across_two_celery_hosts_never_overlap_drivers(
    stack: CeleryStack, tmp_path: Path
) -> None:
    started = time.monotonic()
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    spec = {
        "name": "multi-host-job",
        "checkpoint": str(CHECKPOINT_ROOT / f"multi-{int(time.time() * 1000)}" / "multi-host-job"),
        "source": {"format": "json", "schema": "v INT", "options": {"path": str(incoming)}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "300 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 2000},
    }
    control = ControlArea.for_checkpoint(str(spec["checkpoint"]))
    feeder = Feeder(stack, str(spec["checkpoint"]), incoming)
    _write_dag(stack, spec)
    stack.airflow("db", "migrate", timeout=300)
    for component in ("api-server", "scheduler", "dag-processor", "triggerer"):
        stack.start(component, component)
    stack.worker("worker-a", "host-a")
    stack.worker("worker-b", "host-b", host=HOST_B)
    stack.await_(lambda: stack.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID), "parsed DAG", 120)

    with DriverWatch(str(spec["checkpoint"])) as watch:
        stack.airflow("dags", "trigger", DAG_ID)
        stack.await_(lambda: _deferred(stack, "batches"), "the sensor deferred in the triggerer", 300)
        stack.kill("worker-b")  # a lost host: its pid space goes with it; the deferred sensor waits on
        assert _state(stack, "batches") == "deferred"
        stack.worker("worker-b2", "host-b", host=HOST_B)
        state = feeder.feed_until(lambda: _finished(stack), "finished DAG run", 600)

    hosts = dict(stack.query("SELECT task_id, hostname FROM task_instance WHERE dag_id = ?", DAG_ID))
    states = dict(stack.query("SELECT task_id, state FROM task_instance WHERE dag_id = ?", DAG_ID))
    assert state == "success", (states, stack.log("worker-b2")[-3000:])
    assert hosts["deploy_on_a"] == hosts["stop_on_a"] == socket.gethostname(), hosts
    ran = [t for t in hosts if t.startswith("safe_disable.") and states[t] == "success"]  # rollback: skipped
    assert len(ran) >= 5 and {hosts[t] for t in ran} == {HOST_B}, hosts
    # A's async driver, B's at interval 0, B's synchronous one: three drivers, never two at once.
    assert len(watch.groups_seen) == 3 and watch.most_at_once == 1, (watch.groups_seen, watch.most_at_once)
    deployment = control.read_deployment()
    assert deployment.driver["host"] == HOST_B and deployment.async_progress["enabled"] is False
    assert exit_recorded(control, deployment.deployment_id)["host"] == HOST_B  # type: ignore[index]
    assert control.read_status().state == "stopped"
    assert inspect_checkpoint(str(spec["checkpoint"])).sync_restart_safe
    print(f"two Celery hosts: the DAG run ended {time.monotonic() - started:.0f} s after the test began")


def _state(stack: CeleryStack, task_id: str) -> str | None:
    rows = stack.query("SELECT state FROM task_instance WHERE dag_id = ? AND task_id = ?", DAG_ID, task_id)
    return rows[0][0] if rows else None


def _deferred(stack: CeleryStack, task_id: str) -> bool:
    rows = stack.query(
        "SELECT t.triggerer_id FROM task_instance ti JOIN trigger t ON ti.trigger_id = t.id "
        "WHERE ti.dag_id = ? AND ti.task_id = ? AND ti.state = 'deferred' AND t.classpath = ?",
        DAG_ID, task_id, TRIGGER,
    )  # fmt: skip
    return bool(rows and rows[0][0] is not None)


def _finished(stack: CeleryStack) -> str | None:
    rows = stack.query("SELECT state FROM dag_run WHERE dag_id = ?", DAG_ID)
    return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None
