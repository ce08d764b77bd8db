"""Secrets: named in specs, resolved from connections, carried by environment, redacted from what the driver writes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import (
    ENV_VAR,
    ConnectionFields,
    Redactor,
    SecretOptions,
    kafka_options,
    take_from_environment,
)
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import segments
from tests.helpers import rate_noop

SPEC = rate_noop("s", sink={"format": "kafka"})


def _problems(**sink: object) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        parse_spec({**SPEC, "sink": {"format": "kafka", **sink}})
    return caught.value.problems


@pytest.mark.parametrize(
    "key", ["kafka.sasl.jaas.config", "kafka.ssl.key.password", "auth.token", "fs.s3a.secret.key", "accessKey"]
)
def test_a_secret_looking_option_in_the_spec_file_is_refused_without_echoing_it(key: str) -> None:
    [(field, reason)] = _problems(options={key: "hunter2-value"})
    assert field == "sink.options"
    assert key in reason and "secret_options" in reason
    assert "hunter2-value" not in reason


def test_secret_looking_spark_conf_is_refused() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec({**SPEC, "spark_conf": {"spark.hadoop.fs.s3a.secret.key": "x"}})
    assert caught.value.problems[0][0] == "spark_conf"


def test_connection_is_only_for_kafka_and_an_option_is_given_in_one_place() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec({**SPEC, "sink": {"format": "noop", "connection": "k"}})
    assert caught.value.problems == [("sink.connection", "carries Kafka settings; format 'noop' takes none")]
    assert _problems(options={"topic": "a"}, secret_options={"topic": "c"}) == [
        ("sink.secret_options.topic", "is also given in `options`; give it in one place")
    ]
    assert _problems(secret_options={"checkpointLocation": "c"})[0][0] == "sink.secret_options"
    assert _problems(secret_options={"a.token": "not a conn id!"})[0][0] == "sink.secret_options"


def test_specs_name_connections_and_keep_them_in_the_mapping() -> None:
    spec = parse_spec(
        {**SPEC, "sink": {"format": "kafka", "connection": "kafka_default", "secret_options": {"a.token": "t"}}}
    )
    assert spec.sink is not None and spec.sink.connection == "kafka_default"
    assert spec.to_mapping()["sink"]["secret_options"] == {"a.token": "t"}


def test_kafka_connection_with_login_builds_a_scram_jaas_config() -> None:
    conn = ConnectionFields(
        "k", host="b1", port=9093, login="app", password='p"w\\', extra={"sasl.mechanism": "SCRAM-SHA-512"}
    )
    options, secret = kafka_options(conn)
    assert options == {
        "kafka.bootstrap.servers": "b1:9093",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="app" password="p\\"w\\\\";',
    }
    assert secret == {"kafka.sasl.jaas.config"}


def test_kafka_connection_in_the_kafka_providers_librdkafka_spelling() -> None:
    extra = {
        "bootstrap.servers": "b1:9092,b2:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "secret-pw",
        "ssl.truststore.password": "ts-pw",
    }
    options, secret = kafka_options(ConnectionFields("k", extra=extra))
    assert options["kafka.bootstrap.servers"] == "b1:9092,b2:9092"
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert options["kafka.sasl.mechanism"] == "PLAIN"
    assert "PlainLoginModule required" in options["kafka.sasl.jaas.config"]
    assert "kafka.sasl.username" not in options and "kafka.sasl.password" not in options
    assert secret == {"kafka.sasl.jaas.config", "kafka.ssl.truststore.password"}


def test_kafka_connection_errors_name_the_connection_not_the_secret() -> None:
    with pytest.raises(ValueError, match="'k': sasl.mechanism GSSAPI") as caught:
        kafka_options(ConnectionFields("k", login="u", password="pw-1", extra={"sasl.mechanism": "GSSAPI"}))
    assert "pw-1" not in str(caught.value)
    with pytest.raises(ValueError, match="not both"):
        kafka_options(ConnectionFields("k", login="u", password="p", extra={"sasl.jaas.config": "x"}))


def test_resolved_options_travel_in_one_environment_variable_that_the_driver_takes_out() -> None:
    resolved = SecretOptions()
    resolved.add("sink", "kafka.sasl.jaas.config", "jaas-secret", secret=True)
    resolved.add("sink", "kafka.bootstrap.servers", "b1:9092", secret=False)
    env = {"PATH": "/bin", **resolved.to_env()}

    taken = take_from_environment(env)

    assert ENV_VAR not in env, "the driver must remove it so nothing it starts inherits it"
    assert taken.options == resolved.options and taken.secret_values == {"jaas-secret"}
    assert taken.names() == ["sink.options.kafka.bootstrap.servers", "sink.options.kafka.sasl.jaas.config"]
    assert SecretOptions().to_env() == {} and take_from_environment({}).options == {}


def test_redactor_masks_plain_and_json_escaped_values() -> None:
    redact = Redactor(['pa"ss', "ab"])  # values shorter than 3 characters are not masked (too common)
    assert redact('login failed for pa"ss at ab') == "login failed for *** at ab"
    assert redact.json({"error": 'x pa"ss y', "n": 1}) == {"error": "x *** y", "n": 1}
    assert not Redactor([]) and Redactor([]).json({"a": "b"}) == {"a": "b"}


def test_the_governor_never_writes_a_secret_into_status_or_progress(tmp_path: object) -> None:
    control = ControlArea(str(tmp_path) + "/ck.async-stream")
    control.ensure()
    secret = "pw-0123456789"
    governor = Governor(control, "dep-1", "job", Redactor([secret]))
    governor.starting(secret_options=["sink.options.kafka.sasl.jaas.config"])
    source = SimpleNamespace(
        description=f"Kafka[{secret}]", startOffset="1", endOffset="2", numInputRows=1, metrics={"secret": secret}
    )
    progress = SimpleNamespace(
        id="q",
        runId="r",
        batchId=0,
        timestamp="t",
        numInputRows=1,
        inputRowsPerSecond=1.0,
        processedRowsPerSecond=1.0,
        durationMs={},
        sources=[source],
        stateOperators=[],
    )
    governor.record_progress(progress)
    governor.fail(RuntimeError(f"SASL authentication failed with password {secret}"))

    progress_files = [control.path(s.name) for s in segments(control)]
    assert len(progress_files) == 1
    texts = [open(p).read() for p in (control.path(ControlArea.STATUS), *progress_files)]
    assert all(secret not in text for text in texts)
    status = json.loads(texts[0])
    assert status["error"] == "RuntimeError: SASL authentication failed with password ***"
    assert status["secret_options"] == ["sink.options.kafka.sasl.jaas.config"]
    assert "Kafka[***]" in texts[1] and '"secret": "***"' in texts[1]  # a source's metrics are masked too
