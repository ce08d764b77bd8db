"""Carry out one job's planned action, holding the job, judged by committed batches, rolled back on failure.

A ``restart`` the plan marks ``in_place`` is asked of the running driver (switch/request.py: about a second of
pause) and falls back to a graceful stop and redeploy when the driver does not switch. A deploy or restart
counts as done only when the new deployment (or the switched query) commits batches after its start; if it
does not, the job is redeployed with its last stable spec (the last one that committed batches), or with
what ran before the rollout when no stable spec is on record. A rollback never restarts synchronously
over a checkpoint the inspector calls unsafe: it then keeps async on with checkpoint interval 0. Before a
``restart`` stops the old driver, that driver builds the new query in a session of its own (a rehearsal).
A change that never took (Spark rejected it in the rehearsal or the in-place switch, or a deploy failed
before the old driver was stopped) is not rolled back: the job is left running as it was.
A failed change is remembered in ``rollout.json`` (``failed_spec``): the next plan holds that spec back.
A ``safe_disable`` runs the migration's own steps (``migrations/safe_disable_steps.py``), the ones the
TaskGroup's tasks run, and its rollback. Every outcome is written to the job's control area (``rollout.json``)
before the step ends. This module imports no operator, sensor or TaskGroup.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from airflow_async_stream.driver.commits import wait_for_commits
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
from airflow_async_stream.driver.start import wait_until_running
from airflow_async_stream.exceptions import (
    AsyncStreamError,
    ChangeNotTakenError,
    HoldRevokedError,
    JobHeldError,
    NotSwitchableError,
    RolloutError,
    SwitchError,
    SwitchFailedError,
    SwitchRefusedError,
)
from airflow_async_stream.migrations.run import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable, migration_hold_ttl_s
from airflow_async_stream.migrations.specs import at_interval_0
from airflow_async_stream.rollout.fleet import FleetIndex
from airflow_async_stream.rollout.observed import read_job
from airflow_async_stream.rollout.planner import CHANGES, IN_PLACE, RESTART, PlanItem, spec_digest
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, RunState, held
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import UP_STATES, Deployment, State, Status, now
from airflow_async_stream.switch.request import rehearse, switch_in_place

__all__ = ["ApplySettings", "apply_item"]

_log = logging.getLogger(__name__)
FAILED_OUTCOMES = frozenset({"rolled_back", "failed"})
#: How long the running driver may take to build a new query it is asked to rehearse.
REHEARSAL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ApplySettings:
    """Where the plan came from, and the time limits of each step."""

    folder: str
    deploy: DeploySettings
    wait_timeout_s: float = 300.0
    confirm_batches: int = 2


def apply_item(
    item: PlanItem,
    holder: Holder,
    settings: ApplySettings,
    run_state: RunState | None = None,
    log: logging.Logger = _log,
) -> dict[str, Any]:
    """Apply ``item``; returns its outcome record, raises RolloutError (after recording it) when it failed."""
    assert item.control_url, f"plan item for {item.job} has no control area"
    if item.held_back:  # its record of the failure stays as it is
        log.warning("%s: %s not applied: %s", item.job, item.action, item.reason)
        raise RolloutError(f"{item.job}: {item.action} not retried: {item.reason}")
    control = ControlArea(item.control_url)
    started = time.monotonic()
    outcome: dict[str, Any] = {"job": item.job, "action": item.action, "reason": item.reason, "error": None}
    # The longest action is a safe-disable with a wait after each of its deploys.
    ttl = migration_hold_ttl_s(settings.deploy, settings.wait_timeout_s, waits=3)
    index = FleetIndex.for_folder(settings.folder)
    control.ensure()
    try:
        with held(control, holder, ttl, run_state):
            step = _Step(item, control, settings, holder, log)
            before = _Before(control, item.job)
            if item.action != "retire" and not item.leaves_plan:
                # Before anything changes: a worker that dies mid-deploy leaves the job findable by every worker.
                index.record_active(item.job, item.control_url, holder.run_id)
            try:
                outcome.update(_ACTIONS[item.action](step))
            except HoldRevokedError as exc:  # a forced stop ended this step's hold: no rollback undoes it
                log.warning("%s: %s ended by a forced stop: %s", item.job, item.action, exc)
                outcome.update({"outcome": "failed", "error": str(exc)})
            except ChangeNotTakenError as exc:  # the job runs as before: nothing to undo, no restart
                log.warning("%s: %s did not take, the job is left as it runs: %s", item.job, item.action, exc)
                outcome.update({"outcome": "failed", "error": str(exc), "not_taken": True})
                outcome["failed_spec"] = spec_digest(item.desired_spec)
            except AsyncStreamError as exc:
                log.warning("%s: %s failed: %s", item.job, item.action, exc)
                outcome.update(_roll_back(step, before, str(exc)))
                if item.action in CHANGES:
                    outcome["failed_spec"] = spec_digest(item.desired_spec)
            _update_index(index, item, outcome, holder)
    except JobHeldError as exc:  # another run changes this job now: its record is not ours to overwrite
        raise RolloutError(f"{item.job}: {item.action} not applied: {exc}") from exc
    outcome["duration_s"] = round(time.monotonic() - started, 1)
    _record(control, outcome, settings, holder)
    if outcome["outcome"] in FAILED_OUTCOMES:
        raise RolloutError(f"{item.job}: {item.action} {outcome['outcome']}: {outcome['error']}")
    return outcome


class _Before:
    """What the job ran, and its last stable spec, before this step changed anything."""

    def __init__(self, control: ControlArea, name: str) -> None:
        job = read_job(name, control)
        self.stable_spec = job.stable_spec
        self.was_running = job.state in UP_STATES
        self.deployed_spec = job.spec

    def rollback_target(self) -> dict[str, Any] | None:
        if self.stable_spec:
            return dict(self.stable_spec)
        return dict(self.deployed_spec) if self.was_running and self.deployed_spec else None


@dataclass(frozen=True)
class _Step:
    """One job's step: the plan item, its control area, the settings, who holds the job, where to log."""

    item: PlanItem
    control: ControlArea
    settings: ApplySettings
    holder: Holder
    log: logging.Logger

    def deploy_and_confirm(self, spec: JobSpec, redeploy: bool, batches: int) -> Deployment:
        """Deploy, then wait for ``batches`` committed after the deploy's start: up is not enough.

        A deploy that fails while the job's driver still runs as before (it failed before stopping it)
        raises ChangeNotTakenError.
        """
        deploy = replace(self.settings.deploy, redeploy=redeploy)
        running = _running_deployment(self.control)
        try:
            record = deploy_job(spec, self.holder, deploy, log=self.log)
        except HoldRevokedError:
            raise
        except AsyncStreamError as exc:
            if running is not None and _running_deployment(self.control) == running:
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
            _spec(self.item),
            self.holder,
            self.settings.deploy,
            wait_timeout_s=self.settings.wait_timeout_s,
            log=self.log,
        )


