"""What a job is now, as its control area and checkpoint say, read and never written: the spec it was deployed
with, whether a driver is live and can switch in place, and, where no driver runs, the checkpoint's verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.driver.process import launcher_running_here
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.checkpoint import Inspection, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness_of
from airflow_async_stream.state.records import Deployment, State, Status, now

__all__ = ["SUBMITTED_GRACE_S", "Observation", "observe"]

#: How long a submitted driver on another host may take to write its first status record.
SUBMITTED_GRACE_S = 300.0


@dataclass(frozen=True)
class Observation:
    """One job as observed: what ``decide`` reads."""

    control_url: str
    #: The spec last deployed or switched to (its control area's spec.json): evidence to judge a change against.
    spec: dict[str, Any] | None
    status: Status | None
    deployment: Deployment | None
    #: A driver is alive (or submitted and not yet reporting), and why it counts so or not.
    live: bool
    live_reason: str = ""
    #: Its driver runs its query from the spec and can switch it in place (its status names the configuration
    #: it runs; an application's driver, which builds its query itself, names none).
    switchable: bool = False
    #: The checkpoint's verdict, read only where no driver is live (a live driver writes it under a reader).
    checkpoint: Inspection | None = None

    @property
    def state(self) -> str | None:
        return self.status.state if self.status else None

    @property
    def sync_restart_safe(self) -> bool | None:
        """Whether Spark could restart the checkpoint synchronously; None where it was not judged (a live
        driver, or no checkpoint yet)."""
        checkpoint = self.checkpoint
        return checkpoint.sync_restart_safe if checkpoint is not None and checkpoint.exists else None


def observe(control: ControlArea, checkpoint: str | None = None) -> Observation:
    """Read the job at ``control``; ``checkpoint``: where its checkpoint is when its spec does not say (a job
    about to be deployed for the first time)."""
    spec = _deployed_spec(control)
    status, judged = liveness_of(control)  # a driver whose host recorded its exit is gone at once, on every host
    deployment = control.read_deployment()
    starting = _still_starting(deployment, status)
    live = judged.live or starting
    where = checkpoint or (spec or {}).get("checkpoint")
    return Observation(
        control_url=control.url,
        spec=spec,
        status=status,
        deployment=deployment,
        live=live,
        live_reason="submitted, not yet reporting" if starting and not judged.live else judged.reason,
        switchable=bool(status and status.configuration is not None and judged.live and status.state == State.RUNNING),
        checkpoint=inspect_checkpoint(where) if not live and isinstance(where, str) else None,
    )


def _deployed_spec(control: ControlArea) -> dict[str, Any] | None:
    try:
        raw = control.read_bytes(ControlArea.SPEC)
    except FileNotFoundError:
        return None
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise ControlAreaError(f"{control.path(ControlArea.SPEC)} is not valid JSON: {exc}") from None
    return spec if isinstance(spec, dict) else None


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
