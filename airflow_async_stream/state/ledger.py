"""What the Airflow side did to each job, kept where no driver writes: the records its decisions are made from.

A control area is written by running jobs (a driver runs the user's code), so a supervisor that judged a crash
loop from ``supervision.json``, or a person's stop from ``stopped.json``, there would let a forged history undo
either. Each such record is written here first, beside the job registry
(``$AIRFLOW_ASYNC_STREAM_HOME/ledger/<control area digest>/``), then copied into the control area for readers
and the driver; decisions read it from here only:

- ``deployed.json``: the deployment the Airflow side launched last (a deploy writes it before its driver runs),
- ``stopped.json``: a stop on purpose (a person's, a suspend), in effect until a later deployment,
- ``supervision.json``: the supervisor's restarts, a crash loop it declared, a person's resume,
- ``down.json``: when the supervisor first saw a deployment down, so its backoff runs from there.

Hosts that act on one another's jobs share ``AIRFLOW_ASYNC_STREAM_HOME`` (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsspec.implementations.local import LocalFileSystem

from airflow_async_stream.state.registry import registry_dir
from airflow_async_stream.state.storage import read_json_object, replace_file

if TYPE_CHECKING:
    from airflow_async_stream.state.control import ControlArea

__all__ = ["DEPLOYED", "DOWN", "STOPPED", "SUPERVISION", "deployed", "down_since", "folder", "read", "write"]

DEPLOYED, DOWN, STOPPED, SUPERVISION = "deployed.json", "down.json", "stopped.json", "supervision.json"
_LOCAL = LocalFileSystem()


def folder(control: ControlArea) -> Path:
    """This job's ledger: named by the digest of its control area's URL, so no record names another's."""
    return registry_dir().parent / "ledger" / hashlib.sha256(control.url.encode()).hexdigest()[:32]


def read(control: ControlArea, name: str) -> dict[str, Any] | None:
    """The record ``name``, or None when the Airflow side never wrote it (read as a control area's records are:
    capped, never through a symlink; ControlAreaError naming it when it holds anything else)."""
    path = str(folder(control) / name)
    return read_json_object(_LOCAL, path, path)


def write(control: ControlArea, name: str, data: dict[str, Any]) -> None:
    """Replace the record ``name`` whole (a reader sees the old one or the new one)."""
    where = folder(control)
    where.mkdir(parents=True, exist_ok=True)
    replace_file(_LOCAL, str(where / name), json.dumps(data).encode())


def deployed(control: ControlArea) -> str | None:
    """The deployment the Airflow side launched last for this job (None: none from a host sharing this ledger)."""
    data = read(control, DEPLOYED)
    return str(data["deployment_id"]) if data and data.get("deployment_id") else None


def down_since(control: ControlArea, deployment_id: str | None, at: float) -> float:
    """When the supervisor first saw ``deployment_id`` down: ``at`` when this is the first time (kept)."""
    data = read(control, DOWN)
    if data and data.get("deployment_id") == deployment_id:
        with contextlib.suppress(TypeError, ValueError):
            return float(data["since"])
    write(control, DOWN, {"deployment_id": deployment_id, "since": at})
    return at
