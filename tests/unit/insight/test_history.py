"""What changed a job and who: the last migration's changes and their pauses, from the hold's note of its DAG run."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.insight.history import history, last_migration
from airflow_async_stream.insight.report import build_report
from airflow_async_stream.state.control import ControlArea
from tests.unit.helpers import batch_events, configuration

START = 1_800_000_000.0
RUNS = {"safe-disable": {"dag_id": "example_safe_disable", "run_id": "r7", "at": START + 9.5}}


def _migrated() -> list[dict]:
    """10 async batches, then the migration: interval 0 for 5 batches, then synchronous for 5 (1 s apart)."""
    return (
        batch_events([100.0] * 10, [1.0] * 10, conf=configuration(True, 3000), start=START)
        + batch_events([90.0] * 5, [1.0] * 5, conf=configuration(True, 0), start=START + 10.5, first_batch=10)
        + batch_events([200.0] * 5, [80.0] * 5, conf=configuration(False), start=START + 16, first_batch=15)
    )


def test_the_migration_counts_its_changes_and_sums_their_pauses(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    report = build_report(_migrated())
    found = last_migration(control, RUNS, report)
    # 9.1 s: batch 9 ended; 10.5 s: interval 0 began (1.4 s); 14.59 s: batch 14 ended; 16 s: synchronous (1.41 s)
    assert found == {
        "dag_id": "example_safe_disable",
        "run_id": "r7",
        "at": START + 9.5,
        "changes": 2,
        "pause_s": 2.81,
        "failed_step": None,
    }


def test_a_migration_older_than_the_batches_read_has_no_figures_and_a_failed_step_is_named(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    control.write_json(
        ControlArea.MIGRATION,
        {"dag_id": "example_safe_disable", "run_id": "r7", "failed_step": "gate_sync_restart", "reason": "unsafe"},
    )
    report = build_report(_migrated()[12:])  # the batches read begin after the migration began
    found = last_migration(control, RUNS, report)
    assert (found["changes"], found["pause_s"], found["failed_step"]) == (None, None, "gate_sync_restart")
    assert last_migration(control, {}, report) is None


def test_a_migration_counts_only_its_own_changes_not_later_switches(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    later = (
        batch_events([90.0] * 3, [1.0] * 3, conf=configuration(True, 0), start=START + 22, first_batch=20)
        + batch_events([200.0] * 3, [80.0] * 3, conf=configuration(False), start=START + 26, first_batch=23)
        + batch_events([90.0] * 3, [1.0] * 3, conf=configuration(True, 1000), start=START + 30, first_batch=26)
    )  # three switches from the command line after the migration ended
    found = last_migration(control, RUNS, build_report(_migrated() + later))
    assert (found["changes"], found["pause_s"]) == (2, 2.81)
    took_hold = {**RUNS, "deploy": {"dag_id": "d", "run_id": "r8", "at": START + 12}}  # another run, mid-way
    assert last_migration(control, took_hold, build_report(_migrated()))["changes"] == 1


def test_the_tuner_s_decisions_are_in_the_history_in_words_newest_first() -> None:
    decisions = [
        {"at": 10.0, "act": "try", "reason": "turn async progress tracking on at 0 ms"},
        {"at": 20.0, "act": "revert", "reason": "turn async off", "error": "the gate said no"},
    ]
    incident = {"at": 15.0, "kind": "stall", "error": "no batch"}
    found = history([], [incident], decisions)
    assert [(e["kind"], e["text"]) for e in found] == [
        ("autotune", "revert: turn async off (the gate said no)"),
        ("stall", "no batch"),
        ("autotune", "try: turn async progress tracking on at 0 ms"),
    ]
