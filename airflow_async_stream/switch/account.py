"""The driver's account of a switch request: awaited phase by phase, told in words, and a timeout that says
which phase the driver reached (an idle source is not a failure)."""

from __future__ import annotations

import time

from airflow_async_stream.exceptions import (
    SwitchError,
    SwitchTimeoutError,
)
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import Status
from airflow_async_stream.state.requests import SwitchAccount, SwitchPhase, SwitchRequest
from airflow_async_stream.waits import Log, WaitLog

__all__ = ["await_account", "describe", "phases_passed"]


def await_account(control: ControlArea, request: SwitchRequest, timeout_s: float, log: Log) -> SwitchAccount:
    """Poll the driver's account until the switch is settled; log each phase as it is reached."""
    deadline = time.monotonic() + timeout_s
    poll = 0.05 if control.is_local else 0.5
    told: set[str] = set()
    record = None
    say = WaitLog(log, f"switch {request.request_id}: waiting for the driver's account", timeout_s)
    while True:
        current = control.read_switch_account()
        if current is not None and current.request_id == request.request_id:
            record = current
            for phase in phases_passed(record):
                if phase not in told:
                    told.add(phase)
                    log.info("switch %s: %s", request.request_id, describe(record.but(phase=phase)))
            if record.settled:
                return record
        status = control.read_status()
        if record is not None and record.phase == SwitchPhase.STARTED and _idle_since(status, record.started_at):
            log.info(
                "switch %s: the new query runs; its source has no new data, so no pause to measure yet",
                record.request_id,
            )
            return record
        if status is None or status.deployment_id != request.deployment_id or not liveness(status).live:
            phase = record.phase if record else "before it read the request"
            raise SwitchError(
                f"deployment {request.deployment_id} ended during the switch ({phase}); the checkpoint is as "
                "Spark left it and the next deploy refuses the request: deploy the job again"
            )
        if time.monotonic() > deadline:
            return _timed_out(control, request, record, timeout_s)
        say(f"phase {record.phase}" if record else "the driver has not read the request yet")
        time.sleep(poll)


def phases_passed(record: SwitchAccount) -> list[str]:
    """Every phase the driver's account shows it went through, in order, up to its current one.

    A poll can miss a short phase (a switch is stopped for a few hundredths of a second); the account's own
    fields say it was passed: ``stopped_at`` once the query stopped, ``query_run_id`` once the new query started.
    A refused request goes straight to ``done``.
    """
    passed = {
        SwitchPhase.STOPPING: record.stopped_at is not None,
        SwitchPhase.STOPPED: record.stopped_at is not None,
        SwitchPhase.STARTED: record.query_run_id is not None,
    }
    order = [str(phase) for phase in SwitchPhase]
    earlier = order[: order.index(record.phase)] if record.phase in order else []
    return [phase for phase in earlier if passed[SwitchPhase(phase)]] + [record.phase]


def _idle_since(status: Status | None, started_at: float | None) -> bool:
    """The driver says the query started at ``started_at`` has found its source without new data."""
    return bool(status and status.source_idle and started_at and (status.idle_at or 0) > started_at)


def _timed_out(
    control: ControlArea, request: SwitchRequest, record: SwitchAccount | None, timeout_s: float
) -> SwitchAccount:
    if record is not None and record.phase == SwitchPhase.STARTED:
        return record  # switched; the source gave the new query no batch yet
    if record is None:  # never picked up: withdraw it, so it is not applied after we gave up
        pending = control.read_switch_request()
        if pending is not None and pending.request_id == request.request_id:
            control.remove(ControlArea.SWITCH_REQUEST)
    raise SwitchTimeoutError(
        f"deployment {request.deployment_id} did not settle the switch within {timeout_s:.0f} s "
        f"({record.phase if record else 'never picked up: request withdrawn'})"
    )


def describe(record: SwitchAccount) -> str:
    if record.phase == SwitchPhase.DONE and record.pause_s is not None:
        return f"{record.outcome}, first batch {record.first_batch_after}, pause {record.pause_s:.2f} s"
    if record.phase == SwitchPhase.DONE:
        return f"{record.outcome}: {record.reason}"
    if record.phase == SwitchPhase.STARTED:
        return f"{record.outcome}, new query run {record.query_run_id} started, waiting for its first batch"
    return str(record.phase)
