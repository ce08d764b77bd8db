"""What the supervisor does about one job: look (the health verdict, the doctor's diagnosis, recorded once),
decide (policy.py), and act under the job's hold, fenced, so it never fights a migration, a rollout or a
forced stop: restart it (recover.py), declare it crash looping (an incident that needs a person), or leave it.

Every action is decided again under the hold, from records read under it: a second supervisor run for the same
crash (a repeated event, a retried task) finds the restart recorded and does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError, JobHeldError, UntrustedSpecError
from airflow_async_stream.insight.checkup import Checkup, check_up
from airflow_async_stream.insight.health import UP
from airflow_async_stream.insight.read import recorded_spec
from airflow_async_stream.migrations.safe_disable_steps import migration_hold_ttl_s
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Grant, Holder, held
from airflow_async_stream.state.incidents import Incident, Kind, one_line, record_incident
from airflow_async_stream.state.records import SUFFIX, now
from airflow_async_stream.supervise.alerts import Alert, open_alerts, recovered_key, say_once
from airflow_async_stream.supervise.policy import Answer, Case, Response, case_for, respond
from airflow_async_stream.supervise.record import read_supervision, write_supervision
from airflow_async_stream.supervise.recover import recover
from airflow_async_stream.waits import Log

__all__ = ["Outcome", "SuperviseSettings", "supervise_job"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SuperviseSettings:
    """How the supervisor deploys (the launcher, its time limits) and how long a restart may take to commit."""

    deploy: DeploySettings = field(default_factory=DeploySettings)
    wait_timeout_s: float = 300.0
    confirm_batches: int = 2
    #: The jobs of the supervisor's desired folders by name: a restart runs a job's spec from there.
    desired: Mapping[str, JobSpec] = field(default_factory=dict)


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
    #: The job's name, and the cure its newest incident names.
    job: str = ""
    cure: str | None = None
    #: What a person must look at (policy.Answer.alert), and when it began.
    alert: str | None = None
    since: float | None = None
    #: The lines this run says (alerts.py): what needs a person, and a recovery.
    said: str | None = None
    recovered: str | None = None

    @property
    def needs_person(self) -> bool:
        return self.alert is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for a person: the job, what is wrong, the diagnosis and the cure."""
        cure = (
            self.cure
            or f"`airflow-async-stream doctor {self.job}`; fix what it names, then `airflow-async-stream resume {self.job}`"
        )
        parts = (self.reason, self.diagnosis or "none", cure)  # Spark's errors run over many lines: their first
        reason, diagnosis, cure_line = (one_line(part) for part in parts)
        return f"{self.job}: {self.alert} ({self.verdict}): {reason}; diagnosis: {diagnosis}; cure: {cure_line}"


def _look(control: ControlArea, desired: Mapping[str, JobSpec]) -> tuple[Checkup, Case, Answer]:
    """A look at the job (the crash recorded once, with the doctor's diagnosis), its case and the decision."""
    looked = check_up(control, control.url.removesuffix(SUFFIX))
    status, deployment = looked.status, looked.deployment
    deployment_id = status.deployment_id if status else (deployment.deployment_id if deployment else None)
    try:
        case = case_for(control, looked.health, deployment_id, desired)
    except UntrustedSpecError as exc:  # recorded as the job's incident: a person must look, nothing runs
        case = Case(looked.health, deployment_id, Restart())
        return looked, case, Answer(Response.NOTHING, f"not restarted: {exc}", alert="untrusted_spec")
    return looked, case, respond(case, now())


def _outcome(control: ControlArea, looked: Checkup, case: Case, decision: Answer) -> Outcome:
    newest = next((i for i in looked.incidents if i.deployment_id == case.deployment_id), None)
    spec = recorded_spec(control) or {}
    return Outcome(
        control.url,
        str(case.health.verdict),
        str(decision.act),
        decision.reason,
        newest.diagnosis or newest.error if newest else None,
        case.deployment_id,
        decision.wait_s,
        job=str(spec.get("name") or control.url),
        cure=newest.cure if newest else None,
        alert=decision.alert,
        since=case.health.since,
    )


def supervise_job(
    control: ControlArea, holder: Holder, settings: SuperviseSettings, log: Log = _log, run: str = ""
) -> Outcome:
    """Look at one job and do what its policy says (see the module docstring); with ``run`` (the Airflow run
    looking), what needs a person and a recovery are said once (alerts.py) in the outcome's ``said`` and
    ``recovered``."""
    outcome = _supervise(control, holder, settings, log)
    return _say(control, outcome, run, log) if run else outcome


