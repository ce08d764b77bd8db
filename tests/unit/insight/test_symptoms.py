"""The signs the doctor reads: runs that overlap in time, commits without offsets, a missing control area."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.insight.symptoms import overlapping_runs, read_symptoms, stray_commits
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.helpers import make_checkpoint


def at(second: int, **ids: str) -> dict[str, str]:
    return {"timestamp": f"2026-11-25T00:00:{second:02d}.000Z", **ids}


def test_overlap_is_judged_by_time_whatever_order_the_files_were_read_in() -> None:
    # Each deployment writes its own progress files: read one after the other, their events do not interleave.
    events = [at(1, deployment_id="a"), at(5, deployment_id="a"), at(3, deployment_id="b"), at(7, deployment_id="b")]
    assert overlapping_runs(events, "deployment_id") == [("a", "b")]
    assert overlapping_runs([at(1, query_run_id="a"), at(2, query_run_id="a"), at(2, query_run_id="b")]) == []
    assert overlapping_runs([at(1), {"query_run_id": "x"}]) == []  # events without a run or a time say nothing


def test_commits_older_than_every_offsets_file_are_purge_leftovers_not_strays(tmp_path: Path) -> None:
    inspection = inspect_checkpoint(make_checkpoint(tmp_path, [5, 6, 8], [3, 4, 5, 6, 7, 8, 9]))
    assert stray_commits(inspection) == [7, 9]
    assert stray_commits(inspect_checkpoint(make_checkpoint(tmp_path / "none", [], [0]))) == [0]


def test_a_checkpoint_without_a_control_area_is_read_from_its_files_alone(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 1], [0])
    symptoms = read_symptoms(checkpoint, ControlArea.for_checkpoint(checkpoint))
    assert (symptoms.control_area, symptoms.status, symptoms.events, symptoms.log) == (False, None, [], [])
    assert symptoms.inspection.latest_offset == 1 and symptoms.async_on is None
    assert not ControlArea.for_checkpoint(checkpoint).exists()  # reading made none
