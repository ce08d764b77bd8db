"""Faults injected during the safe-disable migration: SIGKILL to the driver at each stage of both paths
(switched in place, and by restarts), and to the Airflow run itself. After each: no synchronous job ran on an unsafe checkpoint, no checkpoint file was
deleted or changed, at most one driver runs and it is the one the status record names, and a re-run of
the DAG completes the migration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness, local_pid_alive
from tests.integration.helpers import checkpoint_files, fail_running_dag_runs, run_dag_while
from tests.integration.migration_job import live_drivers, migration_dag, start_async_job

pytestmark = pytest.mark.integration
AIRFLOW = str(Path(sys.executable).parent / "airflow")
Trigger = Callable[[ControlArea, str], "int | str | None"]
AIRFLOW_RUN = "the airflow run"


def _dag(checkpoint: str, dag_id: str, trigger: str = "300 milliseconds", in_place: bool = True) -> Path:
    return migration_dag(checkpoint, dag_id, trigger, in_place)


def _run_dag_process(dag_id: str, strike: Trigger | None, control: ControlArea) -> tuple[int, str | None]:
    """`airflow dags test` in a subprocess, so the Airflow run itself can be killed; ``strike`` is polled and
    returns a process group to SIGKILL (``AIRFLOW_RUN``: the run's own).

    Its output goes to a file, not a pipe: nobody reads a pipe while the run goes on, and a full pipe
    would block the run at its next log line.
    """
    out_file = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [AIRFLOW, "dags", "test", dag_id], stdout=out_file, stderr=subprocess.STDOUT, start_new_session=True
    )
    struck = None
    deadline = time.monotonic() + 600
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the DAG run did not end"
        if strike and struck is None:
            target = strike(control, dag_id)
            if target == AIRFLOW_RUN:
                target = proc.pid  # the Airflow run itself: its worker dies mid-step, the driver lives on
            if target:
                os.killpg(int(target), signal.SIGKILL)
                struck = f"killed process group {target}"
        time.sleep(0.02)
    out_file.seek(0)
    out = out_file.read()
    out_file.close()
    return proc.returncode, struck if struck else None if strike is None else out[-3000:]


def _run_dag(path: Path, dag_id: str, strike: Trigger | None, control: ControlArea) -> tuple[str, str | None]:
    """The DAG run through ``dag.test()`` in this process, ``strike`` polled from a thread: it returns a
    driver's process group to SIGKILL. (In this process, not `airflow dags test`: a new process spends
    about 8 s starting Airflow and its in-process execution API before the first task runs.)"""
    struck: list[str] = []

    def step() -> bool:
        target = strike(control, dag_id) if strike else None
        if target:
            os.killpg(int(target), signal.SIGKILL)
            struck.append(f"killed process group {target}")
        return strike is None or bool(struck)

    dag_run = run_dag_while(path, dag_id, step)
    return str(dag_run.state), struck[0] if struck else None


def _deployment(control: ControlArea, async_enabled: bool, interval: int | None = None) -> dict | None:
    record = control.read_json("deployment.json") or {}
    settings = record.get("async_progress") or {}
    if settings.get("enabled") is not async_enabled or (
        interval is not None and settings.get("checkpoint_interval_ms") != interval
    ):
        return None
    return record if record.get("driver") else None


def before_first_async_batch(control: ControlArea, dag_id: str) -> int | None:
    record = _deployment(control, True, 0)
    status = control.read_json("status.json") or {}
    if record and status.get("deployment_id") != record["deployment_id"]:
        return int(record["driver"]["launcher_pid"])  # submitted, its query not yet reporting
    return None


def between_first_and_second_async_batch(control: ControlArea, dag_id: str) -> int | None:
    record = _deployment(control, True, 0)
    if record and record.get("start_batch") is not None:
        after = [
            b for b in batch_ids(control.url.removesuffix(".async-stream"), "commits") if b > record["start_batch"]
        ]
        if len(after) == 1:
            return int(record["driver"]["launcher_pid"])
    return None


def during_graceful_stop(control: ControlArea, dag_id: str) -> int | None:
    record = _deployment(control, True, 0)
    request = control.read_json("stop-request.json")
    if record and request and request.get("deployment_id") == record["deployment_id"]:
        return int(record["driver"]["launcher_pid"])
    return None


def during_sync_redeploy(control: ControlArea, dag_id: str) -> int | None:
    record = _deployment(control, False)
    return int(record["driver"]["launcher_pid"]) if record else None


# -- in place: the same driver switches; the strikes follow its account of each switch ------------------------


def _switch(control: ControlArea, to_interval_0: bool, phases: tuple[str, ...]) -> int | None:
    """The driver's process group while its switch to interval 0 (or to synchronous) is in one of ``phases``."""
    record = control.read_json("switch.json") or {}
    before = (record.get("before") or {}).get("async_progress") or {}
    deployment = control.read_json("deployment.json") or {}
    if record.get("phase") in phases and (before.get("checkpoint_interval_ms") != 0) is to_interval_0:
        return int(deployment["driver"]["launcher_pid"])
    return None


def switching_to_interval_0(control: ControlArea, dag_id: str) -> int | None:
    # its async query stopped, the interval-0 one not started: held there by runtime/pause.py (the test sets it)
    return _switch(control, True, ("stopping", "stopped"))


