"""Alerts said once per incident (a conditional create naming the run), their retries, recoveries, and the cap."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.supervise import alerts
from airflow_async_stream.supervise.alerts import Alert, open_alerts, recovered_key, say_once


def _control(tmp_path: Path) -> ControlArea:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    return control


def test_one_run_says_it_its_retry_repeats_its_words_others_stay_silent(tmp_path: Path) -> None:
    control = _control(tmp_path)
    alert = Alert.of("20261126T010000Z-aa", "stalled", 1700000000.25, "job: stalled")
    assert alert.key == "20261126T010000Z-aa.stalled.1700000000250"
    assert say_once(control, alert.key, alert.line, "dag/r1") == "job: stalled"
    assert say_once(control, alert.key, "job: stalled, said differently", "dag/r1") == "job: stalled"
    assert say_once(control, alert.key, alert.line, "dag/r2") is None
    assert open_alerts(control) == [alert.key]
    assert say_once(control, recovered_key(alert.key), "job: recovered", "dag/r3") == "job: recovered"
    assert open_alerts(control) == [] and open_alerts(control, "dag/r3") == [alert.key]  # r3's retry says it again


def test_a_torn_claim_counts_as_said(tmp_path: Path) -> None:
    control = _control(tmp_path)
    Path(control.path(alerts.ALERTS)).mkdir()
    control.write_bytes(f"{alerts.ALERTS}/d1.crash_looping", b'{"run": "dag/r')
    assert say_once(control, "d1.crash_looping", "job: crash_looping", "dag/r1") is None


def test_recovered_alerts_are_capped_open_ones_never(tmp_path: Path) -> None:
    control = _control(tmp_path)
    alerts_dir = Path(control.path(alerts.ALERTS))
    for i in range(alerts.KEPT_ALERTS + 5):
        key = f"2026{i:04d}.crash_looping"
        say_once(control, key, "x", "dag/r")
        say_once(control, recovered_key(key), "x", "dag/r")
    say_once(control, "2025old.stalled.1", "x", "dag/r")  # never recovered: kept, although it sorts first
    names = sorted(p.name for p in alerts_dir.iterdir())
    assert "2025old.stalled.1" in names and open_alerts(control) == ["2025old.stalled.1"]
    assert len([n for n in names if n.endswith(".recovered")]) == alerts.KEPT_ALERTS
    assert "20260000.crash_looping" not in names and f"2026{alerts.KEPT_ALERTS + 4:04d}.crash_looping" in names
