"""The flush a stopped query gets before a switch's new query starts (runtime/progress.py): every batch ends up
in the progress log once, and ``recentProgress`` (a py4j call per event it holds, paid while the stream pauses)
is read only when more than the newest event is missing. The query is a stand-in (no JVM): it counts reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.state.control import ControlArea
from tests.unit.helpers import progress_event as _progress


class StandInQuery:
    """What flush_progress asks of a stopped query, with a count of the costly read."""

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.recent_reads = 0

    @property
    def lastProgress(self) -> Any:  # noqa: N802 (PySpark's name)
        return self.events[-1] if self.events else None

    @property
    def recentProgress(self) -> list[Any]:  # noqa: N802
        self.recent_reads += 1
        return list(self.events)


def _governor(tmp_path: Path) -> Governor:
    control = ControlArea(str(tmp_path / "job.async-stream"))
    control.ensure()
    return Governor(control, "dep-1", "job")


def _logged(governor: Governor) -> list[int]:
    return [e["batch_id"] for e in governor.control.read_progress()]


def test_only_the_newest_event_is_read_when_the_listener_had_every_batch_before_it(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    events = [_progress(b) for b in range(5)]
    for event in events[:4]:  # the listener delivered 0..3; 4's event had not arrived when the query stopped
        governor.record_progress(event)
    query = StandInQuery(events)
    governor.flush_progress(query)
    assert _logged(governor) == [0, 1, 2, 3, 4]
    assert query.recent_reads == 0


def test_nothing_is_read_beyond_the_newest_when_the_listener_had_them_all(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    events = [_progress(b) for b in range(3)]
    for event in events:
        governor.record_progress(event)
    query = StandInQuery(events)
    governor.flush_progress(query)
    assert _logged(governor) == [0, 1, 2]
    assert query.recent_reads == 0


def test_every_missing_batch_is_recorded_once_when_more_than_the_newest_is_missing(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    events = [_progress(b) for b in range(6)]
    for event in events[:3]:  # 3, 4 and 5 still on the listener bus
        governor.record_progress(event)
    query = StandInQuery(events)
    governor.flush_progress(query)
    assert _logged(governor) == [0, 1, 2, 3, 4, 5]
    assert query.recent_reads == 1


def test_a_query_that_ran_no_batch_has_nothing_to_flush(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    query = StandInQuery([])
    governor.flush_progress(query)
    assert _logged(governor) == []
    assert query.recent_reads == 0
