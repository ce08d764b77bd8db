"""Stop a streaming job gracefully: between micro-batches, with a hard stop only after a timeout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.control import ControlArea
from airflow_async_stream.deployer import cluster_killer
from airflow_async_stream.exceptions import DriverFailedError, StopTimeoutError
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.lease import Holder, held, revoke
from airflow_async_stream.lifecycle import stop_driver
from airflow_async_stream.operators.lease import dag_run_state
from airflow_async_stream.spec import SpecInput, is_templated, resolve_spec, spec_operand

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["StopStreamingJobOperator"]


class StopStreamingJobOperator(BaseOperator):
    """Request a graceful stop of the job's live driver and wait for its final status.

    :param spec: the job spec (mapping, ``JobSpec`` or file path); only its checkpoint is used.
    :param graceful_timeout_s: how long the driver may take to finish the micro-batch in flight.
    :param kill_after_s: when a driver that has not stopped is killed (on this host, or on its YARN or
        Kubernetes cluster through ``conn_id``'s hook).
    :param conn_id: the Airflow Spark connection the job was deployed with (for cluster-mode kills).
    :param force: stop even while another DAG run or process holds the job (a migration, a rollout);
        that holder's next step then fails without changing the job. Otherwise such a stop fails
        naming the holder.

    Stopping a job that is not running succeeds and says so. Returns the final status record; fails
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

    def execute(self, context: Context) -> dict[str, Any] | None:
        spec = resolve_spec(self.spec)
        control = ControlArea.for_checkpoint(spec.checkpoint)
        holder = Holder.for_task(context, f"stop {spec.name}")
        if self.force:
            revoked = revoke(control, holder, f"forced stop by {self.dag_id}.{self.task_id}")
            if revoked:
                self.log.warning("Forced: ended the hold of %s (%s)", revoked.get("holder"), revoked.get("purpose"))
        ttl_s = self.graceful_timeout_s + self.kill_after_s + 60
        with held(control, holder, ttl_s, dag_run_state):
            outcome = stop_driver(
                control,
                f"stop by {self.dag_id}.{self.task_id}",
                graceful_timeout_s=self.graceful_timeout_s,
                kill_after_s=self.kill_after_s,
                log=self.log,
                kill_remote=cluster_killer(self.conn_id),
            )
        status = outcome.status
        if outcome.exiting_pid:
            raise StopTimeoutError(
                f"job {spec.name!r} stopped its query, but its driver process (pid {outcome.exiting_pid}) is "
                f"still exiting {self.kill_after_s:.0f} s after the stop request"
            )
        if outcome.was_live and status and status.get("state") == "failed":
            raise DriverFailedError(f"job {spec.name!r} did not stop cleanly: {status.get('error')}")
        return status
