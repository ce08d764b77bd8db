"""The safe-disable migration as a TaskGroup: turn async progress tracking off without leaving an
unrestartable checkpoint.

The documented cure, automated and guarded, one task per step (the steps: safe_disable_steps.py)::

    hold the job -> to async on, interval 0 -> wait >=2 committed batches -> graceful stop
        -> gate: sync restart safe? -> to async off -> wait >=1 committed batch -> release the job
    on any failure: back to async on, interval 0 so the job keeps running, and fail the run with the reason

Each change is switched in place by the running driver where it can be (about a second of pause), else made
by a redeploy; in place, the stop and the gate happen inside the synchronous switch and their tasks say so.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import TaskGroup
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowSkipException

from airflow_async_stream._moved import renamed_argument
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import JobHeldError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.migrations.safe_disable_steps import (
    ASYNC_EVERY_BATCH,
    SYNCHRONOUS,
    SafeDisable,
    failure_reason,
    note_failure,
    rolled_back_error,
)
from airflow_async_stream.migrations.spec_follow_up import spec_follow_up
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.hold import ReleaseJobHoldOperator, TakeJobHoldOperator
from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor
from airflow_async_stream.spec.load import SpecInput, resolve_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, dag_run_state, release, take

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = [
    "ASYNC_EVERY_BATCH",
    "SYNCHRONOUS",
    "ReleaseAfterSafeDisableOperator",
    "RollbackToAsyncOperator",
    "SafeDisableStepOperator",
    "safe_disable_async_progress",
]


def _failure_recorder(checkpoint: str) -> Any:
    """An on_failure_callback that notes which step failed and why, for the rollback's message."""

    def record(context: Context) -> None:
        ti = context["ti"]
        note_failure(checkpoint, ti.dag_id, ti.run_id, ti.task_id, str(context.get("exception") or "unknown"))

    return record


class SafeDisableStepOperator(DeployStreamingJobOperator):
    """One step of the migration (a method of ``SafeDisable``): switched in place or redeployed as the
    running job allows; returns (and pushes to XCom) the step's result, e.g. a switch with its pause.

    :param step: ``to_interval_0``, ``stop_for_gate``, ``gate`` or ``to_synchronous``.
    :param sync_overrides: further changes for the synchronous target.
    :param in_place: switch in place where the running driver can (False: redeploy every time).
    """

    STEPS = ("to_interval_0", "stop_for_gate", "gate", "to_synchronous")

    def __init__(
        self, *, step: str, sync_overrides: dict[str, Any] | None = None, in_place: bool = True, **kwargs: Any
    ) -> None:
        if step not in self.STEPS:
            raise ValueError(f"step must be one of {', '.join(self.STEPS)}, got {step!r}")
        super().__init__(**kwargs)
        self.step = step
        self.sync_overrides = sync_overrides or {}
        self.in_place = in_place

    def migration(self, context: Context | None) -> SafeDisable:
        spec = resolve_spec(self.spec)
        return SafeDisable(
            spec,
            Holder.for_task(context, f"safe-disable {spec.name}"),
            self.settings(context)
            if context is not None
            else DeploySettings(conn_id=self.conn_id, launcher=partial(launcher_for, self.conn_id)),
            sync_overrides=self.sync_overrides,
            run_state=dag_run_state(context),
            log=self.log,
            in_place=self.in_place,
        )

    def execute(self, context: Context) -> dict[str, Any] | None:
        result = getattr(self.migration(context), self.step)()
        return result.to_json() if result is not None else None


