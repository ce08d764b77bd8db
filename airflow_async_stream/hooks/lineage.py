"""A job's lineage for Airflow's OpenLineage provider: the datasets and configuration of lineage/datasets.py as
``OperatorLineage``. Imported only when the provider asks (the operators' ``get_openlineage_facets_*``)."""

from __future__ import annotations

import logging
from typing import Any

from airflow.providers.openlineage.extractors import OperatorLineage
from attrs import define
from openlineage.client.event_v2 import Dataset as OLDataset
from openlineage.client.facet_v2 import JobFacet

from airflow_async_stream.exceptions import ConnectionLookupError, DeployError
from airflow_async_stream.hooks.connection_lookup import connection_fields
from airflow_async_stream.lineage.datasets import Dataset, configuration, job_datasets
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import kafka_options

__all__ = ["FACET", "AsyncStreamJobFacet", "operator_lineage"]

_log = logging.getLogger(__name__)
#: The job facet's key in an event's ``job.facets``.
FACET = "asyncStream"


@define
class AsyncStreamJobFacet(JobFacet):
    """How the streaming job runs: async progress settings, trigger, formats and plain options (no secrets)."""

    configuration: dict[str, Any]

    @staticmethod
    def _get_schema() -> str:
        return "urn:airflow-async-stream:facet:AsyncStreamJobFacet:1"  # the fields: lineage/datasets.py configuration()


def kafka_servers(conn_id: str) -> str | None:
    """The bootstrap servers a Kafka connection names (its host and port); None where it cannot be read."""
    try:
        options, _ = kafka_options(connection_fields("connection", conn_id))
    except (ConnectionLookupError, DeployError, ValueError) as exc:
        _log.warning("lineage: Kafka servers of connection %r unknown: %s", conn_id, exc)
        return None
    return options.get("kafka.bootstrap.servers")


def _ol(datasets: list[Dataset]) -> list[OLDataset]:
    return [OLDataset(namespace=d.namespace, name=d.name) for d in datasets]


def operator_lineage(spec: JobSpec) -> OperatorLineage:
    """The spec's inputs and outputs, and its configuration as the ``asyncStream`` job facet."""
    inputs, outputs = job_datasets(spec, kafka_servers)
    return OperatorLineage(
        inputs=_ol(inputs),
        outputs=_ol(outputs),
        job_facets={FACET: AsyncStreamJobFacet(configuration=configuration(spec))},
    )
