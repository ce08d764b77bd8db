"""The driver validates the submitted spec a third time, before any Spark starts (no JVM needed here)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from airflow_async_stream.driver.args import driver_arguments
from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop

GOOD = rate_noop("drv", async_progress={"enabled": True, "checkpoint_interval_ms": 0})


def _run_driver(control: ControlArea, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(runtime_bundle().entry), *args], capture_output=True, text=True, timeout=120
    )


def _submit(tmp_path: Path, spec_json: bytes, args_spec: dict) -> tuple[ControlArea, list[str]]:
    control = ControlArea(str(tmp_path / "drv.async-stream"))
    control.ensure()
    control.write_json("deployment.json", {"job": "drv"})
    control.write_bytes("spec.json", spec_json)
    return control, driver_arguments(control.url, "dep-1", parse_spec(args_spec), spec_json)


def test_a_spec_replaced_after_submit_is_refused(tmp_path: Path) -> None:
    control, args = _submit(tmp_path, json.dumps(GOOD).encode(), GOOD)
    control.write_bytes("spec.json", json.dumps({**GOOD, "name": "other"}).encode())
    result = _run_driver(control, args)
    assert result.returncode == 2
    status = control.read_json("status.json")
    assert status["state"] == "failed" and "spec.json changed after submit" in status["error"]


def test_a_spec_breaking_the_rules_is_refused_in_the_driver(tmp_path: Path) -> None:
    bad = {**GOOD, "trigger": {"available_now": True}}
    raw = json.dumps(bad).encode()
    control, args = _submit(tmp_path, raw, GOOD)  # args from a valid spec; the file itself is bad
    args[args.index("--spec-sha256") + 1] = hashlib.sha256(raw).hexdigest()
    result = _run_driver(control, args)
    assert result.returncode == 2
    assert "trigger.available_now" in result.stderr
    assert "trigger.available_now" in control.read_json("status.json")["error"]


def test_real_time_mode_and_intervals_spark_refuses_are_refused_in_the_driver_before_spark_starts(
    tmp_path: Path,
) -> None:
    for name, trigger in (("interval", {"processing_time": "500 ms"}), ("real-time", {"real_time": "5 seconds"})):
        bad = {**GOOD, "trigger": trigger}
        raw = json.dumps(bad).encode()
        control, args = _submit(tmp_path / name, raw, GOOD)
        args[args.index("--spec-sha256") + 1] = hashlib.sha256(raw).hexdigest()
        result = _run_driver(control, args)
        error = control.read_json("status.json")["error"]
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert (
            "Spark wants '500 milliseconds'" if name == "interval" else "ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED"
        ) in error


def test_an_application_this_host_lacks_runs_from_the_copy_spark_shipped(tmp_path: Path, monkeypatch) -> None:
    """Cluster mode: spark-submit's --py-files put the application in the working folder (YARN) or in a folder
    on the path (Kubernetes); the spec's own path names a file of the Airflow host."""
    from airflow_async_stream.runtime.driver import application_file

    here = tmp_path / "mine.py"
    here.write_text("")
    assert application_file(str(here)) == str(here)  # this host has it: its own path
    container, shipped = tmp_path / "container", tmp_path / "shipped"
    container.mkdir(), shipped.mkdir()
    monkeypatch.chdir(container)
    (shipped / "clicks.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(shipped), *sys.path])
    assert application_file("s3://bucket/apps/clicks.py") == str(shipped / "clicks.py")
    (container / "clicks.py").write_text("")
    assert application_file("/opt/apps/clicks.py") == str(container / "clicks.py")  # the working folder first
    assert application_file("/opt/apps/gone.py") == "/opt/apps/gone.py"  # runpy will say it is missing
