"""The safe-disable migration as a TaskGroup: turn async progress tracking off without leaving an
unrestartable checkpoint.

The documented cure, automated and guarded, one task per step (the steps: safe_disable_steps.py)::

    hold the job -> redeploy(async on, interval 0) -> wait >=2 committed batches -> graceful stop
        -> gate: sync restart safe? -> redeploy(async off) -> wait >=1 committed batch -> release the job
    on any failure: redeploy(async on, interval 0) so the job keeps running, and fail the run with the reason
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import TaskGroup
from airflow.sdk.exceptions import AirflowSkipException

from airflow_async_stream.deployer import DeploySettings
from airflow_async_stream.exceptions import JobHeldError
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.lease import Holder, release, take
from airflow_async_stream.migrations.safe_disable_steps import (
    ASYNC_EVERY_BATCH,
    SYNCHRONOUS,
    SafeDisable,
    failure_reason,
    note_failure,
    rolled_back_error,
)
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.gate import SyncRestartGateOperator
from airflow_async_stream.operators.lease import ReleaseJobLeaseOperator, TakeJobLeaseOperator, dag_run_state
from airflow_async_stream.operators.stop import StopStreamingJobOperator
from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor
from airflow_async_stream.spec import SpecInput, deep_merge, resolve_spec

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["ASYNC_EVERY_BATCH", "SYNCHRONOUS", "RollbackToAsyncOperator", "safe_disable_async_progress"]


def _failure_recorder(checkpoint: str) -> Any:
    """An on_failure_callback that notes which step failed and why, for the rollback's message."""

    def record(context: Context) -> None:
        ti = context["ti"]
        note_failure(checkpoint, ti.dag_id, ti.run_id, ti.task_id, str(context.get("exception") or "unknown"))

    return record


class RollbackToAsyncOperator(DeployStreamingJobOperator):
    """Runs only when a step failed: redeploy with async on (interval 0), then fail with the reason.

    Skipped when another run holds the job (this run never got to change it). Releases this run's lease.
    """

    def execute(self, context: Context) -> dict[str, Any]:
        spec, settings = resolve_spec(self.spec), self.settings(context)
        holder = Holder.for_task(context, f"safe-disable {spec.name}")
        migration = SafeDisable(spec, holder, settings, run_state=dag_run_state)
        control = migration.control
        try:
            take(control, holder, settings.hold_ttl_s, dag_run_state)
        except JobHeldError as exc:
            raise AirflowSkipException(f"nothing to roll back, this run never held the job: {exc}") from exc
        try:
            ti = context["ti"]
            reason = failure_reason(spec.checkpoint, ti.dag_id, ti.run_id)
            record = migration.roll_back(reason)
        finally:
            release(control, holder)
        raise rolled_back_error(spec.name, reason, record)


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
    deferrable: bool = True,
    lease_ttl_s: float | None = None,
) -> TaskGroup:
    """Build the safe-disable TaskGroup for one job, inside the DAG being defined.

    :param spec: the job's spec (mapping, ``JobSpec`` or file path); its async settings are overridden per step.
    :param sync_overrides: further changes for the synchronous redeploy (e.g. new ``spark_conf``).
    :param async_batches: committed batches to wait for under interval 0 (the cure needs at least 2).
    :param lease_ttl_s: how long the run holds the job (default: the sum of every step's time limits);
        no other run may deploy, stop or migrate the job meanwhile, and a dead run's hold expires then.
    """
    job = resolve_spec(spec)
    # Validates async_batches, and the synchronous target now, at parse time, not after the job was stopped.
    plan = SafeDisable(
        job,
        deploy=DeploySettings(
            conn_id=conn_id, startup_timeout_s=startup_timeout_s, stop_graceful_timeout_s=graceful_timeout_s
        ),
        wait_timeout_s=wait_timeout_s,
        async_batches=async_batches,
        sync_overrides=sync_overrides or {},
    )
    plan.synchronous_spec()
    with TaskGroup(group_id=group_id, tooltip=f"turn async progress tracking off for {job.name}") as group:
        _steps(plan, lease_ttl_s if lease_ttl_s is not None else plan.hold_ttl_s, deferrable)
    return group


def _steps(plan: SafeDisable, lease_ttl_s: float, deferrable: bool) -> None:
    """The TaskGroup's tasks, one per step, and their order."""
    job, spec_data, recorder = plan.spec, plan.spec.to_mapping(), _failure_recorder(plan.checkpoint)
    common = {
        "conn_id": plan.deploy.conn_id,
        "startup_timeout_s": plan.deploy.startup_timeout_s,
        "stop_graceful_timeout_s": plan.deploy.stop_graceful_timeout_s,
    }
    wait = {"checkpoint": job.checkpoint, "wait_timeout_s": plan.wait_timeout_s, "deferrable": deferrable}
    hold = TakeJobLeaseOperator(
        task_id="hold_job", checkpoint=job.checkpoint, purpose=f"safe-disable {job.name}", ttl_s=lease_ttl_s
    )
    redeploy_async = DeployStreamingJobOperator(
        task_id="redeploy_async_interval_0",
        spec=spec_data,
        overrides=ASYNC_EVERY_BATCH,
        redeploy=True,
        on_failure_callback=recorder,
        **common,
    )
    wait_async = CommittedBatchesSensor(
        task_id="wait_async_batches",
        min_batches=plan.async_batches,
        baseline_batch=redeploy_async.output,
        on_failure_callback=recorder,
        **wait,
    )
    stop = StopStreamingJobOperator(
        task_id="stop_async",
        spec=spec_data,
        conn_id=plan.deploy.conn_id,
        graceful_timeout_s=plan.deploy.stop_graceful_timeout_s,
        on_failure_callback=recorder,
    )
    gate = SyncRestartGateOperator(
        task_id="gate_sync_restart_safe", checkpoint=job.checkpoint, on_failure_callback=recorder
    )
    deploy_sync = DeployStreamingJobOperator(
        task_id="deploy_sync",
        spec=spec_data,
        overrides=deep_merge(SYNCHRONOUS, plan.sync_overrides),
        redeploy=False,
        on_failure_callback=recorder,
        **common,
    )
    wait_sync = CommittedBatchesSensor(
        task_id="wait_sync_batch",
        min_batches=1,
        baseline_batch=deploy_sync.output,
        on_failure_callback=recorder,
        **wait,
    )
    rollback = RollbackToAsyncOperator(task_id="rollback_to_async", spec=spec_data, trigger_rule="one_failed", **common)
    # The group's only leaf: succeeds when the migration did, so `group >> next_task` waits for that.
    done = ReleaseJobLeaseOperator(
        task_id="release_job", checkpoint=job.checkpoint, trigger_rule="none_failed_min_one_success"
    )
    hold >> redeploy_async >> wait_async >> stop >> gate >> deploy_sync >> wait_sync >> done
    [gate, deploy_sync, wait_sync] >> rollback >> done
