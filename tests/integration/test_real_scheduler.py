"""The safe-disable DAG as Airflow really runs it: a scheduler, a triggerer, a dag-processor and an api-server
as separate processes (LocalExecutor, SQLite). The committed-batch sensor defers to the triggerer; the
triggerer is SIGKILLed while it runs the trigger, a new one takes the trigger over, and the run completes
with the checkpoint safe for a synchronous restart.

The job reads a folder the test feeds: no batch runs until the test gives it a file, so each wait for
batches finds none at its first poke and defers, however slowly the scheduler reaches it."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.integration.airflow_stack import AirflowStack, Feeder

pytestmark = pytest.mark.integration
DAG_ID = "under_a_real_scheduler"
TRIGGER = "airflow_async_stream.triggers.committed_batches.CommittedBatchesTrigger"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[AirflowStack]:
    deployment = AirflowStack(
        tmp_path / "airflow-home",
        # Sensors defer as in a deployment that runs a triggerer; a dead triggerer's triggers move after 5 s.
        operators__default_deferrable="True",
        core__parallelism="4",  # the LocalExecutor forks a worker per slot: 32 by default, on two cores
        triggerer__job_heartbeat_sec="1",
        triggerer__triggerer_health_check_threshold="5",
        scheduler__scheduler_heartbeat_sec="1",
        dag_processor__refresh_interval="5",
    )
    try:
        yield deployment
    finally:
        deployment.close()


def _write_dag(stack: AirflowStack, checkpoint: str, incoming: Path) -> None:
    spec = {
        "name": "real-scheduler-job",
        "checkpoint": checkpoint,
        "source": {"format": "json", "schema": "v INT", "options": {"path": str(incoming)}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "300 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 2000},
    }
    body = f"""
        from airflow.sdk import dag
        from airflow_async_stream.factories import safe_disable_async_progress
        from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
        from airflow_async_stream.sensors import CommittedBatchesSensor

        SPEC = {spec!r}

        @dag(schedule=None)
        def {DAG_ID}():
            start = DeployStreamingJobOperator(task_id="start_async", spec=SPEC, startup_timeout_s=120)
            running = CommittedBatchesSensor(task_id="async_batches", checkpoint=SPEC["checkpoint"], min_batches=4,
                                             baseline_batch=start.output, wait_timeout_s=150)
            migrate = safe_disable_async_progress(SPEC, wait_timeout_s=150, startup_timeout_s=120)
            stop = StopStreamingJobOperator(task_id="stop", spec=SPEC)
            start >> running >> migrate >> stop

        {DAG_ID}()
        """
    (stack.dags / f"{DAG_ID}.py").write_text(textwrap.dedent(body))


def test_the_migration_survives_a_killed_triggerer(checkpoint_dir: str, stack: AirflowStack, tmp_path: Path) -> None:
    started = time.monotonic()
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    feeder = Feeder(stack, checkpoint_dir, incoming)
    _write_dag(stack, checkpoint_dir, incoming)
    stack.airflow("db", "migrate")
    for component in ("api-server", "scheduler", "dag-processor"):
        stack.start(component, component)
    stack.start("triggerer-1", "triggerer")
    stack.await_(lambda: stack.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID), "parsed DAG", 90)
    stack.airflow("dags", "trigger", DAG_ID)

    def deferred_trigger(task_id: str) -> tuple[int, int] | None:
        """The trigger a deferred task waits on and the triggerer running it, once one does."""
        rows = stack.query(
            "SELECT t.id, t.triggerer_id FROM task_instance ti JOIN trigger t ON ti.trigger_id = t.id "
            "WHERE ti.dag_id = ? AND ti.task_id = ? AND ti.state = 'deferred' AND t.classpath = ?",
            DAG_ID,
            task_id,
            TRIGGER,
        )
        return rows[0] if rows and rows[0][1] is not None else None

    trigger_id, first_triggerer = stack.await_(lambda: deferred_trigger("async_batches"), "deferred sensor", 150)
    stack.kill("triggerer-1")
    assert stack.query("SELECT state FROM task_instance WHERE dag_id = ? AND task_id = 'async_batches'", DAG_ID) == [
        ("deferred",)
    ], "the sensor left the deferred state with its triggerer dead"
    stack.start("triggerer-2", "triggerer")

    def taken_over() -> int | None:
        rows = stack.query("SELECT triggerer_id FROM trigger WHERE id = ?", trigger_id)
        return rows[0][0] if rows and rows[0][0] not in (None, first_triggerer) else None

    second_triggerer = stack.await_(taken_over, "trigger taken over by the new triggerer", 60)
    jobs = dict(stack.query("SELECT id, job_type FROM job WHERE id IN (?, ?)", first_triggerer, second_triggerer))
    assert jobs == {first_triggerer: "TriggererJob", second_triggerer: "TriggererJob"}, jobs

    def task_state(task_id: str) -> str | None:
        rows = stack.query("SELECT state FROM task_instance WHERE dag_id = ? AND task_id = ?", DAG_ID, task_id)
        return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

    assert feeder.feed_until(lambda: task_state("async_batches"), "the first sensor's batches", 150) == "success"
    # Fed no more, the job runs no batch: the migration's wait for two interval-0 batches must defer, and it
    # does so in the new triggerer.
    wait_trigger = stack.await_(lambda: deferred_trigger("safe_disable.wait_async_batches"), "deferred wait", 150)
    assert wait_trigger[1] == second_triggerer, (wait_trigger, second_triggerer)

    def finished() -> str | None:
        rows = stack.query("SELECT state FROM dag_run WHERE dag_id = ?", DAG_ID)
        return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None

    state = feeder.feed_until(finished, "finished DAG run", 150)
    states = dict(stack.query("SELECT task_id, state FROM task_instance WHERE dag_id = ?", DAG_ID))
    assert state == "success", states

    control = ControlArea.for_checkpoint(checkpoint_dir)
    assert control.read_deployment().async_progress["enabled"] is False
    assert control.read_status().state == "stopped"
    inspection = inspect_checkpoint(checkpoint_dir)
    assert inspection.sync_restart_safe, inspection.reason
    print(f"real scheduler and triggerer: the DAG run ended {time.monotonic() - started:.0f} s after the test began")
