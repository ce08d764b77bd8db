"""The Airflow Spark connection and the spark-submit command it makes (hooks/launchers.py turns them into
the launcher the deploy path uses).

The apache-spark provider's ``SparkSubmitHook`` resolves the connection and builds the command. What
this hook uses of it that is not public is named in ``PROVIDER_PRIVATES``, which a unit test checks
against the installed provider, and ``pyproject.toml`` caps the provider below its next major version.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.spark.hooks import spark_submit
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from airflow_async_stream.driver.local import spark_submit_binary
from airflow_async_stream.exceptions import ConnectionLookupError, DeployError
from airflow_async_stream.hooks.connection_lookup import extra_of, find_connection

__all__ = ["PROVIDER_PRIVATES", "StreamingJobHook"]

#: Every member of SparkSubmitHook used here that is not public (tests/unit/hooks/test_spark_stream.py checks each).
PROVIDER_PRIVATES = (
    "_connection",  # the resolved connection: master, deploy_mode, namespace, spark_binary
    "_env",  # environment the provider sets for spark-submit (YARN's env_vars)
    "_get_spark_binary_path",  # overridden: the binary from PATH, else pyspark's own
    "_build_spark_common_args",  # the connection's arguments (master, deploy mode, queue, keytab, ...)
    "_build_spark_submit_command",  # cluster mode: the whole command
    "_process_spark_submit_log",  # cluster mode: reads the YARN application id or the driver pod
    "_yarn_application_id",
    "_kubernetes_driver_pod",
    "_yarn_track_via_rm_api",
    "_kill_yarn_application",
    "_delete_driver_pod",
)
# Also read: the provider module's ``kube_client`` (absent, or None, without the cncf-kubernetes provider).


class StreamingJobHook(SparkSubmitHook):
    """spark-submit for streaming jobs: the connection's target, and the command it makes."""

    conn_name_attr = "conn_id"
    default_conn_name = "spark_default"
    conn_type = "spark"
    hook_name = "Spark streaming job (async progress)"

    def __init__(self, conn_id: str = default_conn_name, connection: Any = None, **kwargs: Any) -> None:
        """``connection``: the connection ``conn_id`` names when the caller has just read it (one read fewer)."""
        self.conn_id = conn_id
        conn = self.connection = connection if connection is not None else find_connection(conn_id)
        if conn is None:
            raise DeployError(
                f"Airflow connection {conn_id!r} does not exist (hooks.launchers.launcher_for runs such jobs locally)"
            )
        self.extra: dict[str, Any] = extra_of(conn)
        if "k8s" in f"{conn.conn_type}://{conn.host}" and getattr(spark_submit, "kube_client", None) is None:
            raise DeployError(
                f"connection {conn_id!r} names a Kubernetes master; install apache-airflow-providers-cncf-kubernetes "
                "(this package's `kubernetes` extra) on the Airflow workers"
            )
        try:
            super().__init__(conn_id=conn_id, **kwargs)
        except ValueError as exc:  # the provider's own checks of the extra (spark-binary, spark-home)
            raise ConnectionLookupError(f"Airflow connection {conn_id!r}: {exc}") from None

    @property
    def master(self) -> str:
        return str(self._connection["master"])

    @property
    def driver_on_this_host(self) -> bool:
        return bool(self._connection["deploy_mode"] != "cluster")

    @property
    def cluster_manager(self) -> str:
        """local, standalone, yarn, kubernetes or other, from the master URL."""
        for prefix, manager in (
            ("local", "local"),
            ("spark://", "standalone"),
            ("yarn", "yarn"),
            ("k8s://", "kubernetes"),
        ):
            if self.master.startswith(prefix):
                return manager
        return "other"

    @property
    def env(self) -> dict[str, str]:
        """Environment the connection sets for spark-submit (after the command was built)."""
        return dict(self._env or {})

    def _get_spark_binary_path(self) -> list[str]:
        """The configured binary from PATH, else the spark-submit shipped in the pyspark package."""
        return [spark_submit_binary(self._connection["spark_binary"])]

    def base_command(self) -> list[str]:
        """The binary and the connection's arguments; a job's own settings and arguments follow them."""
        return [*self._get_spark_binary_path(), *self._build_spark_common_args()]

    def build_command(self, application: str) -> list[str]:
        """The exact spark-submit argument list (no shell ever sees it)."""
        return self._build_spark_submit_command(application)
