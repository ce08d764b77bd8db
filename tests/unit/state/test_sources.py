"""Where a page finds jobs: fleet indexes and checkpoint folders, each job once, an unreadable source a row."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from airflow_async_stream.state.sources import find_jobs, split_setting


def _control(checkpoint: Path) -> str:
    control = ControlArea.for_checkpoint(str(checkpoint))
    control.ensure()
    return control.url


def test_settings_split_on_commas_and_leave_out_empty_items() -> None:
    assert split_setting(" /a , s3://b/c,,") == ["/a", "s3://b/c"]
    assert split_setting(None) == split_setting("") == []


def test_jobs_come_from_indexes_and_folders_each_control_area_once(tmp_path: Path) -> None:
    folder = tmp_path / "cks"
    clicks, views = _control(folder / "clicks"), _control(folder / "views")
    (folder / "clicks").mkdir()  # the checkpoint itself is not a job: its control area beside it is
    (folder / "notes.async-stream.txt").write_text("not a control area")
    index = FleetIndex(str(tmp_path / "index"))
    index.record_active("clicks", clicks, "run-1")
    index.record_retired("orders", _control(tmp_path / "other" / "orders"), "run-2")
    found = find_jobs([str(tmp_path / "index")], [str(folder)])
    assert [(f.name, f.control_area, f.retired) for f in found] == [
        ("clicks", clicks, False),  # named by the index first, not again by the folder
        ("orders", str(tmp_path / "other" / "orders.async-stream"), True),
        ("views", views, False),
    ]
    assert found[2].checkpoint == str(folder / "views") and found[2].source == f"checkpoint folder {folder}"
    assert all(f.error is None for f in found)


def test_a_source_that_cannot_be_read_is_a_row_saying_so_and_the_others_still_count(tmp_path: Path) -> None:
    _control(tmp_path / "cks" / "clicks")
    index = FleetIndex(str(tmp_path / "index"))
    index.record_active("good", _control(tmp_path / "good"), "r")
    (tmp_path / "index" / "jobs" / "broken.json").write_text("{not json")
    found = find_jobs(
        [str(tmp_path / "index"), str(tmp_path / "no-index")], [str(tmp_path / "cks"), str(tmp_path / "nothing")]
    )
    errors = {f.name: f.error for f in found if f.error}
    assert set(errors) == {"broken", str(tmp_path / "no-index"), str(tmp_path / "nothing")}
    assert "no fleet index at" in errors[str(tmp_path / "no-index")]
    assert "no folder at" in errors[str(tmp_path / "nothing")]
    assert sorted(f.name for f in found if not f.error) == ["clicks", "good"]


def test_indexes_and_folders_on_object_storage_are_read_through_fsspec() -> None:
    """memory:// stands in for s3:// or gs://: an index URL and a folder URL, as a platform team names them."""
    import uuid

    root = f"memory://fleet-{uuid.uuid4().hex[:8]}"
    clicks = ControlArea(f"{root}/ck/clicks.async-stream")
    clicks.ensure()
    clicks.write_json(ControlArea.STATUS, {"deployment_id": "d1", "state": "running"})
    FleetIndex(f"{root}/index").record_active("orders", f"{root}/other/orders.async-stream", "r")
    found = find_jobs([f"{root}/index"], [f"{root}/ck"])
    assert [(f.name, f.checkpoint, f.error) for f in found] == [
        ("orders", f"{root}/other/orders", None),
        ("clicks", f"{root}/ck/clicks", None),
    ]
