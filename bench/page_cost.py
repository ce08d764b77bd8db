"""Cost of the streaming-jobs page for a fleet of 1,000 jobs in one checkpoint folder: each job's checkpoint
holds 100 batches in ``offsets/`` and ``commits/`` (Spark's default retention), its control area a status,
deployment and spec record and about 290 KB of progress (400 batches, two segments, as the driver writes them).

Timed in process (finding the jobs, every row, the JSON) and through the plugin's app over HTTP in process
(Starlette's test client; the auth dependency is swapped for a no-op, the one part not measured here: one
token check per request, whatever the fleet's size).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_async_stream.insight.overview import job_rows
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.sources import find_jobs
from bench.report_cost import _event

JOBS = 1000
BATCHES = 400
REPEAT = 3


def _fleet(folder: Path) -> None:
    from tests.helpers import make_checkpoint

    start = time.time() - 3600
    for j in range(JOBS):
        checkpoint = folder / f"job-{j:04d}"
        kept = list(range(BATCHES - 100, BATCHES))
        make_checkpoint(checkpoint, kept, kept)
        control = ControlArea.for_checkpoint(str(checkpoint))
        control.ensure()
        control.write_json(
            ControlArea.STATUS,
            {
                "deployment_id": "d",
                "state": "running",
                "job": checkpoint.name,
                "heartbeat_at": time.time(),
                "configuration": _event(0, start, True)["configuration"],
            },
        )
        control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d", "job": checkpoint.name})
        control.write_bytes(
            ControlArea.SPEC, json.dumps({"name": checkpoint.name, "sink": {"format": "kafka"}}).encode()
        )
        for i in range(BATCHES):
            control.append_progress(_event(i, start, enabled=i >= BATCHES // 2))


def _keep_live(folder: Path) -> None:
    """Fresh heartbeats, as the fleet's live drivers write them (not timed): a row of a driver whose heartbeat
    is gone is a crash, which the first look records."""
    for status in folder.glob("*.async-stream/status.json"):
        data = json.loads(status.read_text())
        status.write_text(json.dumps({**data, "heartbeat_at": time.time()}))


def _list(folder: Path) -> float:
    """``airflow-async-stream list --folder`` as a user runs it (Python's start included)."""
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "airflow_async_stream.cli",
        "list",
        "--no-registry",
        "--no-settings",
        "--folder",
        str(folder),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    assert done.returncode == 0 and done.stdout.rstrip().endswith(f"{JOBS} jobs"), done.stderr[-2000:]
    return took


def _page(folder: Path) -> bytes:
    return json.dumps({"jobs": job_rows(find_jobs([], [str(folder)]))}).encode()


def _over_http(folder: Path) -> list[float]:
    import os

    from fastapi.testclient import TestClient

    from airflow_async_stream.plugin.app import create_app

    os.environ["AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS"] = str(folder)
    app = create_app()
    app.dependency_overrides[app.router.dependencies[0].dependency] = lambda: None
    times = []
    with TestClient(app) as client:
        client.get("/api/jobs")  # warm
        for _ in range(REPEAT):
            _keep_live(folder)
            t0 = time.perf_counter()
            response = client.get("/api/jobs")
            times.append(time.perf_counter() - t0)
            assert response.status_code == 200 and len(response.json()["jobs"]) == JOBS
    return times


def run(log: Any = print) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-page-") as tmp:
        folder = Path(tmp) / "checkpoints"
        t0 = time.perf_counter()
        _fleet(folder)
        log(f"page: built {JOBS} jobs in {time.perf_counter() - t0:.0f} s")
        _keep_live(folder)
        _page(folder)  # warm: imports, the first listings
        times = []
        for _ in range(REPEAT):
            _keep_live(folder)
            t0 = time.perf_counter()
            body = _page(folder)
            times.append(time.perf_counter() - t0)
        rows = json.loads(body)["jobs"]
        assert len(rows) == JOBS and not [r for r in rows if r["error"]], "every row must read"
        http = _over_http(folder)
        listed = []
        for _ in range(REPEAT):
            _keep_live(folder)
            listed.append(_list(folder))
    result = {
        "list_s": statistics.median(listed),
        "jobs": JOBS,
        "page_s": statistics.median(times),
        "page_s_max": max(times),
        "http_s": statistics.median(http),
        "http_s_max": max(http),
        "body_bytes": len(body),
    }
    log(
        f"page of {JOBS} jobs: {result['page_s']:.2f} s in process, "
        f"{result['http_s']:.2f} s over HTTP (median of {REPEAT}; {len(body) / 1024:.0f} KiB of JSON); "
        f"list {result['list_s']:.2f} s"
    )
    return result


if __name__ == "__main__":
    run()
