"""The safe-disable migration three ways, side by side in one run: switched in place (the default), by
restarts (``in_place=False``), and the plain-PySpark lower bound of the restart path.

Per side: the stream's pause at each switch (idle time between the last micro-batch before and the first
after, from Spark's own progress timestamps), and the migration's Spark work: from the first switch's
request to the end of the first synchronous micro-batch (its commit). The provider sides run through Airflow
(``dag.test()``) on a job started by ``example_start_async_job``. The lower bound does the restart path's Spark
work without the provider or Airflow, each phase in its own process (as each deploy is): start with async on
and interval 0 until two batches commit, stop; start synchronously until one batch commits.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, REPO, percentile, run_json
from bench.sides import BenchError

GAPS_SCRIPT = REPO / "tests" / "integration" / "spark_scripts" / "plain_rate_noop.py"
RESTART_DAG = "bench_safe_disable_by_restarts"
SIDES = ("in_place", "restart", "lower_bound")


def write_restart_dag(dags_folder: Path) -> None:
    """The example migration with ``in_place=False``: today's restart path, on the same job."""
    source = (REPO / "dags" / "example_safe_disable.py").read_text()
    for old, new in (
        ("safe_disable_async_progress(JOB", "safe_disable_async_progress(JOB, in_place=False"),
        ("def example_safe_disable", f"def {RESTART_DAG}"),
        ("\nexample_safe_disable()", f"\n{RESTART_DAG}()"),
    ):  # each must be found once: a changed example must fail here, not turn the restart side into in-place
        assert source.count(old) == 1, f"dags/example_safe_disable.py no longer holds {old!r} once"
        source = source.replace(old, new)
    (dags_folder / f"{RESTART_DAG}.py").write_text(source)


def _dag(dag_id: str) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]) / f"{dag_id}.py"))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)


def provider_run(in_place: bool) -> dict[str, Any]:
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.insight.batches import batch_window, ran_a_batch
    from airflow_async_stream.state.control import ControlArea

    checkpoint = str(Path(os.environ["ASYNC_STREAM_DEMO_ROOT"]) / "clicks-async")
    started = _dag("example_start_async_job").test()
    assert str(started.state) == "success", "could not start the async job"
    t0 = time.monotonic()
    run = _dag("example_safe_disable" if in_place else RESTART_DAG).test()
    total = time.monotonic() - t0
    assert str(run.state) == "success", f"the migration failed: {run.get_task_instances()}"
    tis = {ti.task_id.split(".")[-1]: ti for ti in run.get_task_instances()}
    steps = {name: (ti.end_date - ti.start_date).total_seconds() for name, ti in tis.items() if ti.end_date}
    stages = tis["release_job"].xcom_pull(task_ids=tis["release_job"].task_id)["stages"]
    first_request = tis["to_interval_0"].start_date.timestamp()
    control = ControlArea.for_checkpoint(checkpoint)
    synchronous = [
        e
        for e in control.read_progress()
        if ran_a_batch(e)
        and not ((e.get("configuration") or {}).get("async_progress") or {}).get("enabled", True)
        and batch_window(e)[0] > first_request
    ]
    stop_driver(control, "benchmark done", graceful_timeout_s=30, kill_after_s=60)
    paths = {s["how"] for s in stages}
    assert paths == {"in_place" if in_place else "restart"}, (
        f"the {'in-place' if in_place else 'restart'} side switched {paths}"
    )
    return {
        "state": str(run.state),
        "total_s": total,
        "steps_s": steps,
        "paths": [s["how"] for s in stages],
        "pauses_s": [s["pause_s"] for s in stages],
        "spark_work_s": batch_window(synchronous[0])[1] - first_request,
    }


