"""Two safe-disable migrations of one job started at the same instant, as two Airflow DAG runs:
exactly one proceeds; the other fails fast at its first step naming the holder, and touches nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.state.control import ControlArea
from tests.integration.migration_job import live_drivers, migration_dag, start_async_job

pytestmark = pytest.mark.integration
AIRFLOW = str(Path(sys.executable).parent / "airflow")


def test_two_migrations_at_once_exactly_one_proceeds(airflow_db: None, checkpoint_dir: str) -> None:
    dag_ids = ("concurrent_migration_a", "concurrent_migration_b")
    for dag_id in dag_ids:
        migration_dag(checkpoint_dir, dag_id, "300 milliseconds")
    control = ControlArea.for_checkpoint(checkpoint_dir)
    start_async_job(checkpoint_dir)
    # Register the DAGs once beforehand: two `dags test` processes would otherwise both insert them.
    subprocess.run([AIRFLOW, "dags", "reserialize"], check=True, capture_output=True)

    logs = {dag_id: open(Path(checkpoint_dir + f"-{dag_id}.log"), "w+") for dag_id in dag_ids}  # noqa: SIM115
    runs = {
        dag_id: subprocess.Popen([AIRFLOW, "dags", "test", dag_id], stdout=logs[dag_id], stderr=subprocess.STDOUT)
        for dag_id in dag_ids
    }
    ended_after: dict[str, float] = {}
    started = time.monotonic()
    while len(ended_after) < len(runs):
        assert time.monotonic() - started < 600, "the DAG runs did not end"
        for dag_id, proc in runs.items():
            if dag_id not in ended_after and proc.poll() is not None:
                ended_after[dag_id] = time.monotonic() - started
        time.sleep(0.1)
    outputs = {}
    for dag_id, log in logs.items():
        log.seek(0)
        outputs[dag_id] = log.read()
        log.close()

    codes = {dag_id: proc.returncode for dag_id, proc in runs.items()}
    assert sorted(codes.values()) == [0, 1], codes
    winner = next(dag_id for dag_id, code in codes.items() if code == 0)
    loser = next(dag_id for dag_id, code in codes.items() if code != 0)

    # The loser failed at its first step, naming the winner's run as the holder, and deployed nothing.
    assert f"is held by DAG run {winner}/" in outputs[loser], outputs[loser][-3000:]
    assert "JobHeldError" in outputs[loser]
    assert f"{loser}" not in str(control.read_json("deployment.json")), "the refused run deployed something"
    # Failing fast: the loser's hold failed while the winner still held the job, not after waiting for it (the
    # in-place migration is quick enough that both `dags test` processes end within Airflow's start-up time).
    loser_hold = task_instance(loser, "safe_disable.hold_job")
    winner_release = task_instance(winner, "safe_disable.release_job")
    assert str(loser_hold.state) == "failed", loser_hold.state
    assert loser_hold.end_date < winner_release.start_date, (
        f"the refused run waited instead of failing fast: its hold failed at {loser_hold.end_date}, "
        f"the winner released the job at {winner_release.start_date}"
    )

    # The loser rolled nothing back (its rollback may start after the winner released the job).
    assert str(task_instance(loser, "safe_disable.rollback_to_async").state) == "skipped"

    # The winner migrated the job (in place: the driver started above runs on), released its hold; one driver.
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"]["enabled"] is False
    assert str(task_instance(winner, "safe_disable.release_job").state) == "success"
    assert control.read_json("hold.json") is None, "the hold outlived the migration"
    assert len(live_drivers(control)) == 1


def task_instance(dag_id: str, task_id: str) -> Any:
    """The task instance of the DAG's only run, read from Airflow's database."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=dag_id, task_id=task_id).one()
        session.expunge(ti)
        return ti
