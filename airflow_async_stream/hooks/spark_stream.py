"""Hook that submits the runtime through the apache-spark provider's SparkSubmitHook.

The Airflow Spark connection chooses the target. With no connection of that id, jobs run on the
embedded local Spark (``local[*]``) from the pyspark package, which needs only Java 17+ on the host.

- local and Spark standalone (client mode): the driver runs detached on this host, executors where the
  master puts them;
- YARN and Kubernetes in cluster mode: spark-submit returns at once (Spark's wait-for-completion settings
  off); the driver runs on the cluster, and killing it goes through the provider hook's YARN/Kubernetes
  calls. Its control area must then be on storage both sides reach (a checkpoint URL such as hdfs://,
  s3a://, abfs://), so a local checkpoint path is refused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import Connection
from airflow.sdk.log import mask_secret

from airflow_async_stream.driver_log import DEFAULT_FILE_BYTES, DEFAULT_FILES, start_pump
from airflow_async_stream.exceptions import ConnectionLookupError, DeployError, JavaNotFoundError
from airflow_async_stream.hooks.connection_lookup import find_connection
from airflow_async_stream.secret_options import ConnectionFields, SecretOptions, kafka_options
from airflow_async_stream.spec import JobSpec

__all__ = ["EMBEDDED_MASTER", "StreamingJobHook", "check_java", "runtime_driver_path"]

EMBEDDED_MASTER = "local[*]"
MIN_JAVA = 17
#: spark-submit settings that make it return once the application is submitted, per cluster manager.
NO_WAIT_CONF = {
    "yarn": {"spark.yarn.submit.waitAppCompletion": "false"},
    "kubernetes": {"spark.kubernetes.submission.waitAppCompletion": "false"},
}
SUBMIT_TIMEOUT_S = 300.0
_JAVA_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def runtime_driver_path() -> str:
    """The runtime's entry file, found without importing the runtime (which imports pyspark)."""
    return str(Path(__file__).resolve().parent.parent / "runtime" / "driver.py")


def check_java() -> str:
    """Return the Java version string, or raise JavaNotFoundError with what to do about it."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise JavaNotFoundError(
            f"Java {MIN_JAVA}+ is required to run Spark on this host, but no `java` was found "
            f"({'JAVA_HOME=' + java_home if java_home else 'not on PATH and JAVA_HOME is unset'}). "
            "Install a JDK 17 or newer (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = _JAVA_VERSION_RE.search(out.stderr + out.stdout)
    if not match:
        raise JavaNotFoundError(f"could not read the version of {java}: {out.stderr.strip()[:200]}")
    major = int(match.group(1))
    if major == 1:  # "1.8.0" style
        major = int(match.group(2) or 0)
    if major < MIN_JAVA:
        raise JavaNotFoundError(f"Spark 4 needs Java {MIN_JAVA}+, but {java} is Java {major}")
    return next(line.strip() for line in (out.stderr + out.stdout).splitlines() if match.group(0) in line)


def _extra_of(conn: Any) -> dict[str, Any]:
    """A connection's extra as a dict; one that is not a JSON object is an error (never read as empty)."""
    try:
        extra = json.loads(conn.extra) if conn.extra else {}
    except ValueError:
        extra = None
    if not isinstance(extra, dict):
        raise ConnectionLookupError(f"the extra of Airflow connection {conn.conn_id!r} is not a JSON object")
    return extra


