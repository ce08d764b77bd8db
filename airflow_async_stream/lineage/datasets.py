"""A job's datasets and configuration as OpenLineage names them, derived from its spec alone.

Naming follows OpenLineage's dataset naming: a Kafka topic is ``kafka://<first bootstrap host:port>`` + the
topic; a file or table path is its storage's namespace (``s3://bucket``, ``gs://bucket``, ``hdfs://host:port``,
``abfss://container@account.dfs.core.windows.net``, ``file`` for a local path) + the path in it. Generated or
discarded data (rate, noop, console, memory, ...) is no dataset. Nothing here reads a secret: Kafka servers
named by a connection come from the caller, and the configuration carries option names and plain values only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_async_stream.spec.endpoints import Sink, Source
from airflow_async_stream.spec.model import JobSpec

__all__ = ["Dataset", "configuration", "job_datasets", "path_dataset"]

#: Source options that name Kafka topics; ``subscribePattern`` names none (the topics are found at run time).
_KAFKA_TOPIC_OPTIONS = ("subscribe", "assign")
_S3_SCHEMES = {"s3", "s3a", "s3n"}
_AZURE_SCHEMES = {"abfs": "abfss", "abfss": "abfss", "wasb": "wasbs", "wasbs": "wasbs"}

#: The Kafka servers a connection names (its ``kafka.bootstrap.servers``), or None where it cannot be read.
ServersOf = Callable[[str], "str | None"]


@dataclass(frozen=True, order=True)
class Dataset:
    namespace: str
    name: str


def job_datasets(spec: JobSpec, servers_of: ServersOf | None = None) -> tuple[list[Dataset], list[Dataset]]:
    """The spec's inputs (its source) and outputs (its sink); an application file's job names none it can see."""
    return _endpoint(spec.source, servers_of, sink=False), _endpoint(spec.sink, servers_of, sink=True)


def _endpoint(endpoint: Source | Sink | None, servers_of: ServersOf | None, sink: bool) -> list[Dataset]:
    if endpoint is None:
        return []
    options = endpoint.spark_options()
    if endpoint.format.lower() == "kafka":
        topics = _topics(options, sink)
        namespace = _kafka_namespace(endpoint, options, servers_of) if topics else ""
        return [Dataset(namespace, topic) for topic in topics]
    path = options.get("path")
    return [path_dataset(path)] if path else []


def _kafka_namespace(endpoint: Source | Sink, options: dict[str, str], servers_of: ServersOf | None) -> str:
    servers = options.get("kafka.bootstrap.servers")
    if not servers and endpoint.connection and servers_of is not None:
        servers = servers_of(endpoint.connection)
    first = (servers or "").split(",")[0].strip()
    return f"kafka://{first or 'unknown'}"


def _topics(options: dict[str, str], sink: bool) -> list[str]:
    if sink:  # without `topic`, each row's `topic` column picks it: none is known before the data
        return [options["topic"]] if options.get("topic") else []
    if options.get("subscribe"):
        return sorted({t.strip() for t in options["subscribe"].split(",") if t.strip()})
    if options.get("assign"):
        try:
            return sorted(json.loads(options["assign"]))
        except (ValueError, TypeError):
            return []
    return []


def path_dataset(path: str) -> Dataset:
    """A file or table path as OpenLineage names it: its storage's namespace and the path within."""
    parts = urlsplit(path)
    scheme = parts.scheme.lower()
    if not scheme or scheme == "file" or len(scheme) == 1:  # a local path (or a Windows drive letter)
        return Dataset("file", parts.path if scheme == "file" else path)
    if scheme in _S3_SCHEMES:
        return Dataset(f"s3://{parts.netloc}", parts.path.lstrip("/"))
    if scheme == "gs":
        return Dataset(f"gs://{parts.netloc}", parts.path.lstrip("/"))
    if scheme in _AZURE_SCHEMES:
        container, _, account = parts.netloc.partition("@")
        service = account.split(".")[0]
        return Dataset(f"{_AZURE_SCHEMES[scheme]}://{container}@{service}.dfs.core.windows.net", parts.path.lstrip("/"))
    return Dataset(f"{scheme}://{parts.netloc}", parts.path or "/")


def configuration(spec: JobSpec) -> dict[str, Any]:
    """How the job runs, for a job facet: async settings, trigger, formats, the options the spec writes out
    and the names (never the values) of those resolved from connections."""
    return {
        "job": spec.name,
        "checkpoint": spec.checkpoint,
        "async_progress": spec.async_progress.model_dump(),
        "trigger": {"kind": spec.trigger.kind, "interval_ms": spec.trigger.interval_ms()},
        "stateful": spec.stateful,
        **{side: _endpoint_config(endpoint) for side, endpoint in (("source", spec.source), ("sink", spec.sink))},
        **({"application": spec.application} if spec.application else {}),
    }


def _endpoint_config(endpoint: Source | Sink | None) -> dict[str, Any] | None:
    if endpoint is None:
        return None
    return {
        "format": endpoint.format,
        "options": endpoint.spark_options(),  # the spec refuses secret-looking keys in them
        "connection": endpoint.connection,
        "from_connections": sorted(endpoint.secret_options),  # Airflow masks a key named "secret..."
    }
