"""What a job's control area costs on S3: requests by kind and bytes per job-hour, counted on moto's S3 server
(tests/stores.py), and what they cost at S3's list prices.

- The driver: a real PySpark query (rate-micro-batch -> noop) with its control area on the server (its checkpoint
  local: Spark here has no S3 jar), at a 1 s and a 100 ms trigger, with ``logs.control_write_interval_s`` 0
  (every record as it happens: the release before) and unset (10 s on object stores), each for ``window_s``.
- A waiting sensor: one poke of the committed-batches check over a checkpoint on the server, times its pokes
  an hour (``poke_interval`` 1 s, the sensor's default).
- The page: one read of the jobs list and of one job's page, per job.
- The watcher: a sweep over 1,000 running jobs' control areas on the server, steady state, per job and per
  hour at its default ``poll_s`` (5 s).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.checkpoint import latest_batch
from airflow_async_stream.state.commits import check_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.records import State, Status
from airflow_async_stream.state.sources import find_jobs
from airflow_async_stream.supervise.memory import Memory
from airflow_async_stream.supervise.watch import sweep

#: S3 Standard, us-east-1, list prices (USD per 1,000 requests); DELETE is free, uploads are free.
PRICE_PER_1000 = {"PUT": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "DELETE": 0.0}
TRIGGERS = {"1/s": "1 second", "10/s": "100 milliseconds"}
SENSOR_POKES_PER_HOUR = 3600  # poke_interval 1 s
WATCHER_SWEEPS_PER_HOUR = 3600 / 5  # the health watcher's poll_s
FLEET = 1000
#: Jobs actually put on the server for the watcher and the page (requests grow with jobs one for one: the figures
#: per job are multiplied out to FLEET). moto serves about 150 requests a second: 1,000 jobs' records would
#: age past the health limits while they are written and swept.
SAMPLE = 200


def dollars(counts: dict[str, float]) -> float:
    return sum(PRICE_PER_1000.get(kind, 0.0) * n / 1000 for kind, n in counts.items())


def _per_hour(seen: Any, seconds: float) -> dict[str, Any]:
    scale = 3600 / seconds
    counts = {kind: round(n * scale) for kind, n in sorted(seen.counts.items())}
    return {
        "requests": counts,
        "writes": sum(n for kind, n in counts.items() if kind in ("PUT", "POST")),
        "mb_up": round(seen.bytes_in * scale / 1e6, 2),
        "mb_down": round(seen.bytes_out * scale / 1e6, 2),
        "usd": round(dollars(counts), 5),
    }


def driver(s3: Any, rate: str, interval: float | None, window_s: float) -> dict[str, Any]:
    """A real driver with its control area on the server: what it sends in ``window_s``, per hour."""
    checkpoint = tempfile.mkdtemp(prefix="bench-cost-") + "/ck"
    name = f"cost-{rate.replace('/', '')}-{'before' if interval == 0 else 'after'}"
    url = s3.url(f"{name}.async-stream")
    spec = parse_spec(
        {
            "name": name,
            "checkpoint": checkpoint,
            "trigger": {"processing_time": TRIGGERS[rate]},
            "source": {"format": "rate-micro-batch", "options": {"rowsPerBatch": 10}},
            "sink": {"format": "noop"},
            **({"logs": {"control_write_interval_s": interval}} if interval is not None else {}),
        }
    )
    from tests.stores import control_area_at

    with control_area_at(checkpoint, url):
        deploy_job(spec, Holder.this_process("bench"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    control = ControlArea(url)
    deadline = time.monotonic() + 120
    while control.read_json(ControlArea.STABLE) is None and time.monotonic() < deadline:
        time.sleep(0.5)  # its one-time writes (the spec proven stable) before the window: a job-hour is steady
    first = latest_batch(checkpoint, "commits") or 0  # the status is written every 10-20 s: the commits are exact
    s3.reset()
    started = time.monotonic()
    time.sleep(window_s)
    seen = s3.requests.under(f"/{s3.bucket}/{name}.async-stream/")
    seconds = time.monotonic() - started
    batches = (latest_batch(checkpoint, "commits") or 0) - first
    stop_driver(control, "measured", launcher=LocalLauncher())
    return {"batches_per_s": round(batches / seconds, 2), "window_s": round(seconds), **_per_hour(seen, seconds)}


def _status(job: str, files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    now = time.time()
    return Status(
        job=job,
        deployment_id="d",
        state=State.RUNNING,
        host="elsewhere",
        started_at=now - 3600,
        heartbeat_at=now,
        batches=400,
        last_batch_id=399,
        last_progress_at=now,
        write_interval_s=60.0,
        progress_files=files or [],
    ).to_json()


def _fleet(s3: Any, folder: str, jobs: int) -> dict[str, list[dict[str, Any]]]:
    """Running jobs' records as their drivers leave them: the status names the progress files written."""
    files = {}
    for j in range(jobs):
        control = ControlArea(f"{folder}/job-{j:04d}.async-stream")
        control.write_interval_s = 10.0  # the segment in one request
        control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d", "job": f"job-{j:04d}"})
        control.write_bytes(ControlArea.SPEC, json.dumps({"name": f"job-{j:04d}", "trigger": {}}).encode())
        for i in range(20):
            control.append_progress(
                {
                    "deployment_id": "d",
                    "batch_id": i,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "sources": [{"metrics": {}}],
                }
            )
        control.flush_progress()
        files[f"job-{j:04d}"] = control.progress_files()
        control.write_json(ControlArea.STATUS, _status(f"job-{j:04d}", files[f"job-{j:04d}"]))
    return files


