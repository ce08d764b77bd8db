"""The safe-disable migration's steps, as plain functions: the TaskGroup's tasks and rollouts both call them.

    redeploy_at_interval_0 -> wait_for_batches(>= 2) -> stop_for_gate -> gate_sync_restart
        -> deploy_synchronously -> wait_for_batches(>= 1)
    on failure: roll_back (the job's spec with async on at interval 0; it keeps running)

``run_safe_disable`` runs them in order inside one process (a rollout's mapped task); the TaskGroup runs one
per task. No Airflow import here. No step deletes or rewrites a checkpoint file. A wait counts batches
newer than its deploy's own ``start_batch`` (read from the checkpoint before it launched), so a retried
wait counts the same batches.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_async_stream.checkpoint import Inspection, gate_sync_restart, inspect_checkpoint
from airflow_async_stream.commit_watch import CommitCheck, wait_for_commits
from airflow_async_stream.control import ACTIVE_STATES, ControlArea, Deployment, Status, hold_ttl_s, now
from airflow_async_stream.deployer import DeploySettings, deploy_job, stop_job
from airflow_async_stream.exceptions import SafeDisableRolledBackError
from airflow_async_stream.lease import Holder, RunState
from airflow_async_stream.spec import JobSpec, deep_merge, parse_spec

__all__ = [
    "ASYNC_EVERY_BATCH",
    "SYNCHRONOUS",
    "SafeDisable",
    "at_interval_0",
    "failure_reason",
    "migration_hold_ttl_s",
    "note_failure",
    "rolled_back_error",
    "run_safe_disable",
    "synchronous",
]

_log = logging.getLogger(__name__)

#: The spec changes of the async phase (every batch checkpointed) and of the synchronous target.
ASYNC_EVERY_BATCH: dict[str, Any] = {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}
SYNCHRONOUS: dict[str, Any] = {"async_progress": {"enabled": False}}


def at_interval_0(spec: JobSpec | dict[str, Any]) -> JobSpec:
    """The spec with async progress tracking on and every batch checkpointed."""
    return parse_spec(deep_merge(_mapping(spec), ASYNC_EVERY_BATCH))


def synchronous(spec: JobSpec | dict[str, Any], overrides: dict[str, Any] | None = None) -> JobSpec:
    """The spec with async progress tracking off, and ``overrides`` (e.g. new ``spark_conf``) applied."""
    return parse_spec(deep_merge(_mapping(spec), deep_merge(SYNCHRONOUS, overrides or {})))


def _mapping(spec: JobSpec | dict[str, Any]) -> dict[str, Any]:
    return spec.to_mapping() if isinstance(spec, JobSpec) else dict(spec)


def rolled_back_error(job: str, reason: str, record: Deployment) -> SafeDisableRolledBackError:
    """The error a rolled-back migration ends with: what failed, and that the job keeps running async."""
    return SafeDisableRolledBackError(
        f"async progress tracking stays on for job {job!r}: {reason}. The job was redeployed with "
        f"async on and checkpoint interval 0 (deployment {record.deployment_id}) and keeps running."
    )


def note_failure(checkpoint: str, dag_id: str, run_id: str, step: str, reason: str) -> None:
    """Record which step of a run failed and why (``safe-disable.json``), for the rollback's message."""
    ControlArea.for_checkpoint(checkpoint).write_json(
        ControlArea.MIGRATION,
        {"dag_id": dag_id, "run_id": run_id, "failed_step": step, "reason": reason, "at": now()},
    )


def failure_reason(checkpoint: str, dag_id: str, run_id: str) -> str:
    """Why this run's migration failed: the step it noted, else what the checkpoint says now."""
    note = ControlArea.for_checkpoint(checkpoint).read_json(ControlArea.MIGRATION) or {}
    if note.get("run_id") == run_id and note.get("dag_id") == dag_id:
        return f"step {note['failed_step']} failed: {note['reason']}"
    return f"a step failed (see its log); the checkpoint now says: {inspect_checkpoint(checkpoint).reason}"


