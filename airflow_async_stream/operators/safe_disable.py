"""The safe-disable migration's own operators: a step that runs one of the migration's plain functions, the
rollback to async at interval 0, and the release that ends the run's hold and reports the migration."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowSkipException

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import JobHeldError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.insight.checkup import cure_named
from airflow_async_stream.migrations.outcome import Stage, failure_reason, note_failure, rolled_back_error
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.migrations.spec_follow_up import spec_follow_up
from airflow_async_stream.migrations.specs import at_interval_0
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.hold import ReleaseJobHoldOperator
from airflow_async_stream.spec.load import resolve_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, dag_run_lookup, release, take

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["ReleaseAfterSafeDisableOperator", "RollbackToAsyncOperator", "SafeDisableStepOperator", "failure_recorder"]


def failure_recorder(checkpoint: str) -> Any:
    """An on_failure_callback that notes which step failed and why, for the rollback's message."""

    def record(context: Context) -> None:
        ti = context["ti"]
        note_failure(checkpoint, ti.dag_id, ti.run_id, ti.task_id, str(context.get("exception") or "unknown"))

    return record


class SafeDisableStepOperator(DeployStreamingJobOperator):
    """One step of the migration (a method of ``SafeDisable``): switched in place or redeployed as the
    running job allows; returns (and pushes to XCom) the step's result, e.g. a stage with its pause.

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
            dag_run_lookup=dag_run_lookup(context),
            log=self.log,
            in_place=self.in_place,
        )

    def lineage_spec(self) -> JobSpec:
        """The job as this step leaves it: async at interval 0, or the synchronous target."""
        spec = resolve_spec(self.spec)
        return self.migration(None).synchronous_spec() if self.step == "to_synchronous" else at_interval_0(spec)

    def execute(self, context: Context) -> dict[str, Any] | None:
        migration = self.migration(context)
        with cure_named(migration.spec.checkpoint, self.log):
            result = getattr(migration, self.step)()
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
            take(control, holder, migration.deploy.hold_ttl_s, dag_run_lookup(context))
        except JobHeldError as exc:
            raise AirflowSkipException(f"nothing to roll back, this run never held the job: {exc}") from exc
        try:
            ti = context["ti"]
            reason = failure_reason(spec.checkpoint, ti.dag_id, ti.run_id)
            stage = migration.roll_back(reason)
        finally:
            release(control, holder)
        raise rolled_back_error(spec.name, reason, stage)


class ReleaseAfterSafeDisableOperator(ReleaseJobHoldOperator):
    """Give up the run's hold; returns the migration's result: every stage it reached, in place or by a
    restart, with its pause (the XCom of the stage tasks)."""

    def __init__(
        self,
        *,
        stage_task_ids: list[str],
        job: str,
        spec_file: str | None = None,
        sync_overrides: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.stage_task_ids = stage_task_ids
        self.job, self.spec_file, self.sync_overrides = job, spec_file, sync_overrides or {}

    def execute(self, context: Context) -> dict[str, Any]:  # type: ignore[override]
        super().execute(context)
        stages = [context["ti"].xcom_pull(task_ids=task_id) for task_id in self.stage_task_ids]
        for stage in filter(None, stages):
            self.log.info("%s", Stage.from_json(stage).describe())
        # The migration changed what runs, not the spec it came from: say which file would turn async back on.
        checks = spec_follow_up(
            self.job, self.spec_file, ControlArea.for_checkpoint(self.checkpoint), self.sync_overrides
        )
        for check in checks:
            (self.log.info if check.async_on is False else self.log.warning)("spec: %s", check.advice)
        return {"stages": [s for s in stages if s], "spec_files": [c.to_json() for c in checks]}