class RollbackToAsyncOperator(SafeDisableStepOperator):
    """Runs only when a step failed: back to async on (interval 0), then fail with the reason.

    Skipped when this run never held the job (its hold task did not succeed: another run held it, and may
    since have finished its own migration), or another run holds it now. Releases this run's hold.
    """

    def __init__(self, *, hold_task_id: str, **kwargs: Any) -> None:
        super().__init__(step="to_interval_0", **kwargs)
        self.hold_task_id = hold_task_id

    def execute(self, context: Context) -> dict[str, Any]:
        if not context["ti"].xcom_pull(task_ids=self.hold_task_id):
            raise AirflowSkipException("nothing to roll back: this run never held the job, so it changed nothing")
        migration = self.migration(context)
        control, holder, spec = migration.control, migration.holder, migration.spec
        try:
            take(control, holder, migration.deploy.hold_ttl_s, dag_run_state(context))
        except JobHeldError as exc:
            raise AirflowSkipException(f"nothing to roll back, this run never held the job: {exc}") from exc
        try:
            ti = context["ti"]
            reason = failure_reason(spec.checkpoint, ti.dag_id, ti.run_id)
            switch = migration.roll_back(reason)
        finally:
            release(control, holder)
        raise rolled_back_error(spec.name, reason, switch)


