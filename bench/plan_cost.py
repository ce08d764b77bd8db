"""Cost of planning a rollout of 1,000 jobs against synthetic control areas on local disk: time, files opened.

The fleet as a rollout leaves it: every job deployed, running (heartbeat now), confirmed stable and in the
fleet index; the folder then changes a few jobs' trigger (restart), removes a few files (retire) and moves a
few checkpoints (refuse). This host's job registry is empty, as on a worker that deployed nothing.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex

JOBS = 1000
CHANGED = REMOVED = MOVED = 20
REPEAT = 3
_opened: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and isinstance(args[0], str):
        _opened.append(args[0])


def _spec(root: Path, name: str) -> dict[str, Any]:
    return parse_spec(
        {
            "name": name,
            "checkpoint": str(root / "ck" / name),
            "source": {"format": "rate", "options": {"rowsPerSecond": 10}},
            "sink": {"format": "noop"},
            "trigger": {"processing_time": "1 second"},
            "async_progress": {"enabled": True, "checkpoint_interval_ms": 1000},
        }
    ).to_mapping()


def _deployed(index: FleetIndex, spec: dict[str, Any]) -> None:
    """What a rollout and the job's driver leave in its control area and in the fleet index."""
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "start_batch": 0})
    configuration = {"async_progress": spec["async_progress"], "trigger": spec["trigger"]}
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d1",
            "state": "running",
            "heartbeat_at": time.time(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "configuration": configuration,
        },
    )
    control.write_json(ControlArea.STABLE, {"deployment_id": "d1", "spec": spec})
    index.record_active(spec["name"], control.url, "bench")


def _make(root: Path) -> Path:
    folder = root / "desired"
    folder.mkdir(parents=True)
    (folder / "_fleet.yaml").write_text(f"index: {root / 'fleet-index'}\n")
    index = FleetIndex.for_folder(folder)
    names = [f"job-{i:04d}" for i in range(JOBS)]
    for i, name in enumerate(names):
        spec = _spec(root, name)
        _deployed(index, spec)
        if i < REMOVED:
            continue  # its file is gone: retire
        if i < REMOVED + MOVED:
            spec = {**spec, "checkpoint": spec["checkpoint"] + "-moved"}  # refuse
        elif i < REMOVED + MOVED + CHANGED:
            spec = {**spec, "trigger": {"processing_time": "2 seconds"}}  # restart, in place
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return folder


def run(log: Any = print) -> dict[str, Any]:
    sys.addaudithook(_audit)
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        os.environ["AIRFLOW_ASYNC_STREAM_HOME"] = str(Path(tmp) / "empty-registry")
        folder = _make(Path(tmp))
        actions = Counter(item.action for item in plan_folder(folder))  # warm, as a scheduled rollout's host
        times = []
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            plan_folder(folder)
            times.append(time.perf_counter() - t0)
        _opened.clear()
        plan_folder(folder)
        opened = len(_opened)
    expected = {"unchanged": JOBS - REMOVED - MOVED - CHANGED, "retire": REMOVED, "refuse": MOVED, "update": CHANGED}
    assert actions == expected, f"the synthetic fleet planned {dict(actions)}, expected {expected}"
    result = {
        "jobs": JOBS,
        "plan_s": statistics.median(times),
        "plan_s_max": max(times),
        "files_opened": opened,
        "files_opened_per_job": opened / JOBS,
        "actions": dict(actions),
    }
    log(
        f"plan of {JOBS} jobs: {result['plan_s']:.2f} s (median of {REPEAT}, max {result['plan_s_max']:.2f} s), "
        f"{opened} files opened ({result['files_opened_per_job']:.1f} per job); {dict(actions)}"
    )
    return result


if __name__ == "__main__":
    run()
