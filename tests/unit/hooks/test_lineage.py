"""What the operators hand Airflow's OpenLineage provider, serialized as an event carries it (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.serde import Serde

from airflow_async_stream.exceptions import DeployError
from airflow_async_stream.factories import safe_disable_async_progress
from airflow_async_stream.lineage.link import LineageLink, secret_values
from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
from airflow_async_stream.operators.lineage import lineage_link, running_every_minutes
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop

KAFKA_JOB = {
    "name": "clicks",
    "checkpoint": "/data/ck/clicks",
    "source": {"format": "kafka", "options": {"subscribe": "clicks"}, "connection": "kafka_prod"},
    "sink": {"format": "kafka", "options": {"topic": "clicks-enriched"}, "connection": "kafka_prod"},
    "async_progress": {"enabled": True, "checkpoint_interval_ms": 1000},
}


def as_sent(lineage: Any) -> dict[str, Any]:
    """The lineage as JSON, the way the provider's events carry datasets and facets."""

    def sent(value: Any) -> Any:
        return json.loads(Serde.to_json(value))

    return {
        "inputs": [sent(d) for d in lineage.inputs],
        "outputs": [sent(d) for d in lineage.outputs],
        "job_facets": {key: sent(facet) for key, facet in lineage.job_facets.items()},
    }


def test_deploy_names_kafka_topics_from_its_connection_and_never_its_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_PROD",
        json.dumps(
            {"conn_type": "kafka", "host": "broker.prod", "port": 9094, "login": "app", "password": "s3cret-pw-77"}
        ),
    )
    deploy = DeployStreamingJobOperator(task_id="deploy", spec=KAFKA_JOB)
    sent = as_sent(deploy.get_openlineage_facets_on_start())
    assert sent["inputs"] == [{"namespace": "kafka://broker.prod:9094", "name": "clicks", "facets": {}}]
    assert [(d["namespace"], d["name"]) for d in sent["outputs"]] == [("kafka://broker.prod:9094", "clicks-enriched")]
    config = sent["job_facets"]["asyncStream_configuration"]
    assert config["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 1000}
    assert config["source"]["connection"] == "kafka_prod"
    assert sent["job_facets"]["asyncStream_configuration"]["_schemaURL"]
    assert "s3cret-pw-77" not in json.dumps(sent) and "app" not in json.dumps(config["source"])
    complete = as_sent(deploy.get_openlineage_facets_on_complete(None))
    assert complete == sent


def test_deploy_facets_carry_its_overrides() -> None:
    deploy = DeployStreamingJobOperator(
        task_id="deploy",
        spec=rate_noop("r"),
        overrides={"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}},
    )
    config = as_sent(deploy.get_openlineage_facets_on_start())["job_facets"]["asyncStream_configuration"]
    assert config["async_progress"] == {"enabled": True, "checkpoint_interval_ms": 0}


def test_stop_names_the_same_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_PROD", json.dumps({"conn_type": "kafka", "host": "b:1"}))
    sent = as_sent(StopStreamingJobOperator(task_id="stop", spec=KAFKA_JOB).get_openlineage_facets_on_start())
    assert [d["name"] for d in sent["inputs"]] == ["clicks"] and sent["inputs"][0]["namespace"] == "kafka://b:1"


def test_a_kafka_connection_that_cannot_be_read_leaves_the_servers_unknown() -> None:
    sent = as_sent(DeployStreamingJobOperator(task_id="d", spec=KAFKA_JOB).get_openlineage_facets_on_start())
    assert sent["inputs"][0]["namespace"] == "kafka://unknown"


def test_migration_steps_report_the_configuration_they_leave() -> None:
    from airflow.sdk import DAG

    with DAG("m", schedule=None):
        group = safe_disable_async_progress(rate_noop("m", async_progress={"enabled": True}))
    steps = {t.task_id.split(".")[-1]: t for t in group}
    async_of = {
        task: as_sent(steps[task].get_openlineage_facets_on_start())["job_facets"]["asyncStream_configuration"][
            "async_progress"
        ]
        for task in ("to_interval_0", "to_synchronous")
    }
    assert async_of == {
        "to_interval_0": {"enabled": True, "checkpoint_interval_ms": 0},
        "to_synchronous": {"enabled": False, "checkpoint_interval_ms": 1000},
    }


@pytest.mark.parametrize(("raw", "minutes"), [("", None), ("0", 0.0), ("2.5", 2.5), (" 5 ", 5.0)])
def test_the_providers_running_events_setting_is_read_as_minutes(
    monkeypatch: pytest.MonkeyPatch, raw: str, minutes: float | None
) -> None:
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__LINEAGE_RUNNING_EVERY_MINUTES", raw)
    assert running_every_minutes() == minutes


@pytest.mark.parametrize("raw", ["soon", "-1"])
def test_a_bad_running_events_setting_fails_the_deploy_naming_it(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__LINEAGE_RUNNING_EVERY_MINUTES", raw)
    with pytest.raises(DeployError, match=r"\[async_stream\] lineage_running_every_minutes: must be a number"):
        running_every_minutes()
    with pytest.raises(DeployError):  # also for a job whose spec sets its own: a broken config is never skipped
        lineage_link({}, parse_spec(rate_noop("r", lineage={"running_every_minutes": 1})))


def test_nothing_asked_links_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__LINEAGE_RUNNING_EVERY_MINUTES", "")
    link = lineage_link({}, parse_spec(rate_noop("r")), inject_parent=False, inject_transport=False)
    assert link == LineageLink() and link.env() == {}


def test_the_driver_gets_the_transport_airflow_sends_through_also_from_a_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow_async_stream.operators.lineage import _transport

    config = tmp_path / "openlineage.yml"
    config.write_text(
        "transport:\n  type: http\n  url: http://lineage.example:5000\n  auth: {type: api_key, apiKey: k-9}\n"
    )
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__CONFIG_PATH", str(config))  # read at every call under pytest
    transport = _transport()
    assert transport == {
        "type": "http",
        "url": "http://lineage.example:5000",
        "auth": {"type": "api_key", "apiKey": "k-9"},
    }
    assert list(secret_values(transport)) == ["k-9"]  # what the driver masks
