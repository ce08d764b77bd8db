"""The restart policy: what the supervisor does about one job's health, decided from records alone.

A job that is down (crashed, failed to start) or stalled with ``health.on_stall: restart`` is restarted after
its backoff (``restart.backoff``, doubled at each restart within ``restart.within``, at most
``restart.max_backoff``), unless a person stopped it or its file suspends it (never undone), its policy is
``never``, a restart already answered that deployment, or ``restart.max_restarts`` restarts within the window
were made already: then it is ``crash_looping`` and left for a person. What a person must look at (a crash loop,
a stall with ``on_stall: alert``, a job left down by ``never``, a restart that failed) is named in the decision's
``alert``, every time the job is looked at while it lasts (alerts.py says it once). The backoff runs from when
the job went down, or from when the supervisor first saw it down if that is earlier (its ledger): a driver's
records, which anyone writing the control area can rewrite, cannot push a restart ever later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from airflow_async_stream.insight.health import DOWN, Health, Verdict
from airflow_async_stream.spec.health import HealthSpec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import now
from airflow_async_stream.state.stopped import Stopped, stopped_on_purpose
from airflow_async_stream.supervise.record import Supervision, read_supervision
from airflow_async_stream.supervise.recover import recovery_spec

__all__ = ["Answer", "Case", "Response", "case_for", "respond"]


class Response(StrEnum):
    NOTHING = "nothing"  # nothing is wrong, or it was answered already
    LEAVE = "leave"  # something is wrong, and by decision it stays so (a person's stop, a suspend, never, alert)
    WAIT = "wait"  # a restart, once its backoff has passed
    RESTART = "restart"
    CRASH_LOOPING = "crash_looping"


@dataclass(frozen=True)
class Answer:
    """The policy's answer for one job: its response and why."""

    act: Response
    reason: str
    #: For WAIT: how long until the restart is due.
    wait_s: float = 0.0
    #: For WAIT and RESTART: how many restarts the window held before this one.
    restarts_before: int = 0
    #: What a person must look at (alerts.py says it once): crash_looping, stalled, left_down, restart_failed,
    #: untrusted_spec (act.py).
    alert: str | None = None


@dataclass(frozen=True)
class Case:
    """One job as the supervisor sees it: its verdict, the deployment it is about, its policy and records."""

    health: Health
    deployment_id: str | None
    restart: Restart
    on_stall: str = "alert"
    suspended: bool = False
    stopped: Stopped | None = None
    supervision: Supervision = Supervision()
    #: The driver's own restarts of its query (status ``query_restarts``), counted with the supervisor's.
    query_restarts: tuple[float, ...] = ()
    #: When the supervisor first saw this deployment down or stalled (its ledger).
    seen_down: float | None = None


def case_for(
    control: ControlArea, health: Health, deployment_id: str | None, desired: Mapping[str, JobSpec] | None = None
) -> Case:
    """A job as the policy sees it: ``health`` of ``deployment_id``; for a job that is down or stalled, the
    policy of the spec a restart would run (recover.recovery_spec: its desired folder's, else the copy the
    Airflow side kept, never the control area's alone: UntrustedSpecError), a stop on purpose, the supervisor's
    record and the driver's own restarts of its query."""
    if health.verdict not in DOWN and health.verdict != Verdict.STALLED:
        return Case(health, deployment_id, Restart())  # nothing to decide: no policy read
    spec, _ = recovery_spec(control, desired)
    status = control.read_status()
    return Case(
        health,
        deployment_id,
        spec.restart or Restart(),
        (spec.health or HealthSpec()).on_stall,
        spec.suspended,
        stopped_on_purpose(control),
        read_supervision(control),
        tuple(status.query_restarts) if status else (),
        ledger.down_since(control, deployment_id, now()),
    )


def respond(case: Case, at: float) -> Answer:
    """What to do about ``case`` at ``at`` (see the module docstring)."""
    verdict = case.health.verdict
    if verdict not in DOWN and verdict != Verdict.STALLED:
        return Answer(Response.NOTHING, f"{verdict}: nothing to do")
    if verdict == Verdict.STALLED and case.on_stall != "restart":
        return Answer(
            Response.LEAVE,
            "stalled, and health.on_stall is alert: an incident for a person; the driver runs on",
            alert="stalled",
        )
    if case.stopped is not None:
        return Answer(Response.LEAVE, f"{case.stopped.describe()}: never restarted by the supervisor")
    if case.suspended:
        return Answer(Response.LEAVE, "its spec says state: suspended")
    record = case.supervision
    answered = record.answered(case.deployment_id)
    if answered is not None and answered.get("error") and not answered.get("deployment_id"):
        return Answer(Response.NOTHING, f"its restart failed: {answered['error']}", alert="restart_failed")
    if answered is not None:
        return Answer(
            Response.NOTHING, f"restarted already (as deployment {answered.get('deployment_id') or 'launching'})"
        )
    if record.crash_looping and record.crash_looping == case.deployment_id:
        return Answer(
            Response.NOTHING, "crash_looping already: no more restarts until a person looks", alert="crash_looping"
        )
    policy = case.restart
    if policy.policy == "never":
        return Answer(
            Response.LEAVE, f"{verdict}, and restart.policy is never: left down for a person", alert="left_down"
        )
    recent = record.counted(policy.within_s, case.query_restarts, at)
    if recent >= policy.max_restarts:
        return Answer(
            Response.CRASH_LOOPING,
            f"{verdict} after {recent} restart{'' if recent == 1 else 's'} within {policy.within} "
            f"(restart.max_restarts {policy.max_restarts}): crash_looping, no more restarts until a person looks",
            alert="crash_looping",
        )
    due = min(case.health.since or at, case.seen_down or at) + policy.backoff_s(recent)
    if due > at:
        return Answer(
            Response.WAIT,
            f"{verdict}: restart {recent + 1} within {policy.within}, due in {due - at:.0f} s (backoff)",
            due - at,
            recent,
        )
    return Answer(Response.RESTART, f"{verdict}: restart {recent + 1} within {policy.within}", 0.0, recent)
