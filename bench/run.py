"""Run the benchmarks and write bench/results/results.json, latency.png, switch.png and migration.png.

    python -m bench.run [--rounds 2] [--batches 30] [--cycles 5]
        [--only latency,switch,migration,fleet,sensor,parse,plan,report,page,analyze,supervise,control,autotune,cpu,
                shipping]

Airflow runs on a private SQLite database in a temporary AIRFLOW_HOME; Spark on the embedded local master.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TMP = Path(tempfile.mkdtemp(prefix="bench-airflow-"))
shutil.copytree(REPO / "dags", TMP / "dags", ignore=shutil.ignore_patterns("__pycache__"))
os.environ.update(
    {
        "AIRFLOW_HOME": str(TMP / "airflow-home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(TMP / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "ASYNC_STREAM_DEMO_ROOT": str(TMP / "checkpoints"),
        "AIRFLOW_ASYNC_STREAM_HOME": str(TMP / "registry"),
    }
)
from bench.sides import JVM_ENVIRONMENT_CLEARED  # noqa: E402

for _name in JVM_ENVIRONMENT_CLEARED:  # neither side gets the tests' class-data archive or JVM options
    os.environ.pop(_name, None)

from bench import (  # noqa: E402
    analyze_cost,
    autotune,
    control_cost,
    driver_cpu,
    fleet,
    latency,
    migration,
    page_cost,
    parse_time,
    plan_cost,
    report_cost,
    sensor_cost,
    shipping,
    supervise,
    switch,
)
from bench import results as results_file  # noqa: E402
from bench.common import machine  # noqa: E402
from bench.sides import BenchError  # noqa: E402

RESULTS = REPO / "bench" / "results"
TARGETS = {
    "ratio_provider_over_plain_p50": "<= 1.05 in every mode",
    "async_reduction": ">= 0.55",
    "migration_in_place_pause_p50_s": "<= 1 s per switch",
    "migration_in_place_work_over_lower_bound": "<= 0.25 (the restart path's plain-PySpark lower bound)",
    "sensor_poke_ms_at_10000": "<= 20 ms, no file contents read beyond the newest few",
    "dag_parse_beyond_airflow_s": "<= 0.5 s, pyspark not imported",
    "plan_1000_jobs_s": "<= 5 s (local disk; the files opened per job stay constant)",
    "report_16mib_s": "< 1 s (report over a full 16 MiB progress log, in process and as a command)",
    "page_1000_jobs_s": "< 1 s (the streaming-jobs page's JSON for 1,000 jobs, in process and over HTTP)",
    "analyze_50_specs": "one JVM start, then < 0.2 s a spec (validate --analyze of a folder)",
    "fleet": "how a safe-disable rollout's wall time grows with N jobs, and what max_parallel does to it",
    "switch_ratio_provider_over_plain_p50": "<= 1.1 for each kind of in-place switch (plain: one warm session)",
    "supervise": "a watcher sweep over 1,000 jobs <= 1 s; a SIGKILLed driver detected <= 5 s, running again "
    "<= a driver start + 10 s (the Flink operator's default reconcile interval: 60 s); a query restarted in "
    "its driver: the failure to its next batch <= a quarter of a driver start",
    "control_writes_per_job_hour": "<= 360 on an object store (S3 server), >= 10x fewer than before at 1 batch/s",
    "autotune": "the configuration it settles on within 10 % of the best p50 of a hand sweep (sync, async 0, 1000, "
    "3000, 10000 ms), in <= 3 changes, no measured window > 10 % worse than the synchronous baseline",
    "shipping": "a deploy's extra seconds for shipping the runtime bundle: the first on a host builds it (< 10 s), "
    "later ones reuse it (< 0.2 s)",
    "driver_cpu": "a running driver's CPU a batch <= 1.5x plain Spark's with no listener (100 ms trigger); a "
    "PySpark listener alone costs more",
}


DEFAULT_ONLY = (
    "latency,switch,migration,fleet,sensor,parse,plan,report,page,analyze,supervise,control,autotune,cpu,shipping"
)


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lat = results["latency"]
    modes = ["sync", "async1000", "async0"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, metric, title in (
        (axes[0], "trigger_execution_ms", "durationMs.triggerExecution"),
        (axes[1], "offset_management_ms", "walCommit + commitOffsets"),
    ):
        width = 0.38
        for i, impl in enumerate(("plain", "provider")):
            p50 = [lat[impl][m][metric]["p50"] for m in modes]
            p90 = [lat[impl][m][metric]["p90"] for m in modes]
            xs = [x + (i - 0.5) * width for x in range(len(modes))]
            ax.bar(xs, p50, width, label=f"{impl} p50")
            ax.scatter(xs, p90, marker="_", s=200, color="black", label="p90" if i == 0 else None, zorder=3)
        ax.set_xticks(range(len(modes)), ["synchronous", "async, 1000 ms", "async, 0 ms"])
        ax.set_ylabel("ms per micro-batch")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("rate -> noop, 100k rows/s, 1 s trigger, local Spark: provider vs plain PySpark")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=5, help="switch cycles per side and round (2 rounds)")
    parser.add_argument("--only", default=DEFAULT_ONLY)
    args = parser.parse_args()
    only = set(args.only.split(","))
    if only - set(DEFAULT_ONLY.split(",")):
        parser.error(f"--only: no benchmark named {', '.join(sorted(only - set(DEFAULT_ONLY.split(','))))}")
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], check=True, capture_output=True)
    migration.write_restart_dag(TMP / "dags")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "results.json"
    # A partial run (--only) replaces its own sections; each section carries its own run's stamp.
    results = results_file.read(out)
    results["targets"] = TARGETS
    run = results_file.Run(started=time.strftime("%Y-%m-%d %H:%M:%S %Z"), machine=machine())
    benches = {
        "parse": lambda: parse_time.run(say),
        "sensor": lambda: sensor_cost.run(say),
        "plan": lambda: plan_cost.run(say),
        "report": lambda: report_cost.run(say),
        "page": lambda: page_cost.run(say),
        "analyze": lambda: analyze_cost.run(say),
        "latency": lambda: latency.run(args.rounds, args.batches, say),
        "switch": lambda: switch.run(args.cycles, say),
        "migration": lambda: migration.run(args.rounds, say),
        "fleet": lambda: fleet.run(say),
        "supervise": lambda: supervise.run(say),
        "control": lambda: control_cost.run(say),
        "autotune": lambda: autotune.run(say),
        "cpu": lambda: driver_cpu.run(say),
        "shipping": lambda: shipping.run(say),
    }
    begun = time.monotonic()
    failed: list[str] = []
    for name, bench in benches.items():
        if name not in only:
            continue
        clock = time.monotonic()
        measured_at = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        try:
            section = bench()
        except BenchError as exc:  # a side ran short or failed: an error in the results, never a smaller sample
            section = {"error": str(exc)}
            failed.append(name)
            say(f"{name} FAILED: {exc}")
        results = results_file.record(results, name, section, run.stamp(measured_at, time.monotonic() - clock))
        out.write_text(json.dumps(results, indent=2, sort_keys=True))  # keep what finished, come what may
        say(f"{name} done; results so far in {out}")
    if "latency" in only and "latency" not in failed:
        chart(results, RESULTS / "latency.png")
        say(f"wrote {RESULTS / 'latency.png'}")
    if "switch" in only and "switch" not in failed:
        switch.chart(results["switch"], RESULTS / "switch.png")
        say(f"wrote {RESULTS / 'switch.png'}")
    if "migration" in only and "migration" not in failed:
        migration.chart(results["migration"]["summary"], RESULTS / "migration.png")
        say(f"wrote {RESULTS / 'migration.png'}")
    say(f"all done in {(time.monotonic() - begun) / 60:.1f} min" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
