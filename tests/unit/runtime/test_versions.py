"""What differs between Spark lines, handled once (runtime/versions.py): PySpark 3.5's progress dicts, 3.5's
``getErrorClass``, the class that reads file options, and the stop Spark reports as ``Producer interrupted``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.runtime.progress import progress_record
from airflow_async_stream.runtime.spark_errors import error_class
from airflow_async_stream.runtime.versions import (
    file_stream_options_class,
    is_interrupted_stop,
    progress_of,
    version_tuple,
)
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.requests import StopRequest
from tests.unit.helpers import progress_event

#: ``query.lastProgress`` as PySpark 3.5.9 returns it: Spark's JSON, parsed (seen here on a rate -> noop query).
PROGRESS_35 = {
    "id": "q",
    "runId": "11111111-2222-3333-4444-555555555555",
    "name": None,
    "timestamp": "2026-11-25T10:00:07.000Z",
    "batchId": 7,
    "numInputRows": 10,
    "inputRowsPerSecond": 200.0,
    "processedRowsPerSecond": 180.0,
    "durationMs": {"triggerExecution": 50, "addBatch": 40, "walCommit": 3, "commitOffsets": 2},
    "stateOperators": [{"operatorName": "dedupe", "commitTimeMs": 4, "numShufflePartitions": 2, "numRowsTotal": 9}],
    "sources": [
        {
            "description": "RateStreamV2[rowsPerSecond=200, rampUpTimeSeconds=0, numPartitions=default",
            "startOffset": 1400,
            "endOffset": 1600,
            "latestOffset": 1600,
            "numInputRows": 10,
            "metrics": {"maxOffsetsBehindLatest": "0"},
        }
    ],
    "sink": {"description": "NoopTable", "numOutputRows": -1},
}


def test_a_35_progress_dict_records_as_a_4x_progress_object_does() -> None:
    record = progress_record(PROGRESS_35, "dep-1")
    assert record["batch_id"] == 7 and record["query_run_id"] == PROGRESS_35["runId"]
    assert record["offset_management_ms"] == 5 and record["duration_ms"]["addBatch"] == 40
    assert record["sources"] == [
        {
            "description": PROGRESS_35["sources"][0]["description"],
            "start_offset": 1400,
            "end_offset": 1600,
            "num_input_rows": 10,
            "metrics": {"maxOffsetsBehindLatest": "0"},
        }
    ]
    assert record["state_operators"] == [
        {"operator": "dedupe", "commit_ms": 4, "shuffle_partitions": 2, "rows_total": 9}
    ]
    event = progress_event(3)
    assert progress_of(event) is event  # 4.x objects and every line's listener events pass as they are


class DictQuery:
    """A stopped query as PySpark 3.5 shows it: ``lastProgress`` and ``recentProgress`` are dicts."""

    def __init__(self, batches: list[int]) -> None:
        self.events = [{**PROGRESS_35, "batchId": b} for b in batches]

    @property
    def lastProgress(self) -> Any:  # noqa: N802 (PySpark's name)
        return self.events[-1]

    @property
    def recentProgress(self) -> list[Any]:  # noqa: N802
        return list(self.events)


def _governor(tmp_path: Path) -> Governor:
    control = ControlArea(str(tmp_path / "job.async-stream"))
    control.ensure()
    return Governor(control, "dep-1", "job")


def test_a_stopped_35_query_flushes_its_dict_progress(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    governor.flush_progress(DictQuery([4, 5, 6]))
    assert [e["batch_id"] for e in governor.control.read_progress()] == [4, 5, 6]


class EndedQuery:
    """A query that ended with ``error`` (None: cleanly); stopping it is a no-op."""

    isActive = False  # noqa: N815 (PySpark's name)
    status: dict[str, Any] = {"isTriggerActive": False}

    def __init__(self, error: str | None) -> None:
        self.error = error

    def exception(self) -> str | None:
        return self.error

    def stop(self) -> None:
        pass


INTERRUPTED = "java.util.concurrent.RejectedExecutionException: Producer interrupted"


def test_our_stop_that_spark_ends_with_producer_interrupted_is_a_stop(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    query = EndedQuery(INTERRUPTED)
    governor._stop_gracefully(query, StopRequest(deployment_id="dep-1", reason="a person"))  # type: ignore[arg-type]
    governor.finish_after(query)  # type: ignore[arg-type]
    status = governor.control.read_status()
    assert status.state == "stopped" and not status.error, status


def test_the_same_error_without_our_stop_is_a_failure(tmp_path: Path) -> None:
    governor = _governor(tmp_path)
    governor.finish_after(EndedQuery(INTERRUPTED))  # type: ignore[arg-type]
    status = governor.control.read_status()
    assert status.state == "failed" and "Producer interrupted" in status.error, status
    assert is_interrupted_stop(INTERRUPTED) and not is_interrupted_stop("IllegalStateException: batch 6")


class Spark35Error(Exception):
    """PySpark 3.5's converted errors: ``getErrorClass()``, no ``getCondition()``."""

    def getErrorClass(self) -> str:  # noqa: N802 (PySpark's name)
        return "STREAM_FAILED"


def test_35_error_classes_are_read_from_get_error_class() -> None:
    assert error_class(Spark35Error("[STREAM_FAILED] something")) == "STREAM_FAILED"


@pytest.mark.parametrize(
    ("version", "package"),
    [("3.5.9", "streaming"), ("4.0.5", "streaming"), ("4.1.4", "streaming.runtime"), ("4.3.0", "streaming.runtime")],
)
def test_file_stream_options_is_where_each_line_keeps_it(version: str, package: str) -> None:
    """Read from each line's spark-sql jar (SPARK_FACTS.md)."""
    assert file_stream_options_class(version) == f"org.apache.spark.sql.execution.{package}.FileStreamOptions"


def test_versions_read_as_spark_writes_them() -> None:
    assert version_tuple("4.2.0-preview1") == (4, 2) and version_tuple("3.5.9") == (3, 5)
    with pytest.raises(ValueError, match="not a Spark version: 'four'"):
        version_tuple("four")
