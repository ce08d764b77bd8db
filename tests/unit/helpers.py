"""What unit tests share: a job's control area as its driver leaves it, a gapped checkpoint, spec files."""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import UTC
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from tests.helpers import make_checkpoint, rate_noop

#: Run first in a fresh interpreter: any import of Airflow raises, as in a venv without it.
BLOCK_AIRFLOW = """
import sys
class _NoAirflow:
    def find_spec(self, name, path=None, target=None):
        if name == "airflow" or name.startswith("airflow."):
            raise ModuleNotFoundError(f"Airflow is blocked here: {name}", name=name)  # as when not installed
sys.meta_path.insert(0, _NoAirflow())
"""
#: A rollout's job: async on, a 1 s trigger (the planner and fleet index tests start from it).
FLEET_JOB = rate_noop(
    rows=10, trigger={"processing_time": "1 second"}, async_progress={"enabled": True, "checkpoint_interval_ms": 1000}
)


#: How long a fixture's heartbeat stays fresh: its driver writes its status every FRESH_FOR_S / 3 (liveness allows
#: three intervals), so a test on a loaded host never sees its fixture's driver go stale; one that wants it stale
#: writes a heartbeat older than this.
FRESH_FOR_S = 3600


def fake_deployment(tmp_path: Path) -> ControlArea:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    control.write_json(
        "deployment.json",
        {
            "job": "good-job",
            "checkpoint": str(tmp_path / "ck"),
            "async_progress": {"enabled": True, "checkpoint_interval_ms": 0},
        },
    )
    control.write_json(
        "status.json",
        {
            "job": "good-job",
            "deployment_id": "d1",
            "state": "running",
            "heartbeat_at": time.time(),
            "write_interval_s": FRESH_FOR_S / 3,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "batches": 3,
            "last_batch_id": 7,
        },
    )
    control.append_progress(
        {
            "deployment_id": "d1",
            "batch_id": 7,
            "num_input_rows": 42,
            "offset_management_ms": 5,
            "duration_ms": {"triggerExecution": 80},
        },
    )
    return control


def gapped_checkpoint(root: Path) -> Path:
    """Batches 0, 4 and 7 in both logs (async mode's gaps), each log with a Hadoop ``.crc`` beside its newest."""
    make_checkpoint(root, [0, 4, 7], [0, 4, 7])
    for log in ("offsets", "commits"):
        (root / log / ".7.crc").write_text("x")
    return root


def write_spec(folder: Path, name: str, spec: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(yaml.safe_dump(spec))


def deployed(
    checkpoint: str, spec: dict[str, Any], folder: Path | None = None, live: bool = True, switches: bool = True
) -> None:
    """A job as its driver leaves it; ``switches``: its driver runs the spec's query (not an application's
    own), so its status names the configuration it runs."""
    control = ControlArea.for_checkpoint(checkpoint)
    control.ensure()
    control.write_bytes("spec.json", json.dumps(spec).encode())
    control.write_json("deployment.json", {"deployment_id": "d1", "start_batch": None})
    status = {
        "deployment_id": "d1",
        "state": "running" if live else "stopped",
        "heartbeat_at": time.time(),
        "write_interval_s": FRESH_FOR_S / 3,
    }
    if switches:
        status["configuration"] = {"async_progress": spec["async_progress"], "trigger": spec["trigger"]}
    control.write_json("status.json", {**status, "pid": os.getpid(), "host": socket.gethostname()})
    control.write_json("stable.json", {"deployment_id": "d1", "spec": spec})
    if folder is not None:
        control.write_json("rollout.json", {"folder": str(folder.resolve()), "outcome": "done"})
    registry.record(spec["name"], checkpoint, control.url, "d1")


def fleet_file(folder: Path, index: Path) -> FleetIndex:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_fleet.yaml").write_text(f"index: {index}\n")
    return FleetIndex(str(index))


def configuration(enabled: bool, interval_ms: int = 1000, trigger: str = "100 milliseconds") -> dict[str, Any]:
    """A configuration as the driver records it with every batch."""
    return {
        "async_progress": {"enabled": enabled, "checkpoint_interval_ms": interval_ms},
        "trigger": {"processing_time": trigger},
    }


def batch_events(
    latencies: list[float],
    offset_ms: list[float],
    *,
    start: float = 1_800_000_000.0,
    every_s: float = 1.0,
    rows: int = 100,
    first_batch: int = 0,
    deployment: str = "d1",
    run: str = "r1",
    conf: dict[str, Any] | None = None,
    state: list[tuple[int, int, int]] | None = None,
) -> list[dict[str, Any]]:
    """Progress events of batches that ran, one every ``every_s`` seconds; ``state``: per batch one state
    operator's (commit ms over all tasks, shuffle partitions, rows in state)."""
    from datetime import datetime

    events = []
    for i, (latency, managed) in enumerate(zip(latencies, offset_ms, strict=True)):
        stamp = datetime.fromtimestamp(start + i * every_s, UTC).isoformat(timespec="milliseconds")
        durations = {"addBatch": latency - managed, "walCommit": managed / 2, "commitOffsets": managed / 2}
        event = {
            "deployment_id": deployment,
            "query_run_id": run,
            "batch_id": first_batch + i,
            "timestamp": stamp.replace("+00:00", "Z"),
            "num_input_rows": rows,
            "duration_ms": durations | {"triggerExecution": latency},
            "configuration": conf,
        }
        if state:
            commit, partitions, total = state[i]
            event["state_operators"] = [
                {
                    "operator": "stateStoreSave",
                    "commit_ms": commit,
                    "shuffle_partitions": partitions,
                    "rows_total": total,
                }
            ]
        events.append(event)
    return events


def progress_event(batch_id: int, run: str = "11111111-2222-3333-4444-555555555555") -> Any:
    """A stand-in for Spark's StreamingQueryProgress: the fields the driver's recorder reads."""
    return SimpleNamespace(
        id="q",
        runId=run,
        batchId=batch_id,
        timestamp=f"2026-11-25T10:00:{batch_id:02d}.000Z",
        numInputRows=10,
        inputRowsPerSecond=200.0,
        processedRowsPerSecond=float("nan") if batch_id == 0 else 180.0,
        durationMs={"triggerExecution": 50, "addBatch": 40},
        sources=[],
        stateOperators=[],
    )


class Counted:
    """A filesystem that counts what is asked of it (fsspec's memory filesystem underneath); ``fail``: True, or a
    part of the paths whose writes fail."""

    def __init__(self, fs: Any) -> None:
        self.fs, self.puts, self.lists = fs, 0, 0
        self.fail: bool | str = False

    def pipe_file(self, path: str, data: bytes, **kwargs: Any) -> None:
        if self.fail is True or (isinstance(self.fail, str) and self.fail in path):
            raise OSError("503 Slow Down")
        self.puts += 1
        self.fs.pipe_file(path, data, **kwargs)

    def ls(self, path: str, **kwargs: Any) -> Any:
        self.lists += 1
        return self.fs.ls(path, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fs, name)
