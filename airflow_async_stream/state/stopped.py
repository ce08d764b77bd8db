"""A stop on purpose: a person's (``airflow-async-stream stop``, ``StopStreamingJobOperator``) or its file's
(``state: suspended``), in ``stopped.json``. Neither the supervisor nor a rollout starts such a job again; it
holds for the deployment it stopped, so any later deployment (a deploy, ``resume``, ``state: running``) ends
it without anything being deleted. The record decisions read is the Airflow side's own (ledger.py); the
control area's copy is for readers, and only ever adds a stop.
"""

from __future__ import annotations

import contextlib
import getpass
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from airflow_async_stream.state import ledger
from airflow_async_stream.state.records import now
from airflow_async_stream.state.typed import Record

if TYPE_CHECKING:
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Grant

__all__ = ["BY_FILE", "BY_PERSON", "Stopped", "by_this_user", "record_stop", "record_unheld_stop", "stopped_on_purpose"]

BY_PERSON, BY_FILE = "person", "file"


@dataclass(frozen=True, kw_only=True)
class Stopped(Record):
    """``stopped.json``: who stopped the job on purpose, when, why, and which deployment."""

    at: float = 0.0
    #: ``person`` (a command or an operator a person's DAG runs) or ``file`` (``state: suspended``).
    kind: str = BY_PERSON
    #: Who: ``user@host`` for a command, ``dag.task (run ...)`` for an operator, the file for a suspend.
    by: str = ""
    reason: str = ""
    #: The deployment it stopped; a later one ends this stop.
    deployment_id: str = ""

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if self.kind == BY_FILE:
            return f"suspended by its file at {when}"
        return f"stopped by a person ({self.by}) at {when}"


def by_this_user() -> str:
    """``user@host`` of the command line."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown user"
    return f"{user}@{socket.gethostname()}"


def record_stop(control: ControlArea, grant: Grant, kind: str, by: str, reason: str) -> Stopped | None:
    """Record a stop on purpose of the job's current deployment, under ``grant``'s hold (fenced); nothing
    for a job never deployed (a later first deploy is no restart)."""
    deployment = control.read_deployment()
    if deployment is None:
        return None
    record = Stopped(at=now(), kind=kind, by=by, reason=reason, deployment_id=deployment.deployment_id)
    with grant.guarded():
        ledger.write(control, ledger.STOPPED, record.to_json())
        control.write_json(control.STOPPED, record.to_json())
    return record


def record_unheld_stop(control: ControlArea, deployment_id: str, by: str, reason: str) -> str | None:
    """A person's stop of ``deployment_id`` where no hold can be taken (the control area cannot carry one): a
    person's word needs none. Kept beside the registry, where the supervisor reads it, and copied into the
    control area where it can be; why it could not be kept, or None."""
    record = Stopped(at=now(), kind=BY_PERSON, by=by, reason=reason, deployment_id=deployment_id)
    try:
        ledger.write(control, ledger.STOPPED, record.to_json())
    except OSError as exc:
        return f"{ledger.folder(control) / ledger.STOPPED}: {exc}"
    with contextlib.suppress(OSError, ValueError):  # the caller says why the control area takes nothing
        control.write_json(control.STOPPED, record.to_json())
    return None


def stopped_on_purpose(control: ControlArea) -> Stopped | None:
    """The stop on purpose in effect: the Airflow side's, unless it launched a later deployment since; else one
    the control area records for its current deployment (None once another followed). A forged control area can
    add a stop, never remove one."""
    kept = ledger.read(control, ledger.STOPPED)
    if kept is not None:
        record = Stopped.from_json(kept, str(ledger.folder(control) / ledger.STOPPED))
        if ledger.deployed(control) in (None, record.deployment_id):
            return record
    data = control.read_json(control.STOPPED)
    if data is None:
        return None
    record = Stopped.from_json(data, f"{control.url}/{control.STOPPED}")
    deployment = control.read_deployment()
    return record if deployment is not None and record.deployment_id == deployment.deployment_id else None
