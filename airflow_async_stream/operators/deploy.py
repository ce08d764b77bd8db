"""Deploy a streaming job from its spec: validate, make room on the checkpoint, submit, confirm it runs."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.insight.checkup import cure_named
from airflow_async_stream.lineage.link import LineageLink
from airflow_async_stream.operators.lineage import JobLineage
from airflow_async_stream.spec.load import SpecInput, is_templated, resolve_spec, spec_operand
from airflow_async_stream.state.hold import Holder, dag_run_lookup

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["DeployStreamingJobOperator"]


class DeployStreamingJobOperator(JobLineage, BaseOperator):
    """Submit a streaming job detached and succeed once its query reports its first micro-batch.

    :param spec: the job spec: a mapping, a ``JobSpec``, or the path of a YAML/JSON spec file.
    :param overrides: keys merged into the spec before validation, e.g. ``{"async_progress": {...}}``.
    :param conn_id: Airflow Spark connection; when it does not exist, the embedded local Spark is used.
    :param redeploy: stop a live driver on the same checkpoint first (otherwise such a deploy is refused).
    :param startup_timeout_s: how long to wait for the first micro-batch.
    :param stop_graceful_timeout_s: on redeploy, how long the old driver may finish its batch.
    :param stop_kill_after_s: on redeploy, when an old driver that has not stopped is killed.
    :param allow_unsafe_sync_restart: deploy a synchronous spec even onto a checkpoint Spark cannot restart
        synchronously (logged). By default that deploy fails before spark-submit, naming the cure (the
        safe-disable migration) instead of dying with ``batch N doesn't exist``.
    :param openlineage_inject_parent_job_info: pass this task as the parent job to the OpenLineage Spark
        listener (``spark.openlineage.parent*``); None: ``[openlineage] spark_inject_parent_job_info``.
    :param openlineage_inject_transport_info: pass Airflow's OpenLineage HTTP transport to it (its API key
        through the driver's environment, never the command line); None: ``[openlineage]
        spark_inject_transport_info``.

    Returns (and pushes to XCom) the deployment record: it names the options resolved from connections
    (``secret_options``), never their values; plain spec options are not in it either.
    """

    template_fields = ("spec", "overrides", "conn_id")
    ui_color = "#e8f4fc"

    def __init__(
        self,
        *,
        spec: SpecInput,
        overrides: dict[str, Any] | None = None,
        conn_id: str = StreamingJobHook.default_conn_name,
        redeploy: bool = False,
        startup_timeout_s: float = 300.0,
        stop_graceful_timeout_s: float = 60.0,
        stop_kill_after_s: float = 120.0,
        allow_unsafe_sync_restart: bool = False,
        openlineage_inject_parent_job_info: bool | None = None,
        openlineage_inject_transport_info: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.openlineage_inject_parent_job_info = openlineage_inject_parent_job_info
        self.openlineage_inject_transport_info = openlineage_inject_transport_info
        self.allow_unsafe_sync_restart = allow_unsafe_sync_restart
        self.spec = spec_operand(spec)
        self.overrides = overrides
        self.conn_id = conn_id
        self.redeploy = redeploy
        self.startup_timeout_s = startup_timeout_s
        self.stop_graceful_timeout_s = stop_graceful_timeout_s
        self.stop_kill_after_s = stop_kill_after_s
        if not is_templated(self.spec) and not is_templated(overrides):
            resolve_spec(self.spec, overrides)  # a bad spec breaks the DAG import, with the field named

    def settings(self, context: Context) -> DeploySettings:
        ti = context.get("ti")
        lineage = self.lineage_link(context, resolve_spec(self.spec, self.overrides)) if ti else LineageLink()
        return DeploySettings(
            lineage=lineage,
            conn_id=self.conn_id,
            redeploy=self.redeploy,
            startup_timeout_s=self.startup_timeout_s,
            stop_graceful_timeout_s=self.stop_graceful_timeout_s,
            stop_kill_after_s=self.stop_kill_after_s,
            allow_unsafe_sync_restart=self.allow_unsafe_sync_restart,
            requested_by=f"{self.dag_id}.{self.task_id}",
            airflow={k: getattr(ti, k, None) for k in ("dag_id", "run_id", "task_id", "try_number")},
            launcher=partial(launcher_for, self.conn_id),  # a step that launches nothing reads no connection
        )

    def execute(self, context: Context) -> dict[str, Any] | None:
        spec = resolve_spec(self.spec, self.overrides)
        holder = Holder.for_task(context, f"deploy {spec.name}")
        settings = replace(self.settings(context), launcher=launcher_for(self.conn_id))  # read once, here
        with cure_named(spec.checkpoint, self.log):
            return deploy_job(spec, holder, settings, dag_run_lookup(context), self.log).to_json()
