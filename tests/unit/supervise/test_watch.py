"""The watcher's sweep: an event only on a change of health, never once per poll; one watcher of two emits a
change; a watcher that died between its claim and its record is caught up; a down job nothing answered is
announced again, a held one when its hold ends. Records written by hand (no Spark, no Airflow). Every test
runs twice: sweeps that read everything, and sweeps that remember between them (the triggerer's, memory.py)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, release, take
from airflow_async_stream.supervise.memory import Memory
from airflow_async_stream.supervise.record import Supervision
from airflow_async_stream.supervise.watch import RESEND_AFTER_S, Change, read_seen, sweep
from tests.helpers import deployed, rate_noop

_MEMORY: list[Memory | None] = [None]


@pytest.fixture(autouse=True, params=["reading everything", "remembering"])
def memory(request: pytest.FixtureRequest) -> Memory | None:
    _MEMORY[0] = Memory() if request.param == "remembering" else None
    return _MEMORY[0]


def _sweep(jobs: list[tuple[str, str, str]], at: float | None = None) -> list[Change]:
    return sweep(jobs, at, memory=_MEMORY[0])


@pytest.fixture
def job(tmp_path: Path) -> ControlArea:
    spec = rate_noop("job", str(tmp_path / "ck"), restart={"backoff": "1 second"})
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    deployed(control, spec)
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "deployed_at": time.time() - 60})
    _running(control)
    return control


def _running(control: ControlArea, **changes: object) -> None:
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d1",
            "state": "running",
            "heartbeat_at": time.time(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "batches": 5,
            "last_batch_id": 4,
            "started_at": time.time() - 60,
            "last_progress_at": time.time(),
            **changes,
        },
    )


def _crash(control: ControlArea, deployment_id: str = "d1") -> None:
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": deployment_id, "deployed_at": time.time() - 60})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": deployment_id,
            "state": "failed",
            "batches": 5,
            "error": "java.lang.OutOfMemoryError",
            "finished_at": time.time() - 5,
            "heartbeat_at": time.time() - 5,
        },
    )


def _watch(control: ControlArea, at: float | None = None) -> list[str]:
    return [c.event for c in _sweep([("job", control.url, control.url.removesuffix(".async-stream"))], at)]


def test_an_event_only_when_health_changes(job: ControlArea) -> None:
    assert _watch(job) == []  # healthy at the first look: recorded, nothing to say
    assert read_seen(job).condition == "ok"  # type: ignore[union-attr]
    _crash(job)
    changes = _sweep([("job", job.url, "/ck")])
    assert [(c.event, c.deployment_id, c.was) for c in changes] == [("crashed", "d1", "healthy")]
    assert changes[0].reason.startswith("its query failed: java.lang.OutOfMemoryError")
    assert [_watch(job) for _ in range(5)] == [[]] * 5  # never once per poll
    _crash(job, "d2")  # the restarted deployment crashed too: a change of its own
    assert _watch(job) == ["crashed"]


def test_a_stall_and_its_recovery_are_said_once_each(job: ControlArea) -> None:
    _watch(job)
    _running(job, batch_active_since=time.time() - 3600, last_progress_at=time.time() - 4000)
    assert _watch(job) == ["stalled"]
    assert _watch(job) == []
    _running(job)
    assert _watch(job) == ["recovered"]
    assert _watch(job) == []


def test_of_two_watchers_one_emits_and_a_dead_ones_claim_is_caught_up(job: ControlArea) -> None:
    _watch(job)
    _crash(job)
    seen = read_seen(job)
    # Another watcher claimed the crash and died before it wrote watch.json.
    job.write_bytes(
        "watch/2",
        json.dumps(
            {
                **seen.to_json(),
                "seq": 2,
                "condition": "crashed:d1:free",  # type: ignore[union-attr]
                "verdict": "crashed",
                "unresolved": "crashed",
                "at": time.time(),
            }
        ).encode(),
    )
    assert _watch(job) == []
    _running(job)  # its recovery is this watcher's to say, at the next number
    assert _watch(job) == ["recovered"] and read_seen(job).seq == 3  # type: ignore[union-attr]


def test_a_down_job_nothing_answered_is_announced_again(job: ControlArea) -> None:
    _crash(job)
    assert _watch(job) == ["crashed"]
    later = time.time() + RESEND_AFTER_S + 1
    assert _watch(job, time.time() + RESEND_AFTER_S - 5) == []
    again = _sweep([("job", job.url, "/ck")], later)
    assert [c.event for c in again] == ["crashed"] and again[0].reason.endswith("still down, nothing answered it")
    ledger.write(job, ledger.SUPERVISION, Supervision(restarts=[{"at": later, "answered": "d1"}]).to_json())
    assert _watch(job, later + 2 * RESEND_AFTER_S) == []  # answered: not again


def test_a_held_down_job_is_announced_when_its_hold_ends(job: ControlArea) -> None:
    holder = Holder("DAG run migrate/r1", "a migration", dag_id="migrate", run_id="r1")
    take(job, holder, 600)
    _crash(job)
    assert _watch(job) == ["crashed"]  # said, held: the supervisor skips it
    assert _watch(job, time.time() + 10 * RESEND_AFTER_S) == []  # while held, never again
    release(job, holder)
    assert _watch(job) == ["crashed"]


def test_a_job_whose_records_cannot_be_read_is_skipped_not_the_sweep(job: ControlArea, tmp_path: Path) -> None:
    broken = ControlArea.for_checkpoint(str(tmp_path / "broken"))
    broken.ensure()
    broken.write_bytes(ControlArea.STATUS, b"{not json")
    _crash(job)
    found = _sweep([("broken", broken.url, "/b"), ("job", job.url, "/ck")])
    assert [c.job for c in found] == ["job"]


def test_a_down_job_taken_under_a_hold_is_no_news(job: ControlArea) -> None:
    """The supervisor's own restart holds the job it restarts: that is no second event of the crash."""
    _crash(job)
    assert _watch(job) == ["crashed"]
    holder = Holder("DAG run supervise/r1", "supervisor", dag_id="supervise", run_id="r1")
    take(job, holder, 600)
    assert _watch(job) == []
    assert read_seen(job).condition == "crashed:d1:held"  # type: ignore[union-attr]
    release(job, holder)  # the restart failed before a new driver launched: the hold ends on a job still down
    assert _watch(job) == ["crashed"]


def test_a_job_a_person_brought_back_is_said_recovered_after_it_started(job: ControlArea) -> None:
    _crash(job)
    assert _watch(job) == ["crashed"]
    job.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d2", "deployed_at": time.time()})
    _running(job, deployment_id="d2", state="starting", batches=0, last_progress_at=None)
    assert _watch(job) == []  # starting: no news yet
    _running(job, deployment_id="d2")
    assert _watch(job) == ["recovered"] and _watch(job) == []
