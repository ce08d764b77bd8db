"""A fleet's cost: the rollout that safe-disables N jobs in place (``toggle_off_dag``), under a real Airflow
(api-server, scheduler, dag-processor; LocalExecutor, SQLite), each job its own driver on the embedded Spark.

Per fleet (N jobs, ``max_parallel``): a rollout deploys the N jobs with async on (rate 1000 rows/s -> noop,
100 ms trigger, interval 3000 ms); their spec files then turn async off and the toggle-off run is timed from
its trigger to its end. Where the time goes, from Airflow's own records: the run's wait for its first task,
the plan task, each apply task's wait for a slot and its own time (the switches, the waits for committed
batches), the summary task; and each job's switches (pause per switch) from its rollout record.
"""

from __future__ import annotations

import json
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import percentile
from bench.sides import BenchError
from bench.switch import job_spec

#: (jobs, max_parallel): how the cost grows with N at the default max_parallel, and what a wider one does.
FLEETS = ((1, 2), (2, 2), (4, 2), (4, 4))
RUN_TIMEOUT_S = 900


def _spec(name: str, root: Path) -> dict[str, Any]:
    """The main job's query with async at 3000 ms, as the switch benchmark runs it, under its own name."""
    return {**job_spec(str(root / "checkpoints" / name)), "name": name}


def _write_fleet(root: Path, dags: Path, jobs: int, max_parallel: int) -> tuple[str, str, Path]:
    """The desired folder (async on), its fleet file, and one DAG file with its rollout and toggle-off DAGs."""
    tag = f"n{jobs}_p{max_parallel}"
    folder = root / tag / "desired"
    folder.mkdir(parents=True)
    (folder / "_fleet.yaml").write_text(f"index: {root / tag / 'index'}\n")
    for i in range(jobs):
        (folder / f"job{i}.json").write_text(json.dumps(_spec(f"{tag}-job{i}", root / tag)))
    body = f"""
        from airflow_async_stream.factories import rollout_dag, toggle_off_dag

        rollout_dag({str(folder)!r}, dag_id="deploy_{tag}", max_parallel={max_parallel}, startup_timeout_s=300)
        toggle_off_dag({str(folder)!r}, dag_id="toggle_off_{tag}", max_parallel={max_parallel}, startup_timeout_s=300)
        """
    (dags / f"fleet_{tag}.py").write_text(textwrap.dedent(body))
    return f"deploy_{tag}", f"toggle_off_{tag}", folder


