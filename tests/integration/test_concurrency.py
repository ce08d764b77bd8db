"""Two safe-disable migrations of one job started at the same instant, as two Airflow DAG runs:
exactly one proceeds; the other fails fast at its first step naming the holder, and touches nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_async_stream.control import ControlArea
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
    assert ended_after[loser] < ended_after[winner], f"the refused run waited instead of failing fast: {ended_after}"

    # The winner migrated the job, released its hold, and one driver runs.
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"]["enabled"] is False
    assert deployment["airflow"]["dag_id"] == winner
    assert control.read_json("lease.json") is None, "the hold outlived the migration"
    assert len(live_drivers(control)) == 1
