"""Deployed state: what each job's control area says about it (nothing is asked of Spark); jobs gone from
the folder, or moved, are found through the fleet index (fleet.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from airflow_async_stream.driver.process import launcher_running_here
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetEntry, FleetIndex
from airflow_async_stream.state.liveness import liveness_of
from airflow_async_stream.state.records import Deployment, State, Status, now
from airflow_async_stream.state.stopped import Stopped, stopped_on_purpose
from airflow_async_stream.supervise.record import read_supervision

__all__ = ["ObservedJob", "observe", "observe_retired"]


@dataclass(frozen=True)
class ObservedJob:
    """A job's deployed spec (the latest submitted), its last stable spec, and whether a driver is live."""

    name: str
    control_url: str
    spec: dict[str, Any] | None
    stable: dict[str, Any] | None
    deployment: Deployment | None
    state: str | None
    live: bool
    rollout: dict[str, Any] | None
    #: The job's driver runs its query from the spec and can switch it in place (its status names the
    #: configuration it runs; an application's driver, which builds its query itself, names none).
    switchable: bool = False
    #: For a job gone from the folder: its fleet index entry (whether, and by which run, it was retired).
    entry: FleetEntry | None = None
    #: For a job no driver runs: whether Spark could restart its checkpoint synchronously (None: not judged,
    #: a live job or no checkpoint yet). False is a job that dies with ``batch N doesn't exist`` if restarted so.
    sync_restart_safe: bool | None = None
    #: A stop on purpose in effect (a person's, or its file's suspend): neither a rollout nor the supervisor
    #: starts it again (state/stopped.py).
    stopped: Stopped | None = None
    #: When its current deployment is the one the supervisor gave up on (crash_looping): since when.
    crash_looping_at: float | None = None

    @property
    def stable_spec(self) -> dict[str, Any] | None:
        return (self.stable or {}).get("spec")

    @property
    def confirmed(self) -> bool:
        """The deployed spec ran stably: its deployment committed batches after its start (after an in-place
        switch the deployment stays; the stable spec must be the one it runs now)."""
        stable, deployment = self.stable or {}, self.deployment
        return (
            bool(stable)
            and deployment is not None
            and stable.get("deployment_id") == deployment.deployment_id
            and (self.spec is None or stable.get("spec") in (None, self.spec))
        )


#: How long a submitted driver on another host may take to write its first status record.
SUBMITTED_GRACE_S = 300.0


def _still_starting(deployment: Deployment | None, status: Status | None) -> bool:
    """A deployment submitted but not yet reporting (its status record is older or absent) counts as live
    while its spark-submit still runs on this host, or, elsewhere, for a grace period after submit."""
    if not deployment or not deployment.driver:
        return False
    if status and status.deployment_id == deployment.deployment_id:
        return False  # it reports: its own status decides
    running_here = launcher_running_here(deployment.driver)
    if running_here is not None:
        return running_here
    return now() - float(deployment.deployed_at or 0) < SUBMITTED_GRACE_S


def read_job(name: str, control: ControlArea) -> ObservedJob:
    try:
        raw = control.read_bytes(ControlArea.SPEC)
        spec = json.loads(raw)
    except FileNotFoundError:
        spec = None
    except ValueError as exc:
        raise ControlAreaError(f"{control.url}/{ControlArea.SPEC} is not valid JSON: {exc}") from None
    status, judged = liveness_of(control)  # a driver whose host recorded its exit is gone at once, on every host
    deployment = control.read_deployment()
    live = judged.live or _still_starting(deployment, status)
    return ObservedJob(
        name=name,
        control_url=control.url,
        spec=spec if isinstance(spec, dict) else None,
        stable=control.read_json(ControlArea.STABLE),
        deployment=deployment,
        state=status.state if status else None,
        live=live,
        rollout=control.read_json(ControlArea.ROLLOUT),
        switchable=bool(status and status.configuration is not None and judged.live and status.state == State.RUNNING),
        sync_restart_safe=None if live or not isinstance(spec, dict) else _sync_restart_safe(spec),
        stopped=stopped_on_purpose(control),
        crash_looping_at=_crash_looping_at(control, status),
    )


def _crash_looping_at(control: ControlArea, status: Status | None) -> float | None:
    record = read_supervision(control)
    looping = status is not None and record.crash_looping == status.deployment_id
    return record.crash_looping_at if looping else None


def _sync_restart_safe(spec: dict[str, Any]) -> bool | None:
    """The inspector's verdict on the checkpoint the job was deployed on (None where there is none yet)."""
    checkpoint = spec.get("checkpoint")
    if not isinstance(checkpoint, str):
        return None
    inspection = inspect_checkpoint(checkpoint)
    return inspection.sync_restart_safe if inspection.exists else None


def observe(checkpoints: dict[str, str], index: FleetIndex) -> dict[str, ObservedJob]:
    """The deployed state of each named job, found beside its checkpoint, or, when nothing was deployed
    there, where the fleet index says the job runs (a moved checkpoint shows as a change)."""
    found = {}
    for name, checkpoint in checkpoints.items():
        job = read_job(name, ControlArea.for_checkpoint(checkpoint))
        if job.spec is None:
            entry = index.lookup(name)
            if entry and entry.control_area != job.control_url:
                elsewhere = read_job(name, ControlArea(entry.control_area))
                job = elsewhere if elsewhere.spec is not None else job
        found[name] = job
    return found


def observe_retired(index: FleetIndex, indexed: Iterable[str], desired_names: Iterable[str]) -> dict[str, ObservedJob]:
    """Jobs of the fleet index (``indexed``: its listing) whose file is gone from the folder, with their
    index entry."""
    found = {}
    for name in sorted(set(indexed) - set(desired_names)):
        entry = index.lookup(name)
        if entry is None:  # removed between the listing and the read
            continue
        found[name] = replace(read_job(name, ControlArea(entry.control_area)), entry=entry)
    return found
