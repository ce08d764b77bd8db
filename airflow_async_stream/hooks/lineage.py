"""A job's lineage for Airflow's OpenLineage provider: the datasets and configuration of lineage/datasets.py as
``OperatorLineage``. Imported only when the provider asks (the operators' ``get_openlineage_facets_*``)."""

from __future__ import annotations

import logging

from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import Dataset as OLDataset

from airflow_async_stream.exceptions import ConnectionLookupError, DeployError
from airflow_async_stream.hooks.connection_lookup import connection_fields
from airflow_async_stream.lineage.datasets import Dataset, configuration, job_datasets
from airflow_async_stream.lineage.events import JOB_FACET, PRODUCER, AsyncStreamConfigurationJobFacet
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import kafka_options

__all__ = ["kafka_servers", "operator_lineage"]

_log = logging.getLogger(__name__)


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


def operator_lineage(spec: JobSpec) -> OperatorLineage[OLDataset, AsyncStreamConfigurationJobFacet]:
    """The spec's inputs and outputs, and its configuration as the ``asyncStream_configuration`` job facet."""
    inputs, outputs = job_datasets(spec, kafka_servers)
    return OperatorLineage(
        inputs=_ol(inputs),
        outputs=_ol(outputs),
        job_facets={JOB_FACET: AsyncStreamConfigurationJobFacet(**configuration(spec), producer=PRODUCER)},
    )
