"""Deploy a streaming job from its spec: validate, make room on the checkpoint, submit, confirm it runs."""

from __future__ import annotations

import socket
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream import registry
from airflow_async_stream.checkpoint import latest_batch
from airflow_async_stream.control import ControlArea, liveness, now
from airflow_async_stream.driver_args import driver_arguments
from airflow_async_stream.exceptions import DriverStartTimeoutError, JobAlreadyRunningError
from airflow_async_stream.hooks.spark_stream import StreamingJobHook, check_java, runtime_driver_path
from airflow_async_stream.lease import Holder, held
from airflow_async_stream.lifecycle import stop_driver, wait_until_running
from airflow_async_stream.operators.lease import dag_run_state
from airflow_async_stream.secret_options import SecretOptions
from airflow_async_stream.spec import JobSpec, SpecInput, is_templated, resolve_spec, spec_operand

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["DeployStreamingJobOperator"]

#: spark-submit settings the provider sets unless the spec's spark_conf says otherwise.
DEFAULT_SPARK_CONF = {"spark.ui.showConsoleProgress": "false"}


class DeployStreamingJobOperator(BaseOperator):
    """Submit a streaming job detached and succeed once its query reports its first micro-batch.

    :param spec: the job spec: a mapping, a ``JobSpec``, or the path of a YAML/JSON spec file.
    :param overrides: keys merged into the spec before validation, e.g. ``{"async_progress": {...}}``.
    :param conn_id: Airflow Spark connection; when it does not exist, the embedded local Spark is used.
    :param redeploy: stop a live driver on the same checkpoint first (otherwise such a deploy is refused).
    :param startup_timeout_s: how long to wait for the first micro-batch.
    :param stop_graceful_timeout_s: on redeploy, how long the old driver may finish its batch.
    :param stop_kill_after_s: on redeploy, when an old driver that has not stopped is killed.

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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = spec_operand(spec)
        self.overrides = overrides
        self.conn_id = conn_id
        self.redeploy = redeploy
        self.startup_timeout_s = startup_timeout_s
        self.stop_graceful_timeout_s = stop_graceful_timeout_s
        self.stop_kill_after_s = stop_kill_after_s
        if not is_templated(self.spec) and not is_templated(overrides):
            resolve_spec(self.spec, overrides)  # a bad spec breaks the DAG import, with the field named

    def execute(self, context: Context) -> dict[str, Any]:
        spec = resolve_spec(self.spec, self.overrides)
        control = ControlArea.for_checkpoint(spec.checkpoint)
        spec_bytes = spec.model_dump_json(by_alias=True, exclude_none=True, indent=2).encode()
        deployment_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        hook = StreamingJobHook(
            conn_id=self.conn_id,
            conf={**DEFAULT_SPARK_CONF, **spec.spark_conf_strings()},
            name=f"async-stream-{spec.name}",
            application_args=driver_arguments(control.url, deployment_id, spec, spec_bytes),
        )
        if hook.driver_on_this_host:
            self.log.info("Java on this host: %s", check_java())
        secrets = hook.resolve_secret_options(spec)  # a missing connection fails here, before any Spark work
        control.ensure()
        ttl = self.startup_timeout_s + self.stop_kill_after_s + 60
        with held(control, Holder.for_task(context, f"deploy {spec.name}"), ttl, dag_run_state):
            return self._deploy(spec, control, hook, deployment_id, spec_bytes, secrets, context)

    def _deploy(
        self,
        spec: JobSpec,
        control: ControlArea,
        hook: StreamingJobHook,
        deployment_id: str,
        spec_bytes: bytes,
        secrets: SecretOptions,
        context: Context,
    ) -> dict[str, Any]:
        self._make_room(control, spec)
        record = self._record(spec, hook, control, deployment_id, context)
        record["secret_options"] = secrets.names()  # which options came from connections; never their values
        control.write_bytes(ControlArea.SPEC, spec_bytes)
        control.write_json(ControlArea.DEPLOYMENT, record)
        control.remove(ControlArea.STOP_REQUEST)

        log_path = control.path(ControlArea.DRIVER_LOG)
        pid = hook.launch_detached(runtime_driver_path(), log_path, extra_env=secrets.to_env())
        record["driver"] = {"kind": "local-process", "host": socket.gethostname(), "launcher_pid": pid, "log": log_path}
        control.write_json(ControlArea.DEPLOYMENT, record)
        registry.record(spec.name, spec.checkpoint, control.url, deployment_id)
        self.log.info(
            "Submitted %s as deployment %s (spark-submit pid %s, log %s)", spec.name, deployment_id, pid, log_path
        )

        try:
            status = wait_until_running(control, deployment_id, pid, self.startup_timeout_s, log=self.log)
        except DriverStartTimeoutError:
            stop_driver(control, "startup timed out", graceful_timeout_s=5, kill_after_s=30, log=self.log)
            raise
        record.update(
            state="running",
            first_batch_id=status.get("first_batch_id"),
            query_id=status.get("query_id"),
            run_id=status.get("run_id"),
            confirmed_at=now(),
        )
        record["driver"]["driver_pid"] = status.get("pid")
        control.write_json(ControlArea.DEPLOYMENT, record)
        self.log.info(
            "Job %s runs: query %s, first batch %s, async progress %s",
            spec.name,
            record["query_id"],
            record["first_batch_id"],
            record["async_progress"],
        )
        return record

    def _make_room(self, control: ControlArea, spec: JobSpec) -> None:
        """Never two drivers on one checkpoint: refuse, or on redeploy stop the live one first."""
        status = control.read_json(ControlArea.STATUS)
        judged = liveness(status)
        if not judged.live:
            return
        assert status is not None
        holder = f"deployment {status.get('deployment_id')} (pid {status.get('pid')} on {status.get('host')})"
        if not self.redeploy:
            raise JobAlreadyRunningError(
                f"job {spec.name!r}: checkpoint {spec.checkpoint} already has a live driver, {holder}; "
                f"{judged.reason}. Stop it first, or deploy with redeploy=True to stop it and take over."
            )
        self.log.info("Redeploy: stopping %s first", holder)
        outcome = stop_driver(
            control,
            f"redeploy by {self.dag_id}.{self.task_id}",
            graceful_timeout_s=self.stop_graceful_timeout_s,
            kill_after_s=self.stop_kill_after_s,
            log=self.log,
        )
        self.log.info("Previous deployment ended: %s", (outcome.status or {}).get("state"))

    def _record(
        self, spec: JobSpec, hook: StreamingJobHook, control: ControlArea, deployment_id: str, context: Context
    ) -> dict[str, Any]:
        ti = context.get("ti")
        return {
            "job": spec.name,
            "deployment_id": deployment_id,
            "checkpoint": spec.checkpoint,
            "control_area": control.url,
            "master": hook.master,
            "async_progress": spec.async_progress.model_dump(),
            "trigger": spec.trigger.model_dump(exclude_none=True),
            "start_batch": latest_batch(spec.checkpoint, "commits"),
            "deployed_at": now(),
            "state": "submitted",
            "airflow": {
                "dag_id": getattr(ti, "dag_id", None),
                "run_id": getattr(ti, "run_id", None),
                "task_id": getattr(ti, "task_id", None),
                "try_number": getattr(ti, "try_number", None),
            },
        }
