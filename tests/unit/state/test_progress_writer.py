"""The progress log's writer with a write interval (object stores): lines wait in memory, each flush is one
request, segments roll at a flush, the retention lists the store once, a failed write loses nothing."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import SEGMENT_LINES, Retention, segments
from airflow_async_stream.state.progress_writer import ProgressWriter
from tests.unit.helpers import Counted

DEP = "20261128T050000Z-aaaaaaaa"


def _area() -> tuple[ControlArea, Counted]:
    area = ControlArea(f"memory://ck-{uuid.uuid4().hex[:8]}.async-stream")
    area.ensure()
    counted = Counted(area.fs)
    area.fs = counted
    return area, counted


def _event(batch: int) -> dict[str, Any]:
    return {"deployment_id": DEP, "batch_id": batch, "duration_ms": {"triggerExecution": 100}}


def test_lines_wait_until_a_flush_which_writes_them_in_one_request() -> None:
    area, fs = _area()
    writer = ProgressWriter(area, DEP, buffered=True)
    for batch in range(50):
        writer.append(_event(batch))
    assert fs.puts == 0 and writer.pending == 50 and area.read_progress() == []
    assert writer.flush()
    assert fs.puts == 1 and writer.pending == 0
    assert not writer.flush()  # nothing waited: no request
    assert fs.puts == 1
    assert [e["batch_id"] for e in area.read_progress()] == list(range(50))


def test_a_flush_that_overflows_the_segment_starts_the_next_with_one_request_and_the_store_is_listed_once() -> None:
    area, fs = _area()
    writer = ProgressWriter(area, DEP, Retention(max_bytes=64 * 1024 * 1024), buffered=True)
    flushes = 0
    for start in range(0, 2000, 150):  # 150 lines a flush: a segment of 200 takes one flush, the next starts
        for batch in range(start, min(start + 150, 2000)):
            writer.append(_event(batch))
        writer.flush()
        flushes += 1
    assert fs.puts == flushes  # every flush one request, a new segment or the current one rewritten
    assert fs.lists == 1  # the retention listed the segments when the first started, then kept track
    assert [e["batch_id"] for e in area.read_progress(DEP)] == list(range(2000))
    sizes = [len(area.read_bytes(s.name).splitlines()) for s in segments(area)]
    assert max(sizes) <= SEGMENT_LINES and len(sizes) < flushes  # the last 50 lines joined the segment before


def test_more_than_a_segment_waiting_is_split_into_whole_segments() -> None:
    area, fs = _area()
    writer = ProgressWriter(area, DEP, buffered=True)
    for batch in range(2 * SEGMENT_LINES + 10):
        writer.append(_event(batch))
    writer.flush()
    assert fs.puts == 3
    assert len(area.read_progress()) == 2 * SEGMENT_LINES + 10


def test_the_retention_still_bounds_the_log_when_it_tracks_segments_itself() -> None:
    area, fs = _area()
    writer = ProgressWriter(area, DEP, Retention(max_bytes=16 * 1024), buffered=True)
    line = len(json.dumps(_event(10_000), sort_keys=True)) + 1
    for start in range(0, 3000, 30):
        for batch in range(start, start + 30):
            writer.append(_event(10_000 + batch))
        writer.flush()
        on_store = fs.fs.ls(area.path(area.PROGRESS), detail=True)  # uncounted: the test's own look
        assert sum(entry["size"] for entry in on_store) <= 16 * 1024 + 30 * line
    assert fs.lists == 1  # the writer's one listing
    kept = [e["batch_id"] for e in area.read_progress(DEP)]
    assert kept == list(range(kept[0], 13_000)) and kept[0] > 10_000


def test_a_failed_write_keeps_the_lines_for_the_next_flush() -> None:
    area, fs = _area()
    writer = ProgressWriter(area, DEP, buffered=True)
    for batch in range(5):
        writer.append(_event(batch))
    fs.fail = True
    with pytest.raises(OSError, match="Slow Down"):
        writer.flush()
    writer.append(_event(5))
    fs.fail = False
    writer.flush()
    assert [e["batch_id"] for e in area.read_progress()] == list(range(6))


def test_lines_waiting_past_the_cap_drop_the_oldest_and_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    area, _ = _area()
    monkeypatch.setattr(ProgressWriter, "PENDING_LINES", 100)
    writer = ProgressWriter(area, DEP, buffered=True)
    for batch in range(130):
        writer.append(_event(batch))
    assert writer.pending == 100 and writer.dropped == 30
    writer.flush()
    assert [e["batch_id"] for e in area.read_progress()] == list(range(30, 130))
