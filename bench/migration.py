"""The safe-disable migration through Airflow, split by step, next to its plain-PySpark lower bound.

The lower bound does the same Spark work without the provider or Airflow, each phase in its own process
(as each deploy is): start with async on and interval 0 until two batches commit, stop; start
synchronously until one batch commits.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, REPO, run_json

GAPS_SCRIPT = REPO / "tests" / "integration" / "spark_scripts" / "plain_rate_noop.py"


def _dag(dag_id: str) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / f"{dag_id}.py"))
    return bag.get_dag(dag_id)


def provider_run() -> dict[str, Any]:
    from airflow_async_stream.control import ControlArea
    from airflow_async_stream.lifecycle import stop_driver

    checkpoint = str(Path(os.environ["ASYNC_STREAM_DEMO_ROOT"]) / "clicks-async")
    started = _dag("example_start_async_job").test()
    assert str(started.state) == "success", "could not start the async job"
    t0 = time.monotonic()
    run = _dag("example_safe_disable").test()
    total = time.monotonic() - t0
    steps = {
        ti.task_id.split(".")[-1]: (ti.end_date - ti.start_date).total_seconds()
        for ti in run.get_task_instances()
        if ti.start_date and ti.end_date and str(ti.state) == "success"
    }
    stop_driver(ControlArea.for_checkpoint(checkpoint), "benchmark done", graceful_timeout_s=30, kill_after_s=60)
    return {"state": str(run.state), "total_s": total, "steps_s": steps}


def lower_bound_run(root: Path) -> dict[str, Any]:
    """Two processes: the async-interval-0 phase whole (launch to exit after its stop), then the
    synchronous phase from interpreter start to its first commit (the migration's last step ends there)."""
    checkpoint = str(root / f"plain-{time.time_ns()}")
    run_json([str(GAPS_SCRIPT), checkpoint, "gaps"])
    _, async_wall = run_json([str(BENCH / "plain" / "migration_lower_bound.py"), checkpoint, "async0"])
    sync_inside, _ = run_json([str(BENCH / "plain" / "migration_lower_bound.py"), checkpoint, "sync"])
    phases = {"async_interval_0_s": async_wall, "sync_to_first_commit_s": sync_inside["seconds"]}
    return {"total_s": sum(phases.values()), "phases_s": phases}


def run(rounds: int, log: Any = print) -> dict[str, Any]:
    provider, plain = [], []
    with tempfile.TemporaryDirectory(prefix="bench-migration-") as tmp:
        for r in range(rounds):
            order = ("provider", "plain") if r % 2 == 0 else ("plain", "provider")
            for impl in order:
                if impl == "provider":
                    provider.append(provider_run())
                    log(f"migration round {r + 1}/{rounds} provider: {provider[-1]['total_s']:.1f} s")
                else:
                    plain.append(lower_bound_run(Path(tmp)))
                    log(f"migration round {r + 1}/{rounds} lower bound: {plain[-1]['total_s']:.1f} s")
    best_provider = min(p["total_s"] for p in provider)
    best_plain = min(p["total_s"] for p in plain)
    return {"provider": provider, "lower_bound": plain, "ratio_best": best_provider / best_plain}