def lower_bound_run(root: Path) -> dict[str, Any]:
    """Two processes after the gapped job's: the async-interval-0 phase whole (launch to exit after its stop),
    then the synchronous phase from interpreter start to its first commit (the migration's last step ends
    there). Pauses: from each process's last batch to the next one's first."""
    checkpoint = str(root / f"plain-{time.time_ns()}")
    gapped, _ = run_json([str(GAPS_SCRIPT), checkpoint, "gaps"])
    if gapped.get("error"):  # without the gap the plain side would time a migration that had nothing to cure
        raise BenchError(f"lower bound: the async job left no gap to cure: {gapped['error']}")
    async0, async_wall = run_json([str(BENCH / "plain" / "migration_lower_bound.py"), checkpoint, "async0"])
    sync, _ = run_json([str(BENCH / "plain" / "migration_lower_bound.py"), checkpoint, "sync"])
    phases = {"async_interval_0_s": async_wall, "sync_to_first_commit_s": sync["seconds"]}
    pauses = [
        async0["first_batch_start"] - gapped["last_batch_end"],
        sync["first_batch_start"] - async0["last_batch_end"],
    ]
    return {"spark_work_s": sum(phases.values()), "phases_s": phases, "pauses_s": [round(p, 3) for p in pauses]}


def run(rounds: int, log: Any = print) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="bench-migration-") as tmp:
        for r in range(rounds):
            for side in SIDES if r % 2 == 0 else tuple(reversed(SIDES)):  # the machine's drift falls on all
                result = lower_bound_run(Path(tmp)) if side == "lower_bound" else provider_run(side == "in_place")
                runs[side].append(result)
                log(
                    f"migration round {r + 1}/{rounds} {side}: Spark work {result['spark_work_s']:.1f} s, "
                    f"pauses {result['pauses_s']}"
                )
    return {"runs": runs, "summary": summarise(runs)}


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Pause per switch (p50, max over every switch of every round) and Spark work (best, median) per side;
    the targets: in-place pause p50 <= 1 s, in-place Spark work <= a quarter of the restart lower bound's."""
    out: dict[str, Any] = {}
    for side, results in runs.items():
        pauses = [p for r in results for p in r["pauses_s"] if p is not None]
        work = [r["spark_work_s"] for r in results]
        out[side] = {
            "pause_p50_s": percentile(pauses, 50),
            "pause_max_s": max(pauses),
            "switches": len(pauses),
            "spark_work_best_s": min(work),
            "spark_work_p50_s": percentile(work, 50),
        }
    out["in_place_work_over_lower_bound"] = (
        out["in_place"]["spark_work_best_s"] / out["lower_bound"]["spark_work_best_s"]
    )
    out["restart_work_over_lower_bound"] = out["restart"]["spark_work_best_s"] / out["lower_bound"]["spark_work_best_s"]
    return out


def chart(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"in_place": "in place", "restart": "by restarts", "lower_bound": "plain PySpark\nrestart lower bound"}
    fig, (pause_ax, work_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = range(len(SIDES))
    pause_ax.bar(xs, [summary[s]["pause_p50_s"] for s in SIDES], 0.6, label="p50")
    pause_ax.scatter(
        xs, [summary[s]["pause_max_s"] for s in SIDES], marker="_", s=300, color="black", label="max", zorder=3
    )
    pause_ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="target: p50 <= 1 s in place")
    pause_ax.set_title("stream paused per switch")
    pause_ax.set_ylabel("seconds")
    work_ax.bar(xs, [summary[s]["spark_work_best_s"] for s in SIDES], 0.6, label="best")
    work_ax.scatter(
        xs, [summary[s]["spark_work_p50_s"] for s in SIDES], marker="_", s=300, color="black", label="p50", zorder=3
    )
    work_ax.axhline(
        summary["lower_bound"]["spark_work_best_s"] / 4,
        color="grey",
        linestyle="--",
        linewidth=1,
        label="target: <= 1/4 of the lower bound",
    )
    work_ax.set_title("Spark work: first request to first synchronous commit")
    for ax in (pause_ax, work_ax):
        ax.set_xticks(list(xs), [labels[s] for s in SIDES])
        ax.legend()
    fig.suptitle("safe-disable migration, rate -> noop, 100 ms trigger, local Spark on 2 cores")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