def _when(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def _run_to_end(stack: Any, dag_id: str) -> dict[str, Any]:
    """Trigger ``dag_id`` and await its run's end; its timings from Airflow's database."""
    stack.airflow("dags", "trigger", dag_id)
    clock = time.monotonic()

    def ended() -> tuple[str, str] | None:
        rows = stack.query("SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", dag_id)
        return rows[0] if rows and rows[0][1] in ("success", "failed") else None

    run_id, state = stack.await_(ended, f"the end of a {dag_id} run", RUN_TIMEOUT_S)
    wall = time.monotonic() - clock
    if state != "success":
        raise BenchError(f"fleet: {dag_id} run {run_id} ended {state}")
    ((queued, started, finished),) = stack.query(
        "SELECT queued_at, start_date, end_date FROM dag_run WHERE dag_id = ? AND run_id = ?", dag_id, run_id
    )
    tasks = [
        {"task": task, "job": (label or "").split(":")[0], "queued": _when(q), "start": _when(s), "end": _when(e)}
        for task, label, q, s, e in stack.query(
            "SELECT task_id, rendered_map_index, queued_dttm, start_date, end_date FROM task_instance "
            "WHERE dag_id = ? AND run_id = ? ORDER BY start_date",
            dag_id,
            run_id,
        )
    ]
    return {"wall_s": wall, "queued": _when(queued), "start": _when(started), "end": _when(finished), "tasks": tasks}


def _phases(progress: list[dict[str, Any]], who: str) -> tuple[float, float]:
    """From a safe-disabled job's progress log (epoch seconds): when its first interval-0 batch and its first
    synchronous batch started (its last three query runs: the deploy's, then one per switch)."""
    from airflow_async_stream.insight.batches import batch_window, ran_a_batch

    runs: dict[str, list[dict[str, Any]]] = {}
    for event in progress:
        if ran_a_batch(event):
            runs.setdefault(str(event["query_run_id"]), []).append(event)
    if len(runs) < 3:
        raise BenchError(f"{who}: {len(runs)} query runs in the progress log, not the deploy's and two switches'")
    interval_0, synchronous = list(runs.values())[-2:]
    settings = [(r[0].get("configuration") or {}).get("async_progress") or {} for r in (interval_0, synchronous)]
    if settings[0].get("checkpoint_interval_ms") != 0 or settings[1].get("enabled") is not False:
        raise BenchError(f"{who}: the last two query runs ran {settings}, not interval 0 then synchronous")
    return batch_window(interval_0[0])[0], batch_window(synchronous[0])[0]


def _where_it_goes(run: dict[str, Any], progress: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The run's time split by Airflow's records and each job's progress log: the wait for the first task,
    the plan, and per apply task its wait for a slot (from the plan's end), the time to its first interval-0
    batch (the task's start, the request, the switch), from there to its first synchronous batch (two
    committed batches, the gated switch) and its end (that batch's commit, the records); then the summary."""
    tasks = {t["task"]: t for t in run["tasks"] if t["task"] != "apply"}
    plan_end = tasks["plan"]["end"]
    jobs = []
    for t in (t for t in run["tasks"] if t["task"] == "apply"):
        interval_0_start, sync_start = _phases(progress[t["job"]], t["job"])
        jobs.append(
            {
                "job": t["job"],
                "wait_for_slot_s": round(t["start"] - plan_end, 2),
                "to_interval_0_s": round(interval_0_start - t["start"], 2),
                "to_synchronous_s": round(sync_start - interval_0_start, 2),
                "finish_s": round(t["end"] - sync_start, 2),
                "own_s": round(t["end"] - t["start"], 2),
            }
        )
    return {
        "run_s": round(run["end"] - run["start"], 2),
        "wall_s": round(run["wall_s"], 2),
        "to_first_task_s": round(tasks["plan"]["start"] - run["start"], 2),
        "plan_s": round(plan_end - tasks["plan"]["start"], 2),
        "apply": jobs,
        "apply_span_s": round(max(t["end"] for t in run["tasks"] if t["task"] == "apply") - plan_end, 2),
        "summary_s": round(tasks["summary"]["end"] - tasks["summary"]["start"], 2),
    }


def _checkpoints(folder: Path) -> dict[str, str]:
    """Each job of the desired folder and its checkpoint."""
    specs = [json.loads(path.read_text()) for path in sorted(folder.glob("job*.json"))]
    return {spec["name"]: spec["checkpoint"] for spec in specs}


def _switches(folder: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """Each job's switches in its latest rollout record (path, pause), and its progress log."""
    from airflow_async_stream.state.control import ControlArea

    switches, progress = {}, {}
    for job, checkpoint in _checkpoints(folder).items():
        control = ControlArea.for_checkpoint(checkpoint)
        switches[job] = list((control.read_json(ControlArea.ROLLOUT) or {}).get("stages") or [])
        progress[job] = control.read_progress()
    return switches, progress


def _stop_all(folder: Path) -> None:
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.state.control import ControlArea

    for checkpoint in _checkpoints(folder).values():
        control = ControlArea.for_checkpoint(checkpoint)
        if control.read_status() is not None:
            stop_driver(control, "benchmark done", graceful_timeout_s=30, kill_after_s=60)


def run(log: Any = print) -> dict[str, Any]:
    from tests.integration.airflow_stack import AirflowStack

    out: dict[str, Any] = {
        "settings": {
            "fleets": [{"jobs": n, "max_parallel": p} for n, p in FLEETS],
            "job": _spec("jobK", Path("/fleet")),
        }
    }
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        root = Path(tmp)
        stack = AirflowStack(
            root / "airflow-home",
            core__parallelism="4",
            scheduler__scheduler_heartbeat_sec="1",
            dag_processor__refresh_interval="5",
        )
        fleets = {(n, p): _write_fleet(root, stack.dags, n, p) for n, p in FLEETS}
        try:
            stack.airflow("db", "migrate")
            for component in ("api-server", "scheduler", "dag-processor"):
                stack.start(component, component)
            for deploy_dag, toggle_dag, _ in fleets.values():
                for dag_id in (deploy_dag, toggle_dag):
                    stack.await_(
                        lambda d=dag_id: stack.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", d),
                        f"{dag_id} parsed",
                        120,
                    )
            for (jobs, max_parallel), (deploy_dag, toggle_dag, folder) in fleets.items():
                try:
                    _run_to_end(stack, deploy_dag)
                    for path in sorted(folder.glob("job*.json")):  # the desired state now says: async off
                        spec = json.loads(path.read_text())
                        spec["async_progress"]["enabled"] = False
                        path.write_text(json.dumps(spec))
                    toggled = _run_to_end(stack, toggle_dag)
                finally:
                    _stop_all(folder)
                switches, progress = _switches(folder)
                every = [s for accounts in switches.values() for s in accounts]
                if {s.get("path") for s in every} != {"in_place"}:
                    raise BenchError(f"fleet {jobs}/{max_parallel}: switched {[s.get('path') for s in every]}")
                pauses = [s["pause_s"] for s in every if s.get("pause_s") is not None]
                figures = {
                    "jobs": jobs,
                    "max_parallel": max_parallel,
                    **_where_it_goes(toggled, progress),
                    "switches": len(every),
                    "pause_p50_s": percentile(pauses, 50) if pauses else None,
                    "pause_max_s": max(pauses) if pauses else None,
                }
                out[f"n{jobs}_p{max_parallel}"] = figures
                log(
                    f"fleet {jobs} jobs, max_parallel {max_parallel}: {figures['wall_s']:.1f} s; apply tasks "
                    + ", ".join(f"{a['own_s']} s (after {a['wait_for_slot_s']} s)" for a in figures["apply"])
                )
        finally:
            stack.close()
    return out
