"""The progress log: segments on every store, a retention by size and age, older files still read."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import Retention, segments, tail_events
from airflow_async_stream.state.progress_writer import ProgressWriter

DEP_A, DEP_B = "20261122T010000Z-aaaaaaaa", "20261122T020000Z-bbbbbbbb"


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    area = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    area.ensure()
    return area


def _memory_area() -> ControlArea:
    """fsspec's memory filesystem stands in for S3/GCS/ABFS: it cannot append."""
    area = ControlArea(f"memory://ck-{uuid.uuid4().hex[:8]}.async-stream")
    area.ensure()
    return area


def _event(deployment: str, batch: int) -> dict:
    return {"deployment_id": deployment, "batch_id": batch, "duration_ms": {"triggerExecution": 100}}


def _bytes_on_disk(area: ControlArea) -> int:
    return sum(s.size for s in segments(area))


def test_lines_go_to_segments_of_their_deployment_and_a_torn_last_line_is_skipped(control: ControlArea) -> None:
    control.append_progress(_event(DEP_A, 0))
    control.append_progress(_event(DEP_B, 1))
    names = [s.name for s in segments(control)]
    assert [n.rsplit("-", 1)[0] for n in names] == [f"progress/{DEP_A}-000000", f"progress/{DEP_B}-000000"]
    with open(control.path(names[-1]), "a") as fh:
        fh.write('{"deployment_id": "' + DEP_B + '", "bat')
    assert [e["batch_id"] for e in control.read_progress()] == [0, 1]
    assert [e["batch_id"] for e in control.read_progress(DEP_B)] == [1]
    assert control.latest_progress(DEP_A)["batch_id"] == 0
    assert not Path(control.path("progress.jsonl")).exists()


def test_on_object_stores_segments_are_rewritten_whole_and_roll_at_200_lines() -> None:
    control = _memory_area()
    assert not control.appendable and ControlArea(str(Path("/tmp"))).appendable
    for i in range(450):
        control.append_progress(_event(DEP_A, i))
    for i in range(3):
        control.append_progress(_event(DEP_B, 450 + i))
    found = segments(control)
    assert [(s.deployment_id, s.name.split("-")[2]) for s in found] == [
        (DEP_A, "000000"),
        (DEP_A, "000001"),
        (DEP_A, "000002"),
        (DEP_B, "000000"),
    ]
    assert [e["batch_id"] for e in control.read_progress()] == list(range(453))
    assert [e["batch_id"] for e in control.read_progress(DEP_B)] == [450, 451, 452]
    assert control.latest_progress(DEP_A)["batch_id"] == 449


@pytest.mark.parametrize("store", ["local", "object store"])
def test_the_log_never_holds_more_than_its_size_and_keeps_the_newest_batches(control: ControlArea, store: str) -> None:
    area = control if store == "local" else _memory_area()
    writer = ProgressWriter(area, DEP_A, Retention(max_bytes=8192))
    line_bytes = len(json.dumps(_event(DEP_A, 1000), sort_keys=True)) + 1
    for i in range(1000, 1600):
        writer.append(_event(DEP_A, i))
        assert _bytes_on_disk(area) <= 8192 + line_bytes
    kept = [e["batch_id"] for e in area.read_progress(DEP_A)]
    assert kept == list(range(kept[0], 1600)) and kept[0] > 1000  # a contiguous tail, the oldest gone
    assert len(kept) * line_bytes >= 8192 * 0.75 - line_bytes  # and no less than the size allows
    assert area.latest_progress(DEP_A)["batch_id"] == 1599


def test_segments_whose_batches_are_all_older_than_the_age_limit_are_removed(control: ControlArea) -> None:
    writer = ProgressWriter(control, DEP_A, Retention(max_age_s=3600))
    for i in range(450):  # three segments of 200, 200 and 50 lines
        writer.append(_event(DEP_A, i))
    names = [segment.name for segment in segments(control)]
    assert len(names) == 3
    removed = writer.apply_retention(now=time.time() + 2 * 3600)
    # All but the newest closed segment (its end is unknown: it ended when the current one started) go.
    assert removed == names[:1]
    assert [e["batch_id"] for e in control.read_progress()] == list(range(200, 450))
    assert writer.apply_retention() == []  # nothing is old by the real clock


