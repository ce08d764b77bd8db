"""Ask a job's running driver to switch its query to a new spec in place, and wait for its account.

The driver (runtime/switch.py) stops its query between micro-batches and starts the new one in the same
SparkSession, on the same checkpoint: about a second of pause where a redeploy costs a new driver. A change
that needs a new driver is refused here, before anything is asked, and again by the driver before it stops
anything; the caller then redeploys. The request is made under the job's hold, like a deploy.
"""

from __future__ import annotations

import json
import logging
import socket
import uuid
from dataclasses import replace

from airflow_async_stream.decision.needs import Decision, Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.exceptions import (
    ControlAreaError,
    HoldRevokedError,
    NotSwitchableError,
    SwitchError,
    SwitchFailedError,
    SwitchRefusedError,
)
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import hold, issued
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import DagRunLookup, Holder
from airflow_async_stream.state.incidents import Kind, record_change
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State, Status, now
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome, SwitchRequest
from airflow_async_stream.switch.account import await_account
from airflow_async_stream.waits import Log

__all__ = ["issued_running_spec", "rehearse", "running_spec", "switch_in_place", "why_not_in_place"]

_log = logging.getLogger(__name__)
#: Beyond the wait itself, what the hold allows for the graceful stop and the new query's start.
_HOLD_MARGIN_S = 60.0


def running_spec(control: ControlArea) -> JobSpec:
    """The spec the job's driver runs now (spec.json: the deploy's, or the latest switch's), as the control area
    says: to judge a change against, never to derive what runs from (issued_running_spec)."""
    try:
        raw = control.read_bytes(ControlArea.SPEC)
    except FileNotFoundError:
        raise NotSwitchableError(f"{control.url}: no {ControlArea.SPEC}: the job was never deployed") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ControlAreaError(f"{control.path(ControlArea.SPEC)} is not JSON: {exc}") from None
    return parse_spec(data, control.path(ControlArea.SPEC))


def issued_running_spec(control: ControlArea) -> JobSpec:
    """The running spec as the Airflow side kept it when it handed it over (state/issued.py): what a change
    is made from (UntrustedSpecError, recorded, when it never handed that spec over)."""
    return issued.issued(control, running_spec(control).to_mapping(), control.path(ControlArea.SPEC))


def switch_in_place(
    control: ControlArea,
    spec: JobSpec,
    *,
    require_sync_safe: bool = False,
    decision: Decision | None = None,
    holder: Holder | None = None,
    dag_run_lookup: DagRunLookup | None = None,
    timeout_s: float = 120.0,
    graceful_timeout_s: float = 60.0,
    reason: str = "switch",
    log: Log = _log,
) -> SwitchAccount:
    """Switch the job's query to ``spec`` without a new driver; return the driver's account of the switch
    (``outcome``, ``pause_s``; ``phase`` is ``started`` when the source had no new data for the new query, or
    no batch ran within ``timeout_s``).

    Turning async off needs ``require_sync_safe``: a synchronous ``spec`` then starts only if the stopped
    checkpoint is safe for it, else the job runs on at interval 0 (``kept_async_at_interval_0``, the reason in
    ``reason``). Raises SwitchRefusedError (nothing stopped) when the change needs a new driver,
    NotSwitchableError when no driver of this release runs the job, SwitchFailedError when the new query did
    not start (the previous configuration runs again), SwitchError if the driver died, or a timeout.
    ``decision``: the caller's, of ``spec`` on the job as just observed (else it is made here).
    """
    deployment_id = _switchable_deployment(control, spec, require_sync_safe, decision=decision)
    request = SwitchRequest(
        request_id=uuid.uuid4().hex,
        deployment_id=deployment_id,
        spec=spec.to_mapping(),
        require_sync_safe=require_sync_safe,
        reason=reason,
        graceful_timeout_s=graceful_timeout_s,
    )
    issued.keep(spec, deployment_id, "switch")  # before the driver is asked: the only copy run again
    how = "to switch in place" + (", synchronous only if the checkpoint is safe" if require_sync_safe else "")
    hold_s = timeout_s + graceful_timeout_s + _HOLD_MARGIN_S
    record = _ask(control, request, holder, dag_run_lookup, hold_s, timeout_s, how, log)
    if record.outcome == SwitchOutcome.REVOKED:
        raise HoldRevokedError(f"deployment {deployment_id} did not switch: {record.reason}")
    if record.outcome == SwitchOutcome.REFUSED:
        record_change(
            control,
            Kind.CHANGE_REFUSED,
            record.reason or "refused",
            f"the driver refused a switch in place ({reason})",
            "nothing stopped; the query runs as it was",
        )
        raise SwitchRefusedError([("(driver)", record.reason or "refused")], f"deployment {deployment_id}")
    if record.outcome == SwitchOutcome.FAILED:
        said = _failed(deployment_id, record)
        record_change(
            control,
            Kind.CHANGE_FAILED,
            record.reason or "failed",
            f"a switch in place failed ({reason}): {said}",
            "the query runs its previous configuration",
        )
        raise SwitchFailedError(said)
    return record


