"""The supervisor's figures: what one watcher sweep over 1,000 jobs' records costs, and how long a job whose
driver is SIGKILLed is down, under a real Airflow (api-server, scheduler, dag-processor, triggerer; LocalExecutor).

- Sweep: 1,000 running jobs in one checkpoint folder (status, deployment, spec, a progress segment, what the
  watcher saw), steady state (nothing changed): the median of 5 sweeps, finding the jobs included.
- Recovery: a job with ``restart: {backoff: 1 second, max_backoff: 1 second}`` SIGKILLed 5 times; detection is
  the kill to the watcher's record of the crash, recovery the kill to the new deployment's first batch. Beside
  it, a bare driver start (the deploy to its first batch) on the same machine, 3 times.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.insight.batches import batch_window
from airflow_async_stream.rollout.sources import find_jobs
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.supervise.record import read_supervision
from airflow_async_stream.supervise.watch import read_seen, sweep

JOBS = 1000
CRASHES = 5
STARTS = 3


def _fleet(folder: Path) -> None:
    for j in range(JOBS):
        control = ControlArea.for_checkpoint(str(folder / f"job-{j:04d}"))
        control.ensure()
        control.write_json(ControlArea.STATUS, {"deployment_id": "d", "state": "running", "heartbeat_at": time.time(),
                                                "pid": os.getpid(), "batches": 400, "last_batch_id": 399,
                                                "last_progress_at": time.time(), "started_at": time.time() - 3600})  # fmt: skip
        control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d", "job": f"job-{j:04d}"})
        control.write_bytes(ControlArea.SPEC, json.dumps({"name": f"job-{j:04d}", "trigger": {}}).encode())
        for i in range(20):
            control.append_progress({"deployment_id": "d", "batch_id": i, "timestamp": "2026-01-01T00:00:00.000Z",
                                     "sources": [{"metrics": {}}]})  # fmt: skip


def sweep_cost(log: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        _fleet(Path(tmp))
        jobs = [(f.name, f.control_area, f.checkpoint) for f in find_jobs([], [tmp])]
        assert len(jobs) == JOBS
        assert sweep(jobs) == []  # the first look records what it saw: nothing is an event
        times = []
        for _ in range(5):
            started = time.perf_counter()
            found = find_jobs([], [tmp])
            changes = sweep([(f.name, f.control_area, f.checkpoint) for f in found])
            times.append(time.perf_counter() - started)
            assert changes == []
    log(f"sweep over {JOBS} jobs: median {statistics.median(times):.2f} s")
    return {"jobs": JOBS, "sweep_s_p50": statistics.median(times), "sweep_s_max": max(times)}


def _spec(root: Path) -> dict[str, Any]:
    return parse_spec({
        "name": "crashy", "checkpoint": str(root / "crashy"), "source": {"format": "rate", "options": {"rowsPerSecond": 5}},
        "sink": {"format": "noop"}, "trigger": {"processing_time": "500 milliseconds"},
        "restart": {"backoff": "1 second", "max_backoff": "1 second", "max_restarts": CRASHES + 1},
    }).to_mapping()  # fmt: skip


def _first_batch_at(control: ControlArea, deployment_id: str) -> float | None:
    """When the deployment's first batch ended (its progress event's own timestamps)."""
    events = control.read_progress(deployment_id)
    return batch_window(events[0])[1] if events else None


def _await(probe: Any, what: str, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := probe()):
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.05)
    return found


def recovery(log: Any) -> dict[str, Any]:
    from tests.integration.airflow_stack import AirflowStack

    with tempfile.TemporaryDirectory(prefix="bench-supervise-") as tmp:
        root = Path(tmp) / "checkpoints"
        root.mkdir()
        settings = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180, redeploy=True)
        starts = []
        for _ in range(STARTS):
            began = time.time()
            deploy_job(parse_spec(_spec(root)), Holder.this_process("bench"), settings)
            starts.append(time.time() - began)
        stack = AirflowStack(Path(tmp) / "airflow-home", core__parallelism="4", scheduler__scheduler_heartbeat_sec="1",
                             triggerer__job_heartbeat_sec="1", dag_processor__refresh_interval="5")  # fmt: skip
        (stack.dags / "supervise.py").write_text(textwrap.dedent(f"""
            from airflow_async_stream.factories import supervise_dag
            supervise_dag(checkpoint_folders=[{str(root)!r}], poll_s=1, startup_timeout_s=180)
            """))  # fmt: skip
        detect, recover = [], []
        try:
            stack.airflow("db", "migrate")
            for component in ("api-server", "scheduler", "dag-processor", "triggerer"):
                stack.start(component, component)
            stack.await_(lambda: stack.query("SELECT 1 FROM serialized_dag WHERE dag_id = 'supervise'"), "DAG", 120)
            control = ControlArea.for_checkpoint(_spec(root)["checkpoint"])
            for n in range(1, CRASHES + 1):
                _await(lambda: (read_seen(control) or None) and read_seen(control).condition == "ok", "watched", 60)
                killed = control.read_deployment().deployment_id
                kill_at = time.time()
                os.killpg(os.getpgid(int(control.read_deployment().driver["launcher_pid"])), signal.SIGKILL)
                seen = _await(lambda k=killed: (s := read_seen(control)) and s.deployment_id == k and s.verdict == "crashed" and s, "detected", 60)  # fmt: skip
                restart = _await(lambda n=n: len(r := read_supervision(control).restarts) >= n and r[-1].get("deployment_id") and r[-1], "restarted", 300)  # fmt: skip
                first = _await(lambda r=restart: _first_batch_at(control, r["deployment_id"]), "first batch", 120)
                detect.append(seen.at - kill_at)
                recover.append(first - kill_at)
                log(f"crash {n}: detected after {detect[-1]:.1f} s, first batch after {recover[-1]:.1f} s")
        finally:
            stack.close()
            for status in root.glob("*.async-stream"):
                from airflow_async_stream.driver.stop import stop_driver

                stop_driver(ControlArea(str(status)), "bench done", graceful_timeout_s=5, kill_after_s=30)
    return {
        "crashes": CRASHES, "backoff_s": 1.0, "driver_start_s_p50": statistics.median(starts),
        "detection_s_p50": statistics.median(detect), "detection_s_max": max(detect),
        "recovery_s_p50": statistics.median(recover), "recovery_s_max": max(recover),
    }  # fmt: skip


def run(log: Any = print) -> dict[str, Any]:
    return {"sweep": sweep_cost(log), "recovery": recovery(log)}