def watcher(s3: Any, jobs: int = SAMPLE) -> dict[str, Any]:
    """Steady-state sweeps over ``jobs`` running jobs, as a sweep over FLEET jobs: each sweep reading everything
    (the release before), and sweeps remembering between them (the triggerer's), with half the jobs' drivers
    having rewritten their status since the sweep before (a driver writes every 10 s, the watcher sweeps every 5)."""
    folder = s3.url("fleet")
    files = _fleet(s3, folder, jobs)
    found = [(f.name, f.control_area, f.checkpoint) for f in find_jobs([], [folder])]
    memory = Memory()
    sweep(found, memory=memory)  # the first look records each job's health, and is remembered
    result: dict[str, Any] = {"jobs_on_the_server": jobs}
    for label, kept in (("before", None), ("after", memory)):
        for j in range(0, jobs, 2):  # half the drivers wrote since: not counted
            name = f"job-{j:04d}"
            ControlArea(f"{folder}/{name}.async-stream").write_json(ControlArea.STATUS, _status(name, files[name]))
        s3.reset()
        started = time.monotonic()
        changes = sweep([(f.name, f.control_area, f.checkpoint) for f in find_jobs([], [folder])], memory=kept)
        seconds = time.monotonic() - started
        per_job = {kind: round(n / jobs, 2) for kind, n in sorted(s3.requests.counts.items())}
        per_hour = {kind: n * FLEET * WATCHER_SWEEPS_PER_HOUR for kind, n in per_job.items()}
        result[label] = {
            "sweep_s": round(seconds, 2),
            "changes": len(changes),
            "requests_per_job": per_job,
            f"{FLEET}_jobs_requests_per_sweep": {k: round(v * FLEET) for k, v in per_job.items()},
            f"{FLEET}_jobs_usd_per_hour": round(dollars(per_hour), 3),
        }
    return result


def sensor(s3: Any) -> dict[str, Any]:
    """One poke over a checkpoint of 100 batches on the server, per hour at one poke a second."""
    from tests.helpers import make_checkpoint
    from tests.stores import copy_tree

    local = make_checkpoint(Path(tempfile.mkdtemp(prefix="bench-poke-")) / "ck", list(range(100)), list(range(100)))
    url = s3.url("poked")
    copy_tree(Path(local), url)
    ControlArea(f"{url}.async-stream").write_json(ControlArea.STATUS, _status("poked"))
    check_commits(url, 97, 2)
    s3.reset()
    check_commits(url, 97, 2)
    per_poke = dict(s3.requests.counts)
    per_hour = {kind: n * SENSOR_POKES_PER_HOUR for kind, n in per_poke.items()}
    return {"requests_per_poke": per_poke, "requests_per_hour": per_hour, "usd_per_hour": round(dollars(per_hour), 4)}


def page(s3: Any) -> dict[str, Any]:
    """The page's API over the watcher's fleet: the list once, one job's page once; requests per job."""
    import os

    from airflow_async_stream.plugin.app import list_jobs, one_job

    os.environ["AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS"] = s3.url("fleet")
    try:
        s3.reset()
        rows = list_jobs()["jobs"]
        listed = {kind: round(n / max(len(rows), 1), 2) for kind, n in sorted(s3.requests.counts.items())}
        s3.reset()
        one_job("job-0001")
        one = dict(s3.requests.counts)
    finally:
        del os.environ["AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS"]
    return {"jobs": len(rows), "list_requests_per_job": listed, "job_page_requests": one}


def run(log: Any = print, window_s: float = 60.0, only: str = "driver,sensor,watcher,page") -> dict[str, Any]:
    from tests.stores import s3_server

    result: dict[str, Any] = {"prices_usd_per_1000": PRICE_PER_1000}
    with s3_server() as s3:
        if "driver" in only:
            result["driver"] = _drivers(s3, window_s, log)
        if "sensor" in only:
            result["sensor"] = sensor(s3)
            log(f"control cost: a waiting sensor {result['sensor']}")
        if "watcher" in only or "page" in only:
            result["watcher"] = watcher(s3)
            log(f"control cost: watcher {result['watcher']}")
        if "page" in only:
            result["page"] = page(s3)
            log(f"control cost: page {result['page']}")
    return result


def _drivers(s3: Any, window_s: float, log: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for rate in TRIGGERS:
        for label, interval in (("before", 0.0), ("after", None)):
            figures = driver(s3, rate, interval, window_s)
            result[f"{rate} {label}"] = figures
            log(
                f"control cost: driver {rate} {label} ({figures['batches_per_s']} batches/s): "
                f"{figures['requests']} a job-hour, {figures['mb_up']} MB up, ${figures['usd']:.4f}"
            )
        cut = result[f"{rate} before"]["writes"] / max(result[f"{rate} after"]["writes"], 1)
        result[f"{rate} writes cut"] = round(cut, 1)
    return result


if __name__ == "__main__":
    import argparse
    import os

    os.environ["AIRFLOW_ASYNC_STREAM_HOME"] = tempfile.mkdtemp(prefix="bench-cost-home-")  # its jobs' names stay here
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--only", default="driver,sensor,watcher,page")
    args = parser.parse_args()
    print(json.dumps(run(window_s=args.window, only=args.only), indent=2))
