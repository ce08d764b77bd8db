"""The lineage link a deploy hands its driver: plain conf on the command line, credentials only in the
driver's environment (no Spark, no Airflow)."""

from __future__ import annotations

import json

from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.spark_version import SparkBuild
from airflow_async_stream.lineage.link import (
    ENV_VAR,
    LineageLink,
    RunningSettings,
    secret_values,
    take_running_settings,
)
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import ENV_VAR as SECRETS_VAR
from airflow_async_stream.spec.secret_options import SecretOptions, take_from_environment
from tests.helpers import rate_noop

API_KEY = "ol-key-5f1e9c"
SPARK = SparkBuild("4.2.0", "2.13", "a test")
INJECTED = {
    "spark.openlineage.parentJobNamespace": "airflow",
    "spark.openlineage.parentJobName": "lineage_dag.deploy",
    "spark.openlineage.parentRunId": "01937a2b-0000-7000-8000-000000000001",
    "spark.openlineage.transport.type": "http",
    "spark.openlineage.transport.url": "http://127.0.0.1:5000",
    "spark.openlineage.transport.auth.type": "api_key",
    "spark.openlineage.transport.auth.apiKey": API_KEY,
    "spark.openlineage.transport.transports.backup.headers.Authorization": "Bearer hdr-secret-1",
}


def test_credentials_are_kept_apart_from_the_plain_conf() -> None:
    link = LineageLink.split(INJECTED)
    assert set(link.secret_conf) == {
        "spark.openlineage.transport.auth.apiKey",
        "spark.openlineage.transport.transports.backup.headers.Authorization",
    }
    assert link.conf["spark.openlineage.parentJobName"] == "lineage_dag.deploy"
    assert link.conf["spark.openlineage.transport.auth.type"] == "api_key"
    assert API_KEY not in json.dumps(link.conf) and API_KEY not in repr(link)


def test_the_driver_gets_the_link_and_its_credentials_never_reach_the_command_line() -> None:
    spec = parse_spec(rate_noop("linked", spark_conf={"spark.openlineage.namespace": "streams"}))
    running = RunningSettings(every_minutes=5, namespace="airflow", transport={"type": "http", "url": "http://x"})
    link = LineageLink.split({**INJECTED, "spark.openlineage.namespace": "ignored"}, running)
    submission = Submission.for_spec(spec, "/ck/linked.async-stream", "dep-1", SecretOptions(), {}, SPARK, link)
    command = LocalLauncher().command(submission)
    assert "spark.openlineage.parentRunId=01937a2b-0000-7000-8000-000000000001" in command
    assert "spark.openlineage.namespace=streams" in command  # the spec's own setting wins
    assert not [arg for arg in command if API_KEY in arg or "hdr-secret-1" in arg]
    assert submission.secret_names == [
        "spark_conf.spark.openlineage.transport.auth.apiKey",
        "spark_conf.spark.openlineage.transport.transports.backup.headers.Authorization",
    ]
    env = dict(submission.env)
    carried = take_from_environment(env)
    assert carried.options["conf"]["spark.openlineage.transport.auth.apiKey"] == API_KEY
    assert API_KEY in carried.secret_values  # the driver masks it in what it writes
    assert take_running_settings(env) == running and ENV_VAR not in env and SECRETS_VAR not in env


def test_a_deploy_without_a_link_carries_nothing() -> None:
    spec = parse_spec(rate_noop("plain"))
    submission = Submission.for_spec(spec, "/ck/plain.async-stream", "dep-1", SecretOptions(), {}, SPARK)
    assert submission.env == {} and not [k for k in submission.conf if k.startswith("spark.openlineage")]


def test_a_transports_credentials_are_found_for_masking() -> None:
    transport = {
        "type": "composite",
        "transports": [
            {"type": "http", "url": "http://a", "auth": {"type": "api_key", "apiKey": "k-1"}},
            {"type": "http", "url": "http://b", "headers": {"X-Tenant": "t-2"}, "password": "p-3"},
        ],
    }
    assert sorted(secret_values(transport)) == ["k-1", "p-3", "t-2"]
