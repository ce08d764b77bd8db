"""The safe-disable migration's steps, as plain functions: the TaskGroup's tasks and rollouts both call them.

    to_interval_0 -> wait_for_batches(>= 2) -> stop_for_gate -> gate -> to_synchronous -> wait_for_batches(>= 1)
    on failure: roll_back (the job's spec with async on at interval 0; it keeps running)

Each switch is made **in place** when the running driver can make it (switch/request.py: the driver stops its
query between micro-batches and starts the new one in the same SparkSession, about a second of pause), and
by a **restart** otherwise (an application's driver, a change that needs a new driver such as a
``sync_overrides`` of the JVM's settings, a job not running) or when the migration asks for restarts
(``in_place=False``). In place, ``stop_for_gate`` and ``gate`` have nothing to do: the driver stops the
query and runs the gate itself at the synchronous switch, and keeps async on at interval 0 when the gate says
unsafe. ``to_synchronous`` stops, gates and deploys itself whenever it has to restart, so it is correct
whatever happened before it.

``run_safe_disable`` runs the steps in order in one process (a rollout's mapped task); the TaskGroup runs
one per task. No Airflow import here. No step deletes or rewrites a checkpoint file. A wait counts batches
after its switch's own ``start_batch`` (the batch before the new configuration's first), so a retried wait
counts the same batches, and the two batches the cure needs are the new query's own (written at interval 0).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_async_stream.decision.needs import How
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
from airflow_async_stream.exceptions import (
    CommittedBatchesError,
    NotSwitchableError,
    SwitchRefusedError,
    UnsafeSyncRestartError,
)
from airflow_async_stream.migrations.outcome import (
    Stage,
    ran_when_taken,
    restart_pause,
)
from airflow_async_stream.migrations.specs import at_interval_0, synchronous
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import Inspection, gate_sync_restart, latest_batch
from airflow_async_stream.state.commits import CommitCheck, wait_for_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import DagRunLookup, Holder, revoked_error
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import Deployment, Status, hold_ttl_s
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome
from airflow_async_stream.switch.request import running_spec, switch_in_place, why_not_in_place
from airflow_async_stream.waits import Log

__all__ = ["SafeDisable", "migration_hold_ttl_s"]

_log = logging.getLogger(__name__)


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
    dag_run_lookup: DagRunLookup | None = None
    log: Log = _log
    #: Switch in place where the running driver can (False: always a restart).
    in_place: bool = True

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

    def how(self, target: JobSpec, require_sync_safe: bool = False) -> tuple[str, str]:
        """How the job gets to ``target`` now, and why."""
        if not self.in_place:
            return How.RESTART, "the migration asks for restarts (in_place=False)"
        why_not = why_not_in_place(self.control, target, require_sync_safe)
        return (How.RESTART, why_not) if why_not else (How.IN_PLACE, "the running driver switches in place")

    def to_interval_0(self) -> Stage:
        """Async on, every batch checkpointed: switched in place, or the running job taken over by a redeploy."""
        target = at_interval_0(self.spec)
        if self.runs(target):
            self.log.info("%s already runs with async on at interval 0: nothing to switch", self.spec.name)
            status = self.control.read_status()
            assert status is not None
            return Stage(
                "async_interval_0",
                How.IN_PLACE,
                "already running it",
                status.deployment_id,
                latest_batch(self.checkpoint, "commits"),
                0.0,
                "unchanged",
            )
        how, why = self.how(target)
        if how == How.IN_PLACE:
            try:
                return self._switch("async_interval_0", target, require_sync_safe=False, why=why)
            except (NotSwitchableError, SwitchRefusedError) as exc:
                why = f"the driver did not switch in place: {exc}"
        self.log.info("%s: redeploying with async on at interval 0 (%s)", self.spec.name, why)
        return self._restart("async_interval_0", target, redeploy=True, why=why)

    def wait_for_batches(self, after: Stage | Deployment, needed: int) -> CommitCheck:
        """Wait for ``needed`` batches committed after the switch (or deploy) ``after`` started. A job that
        stopped because a forced stop ended this migration's hold fails the wait with HoldRevokedError."""
        try:
            return wait_for_commits(self.checkpoint, after.start_batch, needed, self.wait_timeout_s, self.log)
        except CommittedBatchesError as exc:
            revoked = revoked_error(self.control, self.holder)
            if revoked:
                raise revoked from exc
            raise

    def stop_for_gate(self, reason: str = "safe-disable: stop after two batches at interval 0") -> Status | None:
        """Stop the job between micro-batches, unless the synchronous switch will be made in place (the driver
        then stops the query itself). Fails when the job failed instead of stopping. Its final status."""
        how, why = self.how(self.synchronous_spec(), require_sync_safe=True)
        if how == How.IN_PLACE:
            self.log.info(
                "%s: not stopped: the synchronous switch is made in place (%s); the driver stops its query "
                "between micro-batches then, and the job never stops running",
                self.spec.name,
                why,
            )
            return self.control.read_status()
        self.log.info("%s: stopping for the synchronous restart (%s)", self.spec.name, why)
        outcome = stop_job(self.control, self.holder, self.deploy, reason, self.dag_run_lookup, self.log)
        outcome.raise_unless_stopped(self.spec.name, self.deploy.stop_kill_after_s)
        return outcome.status

    def gate(self) -> Inspection | None:
        """The inspector's verdict on the stopped checkpoint; None when the job runs on to switch in place
        (the driver runs this gate itself on the stopped checkpoint at the switch)."""
        if self.live():
            self.log.info(
                "%s runs on: the driver runs the gate itself when it stops for the synchronous switch",
                self.spec.name,
            )
            return None
        return gate_sync_restart(self.checkpoint, self.log)

    def to_synchronous(self) -> Stage:
        """Async off: switched in place through the driver's gate, or stopped, gated and redeployed.

        Raises UnsafeSyncRestartError when the gate says no (in place the job then runs on with async on at
        interval 0; after a stop it stays stopped until the rollback).
        """
        target = self.synchronous_spec()
        how, why = self.how(target, require_sync_safe=True)
        if how == How.IN_PLACE:
            try:
                switch = self._switch("synchronous", target, require_sync_safe=True, why=why)
            except (NotSwitchableError, SwitchRefusedError) as exc:
                why = f"the driver did not switch in place: {exc}"
            else:
                if switch.outcome == SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0:
                    raise UnsafeSyncRestartError(
                        f"a synchronous restart is not safe: {switch.reason}; the job runs on with async on "
                        "at interval 0: run the migration again once two batches have committed there"
                    )
                return switch
        if self.live():
            self.stop_for_gate(f"safe-disable: stop for the synchronous restart ({why})")
        self.gate()
        return self._restart("synchronous", target, redeploy=False, why=why)

    def roll_back(self, reason: str) -> Stage:
        """Back to the job's spec with async on at interval 0, so it keeps running (switched in place when
        the running driver can, else redeployed)."""
        self.log.warning("Safe-disable failed (%s); back to async on, interval 0", reason)
        return self.to_interval_0()

    def live(self) -> bool:
        return liveness(self.control.read_status()).live

    def runs(self, target: JobSpec) -> bool:
        """The job's live driver runs ``target`` now."""
        try:
            return self.live() and running_spec(self.control) == target
        except NotSwitchableError:
            return False

    def _switch(self, to: str, target: JobSpec, *, require_sync_safe: bool, why: str) -> Stage:
        record: SwitchAccount = switch_in_place(
            self.control,
            target,
            require_sync_safe=require_sync_safe,
            holder=self.holder,
            dag_run_lookup=self.dag_run_lookup,
            timeout_s=self.deploy.startup_timeout_s,
            graceful_timeout_s=self.deploy.stop_graceful_timeout_s,
            reason=f"safe-disable: to {to}",
            log=self.log,
        )
        stage = Stage(
            to,
            How.IN_PLACE,
            why,
            record.deployment_id,
            record.committed_before,
            record.pause_s,
            record.outcome or SwitchOutcome.SWITCHED,
            record.reason,
        )
        self.log.info("%s: %s", self.spec.name, stage.describe())
        return stage

    def _restart(self, to: str, target: JobSpec, *, redeploy: bool, why: str) -> Stage:
        status = self.control.read_status()
        ran = ran_when_taken(self.control, status, self.holder)
        record = self._deploy(target, redeploy=redeploy)
        pause, unmeasured = restart_pause(self.control, status, record.deployment_id, ran)
        stage = Stage(
            to,
            How.RESTART,
            why,
            record.deployment_id,
            record.start_batch,
            pause,
            "deployed",
            unmeasured=unmeasured or Stage.unmeasured,
        )
        self.log.info("%s: %s", self.spec.name, stage.describe())
        return stage

    def _deploy(self, spec: JobSpec, redeploy: bool) -> Deployment:
        return deploy_job(spec, self.holder, replace(self.deploy, redeploy=redeploy), self.dag_run_lookup, self.log)
