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

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import TaskGroup
from airflow.sdk.configuration import conf

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.migrations.specs import ASYNC_EVERY_BATCH, SYNCHRONOUS
from airflow_async_stream.operators.hold import TakeJobHoldOperator
from airflow_async_stream.operators.safe_disable import (
    ReleaseAfterSafeDisableOperator,
    RollbackToAsyncOperator,
    SafeDisableStepOperator,
    failure_recorder,
)
from airflow_async_stream.sensors.committed_batches import CommittedBatchesSensor
from airflow_async_stream.spec.load import SpecInput, resolve_spec

if TYPE_CHECKING:
    pass

__all__ = [
    "ASYNC_EVERY_BATCH",
    "SYNCHRONOUS",
    "ReleaseAfterSafeDisableOperator",
    "RollbackToAsyncOperator",
    "SafeDisableStepOperator",
    "safe_disable_async_progress",
]


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
    """
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
    job, recorder = plan.spec, failure_recorder(plan.checkpoint)
    common = {
        "spec": job.to_mapping(),
        "sync_overrides": plan.sync_overrides,
        "in_place": plan.in_place,
        "conn_id": plan.deploy.conn_id,
        "startup_timeout_s": plan.deploy.startup_timeout_s,
        "stop_graceful_timeout_s": plan.deploy.stop_graceful_timeout_s,
    }
    step = {**common, "on_failure_callback": recorder}
    wait: dict[str, Any] = {
        "checkpoint": job.checkpoint,
        "wait_timeout_s": plan.wait_timeout_s,
        "deferrable": deferrable,
    }
    if deferrable:
        # A sensor resumed from the triggerer can be failed by the executor's late report of its deferral
        # ("finished with state success, but the task instance's state attribute is running", an Airflow race:
        # apache/airflow#72716, seen under load). One retry waits again from the same baseline, and its batches
        # are committed by then; a timeout is never retried, and a dead job fails the retry at once.
        wait |= {"retries": 1, "retry_delay": timedelta(seconds=5)}
    hold = TakeJobHoldOperator(
        task_id="hold_job", checkpoint=job.checkpoint, purpose=f"safe-disable {job.name}", ttl_s=hold_ttl_s
    )
    to_async = SafeDisableStepOperator(task_id="to_interval_0", step="to_interval_0", **step)
    wait_async = CommittedBatchesSensor(
        task_id="wait_async_batches",
        min_batches=plan.async_batches,
        baseline_batch=to_async.output,
        on_failure_callback=recorder,
        **wait,
    )
    stop = SafeDisableStepOperator(task_id="stop_async", step="stop_for_gate", **step)
    gate = SafeDisableStepOperator(task_id="gate_sync_restart_safe", step="gate", **step)
    to_sync = SafeDisableStepOperator(task_id="to_synchronous", step="to_synchronous", **step)
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
        stage_task_ids=[to_async.task_id, to_sync.task_id],
        job=job.name,
        spec_file=spec_file,
        sync_overrides=plan.sync_overrides,
        trigger_rule="none_failed_min_one_success",
    )
    hold >> to_async >> wait_async >> stop >> gate >> to_sync >> wait_sync >> done
    [gate, to_sync, wait_sync] >> rollback >> done