def test_a_long_running_driver_records_each_batch_once_and_remembers_only_the_newest() -> None:
    from types import SimpleNamespace

    from airflow_async_stream.runtime.governor import Governor

    area = _memory_area()
    area.progress_retention = Retention(max_bytes=64 * 1024)
    governor = Governor(area, DEP_A, "job")

    def progress(batch: int) -> SimpleNamespace:
        return SimpleNamespace(
            id="q",
            runId="r",
            batchId=batch,
            timestamp="t",
            numInputRows=0,
            inputRowsPerSecond=0.0,
            processedRowsPerSecond=0.0,
            durationMs={},
            sources=[],
            stateOperators=[],
        )

    for batch in range(3000):
        governor.record_progress(progress(batch))
    for batch in range(2900, 3000):  # the end-of-query flush reports Spark's last 100 batches again
        governor.record_progress(progress(batch))
    assert len(governor._recorded) <= 1024  # memory: bounded, however long the driver runs
    assert [e["batch_id"] for e in area.read_progress()][-101:] == list(range(2899, 3000))
    assert governor._status.batches == 3000


def test_a_stateful_batch_records_its_state_store_figures_and_a_stateless_one_none() -> None:
    from types import SimpleNamespace

    from airflow_async_stream.runtime.progress import progress_record

    operator = SimpleNamespace(operatorName="stateStoreSave", commitTimeMs=640, numShufflePartitions=64, numRowsTotal=9)
    batch = {
        "id": "q",
        "runId": "r",
        "batchId": 3,
        "timestamp": "t",
        "numInputRows": 1,
        "inputRowsPerSecond": 1.0,
        "processedRowsPerSecond": 2.0,
        "durationMs": {},
        "sources": [],
    }
    stateful = progress_record(SimpleNamespace(**batch, stateOperators=[operator]), DEP_A)
    assert stateful["state_operators"] == [
        {"operator": "stateStoreSave", "commit_ms": 640, "shuffle_partitions": 64, "rows_total": 9}
    ]
    assert "state_operators" not in progress_record(SimpleNamespace(**batch, stateOperators=[]), DEP_A)
    assert (stateful["input_rows_per_s"], stateful["processed_rows_per_s"]) == (1.0, 2.0)
    first = progress_record(
        SimpleNamespace(**{**batch, "processedRowsPerSecond": float("nan")}, stateOperators=[]), DEP_A
    )
    assert first["processed_rows_per_s"] is None  # Spark's NaN on a batch with no time to divide by


def test_segments_are_ordered_by_number_past_a_million_and_names_parse_whatever_the_id() -> None:
    control = _memory_area()
    digits = "20261122T010000Z-12345678"  # a deployment id whose random part is all digits
    names = [
        f"{digits}-000000.jsonl",  # not a segment: its name says no start time
        f"{digits}-999999-t1795000000.jsonl",
        f"{digits}-1000000-t1795000100.jsonl",
        f"{DEP_B}-000000-t1795000200.jsonl",
        "notes.txt",  # not a segment: skipped
    ]
    for name in reversed(names):
        control.fs.pipe_file(control.path(f"progress/{name}"), b"{}\n")
    found = segments(control)
    assert [s.name.split("/")[1] for s in found] == names[1:4]
    assert [(s.deployment_id, s.started_at) for s in found] == [
        (digits, 1795000000.0),
        (digits, 1795000100.0),
        (DEP_B, 1795000200.0),
    ]


@pytest.mark.parametrize("store", ["file", "memory"])
def test_the_tail_reads_only_about_its_bytes_newest_files_first_and_drops_the_cut_line(
    control: ControlArea, store: str
) -> None:
    area = control if store == "file" else _memory_area()
    for batch in range(300):  # past one segment's 200 lines
        area.append_progress(_event(DEP_A if batch < 250 else DEP_B, batch))
    line = len(json.dumps(_event(DEP_A, 100))) + 1
    tail = tail_events(area, 20 * line)
    ids = [e["batch_id"] for e in tail]
    assert ids == list(range(ids[0], 300)) and 18 <= len(ids) <= 20  # the newest, in order, a cut line dropped
    across = [e["batch_id"] for e in tail_events(area, 100 * line)]
    assert across[-1] == 299 and across[0] <= 210  # spans DEP_B's segment and DEP_A's last
    assert [e["batch_id"] for e in tail_events(area, 10**9)] == list(range(300))
