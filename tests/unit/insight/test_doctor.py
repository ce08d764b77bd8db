"""The doctor on hand-made checkpoints and control areas: each diagnosis, its evidence and its cure; the
checkpoint's bytes are the same after every call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.insight.doctor import Diagnosis, diagnose
from airflow_async_stream.insight.symptoms import read_symptoms
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Deployment, State, Status, now
from tests.helpers import make_checkpoint, snapshot

CRASH = "java.lang.IllegalStateException: batch 6 doesn't exist"


def doctor(root: Path) -> Diagnosis:
    """The diagnosis of the checkpoint at ``root``, checking that nothing in it changed."""
    before = snapshot(root)
    diagnosis = diagnose(read_symptoms(str(root), ControlArea.for_checkpoint(str(root))))
    assert snapshot(root) == before
    return diagnosis


def deployed(root: Path, *, enabled: bool = False, **status: Any) -> ControlArea:
    """A control area with a deployment record (async ``enabled`` or not) and, if given, a status record."""
    control = ControlArea.for_checkpoint(str(root))
    control.ensure()
    settings = {"enabled": enabled, "checkpoint_interval_ms": 3000} if enabled else {"enabled": False}
    control.write_deployment(Deployment(deployment_id="d2", job="clicks", async_progress=settings))
    if status:
        control.write_status(Status(deployment_id="d2", heartbeat_at=now(), **status))
    return control


def event(run: str, batch: int, second: int, deployment: str = "d2", rows: int = 10) -> dict[str, Any]:
    return {
        "deployment_id": deployment,
        "query_run_id": run,
        "batch_id": batch,
        "timestamp": f"2026-11-25T00:00:{second:02d}.000Z",
        "num_input_rows": rows,
        "duration_ms": {"triggerExecution": 100},
    }


def test_a_checkpoint_left_with_gaps_and_no_control_area_gets_the_cure_from_its_files_alone(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    found = doctor(tmp_path / "ck")
    assert (found.diagnosis, found.sync_restart_safe, found.control_area) == ("batch_missing", False, False)
    assert "would die with IllegalStateException: batch 6 doesn't exist" in found.summary
    assert "safe_disable_async_progress" in found.cure and "No checkpoint file is deleted" in found.cure
    migration, keep, delete = found.choices
    assert migration["recommended"] and migration["re_run_batches"] == 0  # batch 7 is committed
    assert keep["re_run_batches"] == 0
    # Deleting offsets rewinds to the newest contiguous pair: only offsets/0 qualifies, so seven batches again.
    assert delete["re_run_batches"] == 7 and "duplicates" in delete["costs"] and "retention" in delete["costs"]
    assert found.inspection["latest_offset"] == 7


def test_a_crash_loop_is_named_from_the_status_and_the_rotated_driver_log(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 5, 7], [0, 4, 5])
    control = deployed(tmp_path / "ck", state=State.FAILED, error=f"{CRASH}\n=== Streaming Query ===\nplan")
    control.write_bytes(ControlArea.DRIVER_LOG + ".1", b"WARN The offset log for batch 6 doesn't exist, which is ...\n")
    control.write_bytes(ControlArea.DRIVER_LOG, b"INFO shutting down\n")
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "batch_missing" and "a synchronous restart dies with" in found.summary
    assert "driver log: WARN The offset log for batch 6 doesn't exist, which is ..." in found.evidence
    assert f"status error: {CRASH}" in found.evidence
    assert found.evidence[-1] == f"status error: {CRASH}"
    migration, _, delete = found.choices
    assert migration["re_run_batches"] == 1  # batch 7 was planned, not committed
    assert delete["re_run_batches"] == 2  # back to offsets/5 (4 and 5 are a pair)
    assert found.job == "clicks"


def test_the_rows_a_rewind_reads_again_come_from_the_progress_log(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 5, 7], [0, 4, 5, 7])
    control = deployed(tmp_path / "ck", state=State.FAILED, error=CRASH)
    for batch in range(8):
        control.append_progress(event("r1", batch, batch, rows=100))
    (_, _, delete) = doctor(tmp_path / "ck").choices
    assert delete["rows_read_again"] == 200 and "2 batches, 200 rows" in delete["costs"]


def test_a_job_stopped_with_async_on_is_told_a_restart_with_it_on_works(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    deployed(tmp_path / "ck", enabled=True, state=State.STOPPED, query_id="q")
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "batch_missing" and "would die" in found.summary
    assert found.summary.endswith("the job was last run with it on (a restart with it on works)")


def test_gaps_of_a_job_running_async_are_not_a_disease(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    deployed(tmp_path / "ck", enabled=True, state=State.RUNNING, query_id="q")
    found = doctor(tmp_path / "ck")
    assert (found.diagnosis, found.sync_restart_safe) == ("nothing_known", False)
    assert "offsets/6 is missing" in found.summary


@pytest.mark.parametrize(
    ("runs", "diagnosis"),
    [(["r1", "r2", "r1", "r2"], "second_writer"), (["r1", "r1", "r2", "r2"], "nothing_known")],
    ids=["interleaved", "one-after-the-other"],
)
def test_runs_reporting_at_the_same_time_are_a_second_writer_runs_in_turn_are_one(
    tmp_path: Path, runs: list[str], diagnosis: str
) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1, 2, 3], [0, 1, 2, 3])
    control = deployed(tmp_path / "ck", state=State.STOPPED, query_id="q")
    for batch, run in enumerate(runs):
        control.append_progress(event(run, batch, batch + 1))
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == diagnosis
    if diagnosis == "second_writer":
        assert "query runs r1 and r2 reported batches at the same time" in found.evidence
        assert "stop every writer but one" in found.cure


def test_spark_s_concurrent_update_error_is_a_second_writer(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1], [0, 1])
    control = deployed(tmp_path / "ck", state=State.FAILED, query_id="q")
    line = b"java.lang.IllegalStateException: Concurrent update to the log. Multiple streaming jobs detected for 2\n"
    control.write_bytes(ControlArea.DRIVER_LOG, line)
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "second_writer" and any("Multiple streaming jobs" in e for e in found.evidence)


def test_spark_s_other_words_for_a_second_writer_are_a_second_writer_too(tmp_path: Path) -> None:
    """Spark says this instead when the other writer's offsets file is there first (_LEGACY_ERROR_TEMP_2207):
    the doctor called it a plain failure (seen in CI, test_doctor.py's second writer made for real)."""
    make_checkpoint(tmp_path / "ck", [0, 1], [0, 1])
    error = (
        "[STREAM_FAILED] terminated with exception: Multiple streaming queries are concurrently using file:/ck/offsets."
    )
    deployed(tmp_path / "ck", state=State.FAILED, query_id="q", error=error)
    assert doctor(tmp_path / "ck").diagnosis == "second_writer"


def test_a_second_writer_is_named_from_the_status_error_before_the_log_has_it(tmp_path: Path) -> None:
    """The driver records its error, then prints it: a doctor between the two reads the status record."""
    make_checkpoint(tmp_path / "ck", [0, 1], [0, 1])
    error = "[STREAM_FAILED] Query terminated: Concurrent update to the log. Multiple streaming jobs detected for 2"
    deployed(tmp_path / "ck", state=State.FAILED, query_id="q", error=error)
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "second_writer" and f"status error: {error}" in found.evidence


def test_a_commit_ahead_of_its_offsets_blocks_a_restart_and_only_a_repair_asked_for_cures_it(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1, 2], [0, 1, 2, 3])
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "commit_without_offsets" and "commits/3 is ahead" in found.summary
    assert "Concurrent update to the commit log" in found.summary
    assert "backup" in found.cure and "commits/3" in found.cure
    assert found.evidence[0] == "commits/3: no offsets file beside it"


