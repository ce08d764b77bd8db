"""The control area's typed records (status, deployment, hold, switch request and account), the states a job
passes through, and the timing rules they carry (heartbeat, the hold's time-to-live).

A record read from a file is checked field by field; one that cannot be read is a ControlAreaError naming the
file, never taken for a missing one. Fields a later release adds are kept when an earlier one rewrites a record.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Self

from airflow_async_stream.exceptions import ControlAreaError

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "HEARTBEAT_INTERVAL_S",
    "HEARTBEAT_STALE_S",
    "HOLD_MARGIN_S",
    "NOT_LAUNCHED",
    "SUBMITTED",
    "SUFFIX",
    "UP_STATES",
    "Deployment",
    "Hold",
    "State",
    "Status",
    "SwitchAccount",
    "SwitchOutcome",
    "SwitchPhase",
    "SwitchRequest",
    "hold_ttl_s",
    "now",
]


class State(StrEnum):
    """A deployment's state in its status record (written by the driver; ``failed`` also by a stop that
    found the driver gone)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"
    #: Ended before its query started: another deployment replaced it while it was launching (fence.py).
    SUPERSEDED = "superseded"


#: A driver in these states may still run (its heartbeat decides) ...
ACTIVE_STATES = frozenset({State.STARTING, State.RUNNING, State.STOPPING})
#: ... in these it runs or is about to, and nobody asked it to stop ...
UP_STATES = frozenset({State.STARTING, State.RUNNING})
#: ... and in these it has ended.
FINAL_STATES = frozenset({State.STOPPED, State.FAILED, State.SUPERSEDED})
#: A deployment record's state while its driver is on its way, and when its deploy gave up before the launch.
SUBMITTED, NOT_LAUNCHED = "submitted", "not launched"
SUFFIX = ".async-stream"
#: The driver rewrites its heartbeat this often (seconds) ...
HEARTBEAT_INTERVAL_S = 2.0
#: ... and a heartbeat older than this means the driver is gone.
HEARTBEAT_STALE_S = 20.0
#: Slack on every hold, beyond the time limits of the steps it covers (seconds).
HOLD_MARGIN_S = 60.0


def hold_ttl_s(
    *,
    deploys: int = 0,
    stops: int = 0,
    waits: int = 0,
    startup_timeout_s: float = 0.0,
    stop_kill_after_s: float = 0.0,
    wait_timeout_s: float = 0.0,
) -> float:
    """How long a holder keeps a job: the sum of the time limits of the steps it covers, plus a margin.

    A deploy may first stop the live driver (killed ``stop_kill_after_s`` after the request at the latest),
    then waits up to ``startup_timeout_s``; a stop takes at most ``stop_kill_after_s``; a wait for committed
    batches at most ``wait_timeout_s``.
    """
    return (
        deploys * (startup_timeout_s + stop_kill_after_s)
        + stops * stop_kill_after_s
        + waits * wait_timeout_s
        + HOLD_MARGIN_S
    )


# -- typed records ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Record:
    """A JSON record of the control area. Keys this release does not know (a newer release's) are kept in
    ``extra`` and written back; keys it knows but a record lacks (an older release's) read as their default."""

    extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "record") -> Self:
        known = {f.name for f in fields(cls)} - {"extra"}
        if not isinstance(data, Mapping):
            raise ControlAreaError(f"{where} should hold a JSON object, found {type(data).__name__}")
        record = cls(
            **{k: v for k, v in data.items() if k in known}, extra={k: v for k, v in data.items() if k not in known}
        )
        record.check(where)
        return record

    def check(self, where: str) -> None:
        """Raise ControlAreaError naming the file and field when a field the provider relies on is missing."""

    def to_json(self) -> dict[str, Any]:
        data = dict(self.extra)
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"})
        return data

    def but(self, **changes: Any) -> Self:
        """A copy with ``changes`` (records are immutable)."""
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class Status(_Record):
    """``status.json``: the driver's account of its deployment, rewritten with every heartbeat."""

    deployment_id: str = ""
    state: str = ""
    job: str | None = None
    host: str | None = None
    pid: int | None = None
    started_at: float | None = None
    heartbeat_at: float = 0.0
    updated_at: float | None = None
    batches: int = 0
    first_batch_id: int | None = None
    last_batch_id: int | None = None
    last_progress_at: float | None = None
    idle_at: float | None = None
    query_id: str | None = None
    run_id: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    forced_stop: bool | None = None
    finished_at: float | None = None
    #: Which options came from Airflow connections (never their values), and which PySpark the driver runs.
    secret_options: list[str] = field(default_factory=list)
    pyspark: dict[str, str] | None = None
    #: What the running query was started with (async options, trigger), and how often it was switched in place.
    configuration: dict[str, Any] | None = None
    switches: int = 0
    #: Since when the trigger has run the batch after ``last_batch_id`` (heartbeats see it; None between
    #: batches), and whether Spark said at the last heartbeat that its source has new data.
    batch_active_since: float | None = None
    data_available: bool | None = None

    def check(self, where: str) -> None:
        if not self.state:
            raise ControlAreaError(f"{where} names no state")

    @property
    def source_idle(self) -> bool:
        """The query runs but its source had no new data since its last batch."""
        return bool(self.idle_at) and (self.idle_at or 0) >= (self.last_progress_at or 0)