def _running_deployment(control: ControlArea) -> str | None:
    """The deployment whose live driver runs the job's query now, with no stop asked of it."""
    status = control.read_status()
    if status is None or status.state != State.RUNNING or not liveness(status).live:
        return None
    return None if control.read_json(ControlArea.STOP_REQUEST) else status.deployment_id


def _spec(item: PlanItem) -> JobSpec:
    assert item.desired_spec is not None
    return parse_spec(item.desired_spec)


# -- the actions --------------------------------------------------------------------------------------


def _unchanged(step: _Step) -> dict[str, Any]:
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


def _deploy(step: _Step) -> dict[str, Any]:
    record = step.deploy_and_confirm(_spec(step.item), False, step.settings.confirm_batches)
    return {"outcome": "done", "deployment_id": record.deployment_id}


def _restart(step: _Step) -> dict[str, Any]:
    spec, settings = _spec(step.item), step.settings
    if step.item.switch == IN_PLACE:
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
            wait_for_commits(spec.checkpoint, switch.committed_before, settings.confirm_batches,
                             settings.wait_timeout_s, step.log)  # fmt: skip
            return {"outcome": "done", "deployment_id": switch.deployment_id, "switch": IN_PLACE,
                    "pause_s": switch.pause_s}  # fmt: skip
    _rehearse_first(step, spec)
    record = step.deploy_and_confirm(spec, True, settings.confirm_batches)
    return {"outcome": "done", "deployment_id": record.deployment_id, "switch": RESTART}


