"""Where a job name leads: a small local index of deployed jobs, so people can say `status clicks`.

One file per job in ``$AIRFLOW_ASYNC_STREAM_HOME/jobs/`` (default ``~/.airflow-async-stream``),
written by the deploy operator. Job names are validated by the spec, so they cannot leave the folder.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["entries", "local_log_path", "lookup", "record", "registry_dir"]


def registry_dir() -> Path:
    home = os.environ.get("AIRFLOW_ASYNC_STREAM_HOME") or str(Path.home() / ".airflow-async-stream")
    return Path(home) / "jobs"


#: Deployments of one job whose local driver logs are kept (the newest; older ones are removed at a deploy).
LOCAL_LOGS_KEPT = 3
_LOG_NAME = re.compile(r"(?P<deployment>\d{8}T\d{6}Z-[0-9a-f]+)\.log(\.\d+)?")


def local_log_path(job: str, deployment_id: str) -> str:
    """Where a driver of this host writes its output when its control area is on remote storage.

    One (rotated) log per deployment; the logs of all but the newest ``LOCAL_LOGS_KEPT`` deployments of
    the job are removed, so a job redeployed daily for months does not fill this host's disk.
    """
    folder = registry_dir().parent / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    logs: dict[str, list[Path]] = {}
    for path in folder.glob(f"{job}-*"):
        match = _LOG_NAME.fullmatch(path.name[len(job) + 1 :])
        if match:
            logs.setdefault(match["deployment"], []).append(path)
    for old in sorted(logs)[: max(0, len(logs) - (LOCAL_LOGS_KEPT - 1))]:
        for path in logs[old]:
            path.unlink(missing_ok=True)
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
