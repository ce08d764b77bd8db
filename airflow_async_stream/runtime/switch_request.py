"""A switch request as the driver reads it: one left from a driver before is abandoned, one whose hold a forced
stop ended is refused, and one that cannot be rehearsed on this query says why."""

from __future__ import annotations

import logging

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token
from airflow_async_stream.state.records import SwitchAccount, SwitchOutcome, SwitchRequest

_log = logging.getLogger(__name__)

__all__ = ["abandon_stale_request", "not_rehearsable", "revoked_by"]


def abandon_stale_request(control: ControlArea, deployment_id: str) -> None:
    """At a driver's start: a request addressed to an earlier deployment is never applied (that driver may
    have applied part of it before it died); say so in reconfiguration.json and remove it."""
    try:
        request = control.read_switch_request()
    except ControlAreaError as exc:
        _log.warning("ignoring an unreadable switch request: %s", exc)
        control.remove(ControlArea.SWITCH_REQUEST)
        return
    if request is None or request.deployment_id == deployment_id:
        return
    previous = control.read_switch_account()
    phase = previous.phase if previous and previous.request_id == request.request_id else "not started"
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
    control.remove(ControlArea.SWITCH_REQUEST)
    _log.info("switch request %s of deployment %s abandoned", request.request_id, request.deployment_id)


def revoked_by(control: ControlArea, request: SwitchRequest) -> str | None:
    """Why the request must not be applied: the hold it was asked under ended since (a forced stop, or its
    holder's hold ended and another holder took the job: nobody awaits the request any more)."""
    if request.hold_token is None:  # asked by an earlier release
        return None
    token = current_token(control)
    if token == request.hold_token:
        return None
    fence = control.read_json(ControlArea.FENCE) or {}
    return (
        f"the hold it was asked under (token {request.hold_token}) was ended before it was applied: {fence.get('why')}"
    )


def not_rehearsable(current: JobSpec, new: JobSpec, has_query: bool) -> str | None:
    """Why this driver cannot build ``new``'s query as a new driver would (None: it can)."""
    if not has_query or new.application or new.source is None:
        return "the job's own application builds its query: only a new driver can"
    if new.transform is not None and new.transform.entrypoint:
        return "a Python transform is loaded once per driver: only a new driver loads its new code"
    if new.source != current.source:
        return "the source changed: only a new driver reads it with its connections"
    return None
