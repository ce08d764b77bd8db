"""One holder at a time per job: fail fast naming the holder, re-entrant for the same holder, expiry."""

from __future__ import annotations

import subprocess
import sys
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import HoldRevokedError, JobHeldError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import (
    KINDS_KEPT,
    MAX_REVOKED,
    Holder,
    held,
    hold_state,
    release,
    revoke,
    take,
)
from tests.helpers import until

RUN_A = Holder("DAG run migrate/run-a", "safe-disable clicks")
RUN_B = Holder("DAG run migrate/run-b", "deploy clicks")


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    return ControlArea(str(tmp_path / "ck.async-stream"))


def test_a_second_holder_fails_fast_naming_the_first(control: ControlArea) -> None:
    assert take(control, RUN_A, 60).new is True
    with pytest.raises(JobHeldError, match=r"held by DAG run migrate/run-a \(safe-disable clicks\) since .* until"):
        take(control, RUN_B, 60)


def test_the_same_holder_renews_and_never_shortens(control: ControlArea) -> None:
    take(control, RUN_A, 600)
    expires = control.read_json(ControlArea.HOLD)["expires_at"]
    assert take(control, RUN_A, 5).new is False
    assert control.read_json(ControlArea.HOLD)["expires_at"] == expires


def test_release_frees_the_job_only_for_its_holder(control: ControlArea) -> None:
    take(control, RUN_A, 60)
    release(control, RUN_B)
    assert control.read_json(ControlArea.HOLD)["holder"] == RUN_A.name
    release(control, RUN_A)
    assert take(control, RUN_B, 60).new is True


def test_an_expired_lease_can_be_taken(control: ControlArea) -> None:
    take(control, RUN_A, 0.01)
    until(lambda: hold_state(control.read_json(ControlArea.HOLD)) == "expired", 5, what="the hold's expiry")
    assert take(control, RUN_B, 60).new is True


def test_a_lease_of_a_dead_process_ends_at_once(control: ControlArea) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    take(control, Holder("process", "cli stop", child.pid), 3600)
    assert hold_state(control.read_json(ControlArea.HOLD)) == "holder exited"
    assert take(control, RUN_B, 60).new is True


def test_held_releases_only_what_it_took(control: ControlArea) -> None:
    take(control, RUN_A, 60)  # a migration holds the job ...
    with held(control, RUN_A, 60):  # ... and one of its steps runs inside
        pass
    assert control.read_json(ControlArea.HOLD)["holder"] == RUN_A.name
    with pytest.raises(JobHeldError):
        with held(control, RUN_B, 60):
            pass


def _contend(url: str, name: str, results: Any, start: Any) -> None:
    start.wait()
    try:
        take(ControlArea(url), Holder(name, "race"), 60)
        results.put(name)
    except JobHeldError:
        results.put("refused")


