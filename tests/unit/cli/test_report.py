"""``report`` on control areas as drivers leave them, an application's driver's included."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from airflow_async_stream.autotune.measure import measure
from airflow_async_stream.cli.commands import main
from airflow_async_stream.cli.report import parse_duration
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.tuning import AUTOTUNE, Tuning
from tests.unit.helpers import batch_events, configuration, gapped_checkpoint

#: An application's driver builds its query itself: its events carry no configuration (deployment.json has it).
APPLICATION = Path(__file__).parents[1] / "fixtures" / "application_driver"


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


def job_with_a_switch(tmp_path: Path, start: float = 1_800_000_000.0) -> str:
    """A job that ran 30 synchronous batches, then 20 async ones (batches 30..49) at 3000 ms, starting at
    ``start`` + 30 s; its checkpoint's offsets hold 0, 4, 7."""
    checkpoint = gapped_checkpoint(tmp_path / "ck")
    control = ControlArea.for_checkpoint(str(checkpoint))
    control.ensure()
    control.write_bytes("spec.json", json.dumps({"name": "clicks", "sink": {"format": "kafka"}}).encode())
    events = batch_events([200.0] * 30, [120.0] * 30, start=start, conf=configuration(False))
    events += batch_events(
        [80.0] * 20, [1.0] * 20, start=start + 30, first_batch=30, run="r2", conf=configuration(True, 3000)
    )
    for event in events:
        control.append_progress(event)
    return str(checkpoint)


def test_the_text_report_shows_figures_changes_and_advice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = report(capsys, job_with_a_switch(tmp_path))
    assert code == 0
    assert "job          clicks" in out
    assert "latest       async 3000 ms, trigger 100 milliseconds: p50 80 ms, p90 80 ms, p99 80 ms" in out
    assert "offset mgmt  p50 120 of 200 ms, share 60% (from 30 synchronous batches" in out
    assert "re-run now   20 batches, 2,000 rows since batch 7 reached offsets/" in out  # the async run's 30..49
    assert "switch: sync, trigger 100 milliseconds -> async 3000 ms, trigger 100 milliseconds" in out
    assert "advice: none" in out  # share high, eligible, interval long enough: keep it on
    notes = [line.strip() for line in out.splitlines() if "left out of p50/p90/p99" in line]
    assert notes == [
        "1 startup batch (a query start's first, up to 200 ms) left out of p50/p90/p99",
        "1 startup batch (a query start's first, up to 80 ms) left out of p50/p90/p99",
    ]


def test_json_carries_the_promised_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = report(capsys, job_with_a_switch(tmp_path), "--json")
    data = json.loads(out)
    assert code == 0
    assert (data["p50_ms"], data["p99_ms"], data["offset_management_share"], data["batches"]) == (80.0, 80.0, 0.6, 50)
    assert data["at_risk"] == {"durable_batch": 7, "batches": 20, "rows": 2000}


def test_the_report_shows_what_the_tuner_settled_on_against_its_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = job_with_a_switch(tmp_path)
    control = ControlArea.for_checkpoint(checkpoint)
    events = control.read_progress()
    before, _ = measure(events, deployment_id="d1", wanted=configuration(False), batches=20)
    after, _ = measure(events, deployment_id="d1", wanted=configuration(True, 3000), batches=10)
    assert before is not None and after is not None
    windows = {"before": before.to_json(), "after": after.to_json()}
    tuning = Tuning().with_decision(
        {
            "at": after.started,
            "act": "try",
            "reason": "turn async progress tracking on",
            "switches": 1,
            "before": before.to_json(),
        }
    )
    tuning = tuning.with_decision(
        {"at": after.ended, "act": "keep", "reason": "kept async at 3000 ms", "switches": 0, "saving": 0.6} | windows
    )
    control.write_json(AUTOTUNE, tuning.to_json())
    code, out, _ = report(capsys, checkpoint)
    assert code == 0
    assert "autotune     1 switch in all" in out
    assert "baseline   sync, trigger 100 milliseconds: p50 200 ms over 20 batches" in out
    assert "tuned      async 3000 ms, trigger 100 milliseconds: p50 80 ms over 10 batches, saving 60%" in out
    assert "keep: kept async at 3000 ms" in out.splitlines()[-1]
    data = json.loads(report(capsys, checkpoint, "--json")[1])
    assert data["autotune"]["measured"]["saving"] == 0.6 and data["autotune"]["trial"] is None


def test_a_limit_on_re_run_rows_turns_into_advice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = report(capsys, job_with_a_switch(tmp_path), "--json", "--max-rerun-rows", "100")
    (advice,) = json.loads(out)["advice"]
    assert advice["kind"] == "interval" and advice["figures"]["max_rerun_rows"] == 100


def test_an_applications_progress_takes_the_deployment_records_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    control = tmp_path / "ck.async-stream"
    shutil.copytree(APPLICATION, control)
    (segment,) = (control / "progress").iterdir()
    lines = [json.loads(line) for line in segment.read_text().splitlines()]
    ran = [e for e in lines if "addBatch" in e["duration_ms"]]
    code, out, _ = report(capsys, str(control), "--json")
    data = json.loads(out)
    assert code == 0 and data["batches"] == len(ran) == 12
    assert data["configuration"]["async_progress"]["enabled"] is False  # from the deployment record
    latencies = sorted(e["duration_ms"]["triggerExecution"] for e in ran)
    managed = sorted(e["duration_ms"]["walCommit"] + e["duration_ms"]["commitOffsets"] for e in ran)
    assert data["p50_ms"] == latencies[5] and data["p99_ms"] == latencies[11]
    assert data["offset_management_share"] == round(managed[5] / latencies[5], 3)
    assert [a["kind"] for a in data["advice"]] == ["turn_on"]


def test_since_and_its_bad_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_duration("90") == 90 and parse_duration("15m") == 900 and parse_duration("2 hours") == 7200
    assert parse_duration("7d") == 7 * 86400 and parse_duration("1.5h") == 5400
    for bad in ("soon", "30ms", "0s", "-5m"):
        code, out, err = report(capsys, job_with_a_switch(tmp_path / bad), f"--since={bad}")
        assert code == 2 and out == ""
        assert f"--since {bad!r}" in err
    two_hours_ago = job_with_a_switch(tmp_path / "recent", start=time.time() - 7200)
    _, out, _ = report(capsys, two_hours_ago, "--since", "1h", "--json")
    assert json.loads(out)["batches"] == 0
    _, out, _ = report(capsys, two_hours_ago, "--since", "1h")
    assert "batches      none recorded in the last 3600 s" in out
    # the async batches started 30..11 s ago, a second apart: 15 of them in the last 25.5 s
    _, out, _ = report(capsys, job_with_a_switch(tmp_path / "now", start=time.time() - 60), "--since=25.5s", "--json")
    assert json.loads(out)["batches"] == 15


def test_a_chart_is_drawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "latency.png"
    code, out, _ = report(capsys, job_with_a_switch(tmp_path), "--png", str(png))
    assert code == 0 and f"chart        {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_a_job_that_does_not_exist_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = report(capsys, str(tmp_path / "nothing"))
    assert code == 2 and "nothing at" in err
