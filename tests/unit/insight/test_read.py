"""A job's report read from its control area: the whole log for ``report``, the newest segments for a plan."""

from __future__ import annotations

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
