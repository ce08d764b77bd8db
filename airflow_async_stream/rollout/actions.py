"""What each planned action does to one job (unchanged, deploy, update with its rehearsal, retire, refuse,
safe_disable), through the Step that carries the plan item, the job's control area, the settings and the
holder; a deploy or update counts only once it commits batches."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from airflow_async_stream.decision.needs import How
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
from airflow_async_stream.driver.start import wait_until_running
from airflow_async_stream.exceptions import (
    AsyncStreamError,
    ChangeNotTakenError,
    HoldRevokedError,
    NotSwitchableError,
    SwitchError,
    SwitchFailedError,
    SwitchRefusedError,
)
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.rollout.observed import read_job
from airflow_async_stream.rollout.planner import PlanItem
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.commits import wait_for_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import UP_STATES, Deployment, State, Status
from airflow_async_stream.state.stopped import BY_FILE
from airflow_async_stream.switch.request import rehearse, switch_in_place
from airflow_async_stream.waits import Log

__all__ = ["ACTIONS", "ApplySettings", "Before", "REHEARSAL_TIMEOUT_S", "Step", "desired_spec", "running_deployment"]


#: How long the running driver may take to build a new query it is asked to rehearse.
REHEARSAL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ApplySettings:
    """Where the plan came from, and the time limits of each step."""

    folder: str
    deploy: DeploySettings
    wait_timeout_s: float = 300.0
    confirm_batches: int = 2


class Before:
    """What the job ran, and its last stable spec, before this step changed anything."""

    def __init__(self, control: ControlArea, name: str) -> None:
        job = read_job(name, control)
        self.stable_spec = job.stable_spec
        self.was_running = job.state in UP_STATES
        self.deployed_spec = job.spec

    def rollback_target(self) -> tuple[dict[str, Any], str] | None:
        """The spec to go back to, and the control-area file it was read from (state/issued.py checks it)."""
        if self.stable_spec:
            return dict(self.stable_spec), ControlArea.STABLE
        return (dict(self.deployed_spec), ControlArea.SPEC) if self.was_running and self.deployed_spec else None


@dataclass(frozen=True)
class Step:
    """One job's step: the plan item, its control area, the settings, who holds the job, where to log."""

    item: PlanItem
    control: ControlArea
    settings: ApplySettings
    holder: Holder
    log: Log

    def deploy_and_confirm(self, spec: JobSpec, redeploy: bool, batches: int) -> Deployment:
        """Deploy, then wait for ``batches`` committed after the deploy's start: up is not enough.

        A deploy that fails while the job's driver still runs as before (it failed before stopping it)
        raises ChangeNotTakenError.
        """
        deploy = replace(self.settings.deploy, redeploy=redeploy)
        running = running_deployment(self.control)
        try:
            record = deploy_job(spec, self.holder, deploy, log=self.log)
        except HoldRevokedError:
            raise
        except AsyncStreamError as exc:
            if running is not None and running_deployment(self.control) == running:
                raise ChangeNotTakenError(
                    f"the new spec was not deployed ({exc}); deployment {running} runs as before"
                ) from exc
            raise
        wait_for_commits(spec.checkpoint, record.start_batch, batches, self.settings.wait_timeout_s, self.log)
        return record

    def stop(self, reason: str) -> Status | None:
        return stop_job(self.control, self.holder, self.settings.deploy, reason, log=self.log).status

    def safe_disable(self) -> SafeDisable:
        """The migration of this job to its desired (synchronous) spec, each wait bounded like the rollout's."""
        return SafeDisable(
            desired_spec(self.item),
            self.holder,
            self.settings.deploy,
            wait_timeout_s=self.settings.wait_timeout_s,
            log=self.log,
        )


def running_deployment(control: ControlArea) -> str | None:
    """The deployment whose live driver runs the job's query now, with no stop asked of it."""
    status = control.read_status()
    if status is None or status.state != State.RUNNING or not liveness(status).live:
        return None
    return None if control.read_json(ControlArea.STOP_REQUEST) else status.deployment_id


def desired_spec(item: PlanItem) -> JobSpec:
    assert item.desired_spec is not None
    return parse_spec(item.desired_spec)


