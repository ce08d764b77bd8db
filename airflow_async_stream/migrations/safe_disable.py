"""The safe-disable migration: turn async progress tracking off without leaving an unrestartable checkpoint.

The documented cure, automated and guarded::

    hold the job -> redeploy(async on, interval 0) -> wait >=2 committed batches -> graceful stop
        -> gate: sync restart safe? -> redeploy(async off) -> wait >=1 committed batch -> release the job
    on any failure: redeploy(async on, interval 0) so the job keeps running, and fail the run with the reason

No step deletes or rewrites a checkpoint file. Sensors count batches newer than the deploy's own
``start_batch`` (read from the checkpoint before it launched), so a retried sensor counts the same batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import TaskGroup
from airflow.sdk.exceptions import AirflowSkipException

from airflow_async_stream.checkpoint import inspect_checkpoint
from airflow_async_stream.control import ControlArea, now
from airflow_async_stream.exceptions import JobHeldError, SafeDisableRolledBackError
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.lease import Holder, release, take
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.gate import SyncRestartGateOperator
from airflow_async_stream.operators.lease import ReleaseJobLeaseOperator, TakeJobLeaseOperator, dag_run_state
from airflow_async_stream.operators.stop import StopStreamingJobOperator
from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor
from airflow_async_stream.spec import SpecInput, deep_merge, resolve_spec

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["ASYNC_EVERY_BATCH", "SYNCHRONOUS", "RollbackToAsyncOperator", "safe_disable_async_progress"]

ASYNC_EVERY_BATCH: dict[str, Any] = {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}
SYNCHRONOUS: dict[str, Any] = {"async_progress": {"enabled": False}}
MIGRATION_RECORD = "safe-disable.json"


def _failure_recorder(checkpoint: str) -> Any:
    """An on_failure_callback that notes which step failed and why, for the rollback's message."""

    def record(context: Context) -> None:
        ti = context["ti"]
        control = ControlArea.for_checkpoint(checkpoint)
        control.write_json(
            MIGRATION_RECORD,
            {
                "dag_id": ti.dag_id,
                "run_id": ti.run_id,
                "failed_step": ti.task_id,
                "reason": str(context.get("exception") or "unknown"),
                "at": now(),
            },
        )

    return record


class RollbackToAsyncOperator(DeployStreamingJobOperator):
    """Runs only when a step failed: redeploy with async on (interval 0), then fail with the reason.

    Skipped when another run holds the job (this run never got to change it). Releases this run's lease.
    """

    def execute(self, context: Context) -> dict[str, Any]:
        spec = resolve_spec(self.spec, self.overrides)
        control = ControlArea.for_checkpoint(spec.checkpoint)
        holder = Holder.for_task(context, f"safe-disable {spec.name}")
        try:
            take(control, holder, self.startup_timeout_s + self.stop_kill_after_s + 60, dag_run_state)
        except JobHeldError as exc:
            raise AirflowSkipException(f"nothing to roll back, this run never held the job: {exc}") from exc
        try:
            reason = self._failure_reason(spec.checkpoint, context)
            self.log.warning("Safe-disable failed (%s); redeploying with async on, interval 0", reason)
            record = super().execute(context)
        finally:
            release(control, holder)
        raise SafeDisableRolledBackError(
            f"async progress tracking stays on for job {spec.name!r}: {reason}. The job was redeployed with "
            f"async on and checkpoint interval 0 (deployment {record['deployment_id']}) and keeps running."
        )

    @staticmethod
    def _failure_reason(checkpoint: str, context: Context) -> str:
        ti = context["ti"]
        note = ControlArea.for_checkpoint(checkpoint).read_json(MIGRATION_RECORD) or {}
        if note.get("run_id") == ti.run_id and note.get("dag_id") == ti.dag_id:
            return f"step {note['failed_step']} failed: {note['reason']}"
        inspection = inspect_checkpoint(checkpoint)
        return f"a step failed (see its log); the checkpoint now says: {inspection.reason}"


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
    if async_batches < 2:
        raise ValueError("async_batches must be at least 2: the cure needs two batches written with interval 0")
    job = resolve_spec(spec)
    spec_data = job.to_mapping()
    # Validate the synchronous target now, at parse time, not after the job was stopped.
    resolve_spec(spec_data, deep_merge(SYNCHRONOUS, sync_overrides or {}))
    recorder = _failure_recorder(job.checkpoint)
    if lease_ttl_s is None:
        lease_ttl_s = 3 * (startup_timeout_s + graceful_timeout_s * 2 + 60) + 2 * wait_timeout_s
    common = {"conn_id": conn_id, "startup_timeout_s": startup_timeout_s, "stop_graceful_timeout_s": graceful_timeout_s}

    with TaskGroup(group_id=group_id, tooltip=f"turn async progress tracking off for {job.name}") as group:
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
            checkpoint=job.checkpoint,
            min_batches=async_batches,
            baseline_batch=redeploy_async.output,
            wait_timeout_s=wait_timeout_s,
            deferrable=deferrable,
            on_failure_callback=recorder,
        )
        stop = StopStreamingJobOperator(
            task_id="stop_async",
            spec=spec_data,
            conn_id=conn_id,
            graceful_timeout_s=graceful_timeout_s,
            on_failure_callback=recorder,
        )
        gate = SyncRestartGateOperator(
            task_id="gate_sync_restart_safe", checkpoint=job.checkpoint, on_failure_callback=recorder
        )
        deploy_sync = DeployStreamingJobOperator(
            task_id="deploy_sync",
            spec=spec_data,
            overrides=deep_merge(SYNCHRONOUS, sync_overrides or {}),
            redeploy=False,
            on_failure_callback=recorder,
            **common,
        )
        wait_sync = CommittedBatchesSensor(
            task_id="wait_sync_batch",
            checkpoint=job.checkpoint,
            min_batches=1,
            baseline_batch=deploy_sync.output,
            wait_timeout_s=wait_timeout_s,
            deferrable=deferrable,
            on_failure_callback=recorder,
        )
        rollback = RollbackToAsyncOperator(
            task_id="rollback_to_async",
            spec=spec_data,
            overrides=ASYNC_EVERY_BATCH,
            redeploy=True,
            trigger_rule="one_failed",
            **common,
        )
        # The group's only leaf: succeeds when the migration did, so `group >> next_task` waits for that.
        done = ReleaseJobLeaseOperator(
            task_id="release_job", checkpoint=job.checkpoint, trigger_rule="none_failed_min_one_success"
        )
        hold >> redeploy_async >> wait_async >> stop >> gate >> deploy_sync >> wait_sync >> done
        [gate, deploy_sync, wait_sync] >> rollback >> done
    return group