class StreamingJobHook(SparkSubmitHook):
    """spark-submit for streaming jobs: launches detached and returns the driver's process id."""

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "spark"
    hook_name = "Spark streaming job (async progress)"

    def __init__(self, conn_id: str = default_conn_name, **kwargs: Any) -> None:
        self._embedded = False
        self.extra: dict[str, Any] = {}
        try:
            super().__init__(conn_id=conn_id, **kwargs)
        except NameError as exc:  # the apache-spark hook needs the cncf-kubernetes provider for k8s:// masters
            if "kube_client" not in str(exc):
                raise
            raise DeployError(
                f"connection {conn_id!r} names a Kubernetes master; install apache-airflow-providers-cncf-kubernetes "
                "(this package's `kubernetes` extra) on the Airflow workers"
            ) from exc

    def _resolve_connection(self) -> dict[str, Any]:
        """The provider's resolution of the connection, or of ``local[*]`` when it does not exist.

        Only a connection that does not exist means the embedded local Spark; one that cannot be read
        (a secrets backend failing, a malformed URI or extra) fails here, naming it.
        """
        conn = find_connection(self._conn_id)
        self._embedded = conn is None
        if conn is not None:
            self.extra = _extra_of(conn)
        answer = (
            conn if conn is not None else Connection(conn_id=self._conn_id, conn_type="spark", host=EMBEDDED_MASTER)
        )
        self.get_connection = lambda conn_id: answer  # type: ignore[method-assign] - the provider asks once more
        try:
            data = super()._resolve_connection()
        except ValueError as exc:  # the provider's own checks of the extra (spark-binary, spark-home)
            raise ConnectionLookupError(f"Airflow connection {self._conn_id!r}: {exc}") from None
        finally:
            del self.get_connection
        if self._embedded:
            self.log.info("No connection %r: running on the embedded local Spark (%s)", self._conn_id, EMBEDDED_MASTER)
        return data

    @property
    def master(self) -> str:
        return str(self._connection["master"])

    @property
    def driver_on_this_host(self) -> bool:
        return self._connection["deploy_mode"] != "cluster"

    @property
    def cluster_manager(self) -> str:
        """local, standalone, yarn, kubernetes or other, from the master URL."""
        master = self.master
        if master.startswith("local"):
            return "local"
        if master.startswith("spark://"):
            return "standalone"
        if master.startswith("yarn"):
            return "yarn"
        if master.startswith("k8s://"):
            return "kubernetes"
        return "other"

    def check_target(self, spec: JobSpec) -> None:
        """Refuse, before anything is submitted, what cannot work on this target."""
        if self.driver_on_this_host:
            return
        if self.cluster_manager not in NO_WAIT_CONF:
            raise DeployError(
                f"deploy mode 'cluster' on {self.master}: Spark runs Python applications in cluster mode only "
                "on YARN and Kubernetes; use client mode here (the driver runs detached on the Airflow host)"
            )
        if "://" not in spec.checkpoint or spec.checkpoint.startswith("file://"):
            raise DeployError(
                f"checkpoint: {spec.checkpoint} is a path on this host, but in cluster mode the driver runs on "
                f"the {self.cluster_manager} cluster and cannot reach it (nor its control area beside it); "
                "use storage both reach, e.g. hdfs://, s3a:// or abfs://"
            )
        if any(endpoint and (endpoint.connection or endpoint.secret_options) for endpoint in (spec.source, spec.sink)):
            raise DeployError(
                "source/sink secrets from Airflow connections reach a driver on this host only; in cluster mode "
                "give the cluster its Kafka credentials (e.g. a Kubernetes secret or a YARN credential provider)"
            )

    def _get_spark_binary_path(self) -> list[str]:
        """The configured binary from PATH, else the spark-submit shipped in the pyspark package."""
        binary = self._connection["spark_binary"]
        found = shutil.which(binary)
        if found:
            return [found]
        spec = find_spec("pyspark")
        if spec and spec.submodule_search_locations:
            bundled = Path(next(iter(spec.submodule_search_locations))) / "bin" / binary
            if bundled.exists():
                return [str(bundled)]
        raise DeployError(f"{binary} was not found on PATH nor in the installed pyspark package")

    def add_conf(self, conf: dict[str, str]) -> None:
        """Further --conf entries (settings the spec does not set itself take their defaults from here)."""
        self._conf = {**self._conf, **conf}

    def build_command(self, application: str) -> list[str]:
        """The exact spark-submit argument list (no shell ever sees it)."""
        return self._build_spark_submit_command(application)

    def connection_fields(self, field: str, conn_id: str) -> ConnectionFields:
        """An Airflow connection named by a spec field, or a DeployError naming that field (absent, or unreadable)."""
        try:
            conn = find_connection(conn_id)
            extra = _extra_of(conn) if conn is not None else {}
        except ConnectionLookupError as exc:
            raise ConnectionLookupError(f"{field}: {exc}") from None
        if conn is None:
            raise DeployError(f"{field}: Airflow connection {conn_id!r} does not exist")
        fields = ConnectionFields(conn_id, conn.host, conn.port, conn.login, conn.password, extra)
        if fields.password:
            mask_secret(fields.password)
        return fields

    def resolve_secret_options(self, spec: JobSpec) -> SecretOptions:
        """Options the spec names by connection (``connection``, ``secret_options``), masked in Airflow's logs."""
        resolved = SecretOptions()
        for side in ("source", "sink"):
            endpoint = getattr(spec, side)
            if endpoint is None:
                continue
            if endpoint.connection:
                conn = self.connection_fields(f"{side}.connection", endpoint.connection)
                try:
                    options, secret = kafka_options(conn)
                except ValueError as exc:
                    raise DeployError(f"{side}.connection: {exc}") from exc
                clash = sorted(set(options) & set(endpoint.options))
                if clash:
                    raise DeployError(
                        f"{side}.options.{clash[0]}: also set by connection {endpoint.connection!r}; set it in one place"
                    )
                for key, value in options.items():
                    resolved.add(side, key, value, secret=key in secret)
                if conn.password:
                    resolved.secret_values.add(conn.password)
            for key, conn_id in endpoint.secret_options.items():
                field = f"{side}.secret_options.{key}"
                conn = self.connection_fields(field, conn_id)
                if not conn.password:
                    raise DeployError(f"{field}: Airflow connection {conn_id!r} has no password to use as the value")
                resolved.add(side, key, conn.password, secret=True)
        for value in resolved.secret_values:
            mask_secret(value)
        return resolved

    def launch_detached(
        self,
        application: str,
        log_path: str,
        extra_env: dict[str, str] | None = None,
        log_limits: tuple[int, int] = (DEFAULT_FILE_BYTES, DEFAULT_FILES),
    ) -> tuple[int, int]:
        """Start spark-submit in its own session, output to ``log_path``; return its and the log pump's pids.

        The output goes through a pump that rotates ``log_path`` at ``log_limits`` (bytes per file, files
        kept; see driver_log.py). ``extra_env`` reaches only this process and the driver it starts (secrets
        travel this way, never on the command line).
        """
        if not self.driver_on_this_host:
            raise DeployError(
                f"deploy mode 'cluster' on {self.master} is not supported yet: use client mode "
                "(the driver runs detached on the Airflow host)"
            )
        check_java()
        command = self.build_command(application)
        env = os.environ.copy()
        env.update(self._env or {})
        env.update(extra_env or {})
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        pump, output = start_pump(log_path, *log_limits)
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        finally:
            os.close(output)
        # Reap both when they end, so a long-lived Airflow process never keeps a zombie that looks alive.
        for child in (process, pump):
            threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
        return process.pid, pump.pid

    def submit_to_cluster(self, application: str, write_log: Callable[[bytes], None]) -> dict[str, Any]:
        """Cluster mode: submit and return once the cluster accepted it, naming the driver it runs.

        spark-submit's output is handed to ``write_log`` (the control area's driver.log).

        Returns ``{"kind": "yarn-application", "application_id": ...}`` or
        ``{"kind": "kubernetes-pod", "pod": ..., "namespace": ...}``.
        """
        manager = self.cluster_manager
        self.add_conf(NO_WAIT_CONF[manager])
        command = self.build_command(application)
        env = {**os.environ, **(self._env or {})}
        result = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=SUBMIT_TIMEOUT_S, check=False
        )
        write_log(result.stdout + result.stderr)
        lines = (result.stdout + result.stderr).decode("utf-8", "replace").splitlines()
        self._process_spark_submit_log(iter(lines))
        if result.returncode != 0:
            raise DeployError(
                f"spark-submit to {self.master} failed (exit {result.returncode}): " + "\n".join(lines[-15:])
            )
        if manager == "yarn" and self._yarn_application_id:
            return {"kind": "yarn-application", "application_id": self._yarn_application_id}
        if manager == "kubernetes" and self._kubernetes_driver_pod:
            namespace = self._connection.get("namespace") or "default"
            return {"kind": "kubernetes-pod", "pod": self._kubernetes_driver_pod, "namespace": namespace}
        raise DeployError(
            f"spark-submit to {self.master} named no {manager} driver; its output:\n" + "\n".join(lines[-15:])
        )

    def cluster_driver_state(self, driver: dict[str, Any]) -> str | None:
        """The cluster manager's word on a cluster-mode driver (YARN application state, Kubernetes pod phase).

        YARN goes through the provider hook's ResourceManager REST call when the connection names
        ``yarn_resourcemanager_webapp_address``, else through ``yarn application -status``.
        """
        kind = driver.get("kind")
        if kind == "yarn-application":
            app_id = str(driver["application_id"])
            if self.extra.get(self._YARN_RM_WEBAPP_ADDRESS_EXTRA_KEY):
                return str(self.query_yarn_application_status(app_id))
            env = {**os.environ, **(self._env or {})}
            out = subprocess.run(
                ["yarn", "application", "-status", app_id], capture_output=True, text=True, env=env, check=False
            )
            match = re.search(r"^\s*State\s*:\s*(\w+)", out.stdout, re.MULTILINE)
            return match.group(1) if match else None
        if kind == "kubernetes-pod":
            from airflow.providers.apache.spark.hooks import spark_submit

            pod = spark_submit.kube_client.get_kube_client().read_namespaced_pod(driver["pod"], driver.get("namespace"))
            return str(pod.status.phase)
        return None

    def kill_cluster_driver(self, driver: dict[str, Any]) -> None:
        """Kill a driver running on the cluster, through the apache-spark provider hook's own calls."""
        kind = driver.get("kind")
        if kind == "yarn-application":
            self._yarn_application_id = str(driver["application_id"])
            if self._yarn_track_via_rm_api:
                self._kill_yarn_application(self._yarn_application_id)
                return
            env = {**os.environ, **(self._env or {})}
            done = subprocess.run(["yarn", "application", "-kill", self._yarn_application_id], env=env, check=False)
            self.log.info("yarn application -kill %s: exit %s", self._yarn_application_id, done.returncode)
        elif kind == "kubernetes-pod":
            self._kubernetes_driver_pod = str(driver["pod"])
            self._connection["namespace"] = driver.get("namespace") or self._connection.get("namespace")
            self._delete_driver_pod()
        else:
            raise DeployError(f"cannot kill a driver of kind {kind!r} through the cluster manager")
