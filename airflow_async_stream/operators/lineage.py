"""What the operators that act on one job tell Airflow's OpenLineage provider: the job's datasets and
configuration, from its spec (hooks/lineage.py), and the link a deploy hands its driver (lineage/link.py).
Without the provider nothing asks for the facets, and a deploy links nothing unless asked to."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from airflow.sdk.configuration import conf

from airflow_async_stream.exceptions import DeployError
from airflow_async_stream.lineage.link import LineageLink, RunningSettings
from airflow_async_stream.lineage.running import every_s
from airflow_async_stream.spec.load import resolve_spec
from airflow_async_stream.spec.model import JobSpec

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["JobLineage", "lineage_link", "running_every_minutes"]

_log = logging.getLogger(__name__)
SETTING = "[async_stream] lineage_running_every_minutes"


def running_every_minutes() -> float | None:
    """The provider's default for the driver's RUNNING events; a value that is no number >= 0 is an error."""
    raw = conf.get("async_stream", "lineage_running_every_minutes", fallback="").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise DeployError(f"{SETTING}: must be a number of minutes >= 0 (0: never), got {raw!r}")
    return value


def _flag(given: bool | None, option: str) -> bool:
    return conf.getboolean("openlineage", option, fallback=False) if given is None else given


class JobLineage:
    """Mixin: ``get_openlineage_facets_on_start/complete`` from ``self.spec`` (and ``self.overrides``), and
    the deploy's link to OpenLineage (``openlineage_inject_*`` as the apache-spark provider's operators take
    them; None: its ``[openlineage] spark_inject_*`` settings)."""

    spec: Any
    overrides: dict[str, Any] | None = None
    openlineage_inject_parent_job_info: bool | None = None
    openlineage_inject_transport_info: bool | None = None

    def lineage_spec(self) -> JobSpec:
        """The job as this task leaves it (a migration step: its target)."""
        return resolve_spec(self.spec, self.overrides)

    def get_openlineage_facets_on_start(self) -> Any:
        from airflow_async_stream.hooks.lineage import operator_lineage

        return operator_lineage(self.lineage_spec())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return self.get_openlineage_facets_on_start()

    def lineage_link(self, context: Context, spec: JobSpec) -> LineageLink:
        return lineage_link(
            context, spec, self.openlineage_inject_parent_job_info, self.openlineage_inject_transport_info
        )


def lineage_link(
    context: Context, spec: JobSpec, inject_parent: bool | None = None, inject_transport: bool | None = None
) -> LineageLink:
    """Spark conf linking the driver's OpenLineage events to this task, and its RUNNING events' settings
    (``inject_*`` None: the ``[openlineage] spark_inject_*`` settings)."""
    parent = _flag(inject_parent, "spark_inject_parent_job_info")
    transport = _flag(inject_transport, "spark_inject_transport_info")
    default_every = running_every_minutes()
    runs = every_s(spec, RunningSettings(every_minutes=default_every)) > 0  # the spec's setting wins
    if not (parent or transport or runs):
        return LineageLink()
    from airflow.providers.common.compat.openlineage.utils.spark import (
        inject_parent_job_information_into_spark_properties,
        inject_transport_information_into_spark_properties,
    )

    own = spec.spark_conf_strings()
    props: dict[str, Any] = dict(own)
    if parent:
        props = inject_parent_job_information_into_spark_properties(props, context)
    if transport:
        props = inject_transport_information_into_spark_properties(props, context)
    added = {k: v for k, v in props.items() if k not in own}
    running = _running_settings(context, default_every) if runs else None
    return LineageLink.split(added, running)


def _running_settings(context: Context, every: float | None) -> RunningSettings:
    """The deploy task as the RUNNING events' parent, and Airflow's OpenLineage namespace and transport."""
    try:
        from airflow.providers.openlineage import conf as ol_conf
        from airflow.providers.openlineage.plugins.macros import (
            lineage_job_name,
            lineage_job_namespace,
            lineage_root_job_name,
            lineage_root_run_id,
            lineage_run_id,
        )
    except ImportError:
        _log.warning("lineage: Airflow's OpenLineage provider is not installed: the driver's events name no parent")
        return RunningSettings(every_minutes=every)
    ti = context["ti"]
    parent = {
        "namespace": lineage_job_namespace(),
        "job_name": lineage_job_name(ti),
        "run_id": lineage_run_id(ti),
        "root_job_name": lineage_root_job_name(ti),
        "root_run_id": lineage_root_run_id(ti),
    }
    return RunningSettings(every, ol_conf.namespace(), parent, _transport())


def _transport() -> dict[str, Any] | None:
    """The transport Airflow's OpenLineage provider sends through, as it reads it (its config connection, its
    config file or ``[openlineage] transport``, credentials resolved); None: the driver's client configures
    itself (``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``)."""
    from airflow.providers.openlineage.plugins.listener import get_openlineage_listener

    config = get_openlineage_listener().adapter.get_openlineage_config() or {}
    return config.get("transport") or None
