"""The launcher an Airflow Spark connection names, built on the Airflow side and passed into the core
(``DeploySettings(launcher=launcher_for(conn_id))``, or ``functools.partial(launcher_for, conn_id)`` where
settings are made at DAG parse: it reads the connection only when a deploy or stop needs it).

- no connection of that id: the embedded local Spark (``local[*]``) from the pyspark package, on this host
  (only a connection that does not exist means that: one that cannot be read fails, naming it);
- local or a standalone master in client mode: ``LocalLauncher`` with the connection's command;
- YARN or Kubernetes in cluster mode: ``ClusterLauncher`` (hooks/cluster.py).
"""

from __future__ import annotations

import logging

from airflow_async_stream.driver.launcher import EMBEDDED_MASTER, Launcher
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.hooks.cluster import ClusterLauncher
from airflow_async_stream.hooks.connection_lookup import find_connection, secret_options_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook

__all__ = ["launcher_for"]

_log = logging.getLogger(__name__)


def launcher_for(conn_id: str) -> Launcher:
    """The launcher a connection names; the embedded local Spark when no such connection exists."""
    connection = find_connection(conn_id)
    if connection is None:
        _log.info("No connection %r: running on the embedded local Spark (%s)", conn_id, EMBEDDED_MASTER)
        return LocalLauncher(secrets=secret_options_for)
    hook = StreamingJobHook(conn_id=conn_id, connection=connection)
    if not hook.driver_on_this_host:
        return ClusterLauncher(hook)
    return LocalLauncher(hook.base_command(), hook.master, env=hook.env, extra=hook.extra, secrets=secret_options_for)
