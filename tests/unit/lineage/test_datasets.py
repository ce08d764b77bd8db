"""A job's datasets and configuration as OpenLineage names them, from the spec alone (no Spark, no Airflow)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openlineage.client.naming import dataset as naming

from airflow_async_stream.lineage.datasets import Dataset, configuration, job_datasets, path_dataset
from airflow_async_stream.spec.load import parse_spec


def spec(source: dict[str, Any], sink: dict[str, Any], **more: Any) -> Any:
    return parse_spec({"name": "clicks", "checkpoint": "/data/ck/clicks", "source": source, "sink": sink, **more})


def test_kafka_topics_are_named_by_the_first_bootstrap_server() -> None:
    job = spec(
        {"format": "kafka", "options": {"kafka.bootstrap.servers": "b1:9092,b2:9092", "subscribe": "views, clicks"}},
        {"format": "kafka", "options": {"kafka.bootstrap.servers": "out:9093", "topic": "enriched"}},
        async_progress={"enabled": True},
    )
    inputs, outputs = job_datasets(job)
    assert inputs == [Dataset("kafka://b1:9092", "clicks"), Dataset("kafka://b1:9092", "views")]
    assert outputs == [Dataset("kafka://out:9093", "enriched")]


def test_kafka_servers_of_a_connection_come_from_the_caller() -> None:
    asked = []

    def servers_of(conn_id: str) -> str:
        asked.append(conn_id)
        return "broker.prod:9094"

    job = spec(
        {"format": "kafka", "options": {"assign": json.dumps({"a": [0, 1], "b": [0]})}, "connection": "kafka_prod"},
        {"format": "kafka", "connection": "kafka_prod"},  # no topic: each row's `topic` column picks it
    )
    inputs, outputs = job_datasets(job, servers_of)
    assert inputs == [Dataset("kafka://broker.prod:9094", "a"), Dataset("kafka://broker.prod:9094", "b")]
    assert outputs == [] and asked == ["kafka_prod"]
    assert job_datasets(job)[0][0].namespace == "kafka://unknown"  # no way to read it: said, not guessed


def test_a_topic_pattern_names_no_dataset() -> None:
    job = spec(
        {"format": "kafka", "options": {"kafka.bootstrap.servers": "b:1", "subscribePattern": "t.*"}},
        {"format": "noop"},
    )
    assert job_datasets(job) == ([], [])


#: OpenLineage's naming table as its Python client (openlineage-python 1.54.0, ``openlineage.client.naming.dataset``)
#: builds it, beside each path a spec may give: the names must be the client's, to the character.
NAMING_TABLE = [
    ("/data/in/events", naming.LocalFileSystem(path="/data/in/events")),
    ("/data/in/events/", naming.LocalFileSystem(path="/data/in/events")),
    ("file:///data/in/events", naming.LocalFileSystem(path="/data/in/events")),
    ("file://localhost/data/in/", naming.LocalFileSystem(path="/data/in")),
    ("file://nas7/share/events", naming.RemoteFileSystem(host="nas7", path="/share/events")),
    ("s3a://lake/raw/events", naming.S3(bucket_name="lake", object_key="raw/events")),
    ("s3://lake/raw/events/", naming.S3(bucket_name="lake", object_key="raw/events")),
    ("s3n://lake/", naming.S3(bucket_name="lake", object_key="/")),
    ("s3a://lake", naming.S3(bucket_name="lake", object_key="/")),
    ("gs://lake/raw/", naming.GCS(bucket_name="lake", object_key="raw")),
    ("gs://lake", naming.GCS(bucket_name="lake", object_key="/")),
    ("hdfs://nn:8020/warehouse/t/", naming.HDFS(namenode_host="nn", namenode_port="8020", path="/warehouse/t")),
    ("hdfs://nn:8020", naming.HDFS(namenode_host="nn", namenode_port="8020", path="/")),
    ("abfss://box@acct.dfs.core.windows.net/raw/t/", naming.ABFSS(container="box", service="acct", path="raw/t")),
    ("abfs://box@acct.dfs.core.windows.net/raw/t", naming.ABFSS(container="box", service="acct", path="raw/t")),
    (
        "wasbs://box@acct.blob.core.windows.net/raw",
        naming.WASBS(container="box", service_name="acct", object_key="raw"),
    ),
    ("wasb://box@acct.blob.core.windows.net/", naming.WASBS(container="box", service_name="acct", object_key="/")),
]


@pytest.mark.parametrize(("path", "expected"), NAMING_TABLE, ids=[path for path, _ in NAMING_TABLE])
def test_paths_are_named_as_openlineage_names_them(path: str, expected: naming.DatasetNaming) -> None:
    assert path_dataset(path) == Dataset(expected.get_namespace(), expected.get_name())


@pytest.mark.parametrize(
    ("servers", "host", "port"),
    [
        ("b1:9092,b2:9092", "b1", "9092"),
        ("SASL_SSL://broker.example.com:9093", "broker.example.com", "9093"),
        ("PLAINTEXT://b1:9092, PLAINTEXT://b2:9092", "b1", "9092"),
        (" b1 ", "b1", "9092"),  # no port: Kafka's usual one, as the naming asks for host:port
        ("[::1]:9094", "[::1]", "9094"),
    ],
)
def test_kafka_topics_are_named_as_openlineage_names_them(servers: str, host: str, port: str) -> None:
    job = spec(
        {"format": "kafka", "options": {"kafka.bootstrap.servers": servers, "subscribe": "clicks"}}, {"format": "noop"}
    )
    expected = naming.Kafka(bootstrap_server_host=host, port=port, topic="clicks")
    assert job_datasets(job)[0] == [Dataset(expected.get_namespace(), expected.get_name())]


def test_file_source_and_sink_paths_are_datasets() -> None:
    job = spec(
        {"format": "json", "options": {"path": "s3a://lake/raw/clicks"}, "schema": "id INT"},
        {"format": "parquet", "options": {"path": "/data/out/clicks"}},
    )
    assert job_datasets(job) == ([Dataset("s3://lake", "raw/clicks")], [Dataset("file", "/data/out/clicks")])


def test_generated_and_discarded_data_is_no_dataset() -> None:
    assert job_datasets(spec({"format": "rate"}, {"format": "noop"})) == ([], [])
    assert job_datasets(
        spec({"format": "rate-micro-batch", "options": {"rowsPerBatch": 5}}, {"format": "console"})
    ) == ([], [])


def test_configuration_names_secret_options_never_their_values() -> None:
    job = spec(
        {"format": "kafka", "options": {"subscribe": "clicks"}, "connection": "kafka_prod"},
        {"format": "kafka", "options": {"topic": "out"}, "secret_options": {"kafka.ssl.key.password": "ssl_key"}},
        async_progress={"enabled": True, "checkpoint_interval_ms": 0},
        trigger={"processing_time": "2 seconds"},
    )
    config = configuration(job)
    assert config["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 0}
    assert config["trigger"] == {"kind": "processing_time", "interval_ms": 2000}
    assert config["source"]["connection"] == "kafka_prod"
    assert config["sink"]["from_connections"] == ["kafka.ssl.key.password"]
    assert "ssl_key" not in json.dumps(config["sink"]["options"])
    assert json.loads(json.dumps(config)) == config  # plain JSON for a facet
