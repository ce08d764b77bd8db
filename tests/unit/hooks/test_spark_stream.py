"""spark-submit command lines and the Java check (no Spark is started here)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from airflow_async_stream.driver.args import driver_arguments, parse_driver_arguments, spec_digest
from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher, check_java
from airflow_async_stream.exceptions import ConnectionLookupError, JavaNotFoundError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop

SPEC = parse_spec(
    rate_noop(
        "job-1",
        async_progress={"enabled": True, "checkpoint_interval_ms": 250},
        spark_conf={"spark.sql.shuffle.partitions": 4},
    )
)


def test_without_a_connection_jobs_run_on_the_embedded_local_spark() -> None:
    args = driver_arguments("/ck/job-1.async-stream", "dep-1", SPEC, b"{}")
    launcher = launcher_for("no_such_connection")
    assert isinstance(launcher, LocalLauncher) and launcher.master == "local[*]"
    command = launcher.command(Submission("job-1", "dep-1", args, SPEC.spark_conf_strings()))
    assert command[command.index("--name") + 1] == "async-stream-job-1"
    assert Path(command[0]).name == "spark-submit" and Path(command[0]).exists()
    assert command[command.index("--master") + 1] == "local[*]"
    assert "spark.sql.shuffle.partitions=4" in command
    tail = command[command.index(str(runtime_bundle().entry)) + 1 :]
    assert tail == args
    parsed = parse_driver_arguments(tail)
    assert (parsed.async_progress_enabled, parsed.async_progress_interval_ms) == ("true", 250)
    assert parsed.spec_sha256 == spec_digest(b"{}")


def test_a_missing_connection_is_said_once_and_not_as_yarn(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO"):
        launcher_for("no_such_connection")
    said = [r.getMessage() for r in caplog.records]
    assert said == ["No connection 'no_such_connection': running on the embedded local Spark (local[*])"]
    out = capsys.readouterr()
    assert "yarn" not in out.out + out.err


def test_a_malformed_connection_uri_fails_naming_it_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_BROKEN", "spark://user:s3cret-pw@spark-master:notaport")
    with pytest.raises(ConnectionLookupError, match="'spark_broken' could not be read.*Port could not be cast") as err:
        launcher_for("spark_broken")
    assert "s3cret-pw" not in str(err.value)


def test_a_connection_whose_extra_is_not_json_fails_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_EXTRA", '{"conn_type": "spark", "host": "local[2]", "extra": "{oops"}')
    with pytest.raises(ConnectionLookupError, match="extra of Airflow connection 'spark_extra' is not a JSON object"):
        launcher_for("spark_extra")


def test_a_secrets_backend_that_is_down_fails_the_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk import configuration

    monkeypatch.setattr(configuration, "_secrets_backend_cache", {})  # this test's backend only
    monkeypatch.setenv("AIRFLOW__SECRETS__BACKEND", "tests.unit.fixtures.broken_secrets.UnreachableBackend")
    with pytest.raises(ConnectionLookupError, match="'spark_default'.*UnreachableBackend: ConnectionError: vault"):
        launcher_for("spark_default")


def test_a_spark_connection_chooses_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", "spark://10.1.2.3:7077")
    hook = StreamingJobHook(conn_id="spark_standalone", name="x")
    assert hook.master == "spark://10.1.2.3:7077"
    assert hook.build_command("/app.py")[1:3] == ["--master", "spark://10.1.2.3:7077"]
    launcher = launcher_for("spark_standalone")
    assert isinstance(launcher, LocalLauncher)  # client mode: the driver runs on this host
    assert launcher.command(Submission("x", "d", [], {}))[1:3] == ["--master", "spark://10.1.2.3:7077"]


def test_the_runtime_driver_file_exists() -> None:
    assert runtime_bundle().entry.is_file()


def test_check_java_finds_the_installed_jdk() -> None:
    assert "version" in check_java()


def test_missing_java_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="Java 17\\+ is required.*JAVA_HOME="):
        check_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="not on PATH"):
        check_java()


def test_old_java_is_refused_with_stub_java_11(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A stub `java` printing Java 11's banner: no Java 11 can be installed on these machines."""
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="needs Java 17\\+, but .* is Java 11"):
        check_java()
    assert os.access(java, os.X_OK)


def test_secret_options_are_resolved_from_connections_and_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk._shared.secrets_masker import redact  # the masker Airflow's task logs go through

    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_PROD",
        '{"conn_type": "generic", "host": "b1", "port": 9093, "login": "app", "password": "kafka-pw-123"}',
    )
    monkeypatch.setenv("AIRFLOW_CONN_TRUSTSTORE", '{"conn_type": "generic", "password": "ts-pw-456"}')
    spec = parse_spec(
        {
            **SPEC.to_mapping(),
            "async_progress": {"enabled": False},
            "sink": {
                "format": "kafka",
                "connection": "kafka_prod",
                "secret_options": {"kafka.ssl.truststore.password": "truststore"},
            },
        }
    )
    resolved = launcher_for("no_such_connection").secrets(spec)

    sink = resolved.options["sink"]
    assert sink["kafka.bootstrap.servers"] == "b1:9093"
    assert sink["kafka.ssl.truststore.password"] == "ts-pw-456"
    assert 'password="kafka-pw-123"' in sink["kafka.sasl.jaas.config"]
    assert resolved.secret_values == {"kafka-pw-123", "ts-pw-456", sink["kafka.sasl.jaas.config"]}
    assert "kafka-pw-123" not in str(redact(f"log line with {sink['kafka.sasl.jaas.config']}"))


