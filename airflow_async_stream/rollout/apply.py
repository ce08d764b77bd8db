"""Carry out one job's planned action, holding the job, judged by committed batches, rolled back on failure.

An ``update`` the plan marks ``in_place`` is asked of the running driver (switch/request.py: about a second of
pause) and falls back to a graceful stop and redeploy when the driver does not switch. A deploy or update
counts as done only when the new deployment (or the switched query) commits batches after its start; if it
does not, the job is redeployed with its last stable spec (the last one that committed batches), or with
what ran before the rollout when no stable spec is on record. A rollback never restarts synchronously
where the decision says the migration is needed (a checkpoint with async mode's gaps): it then goes back
through the safe-disable migration, and where that fails, keeps async on with checkpoint interval 0. Before an
``update`` stops the old driver, that driver builds the new query in a session of its own (a rehearsal).
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.exceptions import (
    AsyncStreamError,
    ChangeNotTakenError,
    HoldRevokedError,
    JobHeldError,
    RolloutError,
)
from airflow_async_stream.insight.checkup import cure_named
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import migration_hold_ttl_s
from airflow_async_stream.rollout.actions import (
    ACTIONS,
    ApplySettings,
    Before,
    Step,
)
from airflow_async_stream.rollout.failures import spec_digest
from airflow_async_stream.rollout.planner import CHANGES, PlanItem
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from airflow_async_stream.state.hold import DagRunLookup, Holder, held
from airflow_async_stream.state.incidents import Kind, record_change
from airflow_async_stream.state.issued import issued
from airflow_async_stream.state.records import SUFFIX, now
from airflow_async_stream.waits import Log

__all__ = ["ApplySettings", "apply_item"]

_log = logging.getLogger(__name__)
FAILED_OUTCOMES = frozenset({"rolled_back", "failed"})


def apply_item(
    item: PlanItem,
    holder: Holder,
    settings: ApplySettings,
    dag_run_lookup: DagRunLookup | None = None,
    log: Log = _log,
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
        with held(control, holder, ttl, dag_run_lookup):
            step = Step(item, control, settings, holder, log)
            before = Before(control, item.job)
            if item.action != "retire" and not item.leaves_plan:
                # Before anything changes: a worker that dies mid-deploy leaves the job findable by every worker.
                index.record_active(item.job, item.control_url, holder.run_id)
            try:
                with cure_named(
                    item.checkpoint or control.url.removesuffix(SUFFIX), log
                ):  # a dead driver: the doctor's line
                    outcome.update(ACTIONS[item.action](step))
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


# -- the actions --------------------------------------------------------------------------------------


def _roll_back(step: Step, before: Before, error: str) -> dict[str, Any]:
    """Back to the last stable spec (see the module docstring); outcome rolled_back, or failed if even that fails.

    A failed safe-disable takes the migration's own rollback: that spec with async on at interval 0.
    """
    item = step.item
    target = before.rollback_target()
    if item.action in ("retire", "refuse", "suspend") or target is None:  # a stop is never undone by a start
        if item.action == "deploy":
            step.stop("rollout: the new job did not commit batches")
        return {"outcome": "failed", "error": error}
    mapping, read_from = target
    try:
        spec = issued(step.control, mapping, f"{step.control.url}/{read_from}")
    except AsyncStreamError as exc:
        return {"outcome": "failed", "error": f"{error}; not rolled back: {exc}"}
    decision = decide(observe(step.control, spec.checkpoint), spec.to_mapping())
    migrate = item.action != "safe_disable" and decision.need is Need.SAFE_DISABLE
    step.log.warning("%s: rolling back to its last stable spec", item.job)
    try:
        if item.action == "safe_disable":
            migration = replace(step.safe_disable(), spec=spec)
            stage = migration.roll_back(error)
            migration.wait_for_batches(stage, 1)
            deployment_id = stage.deployment_id
        elif migrate:
            error += f"; rolled back through the safe-disable migration ({decision.why})"
            deployment_id, said = _migrate_back(step, spec)
            error += said
        else:
            deployment_id = step.deploy_and_confirm(spec, True, 1).deployment_id
    except AsyncStreamError as exc:
        return {"outcome": "failed", "error": f"{error}; the rollback failed too: {exc}"}
    return {"outcome": "rolled_back", "error": error, "deployment_id": deployment_id}


def _migrate_back(step: Step, spec: JobSpec) -> tuple[str, str]:
    """Back to a synchronous ``spec`` through the safe-disable migration; where a step of it fails, the job is
    left running ``spec`` with async on at interval 0 (the migration's own rollback), and the error says so."""
    migration = replace(step.safe_disable(), spec=spec)
    try:
        return run_safe_disable(migration)[-1].deployment_id, ""
    except HoldRevokedError:
        raise
    except AsyncStreamError as exc:  # the gate said no, or batches did not commit
        reason = str(exc)
    stage = migration.roll_back(reason)
    migration.wait_for_batches(stage, 1)
    return stage.deployment_id, f"; the migration stopped ({reason}): it runs with async on at interval 0"


def _update_index(index: FleetIndex, item: PlanItem, outcome: dict[str, Any], holder: Holder) -> None:
    """A retired job is marked so (the next plan lists it once more); a job listed that once leaves the index."""
    assert item.control_url
    if item.action == "retire" and outcome.get("outcome") == "done":
        index.record_retired(item.job, item.control_url, holder.run_id)
    elif item.leaves_plan:
        index.forget(item.job)


def _record(control: ControlArea, outcome: dict[str, Any], settings: ApplySettings, holder: Holder) -> None:
    if outcome.get("outcome") in FAILED_OUTCOMES:
        done = {"rolled_back": "rolled back to the job's previous state"}.get(outcome["outcome"], "none")
        held = "; the spec is held back until it changes" if outcome.get("failed_spec") else ""
        record_change(
            control,
            Kind.CHANGE_FAILED,
            str(outcome.get("error")),
            f"rollout {outcome['action']} {outcome['outcome']} ({holder.dag_id} {holder.run_id})",
            done + held,
        )
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
