"""A job's report read from its control area: the whole log for ``report``, the newest segments for a plan."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_async_stream.insight.read import job_report, recent_events
from airflow_async_stream.state.control import ControlArea
from tests.unit.helpers import batch_events, configuration


def test_a_plan_reads_only_the_newest_segments(tmp_path: Path) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    for event in batch_events([200.0] * 1000, [120.0] * 1000, conf=configuration(False)):
        control.append_progress(event)  # five segments of 200 lines
    recent = recent_events(control, 300)
    assert [e["batch_id"] for e in recent] == list(range(600, 1000))  # the two newest segments, whole
    assert len(job_report(control, str(tmp_path / "ck"), recent=300).batches) == 400
    assert len(job_report(control, str(tmp_path / "ck")).batches) == 1000


def test_the_legacy_file_is_read_whole_once_the_segments_are_not_enough(tmp_path: Path) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    legacy = batch_events([200.0] * 50, [120.0] * 50, conf=configuration(False), deployment="old")
    Path(control.path(ControlArea.LEGACY_PROGRESS)).write_text("".join(json.dumps(e) + "\n" for e in legacy))
    for event in batch_events([200.0] * 10, [120.0] * 10, first_batch=50, conf=configuration(False)):
        control.append_progress(event)
    assert [e["batch_id"] for e in recent_events(control, 5)] == list(range(50, 60))
    assert [e["batch_id"] for e in recent_events(control, 30)] == list(range(60))
