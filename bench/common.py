"""Shared helpers for the benchmarks: percentiles, timing a subprocess, machine description."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PYTHON = sys.executable


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return float(ordered[min(rank, len(ordered)) - 1])


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "n": len(values),
    }


def run_json(args: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> tuple[Any, float]:
    """Run a Python script, return (the JSON on its last stdout line, wall seconds)."""
    t0 = time.monotonic()
    result = subprocess.run(
        [PYTHON, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    took = time.monotonic() - t0
    if result.returncode != 0:
        raise RuntimeError(f"{args[0]} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1]), took


def machine() -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "java": java[0] if java else None,
        "pyspark": version("pyspark"),
        "apache-airflow": version("apache-airflow"),
        "airflow-async-stream": version("airflow-async-stream"),
    }
