"""A job's health: one verdict, the reason in words, and since when. Every face asks this module.

Judged from records alone (the status record, the deployment record, the driver's exit record, the newest
progress events) and the spec's ``health`` limits, so every host and every reader says the same:

- ``crashed``: its driver died after its query ran (final status ``failed``, or its heartbeat or process is
  gone, or its launching host recorded its exit, without a final status);
- ``failed_to_start``: its deployment ended, or its driver died, before a batch ran;
- ``stopped``: it ended on request (or was superseded by a later deployment before its query started);
- ``stalled``: it runs, but a batch has been active longer than ``batch_stalled_after``, or Spark says its
  source has new data and no batch ended for ``no_batch_after``;
- ``lagging``: it runs, and its source reports a backlog that grew over the newest batches (Kafka's
  ``offsetsBehindLatest`` metrics, when the progress events carry them);
- ``idle``: it runs, and its source had no new data since its last batch (Spark's idle event, which it
  sends at most every 10 s, or its trigger's status at the last heartbeat);
- ``healthy``: it runs batches; ``starting`` / ``stopping``: on its way up or down; ``not_deployed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from airflow_async_stream.insight.batches import batch_window
from airflow_async_stream.spec.health import HealthSpec
from airflow_async_stream.spec.load import parse_part
from airflow_async_stream.spec.trigger import Trigger
from airflow_async_stream.state.incidents import one_line
from airflow_async_stream.state.liveness import Liveness
from airflow_async_stream.state.records import ACTIVE_STATES, NOT_LAUNCHED, Deployment, State, Status, now

__all__ = ["DOWN", "UP", "Health", "Limits", "Look", "Verdict", "judge", "restart_outlook"]


class Verdict(StrEnum):
    HEALTHY = "healthy"
    IDLE = "idle"
    STALLED = "stalled"
    LAGGING = "lagging"
    CRASHED = "crashed"
    FAILED_TO_START = "failed_to_start"
    STOPPED = "stopped"
    STARTING = "starting"
    STOPPING = "stopping"
    NOT_DEPLOYED = "not_deployed"


#: A job that is down without anyone asking: a person (or the supervisor) must act.
DOWN = frozenset({Verdict.CRASHED, Verdict.FAILED_TO_START})
#: A job whose query runs batches (or waits for data): up, for metrics and for saying a recovery.
UP = frozenset({Verdict.HEALTHY, Verdict.IDLE, Verdict.LAGGING})
#: How many of the newest batches a growing backlog must span to count as lagging.
LAG_BATCHES = 5
#: The least time without a batch, while Spark says no data waits, that makes a running job idle (seconds).
QUIET_AFTER_MIN_S = 2.0
#: Kafka's source metric of the backlog (the largest over the query's partitions).
LAG_METRIC = "maxOffsetsBehindLatest"


@dataclass(frozen=True)
class Health:
    verdict: Verdict
    reason: str
    since: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"verdict": str(self.verdict), "reason": self.reason, "since": self.since}


@dataclass(frozen=True)
class Limits:
    """When a running job counts as stalled (seconds)."""

    batch_stalled_after_s: float
    no_batch_after_s: float
    #: No batch for this long while Spark says no data is waiting (or its idle event came): idle, not between two
    #: batches of a source whose data arrives in steps (the rate source's, every second).
    quiet_after_s: float = QUIET_AFTER_MIN_S

    @classmethod
    def of(cls, spec: Mapping[str, Any] | None) -> Limits:
        """The limits of a recorded spec (``spec.json``'s mapping); the defaults without one (SpecError naming the
        field of one that cannot be read)."""
        spec = spec or {}
        health, trigger = parse_part(HealthSpec, spec, "health"), parse_part(Trigger, spec, "trigger")
        batch, no_batch = health.limits_s(trigger)
        return cls(batch, no_batch, max(QUIET_AFTER_MIN_S, 2 * (trigger.interval_ms() or 0) / 1000))


@dataclass(frozen=True)
class Look:
    """What a reader read of one job: its records, whether its driver lives, its newest progress events."""

    status: Status | None
    liveness: Liveness
    deployment_state: str | None = None
    deployment_id: str | None = None
    deployed_at: float | None = None
    events: Sequence[Mapping[str, Any]] = ()

    @classmethod
    def of(
        cls,
        status: Status | None,
        liveness: Liveness,
        deployment: Deployment | None,
        events: Sequence[Mapping[str, Any]],
    ) -> Look:
        """What a reader read: the records, liveness, and the newest events."""
        if deployment is None:
            return cls(status, liveness, events=events)
        return cls(status, liveness, deployment.state, deployment.deployment_id, deployment.deployed_at, events)


def _ran_a_batch(status: Status) -> bool:
    return status.first_batch_id is not None or status.batches > 0


def judge(look: Look, limits: Limits, at: float | None = None) -> Health:
    """The job's verdict now (``at``)."""
    at = now() if at is None else at
    status = look.status
    newer = bool(look.deployment_id) and (status is None or status.deployment_id != look.deployment_id)
    if newer:
        return _launching(look)
    if status is None:
        return Health(Verdict.NOT_DEPLOYED, "never deployed")
    if status.state not in ACTIVE_STATES:
        return _ended(status)
    if not look.liveness.live:
        verdict = Verdict.CRASHED if _ran_a_batch(status) else Verdict.FAILED_TO_START
        return Health(verdict, f"its driver died: {look.liveness.reason}", status.heartbeat_at or None)
    if status.state == State.STOPPING:
        return Health(Verdict.STOPPING, f"stopping on request ({status.stop_reason or 'no reason given'})")
    if status.state == State.STARTING:
        return Health(Verdict.STARTING, "its driver runs, its query has not started yet", status.started_at)
    return _running(status, look.events, limits, at)


