"""Airflow run as a platform team runs it across hosts (tests/integration/celery_stack.py): CeleryExecutor,
Redis, PostgreSQL, a scheduler and triggerer, and two Celery workers, ``worker-b`` on another host (its own
hostname, pid space and HOME). Each task is routed to a worker by its queue, so every cross-host step is
forced, never left to chance: worker A deploys; the migration (restart path) is spread over both: its first
step, on worker B, stops A's driver and launches its own; its stop and synchronous deploy run on worker A; a
last stop on worker B stops A's driver. A /proc watch over the whole
machine sees every driver of the checkpoint, whichever host launched it: never two at once. Worker B is
SIGKILLed while the sensor waits deferred in the triggerer (its job reads files the test gives one at a time,
so the sensor must defer); a new worker B takes the DAG run on. A forced stop from this host lands while the
migration on worker B waits, and wins.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.integration.airflow_stack import Feeder
from tests.integration.celery_stack import CeleryStack
from tests.integration.helpers import DriverWatch
from tests.integration.services import Postgres, Redis
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration
HOST_B = "worker-b"
TRIGGER = "airflow_async_stream.triggers.committed_batches.CommittedBatchesTrigger"
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
#: Where each step of the migration runs (the rest on worker B): every change of driver crosses hosts.
SPREAD = {"stop_async": "host-a", "to_synchronous": "host-a", "wait_sync_batch": "host-a"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryStack]:
    """One deployment for the module's tests (its start-up is half a minute): each test its own DAG."""
    redis, postgres = Redis(), Postgres()
    deployment = None
    try:
        deployment = CeleryStack(
            tmp_path_factory.mktemp("celery") / "airflow-home",
            postgres,
            redis,
            operators__default_deferrable="True",
            scheduler__scheduler_heartbeat_sec="1",
            dag_processor__refresh_interval="5",
        )
        deployment.airflow("db", "migrate", timeout=300)
        for component in ("api-server", "scheduler", "dag-processor", "triggerer"):
            deployment.start(component, component)
        deployment.worker("worker-a", "host-a")
        deployment.worker("worker-b", "host-b", host=HOST_B)
        yield deployment
    finally:
        if deployment is not None:
            deployment.close()
        redis.close()
        postgres.close()


