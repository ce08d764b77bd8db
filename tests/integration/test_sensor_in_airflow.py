"""The committed-batches sensor as Airflow runs it (``dag.test()``, no Spark: the checkpoints are made by hand):
reschedule mode keeps its first poke's baseline and clock, and a timeout is an Airflow sensor timeout in every
mode (``soft_fail`` skips it, retries do not repeat it)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.helpers import commit, make_checkpoint
from tests.integration.helpers import load_dag, run_dag, task_states, write_dag, xcom

pytestmark = pytest.mark.integration


def _reschedules(dag_id: str) -> int:
    """How many times the DAG's tasks were rescheduled so far (Airflow's own record of it)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as session:
        return (
            session.query(TaskReschedule)
            .join(TaskInstance, TaskInstance.id == TaskReschedule.ti_id)
            .filter(TaskInstance.dag_id == dag_id)
            .count()
        )


def test_reschedule_mode_keeps_the_baseline_of_its_first_poke(airflow_db: None, checkpoint_dir: str) -> None:
    checkpoint = make_checkpoint(Path(checkpoint_dir), [3], [3])
    path = write_dag(
        "sensor_rescheduled",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.sensors import CommittedBatchesSensor

        @dag(schedule=None)
        def sensor_rescheduled():
            CommittedBatchesSensor(task_id="wait", checkpoint={checkpoint!r}, min_batches=2, mode="reschedule",
                                   poke_interval=0.5, wait_timeout_s=120, timeout=60, deferrable=False)

        sensor_rescheduled()
        """,
    )
    # One batch commits after each poke: the first poke saw batch 3 as the newest, so the third poke finds
    # two batches after it. A baseline re-read at every poke would always be one batch behind.
    dag = load_dag(path, "sensor_rescheduled")  # Airflow's modules load here, not in two threads at once
    assert _reschedules("sensor_rescheduled") == 0
    stop = threading.Event()

    def one_commit_per_poke() -> None:
        seen = 0
        while not stop.is_set() and seen < 6:
            if _reschedules("sensor_rescheduled") > seen:
                seen += 1
                commit(checkpoint, 3 + seen)
            stop.wait(0.05)

    committer = threading.Thread(target=one_commit_per_poke, daemon=True)
    committer.start()
    try:
        run = dag.test()
    finally:
        stop.set()
        committer.join()

    assert task_states(run) == {"wait": "success"}
    result = xcom(run, "wait")
    assert (result["baseline"], result["committed_after"]) == (3, 2), result
    assert _reschedules("sensor_rescheduled") == 2


def test_a_timeout_is_an_airflow_sensor_timeout_in_every_mode(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    checkpoint = make_checkpoint(Path(checkpoint_dir), [3], [3])
    path = write_dag(
        "sensor_timeouts",
        f"""
        from datetime import timedelta
        from airflow.sdk import dag
        from airflow_async_stream.sensors import CommittedBatchesSensor

        COMMON = dict(checkpoint={checkpoint!r}, min_batches=2, wait_timeout_s=3, poke_interval=0.5, timeout=60,
                      retries=2, retry_delay=timedelta(0))

        @dag(schedule=None)
        def sensor_timeouts():
            CommittedBatchesSensor(task_id="poke", mode="poke", deferrable=False, **COMMON)
            CommittedBatchesSensor(task_id="reschedule", mode="reschedule", deferrable=False, **COMMON)
            CommittedBatchesSensor(task_id="reschedule_soft", mode="reschedule", deferrable=False, soft_fail=True,
                                   **COMMON)
            CommittedBatchesSensor(task_id="deferred_soft", deferrable=True, soft_fail=True, **COMMON)

        sensor_timeouts()
        """,
    )
    started = time.monotonic()
    run = run_dag(path, "sensor_timeouts")
    took = time.monotonic() - started

    states = task_states(run)
    assert states == {
        "poke": "failed",
        "reschedule": "failed",
        "reschedule_soft": "skipped",
        "deferred_soft": "skipped",
    }, states
    tries = {ti.task_id: ti.try_number for ti in run.get_task_instances()}
    assert tries["poke"] == 1 and tries["reschedule"] == 1, f"a sensor timeout was retried: {tries}"
    # The sensors' own deadline (3 s from the first poke) fired, not Airflow's (60 s), in reschedule mode too.
    assert took < 50, f"the DAG run took {took:.0f} s"
    assert "only 0/2 batches committed after batch 3 within" in capfd.readouterr().out
