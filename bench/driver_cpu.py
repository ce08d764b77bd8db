"""What a running driver costs in CPU: the provider's driver (its listener, heartbeat and request polls) beside
the same query as a plain PySpark script, with no listener and with PySpark's own, one side at a time.

    .venv/bin/python -m bench.run --only cpu

rate-micro-batch (10 rows a batch) -> noop at a 100 ms trigger, the provider's Spark settings on every side:
after a warm-up, the CPU seconds of the side's processes (spark-submit's JVM and Python, read from /proc) over
the window and the batches committed in it; CPU ms a batch, and the provider's over plain Spark's.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, PYTHON, REPO
from bench.sides import spark_settings

TRIGGER = "100 milliseconds"
WARMUP_S, WINDOW_S = 15.0, 30.0
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_below(root: int) -> float:
    """CPU seconds of ``root``'s descendants (not ``root`` itself) as /proc has them now."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / _TICK
    total, stack = 0.0, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


def _committed(checkpoint: str) -> int:
    from airflow_async_stream.state.checkpoint import batch_ids

    return max(batch_ids(checkpoint, "commits"), default=-1)


def _window(checkpoint: str) -> dict[str, Any]:
    time.sleep(WARMUP_S)  # the JVM's start and first batches are not the running cost
    cpu, batch, started = _cpu_below(os.getpid()), _committed(checkpoint), time.monotonic()
    time.sleep(WINDOW_S)  # the measured window
    cpu, batches = _cpu_below(os.getpid()) - cpu, _committed(checkpoint) - batch
    seconds = time.monotonic() - started
    return {
        "cores": round(cpu / seconds, 2),
        "batches_per_s": round(batches / seconds, 1),
        "cpu_ms_per_batch": round(1000 * cpu / max(batches, 1), 1),
    }


def _spec(checkpoint: str) -> dict[str, Any]:
    return {
        "name": "cpu",
        "checkpoint": checkpoint,
        "source": {"format": "rate-micro-batch", "options": {"rowsPerBatch": 10}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": TRIGGER},
    }


def provider(root: Path) -> dict[str, Any]:
    from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.spec.load import parse_spec
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Holder

    checkpoint = str(root / "provider")
    deploy_job(parse_spec(_spec(checkpoint)), Holder.this_process("bench"), DeploySettings(launcher=LocalLauncher()))
    try:
        return _window(checkpoint)
    finally:
        stop_driver(ControlArea.for_checkpoint(checkpoint), "bench done", launcher=LocalLauncher())


def plain(root: Path, listener: str) -> dict[str, Any]:
    checkpoint, stop = str(root / f"plain-{listener}"), root / f"stop-{listener}"
    settings = spark_settings(_spec(checkpoint))
    script = BENCH / "plain" / "rate_noop_cpu.py"
    args = [str(script), checkpoint, TRIGGER, json.dumps(settings), str(stop), listener]
    side = subprocess.Popen([PYTHON, *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return _window(checkpoint)
    finally:
        stop.touch()
        side.wait(timeout=120)


def run(log: Any = print) -> dict[str, Any]:
    result: dict[str, Any] = {"trigger": TRIGGER, "window_s": WINDOW_S}
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        root = Path(tmp)
        for name, measure in (
            ("plain", lambda: plain(root, "none")),
            ("plain with a pyspark listener", lambda: plain(root, "pyspark")),
            ("provider", lambda: provider(root)),
        ):
            result[name] = figures = measure()
            log(f"driver cpu: {name}: {figures}")
    result["provider_over_plain_cpu_ms_per_batch"] = round(
        result["provider"]["cpu_ms_per_batch"] / result["plain"]["cpu_ms_per_batch"], 2
    )
    return result
