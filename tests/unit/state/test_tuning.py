"""``autotune.json``: written under the job's hold, read back typed, its decisions capped, its summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, held
from airflow_async_stream.state.tuning import AUTOTUNE, KEPT_DECISIONS, Trial, Tuning, read_tuning, write_tuning

HOLDER = Holder.this_process("test")


def test_a_job_never_tuned_has_an_empty_record_and_no_summary(tmp_path: Path) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    assert read_tuning(control) == Tuning() and Tuning().summary() is None


def test_the_record_round_trips_under_the_hold_and_keeps_its_newest_decisions(tmp_path: Path) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    trial = Trial(kind="on", at=2.0, deployment_id="d1", before={}, configuration={"async_progress": {"enabled": True}})
    record = Tuning(trial=trial, last_trial_at=1.0)
    for i in range(KEPT_DECISIONS + 5):
        record = record.with_decision({"at": float(i), "act": "nothing", "reason": f"look {i}", "switches": 1})
    with held(control, HOLDER, 60) as grant:
        write_tuning(control, grant, record)
    back = read_tuning(control)
    assert back == record and len(back.decisions) == KEPT_DECISIONS and back.decisions[0]["reason"] == "look 5"
    summary = back.summary(newest=3)
    assert summary is not None and summary["trial"] == "on" and summary["switches"] == KEPT_DECISIONS
    assert [d["reason"] for d in summary["decisions"]] == [f"look {i}" for i in range(202, 205)]


def test_the_summary_names_the_newest_measured_decision(tmp_path: Path) -> None:
    record = Tuning().with_decision({"at": 1.0, "act": "keep", "reason": "kept", "before": {"p50_ms": 200}})
    record = record.with_decision({"at": 2.0, "act": "nothing", "reason": "reverted under this spec"})
    summary = record.summary()
    assert summary is not None and summary["measured"]["act"] == "keep" and summary["last"]["act"] == "nothing"


def test_a_damaged_record_names_the_file_and_field(tmp_path: Path) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    control.write_json(AUTOTUNE, {"decisions": "many"})
    with pytest.raises(ControlAreaError, match=r"autotune\.json.*decisions"):
        read_tuning(control)