def test_every_value_of_a_connections_extra_is_masked_whatever_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ssl.keystore.key` names no "password": masking by key name alone let its value through."""
    from airflow.sdk._shared.secrets_masker import redact

    key = "-----BEGIN PRIVATE KEY----- MIIEvQIBADAN-key-789"
    extra = {"bootstrap.servers": "b1:9093", "security.protocol": "SSL", "ssl.keystore.key": key, "ssl.x": "y-7890"}
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_SSL", json.dumps({"conn_type": "generic", "extra": extra}))
    spec = parse_spec(
        {
            **SPEC.to_mapping(),
            "async_progress": {"enabled": False},
            "sink": {"format": "kafka", "connection": "kafka_ssl"},
        }
    )
    resolved = launcher_for("no_such_connection").secrets(spec)

    assert resolved.options["sink"]["kafka.ssl.keystore.key"] == key
    assert resolved.secret_values == {key, "y-7890"}  # the brokers and the protocol name no secret: lineage shows them
    assert key not in str(redact(f"log line with {key}")) and "y-7890" not in str(redact("value y-7890"))


def test_a_missing_secret_connection_is_named_by_its_spec_field() -> None:
    from airflow_async_stream.exceptions import DeployError

    spec = parse_spec(
        {
            **SPEC.to_mapping(),
            "async_progress": {"enabled": False},
            "sink": {"format": "kafka", "secret_options": {"kafka.ssl.key.password": "absent_conn"}},
        }
    )
    with pytest.raises(
        DeployError, match=r"sink.secret_options.kafka.ssl.key.password: .*'absent_conn' does not exist"
    ):
        launcher_for("no_such_connection").secrets(spec)


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("kafka://user:pw-789@broker:notaport", "could not be read.*Port could not be cast"),
        ('{"conn_type": "kafka", "host": "broker", "password": "pw-789", "extra": "{oops"}', "is not a JSON object"),
    ],
    ids=["malformed-uri", "extra-not-json"],
)
def test_an_unreadable_secret_connection_is_named_by_its_spec_field(
    monkeypatch: pytest.MonkeyPatch, uri: str, reason: str
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_BROKEN", uri)
    spec = parse_spec(
        {
            **SPEC.to_mapping(),
            "async_progress": {"enabled": False},
            "sink": {"format": "kafka", "connection": "kafka_broken"},
        }
    )
    with pytest.raises(ConnectionLookupError, match=rf"^sink.connection: .*'kafka_broken' {reason}") as err:
        launcher_for("no_such_connection").secrets(spec)
    assert "pw-789" not in str(err.value)


def test_every_private_member_of_the_provider_used_here_exists_in_the_installed_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release of apache-airflow-providers-apache-spark that renames one fails here, not in a user's deploy."""
    from airflow.providers.apache.spark.hooks import spark_submit

    from airflow_async_stream.hooks.spark_stream import PROVIDER_PRIVATES

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_SA", "spark://10.1.2.3:7077")
    provider_hook = spark_submit.SparkSubmitHook(conn_id="spark_sa")
    assert [name for name in PROVIDER_PRIVATES if not hasattr(provider_hook, name)] == []


def test_the_list_of_provider_privates_is_complete() -> None:
    """Every ``_member`` reached on the provider's hook (``self`` in StreamingJobHook, ``hook`` and ``self.hook``
    in the cluster launcher) is named in PROVIDER_PRIVATES."""
    import ast

    from airflow_async_stream.hooks.spark_stream import PROVIDER_PRIVATES

    hooks = Path(__file__).resolve().parents[3] / "airflow_async_stream" / "hooks"
    used = set()
    hook_class = next(
        node
        for node in ast.parse((hooks / "spark_stream.py").read_text()).body
        if isinstance(node, ast.ClassDef) and node.name == "StreamingJobHook"
    )
    for tree, owners in (
        (hook_class, {"self"}),
        (ast.parse((hooks / "cluster.py").read_text()), {"hook", "self.hook"}),
    ):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if ast.unparse(node.value) in owners:
                    used.add(node.attr)
    assert used - set(PROVIDER_PRIVATES) == set()
    assert used >= {"_connection", "_build_spark_common_args", "_kill_yarn_application", "_delete_driver_pod"}


def test_building_a_launcher_reads_the_connection_once_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read may be a request to a secrets backend: the hook takes the connection launcher_for just read
    (the provider's own resolution reads it once more)."""
    from airflow_async_stream.hooks import launchers, spark_stream

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_SA", "spark://10.1.2.3:7077")
    reads: list[str] = []
    real = launchers.find_connection

    def counted(conn_id: str) -> object:
        reads.append(conn_id)
        return real(conn_id)

    monkeypatch.setattr(launchers, "find_connection", counted)
    monkeypatch.setattr(spark_stream, "find_connection", counted)
    assert launcher_for("spark_sa").master == "spark://10.1.2.3:7077"
    assert reads == ["spark_sa"]
