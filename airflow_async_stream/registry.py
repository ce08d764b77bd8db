"""Where a job name leads: a small local index of deployed jobs, so people can say `status clicks`.

One file per job in ``$AIRFLOW_ASYNC_STREAM_HOME/jobs/`` (default ``~/.airflow-async-stream``),
written by the deploy operator. Job names are validated by the spec, so they cannot leave the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["entries", "local_log_path", "lookup", "record", "registry_dir"]


def registry_dir() -> Path:
    home = os.environ.get("AIRFLOW_ASYNC_STREAM_HOME") or str(Path.home() / ".airflow-async-stream")
    return Path(home) / "jobs"


def local_log_path(job: str, deployment_id: str) -> str:
    """Where a driver of this host writes its output when its control area is on remote storage."""
    folder = registry_dir().parent / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"{job}-{deployment_id}.log")


def record(job: str, checkpoint: str, control_area: str, deployment_id: str) -> None:
    folder = registry_dir()
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"job": job, "checkpoint": checkpoint, "control_area": control_area, "deployment_id": deployment_id}
    tmp = folder / f".{job}.json.tmp"
    tmp.write_text(json.dumps(entry, indent=2))
    os.replace(tmp, folder / f"{job}.json")


def lookup(job: str) -> dict[str, Any] | None:
    path = registry_dir() / f"{job}.json"
    if "/" in job or not path.is_file():
        return None
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else None


def entries() -> list[dict[str, Any]]:
    """Every job this host has deployed, by name."""
    folder = registry_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a half-written or foreign file is not a job entry
        if isinstance(data, dict) and data.get("job"):
            found.append(data)
    return found
