"""The supervisor's figures: what one watcher sweep over 1,000 jobs' records costs, and how long a job whose
driver is SIGKILLed is down, under a real Airflow (api-server, scheduler, dag-processor, triggerer; LocalExecutor).

- Sweep: 1,000 running jobs in one checkpoint folder (status, deployment, spec, a progress segment, what the
  watcher saw), steady state (nothing changed): the median of 5 sweeps, finding the jobs included.
- Recovery: a job with ``restart: {backoff: 1 second, max_backoff: 1 second}`` SIGKILLed 5 times; detection is
  the kill to the watcher's record of the crash, recovery the kill to the new deployment's first batch. Beside
  it, a bare driver start (the deploy to its first batch) on the same machine, 3 times.
- Requery: a sink refusing one commit (tests/integration/user_code/flaky_sink_app.py), its query restarted in the
  live driver with ``backoff: 1 second``, 5 times: the failure to the new run's first batch, beside 3 starts of
  the same job's driver.
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
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.sources import find_jobs
from airflow_async_stream.supervise.record import read_supervision
from airflow_async_stream.supervise.watch import read_seen, sweep

JOBS = 1000
CRASHES = 5
STARTS = 3
REQUERIES = 5
USER_CODE = Path(__file__).resolve().parent.parent / "tests" / "integration" / "user_code"


def _fleet(folder: Path) -> None:
    for j in range(JOBS):
        control = ControlArea.for_checkpoint(str(folder / f"job-{j:04d}"))
        control.ensure()
        control.write_json(
            ControlArea.STATUS,
            {
                "deployment_id": "d",
                "state": "running",
                "heartbeat_at": time.time(),
                "pid": os.getpid(),
                "batches": 400,
                "last_batch_id": 399,
                "last_progress_at": time.time(),
                "started_at": time.time() - 3600,
            },
        )
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
    return parse_spec(
        {
            "name": "crashy",
            "checkpoint": str(root / "crashy"),
            "source": {"format": "rate", "options": {"rowsPerSecond": 5}},
            "sink": {"format": "noop"},
            "trigger": {"processing_time": "500 milliseconds"},
            "restart": {"backoff": "1 second", "max_backoff": "1 second", "max_restarts": CRASHES + 1},
        }
    ).to_mapping()


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


def _driver_starts(spec: dict[str, Any], control: ControlArea) -> list[float]:
    """``STARTS`` deploys of ``spec``, each from a stopped job (no stop timed): the deploy to its first batch."""
    from airflow_async_stream.driver.stop import stop_driver

    starts = []
    settings = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)
    for n in range(STARTS):
        if n:
            stop_driver(control, "bench: the next start", graceful_timeout_s=5, kill_after_s=30)
        began = time.time()
        deploy_job(parse_spec(spec), Holder.this_process("bench"), settings)
        deployment = control.read_deployment().deployment_id
        starts.append(_await(lambda d=deployment: _first_batch_at(control, d), "first batch", 60) - began)
    return starts


def recovery(log: Any) -> dict[str, Any]:
    from tests.integration.airflow_stack import AirflowStack

    with tempfile.TemporaryDirectory(prefix="bench-supervise-") as tmp:
        root = Path(tmp) / "checkpoints"
        root.mkdir()
        starts = _driver_starts(_spec(root), ControlArea.for_checkpoint(_spec(root)["checkpoint"]))
        stack = AirflowStack(
            Path(tmp) / "airflow-home",
            core__parallelism="4",
            scheduler__scheduler_heartbeat_sec="1",
            triggerer__job_heartbeat_sec="1",
            dag_processor__refresh_interval="5",
        )
        (stack.dags / "supervise.py").write_text(
            textwrap.dedent(f"""
            from airflow_async_stream.factories import supervise_dag
            supervise_dag(checkpoint_folders=[{str(root)!r}], poll_s=1, startup_timeout_s=180)
            """)
        )
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
                os.killpg(os.getpgid(int(control.read_deployment().driver.launcher_pid)), signal.SIGKILL)
                seen = _await(
                    lambda k=killed: (
                        (s := read_seen(control)) and s.deployment_id == k and s.verdict == "crashed" and s
                    ),
                    "detected",
                    60,
                )
                restart = _await(
                    lambda n=n: (
                        len(r := read_supervision(control).restarts) >= n and r[-1].get("deployment_id") and r[-1]
                    ),
                    "restarted",
                    300,
                )
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
        "crashes": CRASHES,
        "backoff_s": 1.0,
        "driver_start_s_p50": statistics.median(starts),
        "detection_s_p50": statistics.median(detect),
        "detection_s_max": max(detect),
        "recovery_s_p50": statistics.median(recover),
        "recovery_s_max": max(recover),
    }


def _flaky(root: Path, flag: Path) -> dict[str, Any]:
    return parse_spec(
        {
            "name": "flaky",
            "checkpoint": str(root / "flaky"),
            "application": str(USER_CODE / "flaky_sink_app.py"),
            "sink": {"format": "flaky", "options": {"flag": str(flag)}},
            "trigger": {"processing_time": "500 milliseconds"},
            "restart": {"backoff": "1 second", "max_backoff": "1 second", "max_restarts": REQUERIES + 1},
        }
    ).to_mapping()


def requery(log: Any) -> dict[str, Any]:
    """A sink refusing one commit, restarted in its live driver: the failure to the new run's first batch, beside
    a new driver's start (the deploy's launch to its first batch) of the same job."""
    with tempfile.TemporaryDirectory(prefix="bench-requery-") as tmp:
        root, flag = Path(tmp), Path(tmp) / "flag"
        failed_at = flag.with_name("flag.failed-at")
        control = ControlArea.for_checkpoint(_flaky(root, flag)["checkpoint"])
        heals = []
        python_path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = str(USER_CODE)
        try:
            starts = _driver_starts(_flaky(root, flag), control)
            deployment = control.read_deployment().deployment_id
            for n in range(1, REQUERIES + 1):
                failed_at.unlink(missing_ok=True)
                flag.write_text("refuse")
                status = _await(
                    lambda n=n: (s := control.read_status()) and len(s.query_restarts) >= n and s, "requery", 60
                )
                first = _await(lambda r=status.query_run_id: _first_of_run(control, deployment, r), "first batch", 60)
                heals.append(first - float(failed_at.read_text()))
                log(f"query restart {n}: next batch {heals[-1]:.2f} s after the failure, pid {status.pid}")
        finally:
            if python_path is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = python_path
            from airflow_async_stream.driver.stop import stop_driver

            stop_driver(control, "bench done", graceful_timeout_s=5, kill_after_s=30)
    start, heal = statistics.median(starts), statistics.median(heals)
    log(f"in the driver: {heal:.2f} s p50 from the failure to the next batch; a driver start {start:.2f} s p50")
    return {
        "requeries": REQUERIES,
        "backoff_s": 1.0,
        "driver_start_s_p50": start,
        "requery_s_p50": heal,
        "requery_s_max": max(heals),
        "requery_over_start": heal / start,
    }


def _first_of_run(control: ControlArea, deployment_id: str, run_id: str) -> float | None:
    events = [e for e in control.read_progress(deployment_id) if e.get("query_run_id") == run_id]
    return batch_window(events[0])[1] if events else None


def run(log: Any = print) -> dict[str, Any]:
    return {"sweep": sweep_cost(log), "recovery": recovery(log), "requery": requery(log)}