def _job(tmp_path: Path, name: str) -> tuple[dict[str, object], Path]:
    """A job reading the JSON files the test gives it (none yet), async on at 2000 ms; and its folder."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    spec = {
        "name": name,
        "checkpoint": str(CHECKPOINT_ROOT / f"{name}-{int(time.time() * 1000)}" / name),
        "source": {"format": "json", "schema": "v INT", "options": {"path": str(incoming)}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "300 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 2000},
    }
    return spec, incoming


def _write_dag(stack: CeleryStack, dag_id: str, spec: dict[str, object], spread: dict[str, str], last: str) -> None:
    """deploy on A, the sensor and the migration (restart path) on B but for the ``spread`` steps, a stop on
    the ``last`` queue."""
    body = f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress
        from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
        from airflow_async_stream.sensors import CommittedBatchesSensor

        SPEC = {spec!r}

        @dag(schedule=None, default_args={{"queue": "host-b"}})
        def {dag_id}():
            start = DeployStreamingJobOperator(task_id="deploy_on_a", spec=SPEC, startup_timeout_s=240, queue="host-a")
            running = CommittedBatchesSensor(task_id="batches", checkpoint=SPEC["checkpoint"], min_batches=3,
                                             baseline_batch=start.output, wait_timeout_s=240)
            migrate = safe_disable_async_progress(SPEC, in_place=False, wait_timeout_s=240, startup_timeout_s=240)
            for task in migrate.children.values():
                task.queue = {spread!r}.get(task.task_id.rsplit(".", 1)[-1], "host-b")
            stop = StopStreamingJobOperator(task_id="stop_last", spec=SPEC, queue={last!r})
            start >> running >> migrate >> stop

        {dag_id}()
        """
    (stack.dags / f"{dag_id}.py").write_text(textwrap.dedent(body))
    stack.await_(lambda: stack.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", dag_id), "parsed DAG", 120)


def test_deploy_migrate_and_stop_across_two_celery_hosts_never_overlap_drivers(
    stack: CeleryStack, tmp_path: Path
) -> None:
    started, dag_id = time.monotonic(), "multi_host"
    spec, incoming = _job(tmp_path, "multi-host-job")
    control = ControlArea.for_checkpoint(str(spec["checkpoint"]))
    feeder = Feeder(stack, str(spec["checkpoint"]), incoming)
    _write_dag(stack, dag_id, spec, SPREAD, last="host-b")

    with DriverWatch(str(spec["checkpoint"])) as watch:
        stack.airflow("dags", "trigger", dag_id)
        stack.await_(lambda: _deferred(stack, dag_id, "batches"), "the sensor deferred in the triggerer", 300)
        stack.kill("worker-b")  # a lost host: its pid space goes with it; the deferred sensor waits on
        assert _state(stack, dag_id, "batches") == "deferred"
        stack.worker("worker-b2", "host-b", host=HOST_B)
        state = feeder.feed_until(lambda: _finished(stack, dag_id), "finished DAG run", 600)

    hosts = dict(stack.query("SELECT task_id, hostname FROM task_instance WHERE dag_id = ?", dag_id))
    states = dict(stack.query("SELECT task_id, state FROM task_instance WHERE dag_id = ?", dag_id))
    assert state == "success", (states, stack.log("worker-b2")[-3000:])
    here = socket.gethostname()
    expected = {
        "deploy_on_a": here,
        "batches": HOST_B,
        "safe_disable.to_interval_0": HOST_B,
        "safe_disable.stop_async": here,
        "safe_disable.gate_sync_restart_safe": HOST_B,
        "safe_disable.to_synchronous": here,
        "stop_last": HOST_B,
    }
    assert {task: hosts[task] for task in expected} == expected, hosts
    # A's async driver, B's at interval 0, A's synchronous one: three drivers, never two at once.
    assert len(watch.groups_seen) == 3 and watch.most_at_once == 1, (watch.groups_seen, watch.most_at_once)
    deployment = control.read_deployment()
    assert deployment.driver.host == here and deployment.async_progress["enabled"] is False
    assert control.read_exit(deployment.deployment_id).host == here  # type: ignore[union-attr]
    assert control.read_status().state == "stopped"
    assert inspect_checkpoint(str(spec["checkpoint"])).sync_restart_safe
    print(f"two Celery hosts: the DAG run ended {time.monotonic() - started:.0f} s after the test began")


def test_a_forced_stop_from_one_host_during_the_other_hosts_migration_step_wins(
    stack: CeleryStack, tmp_path: Path
) -> None:
    """The migration, on worker B, waits (deferred) for interval-0 batches the test withholds; a forced stop
    from this host, which cannot signal B's driver, asks it to stop and waits for B's word that it exited.
    The migration then fails without changing the job again."""
    dag_id = "multi_host_forced"
    spec, incoming = _job(tmp_path, "multi-host-forced")
    control = ControlArea.for_checkpoint(str(spec["checkpoint"]))
    feeder = Feeder(stack, str(spec["checkpoint"]), incoming)
    _write_dag(stack, dag_id, spec, {}, last="host-a")

    with DriverWatch(str(spec["checkpoint"])) as watch:
        stack.airflow("dags", "trigger", dag_id)
        feeder.feed_until(lambda: _state(stack, dag_id, "batches") == "success", "the sensor's batches", 300)
        step = "safe_disable.wait_async_batches"
        stack.await_(lambda: _deferred(stack, dag_id, step), "the migration's wait deferred", 300)
        on_b = control.read_deployment()
        assert on_b.driver.host == HOST_B and on_b.async_progress["checkpoint_interval_ms"] == 0
        forced = subprocess.run(
            [CLI, "stop", "--force", str(spec["checkpoint"])], capture_output=True, text=True, timeout=300
        )
        state = stack.await_(lambda: _finished(stack, dag_id), "finished DAG run", 300)

    assert forced.returncode == 0, forced
    assert f"ended the hold of DAG run {dag_id}/" in forced.stdout and "stopped: state stopped" in forced.stdout
    assert control.read_exit(on_b.deployment_id).host == HOST_B  # type: ignore[union-attr]
    states = dict(stack.query("SELECT task_id, state FROM task_instance WHERE dag_id = ?", dag_id))
    assert state == "failed" and states["safe_disable.rollback_to_async"] == "failed", states
    # Nothing deployed after the user's stop: the job stays as the stop left it, on B's checkpoint state.
    assert control.read_deployment().deployment_id == on_b.deployment_id
    assert control.read_status().state == "stopped"
    assert len(watch.groups_seen) == 2 and watch.most_at_once == 1, (watch.groups_seen, watch.most_at_once)


def _state(stack: CeleryStack, dag_id: str, task_id: str) -> str | None:
    rows = stack.query("SELECT state FROM task_instance WHERE dag_id = ? AND task_id = ?", dag_id, task_id)
    return rows[0][0] if rows else None


def _deferred(stack: CeleryStack, dag_id: str, task_id: str) -> bool:
    rows = stack.query(
        "SELECT t.triggerer_id FROM task_instance ti JOIN trigger t ON ti.trigger_id = t.id "
        "WHERE ti.dag_id = ? AND ti.task_id = ? AND ti.state = 'deferred' AND t.classpath = ?",
        dag_id,
        task_id,
        TRIGGER,
    )
    return bool(rows and rows[0][0] is not None)


def _finished(stack: CeleryStack, dag_id: str) -> str | None:
    rows = stack.query("SELECT state FROM dag_run WHERE dag_id = ?", dag_id)
    return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None
