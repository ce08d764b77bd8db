"""What the supervisor does about one job: look (the health verdict, the doctor's diagnosis, recorded once),
decide (policy.py), and act under the job's hold, fenced, so it never fights a migration, a rollout or a
forced stop: restart it (recover.py), declare it crash looping (an incident that needs a person), or leave it.

Every action is decided again under the hold, from records read under it: a second supervisor run for the same
crash (a repeated event, a retried task) finds the restart recorded and does nothing.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError, JobHeldError
from airflow_async_stream.insight.checkup import Checkup, check_up
from airflow_async_stream.migrations.safe_disable_steps import migration_hold_ttl_s
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Grant, Holder, held
from airflow_async_stream.state.incidents import Incident, Kind, record_incident
from airflow_async_stream.state.records import SUFFIX, now
from airflow_async_stream.supervise.policy import Act, Case, Decision, case_for, decide
from airflow_async_stream.supervise.record import read_supervision, write_supervision
from airflow_async_stream.supervise.recover import recover

__all__ = ["Outcome", "SuperviseSettings", "supervise_job"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuperviseSettings:
    """How the supervisor deploys (the launcher, its time limits) and how long a restart may take to commit."""

    deploy: DeploySettings = field(default_factory=DeploySettings)
    wait_timeout_s: float = 300.0
    confirm_batches: int = 2


@dataclass(frozen=True)
class Outcome:
    """What the supervisor found and did about one job."""

    control_url: str
    verdict: str
    act: str
    reason: str
    diagnosis: str | None = None
    deployment_id: str | None = None
    #: For ``wait``: seconds until the restart is due.
    wait_s: float = 0.0
    #: A person must look (crash looping, or a restart that failed).
    needs_person: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _look(control: ControlArea) -> tuple[Checkup, Case, Decision]:
    """A look at the job (the crash recorded once, with the doctor's diagnosis), its case and the decision."""
    looked = check_up(control, control.url.removesuffix(SUFFIX))
    status, deployment = looked.status, looked.deployment
    deployment_id = status.deployment_id if status else (deployment.deployment_id if deployment else None)
    case = case_for(control, looked.health, deployment_id)
    return looked, case, decide(case, now())


def _diagnosis(looked: Checkup, deployment_id: str | None) -> str | None:
    newest = next((i for i in looked.incidents if i.deployment_id == deployment_id), None)
    return newest.diagnosis if newest else None


def supervise_job(
    control: ControlArea, holder: Holder, settings: SuperviseSettings, log: logging.Logger = _log
) -> Outcome:
    """Look at one job and do what its policy says (see the module docstring)."""
    looked, case, decision = _look(control)
    outcome = Outcome(control.url, str(case.health.verdict), str(decision.act), decision.reason,
                      _diagnosis(looked, case.deployment_id), case.deployment_id, decision.wait_s)  # fmt: skip
    if decision.act in (Act.NOTHING, Act.LEAVE, Act.WAIT):
        log.info("%s: %s: %s", control.url, decision.act, decision.reason)
        return outcome
    ttl = migration_hold_ttl_s(settings.deploy, settings.wait_timeout_s, waits=3)
    try:
        with held(control, holder, ttl) as grant:
            return _act(control, grant, holder, settings, outcome, log)
    except JobHeldError as exc:
        log.info("%s: %s", control.url, exc)
        return Outcome(control.url, outcome.verdict, "held", f"{exc}: looked at again when the hold ends",
                       outcome.diagnosis, case.deployment_id)  # fmt: skip


def _act(
    control: ControlArea, grant: Grant, holder: Holder, settings: SuperviseSettings, seen: Outcome,
    log: logging.Logger,
) -> Outcome:  # fmt: skip
    """Decide again from records read under the hold, then act."""
    _, case, decision = _look(control)
    outcome = Outcome(control.url, str(case.health.verdict), str(decision.act), decision.reason, seen.diagnosis,
                      case.deployment_id, decision.wait_s)  # fmt: skip
    if decision.act == Act.CRASH_LOOPING:
        return _crash_looping(control, grant, case, decision, outcome, log)
    if decision.act != Act.RESTART:
        return outcome
    restart = {"at": now(), "answered": case.deployment_id, "verdict": str(case.health.verdict),
               "reason": decision.reason}  # fmt: skip
    write_supervision(control, grant, case.supervision.with_restart(restart))  # counted before it is tried
    log.warning("%s: %s; %s", control.url, case.health.reason, decision.reason)
    try:
        done = recover(control, holder, settings.deploy, settings.wait_timeout_s, settings.confirm_batches, log)
    except AsyncStreamError as exc:
        write_supervision(control, grant, read_supervision(control).with_restart({**restart, "error": str(exc)[:400]}))
        deployment = control.read_deployment()
        launched = deployment is not None and deployment.deployment_id != case.deployment_id
        # A new driver that failed is seen going down like any other; one never launched needs a person.
        return Outcome(control.url, outcome.verdict, "restart_failed", f"{decision.reason}: {exc}",
                       seen.diagnosis, case.deployment_id, needs_person=not launched)  # fmt: skip
    write_supervision(control, grant, read_supervision(control).with_restart(
        {**restart, "deployment_id": done.deployment_id, "how": done.how, "why": done.why}))  # fmt: skip
    return Outcome(control.url, outcome.verdict, "restarted", f"{decision.reason}: {done.why} as deployment "
                   f"{done.deployment_id}", seen.diagnosis, done.deployment_id)  # fmt: skip


def _crash_looping(
    control: ControlArea, grant: Grant, case: Case, decision: Decision, outcome: Outcome, log: logging.Logger
) -> Outcome:
    at = now()
    write_supervision(control, grant, case.supervision.but(crash_looping=case.deployment_id, crash_looping_at=at))
    record_incident(control, Incident(
        kind=Kind.CRASH_LOOP, deployment_id=case.deployment_id, since=at, error=case.health.reason,
        diagnosis=outcome.diagnosis or case.health.reason,
        cure="find the cause in the driver log and `airflow-async-stream doctor`; fix it, then resume the job "
        "(`airflow-async-stream resume JOB`, or a deploy)", action="none: a person must look",
    ))  # fmt: skip
    log.error("%s: %s", control.url, decision.reason)
    return Outcome(control.url, outcome.verdict, str(Act.CRASH_LOOPING), decision.reason, outcome.diagnosis,
                   case.deployment_id, needs_person=True)  # fmt: skip