def _unchanged(step: Step) -> dict[str, Any]:
    if not step.item.needs_confirmation:
        return {"outcome": "unchanged"}
    deployment = step.control.read_deployment()
    assert deployment is not None, f"{step.item.job}: confirming a deployment that has no record"
    assert step.item.checkpoint is not None
    settings = step.settings
    # A deploy whose task died before its driver reported (a crashed run): wait for it, never redeploy.
    wait_until_running(
        step.control,
        deployment.deployment_id,
        deployment.driver,
        settings.deploy.startup_timeout_s,
        step.log,
    )
    wait_for_commits(
        step.item.checkpoint, deployment.start_batch, settings.confirm_batches, settings.wait_timeout_s, step.log
    )
    return {"outcome": "confirmed", "deployment_id": deployment.deployment_id}


def _deploy(step: Step) -> dict[str, Any]:
    record = step.deploy_and_confirm(desired_spec(step.item), False, step.settings.confirm_batches)
    return {"outcome": "done", "deployment_id": record.deployment_id}


def _update(step: Step) -> dict[str, Any]:
    spec, settings = desired_spec(step.item), step.settings
    if step.item.how == How.IN_PLACE:
        try:
            switch = switch_in_place(
                step.control,
                spec,
                holder=step.holder,
                timeout_s=settings.deploy.startup_timeout_s,
                graceful_timeout_s=settings.deploy.stop_graceful_timeout_s,
                reason=f"rollout of {settings.folder}",
                log=step.log,
            )
        except (NotSwitchableError, SwitchRefusedError) as exc:
            step.log.info("%s: not switched in place (%s): a graceful stop and redeploy", step.item.job, exc)
        else:
            wait_for_commits(
                spec.checkpoint, switch.committed_before, settings.confirm_batches, settings.wait_timeout_s, step.log
            )
            return {
                "outcome": "done",
                "deployment_id": switch.deployment_id,
                "how": How.IN_PLACE,
                "pause_s": switch.pause_s,
            }
    _rehearse_first(step, spec)
    record = step.deploy_and_confirm(spec, True, settings.confirm_batches)
    return {"outcome": "done", "deployment_id": record.deployment_id, "how": How.RESTART}


def _rehearse_first(step: Step, spec: JobSpec) -> None:
    """Before the old driver is stopped for a new one, it builds the new query: what Spark rejects (a column
    that does not exist) fails the change there (SwitchFailedError), with the job untouched."""
    try:
        record = rehearse(
            step.control,
            spec,
            holder=step.holder,
            timeout_s=REHEARSAL_TIMEOUT_S,
            reason=f"rollout of {step.settings.folder}: rehearsal",
            log=step.log,
        )
    except SwitchFailedError:
        raise
    except SwitchError as exc:  # no answer: the update goes on as planned, unrehearsed
        step.log.info("%s: the running driver did not rehearse the change (%s)", step.item.job, exc)
        return
    if record is not None:
        step.log.info("%s: rehearsed by the running driver: %s: %s", step.item.job, record.outcome, record.reason)


def _retire(step: Step) -> dict[str, Any]:
    status = step.stop(f"retired: gone from {step.settings.folder}")
    return {"outcome": "done", "final_state": status.state if status else None}


def _suspend(step: Step) -> dict[str, Any]:
    """Stop the job gracefully as its file's suspend (recorded first: the supervisor leaves it down)."""
    outcome = stop_job(
        step.control,
        step.holder,
        step.settings.deploy,
        f"suspended by {step.settings.folder}",
        log=step.log,
        on_purpose=(BY_FILE, step.settings.folder),
    )
    return {"outcome": "done", "final_state": outcome.status.state if outcome.status else None}


def _refuse(step: Step) -> dict[str, Any]:
    step.log.warning("%s: change refused, the job is left as it runs: %s", step.item.job, step.item.reason)
    return {"outcome": "refused"}


def _safe_disable(step: Step) -> dict[str, Any]:
    """The migration's steps in order (safe_disable_steps.py), resumed past the gate after a crashed run."""
    stages = run_safe_disable(step.safe_disable())
    return {
        "outcome": "done",
        "deployment_id": stages[-1].deployment_id,
        "stages": [stage.to_json() for stage in stages],
    }


ACTIONS = {
    "unchanged": _unchanged,
    "deploy": _deploy,
    "update": _update,
    "retire": _retire,
    "refuse": _refuse,
    "safe_disable": _safe_disable,
    "suspend": _suspend,
}
