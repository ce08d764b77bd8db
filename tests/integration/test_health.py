"""The health verdict and incidents on real drivers: a query that names a missing column, a batch that blocks
inside a Python UDF (stalled, then healthy again), a driver SIGKILLed while it runs (crashed, one incident), an
idle source (idle, never stalled), a healthy async job with gaps (not red)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import DriverFailedError
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.insight.health import Verdict
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import HEARTBEAT_STALE_S
from tests.helpers import rate_noop, until

pytestmark = pytest.mark.integration
CLI = [sys.executable, "-m", "airflow_async_stream.cli"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def _status(checkpoint: str) -> dict[str, Any]:
    result = _cli("status", "--json", checkpoint)
    report = json.loads(result.stdout)
    failed = (report["status"] or {}).get("state") == "failed"
    assert result.returncode == (1 if failed else 0), result.stderr  # the exit-code table: 1 for a failed job
    return report


def _verdict(checkpoint: str) -> Verdict:
    return check_up(ControlArea.for_checkpoint(checkpoint), checkpoint).health.verdict


def test_a_query_naming_a_missing_column_failed_to_start_with_its_reason_and_cure(
    airflow_db: None, checkpoint_dir: str
) -> None:
    spec = rate_noop("missing-column", checkpoint_dir, transform={"sql": "SELECT nope FROM source"})
    with pytest.raises(DriverFailedError) as failed:
        DeployStreamingJobOperator(task_id="deploy", spec=spec, startup_timeout_s=180).execute({})
    said = str(failed.value)
    assert f"run `airflow-async-stream doctor {checkpoint_dir}`" in said and "doctor: never_started" in said, said
    report = _status(checkpoint_dir)
    health = report["health"]
    assert health["verdict"] == "failed_to_start" and "nope" in health["reason"], health
    [incident] = report["incidents"]
    assert incident["kind"] == "failed_start" and "nope" in incident["error"]
    assert "validate --analyze" in incident["cure"], incident
    doctor = _cli("doctor", checkpoint_dir)
    print(doctor.stdout)
    assert "validate --analyze" in doctor.stdout
    assert not any(line.strip().startswith("at ") for line in doctor.stdout.splitlines()), "a stack trace in evidence"


def test_a_blocked_batch_is_stalled_then_healthy_and_a_killed_driver_crashed_once(
    airflow_db: None, checkpoint_dir: str, user_code_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = tmp_path / "gate"
    monkeypatch.setenv("HEALTH_GATE", str(gate))  # the driver and its Python workers inherit it
    spec = rate_noop(
        "blocking-udf",
        checkpoint_dir,
        rows=20,
        trigger={"processing_time": "200 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
        transform={"entrypoint": "user_jobs.transforms:gated"},
        health={"batch_stalled_after": "4 seconds"},
    )
    DeployStreamingJobOperator(task_id="deploy", spec=spec, startup_timeout_s=180).execute({})
    control = ControlArea.for_checkpoint(checkpoint_dir)
    until(lambda: not inspect_checkpoint(checkpoint_dir).sync_restart_safe, timeout_s=60, every_s=0.2)  # async's gaps
    # The rate source's data comes once a second: on a loaded machine a batch can come more than the quiet
    # limit (2 s) after the last, and the verdict is idle for a moment; healthy is what it must come back to.
    until(lambda: _verdict(checkpoint_dir) == Verdict.HEALTHY, timeout_s=30, every_s=0.2, what="healthy")

    def listed_row() -> tuple[str, str]:
        rows = json.loads(
            _cli(
                "list", "--json", "--no-registry", "--no-settings", "--folder", str(Path(checkpoint_dir).parent)
            ).stdout
        )
        [row] = [r for r in rows if r["checkpoint"] == checkpoint_dir]
        return row["health"]["verdict"], row["restart"]["outlook"]

    # Likewise `list`, in a process of its own.
    until(
        lambda: listed_row() == ("healthy", "needs_migration"),
        timeout_s=30,
        every_s=0.5,
        what="list says healthy, needs_migration",
    )

    # On a loaded machine a batch may run past the 4 s limit on its own before the gate: a stall and a recovery
    # of its own, which the counts below start after.
    before = [i["kind"] for i in _status(checkpoint_dir)["incidents"]]
    gate.touch()  # the next batch blocks inside the UDF
    until(lambda: _verdict(checkpoint_dir) == Verdict.STALLED, timeout_s=60, every_s=0.2)
    health = _status(checkpoint_dir)["health"]
    assert "has run for" in health["reason"] and "(limit 4 s)" in health["reason"], health
    gate.unlink()
    until(lambda: _verdict(checkpoint_dir) == Verdict.HEALTHY, timeout_s=60, every_s=0.2)
    kinds = [i["kind"] for i in _status(checkpoint_dir)["incidents"]]
    assert kinds == ["recovery", "stall", *before], (kinds, before)

    driver = control.read_deployment().driver  # type: ignore[union-attr]
    os.killpg(os.getpgid(int(driver.launcher_pid)), signal.SIGKILL)  # kill -9: no final status
    killed = time.monotonic()
    until(lambda: _verdict(checkpoint_dir) == Verdict.CRASHED, timeout_s=HEARTBEAT_STALE_S + 5, every_s=0.2)
    assert time.monotonic() - killed < HEARTBEAT_STALE_S
    for _ in range(3):
        _status(checkpoint_dir)
    report = _status(checkpoint_dir)
    assert report["status"]["state"] == "failed" and report["health"]["verdict"] == "crashed"
    assert [i["kind"] for i in report["incidents"]] == ["crash", "recovery", "stall", *before]
    listed = _cli("list", "--no-registry", "--no-settings", "--folder", str(Path(checkpoint_dir).parent)).stdout
    [line] = [line for line in listed.splitlines() if line.startswith("blocking-udf ")]
    assert "crashed" in line and "UNSAFE" not in line  # down, but specified async: it restarts as specified


def test_an_idle_source_is_idle_never_stalled(airflow_db: None, checkpoint_dir: str, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "one.txt").write_text("a line\n")
    spec = {
        "name": "idle-source",
        "checkpoint": checkpoint_dir,
        "source": {"format": "text", "options": {"path": str(folder)}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "200 milliseconds"},
        "health": {"no_batch_after": "2 seconds", "batch_stalled_after": "2 seconds"},
    }
    DeployStreamingJobOperator(task_id="deploy", spec=spec, startup_timeout_s=180).execute({})
    until(lambda: _verdict(checkpoint_dir) == Verdict.IDLE, timeout_s=30, every_s=0.2)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    quiet_since = control.read_status().last_progress_at  # type: ignore[union-attr]
    until(lambda: time.time() - quiet_since > 6, timeout_s=30, every_s=0.2)  # three times the limits
    assert _status(checkpoint_dir)["health"]["verdict"] == "idle"
    assert _status(checkpoint_dir)["incidents"] == []
