"""Micro-batch latency in three modes, each deployed through the provider and as a plain PySpark script.

Both sides run with the same Spark settings (the provider's driver's: master, log level, console progress,
redaction; no class-data archive), collect progress with a listener writing to a file, and are judged on the
same batch ids after the same warm-up; a side that ran short fails the benchmark. Runs alternate (provider, plain, then plain, provider in the next round) so the machine's noise falls on
both sides alike; figures are compared as ratios within this one run.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, run_json, summary
from bench.sides import BenchError, batches_after_warmup, read_progress_file, spark_settings

MODES = {"sync": (False, 1000), "async1000": (True, 1000), "async0": (True, 0)}
ROWS_PER_SECOND = 100_000
TRIGGER = "1 second"
WARMUP = 5


def job_spec(mode: str, checkpoint: str) -> dict[str, Any]:
    """The job both sides run: the provider deploys it, the plain side gets its pipeline and Spark settings."""
    enabled, interval = MODES[mode]
    return {
        "name": f"bench-{mode}",
        "checkpoint": checkpoint,
        "source": {"format": "rate", "options": {"rowsPerSecond": ROWS_PER_SECOND}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": TRIGGER},
        "async_progress": {"enabled": enabled, "checkpoint_interval_ms": interval},
    }


def provider_run(root: Path, mode: str, batches: int) -> list[dict[str, Any]]:
    """Deploy through DeployStreamingJobOperator (the provider's own path), read its progress log until
    ``batches`` micro-batches ran, stop gracefully."""
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
    from airflow_async_stream.state.control import ControlArea

    spec = job_spec(mode, str(root / f"provider-{mode}-{time.time_ns()}"))
    record = DeployStreamingJobOperator(task_id="deploy", spec=spec).execute({})
    control = ControlArea(record["control_area"])
    deadline = time.monotonic() + batches * 10 + 120

    def ran() -> int:  # the status record first: reading the whole progress log each time would load the machine
        status = control.read_status()
        if status is None or (status.last_batch_id or 0) < batches - 1:
            return 0
        return len([e for e in control.read_progress(record["deployment_id"]) if "addBatch" in e["duration_ms"]])

    try:
        while ran() < batches:
            if time.monotonic() > deadline:
                raise BenchError(f"provider {mode}: fewer than {batches} micro-batches ran in time")
            time.sleep(0.5)
    finally:
        stop_driver(control, "benchmark done", graceful_timeout_s=30, kill_after_s=60)
    return control.read_progress(record["deployment_id"])


def plain_run(root: Path, mode: str, batches: int) -> list[dict[str, Any]]:
    """The same job as a plain PySpark script, with the provider's Spark settings and a listener to a file."""
    checkpoint = str(root / f"plain-{mode}-{time.time_ns()}")
    progress = root / f"plain-{mode}-{time.time_ns()}.jsonl"
    settings = json.dumps(spark_settings(job_spec(mode, checkpoint)))
    script = str(BENCH / "plain" / "rate_noop_latency.py")
    run_json([script, checkpoint, mode, str(batches), str(ROWS_PER_SECOND), TRIGGER, settings, str(progress)])
    return read_progress_file(progress)


def _offsets_ms(event: dict[str, Any]) -> float:
    return float(event["duration_ms"].get("walCommit", 0) + event["duration_ms"].get("commitOffsets", 0))


def _figures(events: list[dict[str, Any]]) -> dict[str, Any]:
    """triggerExecution and offset management (p50/p90/p99), and the p50 of every part Spark times."""
    parts = sorted({key for e in events for key in e["duration_ms"]})
    return {
        "trigger_execution_ms": summary([float(e["duration_ms"]["triggerExecution"]) for e in events]),
        "offset_management_ms": summary([_offsets_ms(e) for e in events]),
        "parts_p50_ms": {key: summary([float(e["duration_ms"].get(key, 0)) for e in events])["p50"] for key in parts},
    }


def run(rounds: int, batches: int, log: Any = print) -> dict[str, Any]:
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        impl: {mode: [] for mode in MODES} for impl in ("provider", "plain")
    }
    by_round: dict[str, dict[str, list[float]]] = {impl: {mode: [] for mode in MODES} for impl in samples}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        root = Path(tmp)
        for r in range(rounds):
            for mode in MODES:
                order = ("provider", "plain") if r % 2 == 0 else ("plain", "provider")
                for impl in order:
                    t0 = time.monotonic()
                    progress = (provider_run if impl == "provider" else plain_run)(root, mode, batches + WARMUP)
                    kept = batches_after_warmup(progress, WARMUP, batches, f"{impl} {mode}, round {r + 1}")
                    samples[impl][mode].extend(kept)
                    by_round[impl][mode].append(_figures(kept)["trigger_execution_ms"]["p50"])
                    p50 = _figures(kept)["trigger_execution_ms"]["p50"]
                    log(
                        f"latency round {r + 1}/{rounds} {mode:<9} {impl:<8} {len(kept)} batches, "
                        f"p50 {p50:.0f} ms ({time.monotonic() - t0:.0f} s)"
                    )
    result: dict[str, Any] = {
        "settings": {
            "rows_per_second": ROWS_PER_SECOND,
            "trigger": TRIGGER,
            "warmup_batches": WARMUP,
            "batches_per_run": batches,
            "rounds": rounds,
            "spark": spark_settings(job_spec("sync", "/checkpoint")),
        }
    }
    for impl in samples:
        result[impl] = {mode: _figures(events) for mode, events in samples[impl].items()}
    for impl in ("provider", "plain"):
        sync_p50 = result[impl]["sync"]["trigger_execution_ms"]["p50"]
        # The most async tracking can save is the offset management a synchronous batch spends.
        result[impl]["offset_share_of_sync_p50"] = result[impl]["sync"]["offset_management_ms"]["p50"] / sync_p50
        result[impl]["async_reduction"] = {
            mode: 1 - result[impl][mode]["trigger_execution_ms"]["p50"] / sync_p50 for mode in ("async1000", "async0")
        }
    result["ratio_provider_over_plain_p50"] = {
        mode: result["provider"][mode]["trigger_execution_ms"]["p50"]
        / result["plain"][mode]["trigger_execution_ms"]["p50"]
        for mode in MODES
    }
    # Each round runs both sides back to back: its ratio is free of the drift between rounds.
    result["ratio_by_round"] = {
        mode: [round(p / q, 3) for p, q in zip(by_round["provider"][mode], by_round["plain"][mode], strict=True)]
        for mode in MODES
    }
    result["p50_by_round_ms"] = by_round
    return result
