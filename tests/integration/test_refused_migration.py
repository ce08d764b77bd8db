"""A migration refused because another run holds the job changes nothing, also when that other run finishes
before the refused run's rollback task starts (the in-place migration is quick enough for that to happen)."""

from __future__ import annotations

import pytest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, take
from tests.integration.helpers import run_dag, task_states, write_dag
from tests.integration.migration_job import async_job

pytestmark = pytest.mark.integration


def test_a_refused_run_does_not_roll_back_after_the_holder_released(airflow_db: None, checkpoint_dir: str) -> None:
    control = ControlArea.for_checkpoint(checkpoint_dir)
    control.ensure()
    other = Holder("DAG run other_migration/run-1", "safe-disable fault-job", pid=None, dag_id=None, run_id=None)
    take(control, other, 600)
    spec = async_job(checkpoint_dir, "300 milliseconds")
    path = write_dag(
        "refused_migration",
        f"""
        from airflow.sdk import dag
        from airflow_async_stream.state.control import ControlArea
        from airflow_async_stream.state.hold import Holder, release
        from airflow_async_stream.factories import safe_disable_async_progress

        def other_run_finishes(context):
            # The holding run ends its migration and lets go, right after this run's hold was refused.
            release(ControlArea.for_checkpoint({checkpoint_dir!r}), Holder({other.name!r}, "done"))

        @dag(schedule=None)
        def refused_migration():
            group = safe_disable_async_progress({spec!r}, deferrable=False)
            group.children["safe_disable.hold_job"].on_failure_callback = [other_run_finishes]

        refused_migration()
        """,
    )

    run = run_dag(path, "refused_migration")

    states = task_states(run)
    assert states["safe_disable.hold_job"] == "failed", states
    assert states["safe_disable.rollback_to_async"] == "skipped", states
    assert control.read_hold() is None, "the refused run took the job's hold"
    assert control.read_deployment() is None, "the refused run deployed the job"
