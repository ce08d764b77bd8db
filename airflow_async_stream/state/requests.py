"""The requests of the control area, which a running driver acts on: stop between micro-batches, or switch its
query in place; and the driver's account of a switch, phase by phase (switch/request.py asks, runtime/ acts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.typed import Record

__all__ = ["StopRequest", "SwitchAccount", "SwitchOutcome", "SwitchPhase", "SwitchRequest"]


@dataclass(frozen=True, kw_only=True)
class StopRequest(Record):
    """``stop-request.json``: stop one deployment's query between micro-batches (its driver reads it)."""

    STRICT = True

    deployment_id: str = ""
    reason: str | None = None
    graceful_timeout_s: float = 60.0
    requested_at: float | None = None
    requested_from: str | None = None

    def check(self, where: str) -> None:
        if not self.deployment_id:
            raise ControlAreaError(f"{where} names no deployment_id")


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
class SwitchRequest(Record):
    """``switch-request.json``: switch one deployment's query to ``spec`` without a new driver."""

    STRICT = True

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
class SwitchAccount(Record):
    """``switch.json``: the driver's account of one switch request, rewritten at every phase."""

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
    query_run_id: str | None = None
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
