"""A real PySpark driver governed by the runtime with its control area on moto's S3 server (its checkpoint stays
local: Spark here has no object-store jar). Progress, heartbeat, a switch in place and a stop, with the
requests it sends counted on the server against the budget: one write per ``logs.control_write_interval_s``.
Then what people and Airflow read of it there: ``status``, ``inspect``, ``doctor``, ``list`` and ``report``.
Its driver runs a bare Python: the S3 client it writes with (s3fs, botocore, aiohttp) is the bundle's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.checkpoint import latest_batch
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State
from airflow_async_stream.switch.request import switch_in_place
from tests.helpers import rate_noop, until
from tests.integration.helpers import bare_driver_conf
from tests.stores import control_area_at, s3_server

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
WINDOW_S = 30.0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def test_a_driver_on_s3_writes_once_per_interval_switches_and_stops(
    airflow_db: None, checkpoint_dir: str, bare_python: str
) -> None:
    spec = parse_spec(
        rate_noop(
            "on-s3",
            checkpoint_dir,
            source={"format": "rate-micro-batch", "options": {"rowsPerBatch": 10}},
            trigger={"processing_time": "100 milliseconds"},
            spark_conf=bare_driver_conf(bare_python),
        )
    )  # synchronous: Spark's stop of an async query at interval 0 can end it with "Producer interrupted"
    with s3_server() as s3, control_area_at(checkpoint_dir, s3.url("on-s3.async-stream")):
        control = ControlArea.for_checkpoint(checkpoint_dir)
        assert control.url.startswith("s3://")
        deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
        status = control.read_status()
        assert status.write_interval_s == 10.0 and liveness(status).live
        assert status.runtime is not None and status.runtime["bundle"] == runtime_bundle(["s3"]).key
        assert "s3fs" in runtime_bundle(["s3"]).manifest()["distributions"]

        until(lambda: control.read_json(ControlArea.STABLE) is not None, 60, what="the spec recorded stable")
        s3.reset()  # the window starts after the start's one-time writes
        started = time.monotonic()
        time.sleep(WINDOW_S)  # the measured window: requests the running driver sends, counted by the server
        # ... and on a loaded machine longer, until the query has run enough batches to measure: read from the
        # local checkpoint, so that the test's own reads are not counted as the driver's.
        until(lambda: (latest_batch(checkpoint_dir, "commits") or 0) >= 50, 180, what="50 batches committed")
        seen = s3.requests.under(f"/{s3.bucket}/on-s3.async-stream/")
        window_s = time.monotonic() - started
        hours = window_s / 3600
        batches = control.read_status().batches
        assert seen.counts["PUT"] <= window_s / 10 + 1, seen.counts  # one write per 10 s (the window's edges: +1)
        assert seen.counts["LIST"] == 0 and seen.counts["HEAD"] == 0, seen.counts
        assert seen.counts["GET"] / hours <= 2 * 3600 / 2 * 1.1, seen.counts  # two requests read every 2 s
        assert len(control.read_progress()) >= batches - 250  # what waits is at most two intervals of batches

        # A switch in place: its account at once; the progress of the batches before it written with it.
        account = switch_in_place(
            control, parse_spec(deep_merge(spec.to_mapping(), {"trigger": {"processing_time": "200 milliseconds"}}))
        )
        assert account.outcome == "switched" and account.pause_s is not None

        # A stop: the final status at once, and every event the driver recorded in the progress log (the status
        # counts them), the newest included: nothing waiting in memory is lost at the end.
        outcome = stop_driver(control, "test done", launcher=LocalLauncher())
        assert outcome.status.state == State.STOPPED
        events = control.read_progress()
        assert len(events) >= outcome.status.batches > 50
        assert outcome.status.last_batch_id in {e["batch_id"] for e in events}

        # What people read of it, in processes of their own (the job's name leads there through the registry).
        shown = _cli("status", "on-s3", "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["status"]["state"] == "stopped"
        inspected = _cli("inspect", "on-s3")
        assert inspected.returncode == 0, inspected.stderr
        doctor = _cli("doctor", "on-s3")
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        listed = _cli("list")
        assert "on-s3" in listed.stdout, listed.stdout + listed.stderr
        report = _cli("report", "on-s3")
        assert report.returncode == 0 and "p50" in report.stdout, report.stdout + report.stderr