def _say(control: ControlArea, outcome: Outcome, run: str, log: Log) -> Outcome:
    if outcome.alert:
        alert = Alert.of(outcome.deployment_id, outcome.alert, outcome.since, outcome.line())
        said = say_once(control, alert.key, alert.line, run)
        if said is None:
            log.info("%s: said already by an earlier run: %s", control.url, alert.line)
        return replace(outcome, said=said)
    opened = open_alerts(control, run) if outcome.verdict in UP else []
    line = f"{outcome.job}: recovered: {outcome.verdict} as deployment {outcome.deployment_id} (was {', '.join(k.split('.')[1] for k in opened)})"
    told = [s for s in [say_once(control, recovered_key(key), line, run) for key in opened] if s]
    return replace(outcome, recovered=told[0]) if told else outcome


def _supervise(control: ControlArea, holder: Holder, settings: SuperviseSettings, log: Log) -> Outcome:
    looked, case, decision = _look(control, settings.desired)
    outcome = _outcome(control, looked, case, decision)
    if decision.act in (Response.NOTHING, Response.LEAVE, Response.WAIT):
        log.info("%s: %s: %s", control.url, decision.act, decision.reason)
        return outcome
    ttl = migration_hold_ttl_s(settings.deploy, settings.wait_timeout_s, waits=3)
    try:
        with held(control, holder, ttl) as grant:
            return _act(control, grant, holder, settings, log)
    except JobHeldError as exc:
        log.info("%s: %s", control.url, exc)
        return replace(outcome, act="held", reason=f"{exc}: looked at again when the hold ends", wait_s=0.0, alert=None)


def _act(control: ControlArea, grant: Grant, holder: Holder, settings: SuperviseSettings, log: Log) -> Outcome:
    """Decide again from records read under the hold, then act."""
    looked, case, decision = _look(control, settings.desired)
    outcome = _outcome(control, looked, case, decision)
    if decision.act == Response.CRASH_LOOPING:
        return _crash_looping(control, grant, case, decision, outcome, log)
    if decision.act != Response.RESTART:
        return outcome
    restart = {
        "at": now(),
        "answered": case.deployment_id,
        "verdict": str(case.health.verdict),
        "reason": decision.reason,
    }
    write_supervision(control, grant, case.supervision.with_restart(restart))  # counted before it is tried
    log.warning("%s: %s; %s", control.url, case.health.reason, decision.reason)
    try:
        done = recover(
            control, holder, settings.deploy, settings.wait_timeout_s, settings.confirm_batches, log, settings.desired
        )
    except AsyncStreamError as exc:
        write_supervision(control, grant, read_supervision(control).with_restart({**restart, "error": str(exc)[:400]}))
        deployment = control.read_deployment()
        launched = deployment is not None and deployment.deployment_id != case.deployment_id
        # A new driver that failed is seen going down like any other; one never launched needs a person.
        return replace(
            outcome,
            act="restart_failed",
            reason=f"{decision.reason}: {exc}",
            alert=None if launched else "restart_failed",
        )
    write_supervision(
        control,
        grant,
        read_supervision(control).with_restart(
            {**restart, "deployment_id": done.deployment_id, "how": done.how, "why": done.why}
        ),
    )
    return replace(
        outcome,
        act="restarted",
        reason=f"{decision.reason}: {done.why} as deployment {done.deployment_id}",
        deployment_id=done.deployment_id,
    )


def _crash_looping(
    control: ControlArea, grant: Grant, case: Case, decision: Answer, outcome: Outcome, log: Log
) -> Outcome:
    at = now()
    write_supervision(control, grant, case.supervision.but(crash_looping=case.deployment_id, crash_looping_at=at))
    cure = (
        f"find the cause in the driver log and `airflow-async-stream doctor {outcome.job}`; fix it, then resume "
        f"the job (`airflow-async-stream resume {outcome.job}`, or a deploy)"
    )
    record_incident(
        control,
        Incident(
            kind=Kind.CRASH_LOOP,
            deployment_id=case.deployment_id,
            since=at,
            error=case.health.reason,
            diagnosis=outcome.diagnosis or case.health.reason,
            cure=cure,
            action="none: a person must look",
        ),
    )
    log.error("%s: %s", control.url, decision.reason)
    return replace(outcome, cure=cure)