def _launching(look: Look) -> Health:
    """A deployment newer than the status record: its driver has not reported yet."""
    if look.deployment_state == NOT_LAUNCHED:
        return Health(Verdict.FAILED_TO_START, "its deploy gave up before the driver was launched", look.deployed_at)
    return Health(Verdict.STARTING, f"deployment {look.deployment_id} is launching", look.deployed_at)


def _ended(status: Status) -> Health:
    if status.state == State.STOPPED:
        return Health(
            Verdict.STOPPED, f"stopped on request ({status.stop_reason or 'no reason given'})", status.finished_at
        )
    if status.state == State.SUPERSEDED:
        return Health(Verdict.STOPPED, f"superseded before its query started: {status.stop_reason}", status.finished_at)
    if _ran_a_batch(status):
        return Health(
            Verdict.CRASHED, f"its query failed: {one_line(status.error) or 'no error recorded'}", status.finished_at
        )
    return Health(
        Verdict.FAILED_TO_START, f"it ran no batch: {one_line(status.error) or 'no error recorded'}", status.finished_at
    )


def _running(status: Status, events: Sequence[Mapping[str, Any]], limits: Limits, at: float) -> Health:
    active = status.batch_active_since
    if active is not None and (status.last_progress_at or 0) > active:
        active = None  # the batch seen active has ended since that heartbeat
    if active is not None and at - active > limits.batch_stalled_after_s:
        batch = "its first batch" if status.last_batch_id is None else f"batch {status.last_batch_id + 1}"
        return Health(
            Verdict.STALLED,
            f"{batch} has run for {at - active:.0f} s (limit {limits.batch_stalled_after_s:.0f} s)",
            active,
        )
    last = status.last_progress_at or status.started_at or at
    said = status.heartbeat_at  # what the driver said at its last heartbeat, not what it has not written yet
    if status.data_available and active is None and said - last > limits.no_batch_after_s:
        return Health(
            Verdict.STALLED,
            f"no batch for {at - last:.0f} s although its source reports new data (limit {limits.no_batch_after_s:.0f} s)",
            last,
        )
    lag = backlog_growth(events)
    if lag is not None:
        since, first, newest = lag
        return Health(
            Verdict.LAGGING,
            f"its source's backlog grew from {first:,.0f} to {newest:,.0f} offsets over the last {LAG_BATCHES} batches",
            since,
        )
    quiet = active is None and said - last > limits.quiet_after_s  # a batch running long is no quiet source
    if quiet and (status.source_idle or status.data_available is False):
        return Health(
            Verdict.IDLE,
            "its source has had no new data since its last batch",
            status.last_progress_at or status.idle_at,
        )
    return Health(Verdict.HEALTHY, f"running batches (last {status.last_batch_id})", status.started_at)


def _backlog(event: Mapping[str, Any]) -> float | None:
    values = []
    for source in event.get("sources") or []:
        value = (source.get("metrics") or {}).get(LAG_METRIC) if isinstance(source, Mapping) else None
        if not isinstance(value, (int, float, str)):
            continue
        try:
            values.append(float(value))
        except ValueError:
            continue
    return max(values) if values else None


def backlog_growth(events: Sequence[Mapping[str, Any]]) -> tuple[float | None, float, float] | None:
    """``(since, first, newest)`` when the backlog never shrank over the newest ``LAG_BATCHES`` batches that
    report one, and grew; None otherwise (or when no source reports a backlog)."""
    measured: list[tuple[Mapping[str, Any], float]] = []
    for event in reversed(events):  # newest first; a source that reports a backlog does so at every batch
        backlog = _backlog(event)
        if backlog is None:
            if not measured and event.get("sources"):
                return None  # the newest batch reports none: its source does not say
            continue
        measured.insert(0, (event, backlog))
        if len(measured) == LAG_BATCHES:
            break
    if len(measured) < LAG_BATCHES:
        return None
    values = [b for _, b in measured]
    if any(b < a for a, b in zip(values, values[1:], strict=False)) or values[-1] <= values[0]:
        return None
    start = measured[0][0].get("timestamp")
    return (_epoch(start), values[0], values[-1])


def _epoch(stamp: Any) -> float | None:
    try:
        return batch_window({"timestamp": stamp})[0]
    except (KeyError, TypeError, ValueError):
        return None


def restart_outlook(sync_safe: bool | None, async_on: bool | None, verdict: Verdict) -> str:
    """The restart verdict in the words it deserves: ``safe``; ``needs_migration`` (a synchronous restart needs
    the migration first, as with every running async job's gaps: not a fault); ``unsafe`` only for a job that
    is down and specified synchronous, which cannot restart as specified; ``none`` without a checkpoint."""
    if sync_safe is None:
        return "none"
    if sync_safe:
        return "safe"
    down = verdict in DOWN or verdict == Verdict.STOPPED
    return "unsafe" if down and not async_on else "needs_migration"
