"""The driver's writes with a write interval (object stores): one request per heartbeat whatever the batch rate,
the heartbeat never older than two intervals (a reader judges it alive), a change and the final status written
at once with the progress they name. A clock the test moves; a memory store that counts requests; Spark's
progress events are stand-ins (no JVM)."""

from __future__ import annotations

import uuid

import pytest

from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State
from tests.unit.helpers import Counted, progress_event

INTERVAL = 10.0


class Clock:
    def __init__(self) -> None:
        self.t = 1_795_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    for module in ("heartbeat", "governor", "progress"):
        monkeypatch.setattr(f"airflow_async_stream.runtime.{module}.now", clock)
    monkeypatch.setattr("airflow_async_stream.state.liveness.now", clock)
    return clock


def _governor(interval: float) -> tuple[Governor, Counted]:
    control = ControlArea(f"memory://ck-{uuid.uuid4().hex[:8]}.async-stream")
    control.ensure()
    counted = Counted(control.fs)
    control.fs = counted
    governor = Governor(control, "20261128T050000Z-aaaaaaaa", "job")
    governor.write_every(interval)
    return governor, counted


def _run(governor: Governor, clock: Clock, ticks: int, per_tick: int, first: int = 0) -> list[float]:
    """``per_tick`` batches between heartbeats, ``ticks`` times; the heartbeat's age a reader sees at each."""
    ages = []
    batch = first
    for _ in range(ticks):
        for _ in range(per_tick):
            clock.t += INTERVAL / max(per_tick, 1)
            governor.record_progress(progress_event(batch))
            batch += 1
        if not per_tick:
            clock.t += INTERVAL
        governor._tick()  # one heartbeat (the thread waits INTERVAL between them)
        status = governor.control.read_status()
        ages.append(clock() - status.heartbeat_at)
        assert liveness(status).live, f"judged dead at a heartbeat {ages[-1]:.0f} s old"
    return ages


def test_at_ten_batches_a_second_a_driver_writes_once_per_interval(clock: Clock) -> None:
    governor, store = _governor(INTERVAL)
    governor._write(state=State.RUNNING)  # the query runs: written at once
    governor.record_progress(progress_event(0))  # the first batch: the deploy waits for it, written at once
    urgent = store.puts
    ages = _run(governor, clock, ticks=90, per_tick=100, first=1)  # 15 minutes at 10 batches a second
    assert store.puts - urgent <= 90  # 360 an hour
    assert max(ages) <= 2 * INTERVAL + 1
    assert governor.control.read_status().write_interval_s == INTERVAL
    governor._finish(State.STOPPED)  # the final status at once, with every batch before it
    assert [e["batch_id"] for e in governor.control.read_progress()] == list(range(9001))
    assert governor.control.read_status().state == State.STOPPED


def test_an_idle_driver_writes_only_its_heartbeat_once_per_interval(clock: Clock) -> None:
    governor, store = _governor(INTERVAL)
    governor._write(state=State.RUNNING)
    before = store.puts
    ages = _run(governor, clock, ticks=30, per_tick=0)
    assert store.puts - before == 30 and max(ages) <= INTERVAL


def test_without_a_write_interval_each_batch_is_written_as_it_comes(clock: Clock) -> None:
    governor, store = _governor(0.0)
    governor._write(state=State.RUNNING)
    before = store.puts
    for batch in range(20):
        governor.record_progress(progress_event(batch))
    assert store.puts - before >= 20  # today's behaviour on disks that append (and with 0 set)
    assert len(governor.control.read_progress()) == 20


def test_the_final_status_is_written_when_the_store_refuses_the_progress(clock: Clock) -> None:
    governor, store = _governor(INTERVAL)
    governor._write(state=State.RUNNING)
    governor.record_progress(progress_event(0))
    store.fail = "/progress/"  # the store refuses the progress log's writes (503), not the status's
    for batch in range(1, 30):
        governor.record_progress(progress_event(batch))
    governor._finish(State.STOPPED)
    assert governor.control.read_status().state == State.STOPPED
    assert governor.control.read_status().last_batch_id == 29


@pytest.mark.parametrize(("interval", "poll"), [(0.0, 0.25), (1.0, 0.25), (5.0, 1.0), (10.0, 2.0), (60.0, 2.0)])
def test_requests_are_read_at_most_every_two_seconds(interval: float, poll: float) -> None:
    governor, _ = _governor(interval)
    assert governor.request_poll_s == poll


def test_a_reader_judges_a_driver_by_its_write_interval(clock: Clock) -> None:
    governor, _ = _governor(INTERVAL)
    governor._write(state=State.RUNNING)
    status = governor.control.read_status()
    clock.t += 29
    assert liveness(status).live  # two intervals and most of a third
    clock.t += 2
    assert not liveness(status).live
    assert "31 s old" in liveness(status).reason
