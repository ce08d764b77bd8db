"""Cost of ``report`` over a full progress log: 16 MiB (the default retention's size) of a rate -> noop job's
batches, synchronous then switched to async, as its driver writes them (the real writer, its segments and
retention). Timed in process (reading the log and checkpoint, figures, advice) and as the command a user runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_async_stream.insight.read import job_report
from airflow_async_stream.spec.logs import DEFAULT_PROGRESS_BYTES
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import segments

REPEAT = 3
CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def _event(i: int, start: float, enabled: bool) -> dict[str, Any]:
    """One batch's record as the driver writes it (runtime/progress.py), one batch every 100 ms."""
    stamp = datetime.fromtimestamp(start + i / 10, UTC).isoformat(timespec="milliseconds")
    managed = (i % 7) if enabled else 110 + i % 20
    return {
        "deployment_id": "20261124T120000Z-0a1b2c3d",
        "query_id": "7f3c1d2e-1111-4a4a-9b9b-0c0c0c0c0c0c",
        "query_run_id": "r-async" if enabled else "r-sync",
        "batch_id": i,
        "timestamp": stamp.replace("+00:00", "Z"),
        "num_input_rows": 1000,
        "duration_ms": {
            "addBatch": 60 + i % 30,
            "commitOffsets": managed // 2,
            "getBatch": 0,
            "latestOffset": 1,
            "queryPlanning": 4,
            "triggerExecution": 70 + i % 30 + managed,
            "walCommit": managed - managed // 2,
        },
        "offset_management_ms": managed,
        "configuration": {
            "async_progress": {"enabled": enabled, "checkpoint_interval_ms": 3000},
            "trigger": {"processing_time": "100 milliseconds"},
        },
        "sources": [
            {
                "description": "RateStreamV2[rowsPerSecond=10000, rampUpTimeSeconds=0, numPartitions=default",
                "start_offset": i,
                "end_offset": i + 1,
                "num_input_rows": 1000,
            }
        ],
    }


def _fill(control: ControlArea) -> int:
    """Append batches until the retention has started removing the oldest segments: the log is full."""
    start, i, written = time.time() - 3600, 0, 0
    while written < DEFAULT_PROGRESS_BYTES + 1024 * 1024:
        event = _event(i, start, enabled=i >= 12000)
        control.append_progress(event)
        written += len(json.dumps(event, sort_keys=True)) + 1
        i += 1
    return i


def run(log: Any = print) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        checkpoint = str(Path(tmp) / "ck")
        control = ControlArea.for_checkpoint(checkpoint)
        control.ensure()
        written = _fill(control)
        size = sum(s.size for s in segments(control))
        report = job_report(control, checkpoint)  # warm: imports, the first listing
        times = []
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            report = job_report(control, checkpoint)
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        done = subprocess.run([CLI, "report", checkpoint, "--json"], capture_output=True, text=True)
        command_s = time.perf_counter() - t0
        assert done.returncode == 0, done.stderr
    result = {
        "log_bytes": size,
        "batches_in_log": len(report.batches),
        "batches_written": written,
        "report_s": statistics.median(times),
        "report_s_max": max(times),
        "command_s": command_s,
    }
    log(
        f"report over a {size / 2**20:.1f} MiB progress log ({len(report.batches)} batches): "
        f"{result['report_s']:.2f} s in process (median of {REPEAT}), {command_s:.2f} s as a command"
    )
    return result


if __name__ == "__main__":
    run()
