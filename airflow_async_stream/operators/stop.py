"""Stop a streaming job gracefully: between micro-batches, with a hard stop only after a timeout."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.driver.deploy import DeploySettings, stop_job
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.operators.lineage import JobLineage
from airflow_async_stream.spec.load import SpecInput, is_templated, resolve_spec, spec_operand
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, dag_run_lookup
from airflow_async_stream.state.stopped import BY_PERSON, by_this_user

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["StopStreamingJobOperator"]


class StopStreamingJobOperator(JobLineage, BaseOperator):
    """Request a graceful stop of the job's live driver and wait for its final status.

    :param spec: the job spec (mapping, ``JobSpec`` or file path); only its checkpoint is used.
    :param graceful_timeout_s: how long the driver may take to finish the micro-batch in flight.
    :param kill_after_s: when a driver that has not stopped is killed (on this host, or on its YARN or
        Kubernetes cluster through ``conn_id``'s hook).
    :param conn_id: the Airflow Spark connection the job was deployed with (for cluster-mode kills).
    :param force: stop even while another DAG run or process holds the job (a migration, a rollout);
        that holder's next step then fails without changing the job. Otherwise such a stop fails
        naming the holder.

    The stop is recorded as a person's (state/stopped.py): neither the supervisor nor a rollout starts the
    job again until a deploy or ``airflow-async-stream resume``. Stopping a job that is not running succeeds
    and says so. Returns the final status record; fails
    when the driver ended in failure instead of stopping.
    """

    template_fields = ("spec",)
    ui_color = "#fcefe8"

    def __init__(
        self,
        *,
        spec: SpecInput,
        graceful_timeout_s: float = 60.0,
        kill_after_s: float = 120.0,
        conn_id: str = StreamingJobHook.default_conn_name,
        force: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self.force = force
        self.spec = spec_operand(spec)
        self.graceful_timeout_s = graceful_timeout_s
        self.kill_after_s = kill_after_s
        if not is_templated(self.spec):
            resolve_spec(self.spec)

    def _who(self, context: Context) -> str:
        """The DAG run's task that stops the job (outside a DAG run: this task on this host, by this user)."""
        ti = context.get("ti") if context else None
        return f"{ti.dag_id}.{ti.task_id} (run {ti.run_id})" if ti else f"task {self.task_id} ({by_this_user()})"

    def execute(self, context: Context) -> dict[str, Any] | None:
        spec = resolve_spec(self.spec)
        settings = DeploySettings(
            conn_id=self.conn_id,
            stop_graceful_timeout_s=self.graceful_timeout_s,
            stop_kill_after_s=self.kill_after_s,
            launcher=partial(launcher_for, self.conn_id),  # read only if a driver must be killed
        )
        outcome = stop_job(
            ControlArea.for_checkpoint(spec.checkpoint),
            Holder.for_task(context, f"stop {spec.name}"),
            settings,
            f"stop by {self.dag_id}.{self.task_id}",
            dag_run_lookup(context),
            self.log,
            force=self.force,
            on_purpose=(BY_PERSON, self._who(context)),
        )
        outcome.raise_unless_stopped(spec.name, self.kill_after_s)
        return outcome.status.to_json() if outcome.status else None
