"""The core's launcher (no Airflow, no Spark started): the submission a spec makes, the command line, refusals."""

from __future__ import annotations

import pytest

from airflow_async_stream.driver.args import parse_driver_arguments, spec_digest
from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.driver.deferred import DeferredLauncher
from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.process import Target
from airflow_async_stream.driver.spark_version import SparkBuild
from airflow_async_stream.exceptions import DeployError, NotSignalledError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state.records import Driver
from tests.helpers import rate_noop

SPEC = rate_noop(
    "orders",
    sink={"format": "kafka", "options": {"topic": "out"}},
    async_progress={"enabled": True, "checkpoint_interval_ms": 250},
    spark_conf={"spark.sql.shuffle.partitions": 4, "spark.ui.showConsoleProgress": "true"},
)


TARGET = Target("/ck.async-stream", "d-1")


def test_a_spec_makes_one_submission_its_driver_and_record_agree_on() -> None:
    secrets = SecretOptions()
    secrets.add("sink", "kafka.sasl.jaas.config", "login pw-s3cret", secret=True)
    spec = parse_spec(SPEC)

    spark = SparkBuild("4.1.1", "2.13", "the Spark connection's extra spark_version")
    submission = Submission.for_spec(spec, "/ck/orders.async-stream", "d-1", secrets, {}, spark)

    args = parse_driver_arguments(submission.arguments)
    assert (args.control_area, args.deployment_id) == ("/ck/orders.async-stream", "d-1")
    assert args.spec_sha256 == spec_digest(submission.spec_json) == spec_digest(spec.to_json_bytes())
    assert submission.conf["spark.jars.packages"].endswith("spark-sql-kafka-0-10_2.13:4.1.1")  # the target's
    assert submission.conf["spark.ui.showConsoleProgress"] == "true"  # the spec's own setting wins
    assert submission.secret_names == ["sink.options.kafka.sasl.jaas.config"]
    assert "pw-s3cret" in str(submission.env) and "pw-s3cret" not in repr(submission)


def test_the_command_is_an_argument_list_with_the_job_after_the_connection() -> None:
    launcher = LocalLauncher(["/opt/spark/bin/spark-submit", "--master", "spark://m:7077", "--queue", "q"])
    submission = Submission("orders", "d-1", ["--deployment-id", "d-1; rm -rf /"], {"a.b": "c d"})

    command = launcher.command(submission)

    assert command == [
        "/opt/spark/bin/spark-submit",
        "--master",
        "spark://m:7077",
        "--queue",
        "q",
        "--conf",
        "a.b=c d",
        "--name",
        "async-stream-orders",
        str(runtime_bundle().entry),
        "--deployment-id",
        "d-1; rm -rf /",
    ]


def test_without_airflow_the_embedded_spark_is_the_target() -> None:
    command = LocalLauncher().command(Submission("orders", "d-1", [], {}))
    assert command[0].endswith("spark-submit") and command[1:3] == ["--master", "local[*]"]


def test_a_launcher_built_without_airflow_refuses_a_spec_that_names_a_connection_naming_the_field() -> None:
    spec = parse_spec({**SPEC, "sink": {"format": "kafka", "secret_options": {"kafka.ssl.key.password": "vault_key"}}})
    with pytest.raises(DeployError, match=r"^sink.secret_options.kafka.ssl.key.password: .*'vault_key'"):
        LocalLauncher().secrets(spec)
    assert LocalLauncher().secrets(parse_spec(SPEC)).options == {}


def test_this_hosts_launcher_never_signals_a_driver_on_a_cluster() -> None:
    with pytest.raises(NotSignalledError, match=r"runs on a cluster \(yarn-application\).*connection"):
        LocalLauncher().kill(Driver(kind="yarn-application", application_id="application_1_0001"), TARGET)
    assert LocalLauncher().state(Driver(kind="yarn-application")) is None


def test_a_deferred_launcher_reads_no_connection_for_a_driver_of_an_airflow_host() -> None:
    """A stop must win also while a secrets backend is down: this host's drivers need no connection."""
    built: list[str] = []

    def unreadable() -> LocalLauncher:
        built.append("read")
        raise DeployError("Airflow connection 'spark_default' could not be read")

    deferred = DeferredLauncher(unreadable)
    elsewhere = Driver(kind="local-process", host="another-host", launcher_pid=1, launcher_started=5)
    with pytest.raises(NotSignalledError, match="launched on host another-host"):
        deferred.kill(elsewhere, TARGET)
    assert deferred.ended(elsewhere) is None and deferred.state(elsewhere) is None
    assert built == []
    with pytest.raises(DeployError, match="could not be read"):
        deferred.kill(Driver(kind="yarn-application", application_id="application_1_0001"), TARGET)
    assert built == ["read"]
