"""Deployed state: what each job's control area says about it (nothing is asked of Spark); jobs gone from
the folder, or moved, are found through the fleet index (fleet.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from airflow_async_stream.decision.observe import Observation
from airflow_async_stream.decision.observe import observe as observe_job
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetEntry, FleetIndex
from airflow_async_stream.state.records import Deployment, Status
from airflow_async_stream.state.stopped import Stopped, stopped_on_purpose
from airflow_async_stream.supervise.record import read_supervision

__all__ = ["ObservedJob", "observe", "observe_retired"]


@dataclass(frozen=True)
class ObservedJob:
    """A job as observed (decision/observe.py), with what the planner reads beside it: its last stable spec, its
    last rollout step, a stop on purpose, a crash loop."""

    name: str
    observation: Observation
    stable: dict[str, Any] | None = None
    rollout: dict[str, Any] | None = None
    #: For a job gone from the folder: its fleet index entry (whether, and by which run, it was retired).
    entry: FleetEntry | None = None
    #: A stop on purpose in effect (a person's, or its file's suspend): neither a rollout nor the supervisor
    #: starts it again (state/stopped.py).
    stopped: Stopped | None = None
    #: When its current deployment is the one the supervisor gave up on (crash_looping): since when.
    crash_looping_at: float | None = None

    @property
    def control_url(self) -> str:
        return self.observation.control_url

    @property
    def spec(self) -> dict[str, Any] | None:
        """The deployed spec (the latest submitted or switched to)."""
        return self.observation.spec

    @property
    def deployment(self) -> Deployment | None:
        return self.observation.deployment

    @property
    def state(self) -> str | None:
        return self.observation.state

    @property
    def live(self) -> bool:
        return self.observation.live

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


def read_job(name: str, control: ControlArea) -> ObservedJob:
    observation = observe_job(control)
    return ObservedJob(
        name=name,
        observation=observation,
        stable=control.read_json(ControlArea.STABLE),
        rollout=control.read_json(ControlArea.ROLLOUT),
        stopped=stopped_on_purpose(control),
        crash_looping_at=_crash_looping_at(control, observation.status),
    )


def _crash_looping_at(control: ControlArea, status: Status | None) -> float | None:
    record = read_supervision(control)
    looping = status is not None and record.crash_looping == status.deployment_id
    return record.crash_looping_at if looping else None


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
