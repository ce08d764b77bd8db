"""The cluster launcher: YARN or Kubernetes cluster mode, through the apache-spark provider's hook.

spark-submit returns at once (Spark's wait-for-completion settings off); the driver runs on the cluster,
and its state and kill go through the provider hook's YARN/Kubernetes calls, a kill only of an application or
pod tagged with the deployment (tags.py). Its control area must then
be on storage both sides reach (a checkpoint URL such as hdfs://, s3a://, abfs://), so a local checkpoint
path is refused.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from pathlib import Path

from airflow_async_stream.driver import process as driver_process
from airflow_async_stream.driver.bundle import ARCHIVE_ALIAS, runtime_bundle
from airflow_async_stream.driver.launcher import Submission, comma_list
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.shipped import BUNDLE_FOLDER_EXTRA, refuse_without_upload_folder, shipped
from airflow_async_stream.driver.spark_version import SparkBuild, refuse_on, target_build
from airflow_async_stream.exceptions import DeployError, NotSignalledError
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.hooks.tags import tag_conf, unproven
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver

__all__ = ["NO_WAIT_CONF", "ClusterLauncher"]

_log = logging.getLogger(__name__)

#: spark-submit settings that make it return once the application is submitted, per cluster manager.
NO_WAIT_CONF = {
    "yarn": {"spark.yarn.submit.waitAppCompletion": "false"},
    "kubernetes": {"spark.kubernetes.submission.waitAppCompletion": "false"},
}
SUBMIT_TIMEOUT_S = 300.0
#: How often a wait asks the cluster manager after a driver (each answer is a request to YARN or Kubernetes).
STATE_EVERY_S = 5.0
#: YARN application states and Kubernetes pod phases of a driver that is no more.
ENDED_STATES = frozenset({"FINISHED", "FAILED", "KILLED", "SUCCEEDED"})
_YARN_RM_EXTRA = "yarn_resourcemanager_webapp_address"


class ClusterLauncher:
    """The driver runs on a YARN or Kubernetes cluster; this host submits it, asks after it and kills it."""

    def __init__(self, hook: StreamingJobHook) -> None:
        self.hook = hook
        self.master = hook.master
        self.extra = hook.extra
        self.manager = hook.cluster_manager
        self._next_state_at = 0.0
        self._spark: SparkBuild | None = None

    def check(self, spec: JobSpec) -> str:
        if self.manager not in NO_WAIT_CONF:
            raise DeployError(
                f"deploy mode 'cluster' on {self.master}: Spark runs Python applications in cluster mode only "
                "on YARN and Kubernetes; use client mode here (the driver runs detached on the Airflow host)"
            )
        if "://" not in spec.checkpoint or spec.checkpoint.startswith("file://"):
            raise DeployError(
                f"checkpoint: {spec.checkpoint} is a path on this host, but in cluster mode the driver runs on "
                f"the {self.manager} cluster and cannot reach it (nor its control area beside it); "
                "use storage both reach, e.g. hdfs://, s3a:// or abfs://"
            )
        if any(endpoint and (endpoint.connection or endpoint.secret_options) for endpoint in (spec.source, spec.sink)):
            raise DeployError(
                "source/sink secrets from Airflow connections reach a driver on this host only; in cluster mode "
                "give the cluster its Kafka credentials (e.g. a Kubernetes secret or a YARN credential provider)"
            )
        if "," in (spec.application or ""):
            raise DeployError(f"application: {spec.application} ships on --py-files, where a comma splits names")
        if self.manager == "kubernetes":
            refuse_without_upload_folder(spec, self.extra.get(BUNDLE_FOLDER_EXTRA), self._client_defaults())
        return f"cluster mode on {self.manager} ({self.master}); {refuse_on(spec, self.spark()).describe()}"

    def _client_defaults(self) -> Path:
        """The spark-defaults.conf of the client's spark-submit."""
        conf_dir = self.hook.env.get("SPARK_CONF_DIR") or os.environ.get("SPARK_CONF_DIR")
        binary = Path(self.hook.base_command()[0]).resolve()
        return Path(conf_dir or binary.parent.parent / "conf") / "spark-defaults.conf"

    def spark(self) -> SparkBuild:
        """The client's spark-submit's Spark, unless the connection's extra names the cluster's."""
        if self._spark is None:
            self._spark = target_build(self.hook.base_command()[0], self.hook.env, self.extra)
        return self._spark

    def secrets(self, spec: JobSpec) -> SecretOptions:
        return SecretOptions()  # check() refused any: they would not reach the cluster

    def launch(self, submission: Submission, control: ControlArea) -> Driver:
        """Submit and return once the cluster accepted it, naming the driver it runs; spark-submit's output
        goes to the control area's driver.log."""
        bundle = shipped(runtime_bundle(submission.protocols), self.extra.get(BUNDLE_FOLDER_EXTRA))
        conf = {**NO_WAIT_CONF[self.manager], **submission.conf}
        # The runtime beside the driver, where its entry looks; the job's own archives after it (one --archives:
        # spark-submit's option would replace the setting). Its application and Python files on --py-files.
        archives = [f"{bundle.archive}#{ARCHIVE_ALIAS}", *comma_list(conf.pop("spark.archives", ""))]
        py_files = [*submission.py_files, *([submission.application] if submission.application else [])]
        hook = StreamingJobHook(
            conn_id=self.hook.conn_id,
            connection=self.hook.connection,
            conf={**conf, **tag_conf(self.manager, submission.deployment_id, submission.conf)},
            name=submission.name,
            application_args=submission.arguments,
            archives=",".join(archives),
            py_files=",".join(py_files) or None,
        )
        if submission.env:  # only the lineage link can be here: check() refused source/sink secrets
            _log.warning(
                "lineage: the OpenLineage transport's credentials and RUNNING-event settings reach a driver on "
                "this host only; on %s give the cluster its own OpenLineage configuration",
                self.manager,
            )
        command = hook.build_command(bundle.entry)
        env = {**os.environ, **hook.env}
        result = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=SUBMIT_TIMEOUT_S, check=False
        )
        control.write_bytes(ControlArea.DRIVER_LOG, result.stdout + result.stderr)
        lines = (result.stdout + result.stderr).decode("utf-8", "replace").splitlines()
        if result.returncode != 0:
            raise DeployError(
                f"spark-submit to {self.master} failed (exit {result.returncode}): " + "\n".join(lines[-15:])
            )
        return self._named_driver(hook, lines).but(log=control.path(ControlArea.DRIVER_LOG))

    def _named_driver(self, hook: StreamingJobHook, lines: list[str]) -> Driver:
        hook._process_spark_submit_log(iter(lines))
        if self.manager == "yarn" and hook._yarn_application_id:
            return Driver(kind="yarn-application", application_id=hook._yarn_application_id)
        if self.manager == "kubernetes" and hook._kubernetes_driver_pod:
            namespace = hook._connection.get("namespace") or "default"
            return Driver(kind="kubernetes-pod", pod=hook._kubernetes_driver_pod, namespace=namespace)
        raise DeployError(
            f"spark-submit to {self.master} named no {self.manager} driver; its output:\n" + "\n".join(lines[-15:])
        )

    def state(self, driver: Driver) -> str | None:
        """The cluster manager's word (YARN application state, Kubernetes pod phase).

        YARN goes through the provider hook's ResourceManager REST call when the connection names
        ``yarn_resourcemanager_webapp_address``, else through ``yarn application -status``.
        """
        kind = driver.kind
        if kind == "yarn-application":
            app_id = str(driver.application_id)
            if self.extra.get(_YARN_RM_EXTRA):
                return str(self.hook.query_yarn_application_status(app_id))
            out = subprocess.run(
                ["yarn", "application", "-status", app_id], capture_output=True, text=True, env=self._env(), check=False
            )
            match = re.search(r"^\s*State\s*:\s*(\w+)", out.stdout, re.MULTILINE)
            return match.group(1) if match else None
        if kind == "kubernetes-pod":
            from airflow.providers.apache.spark.hooks import spark_submit

            kube = spark_submit.kube_client  # type: ignore[attr-defined]  # the hook's own client, as it calls it
            pod = kube.get_kube_client().read_namespaced_pod(driver.pod, driver.namespace)
            return str(pod.status.phase)
        return None

    def ended(self, driver: Driver) -> str | None:
        """Asked on every poll of a wait: the cluster manager answers every STATE_EVERY_S at most."""
        if driver.on_a_host:
            return LocalLauncher().ended(driver)
        if time.monotonic() < self._next_state_at:
            return None
        self._next_state_at = time.monotonic() + STATE_EVERY_S
        state = self.state(driver)
        return f"the driver ended on its cluster ({state})" if state and state.upper() in ENDED_STATES else None

    def kill(self, driver: Driver, target: driver_process.Target) -> str:
        """Kill a driver on the cluster through the provider hook's own calls, once the application or pod
        carries ``target``'s deployment tag (tags.py; one of this host: as LocalLauncher)."""
        if driver.on_a_host:
            return LocalLauncher().kill(driver, target)
        hook = self.hook
        kind = driver.kind
        why = unproven(hook, driver, target, self._env()) if kind in ("yarn-application", "kubernetes-pod") else None
        if why:
            raise NotSignalledError(why)
        if kind == "yarn-application":
            hook._yarn_application_id = str(driver.application_id)
            if hook._yarn_track_via_rm_api:
                hook._kill_yarn_application(hook._yarn_application_id)
            else:
                done = subprocess.run(
                    ["yarn", "application", "-kill", hook._yarn_application_id], env=self._env(), check=False
                )
                hook.log.info("yarn application -kill %s: exit %s", hook._yarn_application_id, done.returncode)
        elif kind == "kubernetes-pod":
            hook._kubernetes_driver_pod = str(driver.pod)
            hook._connection["namespace"] = driver.namespace or hook._connection.get("namespace")
            hook._delete_driver_pod()
        else:
            raise DeployError(f"cannot kill a driver of kind {kind!r} through the cluster manager")
        return "killed on the cluster"

    def _env(self) -> dict[str, str]:
        return {**os.environ, **self.hook.env}