def test_a_stray_commit_below_the_newest_offsets_does_not_block_a_restart(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1, 3, 4], [0, 1, 2, 3, 4])
    found = doctor(tmp_path / "ck")
    assert (found.diagnosis, found.sync_restart_safe) == ("commit_without_offsets", True)
    assert "not blocked" in found.summary


def test_a_query_that_never_started_shows_the_driver_s_error(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [], [])
    control = deployed(tmp_path / "ck", state=State.FAILED, error="the driver exited with code 1")
    control.write_bytes(
        ControlArea.DRIVER_LOG,
        b"INFO starting\npyspark.errors.exceptions.captured.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] nope\n",
    )
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "never_started" and "d2 never started its query" in found.summary
    assert any("TABLE_OR_VIEW_NOT_FOUND" in line for line in found.evidence)
    assert "validate --analyze SPEC` builds the query on a local Spark and would have caught this" in found.cure


def test_a_failure_after_the_query_ran_on_a_safe_checkpoint_is_plain_failed(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1, 2], [0, 1, 2])
    deployed(tmp_path / "ck", state=State.FAILED, query_id="q", error="sink full")
    found = doctor(tmp_path / "ck")
    assert (found.diagnosis, found.sync_restart_safe) == ("failed", True) and "sink full" in found.summary


def test_a_healthy_job_has_nothing_known(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1, 2], [0, 1, 2])
    found = doctor(tmp_path / "ck")
    assert found.diagnosis == "nothing_known" and found.cure == "nothing to cure"
    assert set(found.to_json()) >= {"diagnosis", "cure", "sync_restart_safe"}