def _rehearse_first(step: _Step, spec: JobSpec) -> None:
    """Before the old driver is stopped for a new one, it builds the new query: what Spark rejects (a column
    that does not exist) fails the change there (SwitchFailedError), with the job untouched."""
    try:
        record = rehearse(step.control, spec, holder=step.holder, timeout_s=REHEARSAL_TIMEOUT_S,
                          reason=f"rollout of {step.settings.folder}: rehearsal", log=step.log)  # fmt: skip
    except SwitchFailedError:
        raise
    except SwitchError as exc:  # no answer: the restart goes on as planned, unrehearsed
        step.log.info("%s: the running driver did not rehearse the change (%s)", step.item.job, exc)
        return
    if record is not None:
        step.log.info("%s: rehearsed by the running driver: %s: %s", step.item.job, record.outcome, record.reason)


def _retire(step: _Step) -> dict[str, Any]:
    status = step.stop(f"retired: gone from {step.settings.folder}")
    return {"outcome": "done", "final_state": status.state if status else None}


def _refuse(step: _Step) -> dict[str, Any]:
    step.log.warning("%s: change refused, the job is left as it runs: %s", step.item.job, step.item.reason)
    return {"outcome": "refused"}


def _safe_disable(step: _Step) -> dict[str, Any]:
    """The migration's steps in order (safe_disable_steps.py), resumed past the gate after a crashed run."""
    status = step.control.read_status()
    switches = run_safe_disable(step.safe_disable(), status)
    return {
        "outcome": "done",
        "deployment_id": switches[-1].deployment_id,
        "switches": [switch.to_json() for switch in switches],
    }


_ACTIONS = {
    "unchanged": _unchanged,
    "deploy": _deploy,
    "restart": _restart,
    "retire": _retire,
    "refuse": _refuse,
    "safe_disable": _safe_disable,
}


def _roll_back(step: _Step, before: _Before, error: str) -> dict[str, Any]:
    """Back to the last stable spec (see the module docstring); outcome rolled_back, or failed if even that fails.

    A failed safe-disable takes the migration's own rollback: that spec with async on at interval 0.
    """
    item = step.item
    target = before.rollback_target()
    if item.action in ("retire", "refuse") or target is None:
        if item.action == "deploy":
            step.stop("rollout: the new job did not commit batches")
        return {"outcome": "failed", "error": error}
    spec = parse_spec(target)
    if item.action != "safe_disable" and not spec.async_progress.enabled:
        if not inspect_checkpoint(spec.checkpoint).sync_restart_safe:
            spec = at_interval_0(spec)
            error += "; rolled back with async on at interval 0, because a synchronous restart is not safe"
    step.log.warning("%s: rolling back to its last stable spec", item.job)
    try:
        if item.action == "safe_disable":
            migration = replace(step.safe_disable(), spec=spec)
            record = migration.roll_back(error)
            migration.wait_for_batches(record, 1)
        else:
            record = step.deploy_and_confirm(spec, True, 1)
    except AsyncStreamError as exc:
        return {"outcome": "failed", "error": f"{error}; the rollback failed too: {exc}"}
    return {"outcome": "rolled_back", "error": error, "deployment_id": record.deployment_id}


def _update_index(index: FleetIndex, item: PlanItem, outcome: dict[str, Any], holder: Holder) -> None:
    """A retired job is marked so (the next plan lists it once more); a job listed that once leaves the index."""
    assert item.control_url
    if item.action == "retire" and outcome.get("outcome") == "done":
        index.record_retired(item.job, item.control_url, holder.run_id)
    elif item.leaves_plan:
        index.forget(item.job)


def _record(control: ControlArea, outcome: dict[str, Any], settings: ApplySettings, holder: Holder) -> None:
    control.write_json(
        ControlArea.ROLLOUT,
        {
            **outcome,
            "folder": str(Path(settings.folder).resolve()),
            "dag_id": holder.dag_id,
            "run_id": holder.run_id,
            "finished_at": now(),
        },
    )
