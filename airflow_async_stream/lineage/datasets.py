"""A job's datasets and configuration as OpenLineage names them, derived from its spec alone.

Names follow OpenLineage's dataset naming (the table in docs/lineage.md, checked against the naming helpers of
the OpenLineage Python client) the way its Spark integration applies it, so a job's datasets and Spark's own
events meet in one graph: a Kafka topic is ``kafka://<first bootstrap server's host:port>`` (its security
protocol prefix dropped) + the topic; a path is its storage's namespace + the path without a trailing slash,
a bucket's or folder's root being ``/``. Generated or discarded data (rate, noop, console, memory, ...) is no
dataset. Nothing here reads a secret: Kafka servers named by a connection come from the caller, and the
configuration carries option names and plain values only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_async_stream.spec.endpoints import Sink, Source
from airflow_async_stream.spec.model import JobSpec

__all__ = ["Dataset", "configuration", "job_datasets", "kafka_server", "path_dataset"]

#: Source options that name Kafka topics; ``subscribePattern`` names none (the topics are found at run time).
_KAFKA_TOPIC_OPTIONS = ("subscribe", "assign")
_S3_SCHEMES = {"s3", "s3a", "s3n"}
_AZURE_SCHEMES = {"abfs": "abfss", "abfss": "abfss", "wasb": "wasbs", "wasbs": "wasbs"}
#: Kafka's usual broker port, for a bootstrap server given without one (the naming asks for host:port).
KAFKA_PORT = 9092
_LOCAL_HOSTS = {"", "localhost"}

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
    return f"kafka://{kafka_server(servers or '') or 'unknown'}"


def kafka_server(servers: str) -> str:
    """The first of Kafka's bootstrap servers as ``host:port``: ``SASL_SSL://b1:9093,b2`` -> ``b1:9093``."""
    first = servers.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    first = first.rstrip("/")
    if not first:
        return ""
    host, colon, port = first.rpartition(":")
    if not colon or not port.isdigit() or host.endswith(":"):  # no port (an IPv6 address keeps its brackets)
        return f"{first}:{KAFKA_PORT}"
    return first


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
    if not scheme or len(scheme) == 1:  # a local path (or a Windows drive letter)
        return Dataset("file", _path(path))
    if scheme == "file":  # file:///p and file://localhost/p are local; file://host/p is that host's
        host = parts.netloc.lower()
        return Dataset("file" if host in _LOCAL_HOSTS else f"file://{host}", _path(parts.path))
    if scheme in _S3_SCHEMES:
        return Dataset(f"s3://{parts.netloc}", _key(parts.path))
    if scheme == "gs":
        return Dataset(f"gs://{parts.netloc}", _key(parts.path))
    if scheme in _AZURE_SCHEMES:
        container, _, account = parts.netloc.partition("@")
        service = account.split(".")[0]
        return Dataset(f"{_AZURE_SCHEMES[scheme]}://{container}@{service}.dfs.core.windows.net", _key(parts.path))
    return Dataset(f"{scheme}://{parts.netloc}", _path(parts.path))


def _path(path: str) -> str:
    """A file system's path: no trailing slash, the root ``/``."""
    return path.rstrip("/") or "/"


def _key(path: str) -> str:
    """An object store's key: no leading or trailing slash, the bucket's root ``/``."""
    return path.strip("/") or "/"


def configuration(spec: JobSpec) -> dict[str, Any]:
    """How the job runs, for a job facet: async settings, trigger, formats, the options the spec writes out
    and the names (never the values) of those resolved from connections."""
    return {
        "job": spec.name,
        "checkpoint": spec.checkpoint,
        "async_progress": spec.async_progress.in_effect(),
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
