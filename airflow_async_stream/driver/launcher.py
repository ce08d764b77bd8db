"""Where a driver runs: one launcher per deploy mode, so the deploy path never asks "here, or on a cluster?".

A launcher checks a spec against its target, resolves the spec's secret options, launches a driver
detached (saying where its log goes), tells its cluster's word on a driver and whether its launch ended,
and kills one. Two kinds:

- ``LocalLauncher`` (local.py): the driver runs on this host (local Spark, or a standalone master in client mode):
  spark-submit from an argument list in its own session, its output through the rotating log pump, and
  the process identity that lets this host, and only this host, signal it later;
- the hook's ``ClusterLauncher`` (hooks/cluster.py): YARN or Kubernetes cluster mode.

``DeferredLauncher`` (deferred.py) builds its launcher on first use. The Airflow side builds a launcher
from a connection (``hooks/launchers.py``) and passes it in; without Airflow, ``LocalLauncher()`` runs the
embedded local Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_async_stream.driver.args import driver_arguments
from airflow_async_stream.driver.maven_packages import packages_conf
from airflow_async_stream.driver.process import Target
from airflow_async_stream.driver.spark_version import SparkBuild
from airflow_async_stream.lineage.link import LineageLink
from airflow_async_stream.spec.logs import DEFAULT_DRIVER_LOG_BYTES, DEFAULT_DRIVER_LOG_FILES
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver
from airflow_async_stream.state.storage import is_local_url

__all__ = ["DEFAULT_SPARK_CONF", "EMBEDDED_MASTER", "Launcher", "Submission", "comma_list", "remote_protocols"]

EMBEDDED_MASTER = "local[*]"
#: spark-submit settings the provider sets unless the spec's spark_conf says otherwise.
DEFAULT_SPARK_CONF = {"spark.ui.showConsoleProgress": "false"}


@dataclass(frozen=True)
class Submission:
    """One driver to launch, as the deploy decided it; the launcher adds where and how."""

    job: str
    deployment_id: str
    arguments: list[str]
    conf: dict[str, str]
    #: Reaches only spark-submit and the driver it starts (secrets travel this way, never on the command line).
    env: dict[str, str] = field(default_factory=dict, repr=False)
    #: The driver log's rotation: bytes per file, files kept (see driver/log.py).
    log_limits: tuple[int, int] = (DEFAULT_DRIVER_LOG_BYTES, DEFAULT_DRIVER_LOG_FILES)
    #: The spec as the driver reads it (spec.json); its digest is on the command line.
    spec_json: bytes = field(default=b"", repr=False)
    #: Which options came from connections (for the deployment record; never their values).
    secret_names: list[str] = field(default_factory=list)
    #: The storage protocols the driver reaches (its control area's, its checkpoint's): the bundle carries their clients.
    protocols: tuple[str, ...] = ()
    #: What the job's own code imports (``python_dependencies``, then ``spark.submit.pyFiles``): ``--py-files``.
    py_files: tuple[str, ...] = ()
    #: The spec's application file: shipped beside a driver that runs where this host's files are not.
    application: str | None = None

    @classmethod
    def for_spec(
        cls,
        spec: JobSpec,
        control_url: str,
        deployment_id: str,
        secrets: SecretOptions,
        extra: Mapping[str, Any],
        spark: SparkBuild,
        lineage: LineageLink | None = None,
    ) -> Submission:
        """The driver for ``spec``: its command line, its Spark settings (the Kafka connector a Kafka job
        needs, the lineage link's plain entries, then the spec's own), its secrets (with the lineage
        transport's credentials) as environment, its log's limits."""
        lineage = lineage or LineageLink()
        for key, value in lineage.secret_conf.items():
            secrets.add("conf", key, value, secret=True)
        spec_json = spec.to_json_bytes()
        logs = spec.log_settings
        conf = {
            **DEFAULT_SPARK_CONF,
            **packages_conf(spec, dict(extra), spark),
            **lineage.conf,
            **spec.spark_conf_strings(),
        }
        # One --py-files: spark-submit's option would replace the setting, not add to it.
        py_files = (*spec.python_dependencies, *comma_list(conf.pop("spark.submit.pyFiles", "")))
        return cls(
            job=spec.name,
            deployment_id=deployment_id,
            arguments=driver_arguments(control_url, deployment_id, spec, spec_json),
            conf=conf,
            env={**secrets.to_env(), **lineage.env()},
            log_limits=(logs.driver_log_max_bytes, logs.driver_log_files),
            spec_json=spec_json,
            secret_names=secrets.names(),
            protocols=remote_protocols(control_url, spec.checkpoint),
            py_files=py_files,
            application=spec.application,
        )

    @property
    def name(self) -> str:
        return f"async-stream-{self.job}"


class Launcher(Protocol):
    """What the deploy path needs of a deploy mode."""

    @property
    def master(self) -> str:
        """The Spark master URL, for the deployment record."""

    @property
    def extra(self) -> Mapping[str, Any]:
        """The connection's extra (Kafka package versions); empty without a connection."""

    def check(self, spec: JobSpec) -> str:
        """Refuse, before anything is submitted, what cannot work on this target (the rules of its Spark among
        them); say what was checked."""

    def spark(self) -> SparkBuild:
        """The Spark this target runs (driver/spark_version.py): the rules a spec is judged by, the Kafka package."""

    def secrets(self, spec: JobSpec) -> SecretOptions:
        """The options the spec names by connection; a missing or unreadable one fails, naming its field."""

    def launch(self, submission: Submission, control: ControlArea) -> Driver:
        """Start the driver detached; return the deployment record's ``driver`` entry (with its ``log``)."""

    def state(self, driver: Driver) -> str | None:
        """The cluster manager's word on a driver (None when no cluster manager watches it)."""

    def ended(self, driver: Driver) -> str | None:
        """Why the driver's launch is over (its spark-submit here exited, its cluster ended it), its log
        complete; None while it may still run, or when that is not known from here."""

    def kill(self, driver: Driver, target: Target) -> str:
        """Kill ``target``'s driver; say what happened, or raise NotSignalledError saying why not from here."""


def comma_list(value: str) -> list[str]:
    """The entries of a comma-separated Spark setting (``spark.submit.pyFiles``, ``spark.archives``)."""
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def remote_protocols(*urls: str) -> tuple[str, ...]:
    """The protocols of ``urls`` that are not this host's files."""
    return tuple(sorted({url.split("://", 1)[0] for url in urls if not is_local_url(url)}))