@dataclass(frozen=True, kw_only=True)
class Deployment(_Record):
    """``deployment.json``: what the latest deploy submitted, where its driver runs, and how it started."""

    deployment_id: str = ""
    job: str | None = None
    checkpoint: str | None = None
    control_area: str | None = None
    master: str | None = None
    async_progress: dict[str, Any] = field(default_factory=dict)
    trigger: dict[str, Any] = field(default_factory=dict)
    #: The batch before the first one this deployment runs (``checkpoint.resume_point``): waits count the
    #: batches committed after it.
    start_batch: int | None = None
    deployed_at: float | None = None
    state: str = SUBMITTED
    airflow: dict[str, Any] = field(default_factory=dict)
    #: Which options came from Airflow connections (never their values).
    secret_options: list[str] = field(default_factory=list)
    #: How to reach the driver: kind, host, pids, log (see driver/process.py); None before submit.
    driver: dict[str, Any] | None = None
    first_batch_id: int | None = None
    query_id: str | None = None
    run_id: str | None = None
    confirmed_at: float | None = None
    #: The fencing token of the hold it was deployed under: its driver does not start once it is stale.
    hold_token: int | None = None


@dataclass(frozen=True, kw_only=True)
class Hold(_Record):
    """``lease.json``: which DAG run or process may change the job now, and until when (hold.py)."""

    holder: str = ""
    purpose: str | None = None
    host: str | None = None
    pid: int | None = None
    dag_id: str | None = None
    run_id: str | None = None
    acquired_at: float = 0.0
    expires_at: float = 0.0
    acquired_at_text: str | None = None
    expires_at_text: str | None = None
    #: The fencing token this hold was granted (fence.json's then): 0 in a hold of an earlier release.
    token: int = 0

    def check(self, where: str) -> None:
        if not self.holder:
            raise ControlAreaError(f"{where} names no holder")


class SwitchPhase(StrEnum):
    """Where an in-place switch is: the driver writes each phase before it acts on it."""

    STOPPING = "stopping"
    STOPPED = "stopped"
    STARTED = "started"
    DONE = "done"


class SwitchOutcome(StrEnum):
    SWITCHED = "switched"
    #: The request asked for a synchronous query, the stopped checkpoint was not safe for it.
    KEPT_ASYNC_AT_INTERVAL_0 = "kept_async_at_interval_0"
    #: The change needs a new driver; nothing was stopped.
    REFUSED = "refused"
    #: The new query would not start: Spark rejected its settings before the stop (nothing stopped), or it
    #: failed to start after it (the previous configuration runs again).
    FAILED = "failed"
    #: The deployment it was meant for ended before applying it (a later deployment refused it).
    ABANDONED = "abandoned"
    #: The hold it was asked under ended (a forced stop) before the driver applied it; nothing was stopped.
    REVOKED = "revoked"
    #: A rehearsal: the driver built the requested query without starting it, and stopped nothing.
    REHEARSED = "rehearsed"


@dataclass(frozen=True, kw_only=True)
class SwitchRequest(_Record):
    """``reconfigure-request.json``: switch one deployment's query to ``spec`` without a new driver."""

    request_id: str = ""
    deployment_id: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    #: Start synchronously only when the stopped checkpoint is safe for it, else async on at interval 0.
    require_sync_safe: bool = False
    reason: str | None = None
    graceful_timeout_s: float = 60.0
    requested_at: float | None = None
    requested_from: str | None = None
    #: The fencing token of the hold it was asked under: the driver does not apply it once it is stale.
    hold_token: int | None = None
    #: Only build the requested query, without starting it or stopping the running one: a change that needs a
    #: new driver is checked by Spark before the old driver is stopped for it.
    rehearse: bool = False

    def check(self, where: str) -> None:
        for name in ("request_id", "deployment_id", "spec"):
            if not getattr(self, name):
                raise ControlAreaError(f"{where} names no {name}")


@dataclass(frozen=True, kw_only=True)
class SwitchAccount(_Record):
    """``reconfiguration.json``: the driver's account of one switch request, rewritten at every phase."""

    request_id: str = ""
    deployment_id: str = ""
    phase: str = SwitchPhase.DONE
    outcome: str | None = None
    reason: str | None = None
    #: The configuration (async options, trigger) before and after the switch.
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] | None = None
    last_batch_before: int | None = None
    #: The batch before the new query's first (``checkpoint.resume_point`` once the query stopped): every
    #: commit after it is the new query's (a wait for its batches counts from it, as from a deploy's start_batch).
    committed_before: int | None = None
    first_batch_after: int | None = None
    run_id: str | None = None
    forced_stop: bool | None = None
    requested_at: float | None = None
    stopped_at: float | None = None
    started_at: float | None = None
    #: Idle time of the stream across the switch: from the end of the last batch before to the start of the
    #: first batch after, from the progress log's own timestamps.
    pause_s: float | None = None
    #: The inspector's verdict when the request asked for a gated synchronous start.
    gate: str | None = None

    def check(self, where: str) -> None:
        if not self.request_id:
            raise ControlAreaError(f"{where} names no request_id")

    @property
    def settled(self) -> bool:
        """Nothing more will happen to this switch (its first batch may still be awaited: see ``phase``)."""
        return self.phase == SwitchPhase.DONE


def now() -> float:
    return time.time()