def between_first_and_second_interval_0_batch(control: ControlArea, dag_id: str) -> int | None:
    record = control.read_json("switch.json") or {}
    after = (record.get("after") or {}).get("async_progress") or {}
    if after.get("checkpoint_interval_ms") == 0 and record.get("committed_before") is not None:
        committed = batch_ids(control.url.removesuffix(".async-stream"), "commits")
        if len([b for b in committed if b > record["committed_before"]]) == 1:
            return int((control.read_json("deployment.json") or {})["driver"]["launcher_pid"])
    return None


def synchronous_query_started(control: ControlArea, dag_id: str) -> int | None:
    return _switch(control, False, ("started",))  # the synchronous query runs, its first batch not yet reported


_RESTART_STRIKES = [
    before_first_async_batch,
    between_first_and_second_async_batch,
    during_graceful_stop,
    during_sync_redeploy,
]
_IN_PLACE_STRIKES = [switching_to_interval_0, between_first_and_second_interval_0_batch, synchronous_query_started]


@pytest.mark.parametrize(
    ("in_place", "strike"),
    [(False, strike) for strike in _RESTART_STRIKES] + [(True, strike) for strike in _IN_PLACE_STRIKES],
    ids=lambda value: value.__name__ if callable(value) else ("in_place" if value else "restart"),
)
def test_driver_killed_mid_migration(
    airflow_db: None,
    checkpoint_dir: str,
    in_place: bool,
    strike: Trigger,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    dag_id = f"faults_{strike.__name__}"
    held = tmp_path / "hold-the-switch"  # the driver waits at its stopped query while this exists
    if strike is switching_to_interval_0:  # a window of a few ms on a fast machine: held open instead
        held.touch()
        monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_PAUSE", f"switch-stopped={held}")
    # Slow batches leave room to strike between the first and the second async batch; the other faults
    # strike at a deploy, a stop or a switch, whose windows do not depend on the trigger, and short batches
    # keep the migration's waits short.
    slow = strike in (between_first_and_second_async_batch, between_first_and_second_interval_0_batch)
    path = _dag(checkpoint_dir, dag_id, "2 seconds" if slow else "300 milliseconds", in_place)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    start_async_job(checkpoint_dir)
    before = checkpoint_files(checkpoint_dir)

    _, struck = _run_dag(path, dag_id, strike, control)
    held.unlink(missing_ok=True)  # the re-run's driver goes straight through
    assert struck and struck.startswith("killed"), f"the fault was never injected: {struck}"
    _check_invariants(control, checkpoint_dir, before)

    state, _ = _run_dag(path, dag_id, None, control)
    assert state == "success", "the re-run did not complete the migration"
    deployment = control.read_json("deployment.json")
    assert deployment["async_progress"]["enabled"] is False
    _check_invariants(control, checkpoint_dir, before)
    assert len(live_drivers(control)) == 1
    assert path.exists()


def _check_invariants(control: ControlArea, checkpoint: str, before: dict[str, str]) -> None:
    after = checkpoint_files(checkpoint)
    changed = sorted(name for name, digest in before.items() if after.get(name) != digest)
    assert not changed, f"checkpoint files deleted or rewritten: {changed}"
    log = "".join(p.read_text(errors="replace") for p in Path(control.root).glob("driver.log*"))  # rotated too
    assert "doesn't exist" not in log and "not found in offset log" not in log, "a sync job ran on an unsafe checkpoint"
    drivers = live_drivers(control)
    assert len(drivers) <= 1, f"two drivers on one checkpoint: {drivers}"
    status = control.read_json("status.json") or {}
    if drivers:
        assert liveness(status).live and status["pid"] == drivers[0], "a driver runs that the status does not name"
    else:
        assert not liveness(status).live or not local_pid_alive(int(status.get("pid") or 0))


def airflow_run_during_sync_deploy(control: ControlArea, dag_id: str) -> str | None:
    record = _deployment(control, False)
    status = control.read_json("status.json") or {}
    if record and status.get("deployment_id") == record["deployment_id"]:
        return AIRFLOW_RUN  # to_synchronous is waiting for its driver's first batch
    return None


def airflow_run_during_sync_switch(control: ControlArea, dag_id: str) -> str | None:
    if _switch(control, False, ("stopping", "stopped", "started")):
        return AIRFLOW_RUN  # to_synchronous waits for the driver's switch to synchronous: the driver goes on alone
    return None


@pytest.mark.parametrize(
    ("in_place", "strike"),
    [(False, airflow_run_during_sync_deploy), (True, airflow_run_during_sync_switch)],
    ids=["restart", "in_place"],
)
def test_airflow_run_killed_mid_step_then_rerun(
    airflow_db: None, checkpoint_dir: str, in_place: bool, strike: Trigger
) -> None:
    dag_id = f"faults_airflow_run_killed_{'in_place' if in_place else 'restart'}"
    path = _dag(checkpoint_dir, dag_id, in_place=in_place)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    start_async_job(checkpoint_dir)
    before = checkpoint_files(checkpoint_dir)

    _, struck = _run_dag_process(dag_id, strike, control)
    assert struck and struck.startswith("killed"), f"the fault was never injected: {struck}"
    hold = control.read_json("hold.json")
    assert hold and hold["dag_id"] == dag_id, "the dead run should still hold the job"
    _check_invariants(control, checkpoint_dir, before)

    fail_running_dag_runs(dag_id)
    state, _ = _run_dag(path, dag_id, None, control)
    assert state == "success", "the re-run did not complete the migration"
    assert control.read_json("deployment.json")["async_progress"]["enabled"] is False
    _check_invariants(control, checkpoint_dir, before)
    assert len(live_drivers(control)) == 1
