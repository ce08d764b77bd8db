"""A switch request as the driver reads it: one left from a driver before is abandoned, one whose hold a forced
stop ended is refused, and one that cannot be rehearsed on this query says why."""

from __future__ import annotations

import logging
from collections.abc import Callable

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token
from airflow_async_stream.state.incidents import Incident, Kind, record_incident
from airflow_async_stream.state.records import now
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome, SwitchRequest

_log = logging.getLogger(__name__)

__all__ = ["abandon_stale_request", "gated_target", "not_applied", "not_rehearsable", "refuse_unreadable"]


def abandon_stale_request(control: ControlArea, deployment_id: str, redact: Callable[[str], str] = str) -> None:
    """At a driver's start: a request addressed to an earlier deployment is never applied (that driver may
    have applied part of it before it died); say so in switch.json and remove it. One that cannot be
    read is refused as the running driver refuses it."""
    try:
        request = control.read_switch_request()
    except ControlAreaError as exc:
        refuse_unreadable(control, ControlArea.SWITCH_REQUEST, redact(str(exc)), deployment_id)
        return
    if request is None or request.deployment_id == deployment_id:
        return
    previous = control.read_switch_account()
    phase = previous.phase if previous and previous.request_id == request.request_id else "not started"
    control.remove(ControlArea.SWITCH_REQUEST)  # first: an asker that sees the answer may ask again at once
    control.write_switch_account(
        SwitchAccount(
            request_id=request.request_id,
            deployment_id=request.deployment_id,
            outcome=SwitchOutcome.ABANDONED,
            reason=(
                f"deployment {request.deployment_id} ended before the switch was done (at {phase}); deployment "
                f"{deployment_id} started from its own spec and did not apply the request"
            ),
            before=previous.before if previous and previous.request_id == request.request_id else {},
            requested_at=request.requested_at,
        )
    )
    _log.info("switch request %s of deployment %s abandoned", request.request_id, request.deployment_id)


def refuse_unreadable(control: ControlArea, name: str, error: str, deployment_id: str) -> None:
    """A stop or switch request that cannot be read is never applied and must not end the job: refused where
    its asker looks (a switch's account; the job's incidents), and removed. The query runs on untouched.

    ``error`` is already redacted (it may quote a field of the request)."""
    _log.warning("refusing an unreadable request: %s", error)
    reason = f"{name} cannot be applied: {error}"
    try:
        raw = control.read_json(name) or {}
    except ControlAreaError:
        raw = {}
    control.remove(name)  # first: an asker that sees the answer may write its next request at once
    if name == ControlArea.SWITCH_REQUEST:
        named = raw.get("request_id")
        request_id = named if isinstance(named, str) and named else "unreadable"
        account = SwitchAccount(
            request_id=request_id[:200],
            deployment_id=deployment_id,
            outcome=SwitchOutcome.REFUSED,
            reason=reason,
            requested_at=now(),
        )
        control.write_switch_account(account)
    incident = Incident(
        at=now(),
        kind=Kind.CHANGE_REFUSED,
        deployment_id=deployment_id,
        error=reason,
        action="refused by the driver; its query runs on",
    )
    record_incident(control, incident.but(since=incident.at))


def not_applied(control: ControlArea, request: SwitchRequest) -> tuple[SwitchOutcome, str] | None:
    """Why the request must not be applied, and the outcome that says so: asked without the job's hold (every
    switch of this release is asked under one), or under a hold that ended since (a forced stop, or its
    holder's hold ended and another holder took the job: nobody awaits the request any more)."""
    if request.hold_token is None:
        reason = "it was asked without a hold token: a switch is applied only for the holder of the job's hold"
        return SwitchOutcome.REFUSED, reason
    token = current_token(control)
    if token == request.hold_token:
        return None
    fence = control.read_json(ControlArea.FENCE) or {}
    why = (
        f"the hold it was asked under (token {request.hold_token}) was ended before it was applied: {fence.get('why')}"
    )
    return SwitchOutcome.REVOKED, why


def not_rehearsable(current: JobSpec, new: JobSpec, has_query: bool) -> str | None:
    """Why this driver cannot build ``new``'s query as a new driver would (None: it can)."""
    if not has_query or new.application or new.source is None:
        return "the job's own application builds its query: only a new driver can"
    if new.transform is not None and new.transform.entrypoint:
        return "a Python transform is loaded once per driver: only a new driver loads its new code"
    if new.source != current.source:
        return "the source changed: only a new driver reads it with its connections"
    return None


def gated_target(new: JobSpec, request: SwitchRequest) -> tuple[JobSpec, str, str | None]:
    """What a switch starts once the query stopped: ``new``, unless it is synchronous, gated, and the stopped
    checkpoint is not safe for it (then ``new`` with async on at interval 0); the outcome, and the gate's reason."""
    if not request.require_sync_safe or new.async_progress.enabled:
        return new, SwitchOutcome.SWITCHED, None
    inspection = inspect_checkpoint(new.checkpoint)
    _log.info(
        "gate: latest offset %s, latest commit %s; %s",
        inspection.latest_offset,
        inspection.latest_commit,
        inspection.reason,
    )
    if inspection.sync_restart_safe:
        return new, SwitchOutcome.SWITCHED, inspection.reason
    fallback = deep_merge(new.to_mapping(), {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}})
    return parse_spec(fallback), SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0, inspection.reason