def test_only_one_of_many_simultaneous_contenders_wins(control: ControlArea) -> None:
    ctx = get_context("spawn")
    results, start = ctx.Queue(), ctx.Barrier(6)
    procs = [ctx.Process(target=_contend, args=(control.url, f"holder-{i}", results, start)) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    outcomes = [results.get(timeout=5) for _ in procs]
    winners = [o for o in outcomes if o != "refused"]
    assert len(winners) == 1 and control.read_json(ControlArea.HOLD)["holder"] == winners[0]


def test_a_lease_of_a_finished_dag_run_ends(control: ControlArea) -> None:
    run_a = Holder("DAG run migrate/run-a", "safe-disable", dag_id="migrate", run_id="run-a")
    take(control, run_a, 3600)
    asked: list[tuple[str, str]] = []

    def still_running(dag_id: str, run_id: str) -> str:
        asked.append((dag_id, run_id))
        return "running"

    with pytest.raises(JobHeldError):
        take(control, RUN_B, 60, still_running)
    assert asked == [("migrate", "run-a")]
    assert take(control, RUN_B, 60, lambda d, r: "failed").new is True


def test_an_unanswerable_run_state_keeps_the_lease(control: ControlArea) -> None:
    take(control, Holder("DAG run m/a", "x", dag_id="m", run_id="a"), 3600)

    def unreachable(dag_id: str, run_id: str) -> str:
        raise ConnectionError("API down")

    with pytest.raises(JobHeldError):
        take(control, RUN_B, 60, unreachable)


def test_airflows_dag_run_state_enum_is_read_by_value(control: ControlArea) -> None:
    """The Task SDK answers with an enum whose str() is 'DagRunState.RUNNING': that run still holds the job."""
    from airflow.sdk.api.datamodels._generated import DagRunState

    take(control, Holder("DAG run m/a", "x", dag_id="m", run_id="a"), 3600)
    with pytest.raises(JobHeldError, match="held by DAG run m/a"):
        take(control, RUN_B, 60, lambda d, r: DagRunState.RUNNING)
    with pytest.raises(JobHeldError):
        take(control, RUN_B, 60, lambda d, r: DagRunState.QUEUED)
    assert take(control, RUN_B, 60, lambda d, r: DagRunState.FAILED).new is True


def test_a_revoked_holder_changes_the_job_no_more(control: ControlArea) -> None:
    take(control, RUN_A, 600)
    stopper = Holder("process 1 on h", "stop from the command line", None)

    ended = revoke(control, stopper, "stop --force")

    assert ended is not None and ended.holder == RUN_A.name
    with pytest.raises(
        HoldRevokedError, match=r"DAG run migrate/run-a may no longer change .* ended by process 1 on h"
    ):
        take(control, RUN_A, 60)  # its next step, even after the stopper is done
    assert take(control, RUN_B, 60).new is True  # anyone else may take the job


def test_revoking_needs_a_live_hold_of_someone_else(control: ControlArea) -> None:
    assert revoke(control, RUN_B, "stop --force") is None
    take(control, RUN_B, 60)
    assert revoke(control, RUN_B, "stop --force") is None  # never its own
    assert take(control, RUN_B, 60).new is False


def test_the_revoked_list_keeps_the_newest(control: ControlArea) -> None:
    for n in range(MAX_REVOKED + 3):
        take(control, Holder(f"DAG run m/run-{n}", "migrate"), 60)
        revoke(control, RUN_B, "stop --force")
    holders = control.read_json(ControlArea.REVOKED_HOLDS)["holders"]
    assert len(holders) == MAX_REVOKED and "DAG run m/run-0" not in holders
    assert f"DAG run m/run-{MAX_REVOKED + 2}" in holders


class _TaskInstanceAsking:
    """A task instance as the Task SDK hands it to a task, reduced to what the hold needs: its run's ids and
    the public ``get_dagrun_state`` (here answering from a table instead of the execution API)."""

    def __init__(self, dag_id: str, run_id: str, states: dict[tuple[str, str], str]) -> None:
        self.dag_id, self.run_id, self.states, self.asked = dag_id, run_id, states, []

    def get_dagrun_state(self, dag_id: str, run_id: str) -> str:
        self.asked.append((dag_id, run_id))
        return self.states[(dag_id, run_id)]


def test_the_hold_task_asks_its_task_instance_for_the_holders_run_state(tmp_path: Path) -> None:
    from airflow_async_stream.operators.hold import TakeJobHoldOperator

    checkpoint = str(tmp_path / "ck")
    control = ControlArea.for_checkpoint(checkpoint)
    take(control, Holder("DAG run migrate/run-a", "x", dag_id="migrate", run_id="run-a"), 3600)
    hold = TakeJobHoldOperator(task_id="hold", checkpoint=checkpoint, purpose="safe-disable clicks")

    running = _TaskInstanceAsking("migrate", "run-b", {("migrate", "run-a"): "running"})
    with pytest.raises(JobHeldError, match="held by DAG run migrate/run-a"):
        hold.execute({"ti": running})  # type: ignore[arg-type]
    assert running.asked == [("migrate", "run-a")]

    failed = _TaskInstanceAsking("migrate", "run-b", {("migrate", "run-a"): "failed"})
    assert hold.execute({"ti": failed})["holder"] == "DAG run migrate/run-b"  # type: ignore[arg-type]
    assert control.read_hold().holder == "DAG run migrate/run-b"


def test_the_dag_run_that_takes_the_hold_is_remembered_per_kind_of_change(control: ControlArea) -> None:
    """dag-runs.json: the jobs page links to the DAGs that deploy, stop or migrate the job."""
    deploy = Holder("DAG run deploy_clicks/r1", "deploy clicks", dag_id="deploy_clicks", run_id="r1")
    stop = Holder("DAG run stop_clicks/r2", "stop clicks", dag_id="stop_clicks", run_id="r2")
    with held(control, deploy, 60):
        pass
    with held(control, stop, 60):
        pass
    with held(control, Holder.this_process("stop clicks"), 60):  # not a DAG run: nothing to link
        pass
    runs = control.read_json(ControlArea.DAG_RUNS)
    assert {kind: (r["dag_id"], r["run_id"]) for kind, r in runs.items()} == {
        "deploy": ("deploy_clicks", "r1"),
        "stop": ("stop_clicks", "r2"),
    }
    Path(control.path(ControlArea.DAG_RUNS)).write_text("{torn")  # a torn note never fails a take
    with held(control, Holder("DAG run again/r3", "deploy clicks", dag_id="again", run_id="r3"), 60):
        pass
    assert control.read_json(ControlArea.DAG_RUNS)["deploy"]["dag_id"] == "again"
    for i in range(12):
        with held(control, Holder(f"DAG run d/{i}", f"kind{i} clicks", dag_id="d", run_id=str(i)), 60):
            pass
    assert len(control.read_json(ControlArea.DAG_RUNS)) == KINDS_KEPT
