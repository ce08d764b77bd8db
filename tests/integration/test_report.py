"""``report`` on a real job driven through a switch from synchronous to async (real PySpark): every figure it
prints is checked against the test's own arithmetic over the job's progress log and checkpoint."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.switch.request import switch_in_place
from tests.helpers import rate_noop, until

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(q / 100 * len(ordered)) - 1]


def ran(control: ControlArea) -> list[dict]:
    return [e for e in control.read_progress() if "addBatch" in e["duration_ms"]]


def await_batches(control: ControlArea, enabled: bool, count: int, timeout_s: float = 120) -> None:
    until(
        lambda: sum(e["configuration"]["async_progress"]["enabled"] is enabled for e in ran(control)) >= count,
        timeout_s,
        what=f"{count} batches with async {enabled}",
        every_s=0.1,
    )


def test_a_report_across_a_switch_to_async_matches_the_log(
    airflow_db: None, checkpoint_dir: str, tmp_path: Path
) -> None:
    # rate-micro-batch: a batch at every trigger (the rate source has new data only once a second)
    source = {"format": "rate-micro-batch", "options": {"rowsPerBatch": 100}}
    spec = parse_spec(
        rate_noop("report-job", checkpoint_dir, source=source, trigger={"processing_time": "100 milliseconds"})
    )
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    await_batches(control, False, 15)
    on = parse_spec(
        deep_merge(spec.to_mapping(), {"async_progress": {"enabled": True, "checkpoint_interval_ms": 3000}})
    )
    switch_in_place(control, on, timeout_s=120)
    await_batches(control, True, 25)
    stop_driver(control, "test")

    png = tmp_path / "latency.png"
    result = subprocess.run(
        [CLI, "report", checkpoint_dir, "--json", "--png", str(png)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)

    events = ran(control)
    sync = [e for e in events if not e["configuration"]["async_progress"]["enabled"]]
    on_async = [e for e in events if e["configuration"]["async_progress"]["enabled"]]
    assert events == sync + on_async  # one switch: synchronous first, async after
    # the switch started a new query: its first batch is a startup batch, left out of the percentiles
    runs = [{e["query_run_id"] for e in side} for side in (sync, on_async)]
    assert len(runs[0]) == len(runs[1]) == 1 and runs[0] != runs[1], runs
    latencies = [e["duration_ms"]["triggerExecution"] for e in on_async[1:]]
    assert data["batches"] == len(events)
    assert [g["batches"] for g in data["groups"]] == [len(sync), len(on_async)]
    assert [(g["startup_batches"], g["re_runs"]) for g in data["groups"]] == [(1, 0), (1, 0)]
    assert data["groups"][1]["startup_ms"] == on_async[0]["duration_ms"]["triggerExecution"]
    assert (data["p50_ms"], data["p90_ms"], data["p99_ms"]) == tuple(nearest_rank(latencies, q) for q in (50, 90, 99))
    managed = [e["duration_ms"]["walCommit"] + e["duration_ms"]["commitOffsets"] for e in sync]
    sync_p50 = nearest_rank([e["duration_ms"]["triggerExecution"] for e in sync], 50)
    assert data["offset_management_ms"] == nearest_rank(managed, 50)
    assert data["offset_management_share"] == round(nearest_rank(managed, 50) / sync_p50, 3)
    assert [c["kind"] for c in data["changes"]] == ["switch"]
    assert data["changes"][0]["batch_id"] == on_async[0]["batch_id"]
    durable = batch_ids(checkpoint_dir, "offsets")[-1]
    after = {e["batch_id"]: e for e in on_async if e["batch_id"] > durable}
    assert data["at_risk"] == {
        "durable_batch": durable,
        "batches": len(after),
        "rows": sum(e["num_input_rows"] for e in after.values()),
    }
    assert png.read_bytes()[:4] == b"\x89PNG"
    print(f"sync p50 {sync_p50} ms (offset management {nearest_rank(managed, 50)} ms), async p50 {data['p50_ms']} ms")
