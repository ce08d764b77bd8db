"""A migration's account of its switches: a pause is measured only between two batches of a job that ran."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from airflow_async_stream.migrations.outcome import Stage, ran_when_taken, restart_pause
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, take
from airflow_async_stream.state.records import State, Status, now


def _batch(control: ControlArea, deployment: str, batch: int, start: str) -> None:
    control.append_progress(
        {
            "deployment_id": deployment,
            "batch_id": batch,
            "timestamp": start,
            "duration_ms": {"triggerExecution": 500, "addBatch": 400},
        }
    )


def _control(tmp_path: Path) -> ControlArea:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    _batch(control, "d1", 7, "2026-11-25T10:00:00.000Z")  # ends at 10:00:00.5
    _batch(control, "d2", 8, "2026-11-25T10:00:58.600Z")  # the redeploy's first batch, 58.1 s later
    return control


def test_a_job_that_ran_when_the_migration_took_it_paused_between_its_batches(tmp_path: Path) -> None:
    control = _control(tmp_path)
    running = Status(
        deployment_id="d1", state=State.RUNNING, heartbeat_at=now(), pid=os.getpid(), host=socket.gethostname()
    )
    assert ran_when_taken(control, running, None)
    assert restart_pause(control, running, "d2", ran=True) == (58.1, "")
    migration = Holder("DAG run m/r1", "safe-disable")
    take(control, migration, 600)  # then its own step stopped the job for the gate: a pause of its own
    stopped_by_it = Status(deployment_id="d1", state=State.STOPPED, heartbeat_at=now(), finished_at=now() + 1)
    assert ran_when_taken(control, stopped_by_it, migration)
    assert not ran_when_taken(control, stopped_by_it, Holder("DAG run m/r2", "safe-disable"))  # not its hold


def test_a_job_stopped_before_the_migration_took_it_did_not_pause(tmp_path: Path) -> None:
    """A migration of a stopped job logged `pause 58.09 s`: the time it had stood stopped."""
    control = _control(tmp_path)
    stopped = Status(deployment_id="d1", state=State.STOPPED, heartbeat_at=now() - 60, finished_at=now() - 60)
    migration = Holder("DAG run m/r1", "safe-disable")
    take(control, migration, 600)
    assert not ran_when_taken(control, stopped, migration)
    pause, why = restart_pause(control, stopped, "d2", ran=False)
    assert pause is None and why == "the job was not running before (stopped)"
    switch = Stage("synchronous", "restart", "test", "d2", 7, pause, "deployed", unmeasured=why)
    assert switch.describe().endswith("pause not measured: the job was not running before (stopped)")
    assert restart_pause(control, None, "d2", ran=False) == (None, "the job was not running before (never deployed)")


def test_a_switch_read_back_from_xcom_describes_itself_as_it_did(tmp_path: Path) -> None:
    """The migration's last step logged `pause None s` from the XCom of a switch with no pause."""
    for switch in (
        Stage("async_interval_0", "in_place", "why", "d1", 3, None),
        Stage("synchronous", "restart", "why", "d2", 7, 0.81, "deployed"),
    ):
        assert Stage.from_json(switch.to_json()) == switch
        assert "None" not in switch.describe()
    assert (
        Stage.from_json(
            {"to": "synchronous", "how": "restart", "why": "w", "deployment_id": "d", "start_batch": 1}
        ).pause_s
        is None
    )  # a step that measured none