class ReleaseAfterSafeDisableOperator(ReleaseJobHoldOperator):
    """Give up the run's hold; returns the migration's result: every switch it made, in place or by restart,
    with its pause (the XCom of the switch tasks)."""

    def __init__(
        self,
        *,
        switch_task_ids: list[str],
        job: str,
        spec_file: str | None = None,
        sync_overrides: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.switch_task_ids = switch_task_ids
        self.job, self.spec_file, self.sync_overrides = job, spec_file, sync_overrides or {}

    def execute(self, context: Context) -> dict[str, Any]:  # type: ignore[override]
        super().execute(context)
        switches = [context["ti"].xcom_pull(task_ids=task_id) for task_id in self.switch_task_ids]
        for switch in filter(None, switches):
            self.log.info("switched to %s %s, pause %s s (%s)", switch["to"], switch["path"], switch["pause_s"],
                          switch["why"])  # fmt: skip
        # The migration changed what runs, not the spec it came from: say which file would turn async back on.
        checks = spec_follow_up(self.job, self.spec_file, ControlArea.for_checkpoint(self.checkpoint),
                                self.sync_overrides)  # fmt: skip
        for check in checks:
            (self.log.info if check.async_on is False else self.log.warning)("spec: %s", check.advice)
        return {"switches": [s for s in switches if s], "spec_files": [c.to_json() for c in checks]}


def safe_disable_async_progress(
    spec: SpecInput,
    *,
    group_id: str = "safe_disable",
    conn_id: str = StreamingJobHook.default_conn_name,
    sync_overrides: dict[str, Any] | None = None,
    async_batches: int = 2,
    wait_timeout_s: float = 600.0,
    startup_timeout_s: float = 300.0,
    graceful_timeout_s: float = 60.0,
    deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
    hold_ttl_s: float | None = None,
    in_place: bool = True,
    spec_file: str | Path | None = None,
    lease_ttl_s: float | None = None,
) -> TaskGroup:
    """Build the safe-disable TaskGroup for one job, inside the DAG being defined.

    :param spec: the job's spec (mapping, ``JobSpec`` or file path); its async settings are overridden per step.
    :param sync_overrides: further changes for the synchronous target (e.g. new ``spark_conf``); a change
        the running driver cannot make in place (the JVM's settings) makes that switch a redeploy.
    :param async_batches: committed batches to wait for under interval 0 (the cure needs at least 2).
    :param deferrable: the waits for committed batches wait in the triggerer (default: Airflow's
        ``[operators] default_deferrable``).
    :param in_place: switch the running driver in place where it can (about a second of pause each); False
        redeploys at every change, as before in-place switching.
    :param spec_file: the file the job's spec is kept in (default: ``spec`` itself when it is a path). The
        migration changes what runs, never this file: its last step says whether the file still turns async
        on, and so would turn it back on at the next deploy from it.
    :param hold_ttl_s: how long the run holds the job (default: the sum of every step's time limits);
        no other run may deploy, stop or migrate the job meanwhile, and a dead run's hold expires then.
    :param lease_ttl_s: the previous release's name of ``hold_ttl_s`` (warns; goes in the next release).
    """
    if lease_ttl_s is not None:
        renamed_argument("safe_disable_async_progress", "lease_ttl_s", "hold_ttl_s")
        hold_ttl_s = lease_ttl_s if hold_ttl_s is None else hold_ttl_s
    job = resolve_spec(spec)
    # Validates async_batches, and the synchronous target now, at parse time, not after the job was stopped.
    plan = SafeDisable(
        job,
        deploy=DeploySettings(
            conn_id=conn_id,
            startup_timeout_s=startup_timeout_s,
            stop_graceful_timeout_s=graceful_timeout_s,
        ),
        wait_timeout_s=wait_timeout_s,
        async_batches=async_batches,
        sync_overrides=sync_overrides or {},
        in_place=in_place,
    )
    plan.synchronous_spec()
    spec_file = spec_file if spec_file is not None else spec if isinstance(spec, (str, Path)) else None
    spec_file = str(Path(spec_file).resolve()) if spec_file is not None else None
    with TaskGroup(group_id=group_id, tooltip=f"turn async progress tracking off for {job.name}") as group:
        _steps(plan, hold_ttl_s if hold_ttl_s is not None else plan.hold_ttl_s, deferrable, spec_file)
    return group


def _steps(plan: SafeDisable, hold_ttl_s: float, deferrable: bool, spec_file: str | None) -> None:
    """The TaskGroup's tasks, one per step, and their order."""
    job, recorder = plan.spec, _failure_recorder(plan.checkpoint)
    common = {
        "spec": job.to_mapping(),
        "sync_overrides": plan.sync_overrides,
        "in_place": plan.in_place,
        "conn_id": plan.deploy.conn_id,
        "startup_timeout_s": plan.deploy.startup_timeout_s,
        "stop_graceful_timeout_s": plan.deploy.stop_graceful_timeout_s,
    }
    step = {**common, "on_failure_callback": recorder}
    wait = {"checkpoint": job.checkpoint, "wait_timeout_s": plan.wait_timeout_s, "deferrable": deferrable}
    hold = TakeJobHoldOperator(
        task_id="hold_job", checkpoint=job.checkpoint, purpose=f"safe-disable {job.name}", ttl_s=hold_ttl_s
    )
    to_async = SafeDisableStepOperator(task_id="redeploy_async_interval_0", step="to_interval_0", **step)
    wait_async = CommittedBatchesSensor(
        task_id="wait_async_batches",
        min_batches=plan.async_batches,
        baseline_batch=to_async.output,
        on_failure_callback=recorder,
        **wait,
    )
    stop = SafeDisableStepOperator(task_id="stop_async", step="stop_for_gate", **step)
    gate = SafeDisableStepOperator(task_id="gate_sync_restart_safe", step="gate", **step)
    to_sync = SafeDisableStepOperator(task_id="deploy_sync", step="to_synchronous", **step)
    wait_sync = CommittedBatchesSensor(
        task_id="wait_sync_batch",
        min_batches=1,
        baseline_batch=to_sync.output,
        on_failure_callback=recorder,
        **wait,
    )
    rollback = RollbackToAsyncOperator(
        task_id="rollback_to_async", hold_task_id=hold.task_id, trigger_rule="one_failed", **common
    )
    # The group's only leaf: succeeds when the migration did, so `group >> next_task` waits for that.
    done = ReleaseAfterSafeDisableOperator(
        task_id="release_job",
        checkpoint=job.checkpoint,
        switch_task_ids=[to_async.task_id, to_sync.task_id],
        job=job.name,
        spec_file=spec_file,
        sync_overrides=plan.sync_overrides,
        trigger_rule="none_failed_min_one_success",
    )
    hold >> to_async >> wait_async >> stop >> gate >> to_sync >> wait_sync >> done
    [gate, to_sync, wait_sync] >> rollback >> done