def migration_hold_ttl_s(deploy: DeploySettings, wait_timeout_s: float, waits: int = 2) -> float:
    """How long a migration holds its job: three deploys (async, sync, rollback), a stop, and its waits."""
    return hold_ttl_s(
        deploys=3,
        stops=1,
        waits=waits,
        startup_timeout_s=deploy.startup_timeout_s,
        stop_kill_after_s=deploy.stop_kill_after_s,
        wait_timeout_s=wait_timeout_s,
    )


@dataclass(frozen=True)
class SafeDisable:
    """One job's migration: its spec (each step sets the async options), who holds it, each step's limits."""

    spec: JobSpec
    holder: Holder = field(default_factory=lambda: Holder.this_process("safe-disable"))
    deploy: DeploySettings = field(default_factory=DeploySettings)
    wait_timeout_s: float = 600.0
    async_batches: int = 2
    sync_overrides: dict[str, Any] = field(default_factory=dict)
    run_state: RunState | None = None
    log: logging.Logger = _log

    def __post_init__(self) -> None:
        if self.async_batches < 2:
            raise ValueError("async_batches must be at least 2: the cure needs two batches written with interval 0")

    @property
    def checkpoint(self) -> str:
        return self.spec.checkpoint

    @property
    def control(self) -> ControlArea:
        return ControlArea.for_checkpoint(self.spec.checkpoint)

    def synchronous_spec(self) -> JobSpec:
        """The synchronous target (validated: a bad ``sync_overrides`` fails here, before anything stops)."""
        return synchronous(self.spec, self.sync_overrides)

    @property
    def hold_ttl_s(self) -> float:
        return migration_hold_ttl_s(self.deploy, self.wait_timeout_s)

    def redeploy_at_interval_0(self) -> Deployment:
        """Take over the running job with async on at interval 0; returns the deployment record."""
        return self._deploy(at_interval_0(self.spec), redeploy=True)

    def wait_for_batches(self, record: Deployment, needed: int) -> CommitCheck:
        """Wait for ``needed`` batches committed after the deploy of ``record`` started."""
        return wait_for_commits(self.checkpoint, record.start_batch, needed, self.wait_timeout_s, self.log)

    def stop_for_gate(self, reason: str = "safe-disable: stop after two batches at interval 0") -> Status | None:
        """Stop the job between micro-batches; fails when it failed instead of stopping. Its final status."""
        outcome = stop_job(self.control, self.holder, self.deploy, reason, self.run_state, self.log)
        outcome.raise_unless_stopped(self.spec.name, self.deploy.stop_kill_after_s)
        return outcome.status

    def gate(self) -> Inspection:
        return gate_sync_restart(self.checkpoint, self.log)

    def deploy_synchronously(self) -> Deployment:
        """Deploy the synchronous spec on the stopped checkpoint (never over a live driver)."""
        return self._deploy(self.synchronous_spec(), redeploy=False)

    def roll_back(self, reason: str) -> Deployment:
        """Redeploy the job's spec with async on at interval 0, so it keeps running; its deployment record."""
        self.log.warning("Safe-disable failed (%s); redeploying with async on, interval 0", reason)
        return self.redeploy_at_interval_0()

    def _deploy(self, spec: JobSpec, redeploy: bool) -> Deployment:
        return deploy_job(spec, self.holder, replace(self.deploy, redeploy=redeploy), self.run_state, self.log)


def run_safe_disable(migration: SafeDisable, status: Status | None) -> Deployment:
    """Every step in order, in this process; the synchronous deployment's record.

    ``status`` is the job's status record before the run: a job already stopped whose checkpoint is safe
    for a synchronous restart (a crashed run got past the gate) goes straight to the synchronous deploy.
    Raises on the first failing step; the caller rolls back.
    """
    stopped = status is None or status.state not in ACTIVE_STATES
    if stopped and inspect_checkpoint(migration.checkpoint).sync_restart_safe:
        migration.log.info("%s: stopped and its checkpoint is safe for a synchronous restart", migration.spec.name)
    else:
        record = migration.redeploy_at_interval_0()
        migration.wait_for_batches(record, migration.async_batches)
        final = migration.stop_for_gate()
        migration.log.info("%s: the async job ended %s", migration.spec.name, final.state if final else None)
        migration.gate()
    record = migration.deploy_synchronously()
    migration.wait_for_batches(record, 1)
    return record
