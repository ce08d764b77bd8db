"""Micro-batch latency in three modes, each deployed through the provider and as a plain PySpark script.

Runs alternate (provider, plain, then plain, provider in the next round) so the machine's noise falls on
both sides alike; figures are compared as ratios within this one run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, run_json, summary

MODES = {"sync": (False, 1000), "async1000": (True, 1000), "async0": (True, 0)}
ROWS_PER_SECOND = 100_000
TRIGGER = "1 second"
WARMUP = 5


def provider_run(root: Path, mode: str, batches: int) -> list[dict[str, Any]]:
    """Deploy through DeployStreamingJobOperator (the provider's own path), collect, stop gracefully."""
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
    from airflow_async_stream.state.control import ControlArea

    enabled, interval = MODES[mode]
    checkpoint = str(root / f"provider-{mode}-{time.time_ns()}")
    spec = {
        "name": f"bench-{mode}",
        "checkpoint": checkpoint,
        "source": {"format": "rate", "options": {"rowsPerSecond": ROWS_PER_SECOND}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": TRIGGER},
        "async_progress": {"enabled": enabled, "checkpoint_interval_ms": interval},
    }
    record = DeployStreamingJobOperator(task_id="deploy", spec=spec).execute({})
    control = ControlArea(record["control_area"])
    deadline = time.monotonic() + batches * 5 + 120
    while len(control.read_progress(record["deployment_id"])) < batches and time.monotonic() < deadline:
        time.sleep(0.5)
    stop_driver(control, "benchmark done", graceful_timeout_s=30, kill_after_s=60)
    return control.read_progress(record["deployment_id"])


def plain_run(root: Path, mode: str, batches: int) -> list[dict[str, Any]]:
    checkpoint = str(root / f"plain-{mode}-{time.time_ns()}")
    progress, _ = run_json(
        [str(BENCH / "plain" / "rate_noop_latency.py"), checkpoint, mode, str(batches), str(ROWS_PER_SECOND), TRIGGER]
    )
    return progress


def _metrics(progress: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    kept = sorted(progress, key=lambda p: p["batch_id"])[WARMUP:]
    trigger = [float(p["duration_ms"]["triggerExecution"]) for p in kept]
    offsets = [float(p["duration_ms"].get("walCommit", 0) + p["duration_ms"].get("commitOffsets", 0)) for p in kept]
    return trigger, offsets


def run(rounds: int, batches: int, log: Any = print) -> dict[str, Any]:
    samples: dict[str, dict[str, tuple[list[float], list[float]]]] = {
        impl: {mode: ([], []) for mode in MODES} for impl in ("provider", "plain")
    }
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        root = Path(tmp)
        for r in range(rounds):
            for mode in MODES:
                order = ("provider", "plain") if r % 2 == 0 else ("plain", "provider")
                for impl in order:
                    t0 = time.monotonic()
                    progress = (provider_run if impl == "provider" else plain_run)(root, mode, batches + WARMUP)
                    trig, offs = _metrics(progress)
                    samples[impl][mode][0].extend(trig)
                    samples[impl][mode][1].extend(offs)
                    log(f"latency round {r + 1}/{rounds} {mode:<9} {impl:<8} {len(trig)} batches, "
                        f"p50 {summary(trig)['p50']:.0f} ms ({time.monotonic() - t0:.0f} s)")  # fmt: skip
    result: dict[str, Any] = {"settings": {"rows_per_second": ROWS_PER_SECOND, "trigger": TRIGGER,
                              "warmup_batches": WARMUP, "batches_per_run": batches, "rounds": rounds}}  # fmt: skip
    for impl in samples:
        result[impl] = {
            mode: {"trigger_execution_ms": summary(t), "offset_management_ms": summary(o)}
            for mode, (t, o) in samples[impl].items()
        }
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
    return result