def _failed(deployment_id: str, record: SwitchAccount) -> str:
    if record.stopped_at is None:
        return (
            f"deployment {deployment_id} did not switch: Spark rejects the new configuration ({record.reason}); "
            "its query runs on as it was, never stopped"
        )
    return (
        f"deployment {deployment_id} could not start the new query and runs its previous configuration again: "
        f"{record.reason}"
    )


def rehearse(
    control: ControlArea,
    spec: JobSpec,
    *,
    holder: Holder | None = None,
    dag_run_lookup: DagRunLookup | None = None,
    timeout_s: float = 60.0,
    reason: str = "rehearse",
    log: Log = _log,
) -> SwitchAccount | None:
    """Ask the job's running driver to build ``spec``'s query in a session of its own, without starting it
    or stopping its own: Spark's analysis (a column that does not exist, a setting it rejects) is known
    before the old driver is stopped for a change that needs a new one.

    None when no driver of this release runs the job; the driver's account otherwise (``rehearsed``, or
    ``refused`` when it cannot build that query itself). Raises SwitchFailedError when Spark rejects it.
    """
    try:
        deployment_id = _switchable_deployment(control, spec, require_sync_safe=False, judge=False)
    except NotSwitchableError:
        return None
    request = SwitchRequest(
        request_id=uuid.uuid4().hex, deployment_id=deployment_id, spec=spec.to_mapping(), reason=reason, rehearse=True
    )
    record = _ask(control, request, holder, dag_run_lookup, timeout_s + _HOLD_MARGIN_S, timeout_s, "to rehearse", log)
    if record.outcome == SwitchOutcome.REVOKED:
        raise HoldRevokedError(f"deployment {deployment_id} did not rehearse: {record.reason}")
    if record.outcome == SwitchOutcome.FAILED:
        raise SwitchFailedError(
            f"deployment {deployment_id} rehearsed the change and Spark rejects it ({record.reason}); the job "
            "runs on as it was, never stopped"
        )
    return record


def _ask(
    control: ControlArea,
    request: SwitchRequest,
    holder: Holder | None,
    dag_run_lookup: DagRunLookup | None,
    hold_s: float,
    timeout_s: float,
    how: str,
    log: Log,
) -> SwitchAccount:
    """Write ``request`` under the job's hold (fenced) and await the driver's settled account of it."""
    holder = holder or Holder.this_process("switch")
    with hold.held(control, holder, hold_s, dag_run_lookup) as grant:
        request = replace(request, requested_at=now(), requested_from=socket.gethostname(), hold_token=grant.token)
        with grant.fence.guarded():  # a forced stop since the take: no request; one after: the driver refuses it
            control.write_switch_request(request)
        log.info("Asked deployment %s %s (request %s)", request.deployment_id, how, request.request_id)
        try:
            return await_account(control, request, timeout_s, log)
        except SwitchError:
            grant.fence.check()  # the driver ended because a forced stop ended this hold: say so
            raise


def why_not_in_place(control: ControlArea, spec: JobSpec, require_sync_safe: bool = False) -> str | None:
    """Why the job's running driver cannot switch to ``spec`` in place (None: it can, as far as can be known
    without asking it; the driver may still refuse a ``spark.sql`` key Spark sets only at session start)."""
    try:
        _switchable_deployment(control, spec, require_sync_safe)
    except (NotSwitchableError, SwitchRefusedError) as exc:
        return str(exc)
    return None


def not_running(control: ControlArea, status: Status | None = None) -> str | None:
    """Why the job has no running driver to switch (None: it runs); ``status`` as read, else read here."""
    status = status or control.read_status()
    judged = liveness(status)
    if status is None or not judged.live or status.state != State.RUNNING:
        state = status.state if status else "never deployed"
        return f"{control.url}: the job is not running ({state}; {judged.reason}): deploy it"
    return None


def _switchable_deployment(
    control: ControlArea, spec: JobSpec, require_sync_safe: bool, judge: bool = True, decision: Decision | None = None
) -> str:
    """The running deployment to ask, after the checks that need no driver (``judge``: of the change too, by
    ``decision`` or one made here)."""
    observation = observe(control)
    status = observation.status
    why = not_running(control, status)
    if why is not None or status is None:
        raise NotSwitchableError(why or control.url)
    if status.configuration is None:
        raise NotSwitchableError(
            f"{control.url}: deployment {status.deployment_id} runs a driver that does not switch in place "
            "(an application's, which builds its query itself): redeploy it"
        )
    if observation.spec is None:
        raise NotSwitchableError(f"{control.url}: no {ControlArea.SPEC}: the job was never deployed")
    if judge:
        decision = decision or decide(observation, spec.to_mapping(), gated=require_sync_safe)
        if decision.need not in (Need.NOTHING, Need.SWITCH):
            raise SwitchRefusedError(list(decision.reasons), f"{control.url}")
        if not decision.in_place:
            raise SwitchRefusedError([("", decision.how_reason)], f"{control.url}")
    return status.deployment_id
